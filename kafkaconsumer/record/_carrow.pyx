# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython decoder of Kafka record batches straight into Arrow buffers (``kafkaconsumer.arrow``).

No Python object is made per record: keys, values and header fields are copied from the fetch
buffer (or the decompressed payload) into growable C buffers, offsets and timestamps into C
arrays, null keys and values into validity bitmaps. ``kafkaconsumer.arrow`` wraps the buffers,
zero copy, in ``pyarrow`` arrays. Per batch (never per record) it goes back to Python for the
CRC32C check, decompression and the read_committed bookkeeping, exactly as the object decoder
(``_crecords``) does. Legacy v0/v1 message sets, which only pre-0.11 brokers write, are decoded
per message by the object decoder and copied into the same buffers.

The result is ``(n, columns, next_offset, partial)``; ``columns`` is the tuple
``kafkaconsumer.arrow`` documents (``_COLUMNS``), the pure-Python twin builds the same one.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_FillInfo, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport INT32_MAX, INT64_MIN, int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

from crc32c import crc32c as _crc32c

from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError
from kafkaconsumer.record._common import AbortedTransactions, decompress_payload

cdef enum:
    LOG_OVERHEAD = 12  # baseOffset + batchLength
    V2_HEADER_SIZE = 61
    V2_MIN_BATCH_LENGTH = 49  # the v2 header after batchLength
    MIN_BATCH_LENGTH = 14  # the smallest legacy (v0) message
    V2_ATTRIBUTES_OFFSET = 21
    ATTR_CODEC_MASK = 0x07
    ATTR_TIMESTAMP_TYPE = 0x08
    ATTR_TRANSACTIONAL = 0x10
    ATTR_CONTROL = 0x20

# Arrow's binary and string arrays use int32 offsets.
cdef int64_t _MAX_COLUMN_BYTES = INT32_MAX


cdef class Grow:
    """A growable C buffer exported through the buffer protocol (an Arrow buffer's memory).

    Thread-safety: not thread-safe; filled by one decode call, read-only once exported.
    """

    cdef char* p
    cdef Py_ssize_t n
    cdef Py_ssize_t cap

    def __cinit__(self, Py_ssize_t cap=64):
        if cap < 64:
            cap = 64
        self.p = <char*>malloc(cap)
        if self.p == NULL:
            raise MemoryError()
        self.n = 0
        self.cap = cap

    def __dealloc__(self):
        free(self.p)

    def __len__(self):
        return self.n

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.p, self.n, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef int _reserve(Grow g, Py_ssize_t extra) except -1:
    cdef Py_ssize_t want = g.n + extra
    cdef Py_ssize_t cap = g.cap
    cdef char* p
    if want <= cap:
        return 0
    while cap < want:
        cap *= 2
    p = <char*>realloc(g.p, cap)
    if p == NULL:
        raise MemoryError()
    g.p = p
    g.cap = cap
    return 0


cdef inline int _put_i32(Grow g, int32_t v) except -1:
    if g.n + 4 > g.cap:
        _reserve(g, 4)
    (<int32_t*>(g.p + g.n))[0] = v
    g.n += 4
    return 0


cdef inline int _put_i64(Grow g, int64_t v) except -1:
    if g.n + 8 > g.cap:
        _reserve(g, 8)
    (<int64_t*>(g.p + g.n))[0] = v
    g.n += 8
    return 0


cdef inline int _put_bytes(Grow g, const unsigned char* src, Py_ssize_t size) except -1:
    if g.n + size > g.cap:
        _reserve(g, size)
    memcpy(g.p + g.n, src, size)
    g.n += size
    return 0


cdef inline int _put_bit(Grow g, Py_ssize_t i, bint valid) except -1:
    # Bitmaps grow one zeroed byte per eight rows; only set bits are written.
    if (i >> 3) >= g.n:
        if g.n + 1 > g.cap:
            _reserve(g, 1)
        g.p[g.n] = 0
        g.n += 1
    if valid:
        g.p[i >> 3] |= <char>(1 << (i & 7))
    return 0


cdef class _Columns:
    """The column buffers of one decode call.

    Thread-safety: not thread-safe; one instance serves one decode call.
    """

    cdef Py_ssize_t rows
    cdef bint headers
    cdef Grow key_valid, key_offsets, key_data
    cdef Grow value_valid, value_offsets, value_data
    cdef Grow offsets, timestamps, ts_types, epochs
    cdef Grow hdr_offsets, hk_offsets, hk_data, hv_valid, hv_offsets, hv_data
    cdef Py_ssize_t key_nulls, value_nulls, hdr_rows, hv_nulls

    def __cinit__(self, Py_ssize_t data_size, bint headers):
        # Uncompressed values never exceed the input: one allocation in the common case.
        self.rows = 0
        self.headers = headers
        self.key_valid = Grow(64)
        self.key_offsets = Grow(4096)
        self.key_data = Grow(4096)
        self.value_valid = Grow(64)
        self.value_offsets = Grow(4096)
        self.value_data = Grow(data_size + 64)
        self.offsets = Grow(8192)
        self.timestamps = Grow(8192)
        self.ts_types = Grow(4096)
        self.epochs = Grow(4096)
        _put_i32(self.key_offsets, 0)
        _put_i32(self.value_offsets, 0)
        self.key_nulls = self.value_nulls = self.hdr_rows = self.hv_nulls = 0
        if headers:
            self.hdr_offsets = Grow(4096)
            self.hk_offsets = Grow(256)
            self.hk_data = Grow(256)
            self.hv_valid = Grow(64)
            self.hv_offsets = Grow(256)
            self.hv_data = Grow(256)
            _put_i32(self.hdr_offsets, 0)
            _put_i32(self.hk_offsets, 0)
            _put_i32(self.hv_offsets, 0)

    def result(self):
        """The column tuple described in ``kafkaconsumer.arrow._COLUMNS``."""
        hdr = None
        if self.headers:
            hdr = (self.hdr_offsets, self.hdr_rows, self.hk_offsets, self.hk_data,
                   self.hv_valid if self.hv_nulls else None, self.hv_nulls, self.hv_offsets,
                   self.hv_data)
        return (self.key_valid if self.key_nulls else None, self.key_nulls, self.key_offsets,
                self.key_data, self.value_valid if self.value_nulls else None,
                self.value_nulls, self.value_offsets, self.value_data, self.offsets,
                self.timestamps, self.ts_types, self.epochs, hdr)


cdef int _put_binary(Grow valid, Grow offs, Grow data, Py_ssize_t row,
                     const unsigned char* src, Py_ssize_t size) except -1:
    """Append one binary value (``size`` -1: null) to a column; returns 1 for a null."""
    if size >= 0:
        if data.n + size > _MAX_COLUMN_BYTES:
            raise OverflowError("a binary column of one fetch exceeds 2 GiB")
        _put_bytes(data, src, size)
    _put_i32(offs, <int32_t>data.n)
    _put_bit(valid, row, size >= 0)
    return 1 if size < 0 else 0


cdef inline int _add_row(_Columns c, int64_t offset, int64_t timestamp, int32_t ts_type,
                         int32_t epoch, const unsigned char* key, Py_ssize_t klen,
                         const unsigned char* value, Py_ssize_t vlen) except -1:
    cdef Py_ssize_t row = c.rows
    c.key_nulls += _put_binary(c.key_valid, c.key_offsets, c.key_data, row, key, klen)
    c.value_nulls += _put_binary(c.value_valid, c.value_offsets, c.value_data, row, value, vlen)
    _put_i64(c.offsets, offset)
    _put_i64(c.timestamps, timestamp)
    _put_i32(c.ts_types, ts_type)
    _put_i32(c.epochs, epoch)
    c.rows = row + 1
    return 0


cdef int _add_header(_Columns c, const unsigned char* key, Py_ssize_t klen,
                     const unsigned char* value, Py_ssize_t vlen) except -1:
    if c.hk_data.n + klen > _MAX_COLUMN_BYTES:
        raise OverflowError("the header keys of one fetch exceed 2 GiB")
    _put_bytes(c.hk_data, key, klen)
    _put_i32(c.hk_offsets, <int32_t>c.hk_data.n)
    c.hv_nulls += _put_binary(c.hv_valid, c.hv_offsets, c.hv_data, c.hdr_rows, value, vlen)
    c.hdr_rows += 1
    return 0


class _Corrupt(Exception):
    """Internal: parsing failed; the caller adds topic, partition and offset."""


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
    # Returns the position after the zigzag varint, its value in out[0].
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
            out[0] = <int64_t>(result >> 1) ^ -(<int64_t>(result & 1))
            return pos
        shift += 7
        if shift > max_shift:
            raise _Corrupt("varint is longer than 5 bytes" if max_shift == 28
                           else "varlong is longer than 10 bytes")


cdef inline Py_ssize_t _varint(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                               int64_t* out, int max_shift) except -1:
    cdef unsigned char b
    if pos < end:
        b = buf[pos]
        if b < 0x80:
            out[0] = (b >> 1) ^ -(<int64_t>(b & 1))
            return pos + 1
    return _varint_slow(buf, pos, end, out, max_shift)


cdef Py_ssize_t _parse_records(_Columns c, const unsigned char* buf, Py_ssize_t pos,
                               Py_ssize_t end, int32_t count, int64_t base_offset,
                               int64_t min_offset, int64_t base_ts, int64_t max_ts,
                               bint log_append, int32_t epoch, object first) except -1:
    """Parse ``count`` v2 records of ``buf[pos:end]`` into ``c`` (those at or after
    ``min_offset``). With ``first`` (a list), only the first record's key and value are
    appended to it as bytes (control batches) and ``c`` is untouched."""
    cdef int64_t length, ts_delta, offset_delta, klen, vlen, hcount, hklen, hvlen, offset
    cdef Py_ssize_t rec_end, kpos, vpos, hkpos, hvpos
    cdef int32_t i, h
    cdef int32_t ts_type = 1 if log_append else 0
    cdef bint want_headers = c is not None and c.headers
    for i in range(count):
        pos = _varint(buf, pos, end, &length, 28)
        rec_end = pos + length
        if length < 6 or rec_end > end:
            raise _Corrupt(f"record length {length} does not fit the batch")
        pos += 1  # record attributes: unused
        pos = _varint(buf, pos, rec_end, &ts_delta, 63)
        pos = _varint(buf, pos, rec_end, &offset_delta, 28)
        offset = base_offset + offset_delta
        if offset < min_offset:
            pos = rec_end
            continue
        pos = _varint(buf, pos, rec_end, &klen, 28)
        kpos = pos
        if klen >= 0:
            pos += klen
            if pos > rec_end:
                raise _Corrupt("key overruns the record")
        elif klen != -1:
            raise _Corrupt(f"negative key length {klen}")
        pos = _varint(buf, pos, rec_end, &vlen, 28)
        vpos = pos
        if vlen >= 0:
            pos += vlen
            if pos > rec_end:
                raise _Corrupt("value overruns the record")
        elif vlen != -1:
            raise _Corrupt(f"negative value length {vlen}")
        if first is not None:
            first.append(None if klen < 0 else (<const char*>buf)[kpos:kpos + klen])
            first.append(None if vlen < 0 else (<const char*>buf)[vpos:vpos + vlen])
            return rec_end
        pos = _varint(buf, pos, rec_end, &hcount, 28)
        if hcount < 0:
            raise _Corrupt(f"negative header count {hcount}")
        for h in range(hcount):
            pos = _varint(buf, pos, rec_end, &hklen, 28)
            if hklen < 0:
                raise _Corrupt(f"negative header key length {hklen}")
            if pos + hklen > rec_end:
                raise _Corrupt("header key overruns the record")
            hkpos = pos
            pos += hklen
            pos = _varint(buf, pos, rec_end, &hvlen, 28)
            hvpos = pos
            if hvlen >= 0:
                pos += hvlen
                if pos > rec_end:
                    raise _Corrupt("header value overruns the record")
            elif hvlen != -1:
                raise _Corrupt(f"negative header value length {hvlen}")
            if want_headers:
                _add_header(c, buf + hkpos, hklen, buf + hvpos, hvlen)
        if pos != rec_end:
            raise _Corrupt(f"record at offset {offset} declares {length} bytes but holds "
                           f"{length + pos - rec_end}")
        _add_row(c, offset, max_ts if log_append else base_ts + ts_delta, ts_type, epoch,
                 buf + kpos, klen, buf + vpos, vlen)
        if want_headers:
            _put_i32(c.hdr_offsets, <int32_t>c.hdr_rows)
    if first is None and pos != end:
        raise _Corrupt(f"{end - pos} bytes left after the batch's {count} records")
    return pos


cdef _corrupt(msg, topic, int partition, int64_t offset):
    return CorruptRecordError(msg, topic=topic, partition=partition, offset=offset)


cdef int64_t _decode_v2(_Columns c, const unsigned char* buf, object mv, Py_ssize_t pos,
                        Py_ssize_t size, int64_t base_offset, object topic, int partition,
                        int64_t fetch_offset, bint check_crcs, object txns) except? -1:
    cdef Py_ssize_t end = pos + size
    cdef const unsigned char* h = buf + pos + LOG_OVERHEAD
    cdef int32_t leader_epoch, last_delta, count
    cdef uint32_t crc
    cdef int16_t attrs
    cdef int64_t base_ts, max_ts, producer_id, next_offset
    cdef int codec
    cdef const unsigned char* pbuf
    cdef Py_ssize_t ppos, pend
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
        actual = _crc32c(mv[pos + V2_ATTRIBUTES_OFFSET:end])
        if actual != crc:
            raise _corrupt(f"CRC32C mismatch: batch says {crc:#010x}, bytes give {actual:#010x}",
                           topic, partition, base_offset)
    if count < 0:
        raise _corrupt(f"negative record count {count}", topic, partition, base_offset)
    next_offset = base_offset + last_delta + 1
    codec = attrs & ATTR_CODEC_MASK
    if attrs & ATTR_CONTROL:
        if txns is not None:
            first = []
            if producer_id != -1 and count:
                payload = None
                if codec:
                    payload = decompress_payload(codec, mv[pos + V2_HEADER_SIZE:end], 2, topic,
                                                 partition, base_offset)
                    pbuf = <const unsigned char*>PyBytes_AS_STRING(payload)
                    ppos, pend = 0, PyBytes_GET_SIZE(payload)
                else:
                    pbuf, ppos, pend = buf, pos + V2_HEADER_SIZE, end
                try:
                    _parse_records(None, pbuf, ppos, pend, count, 0, INT64_MIN, 0, 0, False,
                                   -1, first)
                except _Corrupt as exc:
                    raise _corrupt(str(exc), topic, partition, base_offset) from None
            txns.skip_batch(producer_id, next_offset - 1, bool(attrs & ATTR_TRANSACTIONAL), True,
                            first[0] if first else None, first[1] if first else None)
        # Control records never reach the user; they only advance the position.
        return next_offset
    if txns is not None and txns.skip_batch(producer_id, next_offset - 1,
                                            bool(attrs & ATTR_TRANSACTIONAL), False, None, None):
        return next_offset
    if next_offset <= fetch_offset or count == 0:
        return next_offset
    payload = None
    if codec:
        payload = decompress_payload(codec, mv[pos + V2_HEADER_SIZE:end], 2, topic, partition,
                                     base_offset)
        pbuf = <const unsigned char*>PyBytes_AS_STRING(payload)
        ppos, pend = 0, PyBytes_GET_SIZE(payload)
    else:
        pbuf, ppos, pend = buf, pos + V2_HEADER_SIZE, end
    try:
        _parse_records(c, pbuf, ppos, pend, count, base_offset, fetch_offset, base_ts, max_ts,
                       bool(attrs & ATTR_TIMESTAMP_TYPE), leader_epoch if leader_epoch >= 0 else -1,
                       None)
    except _Corrupt as exc:
        raise _corrupt(str(exc), topic, partition, base_offset) from None
    return next_offset


cdef int64_t _decode_legacy(_Columns c, object mv, Py_ssize_t pos, Py_ssize_t size,
                            object topic, int partition, int64_t fetch_offset, bint check_crcs,
                            object legacy_decode) except? -1:
    # Legacy message sets come only from pre-0.11 brokers: the object decoder parses them
    # (one message, maybe a compressed wrapper) and the records are copied into the columns.
    cdef bytes k, v
    result = legacy_decode(mv[pos:pos + size], topic, partition, fetch_offset,
                           check_crcs=check_crcs)
    for rec in result.records:
        k = rec.key
        v = rec.value
        _add_row(c, rec.offset, rec.timestamp, rec.timestamp_type,
                 -1 if rec.leader_epoch is None else rec.leader_epoch,
                 <const unsigned char*>(PyBytes_AS_STRING(k) if k is not None else NULL),
                 PyBytes_GET_SIZE(k) if k is not None else -1,
                 <const unsigned char*>(PyBytes_AS_STRING(v) if v is not None else NULL),
                 PyBytes_GET_SIZE(v) if v is not None else -1)
        if c.headers:
            _put_i32(c.hdr_offsets, <int32_t>c.hdr_rows)
    return result.next_offset


def decode_columns(data, topic, int partition, int64_t fetch_offset, *, bint check_crcs=True,
                   bint read_committed=False, aborted_transactions=None,
                   bint include_headers=False, legacy_decode=None):
    """Decode a Fetch response partition's ``records`` into Arrow column buffers.

    Returns ``(rows, columns, next_offset, partial)`` with ``columns`` as
    ``kafkaconsumer.arrow._COLUMNS`` describes; the checks and errors are those of
    ``decode_fetched_records`` (docs/internals.md, record/). ``legacy_decode`` is the object
    decoder used for v0/v1 message sets.
    """
    cdef Py_buffer view
    cdef const unsigned char* buf
    cdef Py_ssize_t n, pos = 0, size
    cdef int64_t base_offset, next_offset = fetch_offset, batch_next
    cdef int32_t length
    cdef int magic
    cdef bint partial = False
    cdef _Columns c
    if data is None:
        c = _Columns(0, include_headers)
        return 0, c.result(), fetch_offset, False
    txns = AbortedTransactions(aborted_transactions) if read_committed else None
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        buf = <const unsigned char*>view.buf
        n = view.len
        c = _Columns(n, include_headers)
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
                batch_next = _decode_v2(c, buf, mv, pos, size, base_offset, topic, partition,
                                        fetch_offset, check_crcs, txns)
            elif magic == 0 or magic == 1:
                batch_next = _decode_legacy(c, mv, pos, size, topic, partition, fetch_offset,
                                            check_crcs, legacy_decode)
            else:
                raise _corrupt(f"unknown magic byte {magic}", topic, partition, base_offset)
            if batch_next > next_offset:
                next_offset = batch_next
            pos += size
    finally:
        PyBuffer_Release(&view)
    return c.rows, c.result(), next_offset, partial
