"""The decode benchmark still runs and every reader in it sees every record (no timings)."""

from __future__ import annotations

import pytest

from benchmarks import decode as bench

# kafka-python's import uses importlib.resources APIs that Python deprecates.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:(read_text|open_text) is deprecated:DeprecationWarning"
)


@pytest.mark.timeout(60)
def test_benchmark_readers_agree(capsys: pytest.CaptureFixture[str]) -> None:
    chunks = bench.build_fetch_data(300, 100, "lz4")
    assert len(chunks) >= 1
    for name, reader in bench.readers().items():
        assert sum(reader(chunk) for chunk in chunks) == 300, name
    assert (
        bench.main(["--records", "300", "--repeat", "1", "--codecs", "none", "--sizes", "100"]) == 0
    )
    table = capsys.readouterr().out
    assert "ours (pure)" in table and "records/s" in table
