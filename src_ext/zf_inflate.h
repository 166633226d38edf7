/* One gzip member or zlib stream decoded into a buffer of exactly the chunk's size
 * (ChunkDecoder "gzip" / "zlib"), with the functions of one of two libraries given as
 * pointers (bound by zarrfast.kernels with ctypes; no headers needed at build time):
 *
 *   libdeflate  libdeflate_{gzip,zlib}_decompress_ex with one decompressor per thread
 *               (libdeflate.so.0: Debian's libdeflate0, which libtiff depends on);
 *   zlib        inflate (the zlib Python's own zlib module uses, as zf_encode.h finds
 *               deflate), one z_stream per thread, reset for each chunk.
 *
 * Either accepts exactly what the codecs' own decode (zlib's inflate through Python's
 * zlib module) decodes to the same bytes, or reports a failure, after which the caller
 * decodes the chunk with the codec (which says what is wrong, or decodes what only it
 * takes): a chunk is decoded here only when it is one gzip member / zlib stream with its
 * checksum and (gzip) size right, that ends with the stored bytes and decodes to exactly
 * the chunk's size.  Multi-member gzip, trailing bytes (zero padding too), a header CRC
 * (FHCRC: libdeflate skips it, zlib checks it) and chunks of 4 GiB or more (stored or
 * decoded: zlib's counters are 32 bits) are left to the caller, by both libraries.
 *
 * A thread's state (`state`, of library `kind`) is made on first use and replaced when
 * the library chosen changes (zf_inflate_chunk); zf_inflater_free lets it go. */
#ifndef ZF_INFLATE_H
#define ZF_INFLATE_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zf_encode.h" /* zf_z_stream */

enum { ZF_INFLATE_NONE = 0, ZF_INFLATE_LIBDEFLATE = 1, ZF_INFLATE_ZLIB = 2 };

typedef void* (*zf_ld_alloc_fn)(void);
typedef void (*zf_ld_free_fn)(void*);
/* libdeflate_{gzip,zlib}_decompress_ex: 0 LIBDEFLATE_SUCCESS, else a failure */
typedef int (*zf_ld_decompress_fn)(void*, const void*, size_t, void*, size_t, size_t*,
                                   size_t*);
typedef int (*zf_inflate_init2_fn)(zf_z_stream*, int, const char*, int);
typedef int (*zf_inflate_fn)(zf_z_stream*, int);
typedef int (*zf_inflate_end_fn)(zf_z_stream*);
typedef int (*zf_inflate_reset2_fn)(zf_z_stream*, int);

typedef struct {
    zf_ld_alloc_fn alloc;
    zf_ld_free_fn free;
    zf_ld_decompress_fn gzip;
    zf_ld_decompress_fn zlib;
    zf_inflate_init2_fn init2;
    zf_inflate_fn inflate;
    zf_inflate_end_fn end;
    zf_inflate_reset2_fn reset2;
    const char* version; /* zlibVersion(), for inflateInit2_ */
} zf_inflate_api;

/* written once each by the bind functions (at import), then only read */
static zf_inflate_api zf_inflate_fns;

enum { ZF_GZIP_FHCRC = 0x02, ZF_INFLATE_WBITS_GZIP = 31, ZF_INFLATE_WBITS_ZLIB = 15 };

static void zf_inflater_free(void* state, int kind) {
    if (state == NULL) return;
    if (kind == ZF_INFLATE_LIBDEFLATE) {
        zf_inflate_fns.free(state);
    } else if (kind == ZF_INFLATE_ZLIB) {
        zf_inflate_fns.end((zf_z_stream*)state);
        free(state);
    }
}

/* A new state of library `kind`, or NULL (out of memory, or refused). */
static void* zf_inflater_new(int kind) {
    zf_z_stream* strm;
    if (kind == ZF_INFLATE_LIBDEFLATE) return zf_inflate_fns.alloc();
    if (kind != ZF_INFLATE_ZLIB) return NULL;
    strm = (zf_z_stream*)calloc(1, sizeof(zf_z_stream));
    if (strm == NULL) return NULL;
    if (zf_inflate_fns.init2(strm, ZF_INFLATE_WBITS_GZIP, zf_inflate_fns.version,
                             (int)sizeof(zf_z_stream)) != ZF_Z_OK) {
        free(strm);
        return NULL;
    }
    return strm;
}

/* Decode `src` (`size` bytes: one gzip member when `gzip`, else one zlib stream) into
   `dst` (`n` bytes) with library `kind` (ZF_INFLATE_NONE: fails) and the thread's
   `*state` (made, or replaced when of another library, here).  1 when it is one member /
   stream that ends where `src` does, with its checks right, and decodes to exactly `n`
   bytes; else 0 (nothing beyond `n` bytes of `dst` written). */
static int zf_inflate_chunk(void** state, int* have, int kind, int gzip, const uint8_t* src,
                            size_t size, uint8_t* dst, size_t n) {
    size_t used = 0, got = 0;
    zf_z_stream* strm;
    int rc;
    if (kind == ZF_INFLATE_NONE || size > 0xffffffffu || n > 0xffffffffu) return 0;
    if (gzip && (size < 10 || (src[3] & ZF_GZIP_FHCRC))) return 0;
    if (*state == NULL || *have != kind) {
        zf_inflater_free(*state, *have);
        *state = zf_inflater_new(kind);
        *have = *state != NULL ? kind : ZF_INFLATE_NONE;
        if (*state == NULL) return 0;
    }
    if (kind == ZF_INFLATE_LIBDEFLATE) {
        rc = (gzip ? zf_inflate_fns.gzip : zf_inflate_fns.zlib)(*state, src, size, dst, n,
                                                                &used, &got);
        return rc == 0 && used == size && got == n;
    }
    strm = (zf_z_stream*)*state;
    if (zf_inflate_fns.reset2(strm, gzip ? ZF_INFLATE_WBITS_GZIP : ZF_INFLATE_WBITS_ZLIB)
            != ZF_Z_OK)
        return 0;
    strm->next_in = src;
    strm->avail_in = (unsigned)size;
    strm->next_out = dst;
    strm->avail_out = (unsigned)n;
    rc = zf_inflate_fns.inflate(strm, ZF_Z_FINISH);
    return rc == ZF_Z_STREAM_END && strm->avail_in == 0 && strm->total_out == (unsigned long)n;
}

#endif
