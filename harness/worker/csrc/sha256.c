/* SHA-256 and HMAC-SHA256, written from FIPS 180-4 and RFC 2104, with no function pointers and no
 * other library on the path: the x86 SHA extensions where the CPU has them (about the speed of
 * OpenSSL's, which matters for outputs of several MB per call), portable C elsewhere. The core
 * once called OpenSSL's libcrypto through pointers it resolved with dlsym; a submission that
 * found that table by value could swap EVP_DigestUpdate for its own and be handed the key. */
#define _DEFAULT_SOURCE  /* explicit_bzero */
#include "sha256.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void compress_portable(uint32_t s[8], const uint8_t *data, size_t blocks) {
    for (; blocks; blocks--, data += 64) {
        uint32_t w[64], a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)data[4 * i] << 24 | (uint32_t)data[4 * i + 1] << 16 | (uint32_t)data[4 * i + 2] << 8 |
                   data[4 * i + 3];
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
            uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        s[0] += a; s[1] += b; s[2] += c; s[3] += d; s[4] += e; s[5] += f; s[6] += g; s[7] += h;
        explicit_bzero(w, sizeof w);  /* an HMAC's first block is the key xor a pad */
    }
}

#ifdef HAVE_SHANI
/* The SHA extensions keep the state as two registers, (A, B, E, F) and (C, D, G, H), and run two
 * rounds per sha256rnds2: four rounds per group of four message words. The schedule of group i
 * (i >= 4) is msg2(msg1(g[i-4], g[i-3]) + (g[i-2] words 1..3, g[i-1] word 0), g[i-1]). */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_shani(uint32_t s[8], const uint8_t *data,
                                                                       size_t blocks) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);  /* big-endian words */
    __m128i dcba = _mm_loadu_si128((const __m128i *)&s[0]), hgfe = _mm_loadu_si128((const __m128i *)&s[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1), efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8), cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; blocks; blocks--, data += 64) {
        __m128i abef_start = abef, cdgh_start = cdgh, group[4];
#pragma GCC unroll 16 /* kept rolled, `group` lives in memory: 0.7 against 1.0 GB/s (OpenSSL's), 2-core CPU */
        for (int i = 0; i < 16; i++) {
            __m128i words;
            if (i < 4) {
                words = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), swap);
            } else {
                __m128i sum = _mm_add_epi32(_mm_sha256msg1_epu32(group[i & 3], group[(i + 1) & 3]),
                                            _mm_alignr_epi8(group[(i + 3) & 3], group[(i + 2) & 3], 4));
                words = _mm_sha256msg2_epu32(sum, group[(i + 3) & 3]);
            }
            group[i & 3] = words;
            __m128i rounds = _mm_add_epi32(words, _mm_loadu_si128((const __m128i *)&K[4 * i]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, rounds);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(rounds, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef_start);
        cdgh = _mm_add_epi32(cdgh, cdgh_start);
        group[0] = group[1] = group[2] = group[3] = _mm_setzero_si128();
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B), dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&s[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&s[4], _mm_alignr_epi8(dchg, feba, 8));
}

static int cpu_has_shani(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 29) & 1;  /* CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29] */
}
#endif

static int backend = -1;  /* 1: SHA extensions, 0: portable; either gives the same digests */

static int use_shani(void) {
    if (backend < 0) {
#ifdef HAVE_SHANI
        backend = !getenv("NVFP4_SHA256_PORTABLE") && cpu_has_shani();  /* tests compare both */
#else
        backend = 0;
#endif
    }
    return backend;
}

static void compress(uint32_t s[8], const uint8_t *data, size_t blocks) {
#ifdef HAVE_SHANI
    if (use_shani()) {
        compress_shani(s, data, blocks);
        return;
    }
#endif
    compress_portable(s, data, blocks);
}

const char *sha256_backend(void) {
    return use_shani() ? "sha-ni" : "portable";
}

void sha256_init(sha256_ctx *ctx) {
    static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(ctx->state, initial, sizeof initial);
    ctx->length = 0;
    ctx->used = 0;
}

void sha256_update(sha256_ctx *ctx, const void *data, size_t size) {
    const uint8_t *bytes = data;
    ctx->length += size;
    if (ctx->used) {
        size_t take = 64 - ctx->used < size ? 64 - ctx->used : size;
        memcpy(ctx->block + ctx->used, bytes, take);
        ctx->used += take; bytes += take; size -= take;
        if (ctx->used < 64) return;
        compress(ctx->state, ctx->block, 1);
        ctx->used = 0;
    }
    if (size >= 64) {  /* whole blocks straight from the caller's buffer */
        compress(ctx->state, bytes, size / 64);
        bytes += size / 64 * 64;
        size %= 64;
    }
    memcpy(ctx->block, bytes, size);
    ctx->used = size;
}

void sha256_final(sha256_ctx *ctx, uint8_t out[32]) {
    uint64_t bits = ctx->length * 8;
    uint8_t padding[72] = {0x80};
    size_t pad = (ctx->used < 56 ? 56 : 120) - ctx->used;
    for (int i = 0; i < 8; i++) padding[pad + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(ctx, padding, pad + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(ctx->state[i] >> 24); out[4 * i + 1] = (uint8_t)(ctx->state[i] >> 16);
        out[4 * i + 2] = (uint8_t)(ctx->state[i] >> 8); out[4 * i + 3] = (uint8_t)ctx->state[i];
    }
    explicit_bzero(ctx, sizeof *ctx);
}

/* Every buffer that held the key, the key xor a pad or a midstate is wiped before returning; what
 * the compiler kept in registers or spilled is the caller's to scrub (sealed.c scrub_stack). */
void hmac_sha256(const uint8_t *key, size_t key_size, const void *message, size_t size, uint8_t out[32]) {
    uint8_t block[64] = {0}, inner[32];
    sha256_ctx ctx;
    if (key_size > 64) {
        sha256_init(&ctx); sha256_update(&ctx, key, key_size); sha256_final(&ctx, block);
    } else {
        memcpy(block, key, key_size);
    }
    for (int i = 0; i < 64; i++) block[i] ^= 0x36;
    sha256_init(&ctx); sha256_update(&ctx, block, 64); sha256_update(&ctx, message, size); sha256_final(&ctx, inner);
    for (int i = 0; i < 64; i++) block[i] ^= 0x36 ^ 0x5c;
    sha256_init(&ctx); sha256_update(&ctx, block, 64); sha256_update(&ctx, inner, 32); sha256_final(&ctx, out);
    explicit_bzero(block, sizeof block);
    explicit_bzero(inner, sizeof inner);
}
