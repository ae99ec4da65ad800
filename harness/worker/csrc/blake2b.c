/* BLAKE2b as RFC 7693 defines it (section 3.2 compression, 3.3 padding and parameter block), for one
 * block: enough for "seed:name" messages. Checked against Python's hashlib (tests/test_drawn_inputs.py). */
#include <string.h>

#include "blake2b.h"

static const uint64_t IV[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                               0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                               0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const uint8_t SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (64 - (n))))
#define G(a, b, c, d, x, y)                          \
    a = a + b + x; d = ROTR(d ^ a, 32); c = c + d; b = ROTR(b ^ c, 24); \
    a = a + b + y; d = ROTR(d ^ a, 16); c = c + d; b = ROTR(b ^ c, 63)

int blake2b_short(const void *message, size_t size, uint8_t *out, size_t out_size) {
    uint8_t block[BLAKE2B_BLOCK] = {0};
    uint64_t h[8], v[16], m[16];
    if (size > BLAKE2B_BLOCK || out_size < 1 || out_size > 64) return -1;
    memcpy(block, message, size);
    for (int i = 0; i < 16; i++) {
        m[i] = 0;
        for (int j = 7; j >= 0; j--) m[i] = m[i] << 8 | block[8 * i + j];
    }
    memcpy(h, IV, sizeof h);
    h[0] ^= 0x01010000ULL ^ (uint64_t)out_size; /* no key, fanout and depth 1 */
    memcpy(v, h, sizeof h);
    memcpy(v + 8, IV, sizeof IV);
    v[12] ^= (uint64_t)size; /* the byte counter */
    v[14] = ~v[14];          /* the last block */
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = SIGMA[r];
        G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (size_t i = 0; i < out_size; i++) out[i] = (uint8_t)((h[i / 8] ^ v[i / 8] ^ v[i / 8 + 8]) >> (8 * (i % 8)));
    return 0;
}
