/* ginflate.h — inflate of zlib streams on the device, parallel within each stream (the speculative
 * block decoder of cpu_ref/inflate_spec.h run by CUDA kernels). .cu files only. */
#ifndef EDGED_GINFLATE_H
#define EDGED_GINFLATE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Streams one ginflate_enqueue call takes at most. */
#define GINFLATE_MAX_BATCH 32

/* The verdict each stream's device status word receives. */
#define GINFLATE_OK 0       /* exactly out_len bytes, the stream ends there, Adler-32 checked */
#define GINFLATE_DECLINED 1 /* anything else (malformed, a stretch it cannot place, a limit):
                             * the caller hands the stream to the CPU decoder, whose verdict stands */

/* Device scratch for one CUDA stream's inflates: grown on the host (by ginflate_enqueue, before it
 * enqueues anything) to fit the batch, then reused. */
struct ginflate;

/* Creates the state on the current device. The tuning knob inflate_seg (EDGED_GPU_INFLATE_SEG,
 * api/tuning.h), read here once, chooses the speculative and placing decodes (phases 2 and 4) for
 * the state's whole life: 0 one thread per candidate and per block of the chain, 1 a thread block
 * per candidate and per block, a thread per segment of its bits. Both give the same verdicts and
 * bytes. Returns 0, or EDGED_E_GPU_OOM / EDGED_E_GPU_FATAL with a
 * message in err. */
int ginflate_create(struct ginflate **out, char *err);
/* Frees the scratch; accepts NULL. Call when no work of it is in flight. */
void ginflate_destroy(struct ginflate *g);
/* Device bytes of scratch held, for metrics. */
size_t ginflate_mem(const struct ginflate *g);

/* Enqueues on `stream`, without waiting for the device, the inflate of n (1..GINFLATE_MAX_BATCH)
 * zlib streams: stream i is in_len[i] bytes at d_in[i] (device memory, the concatenated IDAT
 * data), and must inflate to exactly out_len[i] bytes at d_out[i] (device memory). d_status[i]
 * (device ints) receives GINFLATE_OK or GINFLATE_DECLINED; d_out[i] is undefined unless OK.
 * Every read and write of the kernels is bounds-checked and every loop has a step bound, so any
 * input bytes are safe. Returns 0 when enqueued, or EDGED_E_GPU_OOM (scratch could not grow: the
 * caller decodes these on the CPU) / EDGED_E_GPU_FATAL with a message in err. */
int ginflate_enqueue(struct ginflate *g, cudaStream_t stream, int n, const uint8_t *const *d_in,
                     const size_t *in_len, uint8_t *const *d_out, const size_t *out_len, int *d_status,
                     char *err);

#ifdef __cplusplus
}
#endif
#endif
