/* ChaCha20 as RFC 8439 defines it (section 2.3 block function, 2.4 encryption), checked against the
 * RFC's test vectors (tests/test_chacha20.py). Portable C: about 1 GB/s on one core, run outside the
 * timed window (docs/security.md, "Drawn and staged inputs"). */
#include <string.h>

#include "chacha20.h"

#define ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QUARTER(a, b, c, d) \
    a += b; d ^= a; d = ROTL(d, 16); c += d; b ^= c; b = ROTL(b, 12); \
    a += b; d ^= a; d = ROTL(d, 8);  c += d; b ^= c; b = ROTL(b, 7)

static uint32_t load32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void block(const uint32_t state[16], uint8_t out[64]) {
    uint32_t x[16];
    memcpy(x, state, sizeof x);
    for (int round = 0; round < 10; round++) {
        QUARTER(x[0], x[4], x[8], x[12]); QUARTER(x[1], x[5], x[9], x[13]);
        QUARTER(x[2], x[6], x[10], x[14]); QUARTER(x[3], x[7], x[11], x[15]);
        QUARTER(x[0], x[5], x[10], x[15]); QUARTER(x[1], x[6], x[11], x[12]);
        QUARTER(x[2], x[7], x[8], x[13]); QUARTER(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) {
        uint32_t v = x[i] + state[i];
        out[4 * i] = (uint8_t)v; out[4 * i + 1] = (uint8_t)(v >> 8);
        out[4 * i + 2] = (uint8_t)(v >> 16); out[4 * i + 3] = (uint8_t)(v >> 24);
    }
}

void chacha20_xor(const uint8_t key[32], const uint8_t nonce[12], uint32_t counter, const uint8_t *in, uint8_t *out,
                  size_t size) {
    uint32_t state[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    uint8_t stream[64];
    for (int i = 0; i < 8; i++) state[4 + i] = load32(key + 4 * i);
    state[12] = counter;
    for (int i = 0; i < 3; i++) state[13 + i] = load32(nonce + 4 * i);
    for (size_t at = 0; at < size; at += 64, state[12]++) {
        block(state, stream);
        size_t n = size - at < 64 ? size - at : 64;
        for (size_t i = 0; i < n; i++) out[at + i] = in[at + i] ^ stream[i];
    }
    memset(stream, 0, sizeof stream);
}
