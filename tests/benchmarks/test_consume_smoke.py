"""The ceiling and consume benchmarks still run and count every record (tiny sizes, no timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import ceiling, consume
from tests.consumer.conftest import create_topic, produce, simple_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]


def test_ceiling_counts_every_record_of_every_partition(broker: Any) -> None:
    topic = create_topic(broker.bootstrap_servers, 3, prefix="ceil")
    produce(broker.bootstrap_servers, topic, simple_records(3, 40, size=100))
    result = ceiling.measure(broker.bootstrap_servers, topic, 120, timeout_s=30)
    assert result["records"] == 120
    assert result["connections"] == 1
    assert result["bytes"] > 120 * 100
    # Several passes read the same records again over the same connection.
    again = ceiling.measure(broker.bootstrap_servers, topic, 120, timeout_s=30, passes=3)
    assert again["records"] == 360
    assert again["connections"] == 1


def test_consume_prints_fractions_of_the_ceiling(broker: Any) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "consume.py"),
            "--bootstrap",
            broker.bootstrap_servers,
            "--records",
            "300",
            "--codecs",
            "none",
            "--clients",
            "kafkaconsumer,kafkaconsumer-arrow",
            "--sizes",
            "100",
            "--partitions",
            "2",
            "--timeout",
            "60",
            "--repeat",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    for client in ("kafkaconsumer ", "kafkaconsumer-arrow "):
        ours = [ln for ln in lines if ln.startswith(client)]
        assert ours and ours[0].split()[-1] == "ok", out.stdout  # every value, once
        assert "%" in ours[0]  # the fraction of the ceiling
    table = [ln for ln in lines if ln.startswith("| 100 | 2 | none |")]
    assert [row.split("|")[4].strip() for row in table] == [
        "ceiling",
        "kafkaconsumer",
        "kafkaconsumer-arrow",
    ]


def test_markdown_table_rows() -> None:
    rows = [
        {
            "size": 100,
            "partitions": 8,
            "codec": "lz4",
            "ceiling_rate": 1000.0,
            "result": {
                "client": "kafkaconsumer",
                "records": 500,
                "elapsed_s": 1.0,
                "cpu_s": 0.0005,
                "peak_rss_mb": 40.0,
            },
        },
        {
            "size": 100,
            "partitions": 8,
            "codec": "lz4",
            "ceiling_rate": 1000.0,
            "result": {"client": "aiokafka", "error": "boom"},
        },
    ]
    text = consume.markdown(rows)
    assert "| 100 | 8 | lz4 | kafkaconsumer | 500 | 50% | 1.00 |  | 500 | 40 |" in text
    assert "| 100 | 8 | lz4 | aiokafka | failed |" in text


def test_rates_count_from_the_first_records() -> None:
    # 1,000 records in 1.1 s, of which the first poll brought 100 after 0.2 s (0.05 s CPU):
    # 900 records in 0.9 s from there on.
    r = {
        "client": "kafkaconsumer",
        "records": 1000,
        "elapsed_s": 1.1,
        "cpu_s": 0.15,
        "first_s": 0.2,
        "first_records": 100,
        "first_cpu_s": 0.05,
        "peak_rss_mb": 40.0,
    }
    assert consume.rate(r) == pytest.approx(1000.0)
    assert consume.cold_rate(r) == pytest.approx(1000 / 1.1)
    assert consume.cpu_us(r) == pytest.approx(0.1 * 1e6 / 900)
    row = {"size": 100, "partitions": 8, "codec": "none", "ceiling_rate": 2000.0, "result": r}
    assert "| kafkaconsumer | 1,000 | 50% | 111.11 | 200 | 909 | 40 |" in consume.markdown([row])
    # A first poll that brought most of the records leaves too little to time: the whole loop.
    r["first_records"] = 600
    assert consume.rate(r) == pytest.approx(1000 / 1.1)


def _run(rate: float, **extra: Any) -> dict[str, Any]:
    return {"client": "c", "records": int(rate), "elapsed_s": 1.0, **extra}


def test_repeated_runs_report_the_median_run() -> None:
    chosen = consume._median_run([_run(300, tag="a"), _run(100, tag="b"), _run(200, tag="c")])
    assert chosen["tag"] == "c"
    assert chosen["runs"] == [300, 100, 200]
    # An even count reports the lower middle run, never a rate no run had.
    assert consume._median_run([_run(400), _run(100), _run(300), _run(200)])["records"] == 200
    # One run is reported as it is.
    assert "runs" not in consume._median_run([_run(50)])


def test_a_failed_run_is_reported_rather_than_the_median() -> None:
    failed = {"client": "c", "error": "no result within 60 s"}
    assert consume._median_run([_run(300), failed, _run(200)]) == failed
