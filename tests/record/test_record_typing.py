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
