/* The core's side of the syscall supervisor: the pages the core guards, and the one syscall it
 * makes on them after the worker's seccomp filter is on (core_pages.c: core_mprotect comes here).
 *
 * The supervisor (harness/judge/worker_link/syscall_supervisor.py, outside the worker) refuses every change of
 * the core's pages (its loaded image and the anonymous pages given to gate_mprotect: the key's page
 * and the hidden call-state page) unless the mprotect comes from the syscall instruction below, to
 * no access, or to the one access each page is opened with (read for the key, read-write for the
 * call state). Before the submission is imported, the worker reads where that instruction and
 * those pages are through nvfp4_gate_describe (harness.worker.syscall_filter) and hands them over.
 *
 * What this does not stop: native code that calls gate_raw_mprotect, or jumps to its syscall
 * instruction, opens a page like the core. The parent counts the openings the supervisor is told of:
 * the key page's (one per MAC it verifies) and the call-state page's (three at bind, two per timed
 * call: at time_call's entry and when custom_kernel returns; one per recheck), so an extra one rejects
 * the run. Only the gate's closes run unasked (docs/security.md). */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <unistd.h>

#include "core_state.h"
#include "syscall_gate.h"

#define GATE_PAGES 8

/* mprotect(start, bytes, prot) as a raw syscall; the arguments are already in the registers the
 * kernel reads, each a full 64-bit word (an int would leave the register's upper half undefined,
 * which the kernel reads as unknown protection bits). Returns the kernel's result (a negative errno
 * on failure). The address after the syscall instruction is what seccomp reports as the caller's
 * instruction pointer. */
long gate_raw_mprotect(void *start, size_t bytes, unsigned long prot);
extern const char gate_after_syscall[];
#if defined(__x86_64__)
__asm__(".text\n.p2align 4\n.hidden gate_raw_mprotect\n.globl gate_raw_mprotect\n"
        ".type gate_raw_mprotect,@function\ngate_raw_mprotect:\n"
        "    movl $10, %eax\n    syscall\n"
        ".hidden gate_after_syscall\n.globl gate_after_syscall\ngate_after_syscall:\n    ret\n"
        ".size gate_raw_mprotect, .-gate_raw_mprotect\n");
#define GATE_ARCH_OK 1
#elif defined(__aarch64__)
__asm__(".text\n.p2align 4\n.hidden gate_raw_mprotect\n.globl gate_raw_mprotect\n"
        ".type gate_raw_mprotect,%function\ngate_raw_mprotect:\n"
        "    mov x8, #226\n    svc #0\n"
        ".hidden gate_after_syscall\n.globl gate_after_syscall\ngate_after_syscall:\n    ret\n"
        ".size gate_raw_mprotect, .-gate_raw_mprotect\n");
#define GATE_ARCH_OK 1
#else
#include <sys/mman.h>
long gate_raw_mprotect(void *start, size_t bytes, unsigned long prot) {
    return mprotect(start, bytes, (int)prot) ? -errno : 0;
}
const char gate_after_syscall[1];
#define GATE_ARCH_OK 0  /* no gate: the supervisor is not offered (nvfp4_gate_describe says so) */
#endif

static struct { uintptr_t start, end; } pages[GATE_PAGES];
static int page_count;

static void remember(void *start, size_t bytes) {
    uintptr_t from = (uintptr_t)start, to = from + ((bytes + 4095) & ~(size_t)4095); /* as the kernel rounds it */
    for (int i = 0; i < page_count; i++)
        if (pages[i].start == from && pages[i].end == to) return;
    if (page_count < GATE_PAGES) {
        pages[page_count].start = from;
        pages[page_count++].end = to;
    }
}

int gate_mprotect(void *start, size_t bytes, int prot) {
    remember(start, bytes);
    long result = gate_raw_mprotect(start, bytes, (unsigned int)prot);
    if (result < 0) {
        errno = (int)-result;
        return -1;
    }
    return 0;
}

/* [start, end) of this extension's loaded image: every PT_LOAD segment, .bss included. */
static int find_image(struct dl_phdr_info *info, size_t size, void *data) {
    uintptr_t *range = data;
    Dl_info self;
    if (!dladdr((void *)&find_image, &self) || (void *)info->dlpi_addr != self.dli_fbase) return 0;
    uintptr_t mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1, low = UINTPTR_MAX, high = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
        if (start < low) low = start;
        if (end > high) high = end;
    }
    range[0] = low & ~mask;
    range[1] = (high + mask) & ~mask;
    return 1;
}

/* For the worker, through ctypes, before the import: out[0] the instruction pointer the kernel
 * reports for the gate's syscall (0 where this architecture has no gate), out[1..2] the image,
 * out[3..4] the hidden call-state page (opened read-write; 0, 0 before init), then [start, end) of
 * each other page outside the image the gate has protected: the key's (opened read-only). The
 * image's own pages, the sealed tables, go through the gate once at init and never again.
 * Returns how many numbers it wrote. */
__attribute__((visibility("default"))) int nvfp4_gate_describe(unsigned long long *out, int room) {
    uintptr_t image[2] = {0, 0}, state = (uintptr_t)core.hidden;
    int written = 5;
    if (room < 5 + 2 * page_count) return -1;
    dl_iterate_phdr(find_image, image);
    out[0] = GATE_ARCH_OK ? (uintptr_t)gate_after_syscall : 0;
    out[1] = image[0];
    out[2] = image[1];
    out[3] = state;
    out[4] = state ? state + 4096 : 0;
    for (int i = 0; i < page_count; i++) {
        if ((pages[i].start < image[1] && image[0] < pages[i].end) || pages[i].start == state) continue;
        out[written++] = pages[i].start;
        out[written++] = pages[i].end;
    }
    return written;
}
