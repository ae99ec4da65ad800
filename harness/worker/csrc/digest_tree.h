/* The digest the MAC covers, for outputs of any size: SHA-256 over each output's description and
 * the SHA-256 of each DIGEST_CHUNK_BYTES chunk of its bytes (harness.judge.worker_link.seal.output_digest
 * mirrors it; harness/contract/leaf_hash.py is the GPU's kernel for the same leaves, LEAF_BYTES there).
 * On the CPU the chunks are hashed on several threads: one thread took 29 ms for the copies,
 * comparison and digest of a 15 MB output on the H100's host (docs/results.md run 11). At most
 * OMP_NUM_THREADS of them: the evaluation's share of the host's cores, which the parent sets in the
 * worker's environment (harness/judge/worker_link/host_share.py), read once at the core's import.
 * The same threads copy outputs into the parent's mapping (sealed_outputs.c: place_outputs). */
#ifndef NVFP4_DIGEST_TREE_H
#define NVFP4_DIGEST_TREE_H
#include <stddef.h>
#include <stdint.h>

#define DIGEST_CHUNK_BYTES ((size_t)4096)
#define DIGEST_MAX_THREADS 8
#define COPY_CHUNK_BYTES ((size_t)1 << 18)  /* copy_chunked's pieces: a thread's share of a copy, not a leaf */

typedef struct {
    const uint8_t *bytes;  /* the chunk in the core's copy of the outputs */
    uint8_t *to;           /* set: the chunk is only copied there (no hash) */
    size_t size;
    uint8_t leaf[32];
} digest_chunk;

/* Chunks needed for ``size`` bytes (an empty output has none). */
size_t digest_chunk_count(size_t size);
/* Read the thread limit from OMP_NUM_THREADS (1..DIGEST_MAX_THREADS; unset or bad: DIGEST_MAX_THREADS);
 * called once, before the submission is imported. Returns the limit. */
int digest_read_thread_limit(void);
/* The limit read. */
int digest_thread_limit(void);
/* Hash every chunk's bytes into its leaf, or copy it where its ``to`` says, on up to the thread limit. */
void digest_chunks(digest_chunk *chunks, size_t count);
/* ``size`` bytes from ``from`` to ``to`` in COPY_CHUNK_BYTES pieces on the same threads; -1 when
 * the chunk table cannot be allocated. */
int copy_chunked(uint8_t *to, const uint8_t *from, size_t size);
#endif
