/* Preloaded into the worker (LD_PRELOAD, set by harness.judge.worker_link.worker_spawn), not imported.
 *
 * CUDA's driver names its threads by writing /proc/self/task/<tid>/comm through fopen, and fails to
 * start (cudaGetDeviceCount error 304) when that open is refused (measured on an H100, 2026-11-26,
 * scripts/landlock_cuda_probe.py). Landlock cannot grant a thread's comm without its mem, which sits
 * in the same folder, so the worker's rule set (harness/worker/landlock.py) grants nothing of task/;
 * this fopen sends writes to a thread's name to /dev/null instead, and the threads keep their
 * default names. Every other fopen is passed on unchanged. Nothing here guards anything: the kernel
 * refuses task/ whatever the worker does to this code. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

__attribute__((visibility("default"))) int nvfp4_thread_names_to_null = 1;  /* the worker checks it is loaded */

static int digits(const char *text, const char *end) {
    if (text == end) return 0;
    for (; text < end; text++)
        if (*text < '0' || *text > '9') return 0;
    return 1;
}

/* /proc/self/task/<tid>/comm or /proc/<pid>/task/<tid>/comm */
static int names_a_thread(const char *path) {
    const char *rest;
    if (strncmp(path, "/proc/self/task/", 16) == 0) {
        rest = path + 16;
    } else if (strncmp(path, "/proc/", 6) == 0) {
        const char *task = strstr(path + 6, "/task/");
        if (!task || !digits(path + 6, task)) return 0;
        rest = task + 6;
    } else {
        return 0;
    }
    const char *slash = strchr(rest, '/');
    return slash && digits(rest, slash) && strcmp(slash, "/comm") == 0;
}

typedef FILE *(*fopen_fn)(const char *, const char *);

static FILE *open_file(const char *name, const char *path, const char *mode) {
    fopen_fn real = (fopen_fn)dlsym(RTLD_NEXT, name);
    if (!real) return NULL;
    if (path && mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+')) && names_a_thread(path))
        return real("/dev/null", mode);
    return real(path, mode);
}

__attribute__((visibility("default"))) FILE *fopen(const char *path, const char *mode) {
    return open_file("fopen", path, mode);
}

__attribute__((visibility("default"))) FILE *fopen64(const char *path, const char *mode) {
    return open_file("fopen64", path, mode);
}
