/* SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104): results leave the worker authenticated. Our own
 * implementation only (the x86 SHA extensions where present): nothing on the path goes through a
 * function pointer a submission could find and replace. */
#ifndef NVFP4_SHA256_H
#define NVFP4_SHA256_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t state[8];
    uint64_t length;
    uint8_t block[64];
    size_t used;
} sha256_ctx;

const char *sha256_backend(void);  /* "sha-ni" or "portable" (NVFP4_SHA256_PORTABLE forces it) */

void sha256_init(sha256_ctx *ctx);
void sha256_update(sha256_ctx *ctx, const void *data, size_t size);
void sha256_final(sha256_ctx *ctx, uint8_t out[32]);  /* wipes ctx */
void hmac_sha256(const uint8_t *key, size_t key_size, const void *message, size_t size, uint8_t out[32]);
#endif
