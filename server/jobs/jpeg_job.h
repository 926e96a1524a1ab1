/* jpeg_job.h — a job's JPEG parts that every lane shares: the CPU decode of JPEG input bytes, the
 * device encode of a JPEG answer, and the nvJPEG path's counters. backend.c uses these; the
 * batched nvJPEG submit above it is backend_jpeg.c. */
#ifndef EDGED_JPEG_JOB_H
#define EDGED_JPEG_JOB_H

#include "jobs/queue.h"

struct gconv_ctx;

/* Decodes job->src on the CPU into job->in (orientation applied); 0 at once for a job without
 * src or already decoded. EDGED_E_BAD_IMAGE, EDGED_E_NOMEM with the message in job->err. */
int jpegjob_decode_src(struct job *job);

/* The end of a GPU job on stream s of g: a job with jpeg_quality has its result encoded on the
 * device into job->out_jpeg (0). The pixels of a job without, and of one nvJPEG refuses to encode
 * (alpha, a packed map: counted, the CPU encoder then serves it), are left for backend_take (1).
 * EDGED_E_GPU_FATAL when the context died. */
int jpegjob_encode_result(struct gconv_ctx *g, int s, struct job *job);

/* What the nvJPEG path did since start, for /metrics. */
enum jpegjob_event { JPEGJOB_GPU_DECODED, JPEGJOB_GPU_ENCODED, JPEGJOB_CPU_DECODED, JPEGJOB_CPU_ENCODED };
struct jpegjob_counts {
    unsigned long long gpu_decoded, gpu_encoded, cpu_fallback_decode, cpu_fallback_encode;
};
void jpegjob_count(enum jpegjob_event e);
void jpegjob_counts(struct jpegjob_counts *c);

#endif
