/* Undoing c-blosc 1.x's shuffle filters on one decompressed block.
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
 * Both undo into `dst` (never overlapping `src`).  Each has a scalar version and,
 * on x86-64 with GCC or clang, an AVX2 one chosen at run time (`zf_shuffle_isa`);
 * the two give the same bytes (tests/kernels/test_kernel_blosc_frames.py).
 * The NumPy twin is zarrfast.kernels.reference.blosc_unshuffle / blosc_bitunshuffle. */
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

/* the ts planes (or rows of each byte) of a filtered block held whole at `block` */
static void zf_plane_starts(const uint8_t* block, size_t blocksize, size_t ts,
                            const uint8_t** starts) {
    size_t n = blocksize / ts, j;
    for (j = 0; j < ts; j++)
        starts[j] = block + j * n;
}

#endif
