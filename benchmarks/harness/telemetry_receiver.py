"""A client telemetry receiver for Apache Kafka test brokers (KIP-714), compiled on demand.

A broker takes client metrics pushes only when one of its ``metric.reporters`` also implements
the broker's client-telemetry interface (``ClientTelemetryExporterProvider`` from Kafka 4.x,
``ClientTelemetry`` before): without one it does not even advertise GetTelemetrySubscriptions
and PushTelemetry. :func:`receiver_broker_config` compiles a small such reporter with ``javac``
against the broker's own jars (cached outside the repository, next to the jars, and rebuilt
when its source changes) and returns what to start a broker with::

    classpath, config = receiver_broker_config(version, output_file)
    KafkaCluster(extra_config=config, extra_classpath=(classpath,))

The reporter appends one JSON line per push it receives to ``output_file``:
``client_instance_id`` (the standard uuid spelling), ``terminating``, ``content_type``,
``metrics`` (the metric names of the OTLP ``MetricsData``, decoded by the broker's own copy of
the OpenTelemetry classes) and ``data`` (the decompressed payload, base64), which
:func:`read_pushes` reads back.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from benchmarks.harness.apache_kafka import ApacheKafkaError, _cache_root, ensure_kafka

__all__ = ["OUTPUT_KEY", "REPORTER_CLASS", "read_pushes", "receiver_broker_config"]

#: The broker property naming the file the reporter writes.
OUTPUT_KEY = "kafkaconsumer.telemetry.output"
#: The reporter's class name (in the default package).
REPORTER_CLASS = "TelemetryFileReceiver"

_SOURCE = r"""import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.*;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

/** Appends each client telemetry push it receives to a file, one JSON object a line. */
public class TelemetryFileReceiver implements MetricsReporter, @INTERFACE@ {
    private volatile String output;

    @Override
    public void configure(Map<String, ?> configs) {
        Object value = configs.get("@OUTPUT_KEY@");
        output = value == null ? null : value.toString();
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }

    @Override
    public @RECEIVER_TYPE@ @RECEIVER_METHOD@() {
        return (context, payload) -> write(payload);
    }

    private static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private synchronized void write(ClientTelemetryPayload payload) {
        if (output == null) {
            return;
        }
        ByteBuffer data = payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        List<String> names = new ArrayList<>();
        String error = null;
        try {
            MetricsData parsed = MetricsData.parseFrom(bytes);
            for (ResourceMetrics rm : parsed.getResourceMetricsList()) {
                for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                    for (Metric m : sm.getMetricsList()) {
                        names.add(quote(m.getName()));
                    }
                }
            }
        } catch (IOException e) {
            error = e.toString();
        }
        Uuid id = payload.clientInstanceId();
        String uuid = new UUID(id.getMostSignificantBits(), id.getLeastSignificantBits()).toString();
        String line = "{\"client_instance_id\": " + quote(uuid)
            + ", \"terminating\": " + payload.isTerminating()
            + ", \"content_type\": " + quote(String.valueOf(payload.contentType()))
            + ", \"metrics\": [" + String.join(", ", names) + "]"
            + ", \"error\": " + (error == null ? "null" : quote(error))
            + ", \"data\": " + quote(Base64.getEncoder().encodeToString(bytes)) + "}\n";
        try (FileOutputStream out = new FileOutputStream(output, true)) {
            out.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
"""

_JAVAC_TIMEOUT_S = 300


def _source(libs: Path) -> str:
    clients = next(libs.glob("kafka-clients-*.jar"), None)
    if clients is None:
        raise ApacheKafkaError(f"no kafka-clients jar in {libs}")
    with zipfile.ZipFile(clients) as jar:
        names = set(jar.namelist())
    # Kafka 4.x deprecates ClientTelemetry for ClientTelemetryExporterProvider.
    if "org/apache/kafka/server/telemetry/ClientTelemetryExporterProvider.class" in names:
        subst = (
            "ClientTelemetryExporterProvider",
            "ClientTelemetryExporter",
            "clientTelemetryExporter",
        )
    else:
        subst = ("ClientTelemetry", "ClientTelemetryReceiver", "clientReceiver")
    return (
        _SOURCE.replace("@INTERFACE@", subst[0])
        .replace("@RECEIVER_TYPE@", subst[1])
        .replace("@RECEIVER_METHOD@", subst[2])
        .replace("@OUTPUT_KEY@", OUTPUT_KEY)
    )


def compile_receiver(version: str | None = None) -> Path:
    """The directory holding the compiled reporter for the broker jars of ``version``
    (compiled once per source, under a file lock). Raises :class:`ApacheKafkaError` when
    ``javac`` is missing or fails."""
    libs = ensure_kafka(version)
    source = _source(libs)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    home = _cache_root() / f"telemetry-receiver-{libs.parent.name}-{digest}"
    classes = home / "classes"
    if (classes / f"{REPORTER_CLASS}.class").exists():
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise ApacheKafkaError("javac not found: the telemetry receiver is compiled with it")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (classes / f"{REPORTER_CLASS}.class").exists():
            return classes
        (home / f"{REPORTER_CLASS}.java").write_text(source)
        staging = home / "classes.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        result = subprocess.run(
            [
                javac,
                "-nowarn",
                "-cp",
                f"{libs}/*",
                "-d",
                str(staging),
                str(home / f"{REPORTER_CLASS}.java"),
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_JAVAC_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            raise ApacheKafkaError(
                f"javac failed on the telemetry receiver: {result.stderr[-3000:]}"
            )
        staging.rename(classes)
    return classes


def receiver_broker_config(version: str | None, output: Path) -> tuple[Path, dict[str, str]]:
    """The class-path entry and the broker properties of a broker whose telemetry receiver
    appends to ``output``."""
    return compile_receiver(version), {
        "metric.reporters": REPORTER_CLASS,
        OUTPUT_KEY: str(output),
    }


def read_pushes(output: Path) -> list[dict[str, Any]]:
    """The pushes the receiver wrote to ``output`` so far, oldest first."""
    if not output.exists():
        return []
    pushes = []
    for line in output.read_text().splitlines():
        if line.strip():
            pushes.append(json.loads(line))
    return pushes
