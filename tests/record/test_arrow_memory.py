"""On the same fetched data the Arrow path holds no more memory than the object path: the
peak of the Arrow decoder's column buffers (plus what Python and pyarrow allocate meanwhile)
against the peak of the record objects ``poll()`` would hand out, for 100 B and 1 KiB values,
uncompressed and lz4 (whose values are sized from compressed bytes, the case where the column
used to grow to 1.6x what it needed)."""

from __future__ import annotations

import gc
import importlib
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.decode import build_fetch_data
from tests.record.conftest import EXPECT_EXTENSIONS

pa = pytest.importorskip("pyarrow")

carrow: Any
crecords: Any
try:
    carrow = importlib.import_module("kafkaconsumer.record._carrow")
    crecords = importlib.import_module("kafkaconsumer.record._crecords")
except ImportError:
    carrow = crecords = None

from kafkaconsumer.record import arrow  # noqa: E402 - after pyarrow's importorskip

pytestmark = pytest.mark.skipif(
    not arrow.builder_available() and not EXPECT_EXTENSIONS,
    reason="the Cython Arrow decoder is not built or not selected",
)

# The Arrow path's peak may exceed the objects' by this much: about 50 bytes of fixed-width
# columns per row, first buffers of a few KiB each, and an estimate of decompressed sizes that
# may run a little high (measured: 0.76-0.92 at 100 B, 1.02-1.21 at 1 KiB, where a record
# object costs little beside its value; when the value column grew by doubling, the poll's
# columns on 1 KiB lz4 took 1.86).
MARGIN = 1.3


def _peak(run: Callable[[], Any], columns: bool) -> int:
    """Peak bytes while ``run`` decodes and its result is alive."""
    gc.collect()
    before_pa = int(pa.total_allocated_bytes())
    if columns:
        carrow.release_pooled()  # kept blocks would serve the decode, uncounted
        carrow.reset_column_peak()
        start_columns = int(carrow.column_bytes()[0])
    tracemalloc.start()
    try:
        kept = run()
        python_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    total = python_peak + max(0, int(pa.total_allocated_bytes()) - before_pa)
    if columns:
        total += int(carrow.column_bytes()[1]) - start_columns
    del kept
    return total


@pytest.mark.parametrize("size", [100, 1024])
@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_arrow_peak_is_not_above_the_objects_peak(size: int, codec: str) -> None:
    chunks = build_fetch_data(40_000 if size == 100 else 4_000, size, codec)
    assert len(chunks) >= 2

    def objects() -> Any:
        # All partitions' records at once, as one poll() handing them all out.
        return [
            crecords.decode_fetched_records(c, "topic", i, 0).records for i, c in enumerate(chunks)
        ]

    def builder() -> Any:
        # poll_arrow(): the partitions decoded into one set of columns, one record batch.
        b = arrow.ArrowBuilder(sum(len(c) for c in chunks))
        for i, c in enumerate(chunks):
            b.decode(c, "topic", i, 0)
        return b.finish()

    def per_partition() -> Any:
        return [arrow.decode_fetched_arrow(c, "topic", i, 0) for i, c in enumerate(chunks)]

    reference = _peak(objects, columns=False)
    for name, run in (("builder", builder), ("per partition", per_partition)):
        peak = _peak(run, columns=True)
        assert peak <= MARGIN * reference, (name, peak, reference)


def test_column_bytes_follow_the_buffers() -> None:
    (chunk,) = build_fetch_data(2_000, 1024, "lz4")[:1]
    gc.collect()
    start = carrow.column_bytes()[0]
    carrow.reset_column_peak()
    _rows, columns, _next, _partial = carrow.decode_columns(chunk, "topic", 0, 0)
    held = carrow.column_bytes()[0] - start
    assert held >= len(memoryview(columns.value_data))
    assert carrow.column_bytes()[1] - start >= held
    del columns
    gc.collect()
    assert carrow.column_bytes()[0] <= start
