/* c-blosc 1.x's shuffle filters on one block, both ways.
 *
 * A blosc1 frame stores each block of `blocksize` bytes filtered, then compressed.
 * For items of `ts` bytes, with n = blocksize / ts whole items in the block:
 *
 *   byte shuffle: ts planes of n bytes; plane j holds byte j of every item.  The
 *     blocksize % ts bytes after the planes are stored as they are.
 *   bit shuffle (only when n is a multiple of 8; otherwise the block is stored as
 *     it is): 8 * ts rows of n / 8 bytes; row 8j + k holds bit k of byte j of every
 *     item, item i at bit i % 8 of byte i / 8.  The bytes after the n * ts are stored
 *     as they are.
 *
 * zf_unshuffle / zf_bitunshuffle undo them (decoding), zf_shuffle / zf_bitshuffle apply
 * them (compression, zf_blosc_enc.h); always into `dst`, never overlapping `src`.  Each
 * has a scalar version and, on x86-64 with GCC or clang, an AVX2 one chosen at run time
 * (`zf_shuffle_isa`); the two give the same bytes (tests/kernels/
 * test_kernel_blosc_frames.py, test_kernel_blosc_encode.py).  The NumPy twins are
 * zarrfast.kernels.reference.blosc_unshuffle / blosc_bitunshuffle / blosc_shuffle /
 * blosc_bitshuffle. */
#ifndef ZF_SHUFFLE_H
#define ZF_SHUFFLE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ZF_SHUFFLE_AVX2 1
#include <immintrin.h>
#endif

enum { ZF_ISA_SCALAR = 0, ZF_ISA_AVX2 = 1 };

/* the best instruction set this CPU runs */
static int zf_shuffle_isa(void) {
#ifdef ZF_SHUFFLE_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return ZF_ISA_AVX2;
#endif
    return ZF_ISA_SCALAR;
}

/* Transpose the 8x8 bit matrix in x: byte k, bit m goes to byte m, bit k. */
static inline uint64_t zf_transpose8(uint64_t x) {
    uint64_t t;
    t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
    x ^= t ^ (t << 28);
    return x;
}

/* the plane bytes of group p of one byte's rows, as one little-endian 64-bit word */
static inline uint64_t zf_bitgroup(const uint8_t* rows, size_t m, size_t p) {
    uint64_t x = 0;
    size_t k;
    for (k = 0; k < 8; k++)
        x |= (uint64_t)rows[k * m + p] << (8 * k);
    return zf_transpose8(x);
}

/* planes[j * n + i] = byte j of item i, from the 8 bit-shuffled rows of n / 8 bytes
   of byte j at rows[j]; from group `from` on (the groups before it are done) */
static void zf_bitplanes_from(const uint8_t* const* src, uint8_t* planes, size_t n,
                              size_t ts, size_t from) {
    size_t m = n / 8, j, p, k;
    for (j = 0; j < ts; j++) {
        for (p = from; p < m; p++) {
            uint64_t y = zf_bitgroup(src[j], m, p);
            for (k = 0; k < 8; k++)  /* (byte k of y, whatever the byte order) */
                planes[j * n + 8 * p + k] = (uint8_t)(y >> (8 * k));
        }
    }
}

static void zf_bitplanes_scalar(const uint8_t* const* src, uint8_t* planes, size_t n,
                                size_t ts) {
    zf_bitplanes_from(src, planes, n, ts, 0);
}

/* dst[i * ts + j] = planes[j][i] */
static void zf_interleave_scalar(const uint8_t* const* planes, uint8_t* dst, size_t n,
                                 size_t ts) {
    size_t i, j;
    if (ts == 1) {
        memcpy(dst, planes[0], n);
        return;
    }
    for (j = 0; j < ts; j++) {
        const uint8_t* plane = planes[j];
        uint8_t* out = dst + j;
        for (i = 0; i < n; i++)
            out[i * ts] = plane[i];
    }
}

#ifdef ZF_SHUFFLE_AVX2
__attribute__((target("avx2")))
static inline __m256i zf_transpose8_avx2(__m256i x) {
    const __m256i m1 = _mm256_set1_epi64x(0x00AA00AA00AA00AALL);
    const __m256i m2 = _mm256_set1_epi64x(0x0000CCCC0000CCCCLL);
    const __m256i m3 = _mm256_set1_epi64x(0x00000000F0F0F0F0LL);
    __m256i t;
    t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 7)), m1);
    x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 7)));
    t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 14)), m2);
    x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 14)));
    t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 28)), m3);
    x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 28)));
    return x;
}

/* The 8-way byte interleave of v[0..7] (32 bytes each), within each 128-bit half: three
   rounds of byte, 16-bit and 32-bit interleaves.  c[i] holds the bytes (v[0][j], ...,
   v[7][j]) as 64-bit lanes for j = 2i, 2i + 1 (low half) and 16 + 2i, 17 + 2i (high). */
__attribute__((target("avx2")))
static inline void zf_gather8_avx2(const __m256i* v, __m256i* c) {
    __m256i a[8], b[8];
    int i;
    for (i = 0; i < 4; i++) {
        a[2 * i] = _mm256_unpacklo_epi8(v[2 * i], v[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_epi8(v[2 * i], v[2 * i + 1]);
    }
    /* a[0], a[1]: v[0], v[1] of bytes 0-7, 8-15 (per half); a[2], a[3]: v[2], v[3]; ... */
    for (i = 0; i < 2; i++) {
        b[4 * i] = _mm256_unpacklo_epi16(a[4 * i], a[4 * i + 2]);
        b[4 * i + 1] = _mm256_unpackhi_epi16(a[4 * i], a[4 * i + 2]);
        b[4 * i + 2] = _mm256_unpacklo_epi16(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm256_unpackhi_epi16(a[4 * i + 1], a[4 * i + 3]);
    }
    /* b[q], b[q + 4]: v[0-3] and v[4-7] of bytes 4q to 4q + 3 */
    for (i = 0; i < 4; i++) {
        c[2 * i] = _mm256_unpacklo_epi32(b[i], b[i + 4]);
        c[2 * i + 1] = _mm256_unpackhi_epi32(b[i], b[i + 4]);
    }
}

/* Groups p to p + 31 of 8 items of one byte's 8 rows (of m bytes): the eight rows'
   bytes of a group are gathered into one 64-bit lane (zf_gather8_avx2) and transposed
   there.  y[i] holds the plane bytes of groups 2i, 2i + 1 (low half) and 16 + 2i,
   17 + 2i (high half). */
__attribute__((target("avx2")))
static inline void zf_bitgroups_avx2(const uint8_t* rows, size_t m, size_t p, __m256i* y) {
    __m256i v[8];
    size_t i;
    for (i = 0; i < 8; i++)
        v[i] = _mm256_loadu_si256((const __m256i*)(rows + i * m + p));
    zf_gather8_avx2(v, y);
    for (i = 0; i < 8; i++)
        y[i] = zf_transpose8_avx2(y[i]);
}

/* Items of 2 bytes: both planes' groups computed together and interleaved straight
   into dst (no planes in between). */
__attribute__((target("avx2")))
static void zf_bitunshuffle2_avx2(const uint8_t* rows0, const uint8_t* rows1, uint8_t* dst,
                                  size_t n) {
    size_t m = n / 8, p, i, k;
    for (p = 0; p + 32 <= m; p += 32) {
        __m256i y0[8], y1[8];
        uint8_t* out = dst + 16 * p;  /* item 8p */
        zf_bitgroups_avx2(rows0, m, p, y0);
        zf_bitgroups_avx2(rows1, m, p, y1);
        for (i = 0; i < 8; i++) {
            __m256i lo = _mm256_unpacklo_epi8(y0[i], y1[i]);
            __m256i hi = _mm256_unpackhi_epi8(y0[i], y1[i]);
            _mm256_storeu_si256((__m256i*)(out + 32 * i), _mm256_permute2x128_si256(lo, hi, 0x20));
            _mm256_storeu_si256((__m256i*)(out + 256 + 32 * i),
                                _mm256_permute2x128_si256(lo, hi, 0x31));
        }
    }
    for (; p < m; p++) {
        uint64_t b0 = zf_bitgroup(rows0, m, p), b1 = zf_bitgroup(rows1, m, p);
        for (k = 0; k < 8; k++) {
            dst[16 * p + 2 * k] = (uint8_t)(b0 >> (8 * k));
            dst[16 * p + 2 * k + 1] = (uint8_t)(b1 >> (8 * k));
        }
    }
}

/* 32 groups of 8 items at a time (zf_bitgroups_avx2), each stored as the group's 8
   plane bytes. */
__attribute__((target("avx2")))
static void zf_bitplanes_avx2(const uint8_t* const* src, uint8_t* planes, size_t n,
                              size_t ts) {
    size_t m = n / 8, j, p, i;
    for (j = 0; j < ts; j++) {
        uint8_t* out = planes + j * n;
        for (p = 0; p + 32 <= m; p += 32) {
            __m256i y[8];
            zf_bitgroups_avx2(src[j], m, p, y);
            for (i = 0; i < 8; i++) {
                _mm_storeu_si128((__m128i*)(out + 8 * (p + 2 * i)), _mm256_castsi256_si128(y[i]));
                _mm_storeu_si128((__m128i*)(out + 8 * (p + 16 + 2 * i)),
                                 _mm256_extracti128_si256(y[i], 1));
            }
        }
    }
    zf_bitplanes_from(src, planes, n, ts, m - m % 32);  /* the groups after the last 32 */
}

/* dst[i * ts + j] = planes[j][i], for ts 2, 4 and 8 with AVX2 */
__attribute__((target("avx2")))
static void zf_interleave_avx2(const uint8_t* const* planes, uint8_t* dst, size_t n,
                               size_t ts) {
    size_t i = 0;
    if (ts == 2) {
        for (; i + 32 <= n; i += 32) {
            __m256i p0 = _mm256_loadu_si256((const __m256i*)(planes[0] + i));
            __m256i p1 = _mm256_loadu_si256((const __m256i*)(planes[1] + i));
            __m256i lo = _mm256_unpacklo_epi8(p0, p1), hi = _mm256_unpackhi_epi8(p0, p1);
            _mm256_storeu_si256((__m256i*)(dst + 2 * i), _mm256_permute2x128_si256(lo, hi, 0x20));
            _mm256_storeu_si256((__m256i*)(dst + 2 * i + 32),
                                _mm256_permute2x128_si256(lo, hi, 0x31));
        }
    } else if (ts == 4) {
        for (; i + 32 <= n; i += 32) {
            __m256i p0 = _mm256_loadu_si256((const __m256i*)(planes[0] + i));
            __m256i p1 = _mm256_loadu_si256((const __m256i*)(planes[1] + i));
            __m256i p2 = _mm256_loadu_si256((const __m256i*)(planes[2] + i));
            __m256i p3 = _mm256_loadu_si256((const __m256i*)(planes[3] + i));
            __m256i a0 = _mm256_unpacklo_epi8(p0, p1), a1 = _mm256_unpackhi_epi8(p0, p1);
            __m256i a2 = _mm256_unpacklo_epi8(p2, p3), a3 = _mm256_unpackhi_epi8(p2, p3);
            /* per half: items 0-3, 4-7, 8-11, 12-15 */
            __m256i b0 = _mm256_unpacklo_epi16(a0, a2), b1 = _mm256_unpackhi_epi16(a0, a2);
            __m256i b2 = _mm256_unpacklo_epi16(a1, a3), b3 = _mm256_unpackhi_epi16(a1, a3);
            uint8_t* o = dst + 4 * i;
            _mm256_storeu_si256((__m256i*)o, _mm256_permute2x128_si256(b0, b1, 0x20));
            _mm256_storeu_si256((__m256i*)(o + 32), _mm256_permute2x128_si256(b2, b3, 0x20));
            _mm256_storeu_si256((__m256i*)(o + 64), _mm256_permute2x128_si256(b0, b1, 0x31));
            _mm256_storeu_si256((__m256i*)(o + 96), _mm256_permute2x128_si256(b2, b3, 0x31));
        }
    } else if (ts == 8) {
        for (; i + 32 <= n; i += 32) {
            __m256i p[8], c[8];
            int k;
            uint8_t* o = dst + 8 * i;
            for (k = 0; k < 8; k++)
                p[k] = _mm256_loadu_si256((const __m256i*)(planes[k] + i));
            zf_gather8_avx2(p, c);
            /* c[k]: items 2k, 2k + 1 (low half) and 16 + 2k, 17 + 2k (high half) */
            for (k = 0; k < 8; k += 2) {
                _mm256_storeu_si256((__m256i*)(o + 16 * k),
                                    _mm256_permute2x128_si256(c[k], c[k + 1], 0x20));
                _mm256_storeu_si256((__m256i*)(o + 128 + 16 * k),
                                    _mm256_permute2x128_si256(c[k], c[k + 1], 0x31));
            }
        }
    }
    if (i < n) {  /* the tail, one item at a time */
        size_t j, t;
        for (t = i; t < n; t++)
            for (j = 0; j < ts; j++)
                dst[t * ts + j] = planes[j][t];
    }
}
#endif

static void zf_interleave(const uint8_t* const* planes, uint8_t* dst, size_t n, size_t ts,
                          int isa) {
#ifdef ZF_SHUFFLE_AVX2
    if (isa == ZF_ISA_AVX2 && (ts == 2 || ts == 4 || ts == 8)) {
        zf_interleave_avx2(planes, dst, n, ts);
        return;
    }
#endif
    (void)isa;
    zf_interleave_scalar(planes, dst, n, ts);
}

/* Undo the byte shuffle of a block of `blocksize` bytes of items of `ts` bytes: plane j
   (n = blocksize / ts bytes) at planes[j], the blocksize % ts bytes after them at rest. */
static void zf_unshuffle(const uint8_t* const* planes, const uint8_t* rest, uint8_t* dst,
                         size_t blocksize, size_t ts, int isa) {
    size_t n = blocksize / ts;
    zf_interleave(planes, dst, n, ts, isa);
    memcpy(dst + n * ts, rest, blocksize - n * ts);
}

/* Undo the bit shuffle of a block of `blocksize` bytes of items of `ts` bytes: the 8
   rows of byte j (n / 8 bytes each, n = blocksize / ts) at rows[j], the bytes after the
   n * ts at rest; `tmp` (n * ts bytes) holds the byte planes in between.  A block of n
   items, n not a multiple of 8, is copied as it is (rows[j]: its bytes [j n, (j+1) n)). */
static void zf_bitunshuffle(const uint8_t* const* rows, const uint8_t* rest, uint8_t* dst,
                            uint8_t* tmp, size_t blocksize, size_t ts, int isa) {
    size_t n = blocksize / ts, j;
    const uint8_t* planes[256];
    memcpy(dst + n * ts, rest, blocksize - n * ts);
    if (n % 8 != 0) {
        for (j = 0; j < ts; j++)
            memcpy(dst + j * n, rows[j], n);
        return;
    }
#ifdef ZF_SHUFFLE_AVX2
    if (isa == ZF_ISA_AVX2 && ts == 2) {
        zf_bitunshuffle2_avx2(rows[0], rows[1], dst, n);
        return;
    }
#endif
    if (ts == 1)
        tmp = dst;  /* one plane: it is the block */
#ifdef ZF_SHUFFLE_AVX2
    if (isa == ZF_ISA_AVX2)
        zf_bitplanes_avx2(rows, tmp, n, ts);
    else
#endif
        zf_bitplanes_scalar(rows, tmp, n, ts);
    if (ts > 1) {
        for (j = 0; j < ts; j++)
            planes[j] = tmp + j * n;
        zf_interleave(planes, dst, n, ts, isa);
    }
}

/* ---- the filters themselves (compression): c-blosc 1.x's shuffle and bitshuffle ---- */

/* planes[j * n + i] = src[i * ts + j], for the n whole items of src */
static void zf_planes_scalar(const uint8_t* src, uint8_t* planes, size_t n, size_t ts) {
    size_t i, j;
    if (ts == 1) {
        memcpy(planes, src, n);
        return;
    }
    for (j = 0; j < ts; j++) {
        const uint8_t* in = src + j;
        uint8_t* plane = planes + j * n;
        for (i = 0; i < n; i++)
            plane[i] = in[i * ts];
    }
}

/* the 8 rows of the first `left` bytes (a multiple of 8) of a byte plane: row k, byte
   g0 + g (rows tm bytes apart) = bit k of the plane's bytes 8g to 8g + 7 */
static void zf_bitrows_tail(const uint8_t* plane, uint8_t* rows, size_t tm, size_t g0,
                            size_t left) {
    size_t g, k;
    for (g = 0; g < left / 8; g++) {
        uint64_t x = 0, y;
        for (k = 0; k < 8; k++)
            x |= (uint64_t)plane[8 * g + k] << (8 * k);
        y = zf_transpose8(x);
        for (k = 0; k < 8; k++)
            rows[k * tm + g0 + g] = (uint8_t)(y >> (8 * k));
    }
}

#ifdef ZF_SHUFFLE_AVX2
/* bits k of the 32 bytes of x, byte t at bit t (the MSB of each byte after a shift by
   7 - k within 16-bit lanes: a low byte's bits that cross into its high byte land below
   bit 7 of it) */
__attribute__((target("avx2")))
static inline uint32_t zf_bitrow32(__m256i x, int k) {
    return (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(x, 7 - k));
}

__attribute__((target("avx2")))
static inline void zf_store_bitrows(__m256i x, uint8_t* rows, size_t m, size_t g) {
    uint32_t r;
    int k;
    for (k = 0; k < 8; k++) {
        r = zf_bitrow32(x, k);
        memcpy(rows + k * m + g, &r, 4);
    }
}

/* the two byte planes of 32 items of 2 bytes at src */
__attribute__((target("avx2")))
static inline void zf_split2_avx2(const uint8_t* src, __m256i* p0, __m256i* p1) {
    const __m256i even_odd = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                              0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    __m256i a = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)src), even_odd);
    __m256i b = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)(src + 32)), even_odd);
    a = _mm256_permute4x64_epi64(a, 0xD8);  /* items 0-15: byte 0 | byte 1 */
    b = _mm256_permute4x64_epi64(b, 0xD8);  /* items 16-31 */
    *p0 = _mm256_permute2x128_si256(a, b, 0x20);
    *p1 = _mm256_permute2x128_si256(a, b, 0x31);
}

/* the four byte planes of 32 items of 4 bytes at src */
__attribute__((target("avx2")))
static inline void zf_split4_avx2(const uint8_t* src, __m256i* p) {
    const __m256i by_byte = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                             0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m256i pairs = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i v[4], lo01, hi01, lo23, hi23;
    int k;
    for (k = 0; k < 4; k++)  /* 64-bit lane j of v[k]: byte j of items 8k to 8k + 7 */
        v[k] = _mm256_permutevar8x32_epi32(
            _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)(src + 32 * k)), by_byte),
            pairs);
    lo01 = _mm256_unpacklo_epi64(v[0], v[1]);  /* bytes 0 | 2 of items 0-15 */
    hi01 = _mm256_unpackhi_epi64(v[0], v[1]);  /* bytes 1 | 3 */
    lo23 = _mm256_unpacklo_epi64(v[2], v[3]);
    hi23 = _mm256_unpackhi_epi64(v[2], v[3]);
    p[0] = _mm256_permute2x128_si256(lo01, lo23, 0x20);
    p[1] = _mm256_permute2x128_si256(hi01, hi23, 0x20);
    p[2] = _mm256_permute2x128_si256(lo01, lo23, 0x31);
    p[3] = _mm256_permute2x128_si256(hi01, hi23, 0x31);
}

/* planes[j * n + i] = src[i * ts + j]: ts 2 and 4 32 items at a time, the rest scalar */
__attribute__((target("avx2")))
static void zf_planes_avx2(const uint8_t* src, uint8_t* planes, size_t n, size_t ts) {
    size_t i = 0, j;
    if (ts == 2) {
        for (; i + 32 <= n; i += 32) {
            __m256i p0, p1;
            zf_split2_avx2(src + 2 * i, &p0, &p1);
            _mm256_storeu_si256((__m256i*)(planes + i), p0);
            _mm256_storeu_si256((__m256i*)(planes + n + i), p1);
        }
    } else if (ts == 4) {
        for (; i + 32 <= n; i += 32) {
            __m256i p[4];
            zf_split4_avx2(src + 4 * i, p);
            for (j = 0; j < 4; j++)
                _mm256_storeu_si256((__m256i*)(planes + j * n + i), p[j]);
        }
    } else {
        zf_planes_scalar(src, planes, n, ts);
        return;
    }
    for (; i < n; i++)  /* the tail, one item at a time */
        for (j = 0; j < ts; j++)
            planes[j * n + i] = src[i * ts + j];
}

/* Rows are n / 8 bytes apart, so storing 4 bytes into each of 8 (or 16) rows at a time
   hits as many lines of one cache set: the rows of ZF_TILE items are made in a small
   tile first and then copied out, ZF_TILE / 8 bytes per row. */
#define ZF_TILE 1024

/* copy the tile's rows (tm bytes each, tm bytes apart) out to rows m bytes apart, from
   byte g on: 32 bytes at a time (memcpy of a size known only at run time becomes
   `rep movsq` here, which costs as much as making the rows) */
__attribute__((target("avx2")))
static inline void zf_tile_out(const uint8_t* tile, size_t nrows, size_t tm, uint8_t* rows,
                               size_t m, size_t g) {
    size_t k, b;
    for (k = 0; k < nrows; k++) {
        const uint8_t* from = tile + k * tm;
        uint8_t* to = rows + k * m + g;
        for (b = 0; b + 32 <= tm; b += 32)
            _mm256_storeu_si256((__m256i*)(to + b), _mm256_loadu_si256((const __m256i*)(from + b)));
        for (; b < tm; b++)
            to[b] = from[b];
    }
}

/* the 8 rows of the byte plane `plane` (n items, a multiple of 8), n / 8 bytes apart */
__attribute__((target("avx2")))
static void zf_bitrows_avx2(const uint8_t* plane, uint8_t* rows, size_t n) {
    uint8_t tile[8 * ZF_TILE / 8];
    size_t m = n / 8, i, t;
    for (i = 0; i < n; i += ZF_TILE) {
        size_t count = n - i < ZF_TILE ? n - i : ZF_TILE, tm = count / 8;
        for (t = 0; t + 32 <= count; t += 32)
            zf_store_bitrows(_mm256_loadu_si256((const __m256i*)(plane + i + t)), tile, tm, t / 8);
        zf_bitrows_tail(plane + i + t, tile, tm, t / 8, count - t);  /* the last groups */
        zf_tile_out(tile, 8, tm, rows, m, i / 8);
    }
}

/* items of 2 bytes: the two planes of 32 items split in registers and their rows
   made straight away (no planes in between) */
__attribute__((target("avx2")))
static void zf_bitshuffle2_avx2(const uint8_t* src, uint8_t* rows, size_t n) {
    uint8_t tile[16 * ZF_TILE / 8];
    uint8_t tail[2 * 32];
    size_t m = n / 8, i, t, k;
    for (i = 0; i < n; i += ZF_TILE) {
        size_t count = n - i < ZF_TILE ? n - i : ZF_TILE, tm = count / 8;
        const uint8_t* in = src + 2 * i;
        for (t = 0; t + 32 <= count; t += 32) {
            __m256i p0, p1;
            zf_split2_avx2(in + 2 * t, &p0, &p1);
            zf_store_bitrows(p0, tile, tm, t / 8);
            zf_store_bitrows(p1, tile + 8 * tm, tm, t / 8);
        }
        if (t < count) {  /* the last groups of 8 (< 32 items): planes of their own */
            size_t left = count - t;
            for (k = 0; k < left; k++) {
                tail[k] = in[2 * (t + k)];
                tail[32 + k] = in[2 * (t + k) + 1];
            }
            zf_bitrows_tail(tail, tile, tm, t / 8, left);
            zf_bitrows_tail(tail + 32, tile + 8 * tm, tm, t / 8, left);
        }
        zf_tile_out(tile, 16, tm, rows, m, i / 8);
    }
}
#endif

/* c-blosc's byte shuffle of a block of `blocksize` bytes of items of `ts` bytes into
   dst: the ts planes of n = blocksize / ts bytes, then the blocksize % ts bytes left */
static void zf_shuffle(const uint8_t* src, uint8_t* dst, size_t blocksize, size_t ts,
                       int isa) {
    size_t n = blocksize / ts;
#ifdef ZF_SHUFFLE_AVX2
    if (isa == ZF_ISA_AVX2)
        zf_planes_avx2(src, dst, n, ts);
    else
#endif
        zf_planes_scalar(src, dst, n, ts);
    (void)isa;
    memcpy(dst + n * ts, src + n * ts, blocksize - n * ts);
}

/* c-blosc's bit shuffle of a block into dst: the 8 rows of each byte (n / 8 bytes each)
   and the bytes after the n * ts; a block whose n is not a multiple of 8 is copied as it
   is.  `tmp` (n * ts bytes) holds the byte planes in between. */
static void zf_bitshuffle(const uint8_t* src, uint8_t* dst, uint8_t* tmp, size_t blocksize,
                          size_t ts, int isa) {
    size_t n = blocksize / ts, j;
    if (n % 8 != 0) {
        memcpy(dst, src, blocksize);
        return;
    }
    memcpy(dst + n * ts, src + n * ts, blocksize - n * ts);
#ifdef ZF_SHUFFLE_AVX2
    if (isa == ZF_ISA_AVX2) {
        if (ts == 2) {
            zf_bitshuffle2_avx2(src, dst, n);
        } else {
            const uint8_t* planes = src;
            if (ts > 1) {
                zf_planes_avx2(src, tmp, n, ts);
                planes = tmp;
            }
            for (j = 0; j < ts; j++)
                zf_bitrows_avx2(planes + j * n, dst + j * n, n);
        }
        return;
    }
#endif
    (void)isa;
    if (ts > 1)
        zf_planes_scalar(src, tmp, n, ts);
    for (j = 0; j < ts; j++)
        zf_bitrows_tail((ts > 1 ? tmp : src) + j * n, dst + j * n, n / 8, 0, n);
}

/* the ts planes (or rows of each byte) of a filtered block held whole at `block` */
static void zf_plane_starts(const uint8_t* block, size_t blocksize, size_t ts,
                            const uint8_t** starts) {
    size_t n = blocksize / ts, j;
    for (j = 0; j < ts; j++)
        starts[j] = block + j * n;
}

#endif
