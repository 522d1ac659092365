"""The Data Source on ``local-cluster[2,1,1024]``: two executor JVMs, each with its own Python
workers, return the same rows as the driver-side read, and decode schema-registry Avro keys and
values into typed columns. This is the proof that the readers and decoders run distributed
(only the package, no JVM jar, is needed on the executors)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastavro
import pytest

from kafkaconsumer.formats.wire import frame
from tests.formats import conftest as formats_fixtures
from tests.helpers import unique_name
from tests.support.apicurio_registry import ApicurioRegistry

from .conftest import _java_missing, create_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

# The session's Apicurio Registry, shared with tests/formats.
registry = formats_fixtures.registry

_KEY = {"type": "record", "name": "K", "fields": [{"name": "id", "type": "int"}]}
_VALUE = {
    "type": "record",
    "name": "V",
    "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": ["null", "string"]}],
}


def _avro(schema: Any, record: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def _avro_topic(bootstrap: str, running: ApicurioRegistry) -> str:
    """A topic of 3 partitions with 60 records whose Avro key and value are framed for the
    registry (every seventh key null)."""
    topic = unique_name("sp-cluster-avro")
    create_topic(bootstrap, topic, 3)
    key_id = running.register(f"{topic}-key", _KEY)
    value_id = running.register(f"{topic}-value", _VALUE)
    rows: list[tuple[int, bytes | None, bytes, list[Any]]] = []
    for i in range(60):
        key = None if i % 7 == 0 else frame(key_id, _avro(_KEY, {"id": i}))
        value = frame(value_id, _avro(_VALUE, {"n": i, "s": None if i % 2 else str(i)}))
        rows.append((i % 3, key, value, []))
    produce(bootstrap, topic, rows)
    return topic


def _spark_home_in(tmp_path: Path) -> Path:
    """A SPARK_HOME of links to the installed PySpark's files, under ``tmp_path``.

    A local-cluster worker writes its executors' logs and files to ``$SPARK_HOME/work`` and
    reads neither SPARK_WORKER_DIR nor spark.worker.dir (those are for standalone workers
    started by script), so the work directory lands in the temporary directory only if
    SPARK_HOME does.
    """
    import pyspark

    installed = Path(pyspark.__file__).parent
    home = tmp_path / "spark-home"
    home.mkdir()
    for entry in installed.iterdir():
        if entry.name != "work":
            (home / entry.name).symlink_to(entry)
    return home


def test_local_cluster_reads_the_same_rows(
    broker: Any, registry: ApicurioRegistry, tmp_path: Path
) -> None:
    """Two executors read the same rows as the driver, pushed filters narrow the read, headers
    are null when absent, and Avro keys and values decode into typed columns."""
    if broker.is_tansu:
        pytest.skip("the Spark tests run once per CI run, on Apache Kafka (their time budget)")
    pytest.importorskip("pyspark")
    why = _java_missing()
    if why is not None:
        pytest.skip(why)
    bs = broker.bootstrap_servers
    topic = unique_name("sp-cluster")
    create_topic(bs, topic, 3)
    produce(
        bs,
        topic,
        [(i % 3, b"k%d" % i, b"v%d" % i, [("h", b"x")] if i % 2 else []) for i in range(300)],
    )
    avro_topic = _avro_topic(bs, registry)
    root = Path(__file__).resolve().parents[2]
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_HOME=str(_spark_home_in(tmp_path)),
        PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tests.spark.cluster_job", bs, topic, avro_topic, registry.url],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    from kafkaconsumer.spark.driver import read_kafka_table

    table = read_kafka_table({"kafka.bootstrap.servers": bs, "subscribe": topic}, progress=False)
    expected = sorted(
        [r["partition"], r["offset"], r["key"].hex().upper(), r["value"].hex().upper()]
        for r in table.to_pylist()
    )
    assert sorted(result["rows"]) == expected and len(expected) == 300
    assert sorted(result["pushed"]) == sorted(
        [r["partition"], r["offset"], not r["headers"]]
        for r in read_kafka_table(
            {"kafka.bootstrap.servers": bs, "subscribe": topic, "includeHeaders": "true"},
            progress=False,
        ).to_pylist()
        if r["partition"] in (0, 2) and 10 <= r["offset"] < 60
    )
    assert len(result["pushed"]) == 100
    # Partition p holds i = p, p + 3, ... in order, so offset o is record 3 * o + p.
    expected_typed = []
    for i in range(60):
        key = None if i % 7 == 0 else json.dumps({"id": i}, separators=(",", ":"))
        value = {"n": i, "s": str(i)} if i % 2 == 0 else {"n": i}
        expected_typed.append([i % 3, i // 3, key, json.dumps(value, separators=(",", ":"))])
    assert sorted(result["typed"], key=lambda r: (r[0], r[1])) == sorted(expected_typed)
    # Two executor JVMs ran the tasks, in Python workers of two different daemons.
    assert result["executors"] == 2
    assert len(result["daemons"]) == 2
    # The executors' work directory is the temporary one, not the installed package's.
    assert any((tmp_path / "spark-home" / "work").iterdir())
