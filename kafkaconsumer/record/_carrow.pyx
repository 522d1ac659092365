# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython decoder of Kafka record batches straight into Arrow buffers (``record.arrow``).

No Python object is made per record: keys, values and header fields are copied from the fetch
buffer (or the decompressed payload) into growable C buffers, offsets and timestamps into C
arrays, null keys and values into validity bitmaps. ``record.arrow`` wraps the buffers,
zero copy, in ``pyarrow`` arrays. The CRC32C check (in C, ``_crc32c.h``) and the record loop
of a batch run without the GIL, so that several threads can decode different partitions at
once; per batch (never per record) it goes back to Python, with the GIL, for decompression (the
codec libraries release the GIL themselves while they work) and the read_committed bookkeeping,
exactly as the object decoder (``_crecords``) does, through the same shared parsing code
(``_wire.pxd``); legacy v0/v1 message sets are decoded here too, straight into the same
buffers.

The result is ``(n, columns, next_offset, partial)``; ``columns`` is a
``record._columns.ArrowColumns``, as the pure-Python twin in that module builds.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_FillInfo, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport INT32_MAX, int16_t, int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

from kafkaconsumer.record._wire cimport (
    ATTR_CODEC_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    LOG_OVERHEAD,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
    V2_MIN_BATCH_LENGTH,
    BatchHeader,
    NOGIL_MIN_BYTES,
    HeaderSpan,
    LegacyRow,
    RecordSpan,
    check_record_end,
    kc_crc32c,
    kc_crc32c_hw,
    kc_crc32c_hw_available,
    kc_crc32c_init,
    kc_crc32c_sw,
    legacy_rows,
    rd_i16,
    rd_i32,
    rd_i64,
    rd_u32,
    next_batch,
    read_header,
    scan_plain_record,
    scan_record,
    v2_batch,
)

import zlib

from kafkaconsumer.errors import CorruptRecordError, RecordTooLargeError
from kafkaconsumer.record._columns import ArrowColumns, HeaderColumns
from kafkaconsumer.record._common import AbortedTransactions, decompress_payload

kc_crc32c_init()

# Arrow's binary and string arrays use int32 offsets.
cdef int64_t _MAX_COLUMN_BYTES = INT32_MAX


# Large column blocks are kept when Arrow lets them go, and the next columns are built in
# them: a fresh block of tens of MB is mapped anew by the allocator and faults in page by
# page (on 1 KiB lz4 values, 40% of the Arrow path's time went to page faults, and a poll of
# 100,000 such rows needs 100 MB of values). At most _POOL_SLOTS blocks and _POOL_LIMIT bytes
# are held: kept blocks are resident memory, and a poll_arrow() batch bounded by
# arrow.poll.max.bytes (16 MiB) needs a value block of about that size, while the caller holds
# the last one, so two or three of them serve; only touched with the GIL held (Grow objects
# are made and freed under it).
cdef enum:
    _POOL_SLOTS = 4
cdef Py_ssize_t _POOL_MIN = 1 << 20
cdef Py_ssize_t _POOL_LIMIT = 64 << 20
cdef char* _pool_p[_POOL_SLOTS]
cdef Py_ssize_t _pool_cap[_POOL_SLOTS]
cdef int _pool_n = 0
cdef Py_ssize_t _pool_bytes = 0


# Bytes of column memory in use (allocated, not freed nor kept for reuse), and the most in use
# at once since reset_column_peak(): what the Arrow path holds beyond Python's allocator, for
# tests and benchmarks. Only changed with the GIL held, as the pool.
cdef Py_ssize_t _column_bytes = 0
cdef Py_ssize_t _column_peak = 0


cdef inline void _count(Py_ssize_t delta) noexcept:
    global _column_bytes, _column_peak
    _column_bytes += delta
    if _column_bytes > _column_peak:
        _column_peak = _column_bytes


def column_bytes():
    """``(now, peak)``: bytes of column memory in use (blocks kept for reuse are counted by
    :func:`pooled_bytes`), and the most in use at once since :func:`reset_column_peak`."""
    return _column_bytes, _column_peak


def reset_column_peak():
    """Start a new peak for :func:`column_bytes` from what is in use now."""
    global _column_peak
    _column_peak = _column_bytes


cdef char* _pool_take(Py_ssize_t want, Py_ssize_t* cap) noexcept:
    """The smallest kept block of at least ``want`` bytes (and not over 8x that), or NULL."""
    global _pool_n, _pool_bytes
    cdef int i, best = -1
    cdef char* p
    if want < _POOL_MIN:
        return NULL
    for i in range(_pool_n):
        if want <= _pool_cap[i] <= 8 * want and (best < 0 or _pool_cap[i] < _pool_cap[best]):
            best = i
    if best < 0:
        return NULL
    p = _pool_p[best]
    cap[0] = _pool_cap[best]
    _count(cap[0])
    _pool_remove(best)
    return p


cdef void _pool_remove(int i) noexcept:
    # Slot i out of the pool, the others keeping their order (oldest first).
    global _pool_n, _pool_bytes
    _pool_bytes -= _pool_cap[i]
    _pool_n -= 1
    while i < _pool_n:
        _pool_p[i] = _pool_p[i + 1]
        _pool_cap[i] = _pool_cap[i + 1]
        i += 1


cdef void _pool_give(char* p, Py_ssize_t cap) noexcept:
    """Keep ``p`` for reuse, or free it (small or too large); when there is no room, the
    oldest kept blocks go first: the newest are of the sizes the decoding in progress uses
    (value columns are sized by estimate, so sizes vary with the data)."""
    global _pool_n, _pool_bytes
    _count(-cap)
    if cap < _POOL_MIN or cap > _POOL_LIMIT:
        free(p)
        return
    while _pool_n > 0 and (_pool_n == _POOL_SLOTS or _pool_bytes + cap > _POOL_LIMIT):
        free(_pool_p[0])
        _pool_remove(0)
    _pool_p[_pool_n] = p
    _pool_cap[_pool_n] = cap
    _pool_n += 1
    _pool_bytes += cap


def pooled_bytes():
    """Bytes of freed column memory kept for reuse (see _POOL_LIMIT)."""
    return _pool_bytes


def release_pooled():
    """Free the column memory kept for reuse (after a large read, or to measure from a clean
    start); returns the bytes freed."""
    global _pool_n, _pool_bytes
    cdef Py_ssize_t freed = _pool_bytes
    while _pool_n > 0:
        _pool_n -= 1
        free(_pool_p[_pool_n])
    _pool_bytes = 0
    return freed


cdef class Grow:
    """A growable C buffer exported through the buffer protocol (an Arrow buffer's memory).

    Thread-safety: not thread-safe; filled by one decode call, read-only once exported.
    """

    cdef char* p
    cdef Py_ssize_t n
    cdef Py_ssize_t cap

    def __cinit__(self, Py_ssize_t cap=64):
        cdef Py_ssize_t got = 0
        if cap < 64:
            cap = 64
        self.p = _pool_take(cap, &got)
        if self.p != NULL:
            cap = got
        else:
            self.p = <char*>malloc(cap)
            if self.p == NULL:
                raise MemoryError()
            _count(cap)
        self.n = 0
        self.cap = cap

    def __dealloc__(self):
        if self.p != NULL:
            _pool_give(self.p, self.cap)

    def __len__(self):
        return self.n

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.p, self.n, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef int _resize(Grow g, Py_ssize_t cap) except -1:
    # realloc: the allocator moves a large block by remapping its pages (no copy, and
    # capacity never written never becomes resident).
    cdef char* p = <char*>realloc(g.p, cap)
    if p == NULL:
        raise MemoryError()
    _count(cap - g.cap)
    g.p = p
    g.cap = cap
    return 0


cdef int _grow(Grow g, Py_ssize_t want, Py_ssize_t cap) except -1:
    # A kept block of at least ``want`` bytes when there is one (its pages are already mapped:
    # a fresh block of tens of MB faults in page by page), else realloc to ``cap``.
    cdef Py_ssize_t got = 0
    cdef char* p = _pool_take(want, &got)
    if p != NULL:
        memcpy(p, g.p, g.n)
        _pool_give(g.p, g.cap)
        g.p = p
        g.cap = got
        return 0
    return _resize(g, cap)


cdef int _reserve(Grow g, Py_ssize_t extra) except -1:
    cdef Py_ssize_t want = g.n + extra
    cdef Py_ssize_t cap = g.cap
    if want <= cap:
        return 0
    while cap < want:
        cap *= 2
    return _grow(g, want, cap)


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
    # The batch being decoded: its size on the wire and the input bytes after it.
    cdef Py_ssize_t wire, remaining
    # A builder (see new_builder) also keeps each row's topic and partition.
    cdef bint shared
    cdef Grow topic_offsets, topic_data, partitions

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
        self.wire = self.remaining = 0
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

    @property
    def num_rows(self):
        """Rows decoded so far."""
        return self.rows

    @property
    def data_bytes(self):
        """Key and value bytes decoded so far."""
        return self.key_data.n + self.value_data.n

    def last_row(self):
        """``(offset, leader epoch)`` of the last row decoded (the epoch -1 when unknown), or
        None before the first: what a builder's caller needs of each partition it appended
        (where its position moves) without reading the finished columns back."""
        if self.rows == 0:
            return None
        return ((<int64_t*>self.offsets.p)[self.rows - 1],
                (<int32_t*>self.epochs.p)[self.rows - 1])

    def segments(self):
        """``(topic_offsets, topic_data, partitions)`` of a builder's rows."""
        if not self.shared:
            raise ValueError("only a builder (new_builder) keeps topics and partitions")
        return self.topic_offsets, self.topic_data, self.partitions

    def result(self):
        """The buffers as ``record._columns.ArrowColumns``."""
        hdr = None
        if self.headers:
            hdr = HeaderColumns(self.hdr_offsets, self.hdr_rows, self.hk_offsets, self.hk_data,
                                self.hv_valid if self.hv_nulls else None, self.hv_nulls,
                                self.hv_offsets, self.hv_data)
        return ArrowColumns(self.key_valid if self.key_nulls else None, self.key_nulls,
                self.key_offsets, self.key_data, self.value_valid if self.value_nulls else None,
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


cdef int _reserve_values(_Columns c, Py_ssize_t payload) except -1:
    """Room for a batch's values; for a compressed batch, also for the rest of the partition's
    data at this batch's ratio (capped at 64) and an eighth more. The column grows by that
    estimate, or by a quarter when that is more, not by doubling: doubling left up to half of
    it reserved and unused (on 1 KiB lz4 values the columns of a poll took 1.6-1.9x the memory
    of the record objects)."""
    cdef Py_ssize_t need = c.value_data.n + payload, rest
    if need <= c.value_data.cap:
        return 0
    if 0 < c.wire < payload:
        rest = <Py_ssize_t>((<double>payload / c.wire) * c.remaining) if \
            payload < 64 * c.wire else 64 * c.remaining
        need += rest + (payload + rest) // 8
        if need > _MAX_COLUMN_BYTES:
            need = c.value_data.n + payload
    return _grow_values(c, need)


cdef int _grow_values(_Columns c, Py_ssize_t need) except -1:
    # Room for ``need`` bytes of values in all, growing by a quarter at least (fewer moves; a
    # large block is moved by remapping its pages, not by copying them).
    cdef Py_ssize_t cap = c.value_data.cap
    if need <= cap:
        return 0
    return _grow(c.value_data, need, need if need > cap + cap // 4 else cap + cap // 4)


cdef inline int _reserve_bits(Grow g, Py_ssize_t rows) except -1:
    # Room for ``rows`` validity bits, the new bytes zeroed (only set bits are written).
    cdef Py_ssize_t want = (rows + 7) >> 3
    if want > g.n:
        _reserve(g, want - g.n)
        memset(g.p + g.n, 0, want - g.n)
        g.n = want
    return 0


cdef struct _Run:
    # One batch's record loop: where it reads and, through raw pointers into columns sized for
    # the whole batch beforehand, where it writes. Plain C, so the loop can run without the GIL.
    const unsigned char* buf
    Py_ssize_t pos
    Py_ssize_t end
    int64_t base_offset
    int64_t min_offset
    int64_t base_ts
    int64_t max_ts
    bint log_append
    int32_t ts_type
    int32_t epoch
    int32_t* koffs
    int32_t* voffs
    char* kdata
    char* vdata
    char* kvalid
    char* vvalid
    int64_t* offs
    int64_t* tss
    int32_t* tst
    int32_t* eps
    int32_t* hoffs  # NULL when headers are not kept
    Py_ssize_t kn
    Py_ssize_t vn
    Py_ssize_t knulls
    Py_ssize_t vnulls
    Py_ssize_t row


cdef inline void _write_row(_Run* s, RecordSpan* r, int64_t offset,
                            int32_t hdr_rows) noexcept nogil:
    cdef Py_ssize_t row = s.row
    if r.klen >= 0:
        memcpy(s.kdata + s.kn, s.buf + r.kpos, r.klen)
        s.kn += r.klen
        s.kvalid[row >> 3] |= <char>(1 << (row & 7))
    else:
        s.knulls += 1
    s.koffs[row + 1] = <int32_t>s.kn
    if r.vlen >= 0:
        memcpy(s.vdata + s.vn, s.buf + r.vpos, r.vlen)
        s.vn += r.vlen
        s.vvalid[row >> 3] |= <char>(1 << (row & 7))
    else:
        s.vnulls += 1
    s.voffs[row + 1] = <int32_t>s.vn
    s.offs[row] = offset
    s.tss[row] = s.max_ts if s.log_append else s.base_ts + r.ts_delta
    s.tst[row] = s.ts_type
    s.eps[row] = s.epoch
    s.row = row + 1
    if s.hoffs != NULL:
        s.hoffs[row + 1] = hdr_rows


cdef extern from *:
    """
    /* The C library's memcpy, called: inlined into _plain_run the compiler chose `rep movsq`,
     * which costs more than the call on the short keys and values of records. */
    #if defined(__GNUC__) || defined(__clang__)
    __attribute__((noinline))
    #endif
    static void kc_copy(char *dst, const unsigned char *src, size_t n) { memcpy(dst, src, n); }
    """
    void kc_copy(char* dst, const unsigned char* src, size_t n) nogil


cdef Py_ssize_t _plain_run(_Run* s, Py_ssize_t i, Py_ssize_t count,
                           int32_t hdr_rows) noexcept nogil:
    # Records i.. while they take the fast path (no headers, short varints); the index of the
    # first one that does not (the caller reads it with the GIL), or count. The cursors are
    # kept in locals (the compiler cannot keep them in registers through *s: the column
    # writes might alias it) and stored back at the end.
    cdef RecordSpan r
    cdef int64_t offset
    cdef const unsigned char* buf = s.buf
    cdef Py_ssize_t pos = s.pos, end = s.end, row = s.row, kn = s.kn, vn = s.vn
    cdef Py_ssize_t knulls = 0, vnulls = 0
    cdef int64_t base_offset = s.base_offset, min_offset = s.min_offset
    cdef int32_t* koffs = s.koffs
    cdef int32_t* voffs = s.voffs
    cdef char* kdata = s.kdata
    cdef char* vdata = s.vdata
    cdef char* kvalid = s.kvalid
    cdef char* vvalid = s.vvalid
    cdef int64_t* offs = s.offs
    cdef int64_t* tss = s.tss
    cdef int32_t* tst = s.tst
    cdef int32_t* eps = s.eps
    cdef int32_t* hoffs = s.hoffs
    cdef bint log_append = s.log_append
    cdef int64_t base_ts = s.base_ts, max_ts = s.max_ts
    cdef int32_t ts_type = s.ts_type, epoch = s.epoch
    while i < count:
        if not scan_plain_record(buf, pos, end, &r):
            break
        pos = r.end
        i += 1
        offset = base_offset + r.offset_delta
        if offset < min_offset:
            continue
        if r.klen >= 0:
            kc_copy(kdata + kn, buf + r.kpos, <size_t>r.klen)
            kn += r.klen
            kvalid[row >> 3] |= <char>(1 << (row & 7))
        else:
            knulls += 1
        koffs[row + 1] = <int32_t>kn
        if r.vlen >= 0:
            kc_copy(vdata + vn, buf + r.vpos, <size_t>r.vlen)
            vn += r.vlen
            vvalid[row >> 3] |= <char>(1 << (row & 7))
        else:
            vnulls += 1
        voffs[row + 1] = <int32_t>vn
        offs[row] = offset
        tss[row] = max_ts if log_append else base_ts + r.ts_delta
        tst[row] = ts_type
        eps[row] = epoch
        if hoffs != NULL:
            hoffs[row + 1] = hdr_rows
        row += 1
    s.pos, s.row, s.kn, s.vn = pos, row, kn, vn
    s.knulls += knulls
    s.vnulls += vnulls
    return i


cdef int _parse_records(_Columns c, const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                        BatchHeader* b, int64_t min_offset, bint release_gil) except -1:
    # The batch's records (those at or after ``min_offset``) into ``c``. Every column is sized
    # for the whole batch first (its record count, and its payload size for keys and values),
    # so that the loop writes through raw pointers with no capacity check per record. Runs of
    # plain records are parsed and written without the GIL (when ``release_gil`` and the
    # batch is large enough); a record with headers or long varints, and every error, is
    # handled with it.
    cdef Py_ssize_t i = 0
    cdef int64_t h, offset
    cdef Py_ssize_t hpos
    cdef RecordSpan r
    cdef HeaderSpan hs
    cdef _Run s
    cdef bint want_headers = c.headers
    cdef Py_ssize_t count = b.count, row = c.rows, payload = end - pos
    _reserve(c.key_offsets, count * 4)
    _reserve(c.value_offsets, count * 4)
    _reserve(c.key_data, payload)
    _reserve_values(c, payload)
    _reserve(c.offsets, count * 8)
    _reserve(c.timestamps, count * 8)
    _reserve(c.ts_types, count * 4)
    _reserve(c.epochs, count * 4)
    _reserve_bits(c.key_valid, row + count)
    _reserve_bits(c.value_valid, row + count)
    if want_headers:
        _reserve(c.hdr_offsets, count * 4)
    s.buf, s.pos, s.end = buf, pos, end
    s.base_offset, s.min_offset = b.base_offset, min_offset
    s.base_ts, s.max_ts = b.base_ts, b.max_ts
    s.log_append = (b.attrs & ATTR_TIMESTAMP_TYPE) != 0
    s.ts_type = 1 if s.log_append else 0
    s.epoch = b.leader_epoch if b.leader_epoch >= 0 else -1
    s.koffs = <int32_t*>c.key_offsets.p
    s.voffs = <int32_t*>c.value_offsets.p
    s.kdata, s.vdata = c.key_data.p, c.value_data.p
    s.kvalid, s.vvalid = c.key_valid.p, c.value_valid.p
    s.offs = <int64_t*>c.offsets.p
    s.tss = <int64_t*>c.timestamps.p
    s.tst = <int32_t*>c.ts_types.p
    s.eps = <int32_t*>c.epochs.p
    # (_add_header grows other columns only, so this pointer stays valid in the loop.)
    s.hoffs = <int32_t*>c.hdr_offsets.p if want_headers else NULL
    s.kn, s.vn = c.key_data.n, c.value_data.n
    s.knulls = s.vnulls = 0
    s.row = row
    release_gil = release_gil and payload >= NOGIL_MIN_BYTES
    r.kpos = r.vpos = 0  # (always set before use; this keeps the C compiler sure of it)
    r.klen = r.vlen = -1
    try:
        while i < count:
            if release_gil:
                with nogil:
                    i = _plain_run(&s, i, count, <int32_t>c.hdr_rows)
            else:
                i = _plain_run(&s, i, count, <int32_t>c.hdr_rows)
            if i >= count:
                break
            # A record off the fast path: every form, the precise errors, its headers.
            hpos = scan_record(buf, s.pos, end, &r, b.base_offset, min_offset, _Corrupt)
            s.pos = r.end
            i += 1
            offset = b.base_offset + r.offset_delta
            if offset < min_offset:
                continue
            for h in range(r.hcount):
                hpos = read_header(buf, hpos, r.end, &hs, _Corrupt)
                if want_headers:
                    _add_header(c, buf + hs.kpos, hs.klen, buf + hs.vpos, hs.vlen)
            check_record_end(hpos, &r, offset, _Corrupt)
            _write_row(&s, &r, offset, <int32_t>c.hdr_rows)
    finally:
        # What was written stays consistent on error: the rows so far are complete.
        row = s.row
        c.key_data.n, c.value_data.n = s.kn, s.vn
        c.key_nulls += s.knulls
        c.value_nulls += s.vnulls
        c.key_offsets.n = c.value_offsets.n = (row + 1) * 4
        c.ts_types.n = c.epochs.n = row * 4
        c.offsets.n = c.timestamps.n = row * 8
        if want_headers:
            c.hdr_offsets.n = (row + 1) * 4
        c.rows = row
    if s.kn > _MAX_COLUMN_BYTES or s.vn > _MAX_COLUMN_BYTES:
        raise OverflowError("a binary column of one fetch exceeds 2 GiB")
    if s.pos != end:
        raise _Corrupt(f"{end - s.pos} bytes left after the batch's {count} records")
    return 0


cdef int64_t _decode_v2(_Columns c, const unsigned char* buf, object mv, Py_ssize_t pos,
                        Py_ssize_t size, object topic, int partition, int64_t fetch_offset,
                        bint check_crcs, object txns, object decompress) except? -1:
    cdef BatchHeader b
    cdef bint wanted
    cdef const unsigned char* pbuf
    cdef Py_ssize_t ppos, pend
    # payload (the decompressed records, if any) stays referenced while they are parsed.
    payload = v2_batch(buf, mv, pos, size, fetch_offset, check_crcs, txns, True,
                       decompress, CorruptRecordError, _Corrupt, topic, partition, &b,
                       &wanted, &pbuf, &ppos, &pend)
    if wanted:
        try:
            _parse_records(c, pbuf, ppos, pend, &b, fetch_offset, True)
        except _Corrupt as exc:
            raise CorruptRecordError(str(exc), topic=topic, partition=partition,
                                     offset=b.base_offset) from None
    return b.base_offset + b.last_delta + 1


cdef int64_t _decode_legacy(_Columns c, const unsigned char* buf, object mv, Py_ssize_t pos,
                            Py_ssize_t size, object topic, int partition,
                            int64_t fetch_offset, bint check_crcs) except? -1:
    # Legacy message sets (pre-0.11 brokers): one message, maybe a compressed wrapper.
    cdef LegacyRow* rows = NULL
    cdef LegacyRow* row
    cdef Py_ssize_t nrows = 0, i
    cdef list keep = []
    try:
        next_offset = legacy_rows(buf, mv, pos, size, fetch_offset, check_crcs, zlib.crc32,
                                  decompress_payload, CorruptRecordError, _Corrupt, topic,
                                  partition, keep, &rows, &nrows)
        for i in range(nrows):
            row = &rows[i]
            _add_row(c, row.offset, row.timestamp, row.ts_type, -1, row.base + row.key_pos,
                     row.klen, row.base + row.value_pos, row.vlen)
            if c.headers:
                _put_i32(c.hdr_offsets, <int32_t>c.hdr_rows)
    finally:
        free(rows)
    return next_offset


def new_builder(Py_ssize_t data_size, bint include_headers):
    """Columns that several ``decode_columns(..., into=builder)`` calls append to: the
    partitions handed out by one poll become one set of buffers (one record batch, sliced per
    partition, no concatenation). ``data_size`` is a first guess of the value bytes."""
    cdef _Columns c = _Columns(data_size, include_headers)
    c.shared = True
    c.topic_offsets = Grow(4096)
    c.topic_data = Grow(4096)
    c.partitions = Grow(4096)
    _put_i32(c.topic_offsets, 0)
    return c


cdef void _fill_repeated(char* out, const char* src, Py_ssize_t size, Py_ssize_t rows) noexcept:
    # ``rows`` copies of ``src`` back to back: one copy, then what is written so far copied
    # after itself, doubling (a memcpy call per row cost more than the bytes it moved).
    cdef Py_ssize_t done, total = size * rows, step
    if total <= 0:
        return
    memcpy(out, src, size)
    done = size
    while done < total:
        step = done if done <= total - done else total - done
        memcpy(out + done, out, step)
        done += step


cdef int _fill_segment(_Columns c, bytes topic, int32_t partition, Py_ssize_t first) except -1:
    # The topic and partition of rows [first, rows) of a builder.
    cdef Py_ssize_t size = PyBytes_GET_SIZE(topic), rows = c.rows - first, i
    cdef const char* src = PyBytes_AS_STRING(topic)
    cdef int32_t* offs
    cdef int32_t* parts
    cdef char* out
    if rows <= 0:
        return 0
    if c.topic_data.n + size * rows > _MAX_COLUMN_BYTES:
        raise OverflowError("the topic column of one poll exceeds 2 GiB")
    _reserve(c.topic_offsets, 4 * rows)
    _reserve(c.topic_data, size * rows)
    _reserve(c.partitions, 4 * rows)
    offs = <int32_t*>(c.topic_offsets.p + c.topic_offsets.n)
    parts = <int32_t*>(c.partitions.p + c.partitions.n)
    out = c.topic_data.p + c.topic_data.n
    _fill_repeated(out, src, size, rows)
    for i in range(rows):
        offs[i] = <int32_t>(c.topic_data.n + (i + 1) * size)
        parts[i] = partition
    c.topic_offsets.n += 4 * rows
    c.topic_data.n += size * rows
    c.partitions.n += 4 * rows
    return 0


def decode_columns(data, topic, int partition, int64_t fetch_offset, *, bint check_crcs=True,
                   bint read_committed=False, aborted_transactions=None,
                   bint include_headers=False, _Columns into=None, Prepared prepared=None):
    """Decode a Fetch response partition's ``records`` into Arrow column buffers.

    Returns ``(rows, columns, next_offset, partial)`` with ``columns`` a
    ``record._columns.ArrowColumns``; the checks and errors are those of
    ``decode_fetched_records`` (docs/internals.md, record/). With ``into`` (a builder from
    :func:`new_builder`) the rows are appended there, with their topic and partition, and
    ``columns`` is None. After an error a builder holds part of the partition: drop it.
    With ``prepared`` (:func:`prepare_batches` of the same ``data``) the batches it checked
    and decompressed are not checked nor decompressed again; the rest are, as without it.

    Thread-safety: several threads may call this at once, on the same or different ``data``
    (which must not change meanwhile); each call writes only its own columns, and each
    batch's CRC check and record loop run without the GIL. A builder (``into``) serves one
    thread at a time.
    """
    cdef Py_buffer view
    cdef const unsigned char* buf
    cdef Py_ssize_t n, pos = 0, size, first = 0
    cdef int64_t next_offset = fetch_offset, batch_next
    cdef bint partial = False
    cdef _Columns c
    cdef _Given given = None
    cdef dict ready = None
    if into is not None:
        if not into.shared or into.headers != include_headers:
            raise ValueError("into must be a builder with the same include_headers")
        first = into.rows
    if data is None:
        if into is not None:
            return 0, None, fetch_offset, False
        c = _Columns(0, include_headers)
        return 0, c.result(), fetch_offset, False
    txns = AbortedTransactions(aborted_transactions) if read_committed else None
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        buf = <const unsigned char*>view.buf
        n = view.len
        if prepared is not None:
            if prepared.size != n:
                raise ValueError("prepared was made from other data")
            given = _Given()
            ready = prepared.payloads
        if into is not None:
            c = into
            # Uncompressed values never exceed the input: room for them in one step.
            _reserve(c.value_data, n + 64)
        else:
            c = _Columns(n, include_headers)
        mv = memoryview(data)
        while pos < n:
            size = next_batch(buf, pos, n, fetch_offset, CorruptRecordError,
                              RecordTooLargeError, topic, partition)
            if size < 0:
                partial = True
                break
            c.wire = size
            c.remaining = n - pos - size
            if buf[pos + 16] != 2:
                batch_next = _decode_legacy(c, buf, mv, pos, size, topic, partition,
                                            fetch_offset, check_crcs)
            elif ready is not None and pos in ready:
                given.payload = ready[pos]
                batch_next = _decode_v2(c, buf, mv, pos, size, topic, partition, fetch_offset,
                                        check_crcs and not prepared.crc_checked, txns, given)
            else:
                batch_next = _decode_v2(c, buf, mv, pos, size, topic, partition, fetch_offset,
                                        check_crcs, txns, decompress_payload)
            if batch_next > next_offset:
                next_offset = batch_next
            pos += size
    finally:
        PyBuffer_Release(&view)
    if into is not None:
        _fill_segment(c, topic.encode("utf-8"), partition, first)
        return c.rows - first, None, next_offset, partial
    return c.rows, c.result(), next_offset, partial


cdef class _Given:
    """The decompress callback of one decode with prepared batches: the current batch's
    payload from :class:`Prepared`, else (a batch decompressed only to be inspected, such as a
    control batch) the codec.

    Thread-safety: not thread-safe; one instance serves one decode call.
    """

    cdef object payload

    def __call__(self, codec, data, magic, topic, partition, offset):
        if self.payload is not None:
            return self.payload
        return decompress_payload(codec, data, magic, topic, partition, offset)


cdef class Prepared:
    """One partition's v2 batches, CRC-checked and decompressed ahead of decoding
    (:func:`prepare_batches`, on a thread of the decode pool): ``decode_columns(...,
    prepared=)`` takes the payloads from here, so that what is left for the thread that
    assembles the columns is the record loop.

    Thread-safety: immutable once :func:`prepare_batches` returns it.
    """

    cdef readonly Py_ssize_t size
    cdef readonly bint crc_checked
    # Batch position in the data -> its decompressed records, or None (nothing to
    # decompress: uncompressed, a control batch, or wholly before the fetch offset).
    cdef dict payloads

    @property
    def num_batches(self):
        """Batches prepared (from the start of the data, in order)."""
        return len(self.payloads)

    @property
    def payload_bytes(self):
        """Bytes of decompressed payloads held."""
        return sum(len(p) for p in self.payloads.values() if p is not None)


def prepare_batches(data, int64_t fetch_offset, bint check_crcs=True):
    """Check the CRC-32C of ``data``'s v2 batches and decompress their records, without
    parsing them, for a later ``decode_columns(data, ..., prepared=)`` (several threads may
    prepare different partitions at once: the CRC runs without the GIL, and the codec
    libraries release it while they decompress).

    Stops at the first batch it cannot prepare (incomplete, legacy format, a wrong CRC, a
    negative count, a codec failure), raising nothing: the decode meets that batch itself and
    raises there, with the topic, partition and offset, exactly as without preparation.
    Compressed batches that the decode would not read (control batches, those wholly before
    ``fetch_offset``) are not decompressed.
    """
    cdef Py_buffer view
    cdef const unsigned char* buf
    cdef const unsigned char* h
    cdef Py_ssize_t n, pos = 0, size
    cdef int32_t length, count
    cdef int16_t attrs
    cdef int64_t base
    cdef uint32_t actual
    cdef Prepared p = Prepared()
    p.crc_checked = check_crcs
    p.payloads = {}
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        buf = <const unsigned char*>view.buf
        n = view.len
        p.size = n
        mv = memoryview(data)
        while n - pos >= LOG_OVERHEAD:
            length = rd_i32(buf + pos + 8)
            if length < V2_MIN_BATCH_LENGTH:
                break
            size = LOG_OVERHEAD + <Py_ssize_t>length
            if n - pos < size or buf[pos + 16] != 2:
                break
            h = buf + pos + LOG_OVERHEAD
            if check_crcs:
                if size >= NOGIL_MIN_BYTES:
                    with nogil:
                        actual = kc_crc32c(0, buf + pos + V2_ATTRIBUTES_OFFSET,
                                           <size_t>(size - V2_ATTRIBUTES_OFFSET))
                else:
                    actual = kc_crc32c(0, buf + pos + V2_ATTRIBUTES_OFFSET,
                                       <size_t>(size - V2_ATTRIBUTES_OFFSET))
                if actual != rd_u32(h + 5):
                    break
            count = rd_i32(h + 45)
            if count < 0:
                break
            attrs = rd_i16(h + 9)
            base = rd_i64(buf + pos)
            payload = None
            if (attrs & ATTR_CODEC_MASK and not attrs & ATTR_CONTROL and count > 0
                    and base + rd_i32(h + 11) >= fetch_offset):
                try:
                    payload = decompress_payload(attrs & ATTR_CODEC_MASK,
                                                 mv[pos + V2_HEADER_SIZE:pos + size], 2, "",
                                                 -1, base)
                except Exception:
                    break
            p.payloads[pos] = payload
            pos += size
    finally:
        PyBuffer_Release(&view)
    return p


def repeat_string_buffers(bytes data, Py_ssize_t rows):
    """``(offsets, data)`` buffers of a string or binary column holding ``data`` in each of
    ``rows`` rows (the topic column: ``pa.repeat`` appends row by row, about 40 ns a row)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), i
    cdef const char* src = PyBytes_AS_STRING(data)
    if n * rows > _MAX_COLUMN_BYTES:
        raise OverflowError("a string column of one fetch exceeds 2 GiB")
    cdef Grow offs = Grow((rows + 1) * 4)
    cdef Grow out = Grow(n * rows)
    cdef int32_t* o = <int32_t*>offs.p
    for i in range(rows + 1):
        o[i] = <int32_t>(i * n)
    _fill_repeated(out.p, src, n, rows)
    offs.n = (rows + 1) * 4
    out.n = n * rows
    return offs, out


# The CRC-32C the decoders use, exposed for tests and benchmarks: crc32c picks the hardware
# instruction when the processor has it; crc32c_hardware and crc32c_table force one method.


def _crc_of(data, uint32_t crc, int method):
    cdef Py_buffer view
    cdef uint32_t out
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            if method == 1:
                out = kc_crc32c_hw(crc, <const unsigned char*>view.buf, <size_t>view.len)
            elif method == 2:
                out = kc_crc32c_sw(crc, <const unsigned char*>view.buf, <size_t>view.len)
            else:
                out = kc_crc32c(crc, <const unsigned char*>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return out


def crc32c(data, uint32_t crc=0):
    """CRC-32C of a bytes-like object, continuing from ``crc``: what the decoders check."""
    return _crc_of(data, crc, 0)


def crc32c_hardware(data, uint32_t crc=0):
    """:func:`crc32c` with the SSE 4.2 instruction (for tests; only where
    :func:`crc32c_hardware_available`, else ValueError)."""
    if not kc_crc32c_hw_available():
        raise ValueError("this processor has no CRC-32C instruction")
    return _crc_of(data, crc, 1)


def crc32c_table(data, uint32_t crc=0):
    """:func:`crc32c` with the table method (for tests: the path of processors without the
    instruction)."""
    return _crc_of(data, crc, 2)


def crc32c_hardware_available():
    """Whether :func:`crc32c` uses the processor's CRC-32C instruction."""
    return bool(kc_crc32c_hw_available())
