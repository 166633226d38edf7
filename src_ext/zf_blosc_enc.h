/* Compressing one buffer into a blosc1 frame of LZ4 streams: what c-blosc 1.x's
 * blosc_compress_ctx does with one internal thread (blosc.c: compute_blocksize,
 * write_compression_header, serial_blosc, blosc_c), with the shuffle filters of
 * zf_shuffle.h and an LZ4 compressor given by the caller.
 *
 * The bytes are c-blosc's when the LZ4 is the one that c-blosc calls: zarrfast binds
 * the LZ4_compress_fast_extState of numcodecs' own c-blosc extension (the library
 * numcodecs compresses with), and the tests compare every frame with c-blosc's.
 *
 * A frame (little-endian int32 fields):
 *   [0] format version 2, [1] LZ4 format version 1, [2] flags, [3] typesize,
 *   [4] nbytes, [8] blocksize, [12] the frame's size, [16] the start of each block,
 *   then each block: one stream per byte of an item (when split) or one, each an int32
 *   size and the LZ4 bytes, or the filtered bytes as they are when LZ4 cannot shrink
 *   them.  Flags: 0x01 shuffle, 0x04 bitshuffle, 0x02 copied whole (after the 16-byte
 *   header, nothing compressed), 0x10 not split, bits 5-7 the compressor (LZ4: 1). */
#ifndef ZF_BLOSC_ENC_H
#define ZF_BLOSC_ENC_H
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include "zf_shuffle.h"

/* LZ4_compress_fast_extState(state, src, dst, srcSize, dstCapacity, acceleration) */
typedef int (*zf_lz4_compress_fn)(void*, const char*, char*, int, int, int);

enum {
    ZF_BLOSC_OVERHEAD = 16,       /* BLOSC_MAX_OVERHEAD: the header */
    ZF_BLOSC_MIN_BUFFER = 128,    /* MIN_BUFFERSIZE */
    ZF_BLOSC_SPLITS = 16,         /* MAX_SPLITS */
    ZF_BLOSC_L1 = 32 * 1024,      /* L1 */
    ZF_BLOSC_MAX_TYPE = 255,      /* BLOSC_MAX_TYPESIZE */
    ZF_BLOSC_FLAG_SHUFFLE = 0x01,
    ZF_BLOSC_FLAG_MEMCPYED = 0x02,
    ZF_BLOSC_FLAG_BITSHUFFLE = 0x04,
    ZF_BLOSC_FLAG_NOSPLIT = 0x10,
    ZF_BLOSC_LZ4_CODE = 1         /* the compressor's code in bits 5-7 of the flags */
};
#define ZF_BLOSC_MAX_BLOCK ((INT_MAX - ZF_BLOSC_MAX_TYPE * 4) / 3)

static inline void zf_put32(uint8_t* p, int32_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}

/* split_block in c-blosc's default mode (BLOSC_FORWARD_COMPAT_SPLIT), for LZ4 */
static inline int zf_blosc_splits(int32_t typesize, int32_t blocksize) {
    return typesize <= ZF_BLOSC_SPLITS && blocksize / typesize >= ZF_BLOSC_MIN_BUFFER;
}

/* compute_blocksize for LZ4 (not a high-compression-ratio codec) */
static int32_t zf_blosc_blocksize(int clevel, int32_t typesize, int32_t nbytes,
                                  int32_t forced) {
    int32_t bs = nbytes;
    static const int32_t scale[10] = {0, 0, 1, 2, 4, 4, 8, 8, 8, 8};  /* x / 4 and x / 2 apart */
    if (nbytes < typesize)
        return 1;
    if (forced) {
        bs = forced < ZF_BLOSC_MIN_BUFFER ? ZF_BLOSC_MIN_BUFFER : forced;
        if (bs > ZF_BLOSC_MAX_BLOCK)
            bs = ZF_BLOSC_MAX_BLOCK;
    } else if (nbytes >= ZF_BLOSC_L1) {
        bs = clevel == 0 ? ZF_BLOSC_L1 / 4 : clevel == 1 ? ZF_BLOSC_L1 / 2
                                                        : ZF_BLOSC_L1 * scale[clevel];
    }
    if (clevel > 0 && zf_blosc_splits(typesize, bs)) {
        if (bs > (1 << 18))
            bs = 1 << 18;
        bs *= typesize;
        if (bs < (1 << 16))
            bs = 1 << 16;
        if (bs > (1 << 20))
            bs = 1 << 20;
    }
    if (bs > nbytes)
        bs = nbytes;
    if (bs > typesize)
        bs = bs / typesize * typesize;
    return bs;
}

/* blosc_c: one block filtered (into tmp) and compressed at dest + ntbytes; the frame's
   size after it, 0 when it does not fit in destsize (the frame is then copied whole),
   or -1 when LZ4 fails */
static int64_t zf_blosc_block(const uint8_t* src, int32_t bsize, int leftover, int flags,
                              int32_t typesize, int accel, uint8_t* dest, int64_t ntbytes,
                              int64_t destsize, uint8_t* tmp, uint8_t* tmp2,
                              zf_lz4_compress_fn lz4, void* state, int isa) {
    const uint8_t* in = src;
    int32_t nsplits, neblock, j;
    if ((flags & ZF_BLOSC_FLAG_SHUFFLE) && typesize > 1) {
        zf_shuffle(src, tmp, (size_t)bsize, (size_t)typesize, isa);
        in = tmp;
    } else if ((flags & ZF_BLOSC_FLAG_BITSHUFFLE) && bsize >= typesize) {
        zf_bitshuffle(src, tmp, tmp2, (size_t)bsize, (size_t)typesize, isa);
        in = tmp;
    }
    nsplits = !(flags & ZF_BLOSC_FLAG_NOSPLIT) && !leftover ? typesize : 1;
    neblock = bsize / nsplits;
    for (j = 0; j < nsplits; j++) {
        int64_t maxout = neblock;
        int cbytes;
        uint8_t* size_at = dest + ntbytes;
        ntbytes += 4;
        if (ntbytes + maxout > destsize) {
            maxout = destsize - ntbytes;
            if (maxout <= 0)
                return 0;
        }
        cbytes = lz4(state, (const char*)(in + (int64_t)j * neblock), (char*)(dest + ntbytes),
                     neblock, (int)maxout, accel);
        if (cbytes < 0 || cbytes > maxout)
            return -1;
        if (cbytes == 0 || cbytes == neblock) {  /* stored as it is */
            if (ntbytes + neblock > destsize)
                return 0;
            memcpy(dest + ntbytes, in + (int64_t)j * neblock, (size_t)neblock);
            cbytes = neblock;
        }
        zf_put32(size_at, cbytes);
        ntbytes += cbytes;
    }
    return ntbytes;
}

/* Compress the `nbytes` bytes at src (1 <= nbytes <= INT_MAX - 16) as c-blosc's
   blosc_compress_ctx(clevel, doshuffle, typesize, nbytes, src, dest, nbytes + 16, "lz4",
   forced_blocksize, 1) does, into dest (nbytes + 16 bytes).  tmp and tmp2: blocksize
   bytes each (zf_blosc_blocksize).  Returns the frame's size, or -1 when LZ4 fails. */
static int64_t zf_blosc_encode_lz4(const uint8_t* src, int32_t nbytes, int clevel,
                                   int doshuffle, int32_t typesize, int32_t forced_blocksize,
                                   uint8_t* dest, uint8_t* tmp, uint8_t* tmp2,
                                   zf_lz4_compress_fn lz4, void* state, int isa) {
    int64_t destsize = (int64_t)nbytes + ZF_BLOSC_OVERHEAD, ntbytes;
    int32_t bs, nblocks, leftover, b;
    int flags = 0;
    if (typesize > ZF_BLOSC_MAX_TYPE)
        typesize = 1;  /* (as c-blosc: a stream of bytes) */
    bs = zf_blosc_blocksize(clevel, typesize, nbytes, forced_blocksize);
    nblocks = nbytes / bs;
    leftover = nbytes % bs;
    if (leftover > 0)
        nblocks++;
    if (clevel == 0 || nbytes < ZF_BLOSC_MIN_BUFFER)
        flags |= ZF_BLOSC_FLAG_MEMCPYED;
    if (doshuffle == 1)
        flags |= ZF_BLOSC_FLAG_SHUFFLE;
    else if (doshuffle == 2)
        flags |= ZF_BLOSC_FLAG_BITSHUFFLE;
    if (!zf_blosc_splits(typesize, bs))
        flags |= ZF_BLOSC_FLAG_NOSPLIT;
    flags |= ZF_BLOSC_LZ4_CODE << 5;
    dest[0] = 2;
    dest[1] = 1;
    dest[3] = (uint8_t)typesize;
    zf_put32(dest + 4, nbytes);
    zf_put32(dest + 8, bs);
    ntbytes = 0;
    if (!(flags & ZF_BLOSC_FLAG_MEMCPYED)) {
        ntbytes = ZF_BLOSC_OVERHEAD + 4 * (int64_t)nblocks;
        for (b = 0; b < nblocks; b++) {
            int last = b == nblocks - 1 && leftover > 0;
            zf_put32(dest + ZF_BLOSC_OVERHEAD + 4 * b, (int32_t)ntbytes);
            ntbytes = zf_blosc_block(src + (int64_t)b * bs, last ? leftover : bs, last, flags,
                                     typesize, 10 - clevel, dest, ntbytes, destsize, tmp,
                                     tmp2, lz4, state, isa);
            if (ntbytes <= 0)
                break;
        }
        if (ntbytes < 0)
            return -1;
        if (ntbytes == 0)  /* it does not shrink: the last chance, copied whole */
            flags |= ZF_BLOSC_FLAG_MEMCPYED;
    }
    if (flags & ZF_BLOSC_FLAG_MEMCPYED) {
        memcpy(dest + ZF_BLOSC_OVERHEAD, src, (size_t)nbytes);
        ntbytes = destsize;
    }
    dest[2] = (uint8_t)flags;
    zf_put32(dest + 12, (int32_t)ntbytes);
    return ntbytes;
}

#endif
