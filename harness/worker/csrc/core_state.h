/* The core's state, in two pages: what init fixes (sealed, readable) and what the core changes or
 * hides (a page the core keeps inaccessible whenever its own code is not running: core_pages.c). */
#ifndef NVFP4_CORE_STATE_H
#define NVFP4_CORE_STATE_H
#include <Python.h>
#include <signal.h>
#include <stdint.h>

#include "cuda_driver.h"
#include "gpu_window.h"
#include "python_hooks.h"
#include "sealed_outputs.h"

#define KEY_BYTES 32

/* The hidden page: PROT_NONE outside the core's own code, opened by hidden_open only while no
 * Python code of the submission can run (the GIL held, signals blocked, no call into Python). */
typedef struct {
    int busy;
    long long last_index;
    PyObject *kernel;                      /* the submission's custom_kernel */
    uint8_t *key_page;                     /* KEY_BYTES at key_offset; the rest random filler */
    size_t key_offset;
    double overhead_us, overhead_spread_us;
    double first_overhead_us;              /* measured before the import: the ceiling of a recheck's raise */
    double clock_slack_us[2];              /* second clock's allowance: [0] queued call, [1] exposed call */
    CUevent start_event, end_event, stamp_event; /* stamp_event: behind the end stamp */
    CUdeviceptr flush_buffer, counter, stamps; /* stamps: STAMP_SLOTS random words, two used per call */
    uint64_t *stamp_host;                  /* pinned: the two stamps of the last window */
    uint32_t *release;                     /* pinned, read by the hold kernel: a timed call's hold ends when
                                              it reaches that hold's generation (gpu_window.c) */
    uint32_t holds;                        /* hold kernels launched (their grid barrier's generation) */
    uint32_t start_slot, end_slot;
    uint64_t start_mask, end_mask;
    double stamp_wait_us[2];               /* most of the end stamp's wait a reading subtracts (calibrated):
                                            [0] queued call, [1] exposed call */
    uint8_t *host_copy;                    /* the outputs' bytes (pinned on a GPU) */
    size_t host_capacity;
    CUdeviceptr device_copy[2];            /* the outputs behind the end event, and once every stream is idle */
    size_t device_capacity[2];
    CUdeviceptr device_leaves;             /* both copies' digest leaves */
    uint8_t *host_leaves;                  /* pinned */
    size_t leaves_capacity;
    CUdeviceptr device_table;              /* the leaf kernel's tables, one a pass (output_copies.c) */
    CUdeviceptr snapshot;                  /* the parent's device snapshot, mapped here (0: none) */
    size_t snapshot_bytes;
    size_t snapshot_min_bytes;             /* calls of fewer output bytes keep the pipe (output_file.py) */
    unsigned long long *host_table;        /* pinned */
    sigset_t saved_signals;                /* the caller's mask while the page is open */
    uint8_t stage_key[KEY_BYTES];          /* staged inputs' ChaCha20 key, drawn calls' seed mask (drawn_inputs.c) */
    int draw_count;                        /* captured draws (drawn_inputs.c), slots 0.. */
    CUstream stream;                       /* the window's stream: one of core.call_streams (gpu_window.c: use_stream) */
} hidden_state;

/* Set by init before the submission exists, then read-only and sealed (core_pages.c: seal_core). */
typedef union {
    struct {
        int keyed, on_gpu;
        int overhead_from_graph;           /* 1: graph replay is the reference; 0: kernel pairs */
        int fills_gpu;                     /* 1: the hold kernel takes every thread slot of every SM */
        unsigned hold_grid, hold_block;
        hidden_state *hidden;
        CUcontext context;
        CUstream capture_stream;
        CUstream call_streams[CALL_STREAMS]; /* the windows', taken in turn (gpu_window.h) */
        size_t flush_bytes;
        CUfunction hold_kernel, empty_kernel, stamp_kernel;
        CUfunction leaf_kernel;            /* the outputs' digest leaves (harness/contract/leaf_hash.py) */
        torch_hooks hooks;
        interpreter_probes probes;
    };
    unsigned char page[CORE_PAGE_BYTES];
} core_state;

extern core_state core;
#define ST (core.hidden)

/* core_pages.c */
int core_mprotect(void *start, size_t bytes, int prot); /* every mprotect of the core after init */
uint8_t *random_page(void);
int hidden_create(void);  /* map the hidden page (open); -1 with an exception */
int hidden_open(void);    /* block signals, open the page (counted by the supervisor); -1 with an exception */
void hidden_close(void);  /* close the page, restore the signal mask */
PyObject *seal_core(void);
/* key_page.c */
int load_key(int fd);
int mac_with_key(const uint8_t *message, size_t size, uint8_t mac[32]);
#endif
