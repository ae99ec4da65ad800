/* The per-run MAC key of harness._sealed: no symbol and no fixed place. It sits at a random offset of
 * one anonymous page mapped at a random address, inaccessible (PROT_NONE) except while a MAC is
 * computed. That page cannot be sealed (the core opens it for every MAC); /proc/self/maps lists
 * it, so native code that mprotects it finds the key (p01c) unless a supervisor refuses mprotect
 * from anywhere but the core's own code (core_pages.c: core_mprotect). Its address is kept in the
 * hidden page. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "core_state.h"
#include "sha256.h"

/* Read the key from the parent's pipe straight into its page (no copy on the stack), then the staging
 * key (the hidden page's: decrypting inputs opens that page, not the key page). */
int load_key(int fd) {
    uint8_t *page = random_page();
    uint16_t offset;
    if (!page) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    for (size_t filled = 0; filled < 4096;) { /* more than 256 bytes may come in parts */
        ssize_t n = getrandom(page + filled, 4096 - filled, 0);
        if (n < 0 && errno != EINTR) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
        filled += n > 0 ? (size_t)n : 0;
    }
    if (getrandom(&offset, sizeof offset, 0) != sizeof offset) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    madvise(page, 4096, MADV_DONTDUMP);
    madvise(page, 4096, MADV_WIPEONFORK); /* a child the submission forks gets zeros (Linux 4.14) */
    size_t at = offset % (4096 - KEY_BYTES + 1), got = 0;
    while (got < KEY_BYTES) {
        ssize_t n = read(fd, page + at + got, KEY_BYTES - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    for (size_t staged = 0; got >= KEY_BYTES && staged < KEY_BYTES;) { /* then the staging key, onto the hidden page */
        ssize_t n = read(fd, ST->stage_key + staged, KEY_BYTES - staged);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { got = 0; break; }
        staged += (size_t)n;
    }
    if (got != KEY_BYTES || core_mprotect(page, 4096, PROT_NONE)) {
        explicit_bzero(page, 4096);
        PyErr_SetString(PyExc_RuntimeError, "the key pipe held no 32-byte key and 32-byte staging key");
        return -1;
    }
    ST->key_page = page;
    ST->key_offset = at;
    return 0;
}

/* Overwrite the stack below the caller's frame, where the HMAC's frames were: the compiler may
 * have spilled the key, a padded key block or a midstate there. */
__attribute__((noinline)) static void scrub_stack(void) {
    uint8_t area[16384];
    explicit_bzero(area, sizeof area);
}

/* HMAC-SHA256 under the run key (the hidden page open): the key page is readable only in here. */
int mac_with_key(const uint8_t *message, size_t size, uint8_t mac[32]) {
    if (core_mprotect(ST->key_page, 4096, PROT_READ)) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    hmac_sha256(ST->key_page + ST->key_offset, KEY_BYTES, message, size, mac);
    int closed = core_mprotect(ST->key_page, 4096, PROT_NONE);
    scrub_stack();
    if (closed) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    return 0;
}
