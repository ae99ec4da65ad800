/* LD_PRELOAD shim for scripts/landlock_cuda_probe.py: logs every open of a /proc path through libc
 * (path, flags, result, errno) to the file $OPEN_LOG, to find what a library needs there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void note(const char *call, int dirfd, const char *path, int flags, int result, int error) {
    const char *log = getenv("OPEN_LOG");
    if (!log || !path || (strncmp(path, "/proc", 5) != 0 && strncmp(path, "/dev", 4) != 0 && path[0] == '/')) return;
    int fd = (int)syscall(257, AT_FDCWD, log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[600];
    int n = snprintf(line, sizeof line, "%s dirfd=%d %s flags=%#x -> %d errno=%d\n", call, dirfd, path, flags, result,
                     result < 0 ? error : 0);
    if (n > 0) { ssize_t w = write(fd, line, (size_t)n); (void)w; }
    close(fd);
}

#define WRAP(name, signature_args, call_args, dirfd_expr, path_arg, flags_arg)                       \
    int name signature_args {                                                                    \
        mode_t mode = 0;                                                                         \
        if (flags_arg & (O_CREAT | __O_TMPFILE)) { va_list ap; va_start(ap, flags_arg); mode = va_arg(ap, int); va_end(ap); } \
        static int (*real) () = NULL;                                                            \
        if (!real) real = (int (*)())dlsym(RTLD_NEXT, #name);                                   \
        int result = real call_args;                                                             \
        int error = errno;                                                                       \
        note(#name, dirfd_expr, path_arg, flags_arg, result, error);                             \
        errno = error;                                                                           \
        return result;                                                                           \
    }

/* glibc's own calls (fopen's open, opendir's, pthread_setname_np's) are internal and not seen by the
 * wrappers of open: the public entry points that open /proc files are logged too. */
FILE *fopen(const char *path, const char *how) {
    static FILE *(*real)(const char *, const char *) = NULL;
    if (!real) real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
    FILE *result = real(path, how);
    int error = errno;
    note("fopen", AT_FDCWD, path, how && strchr(how, 'w') ? O_WRONLY : 0, result ? 0 : -1, error);
    errno = error;
    return result;
}

FILE *fopen64(const char *path, const char *how) { return fopen(path, how); }

int pthread_setname_np(pthread_t thread, const char *name) {
    static int (*real)(pthread_t, const char *) = NULL;
    if (!real) real = (int (*)(pthread_t, const char *))dlsym(RTLD_NEXT, "pthread_setname_np");
    int result = real(thread, name);
    char line[100];
    snprintf(line, sizeof line, "/proc/<pthread_setname_np %s of %s>", name,
             pthread_equal(thread, pthread_self()) ? "itself" : "another thread");
    note("pthread_setname_np", AT_FDCWD, line, 0, result ? -1 : 0, result);
    return result;
}

WRAP(open, (const char *path, int flags, ...), (path, flags, mode), AT_FDCWD, path, flags)
WRAP(open64, (const char *path, int flags, ...), (path, flags, mode), AT_FDCWD, path, flags)
WRAP(openat, (int dirfd, const char *path, int flags, ...), (dirfd, path, flags, mode), dirfd, path, flags)
WRAP(openat64, (int dirfd, const char *path, int flags, ...), (dirfd, path, flags, mode), dirfd, path, flags)
