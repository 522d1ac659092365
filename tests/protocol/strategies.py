"""Hypothesis strategies that build message bodies straight from our schema definitions.

``body_and_expected(fields, version, flexible)`` draws a pair: the body to encode and the dict
the decoder must return for it (every field; defaults for fields the version lacks or that a
tagged section left out; ``records`` compared as bytes).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kafkaconsumer.protocol.schema import Field

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

# Unknown tags are drawn above every tag our definitions use, so they never collide.
UNKNOWN_TAG_BASE = 1000


def _scalar(element: str) -> st.SearchStrategy[Any]:
    if element in _INT_RANGES:
        lo, hi = _INT_RANGES[element]
        return st.integers(lo, hi)
    if element == "float64":
        return st.floats(allow_nan=False)
    if element == "bool":
        return st.booleans()
    if element == "string":
        return st.text(max_size=12)
    if element in ("bytes", "records"):
        return st.binary(max_size=24)
    if element == "uuid":
        return st.uuids()
    raise AssertionError(f"unknown element type {element}")


def _pair(s: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, Any]]:
    return s.map(lambda v: (v, v))


def value_pairs(field: Field, version: int, flexible: bool) -> st.SearchStrategy[tuple[Any, Any]]:
    """(value to encode, value expected after decoding) for one field at ``version``."""
    elem: st.SearchStrategy[Any]
    strat: st.SearchStrategy[Any]
    if field.is_array:
        if field.struct_fields is not None:
            elem = struct_pairs(field.struct_fields, version, flexible)
        else:
            elem = _pair(_scalar(field.element or ""))
        strat = st.lists(elem, max_size=3).map(
            lambda items: ([a for a, _ in items], [b for _, b in items])
        )
    elif field.struct_fields is not None:
        strat = struct_pairs(field.struct_fields, version, flexible)
    else:
        strat = _pair(_scalar(field.element or ""))
    if field.nullable_in(version):
        strat = st.one_of(st.just((None, None)), strat)
    return strat


def struct_pairs(
    fields: list[Field], version: int, flexible: bool
) -> st.SearchStrategy[tuple[dict[str, Any], dict[str, Any]]]:
    """(struct to encode, struct expected after decoding)."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields:
        if not f.present_in(version) or (f.tagged_in(version) and not flexible):
            continue
        if f.tagged_in(version):
            # A tagged field may be left out entirely: it then decodes to its default.
            parts[f.name] = st.one_of(st.just(None), value_pairs(f, version, flexible))
        else:
            parts[f.name] = value_pairs(f, version, flexible)
    unknown: st.SearchStrategy[dict[int, bytes]] = st.just({})
    if flexible:
        unknown = st.dictionaries(
            st.integers(UNKNOWN_TAG_BASE, UNKNOWN_TAG_BASE + 50), st.binary(max_size=6), max_size=2
        )

    def build(
        drawn: tuple[dict[str, Any], dict[int, bytes]],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        values, unk = drawn
        body: dict[str, Any] = {}
        expected: dict[str, Any] = {}
        for f in fields:
            got = values.get(f.name)
            if got is None:  # absent at this version, or a tagged field left out
                expected[f.name] = f.fresh_default()
            else:
                body[f.name], expected[f.name] = got
        if unk:
            body["_unknown_tags"] = dict(unk)
            expected["_unknown_tags"] = dict(unk)
        return body, expected

    return st.tuples(st.fixed_dictionaries(parts), unknown).map(build)


def normalize(value: Any) -> Any:
    """Make decoded values comparable: memoryviews become bytes, recursively."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value
