"""Keycloak, a real OAuth 2 / OpenID Connect identity provider, for the OAuth tests.

:func:`ensure_keycloak` fetches ``org.keycloak:keycloak-quarkus-dist:<version>`` (a tar.gz) with
``mvn dependency:copy`` into ``~/.cache/kafkaconsumer/keycloak-<version>`` and unpacks it there,
once, under a file lock, as :func:`benchmarks.harness.apache_kafka.ensure_kafka` does for the Kafka
jars (``KAFKACONSUMER_CACHE_DIR`` moves the cache, ``KAFKACONSUMER_KEYCLOAK_VERSION`` picks the
version). Keycloak 26 needs Java 21 or newer: :func:`java_home` takes ``KAFKACONSUMER_JAVA21_HOME``,
then ``/usr/lib/jvm/temurin-25-jdk-amd64``, then the ``java`` on PATH if it is new enough.

:class:`Keycloak` copies the unpacked distribution into a temporary directory (its dev mode
writes build files and data beside itself, so parallel sessions must not share one), imports
the realm of :func:`realm_json` at start and runs ``kc.sh start-dev`` with an in-memory H2
database on a free loopback port. The realm :data:`REALM` has:

- :data:`CLIENT_ID`/:data:`CLIENT_SECRET`: a confidential client for the client_credentials
  grant whose tokens name :data:`AUDIENCE` in ``aud`` and live :data:`TOKEN_LIFESPAN_S`;
- :data:`SHORT_CLIENT_ID` (same secret): tokens living :data:`SHORT_LIFESPAN_S`, for refresh.

The first start in dev mode builds the server; that build is kept in the cache, so later
starts skip it. The process is stopped by its PID (and by Linux if the test session dies).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.harness.maven import once, run_maven
from kafkaconsumer._child_process import die_with_parent, file_tail, free_port, stop_process

__all__ = [
    "AUDIENCE",
    "CLIENT_ID",
    "CLIENT_SECRET",
    "DEFAULT_VERSION",
    "Keycloak",
    "KeycloakError",
    "REALM",
    "SHORT_CLIENT_ID",
    "SHORT_LIFESPAN_S",
    "TOKEN_LIFESPAN_S",
    "ensure_keycloak",
    "java_home",
]

logger = logging.getLogger(__name__)

DEFAULT_VERSION = "26.5.0"
REALM = "kafka"
CLIENT_ID = "kafka-consumer"
CLIENT_SECRET = "consumer-secret"
SHORT_CLIENT_ID = "kafka-consumer-short"
AUDIENCE = "kafka-broker"
TOKEN_LIFESPAN_S = 300
SHORT_LIFESPAN_S = 10
_JAVA25 = "/usr/lib/jvm/temurin-25-jdk-amd64"
_MAVEN_TIMEOUT_S = 900.0
_START_TIMEOUT_S = 240.0


class KeycloakError(RuntimeError):
    """Keycloak could not be fetched or did not start (the message says why)."""


def _cache_root() -> Path:
    override = os.environ.get("KAFKACONSUMER_CACHE_DIR")
    if override:
        return Path(override)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafkaconsumer"


def _java_major(java: Path) -> int:
    try:
        out = subprocess.run(
            [str(java), "-XshowSettings:properties", "-version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return 0
    for line in out.splitlines():
        if "java.specification.version" in line:
            try:
                return int(line.split("=")[1].strip().split(".")[0])
            except ValueError:
                return 0
    return 0


def java_home() -> Path:
    """A Java 21+ home for Keycloak; raises :class:`KeycloakError` when there is none."""
    candidates = [os.environ.get("KAFKACONSUMER_JAVA21_HOME", ""), _JAVA25]
    on_path = shutil.which("java")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent.parent))
    for home in filter(None, candidates):
        java = Path(home) / "bin" / "java"
        if java.exists() and _java_major(java) >= 21:
            return Path(home)
    raise KeycloakError("Keycloak needs Java 21 or newer; set KAFKACONSUMER_JAVA21_HOME")


def ensure_keycloak(version: str | None = None) -> Path:
    """The unpacked Keycloak distribution of ``version``, fetched with Maven when not cached."""
    version = version or os.environ.get("KAFKACONSUMER_KEYCLOAK_VERSION") or DEFAULT_VERSION
    home = _cache_root() / f"keycloak-{version}"
    dist = home / f"keycloak-{version}"
    if (home / "complete").exists():
        return dist
    if shutil.which("mvn") is None:
        raise KeycloakError("mvn not found: Keycloak is fetched with Maven")

    def fetch() -> None:
        started = time.monotonic()
        artifact = f"org.keycloak:keycloak-quarkus-dist:{version}:tar.gz"
        archive = home / f"keycloak-quarkus-dist-{version}.tar.gz"
        run_maven(
            ["dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={home}"],
            what=f"fetch {artifact}",
            error=KeycloakError,
            timeout_s=_MAVEN_TIMEOUT_S,
            produced=archive.exists,
            cwd=home,
        )
        shutil.rmtree(dist, ignore_errors=True)
        with tarfile.open(archive) as tar:
            tar.extractall(home, filter="tar")
        archive.unlink()
        logger.info("Keycloak %s fetched in %.1f s", version, time.monotonic() - started)

    once(home, version, fetch)
    return dist


def realm_json() -> dict[str, Any]:
    """The test realm: two confidential clients whose tokens name :data:`AUDIENCE`."""

    def client(client_id: str, lifespan_s: int) -> dict[str, Any]:
        return {
            "clientId": client_id,
            "enabled": True,
            "publicClient": False,
            "clientAuthenticatorType": "client-secret",
            "secret": CLIENT_SECRET,
            "serviceAccountsEnabled": True,
            "standardFlowEnabled": False,
            "directAccessGrantsEnabled": False,
            "attributes": {"access.token.lifespan": str(lifespan_s)},
            "protocolMappers": [
                {
                    "name": "audience",
                    "protocol": "openid-connect",
                    "protocolMapper": "oidc-audience-mapper",
                    "config": {
                        "included.custom.audience": AUDIENCE,
                        "access.token.claim": "true",
                        "id.token.claim": "false",
                    },
                }
            ],
        }

    return {
        "realm": REALM,
        "enabled": True,
        "accessTokenLifespan": TOKEN_LIFESPAN_S,
        "clients": [
            client(CLIENT_ID, TOKEN_LIFESPAN_S),
            client(SHORT_CLIENT_ID, SHORT_LIFESPAN_S),
        ],
    }


def _keep_build(root: Path, dist: Path) -> None:
    # The first start in dev mode builds the server (Quarkus augmentation, most of a cold
    # start); keeping that build in the cache spares every later copy the work.
    marker = dist / "lib" / "quarkus" / ".kafkaconsumer-dev-build"
    if marker.exists() or not (root / "lib" / "quarkus").is_dir():
        return
    with open(dist.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return
        staging = dist / "lib" / "quarkus.partial"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(root / "lib" / "quarkus", staging, symlinks=True)
        (staging / marker.name).write_text("built by start-dev\n")
        shutil.rmtree(dist / "lib" / "quarkus", ignore_errors=True)
        staging.rename(dist / "lib" / "quarkus")


class Keycloak:
    """One Keycloak in dev mode on a free loopback port with the test realm imported.

    Thread-safety: start and stop from one thread; the URLs may be read anywhere.
    """

    def __init__(self, version: str | None = None) -> None:
        """Describe the server; nothing runs until :meth:`start`."""
        self.version = version
        self.port = 0
        self.start_seconds = 0.0
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    @property
    def issuer(self) -> str:
        """The realm's issuer (the ``iss`` of its tokens)."""
        return f"http://127.0.0.1:{self.port}/realms/{REALM}"

    @property
    def token_url(self) -> str:
        """The realm's token endpoint."""
        return f"{self.issuer}/protocol/openid-connect/token"

    @property
    def jwks_url(self) -> str:
        """The realm's JSON Web Key Set (what the broker validates signatures with)."""
        return f"{self.issuer}/protocol/openid-connect/certs"

    def start(self) -> Keycloak:
        """Copy the distribution, import the realm, start and wait until the realm answers."""
        dist = ensure_keycloak(self.version)
        java = java_home()
        started = time.monotonic()
        self._tmp = tempfile.TemporaryDirectory(prefix="kafkaconsumer-keycloak-")
        root = Path(self._tmp.name) / "keycloak"
        with open(dist.parent / ".lock", "w") as lock:
            # Shared: copies run side by side, but not while _keep_build swaps the build in.
            fcntl.flock(lock, fcntl.LOCK_SH)
            shutil.copytree(dist, root, symlinks=True)
        (root / "data" / "import").mkdir(parents=True, exist_ok=True)
        (root / "data" / "import" / "realm.json").write_text(json.dumps(realm_json()))
        self.port = free_port()
        env = {
            **os.environ,
            "JAVA_HOME": str(java),
            "PATH": f"{java / 'bin'}:{os.environ.get('PATH', '')}",
            "JAVA_OPTS_KC_HEAP": "-Xms64m -Xmx512m",
        }
        self._log = Path(self._tmp.name) / "keycloak.log"
        cmd = [
            str(root / "bin" / "kc.sh"),
            "start-dev",
            "--import-realm",
            "--db=dev-mem",
            "--http-host=127.0.0.1",
            f"--http-port={self.port}",
            f"--http-management-port={free_port()}",
            "--cache=local",
        ]
        with open(self._log, "wb") as log:
            self._proc = subprocess.Popen(
                cmd,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.stop()
                raise KeycloakError(f"Keycloak exited at start: {self.log_tail()}")
            try:
                with urllib.request.urlopen(
                    f"{self.issuer}/.well-known/openid-configuration", timeout=2
                ) as answer:
                    if answer.status == 200:
                        self.start_seconds = time.monotonic() - started
                        logger.info("Keycloak started in %.1f s", self.start_seconds)
                        _keep_build(root, dist)
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        tail = self.log_tail()
        self.stop()
        raise KeycloakError(f"Keycloak did not start in {_START_TIMEOUT_S:.0f} s: {tail}")

    def log_tail(self, limit: int = 3000) -> str:
        """The end of Keycloak's log."""
        return file_tail(str(self._log), limit) if self._log is not None else ""

    def stop(self) -> None:
        """Stop the process by its PID and delete the copy. Idempotent."""
        if self._proc is not None:
            stop_process(self._proc, timeout=20.0)
            self._proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
