/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as the crc32c codec and the
   crc32c package compute it: initial value and final xor 0xFFFFFFFF.

   zf_crc32c_init() fills the tables (call it once, with the GIL, before any
   zf_crc32c); zf_crc32c(p, n) is then safe from any thread.  Slicing by 8 with
   bytes loaded one at a time, so the result does not depend on the host's byte
   order.  Only shard indexes are checked with it (a few KiB per shard).

   Twin: the crc32c package (crc32c.crc32c). */
#ifndef ZF_CRC32C_H
#define ZF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

static uint32_t zf_crc32c_table[8][256];

static void zf_crc32c_init(void) {
    uint32_t n, c;
    int k;
    for (n = 0; n < 256; n++) {
        c = n;
        for (k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        zf_crc32c_table[0][n] = c;
    }
    for (n = 0; n < 256; n++) {
        c = zf_crc32c_table[0][n];
        for (k = 1; k < 8; k++) {
            c = zf_crc32c_table[0][c & 0xFF] ^ (c >> 8);
            zf_crc32c_table[k][n] = c;
        }
    }
}

static uint32_t zf_crc32c(const uint8_t* p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    while (n >= 8) {
        crc ^= (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16)
               | ((uint32_t)p[3] << 24);
        crc = zf_crc32c_table[7][crc & 0xFF] ^ zf_crc32c_table[6][(crc >> 8) & 0xFF]
              ^ zf_crc32c_table[5][(crc >> 16) & 0xFF] ^ zf_crc32c_table[4][crc >> 24]
              ^ zf_crc32c_table[3][p[4]] ^ zf_crc32c_table[2][p[5]]
              ^ zf_crc32c_table[1][p[6]] ^ zf_crc32c_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) crc = zf_crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

#endif
