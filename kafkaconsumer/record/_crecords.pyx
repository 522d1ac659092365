# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython fast path of the record decoder (same interface and results as ``_pyrecords``).

Parses straight from the fetch buffer's bytes: one pass per batch, varints decoded in C (a
fast path for records without headers whose varints are all 1-2 bytes), one ``bytes`` object
per key and value stored straight into the record, record objects taken from a free list
without calling ``__init__``.
Per batch (never per record) it goes back to Python for CRC32C (the ``crc32c`` package works
on whole batches at memory speed), decompression and the read_committed bookkeeping.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.object cimport Py_TPFLAGS_HEAPTYPE, PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport INT64_MIN, int16_t, int32_t, int64_t, uint32_t, uint64_t

cimport cython

import logging
import zlib

from crc32c import crc32c as _crc32c

from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError
from kafkaconsumer.record._common import AbortedTransactions, DecodeResult, decompress_payload

logger = logging.getLogger(__name__)

cdef enum:
    LOG_OVERHEAD = 12  # baseOffset + batchLength
    V2_HEADER_SIZE = 61
    V2_MIN_BATCH_LENGTH = 49  # the v2 header after batchLength
    MIN_BATCH_LENGTH = 14  # the smallest legacy (v0) message
    ATTR_CODEC_MASK = 0x07
    ATTR_TIMESTAMP_TYPE = 0x08
    ATTR_TRANSACTIONAL = 0x10
    ATTR_CONTROL = 0x20


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
        int flags
        const char* doc
    int T_OBJECT_EX

cdef extern from "Python.h":
    object PyDescr_NewMember(type cls, PyMemberDef* member)
    void PyType_Modified(type cls)
    # Raw-pointer forms (no reference counting by Cython): the decoder's stores into records.
    PyObject* _Py_None "Py_None"
    void _incref "Py_INCREF"(PyObject* o) noexcept
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char* s, Py_ssize_t n) except NULL
    void _decref "Py_DECREF"(PyObject* o) noexcept
    int _list_append "PyList_Append"(object lst, PyObject* item) noexcept
    PyObject* PyObject_Init(PyObject* o, PyTypeObject* t) noexcept
    void* PyObject_Malloc(size_t n) noexcept
    PyTypeObject* _type_of "Py_TYPE"(PyObject* o) noexcept
    ctypedef struct PyListObject:
        PyObject** ob_item
        Py_ssize_t allocated
    Py_ssize_t _size_of "Py_SIZE"(object o) noexcept
    void _set_size "Py_SET_SIZE"(object o, Py_ssize_t n) noexcept


@cython.no_gc
cdef class ConsumerRecord:
    """One record as handed to the user (Java ``ConsumerRecord``).

    ``timestamp_type`` is 0 (CreateTime), 1 (LogAppendTime) or -1 (none, magic 0).
    ``key``/``value`` are bytes or None until the fetcher replaces them with deserialized
    values; ``serialized_key_size``/``serialized_value_size`` are -1 for a null key/value.
    ``headers`` is a list of ``(str, bytes | None)``; ``leader_epoch`` is None when unknown.

    Records are not tracked by the cyclic garbage collector (that costs ~40 ns per record
    when a fetch holds thousands): an object stored into a record that refers back to the
    same record forms a cycle that is never freed.

    Thread-safety: a plain mutable value; not synchronised.
    """

    # The object fields are raw owned references, not ``object``: the decoder stores new
    # references straight into them (no None placeholders set by tp_new and released again
    # on assignment), and _record_dealloc, installed as tp_dealloc at import, releases them
    # (a Cython __dealloc__ would save and restore the error state around every call).
    # topic, key, value and leader_epoch are exposed through member descriptors installed at
    # import (see _install_members): CPython specialises attribute access on those, which
    # makes ``record.value`` several times cheaper than Cython's property accessors. A NULL
    # ``_headers`` means "no headers".
    cdef PyObject* topic
    cdef public int partition
    cdef public int64_t offset
    cdef public int64_t timestamp
    cdef public int timestamp_type
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* _headers
    cdef PyObject* leader_epoch
    cdef public int serialized_key_size
    cdef public int serialized_value_size

    def __init__(self, topic, int partition, int64_t offset, int64_t timestamp,
                 int timestamp_type, key, value, headers, leader_epoch,
                 int serialized_key_size, int serialized_value_size):
        _store(&self.topic, topic)
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        _store(&self.key, key)
        _store(&self.value, value)
        _store(&self._headers, headers)
        _store(&self.leader_epoch, leader_epoch)
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    @property
    def headers(self):
        """List of ``(str, bytes | None)``; created on first access when the record has none."""
        if self._headers == NULL or self._headers == <PyObject*>None:
            _store(&self._headers, [])
        return <object>self._headers

    @headers.setter
    def headers(self, value):
        _store(&self._headers, value)

    def as_tuple(self):
        """All attributes, in declaration order (comparisons, tests)."""
        # Through getattr: a deleted member attribute must raise AttributeError (its field
        # is then NULL).
        cdef object me = self
        return (getattr(me, "topic"), self.partition, self.offset, self.timestamp,
                self.timestamp_type, getattr(me, "key"), getattr(me, "value"), self.headers,
                getattr(me, "leader_epoch"), self.serialized_key_size,
                self.serialized_value_size)

    def __eq__(self, other):
        as_tuple = getattr(other, "as_tuple", None)
        if as_tuple is None:
            return NotImplemented
        return self.as_tuple() == as_tuple()

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None

    def __reduce__(self):
        return (ConsumerRecord, self.as_tuple())

    def __repr__(self):
        t = self.as_tuple()
        return (
            f"ConsumerRecord(topic={t[0]!r}, partition={t[1]}, offset={t[2]}, "
            f"timestamp={t[3]}, timestamp_type={t[4]}, key={t[5]!r}, value={t[6]!r}, "
            f"headers={t[7]!r}, leader_epoch={t[8]})"
        )


cdef inline void _store(PyObject** field, object value) noexcept:
    """Replace the owned reference in ``field`` by a new reference to ``value``."""
    cdef PyObject* old = field[0]
    Py_INCREF(value)
    field[0] = <PyObject*>value
    Py_XDECREF(old)


cdef PyMemberDef _members[4]


cdef void _install_members() except *:
    cdef ConsumerRecord probe = ConsumerRecord.__new__(ConsumerRecord)
    cdef char* base = <char*><PyObject*>probe
    cdef int i
    cdef Py_ssize_t offsets[4]
    offsets[0] = <char*>&probe.topic - base
    offsets[1] = <char*>&probe.key - base
    offsets[2] = <char*>&probe.value - base
    offsets[3] = <char*>&probe.leader_epoch - base
    names = (b"topic", b"key", b"value", b"leader_epoch")
    docs = (b"Topic name (str).", b"Key: bytes, None, or the deserialized key.",
            b"Value: bytes, None, or the deserialized value.",
            b"Leader epoch of the batch, or None.")
    for i in range(4):
        _members[i].name = <const char*>(<bytes>names[i])
        _members[i].type = T_OBJECT_EX
        _members[i].offset = offsets[i]
        _members[i].flags = 0
        _members[i].doc = <const char*>(<bytes>docs[i])
    cls = ConsumerRecord
    for i in range(4):
        (<dict>(<PyTypeObject*>cls).tp_dict)[names[i].decode()] = PyDescr_NewMember(
            cls, &_members[i])
    PyType_Modified(cls)


# The member names/docs must outlive the descriptors: they are module-level bytes constants.
_install_members()


# Records are recycled through this free list: a fetch's records are usually dropped
# together, and the next fetch's are made from them without going through the allocator.
# 16384 covers a whole default-size (1 MiB) fetch of ~60-byte records and keeps at most
# ~1.5 MB of idle records. Only touched with the GIL held (the module does not declare
# free-threading support, so the GIL stays on even on free-threaded builds).
cdef enum:
    RECORD_FREELIST_SIZE = 16384

cdef PyObject* _free_records[RECORD_FREELIST_SIZE]
cdef Py_ssize_t _n_free_records = 0
cdef PyTypeObject* _record_type = <PyTypeObject*>ConsumerRecord
cdef size_t _record_size = <size_t>_record_type.tp_basicsize


cdef void _record_dealloc(PyObject* o) noexcept:
    global _n_free_records
    cdef PyTypeObject* tp = _type_of(o)
    Py_XDECREF((<ConsumerRecord>o).topic)
    Py_XDECREF((<ConsumerRecord>o).key)
    Py_XDECREF((<ConsumerRecord>o).value)
    Py_XDECREF((<ConsumerRecord>o)._headers)
    Py_XDECREF((<ConsumerRecord>o).leader_epoch)
    if tp == _record_type and _n_free_records < RECORD_FREELIST_SIZE:
        _free_records[_n_free_records] = o
        _n_free_records += 1
    else:
        # A subclass instance, or the free list is full (subtype_dealloc handles the rest).
        tp.tp_free(o)
    if _record_type.tp_flags & Py_TPFLAGS_HEAPTYPE:
        # Cython builds the class as a heap type in some configurations (type specs): each
        # instance then holds a reference to its type (PyObject_Init takes it).
        _decref(<PyObject*>tp)


cdef inline PyObject* _alloc_record() except NULL:
    """A new ConsumerRecord (reference count 1) whose fields the caller must all set."""
    global _n_free_records
    cdef PyObject* o
    if _n_free_records:
        _n_free_records -= 1
        o = _free_records[_n_free_records]
    else:
        o = <PyObject*>PyObject_Malloc(_record_size)
        if o == NULL:
            raise MemoryError()
    PyObject_Init(o, _record_type)  # (takes a reference to the type if it is a heap type)
    return o


_record_type.tp_dealloc = _record_dealloc


cdef inline int _append_new(list out, PyObject* item) except -1:
    """Append ``item`` to ``out``, taking over the caller's reference (released on error)."""
    cdef Py_ssize_t n = _size_of(out)
    cdef int err
    if n < (<PyListObject*>out).allocated:
        # Room left: what PyList_Append does, without the reference count round trip.
        (<PyListObject*>out).ob_item[n] = item
        _set_size(out, n + 1)
        return 0
    err = _list_append(out, item)
    _decref(item)
    return err


class _Corrupt(Exception):
    """Internal: parsing failed; the caller adds topic, partition and offset."""


# ----------------------------------------------------------------------------- byte readers

cdef inline int16_t rd_i16(const unsigned char* p) noexcept nogil:
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef inline uint32_t rd_u32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline int32_t rd_i32(const unsigned char* p) noexcept nogil:
    return <int32_t>rd_u32(p)


cdef inline int64_t rd_i64(const unsigned char* p) noexcept nogil:
    return <int64_t>((<uint64_t>rd_u32(p) << 32) | rd_u32(p + 4))


cdef Py_ssize_t _varint_slow(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                             int64_t* out, int max_shift) except -1:
    # Returns the position after the varint. Takes and returns positions by value, so that
    # the callers' positions never have their address taken (the compiler keeps them in
    # registers through the inlined fast paths).
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef unsigned char b
    while True:
        if pos >= end:
            raise _Corrupt("record data is truncated inside the batch")
        b = buf[pos]
        pos += 1
        result |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift > max_shift:
            if max_shift == 28:
                raise _Corrupt("varint is longer than 5 bytes")
            raise _Corrupt("varlong is longer than 10 bytes")
    out[0] = <int64_t>((result >> 1) ^ (~(result & 1) + 1))
    return pos


# ----------------------------------------------------------------------------- v2 records

cdef list _parse_headers(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t rec_end,
                         int64_t hcount):
    cdef Py_ssize_t pos = ppos[0]
    cdef int64_t h, hklen, hvlen
    cdef list headers = []
    cdef object hkey, hval
    if hcount < 0:
        raise _Corrupt(f"negative header count {hcount}")
    for h in range(hcount):
        rd_varint(buf, &pos, rec_end, &hklen)
        if hklen < 0:
            raise _Corrupt(f"negative header key length {hklen}")
        if hklen > rec_end - pos:
            raise _Corrupt("header key overruns the record")
        try:
            hkey = PyUnicode_DecodeUTF8(<const char*>buf + pos, hklen, NULL)
        except UnicodeDecodeError:
            raise _Corrupt("header key is not valid UTF-8") from None
        pos += hklen
        rd_varint(buf, &pos, rec_end, &hvlen)
        if hvlen >= 0:
            if hvlen > rec_end - pos:
                raise _Corrupt("header value overruns the record")
            hval = PyBytes_FromStringAndSize(<const char*>buf + pos, hvlen)
            pos += hvlen
        elif hvlen == -1:
            hval = None
        else:
            raise _Corrupt(f"negative header value length {hvlen}")
        headers.append((hkey, hval))
    ppos[0] = pos
    return headers


cdef struct RecordSpan:
    # Where one v2 record's parts are in the buffer.
    Py_ssize_t end  # the position after the record
    Py_ssize_t kpos
    Py_ssize_t vpos
    int64_t ts_delta
    int64_t offset_delta
    int64_t klen
    int64_t vlen
    int64_t hcount


cdef inline Py_ssize_t _short_varint(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t limit,
                                     int64_t* out) noexcept nogil:
    # A varint of 1 or 2 bytes that ends before ``limit``: returns the position after it;
    # -1 for anything else (longer, or cut off), which _scan_record then reads.
    cdef uint64_t b, z
    if pos >= limit:
        return -1
    b = buf[pos]
    if b >= 0x80:
        if pos + 1 >= limit:
            return -1
        z = buf[pos + 1]
        if z >= 0x80:
            return -1
        b = (b & 0x7F) | (z << 7)
        pos += 1
    out[0] = <int64_t>((b >> 1) ^ (~(b & 1) + 1))
    return pos + 1


cdef inline int _rd_zigzag(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end,
                           int64_t* out, int max_shift) except -1:
    # One zigzag varint (max_shift 28) or varlong (63) at ppos[0]; 1-2 byte values take the
    # short path, anything longer or cut off goes through _varint_slow (which names the error).
    cdef Py_ssize_t pos = _short_varint(buf, ppos[0], end, out)
    if pos < 0:
        pos = _varint_slow(buf, ppos[0], end, out, max_shift)
    ppos[0] = pos
    return 0


cdef inline int rd_varint(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end,
                          int64_t* out) except -1:
    return _rd_zigzag(buf, ppos, end, out, 28)


cdef inline int rd_varlong(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end,
                           int64_t* out) except -1:
    return _rd_zigzag(buf, ppos, end, out, 63)


cdef inline bint _scan_plain_record(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                                    RecordSpan* r) noexcept nogil:
    # The fast path: True for a well-formed record without headers whose varints are all
    # short (lengths below 8 KiB, deltas below 4096), with *r filled in. False for anything
    # else, with no error: the caller then scans the record with _scan_record, which reads
    # every form, parses headers and raises the precise error. Whatever it accepts,
    # _scan_record accepts too, with the same results.
    cdef int64_t length, hcount
    cdef Py_ssize_t rec_end
    pos = _short_varint(buf, pos, end, &length)
    if pos < 0 or length < 6 or length > end - pos:
        return False
    rec_end = pos + length
    pos = _short_varint(buf, pos + 1, rec_end, &r.ts_delta)  # + 1: the unused attributes
    if pos < 0:
        return False
    pos = _short_varint(buf, pos, rec_end, &r.offset_delta)
    if pos < 0:
        return False
    pos = _short_varint(buf, pos, rec_end, &r.klen)
    if pos < 0:
        return False
    r.kpos = pos
    if r.klen >= 0:
        if r.klen > rec_end - pos:
            return False
        pos += r.klen
    elif r.klen != -1:
        return False
    pos = _short_varint(buf, pos, rec_end, &r.vlen)
    if pos < 0:
        return False
    r.vpos = pos
    if r.vlen >= 0:
        if r.vlen > rec_end - pos:
            return False
        pos += r.vlen
    elif r.vlen != -1:
        return False
    pos = _short_varint(buf, pos, rec_end, &hcount)
    if pos != rec_end or hcount != 0:
        return False
    r.hcount = 0
    r.end = rec_end
    return True


cdef list _scan_record(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                       RecordSpan* r, int64_t base_offset, int64_t min_offset):
    # The general path: any varint form, headers (returned as a list; None when the record
    # has none), and a _Corrupt error naming the first problem. A record before
    # ``min_offset`` is skipped unread after its offset delta (r.end is then all that is set).
    cdef int64_t length, offset
    cdef Py_ssize_t rec_end
    cdef list headers = None
    rd_varint(buf, &pos, end, &length)
    rec_end = pos + length
    if length < 6 or rec_end > end:
        raise _Corrupt(f"record length {length} does not fit the batch")
    r.end = rec_end
    pos += 1  # record attributes: unused
    rd_varlong(buf, &pos, rec_end, &r.ts_delta)
    rd_varint(buf, &pos, rec_end, &r.offset_delta)
    offset = base_offset + r.offset_delta
    if offset < min_offset:
        return None
    rd_varint(buf, &pos, rec_end, &r.klen)
    r.kpos = pos
    if r.klen >= 0:
        if r.klen > rec_end - pos:
            raise _Corrupt("key overruns the record")
        pos += r.klen
    elif r.klen != -1:
        raise _Corrupt(f"negative key length {r.klen}")
    rd_varint(buf, &pos, rec_end, &r.vlen)
    r.vpos = pos
    if r.vlen >= 0:
        if r.vlen > rec_end - pos:
            raise _Corrupt("value overruns the record")
        pos += r.vlen
    elif r.vlen != -1:
        raise _Corrupt(f"negative value length {r.vlen}")
    rd_varint(buf, &pos, rec_end, &r.hcount)
    if r.hcount:
        headers = _parse_headers(buf, &pos, rec_end, r.hcount)
    if pos != rec_end:
        raise _Corrupt(
            f"record at offset {offset} declares {length} bytes but holds "
            f"{length + pos - rec_end}"
        )
    return headers


cdef int _parse_v2_records(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                           int32_t count, list out, object topic, int partition,
                           int64_t base_offset, int64_t min_offset, int64_t base_ts,
                           int64_t max_ts, bint log_append, object leader_epoch) except -1:
    # Per record: the record is scanned and every bound checked first (in C, on the fast
    # path), then the record object is made and its key, value and (rarely) headers are
    # stored into it as new references, with no Python-level call and no reference counting
    # beyond what each field needs.
    cdef int32_t i
    cdef int64_t offset
    cdef RecordSpan span
    cdef PyObject* rec
    cdef list headers
    cdef int ts_type = 1 if log_append else 0
    cdef PyObject* topic_p = <PyObject*>topic
    cdef PyObject* epoch_p = <PyObject*>leader_epoch
    span.kpos = span.vpos = 0  # (always set before use; this keeps the C compiler sure of it)
    span.klen = span.vlen = -1
    for i in range(count):
        headers = None
        if not _scan_plain_record(buf, pos, end, &span):
            headers = _scan_record(buf, pos, end, &span, base_offset, min_offset)
        pos = span.end
        offset = base_offset + span.offset_delta
        if offset < min_offset:
            continue
        rec = _alloc_record()
        # Every object field is set before anything can fail (bytes() may raise MemoryError;
        # the record then holds NULL there, which the dealloc skips).
        (<ConsumerRecord>rec).key = NULL
        (<ConsumerRecord>rec).value = NULL
        _incref(topic_p)
        (<ConsumerRecord>rec).topic = topic_p
        _incref(epoch_p)
        (<ConsumerRecord>rec).leader_epoch = epoch_p
        if headers is None:
            (<ConsumerRecord>rec)._headers = NULL
        else:
            _incref(<PyObject*>headers)
            (<ConsumerRecord>rec)._headers = <PyObject*>headers
        (<ConsumerRecord>rec).partition = partition
        (<ConsumerRecord>rec).offset = offset
        (<ConsumerRecord>rec).timestamp = max_ts if log_append else base_ts + span.ts_delta
        (<ConsumerRecord>rec).timestamp_type = ts_type
        _append_new(out, rec)  # out holds the record now (or it is freed on error)
        if span.klen >= 0:
            (<ConsumerRecord>rec).serialized_key_size = <int>span.klen
            (<ConsumerRecord>rec).key = _new_bytes(<const char*>buf + span.kpos, span.klen)
        else:
            (<ConsumerRecord>rec).serialized_key_size = -1
            _incref(_Py_None)
            (<ConsumerRecord>rec).key = _Py_None
        if span.vlen >= 0:
            (<ConsumerRecord>rec).serialized_value_size = <int>span.vlen
            (<ConsumerRecord>rec).value = _new_bytes(<const char*>buf + span.vpos, span.vlen)
        else:
            (<ConsumerRecord>rec).serialized_value_size = -1
            _incref(_Py_None)
            (<ConsumerRecord>rec).value = _Py_None
    if pos != end:
        raise _Corrupt(f"{end - pos} bytes left after the batch's {count} records")
    return 0


cdef inline object _corrupt(str msg, object topic, int partition, int64_t offset):
    return CorruptRecordError(msg, topic=topic, partition=partition, offset=offset)


cdef int64_t _decode_v2(const unsigned char* buf, object mv, Py_ssize_t pos, Py_ssize_t size,
                        int64_t base_offset, list out, object topic, int partition,
                        int64_t fetch_offset, bint check_crcs, object txns) except? -1:
    cdef const unsigned char* h = buf + pos + LOG_OVERHEAD
    cdef int32_t leader_epoch, last_delta, count
    cdef uint32_t crc
    cdef int16_t attrs
    cdef int64_t base_ts, max_ts, producer_id, next_offset
    cdef Py_ssize_t end = pos + size
    cdef list tmp
    if size - LOG_OVERHEAD < V2_MIN_BATCH_LENGTH:
        raise _corrupt(f"v2 batch length {size - 12} is below the minimum", topic, partition,
                       base_offset)
    leader_epoch = rd_i32(h)
    crc = rd_u32(h + 5)
    attrs = rd_i16(h + 9)
    last_delta = rd_i32(h + 11)
    base_ts = rd_i64(h + 15)
    max_ts = rd_i64(h + 23)
    producer_id = rd_i64(h + 31)
    count = rd_i32(h + 45)
    if check_crcs:
        actual = _crc32c(mv[pos + 21:end])
        if actual != crc:
            raise _corrupt(
                f"CRC32C mismatch: batch says {crc:#010x}, bytes give {actual:#010x}",
                topic, partition, base_offset)
    if count < 0:
        raise _corrupt(f"negative record count {count}", topic, partition, base_offset)
    next_offset = base_offset + last_delta + 1
    if attrs & ATTR_CONTROL:
        if txns is not None:
            first_key = None
            first_value = None
            if producer_id != -1 and count:
                tmp = []
                _parse_batch_payload(buf, mv, pos, end, attrs, count, tmp, "", 0, 0, INT64_MIN,
                                     0, 0, None, topic, partition, base_offset)
                first_key = <object>(<ConsumerRecord>tmp[0]).key
                first_value = <object>(<ConsumerRecord>tmp[0]).value
            txns.skip_batch(producer_id, next_offset - 1, bool(attrs & ATTR_TRANSACTIONAL), True,
                            first_key, first_value)
        # Control records never reach the user; they only advance the position.
        return next_offset
    if txns is not None:
        if txns.skip_batch(producer_id, next_offset - 1, bool(attrs & ATTR_TRANSACTIONAL), False,
                           None, None):
            return next_offset
    if next_offset <= fetch_offset or count == 0:
        return next_offset
    _parse_batch_payload(buf, mv, pos, end, attrs, count, out, topic, partition, base_offset,
                         fetch_offset, base_ts, max_ts,
                         None if leader_epoch < 0 else leader_epoch,
                         topic, partition, base_offset)
    return next_offset


cdef int _parse_batch_payload(const unsigned char* buf, object mv, Py_ssize_t pos,
                              Py_ssize_t end, int16_t attrs, int32_t count, list out,
                              object rec_topic, int rec_partition, int64_t rec_base,
                              int64_t min_offset, int64_t base_ts, int64_t max_ts,
                              object leader_epoch, object topic, int partition,
                              int64_t base_offset) except -1:
    # The records of the v2 batch at ``pos`` (decompressed first when it has a codec), parsed
    # into ``out``; errors name topic, partition and the batch's base offset.
    cdef bytes payload
    cdef const unsigned char* pbuf = buf
    cdef Py_ssize_t ppos = pos + V2_HEADER_SIZE
    cdef Py_ssize_t pend = end
    if attrs & ATTR_CODEC_MASK:
        payload = decompress_payload(attrs & ATTR_CODEC_MASK, mv[pos + V2_HEADER_SIZE:end], 2,
                                     topic, partition, base_offset)
        pbuf = <const unsigned char*>PyBytes_AS_STRING(payload)
        ppos = 0
        pend = PyBytes_GET_SIZE(payload)
    try:
        _parse_v2_records(pbuf, ppos, pend, count, out, rec_topic, rec_partition, rec_base,
                          min_offset, base_ts, max_ts, (attrs & ATTR_TIMESTAMP_TYPE) != 0,
                          leader_epoch)
    except _Corrupt as exc:
        raise _corrupt(str(exc), topic, partition, base_offset) from None
    return 0


# ----------------------------------------------------------------------------- legacy v0/v1

cdef struct LegacyMsg:
    int64_t offset
    uint32_t crc
    int magic
    int attrs
    int64_t timestamp
    Py_ssize_t crc_start
    Py_ssize_t key_pos
    int32_t klen
    Py_ssize_t value_pos
    int32_t vlen
    Py_ssize_t end


cdef int _parse_legacy(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                       LegacyMsg* m) except -1:
    cdef int32_t size
    cdef Py_ssize_t p
    if end - pos < LOG_OVERHEAD:
        raise _Corrupt("message data is truncated")
    m.offset = rd_i64(buf + pos)
    size = rd_i32(buf + pos + 8)
    if size < 0 or size > end - pos - LOG_OVERHEAD:
        raise _Corrupt("message overruns its container")
    m.end = pos + LOG_OVERHEAD + size
    p = pos + LOG_OVERHEAD
    if size < 6:
        raise _Corrupt("message data is truncated")
    m.crc = rd_u32(buf + p)
    m.magic = <signed char>buf[p + 4]
    m.attrs = <signed char>buf[p + 5]
    if m.magic != 0 and m.magic != 1:
        raise _Corrupt(f"unknown magic byte {m.magic}")
    if size < (14 if m.magic == 0 else 22):
        raise _Corrupt(f"message size {size} is below the minimum for magic {m.magic}")
    m.crc_start = p + 4
    p += 6
    m.timestamp = -1
    if m.magic == 1:
        m.timestamp = rd_i64(buf + p)
        p += 8
    m.klen = rd_i32(buf + p)
    p += 4
    m.key_pos = p
    if m.klen >= 0:
        if m.klen > m.end - p:
            raise _Corrupt("key overruns the message")
        p += m.klen
    elif m.klen != -1:
        raise _Corrupt(f"negative key length {m.klen}")
    if m.end - p < 4:
        raise _Corrupt("message is truncated before its value")
    m.vlen = rd_i32(buf + p)
    p += 4
    m.value_pos = p
    if m.vlen >= 0:
        if m.vlen > m.end - p:
            raise _Corrupt("value overruns the message")
        p += m.vlen
    elif m.vlen != -1:
        raise _Corrupt(f"negative value length {m.vlen}")
    if p != m.end:
        raise _Corrupt(f"{m.end - p} unexpected bytes after the message value")
    return 0


cdef ConsumerRecord _legacy_record(const unsigned char* buf, LegacyMsg* m, object topic,
                                   int partition, int64_t offset, int64_t ts, int ts_type):
    cdef ConsumerRecord rec = ConsumerRecord.__new__(ConsumerRecord)
    _store(&rec.topic, topic)
    rec.partition = partition
    rec.offset = offset
    rec.timestamp = ts
    rec.timestamp_type = ts_type
    _store(&rec.key, None if m.klen < 0 else PyBytes_FromStringAndSize(
        <const char*>buf + m.key_pos, m.klen))
    _store(&rec.value, None if m.vlen < 0 else PyBytes_FromStringAndSize(
        <const char*>buf + m.value_pos, m.vlen))
    _store(&rec.leader_epoch, None)
    rec.serialized_key_size = m.klen if m.klen >= 0 else -1
    rec.serialized_value_size = m.vlen if m.vlen >= 0 else -1
    return rec


cdef int64_t _decode_legacy(const unsigned char* buf, object mv, Py_ssize_t pos,
                            Py_ssize_t size, list out, object topic, int partition,
                            int64_t fetch_offset, bint check_crcs) except? -1:
    cdef LegacyMsg m, im
    cdef int codec, ts_type
    cdef bytes inner
    cdef const unsigned char* ibuf
    cdef Py_ssize_t ipos, iend
    cdef int64_t base, abs_offset
    cdef bint log_append
    cdef int64_t last_inner
    cdef Py_ssize_t nmsgs
    try:
        _parse_legacy(buf, pos, pos + size, &m)
    except _Corrupt as exc:
        raise _corrupt(str(exc), topic, partition, rd_i64(buf + pos)) from None
    if check_crcs:
        actual = zlib.crc32(mv[m.crc_start:m.end])
        if actual != m.crc:
            raise _corrupt(f"CRC32 mismatch: message says {m.crc:#010x}, bytes give {actual:#010x}",
                           topic, partition, m.offset)
    codec = m.attrs & ATTR_CODEC_MASK
    ts_type = -1 if m.magic == 0 else (m.attrs & ATTR_TIMESTAMP_TYPE) >> 3
    if codec == 0:
        if m.offset >= fetch_offset:
            out.append(_legacy_record(buf, &m, topic, partition, m.offset, m.timestamp, ts_type))
        return m.offset + 1
    if m.offset + 1 <= fetch_offset:
        return m.offset + 1
    if m.vlen < 0:
        raise _corrupt("compressed wrapper message has no value", topic, partition, m.offset)
    inner = decompress_payload(codec, mv[m.value_pos:m.value_pos + m.vlen], m.magic, topic,
                               partition, m.offset)
    ibuf = <const unsigned char*>PyBytes_AS_STRING(inner)
    iend = PyBytes_GET_SIZE(inner)
    ipos = 0
    # First pass: validate everything and find the last inner offset (magic 1 inner offsets
    # are relative to it); the second pass creates the records.
    last_inner = -1
    nmsgs = 0
    try:
        while ipos < iend:
            _parse_legacy(ibuf, ipos, iend, &im)
            last_inner = im.offset
            nmsgs += 1
            ipos = im.end
    except _Corrupt as exc:
        raise _corrupt("inner message set of a compressed message: " + str(exc), topic,
                       partition, m.offset) from None
    if nmsgs == 0:
        return m.offset + 1
    imv = memoryview(inner)
    base = m.offset - last_inner if m.magic > 0 else 0
    log_append = m.magic > 0 and ts_type == 1
    ipos = 0
    while ipos < iend:
        _parse_legacy(ibuf, ipos, iend, &im)
        ipos = im.end
        if check_crcs:
            actual = zlib.crc32(imv[im.crc_start:im.end])
            if actual != im.crc:
                raise _corrupt(
                    f"CRC32 mismatch in a compressed message: says {im.crc:#010x}, "
                    f"bytes give {actual:#010x}", topic, partition, base + im.offset)
        if im.attrs & ATTR_CODEC_MASK:
            raise _corrupt("compressed message nests compression", topic, partition, m.offset)
        abs_offset = base + im.offset
        if abs_offset < fetch_offset:
            continue
        if log_append:
            out.append(_legacy_record(ibuf, &im, topic, partition, abs_offset, m.timestamp, 1))
        elif im.magic == 0:
            out.append(_legacy_record(ibuf, &im, topic, partition, abs_offset, -1, -1))
        else:
            out.append(_legacy_record(ibuf, &im, topic, partition, abs_offset, im.timestamp,
                                      (im.attrs & ATTR_TIMESTAMP_TYPE) >> 3))
    return m.offset + 1


# ----------------------------------------------------------------------------- entry point

def decode_fetched_records(data, topic, int partition, int64_t fetch_offset, *,
                           bint check_crcs=True, bint read_committed=False,
                           aborted_transactions=None):
    """Decode a Fetch response partition's ``records`` into ConsumerRecords.

    See docs/internals.md (record/) for the contract. Raises ``CorruptRecordError`` (bad CRC,
    malformed bytes, decompression bomb), ``UnsupportedCodecError`` (unknown codec id) and
    ``RecordTooLargeError`` (the first batch is larger than the whole response).
    """
    cdef list out = []
    cdef Py_buffer view
    cdef const unsigned char* buf
    cdef Py_ssize_t n, pos = 0, size
    cdef int64_t base_offset, next_offset = fetch_offset, batch_next
    cdef int32_t length
    cdef int magic
    cdef bint partial = False
    if data is None:
        return DecodeResult(out, fetch_offset, False)
    txns = AbortedTransactions(aborted_transactions) if read_committed else None
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        buf = <const unsigned char*>view.buf
        n = view.len
        mv = memoryview(data)
        while pos < n:
            if n - pos < LOG_OVERHEAD:
                partial = True
                break
            base_offset = rd_i64(buf + pos)
            length = rd_i32(buf + pos + 8)
            if length < MIN_BATCH_LENGTH:
                raise _corrupt(f"batch length {length} is below the minimum", topic, partition,
                               base_offset)
            size = LOG_OVERHEAD + <Py_ssize_t>length
            if n - pos < size:
                partial = True
                if pos == 0:
                    raise RecordTooLargeError(topic, partition, fetch_offset, size)
                break
            magic = buf[pos + 16]
            if magic == 2:
                batch_next = _decode_v2(buf, mv, pos, size, base_offset, out, topic, partition,
                                        fetch_offset, check_crcs, txns)
            elif magic == 0 or magic == 1:
                batch_next = _decode_legacy(buf, mv, pos, size, out, topic, partition,
                                            fetch_offset, check_crcs)
            else:
                raise _corrupt(f"unknown magic byte {magic}", topic, partition,
                               base_offset)
            if batch_next > next_offset:
                next_offset = batch_next
            pos += size
    finally:
        PyBuffer_Release(&view)
    return DecodeResult(out, next_offset, partial)


def next_offset_after_batches(data):
    """The offset after the last complete v2 batch of ``data`` from batch headers alone; None
    when there is no complete batch or a legacy message (C twin of ``_common``'s, which the
    fetcher calls once per buffered partition to prefetch: thousands of small batches cost
    milliseconds in Python).
    """
    cdef Py_buffer view
    cdef const unsigned char* buf
    cdef Py_ssize_t n, pos = 0
    cdef int32_t length
    cdef int64_t result = -1
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        buf = <const unsigned char*>view.buf
        n = view.len
        while n - pos > 16:  # up to the magic byte
            if buf[pos + 16] != 2:
                return None
            if n - pos < V2_HEADER_SIZE:
                break
            length = rd_i32(buf + pos + 8)
            if length < V2_MIN_BATCH_LENGTH or n - pos - LOG_OVERHEAD < length:
                break
            result = rd_i64(buf + pos) + rd_i32(buf + pos + 23) + 1
            pos += LOG_OVERHEAD + length
    finally:
        PyBuffer_Release(&view)
    return None if result < 0 else result
