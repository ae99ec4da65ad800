/* ChaCha20 (RFC 8439, section 2.4): the stream cipher the parent's staged inputs are encrypted with. */
#ifndef NVFP4_CHACHA20_H
#define NVFP4_CHACHA20_H
#include <stddef.h>
#include <stdint.h>

/* out[i] = in[i] ^ keystream(key, nonce) from block ``counter`` on (in == out allowed). The counter is
 * RFC 8439's 32-bit block counter; ``nonce`` its 96-bit nonce. */
void chacha20_xor(const uint8_t key[32], const uint8_t nonce[12], uint32_t counter, const uint8_t *in, uint8_t *out,
                  size_t size);
#endif
