"""Generate flat encode/decode functions from :mod:`~kafkaconsumer.protocol.schema` definitions.

For each (api, version, direction) the generator writes Python source with one function per
struct (the message body and every nested struct), straight-line code per field, consecutive
fixed-width fields packed or unpacked with one :class:`struct.Struct`, and no per-field
dispatch at run time. The source is compiled with ``exec`` the first time a codec is asked for
and cached for the life of the process.

Compiling is most of a codec's first-use cost (about 1 ms each). The build (``setup.py``) runs
:func:`write_compiled`, which stores the compiled code of every codec in ``_codecs.marshal``
next to this module; a codec then comes from there when the stored code was compiled from
exactly the source the generator produces now (its SHA-256) on this Python (bytecode magic
number). Anything else (no file, another Python, a generator changed since the build) compiles
as before: the generator stays the single source and the file is only a cache, never committed.

Generated decoders take ``(buf, pos, end)`` where ``buf`` is a ``memoryview`` of the whole frame
(or of one tagged field's bytes) and ``end == len(buf)``; they return ``(dict, new_pos)``.
Generated encoders take ``(out, body)`` and append to the ``bytearray`` ``out``.

Errors inside generated code may be ``struct.error``, ``IndexError``, ``UnicodeDecodeError`` and
the like; :class:`Codec` turns every one of them into
:class:`~kafkaconsumer.errors.KafkaProtocolError`, so callers see only that.
"""

from __future__ import annotations

import importlib.util
import logging
import marshal
import os
import struct
import threading
import uuid
import zlib
from collections.abc import Callable, Mapping
from types import CodeType
from typing import Any, NamedTuple

from kafkaconsumer.errors import KafkaProtocolError
from kafkaconsumer.protocol import types as T
from kafkaconsumer.protocol.schema import Api, Field

logger = logging.getLogger(__name__)

__all__ = [
    "Codec",
    "generate_source",
    "build_codec",
    "CodecCache",
    "COMPILED_FILE",
    "write_compiled",
]

#: Where the build stores every codec's compiled code (see the module docstring).
COMPILED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_codecs.marshal")

DecodeFn = Callable[[memoryview, int, int], "tuple[dict[str, Any], int]"]
EncodeFn = Callable[[bytearray, "dict[str, Any]"], None]

# struct format code and width of each fixed-width primitive.
_FIXED: dict[str, tuple[str, int]] = {
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
    "float64": ("d", 8),
    "bool": ("?", 1),
}


def _absent_error(name: str, version: int, value: Any) -> KafkaProtocolError:
    return KafkaProtocolError(
        f"field {name!r} does not exist at version {version} and cannot carry the non-default value {value!r}"
    )


def _null_error(name: str) -> KafkaProtocolError:
    return KafkaProtocolError(f"field {name!r} is not nullable at this version but is null")


def _unknown_keys(body: Any, known: frozenset[str]) -> KafkaProtocolError:
    if not isinstance(body, dict):
        return KafkaProtocolError(f"expected a dict for a struct, got {type(body).__name__}")
    unknown = sorted(str(k) for k in body if k not in known)
    return KafkaProtocolError(f"unknown field(s) {unknown}; this struct has {sorted(known)}")


def _length_error(name: str, n: int, left: int) -> KafkaProtocolError:
    return KafkaProtocolError(f"field {name!r}: length {n} does not fit in the {left} bytes left")


def _bad_length(name: str, n: int) -> KafkaProtocolError:
    return KafkaProtocolError(f"field {name!r}: invalid length {n}")


def _encode_string(value: Any) -> bytes:
    raw: bytes = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise KafkaProtocolError(f"string of {len(raw)} bytes exceeds the int16 length limit")
    return raw


def _nbytes(value: Any) -> int:
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return memoryview(value).nbytes


_BASE_NS: dict[str, Any] = {
    "_ruv": T.read_uvarint,
    "_wuv": T.write_uvarint,
    "_wtr": T.write_tagged_raw,
    "_UUID": uuid.UUID,
    "_ZU": T.ZERO_UUID,
    "_unpack_from": struct.unpack_from,
    "_pack": struct.pack,
    "_I16": T.INT16.unpack_from,
    "_I32": T.INT32.unpack_from,
    "_P16": T.INT16.pack,
    "_P32": T.INT32.pack,
    "_absent_error": _absent_error,
    "_null_error": _null_error,
    "_length_error": _length_error,
    "_unknown_keys": _unknown_keys,
    "_bad_length": _bad_length,
    "_estr": _encode_string,
    "_nbytes": _nbytes,
    "_mv": memoryview,
    "_str": str,
    "_bytes": bytes,
    "_list": list,
}


def _min_size(field: Field, version: int, flexible: bool) -> int:
    """Smallest number of bytes one value of ``field`` takes (used to bound array counts)."""
    if field.is_array:
        return 1 if flexible else 4
    if field.struct_fields is not None:
        if field.nullable_in(version):
            return 1
        return _struct_min_size(field.struct_fields, version, flexible)
    return _element_min_size(field.element or "", flexible)


def _element_min_size(element: str, flexible: bool) -> int:
    if element in _FIXED:
        return _FIXED[element][1]
    if element == "uuid":
        return 16
    if element == "string":
        return 1 if flexible else 2
    # bytes and records
    return 1 if flexible else 4


def _struct_min_size(fields: list[Field], version: int, flexible: bool) -> int:
    size = 1 if flexible else 0
    for f in fields:
        if f.present_in(version) and not f.tagged_in(version):
            size += _min_size(f, version, flexible)
    return size


class _Gen:
    """Source builder for one (api, version, direction).

    Thread-safety: used by one thread only, during generation.
    """

    def __init__(self, version: int, flexible: bool) -> None:
        self.version = version
        self.flexible = flexible
        self.chunks: list[str] = []
        self.ns: dict[str, Any] = dict(_BASE_NS)
        self.counter = 0
        self.consts: dict[tuple[str, str], str] = {}
        self.struct_fns: dict[tuple[int, str], str] = {}

    # -- helpers -----------------------------------------------------------------------------

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any) -> str:
        """A name bound to ``value`` in the generated namespace."""
        key = (type(value).__name__, repr(value))
        found = self.consts.get(key)
        if found is not None:
            return found
        nm = self.name("_C")
        self.ns[nm] = value
        self.consts[key] = nm
        return nm

    def default_expr(self, field: Field) -> str:
        """An expression giving a fresh default value for ``field``."""
        d = field.default
        if d is None or isinstance(d, (bool, int, float, str, bytes)):
            return repr(d)
        if isinstance(d, list):
            if not d:
                return "[]"
            return f"_list({self.const(d)})"
        if isinstance(d, uuid.UUID):
            return "_ZU" if d.int == 0 else self.const(d)
        if isinstance(d, dict):
            literal = self._dict_literal(d)
            if literal is not None:
                # An inline literal is several times faster than a call (the Fetch hot path
                # fills three such defaults per partition).
                return literal
            fn = self.name("_F")
            self.ns[fn] = field.fresh_default
            return f"{fn}()"
        return self.const(d)

    def _dict_literal(self, d: dict[str, Any]) -> str | None:
        """Source for a fresh copy of a struct default, or None if it holds something odd."""
        items = []
        for key, value in d.items():
            if value is None or isinstance(value, (bool, int, float, str, bytes)):
                expr = repr(value)
            elif isinstance(value, list) and not value:
                expr = "[]"
            elif isinstance(value, uuid.UUID) and value.int == 0:
                expr = "_ZU"
            elif isinstance(value, dict):
                inner = self._dict_literal(value)
                if inner is None:
                    return None
                expr = inner
            else:
                return None
            items.append(f"{key!r}: {expr}")
        return "{" + ", ".join(items) + "}"

    # -- decoding ----------------------------------------------------------------------------

    def struct_decoder(self, fields: list[Field]) -> str:
        key = (id(fields), "d")
        found = self.struct_fns.get(key)
        if found is not None:
            return found
        fn = self.name("_d")
        self.struct_fns[key] = fn
        v = self.version
        lines = [f"def {fn}(buf, pos, end):"]
        names: dict[str, str] = {}
        # Group runs of regular fixed-width fields into one unpack.
        run: list[tuple[Field, str]] = []

        def flush() -> None:
            if not run:
                return
            fmt = ">" + "".join(_FIXED[f.element or ""][0] for f, _ in run)
            width = struct.calcsize(fmt)
            st = self.const(struct.Struct(fmt))
            targets = ", ".join(var for _, var in run)
            if len(run) == 1:
                targets += ","
            lines.append(f"    {targets} = {st}.unpack_from(buf, pos)")
            lines.append(f"    pos += {width}")
            run.clear()

        for i, f in enumerate(fields):
            var = f"v{i}"
            names[f.name] = var
            if not f.present_in(v) or f.tagged_in(v):
                continue
            if not f.is_array and f.struct_fields is None and f.element in _FIXED:
                run.append((f, var))
                continue
            flush()
            lines.extend(self.value_decode(f, var, "    ", 0))
        flush()
        tagged = [f for f in fields if f.tagged_in(v)] if self.flexible else []
        for f in fields:
            if not f.present_in(v) or (f.tagged_in(v) and not self.flexible):
                lines.append(f"    {names[f.name]} = {self.default_expr(f)}")
        for f in tagged:
            lines.append(f"    {names[f.name]} = {self.default_expr(f)}")
        if self.flexible:
            lines += [
                "    _n = buf[pos]",
                "    if _n & 0x80:",
                "        _n, pos = _ruv(buf, pos, end)",
                "    else:",
                "        pos += 1",
                "    _unk = None",
                "    if _n:",
                "        if _n * 2 > end - pos:",
                "            raise _length_error('<tagged fields>', _n, end - pos)",
                "        for _ in range(_n):",
                "            _t, pos = _ruv(buf, pos, end)",
                "            _s, pos = _ruv(buf, pos, end)",
                "            _te = pos + _s",
                "            if _te > end:",
                "                raise _length_error('<tagged field>', _s, end - pos)",
            ]
            kw = "if"
            for f in tagged:
                td = self.tagged_value_decoder(f)
                lines.append(f"            {kw} _t == {f.tag}:")
                lines.append(f"                {names[f.name]} = {td}(buf[pos:_te], 0, _s)[0]")
                kw = "elif"
            body_indent = "            "
            if tagged:
                lines.append("            else:")
                body_indent = "                "
            lines += [
                f"{body_indent}if _unk is None:",
                f"{body_indent}    _unk = {{}}",
                f"{body_indent}_unk[_t] = _bytes(buf[pos:_te])",
                "            pos = _te",
            ]
        items = ", ".join(f"{f.name!r}: {names[f.name]}" for f in fields)
        if self.flexible:
            lines.append(f"    _r = {{{items}}}")
            lines.append("    if _unk:")
            lines.append("        _r['_unknown_tags'] = _unk")
            lines.append("    return _r, pos")
        else:
            lines.append(f"    return {{{items}}}, pos")
        self.chunks.append("\n".join(lines))
        return fn

    def tagged_value_decoder(self, field: Field) -> str:
        fn = self.name("_td")
        lines = [f"def {fn}(buf, pos, end):"]
        lines.extend(self.value_decode(field, "v", "    ", 0))
        lines.append("    return v, pos")
        self.chunks.append("\n".join(lines))
        return fn

    def read_length(self, var: str, ind: str, kind: str) -> list[str]:
        """Lines reading a length prefix into ``var``; -1 means null in every form.

        ``kind`` is "string" (int16), "bytes"/"array" (int32) in non-flexible versions; in
        flexible versions an unsigned varint holding length + 1.
        """
        if self.flexible:
            return [
                f"{ind}{var} = buf[pos]",
                f"{ind}if {var} & 0x80:",
                f"{ind}    {var}, pos = _ruv(buf, pos, end)",
                f"{ind}else:",
                f"{ind}    pos += 1",
                f"{ind}{var} -= 1",
            ]
        if kind == "string":
            return [f"{ind}{var} = _I16(buf, pos)[0]", f"{ind}pos += 2"]
        return [f"{ind}{var} = _I32(buf, pos)[0]", f"{ind}pos += 4"]

    def null_check(self, field: Field, n: str, target: str, ind: str) -> list[str]:
        """Lines handling a negative length ``n``: null if allowed, else an error."""
        if field.nullable_in(self.version):
            return [
                f"{ind}if {n} < 0:",
                f"{ind}    if {n} != -1:",
                f"{ind}        raise _bad_length({field.name!r}, {n})",
                f"{ind}    {target} = None",
            ]
        return [
            f"{ind}if {n} < 0:",
            f"{ind}    raise _null_error({field.name!r}) if {n} == -1 else _bad_length({field.name!r}, {n})",
        ]

    def value_decode(self, field: Field, target: str, ind: str, depth: int) -> list[str]:
        """Lines decoding one value of ``field`` (scalar, array or struct) into ``target``."""
        n = f"_n{depth}"
        if field.is_array:
            lines = self.read_length(n, ind, "array")
            lines += self.null_check(field, n, target, ind)
            lines.append(f"{ind}else:" if field.nullable_in(self.version) else f"{ind}if True:")
            inner = ind + "    "
            if field.struct_fields is not None:
                min_size = max(
                    1, _struct_min_size(field.struct_fields, self.version, self.flexible)
                )
            else:
                min_size = max(1, _element_min_size(field.element or "", self.flexible))
            cond = f"{n} > end - pos" if min_size == 1 else f"{n} * {min_size} > end - pos"
            lines += [
                f"{inner}if {cond}:",
                f"{inner}    raise _length_error({field.name!r}, {n}, end - pos)",
            ]
            if field.struct_fields is not None:
                fn = self.struct_decoder(field.struct_fields)
                e = f"_e{depth}"
                lines += [
                    f"{inner}{target} = []",
                    f"{inner}_ap{depth} = {target}.append",
                    f"{inner}for _ in range({n}):",
                    f"{inner}    {e}, pos = {fn}(buf, pos, end)",
                    f"{inner}    _ap{depth}({e})",
                ]
            elif field.element in _FIXED:
                code, width = _FIXED[field.element]
                lines += [
                    f"{inner}{target} = _list(_unpack_from('>%d{code}' % {n}, buf, pos))",
                    f"{inner}pos += {n} * {width}",
                ]
            else:
                e = f"_e{depth}"
                lines += [
                    f"{inner}{target} = []",
                    f"{inner}for _ in range({n}):",
                ]
                lines += self.scalar_decode(
                    field, field.element or "", e, inner + "    ", depth + 1, False
                )
                lines.append(f"{inner}    {target}.append({e})")
            return lines
        if field.struct_fields is not None:
            fn = self.struct_decoder(field.struct_fields)
            if field.nullable_in(self.version):
                return [
                    f"{ind}if buf[pos] >= 128:",  # int8 -1 (0xff) marks null
                    f"{ind}    pos += 1",
                    f"{ind}    {target} = None",
                    f"{ind}else:",
                    f"{ind}    {target}, pos = {fn}(buf, pos + 1, end)",
                ]
            return [f"{ind}{target}, pos = {fn}(buf, pos, end)"]
        return self.scalar_decode(
            field, field.element or "", target, ind, depth, field.nullable_in(self.version)
        )

    def scalar_decode(
        self, field: Field, element: str, target: str, ind: str, depth: int, nullable: bool
    ) -> list[str]:
        """Lines decoding one primitive value of type ``element`` into ``target``."""
        if element in _FIXED:
            code, width = _FIXED[element]
            st = self.const(struct.Struct(">" + code))
            return [f"{ind}{target} = {st}.unpack_from(buf, pos)[0]", f"{ind}pos += {width}"]
        if element == "uuid":
            return [
                f"{ind}if pos + 16 > end:",
                f"{ind}    raise _length_error({field.name!r}, 16, end - pos)",
                f"{ind}{target} = _UUID(bytes=_bytes(buf[pos:pos + 16]))",
                f"{ind}pos += 16",
            ]
        n = f"_n{depth}"
        lines = self.read_length(n, ind, "string" if element == "string" else "bytes")
        if nullable:
            lines += [
                f"{ind}if {n} < 0:",
                f"{ind}    if {n} != -1:",
                f"{ind}        raise _bad_length({field.name!r}, {n})",
                f"{ind}    {target} = None",
                f"{ind}else:",
            ]
        else:
            lines += [
                f"{ind}if {n} < 0:",
                f"{ind}    raise _null_error({field.name!r}) if {n} == -1 else _bad_length({field.name!r}, {n})",
                f"{ind}if True:",
            ]
        inner = ind + "    "
        lines += [
            f"{inner}_x{depth} = pos + {n}",
            f"{inner}if _x{depth} > end:",
            f"{inner}    raise _length_error({field.name!r}, {n}, end - pos)",
        ]
        if element == "string":
            lines.append(f"{inner}{target} = _str(buf[pos:_x{depth}], 'utf-8')")
        elif element == "bytes":
            lines.append(f"{inner}{target} = _bytes(buf[pos:_x{depth}])")
        else:  # records: a zero-copy slice of the frame
            lines.append(f"{inner}{target} = buf[pos:_x{depth}]")
        lines.append(f"{inner}pos = _x{depth}")
        return lines

    # -- encoding ----------------------------------------------------------------------------

    def struct_encoder(self, fields: list[Field]) -> str:
        key = (id(fields), "e")
        found = self.struct_fns.get(key)
        if found is not None:
            return found
        fn = self.name("_e")
        self.struct_fns[key] = fn
        v = self.version
        # Keys no version of this struct knows are rejected: a misspelt field name would
        # otherwise be sent silently as its default.
        known = self.const(frozenset([f.name for f in fields] + ["_unknown_tags"]))
        lines = [
            f"def {fn}(out, d):",
            f"    if not {known}.issuperset(d):",
            f"        raise _unknown_keys(d, {known})",
            "    _g = d.get",
        ]
        run: list[Field] = []

        def flush() -> None:
            if not run:
                return
            fmt = ">" + "".join(_FIXED[f.element or ""][0] for f in run)
            st = self.const(struct.Struct(fmt))
            args = ", ".join(f"_g({f.name!r}, {self.default_expr(f)})" for f in run)
            lines.append(f"    out += {st}.pack({args})")
            run.clear()

        for f in fields:
            if not f.present_in(v) or f.tagged_in(v):
                continue
            if not f.is_array and f.struct_fields is None and f.element in _FIXED:
                run.append(f)
                continue
            flush()
            lines.append(f"    v = _g({f.name!r}, {self.default_expr(f)})")
            lines.extend(self.value_encode(f, "v", "    ", 0))
        flush()
        # A value given for a field this version lacks is an error unless the spec marks the
        # field ignorable (the Java client's rule); the default (or null) is always fine.
        for f in fields:
            absent = not f.present_in(v) or (f.tagged_in(v) and not self.flexible)
            if absent and not f.ignorable:
                dflt = self.const(f.default)
                lines += [
                    f"    v = _g({f.name!r}, None)",
                    f"    if v is not None and v != {dflt}:",
                    f"        raise _absent_error({f.name!r}, {v}, v)",
                ]
        if self.flexible:
            tagged = sorted((f for f in fields if f.tagged_in(v)), key=lambda f: f.tag or 0)
            lines.append("    _tags = None")
            for f in tagged:
                te = self.tagged_value_encoder(f)
                dflt = self.const(f.default)
                lines += [
                    f"    v = _g({f.name!r}, {dflt})",
                    f"    if v is not {dflt} and v != {dflt}:",
                    "        _b = bytearray()",
                    f"        {te}(_b, v)",
                    "        if _tags is None:",
                    "            _tags = {}",
                    f"        _tags[{f.tag}] = _b",
                ]
            lines += [
                "    _u = _g('_unknown_tags')",
                "    if _u:",
                "        if _tags is None:",
                "            _tags = {}",
                "        for _k, _r in _u.items():",
                "            if _k not in _tags:",
                "                _tags[_k] = _r",
                "    if _tags:",
                "        _wtr(out, _tags)",
                "    else:",
                "        out.append(0)",
            ]
        self.chunks.append("\n".join(lines))
        return fn

    def tagged_value_encoder(self, field: Field) -> str:
        fn = self.name("_te")
        lines = [f"def {fn}(out, v):"]
        lines.extend(self.value_encode(field, "v", "    ", 0))
        self.chunks.append("\n".join(lines))
        return fn

    def write_length(self, expr: str, ind: str, kind: str) -> list[str]:
        if self.flexible:
            return [f"{ind}_wuv(out, {expr} + 1)"]
        if kind == "string":
            return [f"{ind}out += _P16({expr})"]
        return [f"{ind}out += _P32({expr})"]

    def write_null(self, ind: str, kind: str) -> str:
        if self.flexible:
            return f"{ind}out.append(0)"
        marker = b"\xff\xff" if kind == "string" else b"\xff\xff\xff\xff"
        return f"{ind}out += {marker!r}"

    def value_encode(self, field: Field, var: str, ind: str, depth: int) -> list[str]:
        """Lines encoding the value in ``var`` of ``field``."""
        nullable = field.nullable_in(self.version)
        if field.is_array:
            lines = [f"{ind}if {var} is None:"]
            if nullable:
                lines.append(self.write_null(ind + "    ", "array"))
            else:
                lines.append(f"{ind}    raise _null_error({field.name!r})")
            lines.append(f"{ind}else:")
            inner = ind + "    "
            lines += self.write_length(f"len({var})", inner, "array")
            if field.struct_fields is not None:
                fn = self.struct_encoder(field.struct_fields)
                lines += [f"{inner}for _e{depth} in {var}:", f"{inner}    {fn}(out, _e{depth})"]
            elif field.element in _FIXED:
                code, _ = _FIXED[field.element]
                lines.append(f"{inner}out += _pack('>%d{code}' % len({var}), *{var})")
            else:
                e = f"_e{depth}"
                lines.append(f"{inner}for {e} in {var}:")
                lines += self.scalar_encode(field, field.element or "", e, inner + "    ", False)
            return lines
        if field.struct_fields is not None:
            fn = self.struct_encoder(field.struct_fields)
            if nullable:
                return [
                    f"{ind}if {var} is None:",
                    f"{ind}    out.append(0xff)",
                    f"{ind}else:",
                    f"{ind}    out.append(1)",
                    f"{ind}    {fn}(out, {var})",
                ]
            return [
                f"{ind}if {var} is None:",
                f"{ind}    raise _null_error({field.name!r})",
                f"{ind}{fn}(out, {var})",
            ]
        return self.scalar_encode(field, field.element or "", var, ind, nullable)

    def scalar_encode(
        self, field: Field, element: str, var: str, ind: str, nullable: bool
    ) -> list[str]:
        if element in _FIXED:
            st = self.const(struct.Struct(">" + _FIXED[element][0]))
            return [f"{ind}out += {st}.pack({var})"]
        if element == "uuid":
            return [
                f"{ind}if {var} is None:",
                f"{ind}    raise _null_error({field.name!r})",
                f"{ind}out += {var}.bytes",
            ]
        kind = "string" if element == "string" else "bytes"
        lines = [f"{ind}if {var} is None:"]
        if nullable:
            lines.append(self.write_null(ind + "    ", kind))
        else:
            lines.append(f"{ind}    raise _null_error({field.name!r})")
        lines.append(f"{ind}else:")
        inner = ind + "    "
        if element == "string":
            lines += [f"{inner}_raw = _estr({var})"]
            lines += self.write_length("len(_raw)", inner, kind)
            lines.append(f"{inner}out += _raw")
        else:
            lines += self.write_length(f"_nbytes({var})", inner, kind)
            lines.append(f"{inner}out += {var}")
        return lines


class Codec(NamedTuple):
    """The generated functions of one (api, version, direction).

    ``decode(buf, pos)`` returns ``(body, new_pos)``; ``encode(out, body)`` appends to ``out``.
    Both raise only :class:`~kafkaconsumer.errors.KafkaProtocolError`.

    Thread-safety: immutable; the generated functions keep no state, so any thread may use it.
    """

    api: Api
    version: int
    direction: str
    flexible: bool
    raw_decode: DecodeFn
    raw_encode: EncodeFn

    def decode(self, buf: memoryview, pos: int = 0) -> tuple[dict[str, Any], int]:
        """Decode a body starting at ``pos`` of ``buf`` (a byte memoryview)."""
        try:
            return self.raw_decode(buf, pos, len(buf))
        except KafkaProtocolError as exc:
            raise KafkaProtocolError(
                f"malformed {self.api.name} v{self.version} {self.direction}: {exc}"
            ) from None
        except Exception as exc:  # every malformed-input failure becomes a protocol error
            raise KafkaProtocolError(
                f"malformed {self.api.name} v{self.version} {self.direction}: {type(exc).__name__}: {exc}"
            ) from None

    def encode(self, out: bytearray, body: dict[str, Any]) -> None:
        """Append the encoded ``body`` to ``out``."""
        if not isinstance(body, dict):
            raise KafkaProtocolError(
                f"{self.api.name} v{self.version} {self.direction} body must be a dict, not {type(body).__name__}"
            )
        try:
            self.raw_encode(out, body)
        except KafkaProtocolError as exc:
            raise KafkaProtocolError(
                f"cannot encode {self.api.name} v{self.version} {self.direction}: {exc}"
            ) from None
        except Exception as exc:
            raise KafkaProtocolError(
                f"cannot encode {self.api.name} v{self.version} {self.direction}: {type(exc).__name__}: {exc}"
            ) from None


def _fields_for(api: Api, direction: str) -> list[Field]:
    if direction == "request":
        return api.request
    if direction == "response":
        return api.response
    raise ValueError(f"direction must be 'request' or 'response', not {direction!r}")


def _generate(api: Api, version: int, direction: str) -> tuple[str, dict[str, Any], str, str]:
    fields = _fields_for(api, direction)
    gen = _Gen(version, api.is_flexible(version))
    dec = gen.struct_decoder(fields)
    enc = gen.struct_encoder(fields)
    header = f"# {api.name} (key {api.key}) v{version} {direction}, flexible={gen.flexible}\n"
    return header + "\n\n".join(gen.chunks) + "\n", gen.ns, dec, enc


def generate_source(api: Api, version: int, direction: str) -> str:
    """The generated Python source for one (api, version, direction), for reading and debugging."""
    return _generate(api, version, direction)[0]


def _filename(api: Api, version: int, direction: str) -> str:
    return f"<kafkaconsumer.protocol {api.name} v{version} {direction}>"


def _digest(source: str) -> bytes:
    # Tells whether a stored codec was compiled from the source generated now (a stale build
    # otherwise). Length and CRC-32, not a cryptographic hash: hashlib's OpenSSL backend took
    # ~3 ms of a short script's start-up, and nothing here needs collision resistance.
    data = source.encode("utf-8")
    return len(data).to_bytes(4, "big") + zlib.crc32(data).to_bytes(4, "big")


def write_compiled(path: str, apis: Mapping[int, Api]) -> int:
    """Generate and compile every codec of ``apis`` and store them in ``path`` (the build
    step); returns how many. The file is replaced atomically.
    """
    # Layout: magic number, index length (4 bytes), marshalled index {key: (digest, start,
    # end)}, then the marshalled code objects: start-up reads the index, and loads only the
    # codecs it uses.
    index: dict[str, tuple[bytes, int, int]] = {}
    blobs = bytearray()
    for api in apis.values():
        for version in range(api.min_version, api.max_version + 1):
            for direction in ("request", "response"):
                source = _generate(api, version, direction)[0]
                code = marshal.dumps(compile(source, _filename(api, version, direction), "exec"))
                index[f"{api.key}/{version}/{direction}"] = (
                    _digest(source),
                    len(blobs),
                    len(blobs) + len(code),
                )
                blobs += code
    head = marshal.dumps(index)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out:
        out.write(importlib.util.MAGIC_NUMBER + len(head).to_bytes(4, "big") + head + blobs)
    os.replace(tmp, path)
    return len(index)


class _Compiled:
    """The build's compiled codecs, read on first use.

    Thread-safety: callers hold :class:`CodecCache`'s lock.
    """

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._index: dict[str, tuple[bytes, int, int]] | None = None
        self._blobs = memoryview(b"")

    def code(self, api: Api, version: int, direction: str, source: str) -> CodeType | None:
        """The stored code of this codec if it was compiled from ``source``, else None."""
        if self._index is None:
            self._index = self._load()
        entry = self._index.get(f"{api.key}/{version}/{direction}")
        if entry is None or entry[0] != _digest(source):
            return None
        try:
            code = marshal.loads(self._blobs[entry[1] : entry[2]])
        except (ValueError, EOFError, TypeError):
            return None
        return code if isinstance(code, CodeType) else None

    def _load(self) -> dict[str, tuple[bytes, int, int]]:
        if self._path is None:
            return {}
        try:
            with open(self._path, "rb") as f:
                blob = f.read()
        except OSError:
            return {}
        magic = importlib.util.MAGIC_NUMBER
        if not blob.startswith(magic):
            logger.debug("%s is for another Python; compiling codecs", self._path)
            return {}
        start = len(magic) + 4
        end = start + int.from_bytes(blob[len(magic) : start], "big")
        try:
            index = marshal.loads(blob[start:end])
        except (ValueError, EOFError, TypeError):
            index = None
        if not isinstance(index, dict):
            logger.warning("%s is unreadable; compiling codecs instead", self._path)
            return {}
        self._blobs = memoryview(blob)[end:]
        return index


def build_codec(api: Api, version: int, direction: str, compiled: _Compiled | None = None) -> Codec:
    """Generate and compile the codec of one (api, version, direction); the compile step is
    skipped when ``compiled`` holds code built from the same source.
    """
    if not api.versions.contains(version):
        raise ValueError(f"{api.name} has no version {version} (supported {api.versions.text})")
    source, ns, dec, enc = _generate(api, version, direction)
    code = compiled.code(api, version, direction, source) if compiled is not None else None
    if code is None:
        code = compile(source, _filename(api, version, direction), "exec")
    exec(code, ns)  # noqa: S102 - our own generated source, built from our own definitions
    logger.debug(
        "generated the %s v%d %s codec (%d lines)", api.name, version, direction, source.count("\n")
    )
    return Codec(api, version, direction, api.is_flexible(version), ns[dec], ns[enc])


class CodecCache:
    """Codecs generated on first use and kept for the life of the process.

    Thread-safety: thread-safe; a lock guards generation so each codec is built once.
    """

    def __init__(self, apis: dict[int, Api], compiled_file: str | None = COMPILED_FILE) -> None:
        """Serve codecs for the definitions in ``apis`` (api key -> :class:`Api`), taking
        compiled code from ``compiled_file`` where it matches (None: always compile).
        """
        self._apis = apis
        self._codecs: dict[tuple[int, int, str], Codec] = {}
        self._lock = threading.Lock()
        self._compiled = _Compiled(compiled_file)

    def get(self, api_key: int, version: int, direction: str) -> Codec | None:
        """The codec of (api_key, version, direction), or None when we have no such version."""
        key = (api_key, version, direction)
        codec = self._codecs.get(key)
        if codec is not None:
            return codec
        api = self._apis.get(api_key)
        if api is None or not api.versions.contains(version):
            return None
        with self._lock:
            codec = self._codecs.get(key)
            if codec is None:
                codec = build_codec(api, version, direction, self._compiled)
                self._codecs[key] = codec
        return codec

    def build_all(self) -> int:
        """Generate every codec now (for tests and start-up warming); returns how many exist."""
        for api in list(self._apis.values()):
            for version in range(api.min_version, api.max_version + 1):
                for direction in ("request", "response"):
                    self.get(api.key, version, direction)
        return len(self._codecs)
