/* BLAKE2b (RFC 7693), unkeyed, for messages of one block: the counter generator's stream keys
 * (problems/shared/counter_rng.py: stream_keys), which the core derives from a drawn call's seed. */
#ifndef NVFP4_BLAKE2B_H
#define NVFP4_BLAKE2B_H
#include <stddef.h>
#include <stdint.h>

#define BLAKE2B_BLOCK 128

/* The first ``out_size`` (1..64) bytes of BLAKE2b-``out_size`` of ``size`` (<= BLAKE2B_BLOCK) bytes;
 * -1 for a longer message. */
int blake2b_short(const void *message, size_t size, uint8_t *out, size_t out_size);
#endif
