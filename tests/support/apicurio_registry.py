"""Apicurio Registry for the test session: a real schema registry serving Confluent's API.

Manual
======

Build. :func:`ensure_registry` turns ``io.apicurio:apicurio-registry-app`` (Apache 2.0, from
Maven Central) into a runnable application the way Apicurio's own build does: a generated pom
depends on the app and runs the Quarkus Maven plugin's ``build`` goal, which writes
``target/apicurio-registry-runner-1-runner.jar`` and ``target/lib``. The app's own
``application.properties`` is unpacked into the build, and Quarkus is told to index the app jar
(its beans live there, not in the generated project). The result is cached in
``~/.cache/kafkaconsumer/apicurio-registry-<version>`` (``KAFKACONSUMER_CACHE_DIR`` moves it)
and reused without Maven; a file lock keeps parallel sessions from building at the same time.

Version. :data:`VERSION` is a release whose modules all resolve (with the two adjustments in
the pom) from the Maven repository the suite was built against; the 3.x apps (3.3.3 checked)
depend on sibling modules of the same version (``apicurio-registry-schema-util-provider``,
``apicurio-registry-contracts-rules``) that it does not serve. It serves the
Confluent-compatible API at ``/apis/ccompat/v7``, which is all the tests use.

Run. :class:`ApicurioRegistry` starts it on a free loopback port with its in-memory storage (H2
in memory: nothing survives the process), waits until the API answers and stops it by its PID.
:meth:`ApicurioRegistry.register` registers a schema under a subject and returns its id.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

# One cache directory for everything the test harnesses fetch.
from benchmarks.harness.apache_kafka import _cache_root
from benchmarks.harness.maven import once, run_maven
from kafkaconsumer._child_process import (
    LiveProcesses,
    die_with_parent,
    file_tail,
    free_port,
    stop_process,
)

logger = logging.getLogger(__name__)

__all__ = ["VERSION", "ApicurioError", "ApicurioRegistry", "ensure_registry", "missing_tools"]

#: The Apicurio Registry release the harness builds.
VERSION = "2.4.2.Final"
#: The Quarkus release that version is built with (its parent pom's ``quarkus.version``).
QUARKUS_VERSION = "2.16.4.Final"
# The config-index extension version Apicurio 2.4.2 names has no deployment artifact on Maven
# Central; the nearest release that has both halves is used instead.
_CONFIG_INDEX_VERSION = "0.1.10.Final"
_MAVEN_TIMEOUT_S = 900.0
_START_TIMEOUT_S = 120.0
_HEAP = "256m"
_RUNNER = "apicurio-registry-runner-1-runner.jar"
_CCOMPAT = "/apis/ccompat/v7"
_LIVE: LiveProcesses[ApicurioRegistry] = LiveProcesses(exit_timeout=10.0)


class ApicurioError(RuntimeError):
    """Apicurio Registry could not be built or did not start (the message says why)."""


def missing_tools() -> str | None:
    """None when ``java`` and ``mvn`` are on PATH, else a sentence naming what is missing."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if not missing:
        return None
    return f"{' and '.join(missing)} not found on PATH (Apicurio Registry needs Java 17 and Maven)"


def _pom() -> str:
    index = "io.apicurio:apicurio-common-app-components-config-index"
    pins = "\n".join(
        f"""      <dependency>
        <groupId>{name.split(":")[0]}</groupId>
        <artifactId>{name.split(":")[1]}</artifactId>
        <version>{_CONFIG_INDEX_VERSION}</version>
      </dependency>"""
        for name in (index, index + "-deployment")
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkaconsumer.tests</groupId>
  <artifactId>apicurio-registry-runner</artifactId>
  <version>1</version>
  <packaging>jar</packaging>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <quarkus.index-dependency.registryapp.group-id>io.apicurio</quarkus.index-dependency.registryapp.group-id>
    <quarkus.index-dependency.registryapp.artifact-id>apicurio-registry-app</quarkus.index-dependency.registryapp.artifact-id>
  </properties>
  <dependencyManagement>
    <dependencies>
{pins}
      <dependency>
        <groupId>io.apicurio</groupId>
        <artifactId>apicurio-registry</artifactId>
        <version>{VERSION}</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>io.apicurio</groupId>
      <artifactId>apicurio-registry-app</artifactId>
      <version>{VERSION}</version>
      <exclusions>
        <!-- JSON Schema validation rules only; this library is published outside Maven Central. -->
        <exclusion>
          <groupId>com.github.everit-org.json-schema</groupId>
          <artifactId>org.everit.json.schema</artifactId>
        </exclusion>
      </exclusions>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>2.8</version>
        <executions>
          <execution>
            <id>app-configuration</id>
            <phase>generate-resources</phase>
            <goals><goal>unpack</goal></goals>
            <configuration>
              <artifactItems>
                <artifactItem>
                  <groupId>io.apicurio</groupId>
                  <artifactId>apicurio-registry-app</artifactId>
                  <version>{VERSION}</version>
                  <includes>application.properties</includes>
                  <outputDirectory>${{project.build.outputDirectory}}</outputDirectory>
                </artifactItem>
              </artifactItems>
            </configuration>
          </execution>
        </executions>
      </plugin>
      <plugin>
        <groupId>io.quarkus</groupId>
        <artifactId>quarkus-maven-plugin</artifactId>
        <version>{QUARKUS_VERSION}</version>
        <executions>
          <execution>
            <goals><goal>build</goal></goals>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
"""


def ensure_registry() -> Path:
    """Return the runnable jar of Apicurio Registry, building it with Maven if not cached.

    Raises :class:`ApicurioError` when a tool is missing or the build fails (with the end of
    Maven's output).
    """
    home = _cache_root() / f"apicurio-registry-{VERSION}"
    runner = home / "target" / _RUNNER
    if (home / "complete").exists():
        return runner
    missing = missing_tools()
    if missing:
        raise ApicurioError(missing)

    def build() -> None:
        (home / "pom.xml").write_text(_pom())
        shutil.rmtree(home / "target", ignore_errors=True)
        logger.info("building Apicurio Registry %s with Maven into %s", VERSION, home)
        started = time.monotonic()
        run_maven(
            ["-f", str(home / "pom.xml"), "package", "-DskipTests"],
            what=f"build Apicurio Registry {VERSION}",
            error=ApicurioError,
            timeout_s=_MAVEN_TIMEOUT_S,
            produced=runner.exists,
        )
        logger.info("Apicurio Registry built in %.1f s", time.monotonic() - started)

    once(home, VERSION, build)
    return runner


class ApicurioRegistry:
    """One Apicurio Registry process on a free loopback port, storage in memory.

    Thread-safety: start/stop from one thread; :meth:`register` may be called from any thread.
    """

    def __init__(self) -> None:
        """Nothing runs until :meth:`start`."""
        self.port = 0
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The base URL of the Confluent-compatible API (``schema.registry.url``)."""
        return f"http://127.0.0.1:{self.port}{_CCOMPAT}"

    def start(self, timeout: float = _START_TIMEOUT_S) -> ApicurioRegistry:
        """Build if needed, start the process and wait until the API answers."""
        runner = ensure_registry()
        self._workdir = tempfile.TemporaryDirectory(prefix="apicurio-")
        self.port = free_port()
        log_path = Path(self._workdir.name) / "registry.log"
        cmd = [
            "java",
            f"-Xmx{_HEAP}",
            "-XX:+ExitOnOutOfMemoryError",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            f"-Dquarkus.http.port={self.port}",
            "-Dquarkus.http.host=127.0.0.1",
            # The prod profile keeps twenty pooled connections to the in-memory database.
            "-Dquarkus.datasource.jdbc.min-size=1",
            "-Dquarkus.datasource.jdbc.initial-size=1",
            "-jar",
            str(runner),
        ]
        started = time.monotonic()
        with open(log_path, "ab") as log:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
                cwd=self._workdir.name,
            )
        _LIVE.add(self)
        self._wait_ready(timeout, log_path)
        logger.info(
            "Apicurio Registry ready on port %s in %.1f s", self.port, time.monotonic() - started
        )
        return self

    def _wait_ready(self, timeout: float, log_path: Path) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise ApicurioError(
                    f"Apicurio Registry exited with code {code}: {file_tail(str(log_path), 3000)}"
                )
            try:
                with urllib.request.urlopen(self.url + "/subjects", timeout=2.0) as response:
                    if response.status == 200:
                        return
            except (OSError, ValueError):
                pass
            if time.monotonic() >= deadline:
                self.stop()
                raise ApicurioError(
                    f"Apicurio Registry did not answer within {timeout:.0f} s: "
                    f"{file_tail(str(log_path), 3000)}"
                )
            time.sleep(0.25)

    def register(
        self,
        subject: str,
        schema: str | dict[str, Any] | list[Any],
        schema_type: str = "AVRO",
        references: list[dict[str, Any]] | None = None,
    ) -> int:
        """Register ``schema`` under ``subject`` (a new version) and return its id."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        body: dict[str, Any] = {"schema": text}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = references
        request = urllib.request.Request(
            f"{self.url}/subjects/{urllib.parse.quote(subject, safe='')}/versions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30.0) as response:
                return int(json.loads(response.read())["id"])
        except urllib.error.HTTPError as exc:
            raise ApicurioError(
                f"registering {subject} failed with {exc.code}: {exc.read()[:500]!r}"
            ) from None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the process by its PID and remove its directory."""
        if stop_process(self._proc, timeout):
            logger.warning("Apicurio Registry ignored SIGTERM; it was killed")
        _LIVE.discard(self)
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> ApicurioRegistry:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
