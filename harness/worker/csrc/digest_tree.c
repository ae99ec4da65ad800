/* Leaf digests of output chunks on a few threads (see digest_tree.h). The threads touch only the
 * copies the core made, the parent's mapping and the chunk table; they never call Python. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "digest_tree.h"
#include "sha256.h"

typedef struct {
    digest_chunk *chunks;
    size_t count;
    size_t next;  /* the next chunk to take, shared by the threads (atomic) */
} chunk_queue;

static size_t thread_limit = DIGEST_MAX_THREADS;

int digest_read_thread_limit(void) {
    const char *raw = getenv("OMP_NUM_THREADS");
    char *end = NULL;
    long wanted = raw ? strtol(raw, &end, 10) : 0;
    thread_limit = raw && *end == '\0' && wanted >= 1 ? (wanted < DIGEST_MAX_THREADS ? (size_t)wanted : DIGEST_MAX_THREADS)
                                                      : DIGEST_MAX_THREADS;
    return (int)thread_limit;
}

int digest_thread_limit(void) { return (int)thread_limit; }

size_t digest_chunk_count(size_t size) { return (size + DIGEST_CHUNK_BYTES - 1) / DIGEST_CHUNK_BYTES; }

static void *hash_chunks(void *argument) {
    chunk_queue *queue = argument;
    for (;;) {
        size_t index = __atomic_fetch_add(&queue->next, 1, __ATOMIC_RELAXED);
        if (index >= queue->count) return NULL;
        digest_chunk *chunk = &queue->chunks[index];
        if (chunk->to) {
            memcpy(chunk->to, chunk->bytes, chunk->size);
            continue;
        }
        sha256_ctx ctx;
        sha256_init(&ctx);
        sha256_update(&ctx, chunk->bytes, chunk->size);
        sha256_final(&ctx, chunk->leaf);
    }
}

void digest_chunks(digest_chunk *chunks, size_t count) {
    chunk_queue queue = {chunks, count, 0};
    pthread_t threads[DIGEST_MAX_THREADS - 1];
    size_t helpers = count < thread_limit ? (count ? count - 1 : 0) : thread_limit - 1, started = 0;
    for (; started < helpers; started++)  /* a thread that cannot start leaves its share to the others */
        if (pthread_create(&threads[started], NULL, hash_chunks, &queue) != 0) break;
    hash_chunks(&queue);
    for (size_t i = 0; i < started; i++) pthread_join(threads[i], NULL);
}

int copy_chunked(uint8_t *to, const uint8_t *from, size_t size) {
    size_t count = (size + COPY_CHUNK_BYTES - 1) / COPY_CHUNK_BYTES;
    digest_chunk *chunks = calloc(count ? count : 1, sizeof *chunks);
    if (!chunks) return -1;
    for (size_t i = 0, at = 0; i < count; i++, at += COPY_CHUNK_BYTES) {
        chunks[i].bytes = from + at;
        chunks[i].to = to + at;
        chunks[i].size = size - at < COPY_CHUNK_BYTES ? size - at : COPY_CHUNK_BYTES;
    }
    digest_chunks(chunks, count);
    free(chunks);
    return 0;
}
