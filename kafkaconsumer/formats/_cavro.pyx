# cython: language_level=3
"""Avro binary decoded straight into Arrow column buffers (see kafkaconsumer.formats.avro_columns).

A plan is a tree of nodes, compiled in Python once per (writer schema, reader schema) pair; each
node reads one writer value from the payload and appends the reader's value to its builder. The
builders grow C buffers that become Arrow arrays without a Python object per value.
"""

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

import pyarrow as pa


class AvroDataError(ValueError):
    """The payload is not valid Avro binary of the writer schema."""


cdef class Cursor:
    """A read position in one payload.

    Thread-safety: one decode call's own.
    """
    cdef const uint8_t* pos
    cdef const uint8_t* end


cdef inline int _need(Cursor c, Py_ssize_t n) except -1:
    if n < 0 or c.end - c.pos < n:
        raise AvroDataError("truncated")
    return 0


cdef inline int64_t read_long(Cursor c) except? -1:
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if c.pos >= c.end:
            raise AvroDataError("truncated varint")
        b = c.pos[0]
        c.pos += 1
        result |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift > 63:
            raise AvroDataError("varint too long")
    return <int64_t>((result >> 1) ^ (-(<int64_t>(result & 1))))


cdef inline int read_int(Cursor c, int32_t* out) except -1:
    cdef int64_t v = read_long(c)
    if v < -2147483648 or v > 2147483647:
        raise AvroDataError("int out of range")
    out[0] = <int32_t>v
    return 0


cdef class Buf:
    """A growable byte buffer.

    Thread-safety: belongs to one builder (see Builder).
    """
    cdef char* data
    cdef Py_ssize_t size
    cdef Py_ssize_t cap

    def __dealloc__(self):
        PyMem_Free(self.data)

    cdef inline int reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t want = self.size + extra
        cdef Py_ssize_t cap
        cdef char* grown
        if want <= self.cap:
            return 0
        cap = self.cap * 2 if self.cap else 256
        while cap < want:
            cap *= 2
        grown = <char*>PyMem_Realloc(self.data, cap)
        if grown == NULL:
            raise MemoryError()
        self.data = grown
        self.cap = cap
        return 0

    cdef inline int append(self, const void* src, Py_ssize_t n) except -1:
        self.reserve(n)
        memcpy(self.data + self.size, src, n)
        self.size += n
        return 0

    cdef object take(self):
        out = pa.py_buffer(self.data[:self.size]) if self.size else pa.py_buffer(b"")
        self.size = 0
        return out


cdef class Builder:
    """One Arrow column being built: its validity (a byte per value) and length.

    Thread-safety: not thread-safe; AvroColumnDecoder holds its lock around every use.
    """
    cdef Buf valid
    cdef public Py_ssize_t length
    cdef Py_ssize_t nulls
    cdef public object arrow_type

    def __cinit__(self, *args, **kwargs):
        self.valid = Buf()

    cdef int mark_valid(self) except -1:
        cdef uint8_t one = 1
        self.valid.append(&one, 1)
        self.length += 1
        return 0

    cdef int append_null(self) except -1:
        cdef uint8_t zero = 0
        self.valid.append(&zero, 1)
        self.length += 1
        self.nulls += 1
        return 0

    cpdef int append_default(self, object value) except -1:
        raise NotImplementedError

    cdef int append_empty(self) except -1:
        """A valid zero, empty or all-empty value (a non-nullable field under a null struct:
        Arrow forbids nulls there, as pyarrow fills them)."""
        raise NotImplementedError

    cdef object bitmap(self):
        cdef Py_ssize_t i, n = self.length
        cdef bytearray bits
        cdef uint8_t* out
        cdef const uint8_t* src = <const uint8_t*>self.valid.data
        if self.nulls == 0:
            self.valid.size = 0
            return None
        bits = bytearray((n + 7) // 8)
        out = <uint8_t*>(<char*>bits)
        for i in range(n):
            if src[i]:
                out[i >> 3] |= <uint8_t>(1 << (i & 7))
        self.valid.size = 0
        return pa.py_buffer(bytes(bits))

    cpdef object finish(self):
        raise NotImplementedError

    cdef object _reset(self):
        self.length = 0
        self.nulls = 0

    cpdef reset(self):
        """Drop every value appended (after a batch that failed)."""
        self.valid.size = 0
        self._reset()

    cdef Py_ssize_t saved_length, saved_nulls, saved_valid

    cdef void save(self):
        self.saved_length = self.length
        self.saved_nulls = self.nulls
        self.saved_valid = self.valid.size

    cdef void rollback(self):
        self.length = self.saved_length
        self.nulls = self.saved_nulls
        self.valid.size = self.saved_valid


cdef class FixedBuilder(Builder):
    """int32/int64/float32/float64 values (``width`` bytes each) or booleans (width 0)."""
    cdef Buf values
    cdef int width
    cdef int code  # 0 null, 1 boolean, 2 int, 3 long, 4 float, 5 double
    cdef public str kind

    def __init__(self, arrow_type, str kind):
        self.arrow_type = arrow_type
        self.kind = kind
        self.values = Buf()
        self.code = ("null", "boolean", "int", "long", "float", "double").index(kind)
        self.width = (0, 1, 4, 8, 4, 8)[self.code]

    cdef int append_null(self) except -1:
        cdef char zero[8]
        memset(zero, 0, 8)
        self.values.append(zero, self.width)
        return Builder.append_null(self)

    cdef int append_empty(self) except -1:
        if self.code == 0:
            return self.append_null()
        return self.put_long(0)

    cdef inline int put_long(self, int64_t v) except -1:
        cdef int32_t i32
        cdef float f32
        cdef double f64
        cdef uint8_t b
        if self.code == 3:
            self.values.append(&v, 8)
        elif self.code == 2:
            i32 = <int32_t>v
            self.values.append(&i32, 4)
        elif self.code == 4:
            f32 = <float>(<double>v)  # as fastavro: the int as a Python float, then float32
            self.values.append(&f32, 4)
        elif self.code == 5:
            f64 = <double>v
            self.values.append(&f64, 8)
        else:
            b = 1 if v else 0
            self.values.append(&b, 1)
        return self.mark_valid()

    cdef inline int put_double(self, double v) except -1:
        cdef float f32
        if self.code == 4:
            f32 = <float>v
            self.values.append(&f32, 4)
        else:
            self.values.append(&v, 8)
        return self.mark_valid()

    cpdef int append_default(self, object value) except -1:
        if value is None:
            return self.append_null()
        if self.kind == "null":
            return self.append_null()
        if self.kind in ("float", "double"):
            return self.put_double(float(value))
        return self.put_long(int(value))

    cpdef object finish(self):
        cdef Py_ssize_t n = self.length
        cdef Py_ssize_t i
        cdef bytearray bits
        cdef uint8_t* out
        cdef const uint8_t* src
        validity = self.bitmap()
        if self.kind == "null":
            self.values.size = 0
            self._reset()
            return pa.nulls(n)
        if self.kind == "boolean":
            bits = bytearray((n + 7) // 8)
            out = <uint8_t*>(<char*>bits)
            src = <const uint8_t*>self.values.data
            for i in range(n):
                if src[i]:
                    out[i >> 3] |= <uint8_t>(1 << (i & 7))
            self.values.size = 0
            data = pa.py_buffer(bytes(bits))
        else:
            data = self.values.take()
        nulls = self.nulls
        self._reset()
        return pa.Array.from_buffers(self.arrow_type, n, [validity, data], null_count=nulls)

    cdef Py_ssize_t saved_values

    cpdef reset(self):
        Builder.reset(self)
        self.values.size = 0

    cdef void save(self):
        Builder.save(self)
        self.saved_values = self.values.size

    cdef void rollback(self):
        Builder.rollback(self)
        self.values.size = self.saved_values


cdef class BinaryBuilder(Builder):
    """string or binary values: int32 offsets and the bytes."""
    cdef Buf offsets
    cdef Buf data
    cdef public bint text

    def __init__(self, arrow_type, bint text):
        self.arrow_type = arrow_type
        self.text = text
        self.offsets = Buf()
        self.data = Buf()
        cdef int32_t zero = 0
        self.offsets.append(&zero, 4)

    cdef inline int _close(self) except -1:
        if self.data.size > 2147483647:
            raise AvroDataError("more than 2 GiB of strings in one batch")
        cdef int32_t end = <int32_t>self.data.size
        self.offsets.append(&end, 4)
        return 0

    cdef int append_null(self) except -1:
        self._close()
        return Builder.append_null(self)

    cdef int append_empty(self) except -1:
        return self.put(b"", 0)

    cdef inline int put(self, const char* src, Py_ssize_t n) except -1:
        self.data.append(src, n)
        self._close()
        return self.mark_valid()

    cpdef int append_default(self, object value) except -1:
        if value is None:
            return self.append_null()
        raw = value.encode() if isinstance(value, str) else bytes(value)
        return self.put(raw, len(raw))

    cpdef object finish(self):
        cdef Py_ssize_t n = self.length
        cdef int32_t zero = 0
        validity = self.bitmap()
        offsets = self.offsets.take()
        data = self.data.take()
        self.offsets.append(&zero, 4)
        nulls = self.nulls
        self._reset()
        return pa.Array.from_buffers(self.arrow_type, n, [validity, offsets, data], null_count=nulls)

    cdef Py_ssize_t saved_offsets, saved_data

    cpdef reset(self):
        Builder.reset(self)
        self.offsets.size = 4
        self.data.size = 0

    cdef void save(self):
        Builder.save(self)
        self.saved_offsets = self.offsets.size
        self.saved_data = self.data.size

    cdef void rollback(self):
        Builder.rollback(self)
        self.offsets.size = self.saved_offsets
        self.data.size = self.saved_data


cdef class StructBuilder(Builder):
    """A struct of child builders, one per reader field."""
    cdef public list children
    cdef list nullable

    def __init__(self, arrow_type, list children):
        self.arrow_type = arrow_type
        self.children = children
        self.nullable = [arrow_type.field(i).nullable for i in range(len(children))]

    cdef int _fill(self) except -1:
        cdef Builder child
        cdef Py_ssize_t i
        for i in range(len(self.children)):
            child = <Builder>self.children[i]
            if self.nullable[i]:
                child.append_null()
            else:
                child.append_empty()
        return 0

    cdef int append_null(self) except -1:
        self._fill()
        return Builder.append_null(self)

    cdef int append_empty(self) except -1:
        self._fill()
        return self.mark_valid()

    cpdef reset(self):
        cdef Builder child
        Builder.reset(self)
        for child in self.children:
            child.reset()

    cpdef int append_default(self, object value) except -1:
        cdef Builder child
        if value is None:
            return self.append_null()
        for index, child in enumerate(self.children):
            child.append_default(value[self.arrow_type.field(index).name])
        return self.mark_valid()

    cpdef object finish(self):
        cdef Builder child
        n = self.length
        validity = self.bitmap()
        children = [child.finish() for child in self.children]
        nulls = self.nulls
        self._reset()
        return pa.Array.from_buffers(
            self.arrow_type, n, [validity], null_count=nulls, children=children
        )


cdef class ListBuilder(Builder):
    """A list (or, with ``keys``, a map with string keys) of child values: int32 offsets."""
    cdef Buf offsets
    cdef public Builder child
    cdef public Builder keys
    cdef int32_t count

    def __init__(self, arrow_type, Builder child, Builder keys=None):
        self.arrow_type = arrow_type
        self.child = child
        self.keys = keys
        self.offsets = Buf()
        cdef int32_t zero = 0
        self.offsets.append(&zero, 4)

    cdef inline int close(self) except -1:
        if self.child.length > 2147483647:
            raise AvroDataError("more than 2**31 list items in one batch")
        cdef int32_t end = <int32_t>self.child.length
        self.offsets.append(&end, 4)
        return 0

    cdef int append_null(self) except -1:
        self.close()
        return Builder.append_null(self)

    cdef int append_empty(self) except -1:
        self.close()
        return self.mark_valid()

    cpdef int append_default(self, object value) except -1:
        if value is None:
            return self.append_null()
        if self.keys is None:
            for item in value:
                self.child.append_default(item)
        else:
            for key, item in value.items():
                self.keys.append_default(key)
                self.child.append_default(item)
        self.close()
        return self.mark_valid()

    cpdef object finish(self):
        cdef int32_t zero = 0
        n = self.length
        validity = self.bitmap()
        offsets = self.offsets.take()
        self.offsets.append(&zero, 4)
        if self.keys is None:
            children = [self.child.finish()]
        else:
            entries = self.arrow_type.key_field, self.arrow_type.item_field
            keys = self.keys.finish()
            items = self.child.finish()
            children = [pa.StructArray.from_arrays([keys, items], fields=list(entries))]
        nulls = self.nulls
        self._reset()
        return pa.Array.from_buffers(
            self.arrow_type, n, [validity, offsets], null_count=nulls, children=children
        )

    cdef Py_ssize_t saved_offsets

    cpdef reset(self):
        Builder.reset(self)
        self.offsets.size = 4
        self.child.reset()
        if self.keys is not None:
            self.keys.reset()

    cdef void save(self):
        Builder.save(self)
        self.saved_offsets = self.offsets.size

    cdef void rollback(self):
        Builder.rollback(self)
        self.offsets.size = self.saved_offsets


# ---- nodes: read one writer value, append the reader's value ----

cdef class Node:
    """Reads one writer value and appends the reader's value to its builder.

    Thread-safety: immutable once built; it writes to builders, used under their owner's lock.
    """

    cdef int read(self, Cursor c) except -1:
        raise NotImplementedError


cdef class LongNode(Node):
    """A writer int or long into an int/long/float/double reader column."""
    cdef FixedBuilder out

    def __init__(self, FixedBuilder out):
        self.out = out

    cdef int read(self, Cursor c) except -1:
        return self.out.put_long(read_long(c))


cdef class BoolNode(Node):
    cdef FixedBuilder out

    def __init__(self, FixedBuilder out):
        self.out = out

    cdef int read(self, Cursor c) except -1:
        _need(c, 1)
        cdef uint8_t b = c.pos[0]
        c.pos += 1
        if b > 1:
            raise AvroDataError("invalid boolean")
        return self.out.put_long(b)


cdef class FloatNode(Node):
    """A writer float (4 bytes) or double (8 bytes) into a float/double reader column."""
    cdef FixedBuilder out
    cdef int width

    def __init__(self, FixedBuilder out, int width):
        self.out = out
        self.width = width

    cdef int read(self, Cursor c) except -1:
        cdef float f
        cdef double d
        _need(c, self.width)
        if self.width == 4:
            memcpy(&f, c.pos, 4)
            c.pos += 4
            return self.out.put_double(f)
        memcpy(&d, c.pos, 8)
        c.pos += 8
        return self.out.put_double(d)


cdef class NullNode(Node):
    cdef Builder out

    def __init__(self, Builder out):
        self.out = out

    cdef int read(self, Cursor c) except -1:
        return self.out.append_null()


cdef class BytesNode(Node):
    """A writer string or bytes into a string/binary reader column (a string is checked UTF-8
    when the reader column is a string)."""
    cdef BinaryBuilder out

    def __init__(self, BinaryBuilder out):
        self.out = out

    cdef int read(self, Cursor c) except -1:
        cdef int64_t n = read_long(c)
        _need(c, n)
        cdef const char* src = <const char*>c.pos
        c.pos += n
        if self.out.text:
            _check_utf8(<const uint8_t*>src, n)
        return self.out.put(src, n)


cdef int _check_utf8(const uint8_t* s, Py_ssize_t n) except -1:
    cdef Py_ssize_t i = 0
    cdef uint8_t b
    cdef int more
    cdef uint32_t cp
    while i < n:
        b = s[i]
        if b < 0x80:
            i += 1
            continue
        if b >= 0xC2 and b <= 0xDF:
            more = 1
            cp = b & 0x1F
        elif b >= 0xE0 and b <= 0xEF:
            more = 2
            cp = b & 0x0F
        elif b >= 0xF0 and b <= 0xF4:
            more = 3
            cp = b & 0x07
        else:
            raise AvroDataError("invalid UTF-8")
        for k in range(1, more + 1):
            if i + k >= n or (s[i + k] & 0xC0) != 0x80:
                raise AvroDataError("invalid UTF-8")
            cp = (cp << 6) | (s[i + k] & 0x3F)
        if (more == 2 and (cp < 0x800 or (cp >= 0xD800 and cp <= 0xDFFF))) or (
            more == 3 and (cp < 0x10000 or cp > 0x10FFFF)
        ):
            raise AvroDataError("invalid UTF-8")
        i += more + 1
    return 0


cdef class EnumNode(Node):
    """A writer enum into a string reader column: each writer symbol's reader symbol (None:
    not a reader symbol and no default, an error)."""
    cdef BinaryBuilder out
    cdef list symbols

    def __init__(self, BinaryBuilder out, list symbols):
        self.out = out
        self.symbols = symbols

    cdef int read(self, Cursor c) except -1:
        cdef int64_t index = read_long(c)
        if index < 0 or index >= len(self.symbols):
            raise AvroDataError("enum index out of range")
        cdef bytes symbol = self.symbols[index]
        if symbol is None:
            raise AvroDataError("enum symbol unknown to the reader")
        return self.out.put(symbol, len(symbol))


cdef class RecordNode(Node):
    """A writer record into a reader struct: ``steps`` in writer field order (a node, or a
    SkipNode), then ``defaults`` appended to the reader fields the writer lacks."""
    cdef StructBuilder out
    cdef list steps
    cdef list defaults

    def __init__(self, StructBuilder out, list steps, list defaults):
        self.out = out
        self.steps = steps
        self.defaults = defaults

    cdef int read(self, Cursor c) except -1:
        cdef Node step
        cdef Builder b
        for step in self.steps:
            step.read(c)
        for b, value in self.defaults:
            b.append_default(value)
        return self.out.mark_valid()


cdef class UnionNode(Node):
    """A writer union: the branch index chooses a node (None: the null branch, a null in
    ``out``)."""
    cdef Builder out
    cdef list branches

    def __init__(self, Builder out, list branches):
        self.out = out
        self.branches = branches

    cdef int read(self, Cursor c) except -1:
        cdef int64_t index = read_long(c)
        if index < 0 or index >= len(self.branches):
            raise AvroDataError("union index out of range")
        branch = self.branches[index]
        if branch is None:
            return self.out.append_null()
        return (<Node>branch).read(c)


cdef class ArrayNode(Node):
    """A writer array (or, with ``keys``, a map) in blocks into a list (map) column."""
    cdef ListBuilder out
    cdef Node item
    cdef BinaryBuilder keys

    def __init__(self, ListBuilder out, Node item, BinaryBuilder keys=None):
        self.out = out
        self.item = item
        self.keys = keys

    cdef int read(self, Cursor c) except -1:
        cdef int64_t count, i, n
        while True:
            count = read_long(c)
            if count == 0:
                break
            if count < 0:
                count = -count
                read_long(c)  # the block's size in bytes
            if count > c.end - c.pos + 1:
                raise AvroDataError("block count beyond the payload")
            for i in range(count):
                if self.keys is not None:
                    n = read_long(c)
                    _need(c, n)
                    _check_utf8(c.pos, n)
                    self.keys.put(<const char*>c.pos, n)
                    c.pos += n
                self.item.read(c)
        self.out.close()
        return self.out.mark_valid()


cdef class SkipNode(Node):
    """Skips a writer value the reader does not read. ``kind``: 0 null, 1 boolean, 2 int/long/
    enum, 3 float, 4 double, 5 bytes/string, 6 fixed (``size``), 7 record (``parts``), 8 union
    (``parts``), 9 array (``parts[0]``), 10 map (``parts[0]``)."""
    cdef int kind
    cdef Py_ssize_t size
    cdef list parts

    def __init__(self, int kind, Py_ssize_t size=0, list parts=None):
        self.kind = kind
        self.size = size
        self.parts = parts if parts is not None else []

    cdef int read(self, Cursor c) except -1:
        cdef int64_t n, count, i
        cdef Node part
        if self.kind == 0:
            return 0
        if self.kind == 1:
            return _skip(c, 1)
        if self.kind == 2:
            read_long(c)
            return 0
        if self.kind == 3:
            return _skip(c, 4)
        if self.kind == 4:
            return _skip(c, 8)
        if self.kind == 5:
            return _skip(c, read_long(c))
        if self.kind == 6:
            return _skip(c, self.size)
        if self.kind == 7:
            for part in self.parts:
                part.read(c)
            return 0
        if self.kind == 8:
            n = read_long(c)
            if n < 0 or n >= len(self.parts):
                raise AvroDataError("union index out of range")
            return (<Node>self.parts[n]).read(c)
        part = self.parts[0]
        while True:
            count = read_long(c)
            if count == 0:
                return 0
            if count < 0:
                n = read_long(c)
                _skip(c, n)
                continue
            if count > c.end - c.pos + 1:
                raise AvroDataError("block count beyond the payload")
            for i in range(count):
                if self.kind == 10:
                    _skip(c, read_long(c))
                part.read(c)


cdef inline int _skip(Cursor c, int64_t n) except -1:
    _need(c, n)
    c.pos += n
    return 0


def decode(
    dict plans,
    Node plain,
    list builders,
    list payloads,
    object on_other,
):
    """Decode every payload into the builders, in order. Framed payloads (magic byte 0 and a
    4-byte id) use ``plans[schema id]``; with ``plain`` given, payloads are unframed and all
    use it. A payload this cannot decode (None, not bytes, another frame, an id without a plan,
    malformed data, after which the builders are put back as they were) goes to
    ``on_other(index)``, which appends that record's value itself."""
    cdef Py_ssize_t i, n = len(payloads)
    cdef Py_ssize_t nb = len(builders)
    cdef Py_ssize_t k
    cdef const uint8_t* p
    cdef Py_ssize_t size
    cdef uint32_t schema_id
    cdef Cursor c = Cursor()
    cdef Node root
    cdef Builder b
    cdef bytes data
    for i in range(n):
        obj = payloads[i]
        if type(obj) is not bytes:
            on_other(i)
            continue
        data = <bytes>obj
        p = <const uint8_t*>(<char*>data)
        size = len(data)
        if plain is not None:
            root = plain
            c.pos = p
        else:
            if size < 5 or p[0] != 0:
                on_other(i)
                continue
            schema_id = (
                (<uint32_t>p[1] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 8) | p[4]
            )
            found = plans.get(schema_id)
            if found is None:
                on_other(i)
                continue
            root = <Node>found
            c.pos = p + 5
        c.end = p + size
        for k in range(nb):
            (<Builder>builders[k]).save()
        try:
            root.read(c)
            if c.pos != c.end:
                raise AvroDataError("bytes left after the record")
        except AvroDataError:
            for k in range(nb):
                (<Builder>builders[k]).rollback()
            on_other(i)


def append_value(Builder builder, object value):
    """Append ``value`` (a deserializer's value of the builder's reader type) to ``builder``."""
    builder.append_default(value)


def append_null(Builder builder):
    """Append a null to ``builder``."""
    builder.append_null()
