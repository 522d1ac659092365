"""Both record classes satisfy the ConsumerRecord protocol, and the extension's stub is complete.

The assignments below are checked by mypy (the tests are type-checked): a record class that
loses or renames an attribute fails the type check, and so does ``record.valeu``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

import kafkaconsumer
from kafkaconsumer.record import _common, _pyrecords

STUB = Path(_common.__file__).with_name("_crecords.pyi")
ARROW_STUB = Path(_common.__file__).with_name("_carrow.pyi")


def _record(cls: Callable[..., _common.ConsumerRecord]) -> _common.ConsumerRecord:
    return cls("t", 0, 5, 1_700_000_000_000, 0, b"k", b"v", None, None, 1, 1)


def test_pure_python_record_satisfies_the_protocol() -> None:
    record: _common.ConsumerRecord = _record(_pyrecords.ConsumerRecord)
    assert isinstance(record, _common.ConsumerRecord)
    assert (record.topic, record.offset, record.headers) == ("t", 5, [])


def test_extension_record_satisfies_the_protocol() -> None:
    crecords = pytest.importorskip("kafkaconsumer.record._crecords")
    record: _common.ConsumerRecord = crecords.ConsumerRecord(
        "t", 0, 5, 1_700_000_000_000, 0, b"k", b"v", None, None, 1, 1
    )
    assert isinstance(record, _common.ConsumerRecord)
    assert record.as_tuple() == _record(_pyrecords.ConsumerRecord).as_tuple()


def test_public_name_is_the_active_class() -> None:
    active = kafkaconsumer.record._impl.ConsumerRecord  # the runtime class
    assert kafkaconsumer.ConsumerRecord is active
    assert isinstance(_record(active), kafkaconsumer.ConsumerRecord)


def test_stub_declares_every_public_name_of_the_extension() -> None:
    crecords = pytest.importorskip("kafkaconsumer.record._crecords")
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    declared = {
        node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))
    }
    # Public names the extension defines itself (not the ones it imports).
    defined = {
        name
        for name, value in vars(crecords).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", None) == crecords.__name__
    }
    assert defined <= declared, f"add {sorted(defined - declared)} to {STUB.name}"
    record_attrs = {
        n.target.id
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        for n in c.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    for attr in ("topic", "partition", "offset", "key", "value", "leader_epoch"):
        assert attr in record_attrs


def _declared(stub: Path) -> set[str]:
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}


def test_arrow_stub_declares_every_public_name_of_the_extension() -> None:
    """Every public class and function of the built Arrow extension is declared in its stub."""
    carrow = pytest.importorskip("kafkaconsumer.record._carrow")
    defined = {
        name
        for name, value in vars(carrow).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", None) == carrow.__name__
    }
    assert defined, "the extension defines no public name: the check would pass vacuously"
    assert defined <= _declared(ARROW_STUB), f"add {sorted(defined - _declared(ARROW_STUB))}"


def test_arrow_extension_returns_the_column_contract() -> None:
    """The Cython Arrow decoder returns the same ``ArrowColumns`` as the pure-Python twin."""
    carrow = pytest.importorskip("kafkaconsumer.record._carrow")
    from kafkaconsumer.record import _columns, encode_batch

    data = encode_batch([(b"k", b"v", [("h", b"x")], 1_700_000_000_000)], base_offset=3)
    rows, cols, next_offset, partial = carrow.decode_columns(data, "t", 0, 0, include_headers=True)
    want_rows, want, want_next, want_partial = _columns.decode_columns(
        _pyrecords.decode_fetched_records, data, "t", 0, 0
    )
    assert isinstance(cols, _columns.ArrowColumns)
    assert isinstance(cols.headers, _columns.HeaderColumns) and want.headers is not None
    assert (rows, next_offset, partial) == (want_rows, want_next, want_partial) == (1, 4, False)
    assert bytes(cols.value_data) == bytes(want.value_data) == b"v"
    assert list(memoryview(cols.offsets).cast("q")) == list(want.offsets) == [3]
    assert cols.headers.num_headers == want.headers.num_headers == 1
