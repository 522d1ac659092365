# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython fast path of the record decoder (same interface and results as ``_pyrecords``).

Parses straight from the fetch buffer's bytes: one pass per batch, varints decoded in C (a
fast path for records without headers whose varints are all 1-2 bytes), one ``bytes`` object
per key and value stored straight into the record, record objects taken from a free list
without calling ``__init__``.
CRC32C is computed in C (``_crc32c.h``: the SSE 4.2 instruction, or the table method); per
batch (never per record) it goes back to Python for decompression and the read_committed
bookkeeping. The
parsing itself (framing, batch header and checks, varints, records, headers, control batches,
legacy message sets) is shared with the Arrow decoder ``_carrow`` through ``_wire.pxd``.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.object cimport Py_TPFLAGS_HEAPTYPE, PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF, Py_XINCREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free

cimport cython

from kafkaconsumer.record._wire cimport (
    ATTR_TIMESTAMP_TYPE,
    LOG_OVERHEAD,
    V2_HEADER_SIZE,
    V2_MIN_BATCH_LENGTH,
    BatchHeader,
    HeaderSpan,
    LegacyRow,
    RecordSpan,
    check_record_end,
    kc_crc32c_init,
    legacy_rows,
    next_batch,
    rd_i32,
    rd_i64,
    read_header,
    scan_plain_record,
    scan_record,
    v2_batch,
)

import logging
import zlib


from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError
from kafkaconsumer.record._common import AbortedTransactions, DecodeResult, decompress_payload

kc_crc32c_init()

logger = logging.getLogger(__name__)


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


@cython.no_gc
cdef class ShareConsumerRecord(ConsumerRecord):
    """A record delivered to a share consumer: a ``ConsumerRecord`` plus ``delivery_count``
    (how many times the broker has delivered it, 1 on the first delivery; Java
    ``ConsumerRecord.deliveryCount()``).

    Thread-safety: a plain mutable value; not synchronised.
    """

    cdef public int delivery_count

    def __init__(self, record, int delivery_count):
        _store(&self.topic, record.topic)
        self.partition = record.partition
        self.offset = record.offset
        self.timestamp = record.timestamp
        self.timestamp_type = record.timestamp_type
        _store(&self.key, record.key)
        _store(&self.value, record.value)
        _store(&self._headers, record.headers)
        _store(&self.leader_epoch, record.leader_epoch)
        self.serialized_key_size = record.serialized_key_size
        self.serialized_value_size = record.serialized_value_size
        self.delivery_count = delivery_count

    def as_tuple(self):
        """All attributes, in declaration order."""
        return ConsumerRecord.as_tuple(self) + (self.delivery_count,)

    def __eq__(self, other):
        if not isinstance(other, ShareConsumerRecord):
            return NotImplemented
        return self.as_tuple() == other.as_tuple()

    __hash__ = None

    def __reduce__(self):
        return (ShareConsumerRecord, (ConsumerRecord(*ConsumerRecord.as_tuple(self)),
                                      self.delivery_count))

    def __repr__(self):
        return (
            f"ShareConsumerRecord(topic={getattr(self, 'topic')!r}, partition={self.partition}, "
            f"offset={self.offset}, delivery_count={self.delivery_count}, "
            f"key={getattr(self, 'key')!r}, value={getattr(self, 'value')!r})"
        )


# Share records release their fields as records do (the subclass adds no object field).
(<PyTypeObject*>ShareConsumerRecord).tp_dealloc = _record_dealloc


def share_records(list records, Py_ssize_t start, Py_ssize_t stop, int delivery_count):
    """``records[start:stop]`` (decoded ConsumerRecords) as ShareConsumerRecords with
    ``delivery_count``: the fields are copied in C, no Python call per record."""
    cdef Py_ssize_t n = len(records)
    cdef Py_ssize_t i
    cdef ConsumerRecord src
    cdef ShareConsumerRecord dst
    cdef list out = []
    if stop > n:
        stop = n
    for i in range(start, stop):
        src = records[i]
        dst = ShareConsumerRecord.__new__(ShareConsumerRecord)
        Py_XINCREF(src.topic)
        dst.topic = src.topic
        dst.partition = src.partition
        dst.offset = src.offset
        dst.timestamp = src.timestamp
        dst.timestamp_type = src.timestamp_type
        Py_XINCREF(src.key)
        dst.key = src.key
        Py_XINCREF(src.value)
        dst.value = src.value
        Py_XINCREF(src._headers)
        dst._headers = src._headers
        Py_XINCREF(src.leader_epoch)
        dst.leader_epoch = src.leader_epoch
        dst.serialized_key_size = src.serialized_key_size
        dst.serialized_value_size = src.serialized_value_size
        dst.delivery_count = delivery_count
        out.append(dst)
    return out


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


# ----------------------------------------------------------------------------- v2 records

cdef list _parse_headers(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t rec_end,
                         int64_t hcount):
    cdef Py_ssize_t pos = ppos[0]
    cdef int64_t i
    cdef HeaderSpan h
    cdef list headers = []
    cdef object hkey, hval
    for i in range(hcount):
        pos = read_header(buf, pos, rec_end, &h, _Corrupt)
        try:
            hkey = PyUnicode_DecodeUTF8(<const char*>buf + h.kpos, h.klen, NULL)
        except UnicodeDecodeError:
            raise _Corrupt("header key is not valid UTF-8") from None
        hval = None if h.vlen < 0 else PyBytes_FromStringAndSize(<const char*>buf + h.vpos,
                                                                  h.vlen)
        headers.append((hkey, hval))
    ppos[0] = pos
    return headers


cdef list _scan_record(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                       RecordSpan* r, int64_t base_offset, int64_t min_offset):
    # The general path: any varint form, headers (returned as a list; None when the record
    # has none), and a _Corrupt error naming the first problem.
    cdef list headers = None
    pos = scan_record(buf, pos, end, r, base_offset, min_offset, _Corrupt)
    if base_offset + r.offset_delta < min_offset:
        return None
    if r.hcount:
        headers = _parse_headers(buf, &pos, r.end, r.hcount)
    check_record_end(pos, r, base_offset + r.offset_delta, _Corrupt)
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
        if not scan_plain_record(buf, pos, end, &span):
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


cdef int64_t _decode_v2(const unsigned char* buf, object mv, Py_ssize_t pos, Py_ssize_t size,
                        list out, object topic, int partition, int64_t fetch_offset,
                        bint check_crcs, object txns) except? -1:
    cdef BatchHeader b
    cdef bint wanted
    cdef const unsigned char* pbuf
    cdef Py_ssize_t ppos, pend
    # payload (the decompressed records, if any) stays referenced while they are parsed.
    payload = v2_batch(buf, mv, pos, size, fetch_offset, check_crcs, txns, False,
                       decompress_payload, CorruptRecordError, _Corrupt, topic, partition, &b,
                       &wanted, &pbuf, &ppos, &pend)
    if wanted:
        try:
            _parse_v2_records(pbuf, ppos, pend, b.count, out, topic, partition, b.base_offset,
                              fetch_offset, b.base_ts, b.max_ts,
                              (b.attrs & ATTR_TIMESTAMP_TYPE) != 0,
                              None if b.leader_epoch < 0 else b.leader_epoch)
        except _Corrupt as exc:
            raise CorruptRecordError(str(exc), topic=topic, partition=partition,
                                     offset=b.base_offset) from None
    return b.base_offset + b.last_delta + 1


# ----------------------------------------------------------------------------- legacy v0/v1

cdef int64_t _decode_legacy(const unsigned char* buf, object mv, Py_ssize_t pos,
                            Py_ssize_t size, list out, object topic, int partition,
                            int64_t fetch_offset, bint check_crcs) except? -1:
    cdef LegacyRow* rows = NULL
    cdef LegacyRow* row
    cdef Py_ssize_t nrows = 0, i
    cdef ConsumerRecord rec
    cdef list keep = []
    try:
        next_offset = legacy_rows(buf, mv, pos, size, fetch_offset, check_crcs, zlib.crc32,
                                  decompress_payload, CorruptRecordError, _Corrupt, topic,
                                  partition, keep, &rows, &nrows)
        for i in range(nrows):
            row = &rows[i]
            rec = ConsumerRecord.__new__(ConsumerRecord)
            _store(&rec.topic, topic)
            rec.partition = partition
            rec.offset = row.offset
            rec.timestamp = row.timestamp
            rec.timestamp_type = row.ts_type
            _store(&rec.key, None if row.klen < 0 else PyBytes_FromStringAndSize(
                <const char*>row.base + row.key_pos, row.klen))
            _store(&rec.value, None if row.vlen < 0 else PyBytes_FromStringAndSize(
                <const char*>row.base + row.value_pos, row.vlen))
            _store(&rec.leader_epoch, None)
            rec.serialized_key_size = row.klen
            rec.serialized_value_size = row.vlen
            out.append(rec)
    finally:
        free(rows)
    return next_offset


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
    cdef int64_t next_offset = fetch_offset, batch_next
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
            size = next_batch(buf, pos, n, fetch_offset, CorruptRecordError,
                              RecordTooLargeError, topic, partition)
            if size < 0:
                partial = True
                break
            if buf[pos + 16] == 2:
                batch_next = _decode_v2(buf, mv, pos, size, out, topic, partition,
                                        fetch_offset, check_crcs, txns)
            else:
                batch_next = _decode_legacy(buf, mv, pos, size, out, topic, partition,
                                            fetch_offset, check_crcs)
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
