/* SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104): results leave the worker authenticated. Our
 * own implementation, or OpenSSL's libcrypto when the process has it (no build dependency). */
#ifndef NVFP4_SHA256_H
#define NVFP4_SHA256_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t state[8];
    uint64_t length;
    uint8_t block[64];
    size_t used;
    void *evp;  /* OpenSSL's digest context when libcrypto is used, else NULL */
} sha256_ctx;

void sha256_setup(void);
int sha256_uses_openssl(void);

void sha256_init(sha256_ctx *ctx);
void sha256_update(sha256_ctx *ctx, const void *data, size_t size);
void sha256_final(sha256_ctx *ctx, uint8_t out[32]);
void hmac_sha256(const uint8_t *key, size_t key_size, const void *message, size_t size, uint8_t out[32]);
#endif
