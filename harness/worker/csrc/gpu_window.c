/* The GPU side of one timed call in harness._sealed: what runs before the start event and after the
 * end event, all through the driver table (cuda_driver.c), none through Python.
 *
 * Before the start event: every stream idle (cuCtxSynchronize), then one kernel that first holds the
 * GPU until the host has queued the whole call, custom_kernel's launches and the end event (the core
 * then writes the hold's generation into a pinned word the kernel polls), or for the queued sleep if
 * that comes first (a custom_kernel that waits for the GPU); then flushes the L2 by reading its buffer
 * (clean lines only), then waits for all its blocks (a grid barrier) and stamps %globaltimer. So no
 * host launch time lies between the events, and the GPU waits no longer than the host's launch. Its
 * grid takes every thread slot of every SM, and the core calls custom_kernel only once every block is
 * resident (the kernel says so in a pinned word): no kernel of any other stream can start before it
 * ends, so nothing the submission queues on a side stream runs before the start event; and the flush
 * comes after the hold, so L2 lines a copy engine warmed during it are gone.
 *
 * After the end event: a one-thread kernel stamps %globaltimer again. The two stamps are the second
 * clock, which the submission cannot re-arm the way it can re-record an event. The core judges no
 * single reading (an honest call now and then reads a few us apart): read_window hands each call's
 * reading and allowance to the MAC, and the parent rejects a case whose calls read short
 * systematically (harness/judge/verdict/second_clock.py). Each stamp goes to a random slot of a
 * random-filled buffer, masked with a random word, both drawn per call and kept in the hidden page. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "call_phases.h"
#include "core_state.h"
#include "gpu_window.h"

#define OVERHEAD_SAMPLES 21
#define GRAPH_KERNELS 100
#define MIN_CALL_SLEEP_US 100.0
/* A timed call's queued sleep (the hold's ceiling, where the core's release does not come first) is
 * at least this long: on an H100 a ~4 us kernel read 8.16 us behind a 20 us sleep and 5.02 us behind
 * 100 us or 1000 us (host launch latency leaked in; 2026-11-23, before the release). */
#define CALIBRATION_SLEEP_US 20.0
/* After the release, the hold spins this much longer (ns, a PTX literal): a margin so that the
 * driver's last commands (the end event, the stamp) reach the GPU's front end before the call's first
 * kernel can end. Chosen, not measured against a shorter margin (the fidelity table held with it). */
#define RELEASE_GRACE_NS "50000"
#define STAMP_SLOTS 8192
#define RESIDENT_WORD 16 /* uint32 index of the resident word: 64 bytes after the release word */
#define RESIDENT_TIMEOUT_US 5e6
#define OVERHEAD_ATTEMPTS 5
#define RETRY_SPIN_US 20000.0
/* Before measurement attempt n > 0, the whole GPU spins n x this long, and the host waits for it: a worker
 * that started while the GPU came back from its idle clock (345 MHz) read a spread over OVERHEAD_SPREAD_MAX_US
 * three attempts back to back (results.md run 28). Worst case 200 ms, never on a first success. */
#define CLOCK_SAMPLES 21
#define CLOCK_MARGIN_US 1.0
#define CLOCK_RELATIVE 0.002 /* the two clocks' rates may differ this much over a long call */

static const char PTX[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    /* hold_flush(ns, buffer, words, counter, target, slot, mask, release, generation): thread 0 of each
     * block counts the block in (the word 128 bytes after the counter); in a timed call's hold (`release`
     * not 0) block 0 waits until every block is in, or ns pass, and writes `generation` to the pinned word
     * 64 bytes after `release`, or `generation` with its top bit flipped where not every block came in:
     * the core calls custom_kernel only once every block is resident (await_resident). Thread 0 of each
     * block spins ns on %globaltimer while the others wait at the block barrier, or less: where
     * `release` (a pinned host word) is not 0, block 0 ends its spin once that word reaches `generation`
     * (compared modulo 2^32) and passes it on in the device word 64 bytes after the counter, which the
     * other blocks watch (one poller over PCIe, not one per block), and each spins RELEASE_GRACE_NS
     * more (never past ns); then all read `words` 16-byte words
     * of the buffer (grid-stride; volatile, so the loads stay), which writes back every dirty line and
     * leaves the L2 full of clean ones (a zeroing flush left dirty lines whose write-back landed in
     * the timed kernel: docs/timing.md, "The flush decided by measurement"); then each block's thread 0 arrives at the grid barrier (counter
     * reaches target, or 2 ms pass), and block 0 stamps %globaltimer ^ mask to slot. */
    ".visible .entry hold_flush(.param .u64 ns, .param .u64 buffer, .param .u64 words, .param .u64 counter,\n"
    "    .param .u32 target, .param .u64 slot, .param .u64 mask, .param .u64 release, .param .u32 generation)\n"
    ".maxntid 1024, 1, 1\n.maxnreg 32\n{\n"
    ".reg .pred %p;\n.reg .b32 %th, %nth, %blk, %nblk, %seen, %target, %gen, %v0, %v1, %v2, %v3;\n"
    ".reg .b64 %t0, %t1, %d, %n, %buf, %words, %i, %stride, %addr, %ctr, %slot, %mask, %rel, %passed;\n"
    "ld.param.u64 %n, [ns];\nld.param.u64 %buf, [buffer];\nld.param.u64 %words, [words];\n"
    "ld.param.u64 %ctr, [counter];\nld.param.u32 %target, [target];\nld.param.u64 %slot, [slot];\n"
    "ld.param.u64 %mask, [mask];\nld.param.u64 %rel, [release];\nld.param.u32 %gen, [generation];\n"
    "add.u64 %passed, %ctr, 64;\nmov.u32 %th, %tid.x;\nmov.u32 %nth, %ntid.x;\nmov.u32 %blk, %ctaid.x;\n"
    "mov.u32 %nblk, %nctaid.x;\nsetp.ne.u32 %p, %th, 0;\n@%p bra HELD;\n"
    "mov.u64 %t0, %globaltimer;\nadd.u64 %addr, %ctr, 128;\natom.global.add.u32 %seen, [%addr], 1;\n"
    "setp.eq.u64 %p, %rel, 0;\n@%p bra SPIN;\nsetp.ne.u32 %p, %blk, 0;\n@%p bra SPIN;\n"
    "ARRIVE:\nld.volatile.global.u32 %seen, [%addr];\nsub.s32 %seen, %seen, %target;\nsetp.ge.s32 %p, %seen, 0;\n"
    "@%p bra RESIDENT;\nmov.u64 %t1, %globaltimer;\nsub.u64 %d, %t1, %t0;\nsetp.lt.u64 %p, %d, %n;\n@%p bra ARRIVE;\n"
    "xor.b32 %seen, %gen, 0x80000000;\nbra ANSWER;\nRESIDENT:\nmov.u32 %seen, %gen;\n"
    "ANSWER:\nadd.u64 %addr, %rel, 64;\nst.relaxed.sys.global.u32 [%addr], %seen;\n"
    "SPIN:\nmov.u64 %t1, %globaltimer;\nsub.u64 %d, %t1, %t0;\n"
    "setp.ge.u64 %p, %d, %n;\n@%p bra HELD;\nsetp.eq.u64 %p, %rel, 0;\n@%p bra SPIN;\n"
    "setp.ne.u32 %p, %blk, 0;\n@%p bra WATCH;\nld.relaxed.sys.global.u32 %seen, [%rel];\n"
    "sub.s32 %seen, %seen, %gen;\nsetp.lt.s32 %p, %seen, 0;\n@%p bra SPIN;\n"
    "st.relaxed.gpu.global.u32 [%passed], %gen;\nbra GRACE;\nWATCH:\nld.relaxed.gpu.global.u32 %seen, [%passed];\n"
    "sub.s32 %seen, %seen, %gen;\nsetp.lt.s32 %p, %seen, 0;\n@%p bra SPIN;\n"
    "GRACE:\nadd.u64 %d, %d, " RELEASE_GRACE_NS ";\nmin.u64 %n, %n, %d;\nmov.u64 %rel, 0;\nbra SPIN;\n"
    "HELD:\nbar.sync 0;\n"
    "mul.wide.u32 %i, %blk, %nth;\ncvt.u64.u32 %d, %th;\nadd.u64 %i, %i, %d;\nmul.wide.u32 %stride, %nblk, %nth;\n"
    "FLUSH:\nsetp.ge.u64 %p, %i, %words;\n@%p bra FLUSHED;\nshl.b64 %addr, %i, 4;\nadd.u64 %addr, %addr, %buf;\n"
    "ld.volatile.global.v4.u32 {%v0, %v1, %v2, %v3}, [%addr];\nadd.u64 %i, %i, %stride;\nbra FLUSH;\n"
    "FLUSHED:\nbar.sync 0;\nsetp.ne.u32 %p, %th, 0;\n@%p bra DONE;\n"
    "atom.global.add.u32 %seen, [%ctr], 1;\nmov.u64 %t0, %globaltimer;\nWAIT:\n"
    "ld.volatile.global.u32 %seen, [%ctr];\nsub.s32 %seen, %seen, %target;\nsetp.ge.s32 %p, %seen, 0;\n@%p bra ARRIVED;\n"
    "mov.u64 %t1, %globaltimer;\nsub.u64 %d, %t1, %t0;\nsetp.lt.u64 %p, %d, 2000000;\n@%p bra WAIT;\n"
    "ARRIVED:\nsetp.ne.u32 %p, %blk, 0;\n@%p bra DONE;\nmov.u64 %t1, %globaltimer;\nxor.b64 %t1, %t1, %mask;\n"
    "st.global.u64 [%slot], %t1;\nDONE:\nret;\n}\n"
    ".visible .entry stamp(.param .u64 slot, .param .u64 mask)\n{\n.reg .b64 %a, %t, %m;\n"
    "ld.param.u64 %a, [slot];\nld.param.u64 %m, [mask];\nmov.u64 %t, %globaltimer;\nxor.b64 %t, %t, %m;\n"
    "st.global.u64 [%a], %t;\nret;\n}\n"
    ".visible .entry empty()\n{\nret;\n}\n";

void use_stream(long long turn) {
    ST->stream = core.call_streams[turn % CALL_STREAMS];
}

/* Fresh slots and masks for the two stamps of the next window (kept in the hidden page only). */
static int draw_stamps(void) {
    uint64_t draw[3];
    if (getrandom(draw, sizeof draw, 0) != sizeof draw) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    ST->start_slot = (uint32_t)(draw[0] % STAMP_SLOTS);
    ST->end_slot = (uint32_t)((ST->start_slot + 1 + (draw[0] >> 32) % (STAMP_SLOTS - 1)) % STAMP_SLOTS);
    ST->start_mask = draw[1];
    ST->end_mask = draw[2];
    return 0;
}

/* The hold-and-flush kernel: `sleep_us` of hold, or (`released`) until close_window writes the
 * release word and RELEASE_GRACE_NS more, whichever is first; then `flush` (0 or 1) passes over the
 * buffer. */
static int hold(double sleep_us, int flush, int released) {
    unsigned long long ns = (unsigned long long)(sleep_us * 1e3);
    unsigned long long words = flush ? core.flush_bytes / 16 : 0;
    CUdeviceptr slot = ST->stamps + 8ull * ST->start_slot;
    uint32_t target = (ST->holds + 1) * core.hold_grid, generation = ST->holds + 1;
    CUdeviceptr release = released ? (CUdeviceptr)(uintptr_t)ST->release : 0; /* unified addressing: the same address */
    void *params[] = {&ns, &ST->flush_buffer, &words, &ST->counter, &target, &slot, &ST->start_mask, &release,
                      &generation};
    CUI(cu.LaunchKernel(core.hold_kernel, core.hold_grid, 1, 1, core.hold_block, 1, 1, 0, ST->stream, params, NULL),
        "hold kernel launch");
    ST->holds++;
    return 0;
}

static int stamp_end(void) {
    CUdeviceptr slot = ST->stamps + 8ull * ST->end_slot;
    void *params[] = {&slot, &ST->end_mask};
    CUI(cu.LaunchKernel(core.stamp_kernel, 1, 1, 1, 1, 1, 1, 0, ST->stream, params, NULL), "stamp kernel launch");
    CUI(cu.EventRecord(ST->stamp_event, ST->stream), "stamp event");
    CUI(cu.MemcpyDtoHAsync(&ST->stamp_host[0], ST->stamps + 8ull * ST->start_slot, 8, ST->stream), "stamp copy");
    CUI(cu.MemcpyDtoHAsync(&ST->stamp_host[1], slot, 8, ST->stream), "stamp copy");
    return 0;
}

int quiet_gpu(void) {
    CUI(cu.CtxSetCurrent(core.context), "cuCtxSetCurrent");
    CUI(cu.CtxSynchronize(), "synchronize every stream before the call");
    phase_mark(PHASE_SYNCED);
    /* Set only where it is not 0 already (the context starts with one; custom_kernel may set one): setting it
     * took 0.15 ms of every call even unchanged, reading it 1 us (docs/results.md run 32). The end state is
     * the same either way: no set-aside for persisting lines, and none left persisting. Best effort: not
     * every device has it. */
    size_t limit = 1;
    if (cu.CtxGetLimit(&limit, CU_LIMIT_PERSISTING_L2_CACHE_SIZE) || limit)
        cu.CtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0);
    cu.CtxResetPersistingL2Cache();
    return 0;
}

/* Wait until the hold kernel of this call has every block resident (the word it writes 64 bytes after the
 * release word). Until then another stream's kernel could take a thread slot and run before the start
 * event: the core's draw runs ahead of the hold on the call's stream, and a side stream that does not
 * wait for it started work beside the draw (row s16 read 0.91x its twin, docs/security.md). Where the
 * occupancy calculator says the hold cannot fill the GPU (reported in the armed line) there is nothing
 * to wait for. */
static int await_resident(double ceiling_us) {
    const uint32_t generation = ST->holds;
    volatile uint32_t *resident = ST->release + RESIDENT_WORD;
    double started = host_clock_us();
    for (;;) {
        uint32_t seen = *resident;
        if (seen == generation) return 0;
        if (seen == (generation ^ 0x80000000u)) {
            char why[200];
            snprintf(why, sizeof why, "harness fault: the hold kernel's blocks were not all resident within its "
                     "%.0f us ceiling (another process using this GPU?)", ceiling_us);
            PyErr_SetString(PyExc_RuntimeError, why);
            return -1;
        }
        if (host_clock_us() - started > RESIDENT_TIMEOUT_US) {
            PyErr_Format(PyExc_RuntimeError, "harness fault: the hold kernel did not start within %d s",
                         (int)(RESIDENT_TIMEOUT_US / 1e6));
            return -1;
        }
    }
}

int start_window(double sleep_us) {
    double ceiling_us = sleep_us > MIN_CALL_SLEEP_US ? sleep_us : MIN_CALL_SLEEP_US;
    if (draw_stamps() || hold(ceiling_us, 1, 1)) return -1;
    CUI(cu.EventRecord(ST->start_event, ST->stream), "start event");
    return core.fills_gpu ? await_resident(ceiling_us) : 0;
}

int close_window(int *exposed) {
    CUI(cu.EventRecord(ST->end_event, ST->stream), "end event");
    if (stamp_end()) return -1;
    *exposed = cu.EventQuery(ST->start_event) == 0;
    __atomic_store_n(ST->release, ST->holds, __ATOMIC_RELEASE); /* the whole call is queued: the hold may end */
    return 0;
}

/* Both clocks over the last window, in us (the stamps' copies must have completed), and the end
 * stamp's wait: from the end event to the event behind the stamp kernel. */
static int window_clocks(double *event_us, double *clock_us, double *wait_us) {
    float ms = 0.0f, stamp_ms = 0.0f;
    CUI(cu.EventElapsedTime(&ms, ST->start_event, ST->end_event), "cuEventElapsedTime");
    CUI(cu.EventElapsedTime(&stamp_ms, ST->end_event, ST->stamp_event), "cuEventElapsedTime");
    *event_us = ms * 1e3;
    uint64_t start = ST->stamp_host[0] ^ ST->start_mask, end = ST->stamp_host[1] ^ ST->end_mask;
    *clock_us = ((double)end - (double)start) / 1e3;
    *wait_us = stamp_ms * 1e3;
    return 0;
}

/* How much more the second clock read than the events, less the end stamp's wait behind the end event
 * up to `wait_cap_us`. Work of another stream still on the GPU delays the stamp kernel, never the
 * events: that wait is no re-armed start event. But the wait is read against the end event, which
 * native code can record again, earlier, on an idle stream: the events then lose what the wait gains
 * (the gap unchanged). Capped at the wait calibrated on empty windows, a longer wait counts in the gap:
 * an end event moved earlier reads beyond, and so does work of another stream left running past the
 * end of the call (issue 40: every stream counted). */
static double clock_gap(double event_us, double clock_us, double wait_us, double wait_cap_us) {
    return clock_us - event_us - (wait_us < wait_cap_us ? wait_us : wait_cap_us);
}

int read_window(int exposed, clock_reading *reading) {
    double wait_us;
    if (window_clocks(&reading->event_us, &reading->clock_us, &wait_us)) return -1;
    reading->gap_us = clock_gap(reading->event_us, reading->clock_us, wait_us, ST->stamp_wait_us[exposed ? 1 : 0]);
    reading->allowance_us = ST->clock_slack_us[exposed ? 1 : 0] + CLOCK_RELATIVE * reading->event_us;
    return 0;
}

/* Calibration over CLOCK_SAMPLES empty windows (the stamp kernel's start after the end event): the
 * most the end stamp waited behind the end event (*wait_us), and the largest gap, less that wait
 * uncapped; `idle`: the GPU has drained before the host queues the end (as in an exposed call).
 * Returns -1e9 on a driver error. */
static double clock_gap_us(int idle, double *most_wait_us) {
    double worst = -1e9, event_us, clock_us, wait_us;
    *most_wait_us = 0.0;
    for (int s = 0; s < CLOCK_SAMPLES; s++) {
        use_stream(s);
        if (cu.CtxSynchronize() || draw_stamps() || hold(CALIBRATION_SLEEP_US, 0, 0) ||
            cu.EventRecord(ST->start_event, ST->stream) || (idle && cu.EventSynchronize(ST->start_event)) ||
            cu.EventRecord(ST->end_event, ST->stream) || stamp_end() || cu.StreamSynchronize(ST->stream) ||
            window_clocks(&event_us, &clock_us, &wait_us))
            return -1e9;
        double gap_us = clock_gap(event_us, clock_us, wait_us, wait_us);
        if (gap_us > worst) worst = gap_us;
        if (wait_us > *most_wait_us) *most_wait_us = wait_us;
    }
    return worst;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Event time (us) of `kernels` back-to-back empty kernels behind a hold. */
static double empty_kernels_us(int kernels) {
    float ms = -1.0f;
    if (cu.StreamSynchronize(ST->stream) || draw_stamps() || hold(CALIBRATION_SLEEP_US, 0, 0)) return -1.0;
    cu.EventRecord(ST->start_event, ST->stream);
    for (int i = 0; i < kernels; i++) cu.LaunchKernel(core.empty_kernel, 1, 1, 1, 1, 1, 1, 0, ST->stream, NULL, NULL);
    cu.EventRecord(ST->end_event, ST->stream);
    if (cu.EventSynchronize(ST->end_event) || cu.EventElapsedTime(&ms, ST->start_event, ST->end_event)) return -1.0;
    return ms * 1e3;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count) {
    qsort(values, count, sizeof *values, compare_doubles);
    return values[count / 2];
}

/* Per-kernel time (us) of GRAPH_KERNELS empty kernels replayed as one CUDA graph, behind a hold:
 * what a kernel costs inside a stream of work. -1 when graphs are not available here. */
static double graph_empty_kernel_us(void) {
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    float ms = -1.0f;
    double result = -1.0;
    if (!core.capture_stream && cu.StreamCreate(&core.capture_stream, CU_STREAM_NON_BLOCKING)) return -1.0;
    if (cu.StreamBeginCapture(core.capture_stream, CU_STREAM_CAPTURE_MODE_RELAXED)) return -1.0;
    for (int i = 0; i < GRAPH_KERNELS; i++) cu.LaunchKernel(core.empty_kernel, 1, 1, 1, 1, 1, 1, 0, core.capture_stream, NULL, NULL);
    if (cu.StreamEndCapture(core.capture_stream, &graph) || !graph) return -1.0;
    if (!cu.GraphInstantiate(&exec, graph, 0) && !cu.GraphLaunch(exec, ST->stream) && !cu.StreamSynchronize(ST->stream) &&
        !draw_stamps() && !hold(CALIBRATION_SLEEP_US, 0, 0) && !cu.EventRecord(ST->start_event, ST->stream) &&
        !cu.GraphLaunch(exec, ST->stream) && !cu.EventRecord(ST->end_event, ST->stream) &&
        !cu.EventSynchronize(ST->end_event) && !cu.EventElapsedTime(&ms, ST->start_event, ST->end_event))
        result = ms * 1e3 / GRAPH_KERNELS;
    if (exec) cu.GraphExecDestroy(exec);
    cu.GraphDestroy(graph);
    return result;
}

/* The event time of one empty kernel minus that kernel's per-call time in a replayed graph (the
 * reference scripts/timing_validation.py checks against); where graphs fail, the marginal cost of a
 * second kernel in the stream stands in for the graph time. Every stream is drained first: no work
 * left queued (by the submission, at a recheck) runs beside the measurement. */
double measure_overhead(double *spread) {
    double rounds[OVERHEAD_ROUNDS], one[OVERHEAD_SAMPLES], two[OVERHEAD_SAMPLES];
    if (cu.CtxSynchronize()) return -1.0;
    for (int r = 0; r < OVERHEAD_ROUNDS; r++) {
        for (int s = 0; s < OVERHEAD_SAMPLES; s++) {
            use_stream(s); /* over the streams the calls take, so that their offsets average alike */
            one[s] = empty_kernels_us(1);
            two[s] = core.overhead_from_graph ? 0.0 : empty_kernels_us(2);
            if (one[s] < 0 || two[s] < 0) return -1.0;
        }
        double single = median(one, OVERHEAD_SAMPLES), in_stream;
        if (core.overhead_from_graph) {
            double graph[3];
            for (int g = 0; g < 3; g++) graph[g] = graph_empty_kernel_us();
            in_stream = median(graph, 3);
        } else {
            in_stream = median(two, OVERHEAD_SAMPLES) - single;
        }
        if (in_stream < 0) return -1.0;
        rounds[r] = single - in_stream;
    }
    qsort(rounds, OVERHEAD_ROUNDS, sizeof *rounds, compare_doubles);
    *spread = rounds[OVERHEAD_ROUNDS - 1] - rounds[0];
    return rounds[OVERHEAD_ROUNDS / 2];
}

int overhead_consistent(double value, double spread) {
    return value >= 0.0 && value <= OVERHEAD_MAX_US && spread <= OVERHEAD_SPREAD_MAX_US;
}

/* The hold kernel's grid: blocks of equal size that together take every thread slot of an SM, on
 * every SM; core.fills_gpu says whether the occupancy calculator agrees they are all resident. */
static int size_hold_grid(void) {
    CUdevice device;
    int sms, per_sm_threads, block_threads, resident = 0;
    CUI(cu.CtxGetDevice(&device), "cuCtxGetDevice");
    CUI(cu.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), "SM count");
    CUI(cu.DeviceGetAttribute(&per_sm_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device), "threads per SM");
    CUI(cu.DeviceGetAttribute(&block_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device), "threads per block");
    if (block_threads > 1024) block_threads = 1024;
    int per_sm = (per_sm_threads + block_threads - 1) / block_threads;
    core.hold_block = (unsigned)(per_sm_threads / per_sm) & ~31u;
    core.hold_grid = (unsigned)(per_sm * sms);
    CUI(cu.OccupancyMaxActiveBlocksPerMultiprocessor(&resident, core.hold_kernel, (int)core.hold_block, 0),
        "occupancy of the hold kernel");
    core.fills_gpu = resident >= per_sm && core.hold_block * (unsigned)per_sm == (unsigned)per_sm_threads;
    return 0;
}

/* The flush buffer (2x L2), the barrier counter and the stamp slots: one allocation. */
static int allocate_buffers(unsigned long long l2_bytes) {
    uint64_t noise[STAMP_SLOTS];
    core.flush_bytes = (2 * l2_bytes > (1u << 20) ? 2 * l2_bytes : (1u << 20)) & ~15ull;
    CUI(cu.MemAlloc(&ST->flush_buffer, core.flush_bytes + 256 + sizeof noise), "flush buffer allocation");
    ST->counter = ST->flush_buffer + core.flush_bytes;
    ST->stamps = ST->counter + 256;
    if (getrandom(noise, sizeof noise, 0) != sizeof noise) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    CUI(cu.MemsetD8Async(ST->counter, 0, 256, ST->stream), "barrier counter");
    CUI(cu.MemcpyHtoD(ST->stamps, noise, sizeof noise), "stamp slots");
    CUI(cu.MemAllocHost((void **)&ST->stamp_host, 2 * sizeof(uint64_t)), "pinned stamp copies");
    CUI(cu.MemAllocHost((void **)&ST->release, 128), "pinned release and resident words");
    ST->release[0] = ST->release[RESIDENT_WORD] = 0;
    CUI(cu.StreamSynchronize(ST->stream), "synchronize after the setup");
    return 0;
}

int init_gpu(unsigned long long stream_handle, unsigned long long l2_bytes, const char *leaf_ptx) {
    CUmodule module, leaf_module;
    if (!leaf_ptx) { PyErr_SetString(PyExc_RuntimeError, "init on a GPU needs the outputs' leaf kernel (leaf_ptx)"); return -1; }
    if (load_driver()) return -1;
    ST->stream = (CUstream)(uintptr_t)stream_handle; /* the caller's, for the setup; the windows take the call streams */
    CUI(cu.CtxGetCurrent(&core.context), "cuCtxGetCurrent");
    if (!core.context) { PyErr_SetString(PyExc_RuntimeError, "no current CUDA context (initialize torch.cuda first)"); return -1; }
    CUI(cu.EventCreate(&ST->start_event, CU_EVENT_DEFAULT), "cuEventCreate");
    CUI(cu.EventCreate(&ST->end_event, CU_EVENT_DEFAULT), "cuEventCreate");
    CUI(cu.EventCreate(&ST->stamp_event, CU_EVENT_DEFAULT), "cuEventCreate");
    for (int i = 0; i < CALL_STREAMS; i++)
        CUI(cu.StreamCreate(&core.call_streams[i], CU_STREAM_DEFAULT), "creating the call streams");
    CUI(cu.ModuleLoadData(&module, PTX), "loading the core's kernels (PTX JIT)");
    CUI(cu.ModuleGetFunction(&core.hold_kernel, module, "hold_flush"), "cuModuleGetFunction");
    CUI(cu.ModuleGetFunction(&core.stamp_kernel, module, "stamp"), "cuModuleGetFunction");
    CUI(cu.ModuleGetFunction(&core.empty_kernel, module, "empty"), "cuModuleGetFunction");
    CUI(cu.ModuleLoadData(&leaf_module, leaf_ptx), "loading the outputs' leaf kernel (PTX JIT)");
    CUI(cu.ModuleGetFunction(&core.leaf_kernel, leaf_module, "leaf_sha256"), "cuModuleGetFunction");
    if (allocate_buffers(l2_bytes) || size_hold_grid()) return -1;
    double queued = clock_gap_us(0, &ST->stamp_wait_us[0]), idle = clock_gap_us(1, &ST->stamp_wait_us[1]);
    if (queued < -1e8 || idle < -1e8) { cuda_failed(1, "second clock calibration"); return -1; }
    for (int mode = 0; mode < 2; mode++) ST->stamp_wait_us[mode] += CLOCK_MARGIN_US;
    if (ST->stamp_wait_us[1] < ST->stamp_wait_us[0]) ST->stamp_wait_us[1] = ST->stamp_wait_us[0];
    ST->clock_slack_us[0] = (queued > 0 ? queued : 0) + CLOCK_MARGIN_US;
    ST->clock_slack_us[1] = (idle > queued ? idle : queued > 0 ? queued : 0) + CLOCK_MARGIN_US;
    core.overhead_from_graph = graph_empty_kernel_us() > 0.0;
    for (int attempt = 0; attempt < OVERHEAD_ATTEMPTS; attempt++) {
        if (attempt && (hold(RETRY_SPIN_US * attempt, 0, 0) || cu.StreamSynchronize(ST->stream)))
            { cuda_failed(1, "the clocks' warm-up before measuring the event overhead again"); return -1; }
        ST->overhead_us = measure_overhead(&ST->overhead_spread_us);
        if (ST->overhead_us < -0.5) { cuda_failed(1, "overhead measurement"); return -1; }
        if (overhead_consistent(ST->overhead_us, ST->overhead_spread_us)) {
            ST->first_overhead_us = ST->overhead_us;
            return 0;
        }
    }
    char why[200]; /* PyErr_Format has no %f: formatted here */
    snprintf(why, sizeof why, "harness fault: event overhead %.2f us, spread %.2f us over %d rounds, %d times "
             "(bounds %.1f us, spread %.1f us)", ST->overhead_us, ST->overhead_spread_us, OVERHEAD_ROUNDS,
             OVERHEAD_ATTEMPTS, OVERHEAD_MAX_US, OVERHEAD_SPREAD_MAX_US);
    PyErr_SetString(PyExc_RuntimeError, why);
    return -1;
}

double host_clock_us(void) { return now_us(); }
