/* dev_encode.h — the device encode of a GPU job's answer (JPEG or PNG) and the PNG counters. */
#ifndef EDGED_DEV_ENCODE_H
#define EDGED_DEV_ENCODE_H

#include "jobs/queue.h"

struct gconv_ctx;

/* The end of a GPU job on stream s of g: a job with enc has its result encoded on the device into
 * job->out_enc (0). The pixels of a job without, and of one the device refuses to encode (nvJPEG:
 * alpha, a packed map; PNG: a stream over one IDAT chunk, no device memory: counted, the CPU
 * encoder then serves it), are left for backend_take (1). EDGED_E_GPU_FATAL when the context died. */
int devenc_result(struct gconv_ctx *g, int s, struct job *job);

/* Enqueues the PNG encode of a job with enc PNG on stream s right behind the job just submitted
 * there (gconv_png_encode_behind), so that devenc_result only copies the bytes; when it cannot,
 * devenc_result encodes. (A JPEG answer is enqueued by gconv_submit_jpeg itself.) */
void devenc_behind(struct gconv_ctx *g, int s, const struct job *job);

/* PNG answers of the GPU lane since start, for /metrics: encoded on the device, or on the CPU after
 * the device refused. (The JPEG ones are jpegjob_counts.) */
struct devenc_counts {
    unsigned long long png_gpu_encoded, png_cpu_fallback;
};
void devenc_counts(struct devenc_counts *c);

#endif
