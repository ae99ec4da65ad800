/* The core's side of the syscall supervisor (harness/judge/worker_link/syscall_supervisor.py): the one place
 * the core changes the protection of its own pages once the worker's seccomp filter is on. */
#ifndef NVFP4_SYSCALL_GATE_H
#define NVFP4_SYSCALL_GATE_H
#include <stddef.h>

/* mprotect through a syscall instruction of this file's own: the supervisor lets a protection
 * change of the core's pages through only from that instruction. Returns 0, or -1 with errno set.
 * Every page given to it is remembered as one of the core's (the key's page). */
int gate_mprotect(void *start, size_t bytes, int prot);

#endif
