/* The core's pages: the one function that changes their protection, the hidden page the core opens
 * only around its own code, and the sealing of what init fixed (harness._sealed).
 *
 * core_mprotect is the only place the core changes a page's protection after init: a raw system
 * call instruction inside the core's own text (syscall_gate.c), so that a supervisor which allows
 * mprotect on the core's pages only from the core's instruction addresses can allow exactly this
 * function. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core_state.h"
#include "sha256.h"
#include "syscall_gate.h"

#ifndef SYS_mseal
#define SYS_mseal 462 /* Linux 6.10, the same number on x86_64 and arm64 */
#endif

core_state core __attribute__((aligned(CORE_PAGE_BYTES)));

/* Through the syscall supervisor's gate (syscall_gate.c): its one syscall instruction is the address
 * the supervisor allows, and the pages given here are the ones it guards. */
int core_mprotect(void *start, size_t bytes, int prot) {
    return gate_mprotect(start, bytes, prot);
}

/* One anonymous page at a random address (MAP_FIXED_NOREPLACE at a random hint below 2^44; a
 * kernel-chosen address where no hint is free or the flag is unknown). */
uint8_t *random_page(void) {
    for (int attempt = 0; attempt < 32; attempt++) {
        uint64_t draw;
        if (getrandom(&draw, sizeof draw, 0) != sizeof draw) break;
        uintptr_t hint = (uintptr_t)(((draw % ((1ULL << 44) - (1ULL << 32))) + (1ULL << 32)) & ~4095ULL);
        void *page = mmap((void *)hint, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                          -1, 0);
        if (page == (void *)hint) return page;
        if (page != MAP_FAILED) munmap(page, 4096); /* a kernel before 4.17 took the hint as a hint */
    }
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return page == MAP_FAILED ? NULL : page;
}

int hidden_create(void) {
    _Static_assert(sizeof(hidden_state) <= 4096, "the hidden state must fit one page");
    uint8_t *page = random_page();
    if (!page) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    madvise(page, 4096, MADV_DONTDUMP);
    core.hidden = (hidden_state *)page;
    ST->last_index = -1;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &ST->saved_signals); /* as hidden_open leaves it */
    return 0;
}

/* Signals are blocked while the page is open: a handler (a ctypes callback) would otherwise run the
 * submission's code at any instruction of the core, with the page readable. The gate's mprotect of
 * the whole page (4096 bytes) is notified to the syscall supervisor, and a read-write one counted. */
int hidden_open(void) {
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    if (core_mprotect(ST, 4096, PROT_READ | PROT_WRITE)) {
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    ST->saved_signals = saved;
    return 0;
}

void hidden_close(void) {
    sigset_t saved = ST->saved_signals;
    core_mprotect(ST, 4096, PROT_NONE); /* a refusal leaves it open: nothing the core can do about it */
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

/* ---- sealing what init fixed ------------------------------------------------------------------ */

/* Read-only, then sealed where the kernel has mseal: 0 sealed, else the errno mseal gave (-1: not
 * even read-only). */
static int protect_and_seal(void *start, size_t bytes) {
    if (core_mprotect(start, bytes, PROT_READ)) return -1;
    return syscall(SYS_mseal, start, bytes, 0UL) == 0 ? 0 : errno;
}

typedef struct { int sealed, failed, first_errno; } seal_tally;

static void tally(seal_tally *t, int result) {
    if (result == 0) { t->sealed++; return; }
    if (!t->failed++) t->first_errno = result;
}

/* Seal the non-writable segments of this extension (headers, code, read-only data, and the GOT,
 * which -z relro -z now made read-only at load): nobody can mprotect them writable again. */
static int seal_own_segment(struct dl_phdr_info *info, size_t size, void *data) {
    seal_tally *t = data;
    Dl_info self;
    if (!dladdr((void *)&seal_own_segment, &self) || (void *)info->dlpi_addr != self.dli_fbase) return 0;
    uintptr_t mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
        if (ph->p_type == PT_LOAD && !(ph->p_flags & PF_W)) {
            end = (end + mask) & ~mask;
        } else if (ph->p_type == PT_GNU_RELRO) {
            end &= ~mask; /* the loader leaves the last partial page writable, with .data */
        } else {
            continue;
        }
        start &= ~mask;
        if (end > start) tally(t, syscall(SYS_mseal, (void *)start, end - start, 0UL) == 0 ? 0 : errno);
    }
    return 1;
}

/* What init fixed, made read-only and sealed; returns the line the worker's 'ready' reports. */
PyObject *seal_core(void) {
    seal_tally tables = {0}, code = {0};
    long page = sysconf(_SC_PAGESIZE);
    if (page == CORE_PAGE_BYTES) {
        tally(&tables, protect_and_seal(&core, sizeof core));
        tally(&tables, protect_and_seal(&cu, sizeof cu));
    }
    dl_iterate_phdr(seal_own_segment, &code);
    const char *how = tables.sealed == 2 ? "read-only and sealed"
                      : page != CORE_PAGE_BYTES ? "writable (pages larger than 4 KiB)"
                      : tables.first_errno == -1 ? "writable (mprotect refused)"
                      : tables.first_errno == ENOSYS ? "read-only, not sealed (this kernel has no mseal)"
                                                      : "read-only, not sealed (mseal refused)";
    return PyUnicode_FromFormat(
        "key on a page at a random address, no access outside the MAC; call state, events and indexes on a "
        "page with no access outside the core; tables %s; code %s; sha256 %s", how,
        code.sealed && !code.failed ? "sealed" : code.sealed ? "partly sealed" : "not sealed", sha256_backend());
}
