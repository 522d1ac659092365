/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), callable without the GIL.
 *
 * Two implementations: the SSE 4.2 crc32 instruction on x86 processors that have it (chosen
 * at run time, compiled with a target attribute so that the extension needs no -msse4.2 and
 * still runs on processors without it), and the table method (slicing by 8) everywhere else.
 * Header only, every function static: each Cython extension that includes it gets its own copy
 * (no shared library to locate at run time). kc_crc32c_init() must run once, before the first
 * call, with the GIL held (the extensions call it at import); afterwards everything here only
 * reads the tables and the flag, so any number of threads may call it at once.
 */
#ifndef KAFKACONSUMER_CRC32C_H
#define KAFKACONSUMER_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define KC_CRC32C_X86 1
#include <nmmintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KC_UNUSED __attribute__((unused)) /* each extension uses only some of these */
#else
#define KC_UNUSED
#endif

static uint32_t kc_crc32c_table[8][256];
/* The hardware path runs three independent streams over three consecutive KC_CRC32C_LANE-byte
 * blocks (the instruction's latency is three times its issue rate, so one stream leaves two
 * thirds of it idle) and joins them with kc_crc32c_shift: the register after LANE more zero
 * bytes, a linear map applied a byte of the register at a time. */
#define KC_CRC32C_LANE 512
static uint32_t kc_crc32c_shift[4][256];
static int kc_crc32c_hw_ok = 0;
static int kc_crc32c_ready = 0;

KC_UNUSED static void kc_crc32c_init(void) {
    uint32_t i, j, c;
    if (kc_crc32c_ready)
        return;
    for (i = 0; i < 256; i++) {
        c = i;
        for (j = 0; j < 8; j++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        kc_crc32c_table[0][i] = c;
    }
    /* table[k][b]: the CRC of byte b followed by k zero bytes, for eight bytes per step. */
    for (i = 0; i < 256; i++) {
        c = kc_crc32c_table[0][i];
        for (j = 1; j < 8; j++) {
            c = kc_crc32c_table[0][c & 0xFF] ^ (c >> 8);
            kc_crc32c_table[j][i] = c;
        }
    }
    {
        uint32_t image[32], k;
        for (j = 0; j < 32; j++) {
            c = 1u << j;
            for (k = 0; k < KC_CRC32C_LANE; k++)
                c = kc_crc32c_table[0][c & 0xFF] ^ (c >> 8);
            image[j] = c;
        }
        for (k = 0; k < 4; k++)
            for (i = 0; i < 256; i++) {
                c = 0;
                for (j = 0; j < 8; j++)
                    if (i & (1u << j))
                        c ^= image[8 * k + j];
                kc_crc32c_shift[k][i] = c;
            }
    }
#ifdef KC_CRC32C_X86
    __builtin_cpu_init();
    kc_crc32c_hw_ok = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
    kc_crc32c_ready = 1;
}

/* Whether kc_crc32c uses the processor's instruction. */
KC_UNUSED static int kc_crc32c_hw_available(void) { return kc_crc32c_hw_ok; }

/* The table method; ``crc`` is the CRC of what came before (0 to start). */
KC_UNUSED static uint32_t kc_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) {
    uint32_t lo;
    crc = ~crc;
    while (n >= 8) {
        /* Bytes assembled one by one: no alignment or byte-order assumption (compilers turn
         * this into one load on little-endian machines). */
        lo = crc ^ ((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                    ((uint32_t)p[3] << 24));
        crc = kc_crc32c_table[7][lo & 0xFF] ^ kc_crc32c_table[6][(lo >> 8) & 0xFF] ^
              kc_crc32c_table[5][(lo >> 16) & 0xFF] ^ kc_crc32c_table[4][lo >> 24] ^
              kc_crc32c_table[3][p[4]] ^ kc_crc32c_table[2][p[5]] ^ kc_crc32c_table[1][p[6]] ^
              kc_crc32c_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = kc_crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#ifdef KC_CRC32C_X86
/* The SSE 4.2 instruction; call only when kc_crc32c_hw_available(). */
KC_UNUSED __attribute__((target("sse4.2"))) static uint32_t kc_crc32c_hw(uint32_t crc,
                                                              const unsigned char *p,
                                                              size_t n) {
#if defined(__x86_64__)
    uint64_t c = ~crc, c1, c2, w;
    uint32_t r;
    size_t i;
    while (n >= 3 * KC_CRC32C_LANE) {
        c1 = c2 = 0;
        for (i = 0; i < KC_CRC32C_LANE; i += 8) {
            memcpy(&w, p + i, 8);
            c = _mm_crc32_u64(c, w);
            memcpy(&w, p + KC_CRC32C_LANE + i, 8);
            c1 = _mm_crc32_u64(c1, w);
            memcpy(&w, p + 2 * KC_CRC32C_LANE + i, 8);
            c2 = _mm_crc32_u64(c2, w);
        }
        /* The register over block one then two is block one's shifted past block two, xor
         * block two's from zero; the same again for block three. */
        r = (uint32_t)c;
        r = kc_crc32c_shift[0][r & 0xFF] ^ kc_crc32c_shift[1][(r >> 8) & 0xFF] ^
            kc_crc32c_shift[2][(r >> 16) & 0xFF] ^ kc_crc32c_shift[3][r >> 24] ^ (uint32_t)c1;
        r = kc_crc32c_shift[0][r & 0xFF] ^ kc_crc32c_shift[1][(r >> 8) & 0xFF] ^
            kc_crc32c_shift[2][(r >> 16) & 0xFF] ^ kc_crc32c_shift[3][r >> 24] ^ (uint32_t)c2;
        c = r;
        p += 3 * KC_CRC32C_LANE;
        n -= 3 * KC_CRC32C_LANE;
    }
    while (n >= 8) {
        memcpy(&w, p, 8); /* unaligned loads are fine on x86 */
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
#else
    uint32_t c = ~crc, w;
    while (n >= 4) {
        memcpy(&w, p, 4);
        c = _mm_crc32_u32(c, w);
        p += 4;
        n -= 4;
    }
#endif
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#else
KC_UNUSED static uint32_t kc_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
    return kc_crc32c_sw(crc, p, n);
}
#endif

/* CRC-32C of p[0:n], continuing from ``crc`` (0 to start). */
KC_UNUSED static uint32_t kc_crc32c(uint32_t crc, const unsigned char *p, size_t n) {
    if (kc_crc32c_hw_ok)
        return kc_crc32c_hw(crc, p, n);
    return kc_crc32c_sw(crc, p, n);
}

#endif
