/* jpeg_job.h — a job's JPEG parts that every lane shares: the CPU decode of JPEG input bytes and
 * the nvJPEG path's counters. backend.c uses these; the batched nvJPEG submit above it is
 * backend_jpeg.c. */
#ifndef EDGED_JPEG_JOB_H
#define EDGED_JPEG_JOB_H

#include "jobs/queue.h"

/* Decodes job->src on the CPU into job->in (orientation applied); 0 at once for a job without
 * src or already decoded. EDGED_E_BAD_IMAGE, EDGED_E_NOMEM with the message in job->err. */
int jpegjob_decode_src(struct job *job);

/* What the nvJPEG path did since start, for /metrics. */
enum jpegjob_event { JPEGJOB_GPU_DECODED, JPEGJOB_GPU_ENCODED, JPEGJOB_CPU_DECODED, JPEGJOB_CPU_ENCODED };
struct jpegjob_counts {
    unsigned long long gpu_decoded, gpu_encoded, cpu_fallback_decode, cpu_fallback_encode;
};
void jpegjob_count(enum jpegjob_event e);
void jpegjob_counts(struct jpegjob_counts *c);

#endif
