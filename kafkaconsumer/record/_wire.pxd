# cython: language_level=3
# The parts of the record wire format both Cython decoders read the same way (_crecords makes
# ConsumerRecord objects, _carrow fills Arrow buffers): byte and varint readers, the v2 batch
# header with its CRC and read_committed checks, payload decompression, v2 record and header
# scanning, and legacy (v0/v1) message sets. Everything is ``cdef inline``: each extension
# compiles its own copy, so there is no module to import at run time and the hot loops inline.
#
# A .pxd cannot see the module globals of its users, so functions that raise take the
# exception class as an argument: ``err`` is the module's internal ``_Corrupt(msg)`` (the
# caller adds topic, partition and offset), ``corrupt`` is ``CorruptRecordError``.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport INT64_MIN, int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc

cdef extern from "_crc32c.h" nogil:
    # CRC-32C in C (hardware instruction or table method): see _crc32c.h. Each extension calls
    # kc_crc32c_init() once at import, before any decoding.
    void kc_crc32c_init()
    int kc_crc32c_hw_available()
    uint32_t kc_crc32c(uint32_t crc, const unsigned char* p, size_t n)
    uint32_t kc_crc32c_sw(uint32_t crc, const unsigned char* p, size_t n)
    uint32_t kc_crc32c_hw(uint32_t crc, const unsigned char* p, size_t n)

cdef enum:
    LOG_OVERHEAD = 12  # baseOffset + batchLength
    V2_HEADER_SIZE = 61
    V2_MIN_BATCH_LENGTH = 49  # the v2 header after batchLength
    MIN_BATCH_LENGTH = 14  # the smallest legacy (v0) message
    V2_ATTRIBUTES_OFFSET = 21  # where the v2 CRC32C coverage starts
    # Below this many bytes a batch's CRC and records are done with the GIL held even when the
    # caller allows releasing it: handing the GIL to another thread and taking it back costs
    # more than the work.
    NOGIL_MIN_BYTES = 4096
    ATTR_CODEC_MASK = 0x07
    ATTR_TIMESTAMP_TYPE = 0x08
    ATTR_TRANSACTIONAL = 0x10
    ATTR_CONTROL = 0x20


# ----------------------------------------------------------------------------- byte readers

cdef inline int16_t rd_i16(const unsigned char* p) noexcept nogil:
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef inline uint32_t rd_u32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline int32_t rd_i32(const unsigned char* p) noexcept nogil:
    return <int32_t>rd_u32(p)


cdef inline int64_t rd_i64(const unsigned char* p) noexcept nogil:
    return <int64_t>((<uint64_t>rd_u32(p) << 32) | rd_u32(p + 4))


cdef inline Py_ssize_t varint_slow(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                                   int64_t* out, int max_shift, object err) except -1:
    # Any zigzag varint (max_shift 28) or varlong (63); returns the position after it. Positions
    # go in and out by value, so that the callers' positions never have their address taken
    # (the compiler keeps them in registers through the inlined fast paths).
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef unsigned char b
    while True:
        if pos >= end:
            raise err("record data is truncated inside the batch")
        b = buf[pos]
        pos += 1
        result |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift > max_shift:
            if max_shift == 28:
                raise err("varint is longer than 5 bytes")
            raise err("varlong is longer than 10 bytes")
    out[0] = <int64_t>((result >> 1) ^ (~(result & 1) + 1))
    return pos


cdef inline Py_ssize_t short_varint(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t limit,
                                    int64_t* out) noexcept nogil:
    # A varint of 1 or 2 bytes that ends before ``limit``: returns the position after it;
    # -1 for anything else (longer, or cut off), which varint_slow then reads.
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


cdef inline Py_ssize_t varint(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                              int64_t* out, object err) except -1:
    cdef Py_ssize_t p = short_varint(buf, pos, end, out)
    if p < 0:
        p = varint_slow(buf, pos, end, out, 28, err)
    return p


cdef inline Py_ssize_t varlong(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                               int64_t* out, object err) except -1:
    cdef Py_ssize_t p = short_varint(buf, pos, end, out)
    if p < 0:
        p = varint_slow(buf, pos, end, out, 63, err)
    return p


# ----------------------------------------------------------------------------- v2 batches

cdef struct BatchHeader:
    int64_t base_offset
    int32_t leader_epoch
    uint32_t crc
    int16_t attrs
    int32_t last_delta
    int64_t base_ts
    int64_t max_ts
    int64_t producer_id
    int32_t count


cdef inline int read_v2_header(const unsigned char* buf, object mv, Py_ssize_t pos,
                               Py_ssize_t size, BatchHeader* b, bint check_crcs,
                               bint release_gil, object corrupt, object topic,
                               int partition) except -1:
    # The header of the v2 batch at buf[pos:pos + size] into *b, after the checks that apply to
    # any batch: minimum length, CRC32C (one call over the whole batch), record count.
    cdef const unsigned char* h = buf + pos + LOG_OVERHEAD
    b.base_offset = rd_i64(buf + pos)
    if size - LOG_OVERHEAD < V2_MIN_BATCH_LENGTH:
        raise corrupt(f"v2 batch length {size - 12} is below the minimum", topic=topic,
                      partition=partition, offset=b.base_offset)
    b.leader_epoch = rd_i32(h)
    b.crc = rd_u32(h + 5)
    b.attrs = rd_i16(h + 9)
    b.last_delta = rd_i32(h + 11)
    b.base_ts = rd_i64(h + 15)
    b.max_ts = rd_i64(h + 23)
    b.producer_id = rd_i64(h + 31)
    b.count = rd_i32(h + 45)
    cdef uint32_t actual
    cdef const unsigned char* covered = buf + pos + V2_ATTRIBUTES_OFFSET
    cdef size_t covered_size = <size_t>(size - V2_ATTRIBUTES_OFFSET)
    if check_crcs:
        if release_gil and size >= NOGIL_MIN_BYTES:
            with nogil:
                actual = kc_crc32c(0, covered, covered_size)
        else:
            actual = kc_crc32c(0, covered, covered_size)
        if actual != b.crc:
            raise corrupt(
                f"CRC32C mismatch: batch says {b.crc:#010x}, bytes give {actual:#010x}",
                topic=topic, partition=partition, offset=b.base_offset)
    if b.count < 0:
        raise corrupt(f"negative record count {b.count}", topic=topic, partition=partition,
                      offset=b.base_offset)
    return 0


cdef inline object payload_of(const unsigned char* buf, object mv, Py_ssize_t pos,
                              Py_ssize_t end, BatchHeader* b, object decompress,
                              object topic, int partition, const unsigned char** pbuf,
                              Py_ssize_t* ppos, Py_ssize_t* pend):
    # Where the batch's records are: in buf itself, or in the decompressed payload, which is
    # returned (the caller keeps it alive while it reads *pbuf); None when uncompressed.
    cdef int codec = b.attrs & ATTR_CODEC_MASK
    if not codec:
        pbuf[0], ppos[0], pend[0] = buf, pos + V2_HEADER_SIZE, end
        return None
    payload = decompress(codec, mv[pos + V2_HEADER_SIZE:end], 2, topic, partition,
                         b.base_offset)
    pbuf[0] = <const unsigned char*>PyBytes_AS_STRING(payload)
    ppos[0], pend[0] = 0, PyBytes_GET_SIZE(payload)
    return payload


cdef struct RecordSpan:
    # Where one v2 record's parts are in the buffer.
    Py_ssize_t end  # the position after the record
    Py_ssize_t kpos
    Py_ssize_t vpos
    int64_t length
    int64_t ts_delta
    int64_t offset_delta
    int64_t klen
    int64_t vlen
    int64_t hcount


cdef inline bint scan_plain_record(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                                   RecordSpan* r) noexcept nogil:
    # The fast path: True for a well-formed record without headers whose varints are all
    # short (lengths below 8 KiB, deltas below 4096), with *r filled in. False for anything
    # else, with no error: the caller then scans the record with scan_record, which reads
    # every form and raises the precise error. Whatever it accepts, scan_record accepts too,
    # with the same results.
    cdef int64_t length, hcount
    cdef Py_ssize_t rec_end
    pos = short_varint(buf, pos, end, &length)
    if pos < 0 or length < 6 or length > end - pos:
        return False
    rec_end = pos + length
    pos = short_varint(buf, pos + 1, rec_end, &r.ts_delta)  # + 1: the unused attributes
    if pos < 0:
        return False
    pos = short_varint(buf, pos, rec_end, &r.offset_delta)
    if pos < 0:
        return False
    pos = short_varint(buf, pos, rec_end, &r.klen)
    if pos < 0:
        return False
    r.kpos = pos
    if r.klen >= 0:
        if r.klen > rec_end - pos:
            return False
        pos += r.klen
    elif r.klen != -1:
        return False
    pos = short_varint(buf, pos, rec_end, &r.vlen)
    if pos < 0:
        return False
    r.vpos = pos
    if r.vlen >= 0:
        if r.vlen > rec_end - pos:
            return False
        pos += r.vlen
    elif r.vlen != -1:
        return False
    pos = short_varint(buf, pos, rec_end, &hcount)
    if pos != rec_end or hcount != 0:
        return False
    r.length = length
    r.hcount = 0
    r.end = rec_end
    return True


cdef inline Py_ssize_t scan_record(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                                   RecordSpan* r, int64_t base_offset, int64_t min_offset,
                                   object err) except -1:
    # The general path: any varint form, up to and including the header count; returns where
    # the headers start (read them with read_header, then call check_record_end). A record
    # before ``min_offset`` (the fetch offset) is skipped unread after its offset delta: only
    # r.end and r.offset_delta are set.
    cdef Py_ssize_t rec_end
    pos = varint(buf, pos, end, &r.length, err)
    rec_end = pos + r.length
    if r.length < 6 or rec_end > end:
        raise err(f"record length {r.length} does not fit the batch")
    r.end = rec_end
    pos = varlong(buf, pos + 1, rec_end, &r.ts_delta, err)  # + 1: the unused attributes
    pos = varint(buf, pos, rec_end, &r.offset_delta, err)
    if base_offset + r.offset_delta < min_offset:
        return rec_end
    pos = varint(buf, pos, rec_end, &r.klen, err)
    r.kpos = pos
    if r.klen >= 0:
        if r.klen > rec_end - pos:
            raise err("key overruns the record")
        pos += r.klen
    elif r.klen != -1:
        raise err(f"negative key length {r.klen}")
    pos = varint(buf, pos, rec_end, &r.vlen, err)
    r.vpos = pos
    if r.vlen >= 0:
        if r.vlen > rec_end - pos:
            raise err("value overruns the record")
        pos += r.vlen
    elif r.vlen != -1:
        raise err(f"negative value length {r.vlen}")
    pos = varint(buf, pos, rec_end, &r.hcount, err)
    if r.hcount < 0:
        raise err(f"negative header count {r.hcount}")
    return pos


cdef struct HeaderSpan:
    Py_ssize_t kpos
    int64_t klen
    Py_ssize_t vpos
    int64_t vlen  # -1: null value


cdef inline Py_ssize_t read_header(const unsigned char* buf, Py_ssize_t pos,
                                   Py_ssize_t rec_end, HeaderSpan* h, object err) except -1:
    pos = varint(buf, pos, rec_end, &h.klen, err)
    if h.klen < 0:
        raise err(f"negative header key length {h.klen}")
    if h.klen > rec_end - pos:
        raise err("header key overruns the record")
    h.kpos = pos
    pos += h.klen
    pos = varint(buf, pos, rec_end, &h.vlen, err)
    h.vpos = pos
    if h.vlen >= 0:
        if h.vlen > rec_end - pos:
            raise err("header value overruns the record")
        pos += h.vlen
    elif h.vlen != -1:
        raise err(f"negative header value length {h.vlen}")
    return pos


cdef inline int check_record_end(Py_ssize_t pos, RecordSpan* r, int64_t offset,
                                 object err) except -1:
    if pos != r.end:
        raise err(f"record at offset {offset} declares {r.length} bytes but holds "
                  f"{r.length + pos - r.end}")
    return 0


cdef inline bint batch_skipped(const unsigned char* buf, object mv, Py_ssize_t pos,
                               Py_ssize_t end, BatchHeader* b, object txns, object decompress,
                               object corrupt, object err, object topic,
                               int partition) except -1:
    # True when the batch yields no record: a control batch (whose marker the read_committed
    # bookkeeping reads) or, under read_committed, a batch of an aborted transaction.
    cdef const unsigned char* pbuf
    cdef Py_ssize_t ppos, pend
    cdef RecordSpan r
    cdef bint transactional = (b.attrs & ATTR_TRANSACTIONAL) != 0
    cdef int64_t last_offset = b.base_offset + b.last_delta
    if b.attrs & ATTR_CONTROL:
        if txns is not None:
            key = value = None
            if b.producer_id != -1 and b.count:
                payload = payload_of(buf, mv, pos, end, b, decompress, topic, partition, &pbuf,
                                     &ppos, &pend)
                try:
                    scan_record(pbuf, ppos, pend, &r, 0, INT64_MIN, err)
                except err as exc:
                    raise corrupt(str(exc), topic=topic, partition=partition,
                                  offset=b.base_offset) from None
                if r.klen >= 0:
                    key = (<const char*>pbuf)[r.kpos:r.kpos + r.klen]
                if r.vlen >= 0:
                    value = (<const char*>pbuf)[r.vpos:r.vpos + r.vlen]
            txns.skip_batch(b.producer_id, last_offset, transactional, True, key, value)
        # Control records never reach the user; they only advance the position.
        return True
    return txns is not None and txns.skip_batch(b.producer_id, last_offset, transactional,
                                                False, None, None)


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


cdef struct LegacyRow:
    # One record of a legacy message set: its key and value in ``base``.
    const unsigned char* base
    Py_ssize_t key_pos
    int32_t klen  # -1: null
    Py_ssize_t value_pos
    int32_t vlen  # -1: null
    int64_t offset
    int64_t timestamp
    int ts_type


cdef inline int parse_legacy(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                             LegacyMsg* m, object err) except -1:
    cdef int32_t size
    cdef Py_ssize_t p
    if end - pos < LOG_OVERHEAD:
        raise err("message data is truncated")
    m.offset = rd_i64(buf + pos)
    size = rd_i32(buf + pos + 8)
    if size < 0 or size > end - pos - LOG_OVERHEAD:
        raise err("message overruns its container")
    m.end = pos + LOG_OVERHEAD + size
    p = pos + LOG_OVERHEAD
    if size < 6:
        raise err("message data is truncated")
    m.crc = rd_u32(buf + p)
    m.magic = <signed char>buf[p + 4]
    m.attrs = <signed char>buf[p + 5]
    if m.magic != 0 and m.magic != 1:
        raise err(f"unknown magic byte {m.magic}")
    if size < (14 if m.magic == 0 else 22):
        raise err(f"message size {size} is below the minimum for magic {m.magic}")
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
            raise err("key overruns the message")
        p += m.klen
    elif m.klen != -1:
        raise err(f"negative key length {m.klen}")
    if m.end - p < 4:
        raise err("message is truncated before its value")
    m.vlen = rd_i32(buf + p)
    p += 4
    m.value_pos = p
    if m.vlen >= 0:
        if m.vlen > m.end - p:
            raise err("value overruns the message")
        p += m.vlen
    elif m.vlen != -1:
        raise err(f"negative value length {m.vlen}")
    if p != m.end:
        raise err(f"{m.end - p} unexpected bytes after the message value")
    return 0


cdef inline void _legacy_row(LegacyRow* row, const unsigned char* base, LegacyMsg* m,
                             int64_t offset, int64_t ts, int ts_type) noexcept nogil:
    row.base = base
    row.key_pos, row.klen = m.key_pos, m.klen
    row.value_pos, row.vlen = m.value_pos, m.vlen
    row.offset, row.timestamp, row.ts_type = offset, ts, ts_type


cdef inline int64_t legacy_rows(const unsigned char* buf, object mv, Py_ssize_t pos,
                                Py_ssize_t size, int64_t fetch_offset, bint check_crcs,
                                object crc32, object decompress, object corrupt, object err,
                                object topic, int partition, list keep, LegacyRow** rows,
                                Py_ssize_t* nrows) except? -1:
    # The records (at or after fetch_offset) of the legacy message at buf[pos:pos + size], a
    # plain message or a compressed wrapper of a message set, into a malloc'ed array *rows
    # (the caller frees it) of *nrows entries; returns the offset after the message. A
    # decompressed inner set is appended to ``keep``: the rows point into it.
    cdef LegacyMsg m, im
    cdef int codec, ts_type
    cdef const unsigned char* ibuf
    cdef Py_ssize_t ipos, iend, nmsgs, n = 0
    cdef int64_t base, abs_offset, last_inner
    cdef bint log_append
    rows[0] = NULL
    nrows[0] = 0
    try:
        parse_legacy(buf, pos, pos + size, &m, err)
    except err as exc:
        raise corrupt(str(exc), topic=topic, partition=partition,
                      offset=rd_i64(buf + pos)) from None
    if check_crcs:
        actual = crc32(mv[m.crc_start:m.end])
        if actual != m.crc:
            raise corrupt(f"CRC32 mismatch: message says {m.crc:#010x}, bytes give "
                          f"{actual:#010x}", topic=topic, partition=partition, offset=m.offset)
    codec = m.attrs & ATTR_CODEC_MASK
    ts_type = -1 if m.magic == 0 else (m.attrs & ATTR_TIMESTAMP_TYPE) >> 3
    if codec == 0:
        if m.offset >= fetch_offset:
            rows[0] = <LegacyRow*>malloc(sizeof(LegacyRow))
            if rows[0] == NULL:
                raise MemoryError()
            _legacy_row(rows[0], buf, &m, m.offset, m.timestamp, ts_type)
            nrows[0] = 1
        return m.offset + 1
    if m.offset + 1 <= fetch_offset:
        return m.offset + 1
    if m.vlen < 0:
        raise corrupt("compressed wrapper message has no value", topic=topic,
                      partition=partition, offset=m.offset)
    inner = decompress(codec, mv[m.value_pos:m.value_pos + m.vlen], m.magic, topic, partition,
                       m.offset)
    keep.append(inner)
    ibuf = <const unsigned char*>PyBytes_AS_STRING(inner)
    iend = PyBytes_GET_SIZE(inner)
    # First pass: validate everything and find the last inner offset (magic 1 inner offsets
    # are relative to it); the second pass checks CRCs and makes the rows.
    last_inner = -1
    nmsgs = 0
    ipos = 0
    try:
        while ipos < iend:
            parse_legacy(ibuf, ipos, iend, &im, err)
            last_inner = im.offset
            nmsgs += 1
            ipos = im.end
    except err as exc:
        raise corrupt("inner message set of a compressed message: " + str(exc), topic=topic,
                      partition=partition, offset=m.offset) from None
    if nmsgs == 0:
        return m.offset + 1
    rows[0] = <LegacyRow*>malloc(nmsgs * sizeof(LegacyRow))
    if rows[0] == NULL:
        raise MemoryError()
    imv = memoryview(inner)
    base = m.offset - last_inner if m.magic > 0 else 0
    log_append = m.magic > 0 and ts_type == 1
    ipos = 0
    while ipos < iend:
        parse_legacy(ibuf, ipos, iend, &im, err)
        ipos = im.end
        if check_crcs:
            actual = crc32(imv[im.crc_start:im.end])
            if actual != im.crc:
                raise corrupt(f"CRC32 mismatch in a compressed message: says {im.crc:#010x}, "
                              f"bytes give {actual:#010x}", topic=topic, partition=partition,
                              offset=base + im.offset)
        if im.attrs & ATTR_CODEC_MASK:
            raise corrupt("compressed message nests compression", topic=topic,
                          partition=partition, offset=m.offset)
        abs_offset = base + im.offset
        if abs_offset < fetch_offset:
            continue
        if log_append:
            _legacy_row(&rows[0][n], ibuf, &im, abs_offset, m.timestamp, 1)
        elif im.magic == 0:
            _legacy_row(&rows[0][n], ibuf, &im, abs_offset, -1, -1)
        else:
            _legacy_row(&rows[0][n], ibuf, &im, abs_offset, im.timestamp,
                        (im.attrs & ATTR_TIMESTAMP_TYPE) >> 3)
        n += 1
        nrows[0] = n
    return m.offset + 1


# ----------------------------------------------------------------------------- framing

cdef inline Py_ssize_t next_batch(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t n,
                                  int64_t fetch_offset, object corrupt, object too_large,
                                  object topic, int partition) except -2:
    # The size of the complete batch (or legacy message) at buf[pos:n], checked for a known
    # magic byte; -1 when only part of it was fetched (RecordTooLargeError when it is the first:
    # the whole response cannot hold it).
    cdef int32_t length
    cdef Py_ssize_t size
    cdef int magic
    if n - pos < LOG_OVERHEAD:
        return -1
    length = rd_i32(buf + pos + 8)
    if length < MIN_BATCH_LENGTH:
        raise corrupt(f"batch length {length} is below the minimum", topic=topic,
                      partition=partition, offset=rd_i64(buf + pos))
    size = LOG_OVERHEAD + <Py_ssize_t>length
    if n - pos < size:
        if pos == 0:
            raise too_large(topic, partition, fetch_offset, size)
        return -1
    magic = buf[pos + 16]
    if magic > 2:
        raise corrupt(f"unknown magic byte {magic}", topic=topic, partition=partition,
                      offset=rd_i64(buf + pos))
    return size


cdef inline object v2_batch(const unsigned char* buf, object mv, Py_ssize_t pos,
                            Py_ssize_t size, int64_t fetch_offset, bint check_crcs,
                            object txns, bint release_gil, object decompress, object corrupt,
                            object err, object topic, int partition, BatchHeader* b,
                            bint* wanted, const unsigned char** pbuf, Py_ssize_t* ppos,
                            Py_ssize_t* pend):
    # Everything about the v2 batch at buf[pos:pos + size] short of its records: the header and
    # its checks into *b, and whether any record can reach the caller (*wanted: not a control
    # batch, not aborted, not wholly before fetch_offset). When wanted, the records are at
    # (*pbuf)[*ppos:*pend]; the decompressed payload they are in, if any, is returned.
    cdef Py_ssize_t end = pos + size
    wanted[0] = False
    read_v2_header(buf, mv, pos, size, b, check_crcs, release_gil, corrupt, topic,
                   partition)
    if (b.attrs & ATTR_CONTROL or txns is not None) and batch_skipped(
            buf, mv, pos, end, b, txns, decompress, corrupt, err, topic, partition):
        return None
    if b.base_offset + b.last_delta < fetch_offset or b.count == 0:
        return None
    wanted[0] = True
    return payload_of(buf, mv, pos, end, b, decompress, topic, partition, pbuf, ppos, pend)
