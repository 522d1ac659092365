"""Generated fetch data (every format, codec and flag) decodes to exactly what was encoded, on
both decoders; and both decoders agree on everything, read_committed included."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaconsumer.record import encode_batch
from tests.support.record_encoder import encode_control_batch, encode_legacy_message_set

from .conftest import CYTHON

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

keys = st.none() | st.binary(max_size=24)
values = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=12)), max_size=3)
timestamps = st.integers(min_value=0, max_value=2**42)


@dataclass
class Unit:
    """One batch (or legacy message) of the generated fetch data and what it must decode to."""

    data: bytes
    records: list[tuple[Any, ...]] = field(default_factory=list)
    next_offset: int = 0


@st.composite
def batch_specs(draw: st.DrawFn) -> dict[str, Any]:
    magic = draw(st.sampled_from([0, 1, 2, 2, 2]))
    n = draw(st.integers(min_value=1, max_value=12))
    recs = []
    delta = 0
    for i in range(n):
        if i:
            # Gaps between offset deltas are what log compaction leaves.
            delta += draw(st.sampled_from([1, 1, 1, 2, 5]))
        recs.append(
            (
                draw(keys),
                draw(values),
                draw(headers) if magic == 2 else [],
                draw(timestamps),
                delta,
            )
        )
    return {
        "magic": magic,
        "codec": draw(st.sampled_from(CODECS)),
        "records": recs,
        "ts_type": draw(st.sampled_from([0, 1])) if magic else 0,
        "transactional": magic == 2 and draw(st.booleans()),
        "producer_id": draw(st.integers(min_value=0, max_value=2**40)) if magic == 2 else -1,
        "leader_epoch": draw(st.sampled_from([-1, 0, 7, 2**31 - 1])) if magic == 2 else -1,
        "control": magic == 2 and draw(st.integers(0, 5)) == 0,
    }


def _units(spec: dict[str, Any], base: int, topic: str, partition: int) -> list[Unit]:
    magic = spec["magic"]
    recs = spec["records"]
    if spec["control"]:
        data = encode_control_batch(
            draw_commit := bool(base % 2),
            producer_id=spec["producer_id"],
            base_offset=base,
            timestamp_ms=recs[0][3],
        )
        del draw_commit
        return [Unit(data, [], base + 1)]
    if magic == 2:
        data = encode_batch(
            recs,
            base_offset=base,
            compression=spec["codec"],
            producer_id=spec["producer_id"],
            producer_epoch=3 if spec["producer_id"] >= 0 else -1,
            base_sequence=0 if spec["producer_id"] >= 0 else -1,
            transactional=spec["transactional"],
            timestamp_type=spec["ts_type"],
            partition_leader_epoch=spec["leader_epoch"],
        )
        max_ts = max(r[3] for r in recs)
        epoch = None if spec["leader_epoch"] < 0 else spec["leader_epoch"]
        in_batch: list[tuple[Any, ...]] = [
            (
                topic,
                partition,
                base + d,
                max_ts if spec["ts_type"] else ts,
                spec["ts_type"],
                k,
                v,
                list(h),
                epoch,
                -1 if k is None else len(k),
                -1 if v is None else len(v),
            )
            for k, v, h, ts, d in recs
        ]
        return [Unit(data, in_batch, base + recs[-1][4] + 1)]
    if spec["codec"] == "none":
        units = []
        for k, v, _h, ts, d in recs:
            data = encode_legacy_message_set(
                [(k, v, [], ts)], magic=magic, base_offset=base + d, timestamp_type=spec["ts_type"]
            )
            one: tuple[Any, ...] = (
                topic,
                partition,
                base + d,
                ts if magic else -1,
                spec["ts_type"] if magic else -1,
                k,
                v,
                [],
                None,
                -1 if k is None else len(k),
                -1 if v is None else len(v),
            )
            units.append(Unit(data, [one], base + d + 1))
        return units
    data = encode_legacy_message_set(
        recs,
        magic=magic,
        base_offset=base,
        compression=spec["codec"],
        timestamp_type=spec["ts_type"],
    )
    max_ts = max(r[3] for r in recs)
    expected: list[tuple[Any, ...]] = []
    for k, v, _h, ts, d in recs:
        if magic == 0:
            rts, rtype = -1, -1
        elif spec["ts_type"] == 1:
            rts, rtype = max_ts, 1
        else:
            rts, rtype = ts, 0
        expected.append(
            (
                topic,
                partition,
                base + d,
                rts,
                rtype,
                k,
                v,
                [],
                None,
                -1 if k is None else len(k),
                -1 if v is None else len(v),
            )
        )
    return [Unit(data, expected, base + recs[-1][4] + 1)]


@st.composite
def fetch_data(draw: st.DrawFn) -> dict[str, Any]:
    specs = draw(st.lists(batch_specs(), min_size=1, max_size=4))
    base = draw(st.integers(min_value=0, max_value=2**40))
    units: list[Unit] = []
    for spec in specs:
        new = _units(spec, base, "topic-a", 3)
        units.extend(new)
        base = new[-1].next_offset + draw(st.sampled_from([0, 0, 1, 10]))
    first = _first_offset(units[0])
    fetch_offset = draw(st.integers(min_value=first, max_value=units[-1].next_offset))
    cut = None
    if len(units) > 1 and draw(st.booleans()):
        last = len(units[-1].data)
        cut = draw(st.integers(min_value=1, max_value=last - 1))
    return {"units": units, "fetch_offset": fetch_offset, "cut": cut}


def _first_offset(unit: Unit) -> int:
    return int.from_bytes(unit.data[:8], "big", signed=True)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=fetch_data(), check_crcs=st.booleans())
@pytest.mark.timeout(120)
def test_decodes_exactly_what_was_encoded(case: dict[str, Any], check_crcs: bool) -> None:
    units: list[Unit] = case["units"]
    complete = units if case["cut"] is None else units[:-1]
    data = b"".join(u.data for u in units)
    if case["cut"] is not None:
        data = data[: len(data) - len(units[-1].data) + case["cut"]]
    fetch_offset = case["fetch_offset"]
    expected = [r for u in complete for r in u.records if r[2] >= fetch_offset]
    expected_next = max([fetch_offset] + [u.next_offset for u in complete])
    for module in _modules():
        result = module.decode_fetched_records(
            memoryview(data), "topic-a", 3, fetch_offset, check_crcs=check_crcs
        )
        assert [r.as_tuple() for r in result.records] == expected, module.__name__
        assert result.next_offset == expected_next
        assert result.partial is (case["cut"] is not None)


def _modules() -> list[ModuleType]:
    from kafkaconsumer.record import _pyrecords

    return [_pyrecords] + ([CYTHON] if CYTHON is not None else [])


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    case=fetch_data(),
    aborted=st.lists(
        st.fixed_dictionaries(
            {
                "producer_id": st.integers(min_value=0, max_value=2**40),
                "first_offset": st.integers(min_value=0, max_value=2**41),
            }
        ),
        max_size=4,
    ),
)
@pytest.mark.timeout(120)
def test_both_decoders_agree_under_read_committed(
    case: dict[str, Any], aborted: list[dict[str, int]]
) -> None:
    if CYTHON is None:
        pytest.skip("the Cython decoder is not built")
    from kafkaconsumer.record import _pyrecords

    units: list[Unit] = case["units"]
    # Make some aborted entries hit the generated producers.
    for unit in units:
        if unit.records and unit.data[16] == 2:
            pid = int.from_bytes(unit.data[43:51], "big", signed=True)
            if pid >= 0 and pid % 3 == 0:
                aborted.append({"producer_id": pid, "first_offset": _first_offset(unit)})
    data = b"".join(u.data for u in units)
    results = [
        m.decode_fetched_records(
            data,
            "t",
            0,
            case["fetch_offset"],
            read_committed=True,
            aborted_transactions=list(aborted),
        )
        for m in (_pyrecords, CYTHON)
    ]
    assert [r.as_tuple() for r in results[0].records] == [r.as_tuple() for r in results[1].records]
    assert results[0].next_offset == results[1].next_offset
    assert results[0].partial == results[1].partial


def test_records_compare_across_implementations(impl: ModuleType) -> None:
    data = encode_batch([(b"k", b"v", [("h", None)], 5)], base_offset=2)
    from kafkaconsumer.record import _pyrecords

    mine = impl.decode_fetched_records(data, "t", 0, 0).records[0]
    reference = _pyrecords.decode_fetched_records(data, "t", 0, 0).records[0]
    assert mine == reference
    mine.value = "deserialized"
    assert mine != reference
    assert mine.value == "deserialized"
    assert "deserialized" in repr(mine) and "offset=2" in repr(mine)


def test_records_pickle_and_copy(impl: ModuleType) -> None:
    import copy
    import pickle

    data = encode_batch([(b"k", b"v", [("h", b"1")], 5), (None, None, [], 6)], base_offset=9)
    for record in impl.decode_fetched_records(data, "t", 1, 0).records:
        assert pickle.loads(pickle.dumps(record)) == record
        clone = copy.copy(record)
        assert clone == record and clone is not record
        assert type(clone) is type(record)


def test_record_attributes_are_writable(impl: ModuleType) -> None:
    data = encode_batch([(b"k", b"v", [], 5)], base_offset=9, partition_leader_epoch=4)
    (record,) = impl.decode_fetched_records(data, "t", 1, 0).records
    assert record.leader_epoch == 4
    record.key = {"deserialized": True}
    record.value = 42
    record.headers = [("x", None)]
    record.offset = 10
    assert (record.key, record.value, record.headers, record.offset) == (
        {"deserialized": True},
        42,
        [("x", None)],
        10,
    )
    built = type(record)("t", 1, 10, 5, 0, {"deserialized": True}, 42, [("x", None)], 4, 1, 1)
    assert built == record
