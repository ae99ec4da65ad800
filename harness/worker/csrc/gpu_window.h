/* The GPU side of one timed call (gpu_window.c): the hold-and-flush kernel before the start event,
 * the end event and the second clock after it, the event overhead. */
#ifndef NVFP4_GPU_WINDOW_H
#define NVFP4_GPU_WINDOW_H

#define OVERHEAD_ROUNDS 5
/* Streams the windows take in turn (CALL_STREAMS in harness/contract/messages.py): on an H200 a short
 * kernel's event time moved with the stream it ran on, by sd 0.05 us, alike for every call on that stream
 * (docs/timing.md), so a process timing every call on one stream kept that stream's offset. Blocking
 * streams: work the submission puts on the legacy default stream still falls between the events. */
#define CALL_STREAMS 8
#define OVERHEAD_MAX_US 8.0
#define OVERHEAD_SPREAD_MAX_US 0.5
/* A recheck may lower the overhead in use, or raise it at most this far above the worker's first
 * measurement (taken before the submission existed): a submission that keeps the GPU busy while the
 * core measures can only lengthen the measurement, which would shorten every time it then subtracts. */
#define OVERHEAD_RAISE_MAX_US 0.1

/* Once, before the import: driver, context, buffers, kernels (the outputs' leaf kernel from ``leaf_ptx``),
 * overhead and clock calibration. The hidden page is open. 0, or -1 with an exception. */
int init_gpu(unsigned long long stream_handle, unsigned long long l2_bytes, const char *leaf_ptx);
/* The next windows run on call stream `turn` % CALL_STREAMS (a timed call's turn is its index). The hidden
 * page is open. */
void use_stream(long long turn);
/* Every stream idle, persisting L2 reset. The hidden page is open. */
int quiet_gpu(void);
/* Behind it (and a drawn call's replay, queued on the core's stream in between, drawn_inputs.c): the
 * hold-and-flush kernel (it stamps the second clock as it ends), the start event. The hidden page is open. */
int start_window(double sleep_us);
/* The end event and the second clock's end stamp; *exposed: the GPU had reached the start event
 * before the host had queued all of this. The hidden page is open. */
int close_window(int *exposed);
/* One window read on both clocks (us): the events, the second clock (%globaltimer stamps), how much
 * more the second clock read less the end stamp's own wait (gap), and the allowance calibrated for
 * such a window. Signed into each call's MAC; the parent judges a case's readings together. */
typedef struct {
    double event_us, clock_us, gap_us, allowance_us;
} clock_reading;

/* After the copies: the last window's reading (the allowance for an exposed call if `exposed`). */
int read_window(int exposed, clock_reading *reading);
/* The fixed cost an event pair adds to one kernel (median of OVERHEAD_ROUNDS); *spread: max - min. */
double measure_overhead(double *spread);
int overhead_consistent(double value, double spread);
double host_clock_us(void); /* CLOCK_MONOTONIC in us */
#endif
