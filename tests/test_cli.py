"""The ``kafkaconsumer`` command: the demo produces and consumes on a real broker."""

from __future__ import annotations

import io
from typing import Any

import pytest

import kafkaconsumer
from kafkaconsumer.cli import main, run_demo


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_demo_reads_back_every_record_once(broker: Any) -> None:
    out = io.StringIO()
    assert run_demo(broker.bootstrap_servers, records=2_000, partitions=3, out=out) == 0
    text = out.getvalue()
    assert "produced 2000 records" in text
    assert "consumed 2000 records" in text
    assert "none=400, gzip=400, snappy=400, lz4=400, zstd=400" in text
    assert "OK: every record arrived exactly once" in text
    from kafkaconsumer.record import USING_EXTENSION

    assert ("record decoder: compiled" if USING_EXTENSION else "record decoder: pure Python") in text


def test_version_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert f"kafkaconsumer {kafkaconsumer.__version__}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
