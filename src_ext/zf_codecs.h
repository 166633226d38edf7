/* The codec libraries zarrfast's batched decoder links at build time.
 *
 * setup.py defines ZF_LINK_ZSTD and/or ZF_LINK_BLOSC when it finds the library
 * (pkg-config, or ZARRFAST_ZSTD_ROOT / ZARRFAST_BLOSC_ROOT) and links it into
 * _decode; these functions then hand over the linked functions' addresses in the
 * order bind_zstd / bind_blosc take them (and _encode's bind_zstd the compression
 * functions).  Without the library they report nothing
 * linked (0) and zarrfast.kernels falls back to finding the functions with ctypes. */
#ifndef ZF_CODECS_H
#define ZF_CODECS_H
#include <stddef.h>
#include <stdint.h>

#ifdef ZF_LINK_ZSTD
#include <zstd.h>
static int zf_linked_zstd(size_t *fns) {
    fns[0] = (size_t)(uintptr_t)&ZSTD_createDCtx;
    fns[1] = (size_t)(uintptr_t)&ZSTD_freeDCtx;
    fns[2] = (size_t)(uintptr_t)&ZSTD_decompressDCtx;
    fns[3] = (size_t)(uintptr_t)&ZSTD_isError;
    fns[4] = (size_t)(uintptr_t)&ZSTD_getFrameContentSize;
    fns[5] = (size_t)(uintptr_t)&ZSTD_versionNumber;
    return 1;
}
/* its compression functions, in the order _encode.bind_zstd takes them (used where
   numcodecs' zstd does not export them) */
static inline int zf_linked_zstd_compress(size_t *fns) {
    fns[0] = (size_t)(uintptr_t)&ZSTD_createCCtx;
    fns[1] = (size_t)(uintptr_t)&ZSTD_freeCCtx;
    fns[2] = (size_t)(uintptr_t)&ZSTD_CCtx_setParameter;
    fns[3] = (size_t)(uintptr_t)&ZSTD_compress2;
    fns[4] = (size_t)(uintptr_t)&ZSTD_compressBound;
    fns[5] = (size_t)(uintptr_t)&ZSTD_isError;
    fns[6] = (size_t)(uintptr_t)&ZSTD_versionNumber;
    return 1;
}
#else
static int zf_linked_zstd(size_t *fns) { (void)fns; return 0; }
static inline int zf_linked_zstd_compress(size_t *fns) { (void)fns; return 0; }
#endif

#ifdef ZF_LINK_BLOSC
#include <blosc.h>
static int zf_linked_blosc(size_t *fns, const char **version) {
    fns[0] = (size_t)(uintptr_t)&blosc_cbuffer_validate;
    fns[1] = (size_t)(uintptr_t)&blosc_decompress_ctx;
    fns[2] = (size_t)(uintptr_t)&blosc_getitem;
    *version = blosc_get_version_string();
    return 1;
}
#else
static int zf_linked_blosc(size_t *fns, const char **version) {
    (void)fns; (void)version; return 0;
}
#endif

/* LZ4, for the blocks of the blosc frames _decode undoes itself (_blosc_frame);
   without it the LZ4 of numcodecs' c-blosc does (bind_lz4_decompress, found with
   ctypes at import), and where that is missing too c-blosc decodes those frames. */
#ifdef ZF_LINK_LZ4
#include <lz4.h>
static int zf_linked_lz4(void) { return LZ4_versionNumber(); }
static int zf_lz4_decompress(const char* src, char* dst, int size, int capacity) {
    return LZ4_decompress_safe(src, dst, size, capacity);
}
#else
static int zf_linked_lz4(void) { return 0; }
static int zf_lz4_decompress(const char* src, char* dst, int size, int capacity) {
    (void)src; (void)dst; (void)size; (void)capacity; return -1;
}
#endif

#endif
