"""The share-group consume benchmark still runs and every client reads every record (tiny
sizes, no timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import share_consume
from kafkaconsumer.protocol import ApiKey

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def test_share_consume_reads_every_record_with_each_client(broker: Any) -> None:
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "share_consume.py"),
            "--broker",
            broker.bootstrap_servers,
            "--records",
            "400",
            "--partitions",
            "2",
            "--members",
            "1,2",
            "--timeout",
            "120",
        ],
        capture_output=True,
        text=True,
        timeout=560,
        cwd=ROOT,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    table = [ln for ln in out.stdout.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in table]
    assert [(c[0], c[1]) for c in cells] == [
        (client, members) for members in ("1", "2") for client in share_consume.CLIENTS
    ]
    # Every client's group read all 400 records (the share groups are fresh and start at the
    # earliest offset).
    assert all(c[2] == "400" and c[5] == "yes" for c in cells), out.stdout


def test_markdown_rows() -> None:
    row = {"client": "java", "members": 4, "records": 1000, "elapsed_s": 0.5, "cpu_s": 0.002}
    text = share_consume.markdown([{**row, "expected": 1000}])
    assert text.splitlines()[-1] == "| java | 4 | 1,000 | 2,000 | 2.00 | yes |"
