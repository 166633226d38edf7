/* One chunk compressed into a zstd frame, a gzip member or a zlib stream, with the
 * libraries' functions given as pointers (bound by zarrfast.kernels: numcodecs' zstd
 * and the zlib Python's own zlib module uses, found with ctypes; or a zstd linked at
 * build time).
 *
 * zlib's z_stream is declared here (zf_z_stream), field for field as zlib.h has had it
 * since 1.0, so that a build without zlib's headers compiles: deflateInit2_ refuses a
 * stream of another size (Z_VERSION_ERROR), which the binding checks once.
 *
 * The bytes are numcodecs' bytes:
 *   zstd  ZSTD_compress2 of a context with the compression level and the checksum flag
 *         set (numcodecs.zstd.compress), into ZSTD_compressBound(n) bytes;
 *   zlib  deflate, window 15, memory level 8, default strategy, in one Z_FINISH call
 *         (zlib.compress, which numcodecs.Zlib calls);
 *   gzip  the member gzip.GzipFile writes (numcodecs.GZip): 1f 8b 08, no flags, the
 *         modification time, XFL 2 for level 9 and 4 for level 1 (else 0), OS 255, the
 *         raw deflate stream (window -15, memory level 8), then the CRC-32 and the size
 *         modulo 2^32, little-endian. */
#ifndef ZF_ENCODE_H
#define ZF_ENCODE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* zstd */
typedef void* (*zf_zstd_create_cctx_fn)(void);
typedef size_t (*zf_zstd_free_cctx_fn)(void*);
typedef size_t (*zf_zstd_set_parameter_fn)(void*, int, int);
typedef size_t (*zf_zstd_compress2_fn)(void*, void*, size_t, const void*, size_t);
typedef size_t (*zf_zstd_bound_fn)(size_t);
typedef unsigned (*zf_zstd_is_error_fn)(size_t);

enum { ZF_ZSTD_C_LEVEL = 100, ZF_ZSTD_C_CHECKSUM = 201 };

/* zlib */
typedef struct {
    const unsigned char* next_in;
    unsigned avail_in;
    unsigned long total_in;
    unsigned char* next_out;
    unsigned avail_out;
    unsigned long total_out;
    const char* msg;
    void* state;
    void* zalloc;
    void* zfree;
    void* opaque;
    int data_type;
    unsigned long adler;
    unsigned long reserved;
} zf_z_stream;

typedef int (*zf_deflate_init2_fn)(zf_z_stream*, int, int, int, int, int, const char*, int);
typedef int (*zf_deflate_fn)(zf_z_stream*, int);
typedef int (*zf_deflate_end_fn)(zf_z_stream*);
typedef int (*zf_deflate_reset_fn)(zf_z_stream*);
typedef unsigned long (*zf_deflate_bound_fn)(zf_z_stream*, unsigned long);
typedef unsigned long (*zf_crc32_fn)(unsigned long, const unsigned char*, unsigned);

enum { ZF_Z_OK = 0, ZF_Z_STREAM_END = 1, ZF_Z_FINISH = 4, ZF_Z_DEFLATED = 8 };

typedef struct {
    zf_deflate_fn deflate;
    zf_deflate_reset_fn reset;
    zf_crc32_fn crc32;
} zf_deflate_api;

static inline void zf_le32(uint8_t* p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* the 10 bytes of gzip.GzipFile's header */
static inline void zf_gzip_header(uint8_t* p, int level, uint32_t mtime) {
    p[0] = 0x1f;
    p[1] = 0x8b;
    p[2] = 8;
    p[3] = 0;
    zf_le32(p + 4, mtime);
    p[8] = (uint8_t)(level == 9 ? 2 : level == 1 ? 4 : 0);
    p[9] = 0xff;
}

/* n bytes at src deflated by strm (initialised for this format, reset here) into dest
   (cap bytes), with gzip's header and trailer when gzip.  The size written, or -1 when
   deflate fails or dest is too small. */
static int64_t zf_deflate_chunk(const zf_deflate_api* api, zf_z_stream* strm, int gzip,
                                int level, uint32_t mtime, const uint8_t* src, int64_t n,
                                uint8_t* dest, int64_t cap) {
    int64_t head = gzip ? 10 : 0, tail = gzip ? 8 : 0;
    int rc;
    if (n > 0xffffffffLL || cap < head + tail || cap - head - tail > 0xffffffffLL)
        return -1;
    if (api->reset(strm) != ZF_Z_OK)
        return -1;
    strm->next_in = src;
    strm->avail_in = (unsigned)n;
    strm->next_out = dest + head;
    strm->avail_out = (unsigned)(cap - head - tail);
    rc = api->deflate(strm, ZF_Z_FINISH);
    if (rc != ZF_Z_STREAM_END)
        return -1;
    if (gzip) {
        int64_t body = (int64_t)(strm->next_out - dest);
        zf_gzip_header(dest, level, mtime);
        zf_le32(dest + body, (uint32_t)api->crc32(api->crc32(0, NULL, 0), src, (unsigned)n));
        zf_le32(dest + body + 4, (uint32_t)n);
        return body + 8;
    }
    return (int64_t)(strm->next_out - dest);
}

#endif
