/* dev_encode.c — the device encode of a GPU job's answer: one step for JPEG and PNG. */
#include "jobs/dev_encode.h"

#include <stdatomic.h>
#include <string.h>

#include "errors.h"
#include "gconv.h"
#include "jobs/jpeg_job.h"

/* Process-wide, as jpeg_job.c's: one backend serves a process. */
static atomic_ullong png_gpu, png_cpu;

void devenc_counts(struct devenc_counts *c)
{
    c->png_gpu_encoded = atomic_load(&png_gpu);
    c->png_cpu_fallback = atomic_load(&png_cpu);
}

void devenc_behind(struct gconv_ctx *g, int s, const struct job *job)
{
    if (job->enc == JOB_ENC_PNG)
        (void)gconv_png_encode_behind(g, s, job->enc_quality, job->enc_depth);
}

/* The result's pixels are copied to the host only when the device encode fails and the connection
 * encodes them. */
int devenc_result(struct gconv_ctx *g, int s, struct job *job)
{
    char err[EDGED_ERR_LEN];
    int rc, png = job->enc == JOB_ENC_PNG;

    if (job->enc == JOB_ENC_NONE)
        return 1;
    rc = png ? gconv_png_encode_result(g, s, job->enc_quality, job->enc_depth, &job->out_enc,
                                       &job->out_enc_len, err)
             : gconv_jpeg_encode_result(g, s, job->enc_quality, &job->out_enc, &job->out_enc_len, err);
    if (rc == 0) {
        if (png)
            atomic_fetch_add(&png_gpu, 1);
        else
            jpegjob_count(JPEGJOB_GPU_ENCODED);
        return 0;
    }
    if (rc == EDGED_E_GPU_FATAL || gconv_is_dead(g)) {
        memcpy(job->err, err, EDGED_ERR_LEN);
        return EDGED_E_GPU_FATAL;
    }
    if (png) /* the connection encodes out on the CPU */
        atomic_fetch_add(&png_cpu, 1);
    else
        jpegjob_count(JPEGJOB_CPU_ENCODED);
    return 1;
}
