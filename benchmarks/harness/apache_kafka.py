"""Apache Kafka brokers for the test session and the benchmarks, fetched with Maven.

Manual
======

Jars. :func:`ensure_kafka` resolves ``org.apache.kafka:kafka_2.13:<version>`` and everything the
broker needs at run time (plus a logging binding) with ``mvn dependency:copy-dependencies`` on a
generated pom, into ``~/.cache/kafkaconsumer/kafka-<version>/libs`` (``KAFKACONSUMER_CACHE_DIR``
moves the cache). A finished cache is reused without running Maven again; a file lock keeps
parallel sessions from fetching at the same time. Nothing from Maven lives in the repository.

Version. ``KAFKACONSUMER_KAFKA_VERSION`` picks it (default :data:`DEFAULT_VERSION`, the newest 4.x;
:data:`KAFKA_3_VERSION` is the newest 3.9.x).

Java and Maven. :func:`missing_tools` says which of the two is absent (None when both are there);
:func:`ensure_kafka` and :meth:`KafkaCluster.start` raise :class:`ApacheKafkaError` naming the
missing tool, and the conftest falls back to another broker.

Topologies. ``KafkaCluster()`` is one combined broker+controller (node 1) on free loopback
ports, storage formatted in a temporary directory::

    with KafkaCluster() as cluster:
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)

``KafkaCluster(brokers=3, racks=True)`` is one dedicated controller (node 100) and brokers
1, 2, 3, each with ``broker.rack`` ``rack-<id>`` and the rack-aware replica selector, offsets and
transaction topics replicated three times. The nodes keep their ports and data across
``stop_node``/``kill_node``/``start_node``/``restart_node`` (broker ids, not indexes);
``heal()`` starts whatever is stopped and waits for full ISRs. ``leader_of(topic, partition)``,
``replicas_of`` and ``create_topic(name, partitions, replication)`` ask through confluent-kafka,
``coordinator_of(group)`` with a hand-built FindCoordinator, so the oracle is never the client
under test. In the suite, use the
``kafka_cluster`` fixture (tests/conftest.py): one cluster per session, healed after each test.

Security. ``KafkaCluster(security=True)`` adds to every broker (of one node or of a cluster)
SASL_PLAINTEXT and SASL_SSL listeners (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 with the users of
:data:`SASL_USERS`, created at format time; OAUTHBEARER checked by the broker's unsecured-JWT
validator) and three SSL listeners with PEM files from a CA generated at start (server-only,
mutual TLS, wrong host name); they cost no extra process. After start,
``cluster.security`` (:class:`Security`) has their bootstrap strings, the PEM paths and
:meth:`Security.unsecured_jwt`. In the suite: the ``secure_kafka`` fixture.

Settings for tests on every node: ``group.min.session.timeout.ms=500``,
``group.initial.rebalance.delay.ms=0``, short KIP-848 minimums
(``group.consumer.min.session.timeout.ms``, ``group.consumer.min.heartbeat.interval.ms``),
internal topics sized for the node count, ``auto.create.topics.enable`` as Kafka's default (on).
``extra_config`` adds or overrides broker properties, ``extra_classpath`` puts broker plugins
after the jars (the telemetry receiver of ``telemetry_receiver.py``). Nodes run with :data:`TEST_JVM_OPTIONS`
and a 512 MiB heap (``KAFKACONSUMER_KAFKA_HEAP``); ``jvm_options=()`` for full-speed benchmarks.

Processes. Each node is a ``java -cp <libs>/* kafka.Kafka`` child with a capped heap; ready when
it answers ApiVersions (for a cluster, once every broker is registered), and the cluster is ready
when the coordinator of every ``__consumer_offsets`` partition serves groups
(:meth:`KafkaCluster.wait_groups_ready`, also after ``heal()``). Nodes are stopped
by their own PIDs: by :meth:`KafkaCluster.stop`, at interpreter exit (atexit), and by Linux
(``PR_SET_PDEATHSIG``) if the process that started them dies. Start a cluster from the main
thread: the death signal follows the thread that forked the node. Each node logs to
``<workdir>/node-<id>.log``; :meth:`KafkaNode.log_tail` returns its end for error messages.

:func:`broker_api_versions` asks any broker for its ApiVersions ranges (v0, by hand), for the
API-version tests and ``BrokerInfo.api_versions``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from benchmarks.harness.maven import once, run_maven
from benchmarks.harness.tls_proxy import Pki, make_pki
from kafkaconsumer._child_process import (
    LiveProcesses,
    api_versions_probe,
    die_with_parent,
    file_tail,
    free_port,
    recv_exact,
    stop_process,
)

__all__ = [
    "DEFAULT_VERSION",
    "KAFKA_3_VERSION",
    "ApacheKafkaError",
    "KafkaCluster",
    "KafkaNode",
    "SASL_USERS",
    "Security",
    "broker_api_versions",
    "ensure_kafka",
    "find_coordinator",
    "follower_fetch_session",
    "group_offsets_error",
    "group_partition",
    "missing_tools",
    "requested_version",
]

logger = logging.getLogger(__name__)

#: The newest Apache Kafka 4.x release that resolves.
DEFAULT_VERSION = "4.4.0"
#: The newest 3.9.x release (the last line that still accepts the pre-KIP-896 protocol versions).
KAFKA_3_VERSION = "3.9.2"

#: The slf4j 1.7 binding for reload4j: the broker of both lines logs through slf4j 1.7.
_LOGGING_BINDING = ("org.slf4j", "slf4j-reload4j", "1.7.36")
_HEAP = os.environ.get("KAFKACONSUMER_KAFKA_HEAP", "512m")
#: JVM options of a test node: the client-level JIT only and the serial GC start a node with
#: about 40% less CPU (measured 5.5 s against 9.6 s); the benchmarks pass ``jvm_options=()``.
TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
_MAVEN_TIMEOUT_S = 600.0
_START_TIMEOUT_S = 90.0

_LIVE: LiveProcesses[KafkaNode] = LiveProcesses(exit_timeout=10.0)


class ApacheKafkaError(RuntimeError):
    """Apache Kafka could not be fetched or did not start (the message says why)."""


def requested_version() -> str:
    """The Kafka version the session uses: ``KAFKACONSUMER_KAFKA_VERSION`` or the default."""
    return os.environ.get("KAFKACONSUMER_KAFKA_VERSION") or DEFAULT_VERSION


def missing_tools() -> str | None:
    """None when ``java`` and ``mvn`` are on PATH, else a sentence naming what is missing."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if not missing:
        return None
    return f"{' and '.join(missing)} not found on PATH (Apache Kafka needs Java 17+ and Maven)"


def _cache_root() -> Path:
    override = os.environ.get("KAFKACONSUMER_CACHE_DIR")
    if override:
        return Path(override)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafkaconsumer"


def _pom(version: str) -> str:
    group, artifact, binding_version = _LOGGING_BINDING
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkaconsumer.tests</groupId>
  <artifactId>kafka-broker-{version}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{binding_version}</version>
    </dependency>
  </dependencies>
</project>
"""


def ensure_kafka(version: str | None = None) -> Path:
    """Return the directory holding the broker jars of ``version``, fetching them if needed.

    Raises :class:`ApacheKafkaError` when Maven is missing or the resolution fails (with the end of
    Maven's output).
    """
    version = version or requested_version()
    home = _cache_root() / f"kafka-{version}"
    libs = home / "libs"
    if (home / "complete").exists():
        return libs
    if shutil.which("mvn") is None:
        raise ApacheKafkaError(missing_tools() or "mvn not found")

    def fetch() -> None:
        (home / "pom.xml").write_text(_pom(version))
        staging = home / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        logger.info("fetching Apache Kafka %s with Maven into %s", version, libs)
        started = time.monotonic()
        run_maven(
            [
                "-f",
                str(home / "pom.xml"),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={staging}",
                "-DincludeScope=runtime",
            ],
            what=f"resolve org.apache.kafka:kafka_2.13:{version}",
            error=ApacheKafkaError,
            timeout_s=_MAVEN_TIMEOUT_S,
            produced=lambda: any(staging.glob("kafka_2.13-*.jar")),
        )
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        logger.info("Apache Kafka %s fetched in %.1f s", version, time.monotonic() - started)

    once(home, version, fetch)
    return libs


def broker_api_versions(host: str, port: int, timeout: float = 5.0) -> dict[int, tuple[int, int]]:
    """The broker's supported versions, ``{api_key: (min, max)}``, from an ApiVersions v0 request.

    Built by hand so that what the tests compare the client against does not come from the
    client's own codec. Raises OSError when the broker does not answer with error 0.
    """
    client_id = b"kafkaconsumer-tests"
    correlation_id = 0x4B41
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        if size < 10 or size > 1 << 20:
            raise OSError(f"ApiVersions answer of implausible size {size}")
        payload = recv_exact(sock, size)
    got_id, error_code, count = struct.unpack_from(">ihi", payload, 0)
    if got_id != correlation_id or error_code != 0:
        raise OSError(f"ApiVersions answered correlation {got_id}, error {error_code}")
    versions: dict[int, tuple[int, int]] = {}
    for i in range(count):
        key, low, high = struct.unpack_from(">hhh", payload, 10 + 6 * i)
        versions[key] = (low, high)
    return versions


def _request(
    host: str, port: int, api_key: int, version: int, body: bytes, timeout: float = 5.0
) -> bytes:
    """Send one request with a v1 header; return the response after its correlation id."""
    client_id = b"kafkaconsumer-tests"
    correlation_id = 0x4B00 + api_key
    frame = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    frame += body
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        if size < 4 or size > 1 << 20:
            raise OSError(f"answer of implausible size {size} to api {api_key}")
        payload = recv_exact(sock, size)
    (got_id,) = struct.unpack_from(">i", payload, 0)
    if got_id != correlation_id:
        raise OSError(f"api {api_key} answered correlation {got_id}")
    return payload[4:]


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def find_coordinator(host: str, port: int, group_id: str, timeout: float = 5.0) -> int:
    """The coordinator's broker id for ``group_id`` from a FindCoordinator v1 request (by hand,
    like :func:`broker_api_versions`). Raises OSError on an error code (e.g. not available)."""
    answer = _request(host, port, 10, 1, _string(group_id) + b"\x00", timeout)
    _throttle, error_code, message_len = struct.unpack_from(">ihh", answer, 0)
    if error_code:
        raise OSError(f"FindCoordinator error {error_code}")
    (node_id,) = struct.unpack_from(">i", answer, 8 + max(message_len, 0))
    return int(node_id)


def group_offsets_error(host: str, port: int, group_id: str, timeout: float = 5.0) -> int:
    """The error code of an OffsetFetch v2 for all of ``group_id``'s offsets (0 once the
    coordinator serves the group; 14 while loading, 16 when it is not the coordinator)."""
    answer = _request(host, port, 9, 2, _string(group_id) + struct.pack(">i", -1), timeout)
    (topics,) = struct.unpack_from(">i", answer, 0)
    if topics != 0:
        raise OSError(f"OffsetFetch for the unused group {group_id!r} listed {topics} topics")
    (error_code,) = struct.unpack_from(">h", answer, 4)
    return int(error_code)


def follower_fetch_session(
    host: str,
    port: int,
    topic: str,
    partition: int = 0,
    *,
    replica_id: int,
    session_id: int = 0,
    close: bool = False,
    timeout: float = 5.0,
) -> int:
    """Open (or with ``close``, close ``session_id``) a fetch session as a follower replica
    would: a full Fetch v7 with ``replica_id`` >= 0, by hand. Follower sessions are privileged
    (KIP-227): a new one may evict any consumer session of its cache shard at once, where a
    consumer's may only evict sessions older than the broker's fixed two minutes. Returns the
    session id the broker answered (0: none created). Raises OSError on a top-level error."""
    topics = struct.pack(">i", 0)  # a close names no partition
    if not close:  # one topic, one partition from offset 0, at most 1 KiB
        topics = (
            struct.pack(">i", 1) + _string(topic) + struct.pack(">iiqqi", 1, partition, 0, -1, 1024)
        )
    body = (
        struct.pack(">iiiib", replica_id, 0, 0, 1 << 20, 0)
        + struct.pack(">ii", session_id, -1 if close else 0)
        + topics
        + struct.pack(">i", 0)  # nothing forgotten
    )
    answer = _request(host, port, 1, 7, body, timeout)
    _throttle, error_code, answered_session = struct.unpack_from(">ihi", answer, 0)
    if error_code:
        raise OSError(f"Fetch (follower session) error {error_code}")
    return int(answered_session)


def consumer_fetch_session_error(
    host: str, port: int, session_id: int, epoch: int, timeout: float = 5.0
) -> int:
    """The error code the broker answers an incremental consumer Fetch v7 (no partitions) of
    ``session_id`` at ``epoch`` with, by hand: 70 (FETCH_SESSION_ID_NOT_FOUND) once the
    session is closed or evicted, 71 (INVALID_FETCH_SESSION_EPOCH) or 0 while it lives."""
    body = (
        struct.pack(">iiiib", -1, 0, 0, 1 << 20, 0)
        + struct.pack(">ii", session_id, epoch)
        + struct.pack(">i", 0)  # no partitions
        + struct.pack(">i", 0)  # nothing forgotten
    )
    answer = _request(host, port, 1, 7, body, timeout)
    _throttle, error_code = struct.unpack_from(">ih", answer, 0)
    return int(error_code)


def _java_hash(text: str) -> int:
    h = 0
    for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def group_partition(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka: abs(hashCode) % count)."""
    return (_java_hash(group_id) & 0x7FFFFFFF) % partitions


def _cluster_id() -> str:
    # A Kafka cluster id is a URL-safe base64 UUID; one that starts with "-" (1 in 64) would be
    # read as an option by kafka-storage's argument parser, so draw again.
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _log4j_properties() -> str:
    # WARN everywhere keeps the log small; the lifecycle lines say when a node came up or stopped.
    return "\n".join(
        [
            "log4j.rootLogger=WARN, stdout",
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "log4j.logger.kafka.server.BrokerServer=INFO",
            "log4j.logger.kafka.server.ControllerServer=INFO",
            "log4j.logger.kafka.server.KafkaRaftServer=INFO",
            "",
        ]
    )


#: SASL users created at start: mechanism -> (user name, password).
SASL_USERS: dict[str, tuple[str, str]] = {
    "PLAIN": ("alice", "alice-secret"),
    "SCRAM-SHA-256": ("scram256", "scram256-secret"),
    "SCRAM-SHA-512": ("scram512", "scram512-secret"),
}


@dataclass
class Security:
    """The secured listeners of a cluster started with ``security=True``, and what a client needs
    to use them. The bootstrap strings name every broker's listener of that kind.

    - ``sasl_bootstrap``: SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (users in
      ``users``) and OAUTHBEARER (tokens from :meth:`unsecured_jwt`, checked by the broker's
      unsecured-JWT validator: expiry and a ``sub`` claim, no signature);
    - ``sasl_ssl_bootstrap``: SASL_SSL, the same mechanisms and users over TLS with the server
      certificate of ``ssl_bootstrap``;
    - ``ssl_bootstrap``: SSL, server certificate for ``localhost`` and ``127.0.0.1`` signed by
      ``pki.ca``; no client certificate asked for;
    - ``mtls_bootstrap``: SSL that requires a client certificate signed by ``pki.ca``
      (``pki.client_cert``, key ``pki.client_key`` encrypted with ``pki.client_key_password``);
    - ``wronghost_bootstrap``: SSL serving a certificate for ``broker.invalid`` only (signed by
      ``pki.ca``): a host-name mismatch.

    ``pki.other_ca`` is a CA that signed nothing here (the wrong-CA case).
    """

    pki: Pki
    users: dict[str, tuple[str, str]]
    plaintext_bootstrap: str = ""
    sasl_bootstrap: str = ""
    sasl_ssl_bootstrap: str = ""
    ssl_bootstrap: str = ""
    mtls_bootstrap: str = ""
    wronghost_bootstrap: str = ""

    @staticmethod
    def unsecured_jwt(
        sub: str | None = "alice", lifetime_s: float = 3600.0, issued_s_ago: float = 0.0
    ) -> str:
        """An unsigned JWT (``alg: none``) the broker's unsecured validator accepts while
        ``lifetime_s`` lasts; a negative lifetime gives an expired token, ``sub=None`` one
        without the subject claim (which the broker rejects)."""

        def part(obj: Mapping[str, object]) -> str:
            raw = json.dumps(obj, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        now = time.time() - issued_s_ago
        claims: dict[str, object] = {"iat": int(now), "exp": int(now + lifetime_s)}
        if sub is not None:
            claims["sub"] = sub
        return f"{part({'alg': 'none'})}.{part(claims)}."


def _listener_names(security: bool) -> list[str]:
    names = ["PLAINTEXT"]
    if security:
        names += ["SASL_PLAINTEXT", "SASL_SSL", "SSL", "MTLS", "SSL_WRONGHOST"]
    return names


def _security_props(pki: Pki, workdir: Path) -> dict[str, str]:
    """Broker properties of the secured listeners (the keystores are written into workdir)."""

    def keystore(name: str, cert: str, key: str) -> str:
        path = workdir / name
        path.write_text(Path(key).read_text() + Path(cert).read_text())
        return str(path)

    server = keystore("server-keystore.pem", pki.server_cert, pki.server_key)
    wrong = keystore("wronghost-keystore.pem", pki.wronghost_cert, pki.wronghost_key)
    plain_users = " ".join(f'user_{u}="{pw}"' for u, pw in [SASL_USERS["PLAIN"]])
    login_modules = {
        "plain": f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        "scram-sha-256": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "scram-sha-512": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "oauthbearer": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
        'required unsecuredLoginStringClaim_sub="broker";',
    }
    # The same mechanisms and users on both SASL listeners (JAAS settings are per listener).
    props = {
        f"listener.name.{listener}.{mechanism}.sasl.jaas.config": module
        for listener in ("sasl_plaintext", "sasl_ssl")
        for mechanism, module in login_modules.items()
    }
    return {
        **props,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": server,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki.ca,
        "ssl.client.auth": "none",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.ssl_wronghost.ssl.keystore.type": "PEM",
        "listener.name.ssl_wronghost.ssl.keystore.location": wrong,
    }


class KafkaNode:
    """One Kafka process (broker, controller or both) with fixed ports and a data directory.

    Thread-safety: start/stop/kill from one thread at a time; attributes may be read anywhere.
    """

    def __init__(
        self,
        node_id: int,
        roles: tuple[str, ...],
        ports: Mapping[str, int],
        workdir: Path,
        props: Mapping[str, str],
        libs: Path,
        jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS,
        classpath: tuple[str, ...] = (),
    ) -> None:
        """Describe the node; nothing runs until :meth:`start` (the cluster formats first).
        ``classpath`` entries follow the broker jars (plugins such as metric reporters)."""
        self.node_id = node_id
        self.roles = roles
        #: Listener name -> port on 127.0.0.1 (``PLAINTEXT``, ``CONTROLLER``, ...).
        self.ports = dict(ports)
        self.workdir = workdir
        self.props = dict(props)
        self.libs = libs
        self.jvm_options = tuple(jvm_options)
        self.classpath = tuple(classpath)
        self.config_path = workdir / f"node-{node_id}.properties"
        self.log_path = workdir / f"node-{node_id}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def is_broker(self) -> bool:
        """True when the node has the broker role."""
        return "broker" in self.roles

    @property
    def address(self) -> str:
        """``127.0.0.1:port`` of the PLAINTEXT listener (brokers only)."""
        return f"127.0.0.1:{self.ports['PLAINTEXT']}"

    @property
    def pid(self) -> int | None:
        """The process id while the node runs."""
        return self._proc.pid if self.is_running() and self._proc is not None else None

    def is_running(self) -> bool:
        """True while the node's process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def write_config(self) -> None:
        """Write the node's properties file (and the shared log4j file)."""
        lines = [f"{key}={value}" for key, value in sorted(self.props.items())]
        self.config_path.write_text("\n".join(lines) + "\n")
        (self.workdir / "log4j.properties").write_text(_log4j_properties())

    def java(self, main_class: str, *args: str, heap: str = _HEAP) -> list[str]:
        """A ``java`` command line running ``main_class`` on the broker's class path."""
        return [
            "java",
            f"-Xmx{heap}",
            "-Xss1m",
            "-XX:+ExitOnOutOfMemoryError",
            *self.jvm_options,
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
            "-cp",
            os.pathsep.join((f"{self.libs}/*", *self.classpath)),
            main_class,
            *args,
        ]

    def start(self) -> None:
        """Start the process (the storage must be formatted); does not wait for readiness."""
        if self.is_running():
            return
        heap = _HEAP if self.is_broker else "256m"
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.java("kafka.Kafka", str(self.config_path), heap=heap),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
                cwd=self.workdir,
            )
        _LIVE.add(self)
        logger.info("started Kafka node %s (pid %s)", self.node_id, self._proc.pid)

    def probe(self) -> bool:
        """True when the node answers ApiVersions on its first listener."""
        port = self.ports["PLAINTEXT"] if self.is_broker else self.ports["CONTROLLER"]
        return api_versions_probe("127.0.0.1", port, timeout=1.0)

    def wait_ready(self, timeout: float = _START_TIMEOUT_S) -> None:
        """Wait until the node answers ApiVersions; raise :class:`ApacheKafkaError` if it exits
        or stays silent for ``timeout`` s."""
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise ApacheKafkaError(
                    f"Kafka node {self.node_id} exited with code {code}: {self.log_tail()}"
                )
            if self.probe():
                return
            if time.monotonic() >= deadline:
                raise ApacheKafkaError(
                    f"Kafka node {self.node_id} did not answer ApiVersions within {timeout:.0f} s:"
                    f" {self.log_tail()}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def terminate(self) -> None:
        """Send SIGTERM without waiting (see :meth:`stop`)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the node by its PID (SIGTERM: a controlled shutdown) and wait for it to exit."""
        if stop_process(self._proc, timeout):
            logger.warning("Kafka node %s ignored SIGTERM; it was killed", self.node_id)
        _LIVE.discard(self)

    def kill(self) -> None:
        """Kill the node at once (SIGKILL), as a crash would."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        _LIVE.discard(self)

    def log_tail(self, limit: int = 3000) -> str:
        """The end of the node's log, for error messages."""
        return file_tail(str(self.log_path), limit)

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.is_running() else "stopped"
        return f"KafkaNode({self.node_id}, {'+'.join(self.roles)}, {state})"


#: Security protocol of each listener name.
_PROTOCOLS = {
    "PLAINTEXT": "PLAINTEXT",
    "CONTROLLER": "PLAINTEXT",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SASL_SSL": "SASL_SSL",
    "SSL": "SSL",
    "MTLS": "SSL",
    "SSL_WRONGHOST": "SSL",
}

#: Partitions of ``__consumer_offsets`` (Kafka's default is 50: slower to create and load).
OFFSETS_PARTITIONS = 10

#: Node id of the dedicated controller of a multi-broker cluster.
CONTROLLER_ID = 100


# So that ``with`` on a subclass (the chaos tests' proxied cluster) yields the subclass.
_Cluster = TypeVar("_Cluster", bound="KafkaCluster")


class KafkaCluster:
    """Apache Kafka on loopback: one combined node (default) or a controller and N brokers.

    Thread-safety: start/stop and the node operations from one thread at a time.

    :param version: the Kafka version (``KAFKACONSUMER_KAFKA_VERSION`` or the default when None).
    :param brokers: 1 for a combined broker+controller; more for a dedicated controller + brokers.
    :param racks: give broker ``n`` ``broker.rack=rack-<n>`` and the rack-aware replica selector.
    :param extra_config: broker properties added to (or overriding) the test settings.
    :param security: add SASL_PLAINTEXT, SSL, MTLS and SSL_WRONGHOST listeners to every broker
        (see :class:`Security`; ``cluster.security`` after start).
    :param jvm_options: JVM flags of every node (:data:`TEST_JVM_OPTIONS` by default; ``()`` for
        the full JIT, as the benchmarks want).
    :param extra_classpath: class-path entries after the broker jars of every node, for broker
        plugins (the telemetry receiver of ``benchmarks/harness/telemetry_receiver.py``).
    :param stock: a single node with the ``server.properties`` Kafka ships (roles, node id,
        listeners, quorum, log dirs and replication factors of 1) and every other setting at the
        broker's default, such as a user's own cluster has; no test settings.
    """

    def __init__(
        self,
        version: str | None = None,
        *,
        brokers: int = 1,
        racks: bool = False,
        extra_config: Mapping[str, str] | None = None,
        security: bool = False,
        jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS,
        stock: bool = False,
        extra_classpath: tuple[str | Path, ...] = (),
    ) -> None:
        """Describe the cluster; nothing is fetched or started until :meth:`start`."""
        if brokers < 1:
            raise ValueError("brokers must be at least 1")
        if stock and (brokers != 1 or racks or security):
            raise ValueError("a stock node is a single node without racks or security")
        self.stock = stock
        self.version = version or requested_version()
        self.broker_count = brokers
        self.racks = racks
        self.extra_config = dict(extra_config or {})
        self.jvm_options = tuple(jvm_options)
        self.extra_classpath = tuple(str(p) for p in extra_classpath)
        self.with_security = security
        self._security_props: dict[str, str] = {}
        #: The secured listeners (None unless started with ``security=True``).
        self.security: Security | None = None
        self.nodes: dict[int, KafkaNode] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # ---- life cycle ----

    def start(self) -> KafkaCluster:
        """Fetch the jars (if not cached), format the storage, start every node and wait until
        all brokers answer; return self. Raises :class:`ApacheKafkaError` with the reason."""
        if self.nodes:
            return self
        missing = missing_tools()
        if missing:
            raise ApacheKafkaError(missing)
        libs = ensure_kafka(self.version)
        last: Exception | None = None
        # A free port can be taken by someone else between choosing and binding, and a busy
        # machine can make a node miss its start-up deadline once: start afresh, three times.
        for attempt in range(3):
            if last is not None:
                logger.warning(
                    "Kafka cluster start failed (attempt %d), retrying: %s", attempt, last
                )
            self._tmp = tempfile.TemporaryDirectory(prefix="kafkaconsumer-kafka-")
            try:
                self._build(libs, Path(self._tmp.name))
                self._format()
                for node in self.nodes.values():
                    node.start()
                for node in self.nodes.values():
                    node.wait_ready()
                self._wait_registered()
                self.wait_groups_ready()
                return self
            except (ApacheKafkaError, OSError, subprocess.SubprocessError) as exc:
                last = exc
                self.stop()
        assert last is not None
        raise last

    def stop(self) -> None:
        """Stop every node by its PID and delete the data.

        Brokers first and all at once (SIGTERM, then SIGKILL after 10 s: the data is thrown
        away, so a slow controlled shutdown buys nothing), the controller last so that the
        brokers' shutdown finds it.
        """
        nodes = sorted(self.nodes.values(), key=lambda n: not n.is_broker)
        brokers = [n for n in nodes if n.is_broker]
        for node in brokers:
            node.terminate()
        for node in nodes:
            try:
                node.stop(timeout=10)
            except Exception:  # keep stopping the others
                logger.exception("stopping Kafka node %s", node.node_id)
        self.nodes = {}
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self: _Cluster) -> _Cluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- what tests use ----

    @property
    def brokers(self) -> list[KafkaNode]:
        """The nodes with the broker role, by id."""
        return [n for _, n in sorted(self.nodes.items()) if n.is_broker]

    @property
    def bootstrap_servers(self) -> str:
        """The PLAINTEXT listeners of all brokers, comma-separated."""
        return ",".join(n.address for n in self.brokers)

    def node(self, node_id: int) -> KafkaNode:
        """The node with this id (KeyError if there is none)."""
        return self.nodes[node_id]

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """ApiVersions ranges of the first running broker."""
        first = self.running_brokers()[0]
        return broker_api_versions("127.0.0.1", first.ports["PLAINTEXT"])

    def running_brokers(self) -> list[KafkaNode]:
        """The brokers whose process is alive."""
        return [n for n in self.brokers if n.is_running()]

    def stop_node(self, node_id: int) -> None:
        """Stop one node (SIGTERM, controlled shutdown: its leaderships move first)."""
        self.node(node_id).stop()

    def kill_node(self, node_id: int) -> None:
        """Kill one node (SIGKILL, as a crash)."""
        self.node(node_id).kill()

    def start_node(self, node_id: int, timeout: float = _START_TIMEOUT_S) -> None:
        """Start a stopped node again (same ports, same data) and wait until it answers."""
        node = self.node(node_id)
        node.start()
        node.wait_ready(timeout)

    def restart_node(self, node_id: int) -> None:
        """Stop then start one node."""
        self.stop_node(node_id)
        self.start_node(node_id)

    def heal(self, timeout: float = _START_TIMEOUT_S) -> list[int]:
        """Start every stopped node and wait until all brokers are registered and every
        partition of the internal topics has its full ISR; return the ids that were restarted."""
        restarted = [
            node_id for node_id, node in sorted(self.nodes.items()) if not node.is_running()
        ]
        for node_id in restarted:
            self.nodes[node_id].start()
        for node_id in restarted:
            self.nodes[node_id].wait_ready(timeout)
        if restarted:
            self._wait_registered(timeout)
            self.wait_in_sync(timeout=timeout)
            self.wait_groups_ready(timeout)
        return restarted

    def wait_groups_ready(self, timeout: float = _START_TIMEOUT_S) -> None:
        """Wait until the coordinator of every ``__consumer_offsets`` partition serves groups.

        The first FindCoordinator creates the topic; until each partition's coordinator has
        loaded it, group requests get NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, which
        clients retry but raw-protocol tests should not have to.
        """
        probes: dict[int, str] = {}
        i = 0
        while len(probes) < OFFSETS_PARTITIONS:
            name = f"kafkaconsumer-probe-{i}"
            probes.setdefault(group_partition(name, OFFSETS_PARTITIONS), name)
            i += 1
        pending = dict(probes)
        deadline = time.monotonic() + timeout
        last: object = None
        while pending:
            for partition, group in list(pending.items()):
                try:
                    node = self.coordinator_of(group, timeout=0)
                    port = self.nodes[node].ports["PLAINTEXT"]
                    last = group_offsets_error("127.0.0.1", port, group)
                    if last == 0:
                        del pending[partition]
                except (OSError, struct.error, KeyError, ApacheKafkaError) as exc:
                    last = exc
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise ApacheKafkaError(
                    f"group coordinators not ready after {timeout:.0f} s for __consumer_offsets "
                    f"partitions {sorted(pending)}: {last}"
                )
            time.sleep(0.1)

    def wait_in_sync(self, topics: list[str] | None = None, timeout: float = 60.0) -> None:
        """Wait until every partition of ``topics`` (all topics when None) has all its replicas
        in sync and a leader."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                md = self._admin_metadata()
                lagging = [
                    f"{name}-{pid}"
                    for name, topic in md.topics.items()
                    if topics is None or name in topics
                    for pid, part in topic.partitions.items()
                    if part.leader < 0 or len(part.isrs) < len(part.replicas)
                ]
                if not lagging:
                    return
            except Exception as exc:
                lagging = [str(exc)]
            if time.monotonic() >= deadline:
                raise ApacheKafkaError(
                    f"partitions not in sync after {timeout:.0f} s: {lagging[:10]}"
                )
            time.sleep(0.2)

    def leader_of(self, topic: str, partition: int = 0, timeout: float = 30.0) -> int:
        """The broker id leading ``topic``/``partition`` (waits while it has no leader)."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                part = self._admin_metadata(topic).topics[topic].partitions[partition]
                if part.leader >= 0:
                    return int(part.leader)
            if time.monotonic() >= deadline:
                raise ApacheKafkaError(f"{topic}-{partition} has no leader after {timeout} s")
            time.sleep(0.1)

    def replicas_of(self, topic: str, partition: int = 0) -> tuple[list[int], list[int]]:
        """``(replicas, isr)`` broker ids of ``topic``/``partition``."""
        part = self._admin_metadata(topic).topics[topic].partitions[partition]
        return list(part.replicas), list(part.isrs)

    def coordinator_of(self, group_id: str, timeout: float = 30.0) -> int:
        """The broker id of the group coordinator of ``group_id`` (FindCoordinator, asked of the
        running brokers in turn; waits while the coordinator is not available)."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            for node in self.running_brokers():
                try:
                    return find_coordinator("127.0.0.1", node.ports["PLAINTEXT"], group_id)
                except (OSError, struct.error) as exc:
                    last = exc
            if time.monotonic() >= deadline:
                raise ApacheKafkaError(
                    f"no coordinator for group {group_id!r} after {timeout} s: {last}"
                )
            time.sleep(0.2)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication: int | None = None,
        config: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        assignment: list[list[int]] | None = None,
    ) -> None:
        """Create a topic (replicated on every broker, at most 3, by default) and wait until
        every partition has its leader and full ISR. ``assignment`` lists the replicas of each
        partition, preferred leader first (``partitions`` and ``replication`` follow from it)."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.live_bootstrap_servers()})
        if assignment is not None:
            new = NewTopic(
                name,
                num_partitions=len(assignment),
                replica_assignment=assignment,
                config=dict(config or {}),
            )
        else:
            new = NewTopic(
                name,
                num_partitions=partitions,
                replication_factor=replication or min(3, len(self.brokers)),
                config=dict(config or {}),
            )
        admin.create_topics([new], operation_timeout=timeout)[name].result(timeout=timeout)
        self.wait_in_sync([name], timeout=timeout)

    def live_bootstrap_servers(self) -> str:
        """The PLAINTEXT listeners of the brokers that run now."""
        return ",".join(n.address for n in self.running_brokers())

    def _admin_metadata(self, topic: str | None = None) -> Any:
        """Cluster metadata as a third-party client sees it (independent of the client under
        test): confluent-kafka's ``ClusterMetadata``."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.live_bootstrap_servers()})
        return admin.list_topics(topic=topic, timeout=10)

    # ---- building ----

    def _props(
        self,
        node_id: int,
        roles: tuple[str, ...],
        ports: Mapping[str, int],
        voters: str,
        data: Path,
    ) -> dict[str, str]:
        replication = str(min(3, self.broker_count))
        listeners = [f"{name}://127.0.0.1:{port}" for name, port in ports.items()]
        props = {
            "process.roles": ",".join(roles),
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            # A broker-only node must map the controllers' listener too.
            "listener.security.protocol.map": ",".join(
                f"{name}:{_PROTOCOLS[name]}" for name in {**ports, "CONTROLLER": 0}
            ),
            "log.dirs": str(data),
        }
        if self.stock:
            # What Kafka's shipped config/server.properties sets beyond the above.
            props.update(
                {
                    "num.partitions": "1",
                    "offsets.topic.replication.factor": "1",
                    "transaction.state.log.replication.factor": "1",
                    "transaction.state.log.min.isr": "1",
                    "share.coordinator.state.topic.replication.factor": "1",
                    "share.coordinator.state.topic.min.isr": "1",
                }
            )
            if "broker" in roles:
                props["advertised.listeners"] = ",".join(
                    entry for entry in listeners if not entry.startswith("CONTROLLER:")
                )
            return props
        props |= {
            "num.partitions": "1",
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": "500",
            "group.consumer.min.session.timeout.ms": "1000",
            "group.consumer.min.heartbeat.interval.ms": "200",
            "group.consumer.heartbeat.interval.ms": "1000",
            "group.consumer.session.timeout.ms": "10000",
            # A stopped broker's replicas leave the ISR quickly, so leader moves are fast.
            "replica.lag.time.max.ms": "5000",
            "log.flush.interval.messages": "9223372036854775807",
        }
        if "broker" in roles:
            props["inter.broker.listener.name"] = "PLAINTEXT"
            props["advertised.listeners"] = ",".join(
                entry for entry in listeners if not entry.startswith("CONTROLLER:")
            )
            if self._security_props:
                props.update(self._security_props)
            if self.racks:
                props["broker.rack"] = f"rack-{node_id}"
                props["replica.selector.class"] = (
                    "org.apache.kafka.common.replica.RackAwareReplicaSelector"
                )
        props.update(self.extra_config)
        return props

    def _build(self, libs: Path, root: Path) -> None:
        self.nodes = {}
        self._security_props = {}
        if self.with_security:
            pki_dir = root / "pki"
            pki_dir.mkdir()
            pki = make_pki(str(pki_dir))
            self._security_props = _security_props(pki, root)
            self.security = Security(pki, dict(SASL_USERS))
        if self.broker_count == 1:
            layout: list[tuple[int, tuple[str, ...]]] = [(1, ("broker", "controller"))]
        else:
            layout = [(CONTROLLER_ID, ("controller",))]
            layout += [(i, ("broker",)) for i in range(1, self.broker_count + 1)]
        ports: dict[int, dict[str, int]] = {}
        for node_id, roles in layout:
            node_ports: dict[str, int] = {}
            if "broker" in roles:
                for name in _listener_names(self.with_security):
                    node_ports[name] = free_port()
            if "controller" in roles:
                node_ports["CONTROLLER"] = free_port()
            ports[node_id] = node_ports
        voters = ",".join(
            f"{node_id}@127.0.0.1:{ports[node_id]['CONTROLLER']}"
            for node_id, roles in layout
            if "controller" in roles
        )
        for node_id, roles in layout:
            data = root / f"data-{node_id}"
            props = self._props(node_id, roles, ports[node_id], voters, data)
            node = KafkaNode(
                node_id,
                roles,
                ports[node_id],
                root,
                props,
                libs,
                self.jvm_options,
                self.extra_classpath,
            )
            node.write_config()
            self.nodes[node_id] = node
        if self.security is not None:
            brokers = [self.nodes[node_id] for node_id, roles in layout if "broker" in roles]

            def joined(name: str) -> str:
                return ",".join(f"127.0.0.1:{n.ports[name]}" for n in brokers)

            self.security.plaintext_bootstrap = joined("PLAINTEXT")
            self.security.sasl_bootstrap = joined("SASL_PLAINTEXT")
            self.security.sasl_ssl_bootstrap = joined("SASL_SSL")
            self.security.ssl_bootstrap = joined("SSL")
            self.security.mtls_bootstrap = joined("MTLS")
            self.security.wronghost_bootstrap = joined("SSL_WRONGHOST")

    def _format(self) -> None:
        cluster_id = _cluster_id()
        procs = []
        for node in self.nodes.values():  # in parallel: each is a JVM start
            scram = []
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                if self.security is not None:
                    user, password = self.security.users[mechanism]
                    scram += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
            cmd = node.java(
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                cluster_id,
                "-c",
                str(node.config_path),
                *scram,
                heap="256m",
            )
            procs.append(
                (
                    node,
                    subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    ),
                )
            )
        failures = []
        for node, proc in procs:
            try:
                output, _ = proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = proc.communicate()
            if proc.returncode != 0:
                failures.append(
                    f"node {node.node_id} (exit {proc.returncode}): {(output or '')[-1500:]}"
                )
        if failures:
            raise ApacheKafkaError("formatting the Kafka storage failed: " + "; ".join(failures))

    def _wait_registered(self, timeout: float = _START_TIMEOUT_S) -> None:
        """Wait until the metadata lists every running broker."""
        if self.broker_count == 1:
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                if len(self._admin_metadata().brokers) >= self.broker_count:
                    return
            except Exception as exc:  # the cluster is still coming up: ask again
                logger.debug("metadata not ready: %s", exc)
            if time.monotonic() >= deadline:
                raise ApacheKafkaError(
                    f"not all {self.broker_count} brokers registered within {timeout:.0f} s"
                )
            time.sleep(0.2)

    def __iter__(self) -> Iterator[KafkaNode]:
        return iter(self.brokers)

    def __repr__(self) -> str:
        return f"KafkaCluster({self.version}, {list(self.nodes.values())})"
