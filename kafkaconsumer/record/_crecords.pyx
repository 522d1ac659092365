# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython fast path of the record decoder (same interface and results as ``_pyrecords``).

Parses straight from the fetch buffer's bytes: one pass per batch, varints decoded in C, one
``bytes`` object per key and value, record objects created without calling ``__init__``.
Per batch (never per record) it goes back to Python for CRC32C (the ``crc32c`` package works
on whole batches at memory speed), decompression and the read_committed bookkeeping.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject
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


@cython.freelist(8192)
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

    # topic, key, value and leader_epoch are exposed through member descriptors installed at
    # import (see _install_members): CPython specialises attribute access on those, which
    # makes ``record.value`` several times cheaper than Cython's property accessors.
    cdef object topic
    cdef public int partition
    cdef public int64_t offset
    cdef public int64_t timestamp
    cdef public int timestamp_type
    cdef object key
    cdef object value
    cdef object _headers
    cdef object leader_epoch
    cdef public int serialized_key_size
    cdef public int serialized_value_size

    def __init__(self, topic, int partition, int64_t offset, int64_t timestamp,
                 int timestamp_type, key, value, headers, leader_epoch,
                 int serialized_key_size, int serialized_value_size):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self._headers = headers
        self.leader_epoch = leader_epoch
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    @property
    def headers(self):
        """List of ``(str, bytes | None)``; created on first access when the record has none."""
        if self._headers is None:
            self._headers = []
        return self._headers

    @headers.setter
    def headers(self, value):
        self._headers = value

    def as_tuple(self):
        """All attributes, in declaration order (comparisons, tests)."""
        # Through getattr: a deleted member attribute must raise AttributeError, and the
        # C fields behind the member descriptors may then be NULL.
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


cdef PyMemberDef _members[4]


cdef Py_ssize_t _field_offset(ConsumerRecord probe, object sentinel) except -1:
    # Cython cannot take the address of an object attribute; find the slot holding the
    # sentinel instead (the probe's other object fields are all None).
    cdef PyObject** words = <PyObject**>(<void*>probe)
    cdef Py_ssize_t i
    cdef Py_ssize_t n = (<PyTypeObject*>ConsumerRecord).tp_basicsize // sizeof(PyObject*)
    for i in range(n):
        if words[i] == <PyObject*>sentinel:
            return i * sizeof(PyObject*)
    raise RuntimeError("cannot locate a ConsumerRecord field")


cdef void _install_members() except *:
    cdef ConsumerRecord probe = ConsumerRecord.__new__(ConsumerRecord)
    cdef int i
    names = (b"topic", b"key", b"value", b"leader_epoch")
    docs = (b"Topic name (str).", b"Key: bytes, None, or the deserialized key.",
            b"Value: bytes, None, or the deserialized value.",
            b"Leader epoch of the batch, or None.")
    marks = [object() for _ in range(4)]
    probe.topic, probe.key, probe.value, probe.leader_epoch = marks
    for i in range(4):
        _members[i].name = <const char*>(<bytes>names[i])
        _members[i].type = T_OBJECT_EX
        _members[i].offset = _field_offset(probe, marks[i])
        _members[i].flags = 0
        _members[i].doc = <const char*>(<bytes>docs[i])
    cls = ConsumerRecord
    for i in range(4):
        (<dict>(<PyTypeObject*>cls).tp_dict)[names[i].decode()] = PyDescr_NewMember(
            cls, &_members[i])
    PyType_Modified(cls)


# The member names/docs must outlive the descriptors: they are module-level bytes constants.
_install_members()


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


cdef int _varint_slow(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end,
                      int64_t* out, int max_shift) except -1:
    cdef Py_ssize_t pos = ppos[0]
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
    ppos[0] = pos
    out[0] = <int64_t>((result >> 1) ^ (~(result & 1) + 1))
    return 0


cdef inline int rd_varint(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end,
                          int64_t* out) except -1:
    cdef Py_ssize_t pos = ppos[0]
    cdef uint64_t b, z
    if pos + 1 < end:
        b = buf[pos]
        if b < 0x80:
            out[0] = <int64_t>((b >> 1) ^ (~(b & 1) + 1))
            ppos[0] = pos + 1
            return 0
        z = buf[pos + 1]
        if z < 0x80:
            # Two bytes: lengths of 64..8191 bytes, the common case for values.
            z = (b & 0x7F) | (z << 7)
            out[0] = <int64_t>((z >> 1) ^ (~(z & 1) + 1))
            ppos[0] = pos + 2
            return 0
    return _varint_slow(buf, ppos, end, out, 28)


cdef inline int rd_varlong(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end,
                           int64_t* out) except -1:
    cdef Py_ssize_t pos = ppos[0]
    cdef uint64_t b, z
    if pos + 1 < end:
        b = buf[pos]
        if b < 0x80:
            out[0] = <int64_t>((b >> 1) ^ (~(b & 1) + 1))
            ppos[0] = pos + 1
            return 0
        z = buf[pos + 1]
        if z < 0x80:
            z = (b & 0x7F) | (z << 7)
            out[0] = <int64_t>((z >> 1) ^ (~(z & 1) + 1))
            ppos[0] = pos + 2
            return 0
    return _varint_slow(buf, ppos, end, out, 63)


# ----------------------------------------------------------------------------- v2 records

cdef int _parse_v2_records(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                           int32_t count, list out, object topic, int partition,
                           int64_t base_offset, int64_t min_offset, int64_t base_ts,
                           int64_t max_ts, bint log_append, object leader_epoch) except -1:
    cdef int32_t i, h
    cdef int64_t length, ts_delta, offset_delta, klen, vlen, hcount, hklen, hvlen, offset
    cdef Py_ssize_t rec_end
    cdef ConsumerRecord rec
    cdef object key, value, hkey, hval
    cdef list headers
    cdef int ts_type = 1 if log_append else 0
    for i in range(count):
        rd_varint(buf, &pos, end, &length)
        rec_end = pos + length
        if length < 6 or rec_end > end:
            raise _Corrupt(f"record length {length} does not fit the batch")
        pos += 1  # record attributes: unused
        rd_varlong(buf, &pos, rec_end, &ts_delta)
        rd_varint(buf, &pos, rec_end, &offset_delta)
        offset = base_offset + offset_delta
        if offset < min_offset:
            pos = rec_end
            continue
        rd_varint(buf, &pos, rec_end, &klen)
        if klen >= 0:
            if klen > rec_end - pos:
                raise _Corrupt("key overruns the record")
            key = PyBytes_FromStringAndSize(<const char*>buf + pos, klen)
            pos += klen
        elif klen == -1:
            key = None
        else:
            raise _Corrupt(f"negative key length {klen}")
        rd_varint(buf, &pos, rec_end, &vlen)
        if vlen >= 0:
            if vlen > rec_end - pos:
                raise _Corrupt("value overruns the record")
            value = PyBytes_FromStringAndSize(<const char*>buf + pos, vlen)
            pos += vlen
        elif vlen == -1:
            value = None
        else:
            raise _Corrupt(f"negative value length {vlen}")
        rd_varint(buf, &pos, rec_end, &hcount)
        rec = ConsumerRecord.__new__(ConsumerRecord)
        if hcount:
            if hcount < 0:
                raise _Corrupt(f"negative header count {hcount}")
            headers = []
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
            rec._headers = headers
        if pos != rec_end:
            raise _Corrupt(
                f"record at offset {offset} declares {length} bytes but holds "
                f"{length + pos - rec_end}"
            )
        rec.topic = topic
        rec.partition = partition
        rec.offset = offset
        rec.timestamp = max_ts if log_append else base_ts + ts_delta
        rec.timestamp_type = ts_type
        rec.key = key
        rec.value = value
        rec.leader_epoch = leader_epoch
        rec.serialized_key_size = <int>klen if klen >= 0 else -1
        rec.serialized_value_size = <int>vlen if vlen >= 0 else -1
        out.append(rec)
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
    cdef bytes payload
    cdef const unsigned char* pbuf
    cdef Py_ssize_t ppos, pend
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
                payload = None
                pbuf = buf
                ppos = pos + V2_HEADER_SIZE
                pend = end
                if attrs & ATTR_CODEC_MASK:
                    payload = decompress_payload(attrs & ATTR_CODEC_MASK,
                                                 mv[pos + V2_HEADER_SIZE:end], 2, topic,
                                                 partition, base_offset)
                    pbuf = <const unsigned char*>PyBytes_AS_STRING(payload)
                    ppos = 0
                    pend = PyBytes_GET_SIZE(payload)
                try:
                    _parse_v2_records(pbuf, ppos, pend, count, tmp, "", 0, 0, INT64_MIN, 0, 0,
                                      False, None)
                except _Corrupt as exc:
                    raise _corrupt(str(exc), topic, partition, base_offset) from None
                first_key = (<ConsumerRecord>tmp[0]).key
                first_value = (<ConsumerRecord>tmp[0]).value
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
    payload = None
    pbuf = buf
    ppos = pos + V2_HEADER_SIZE
    pend = end
    if attrs & ATTR_CODEC_MASK:
        payload = decompress_payload(attrs & ATTR_CODEC_MASK, mv[pos + V2_HEADER_SIZE:end], 2,
                                     topic, partition, base_offset)
        pbuf = <const unsigned char*>PyBytes_AS_STRING(payload)
        ppos = 0
        pend = PyBytes_GET_SIZE(payload)
    try:
        _parse_v2_records(pbuf, ppos, pend, count, out, topic, partition, base_offset,
                          fetch_offset, base_ts, max_ts, (attrs & ATTR_TIMESTAMP_TYPE) != 0,
                          None if leader_epoch < 0 else leader_epoch)
    except _Corrupt as exc:
        raise _corrupt(str(exc), topic, partition, base_offset) from None
    return next_offset


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
    rec.topic = topic
    rec.partition = partition
    rec.offset = offset
    rec.timestamp = ts
    rec.timestamp_type = ts_type
    rec.key = None if m.klen < 0 else PyBytes_FromStringAndSize(<const char*>buf + m.key_pos,
                                                                m.klen)
    rec.value = None if m.vlen < 0 else PyBytes_FromStringAndSize(
        <const char*>buf + m.value_pos, m.vlen)
    rec.leader_epoch = None
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
