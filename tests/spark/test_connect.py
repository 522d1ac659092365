"""Spark Connect: a batch read (found by name, then with pushdown after ``register``),
``read_kafka`` (and its warning for a large read) and a streaming query through a local
Connect server, as a new user would start one (``SparkSession.builder.remote("local[2]")``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import unique_name

from .conftest import _java_missing, create_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def test_batch_stream_and_read_kafka_through_spark_connect(broker: Any, tmp_path: Path) -> None:
    if broker.is_tansu:
        pytest.skip("the Spark tests run once per CI run, on Apache Kafka (their time budget)")
    pytest.importorskip("pyspark")
    pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect]")
    why = _java_missing()
    if why is not None:
        pytest.skip(why)
    bs = broker.bootstrap_servers
    topic = unique_name("sp-connect")
    create_topic(bs, topic, 2)
    produce(
        bs,
        topic,
        [(i % 2, None, b"v%d" % i, [("h", b"x")] if i % 4 == 1 else []) for i in range(120)],
    )
    root = Path(__file__).resolve().parents[2]
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tests.spark.connect_job", bs, topic, str(tmp_path)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # Partition 1 holds the odd records: offsets 10..59, of which those of i % 4 == 1 (every
    # other one) carry a header.
    # read_kafka warns only from its large-read mark on (set to 1 byte for the second read).
    assert result == {
        "found": 120,
        "pushed": 25,
        "driver": 120,
        "large": 120,
        "warned": [0, [True]],
        "streamed": 120,
    }
