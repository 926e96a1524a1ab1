/* jpeg_job.c — a job's JPEG parts that every lane shares: the CPU decode of its input bytes and the
 * nvJPEG path's counters (the device encode of an answer is dev_encode.c's). */
#include "jobs/jpeg_job.h"

#include <stdatomic.h>

#include "codec/image_io.h"
#include "errors.h"

/* Process-wide: one backend serves a process. Indexed by enum jpegjob_event. */
static atomic_ullong counts[4];

void jpegjob_count(enum jpegjob_event e) { atomic_fetch_add(&counts[e], 1); }

void jpegjob_counts(struct jpegjob_counts *c)
{
    c->gpu_decoded = atomic_load(&counts[JPEGJOB_GPU_DECODED]);
    c->gpu_encoded = atomic_load(&counts[JPEGJOB_GPU_ENCODED]);
    c->cpu_fallback_decode = atomic_load(&counts[JPEGJOB_CPU_DECODED]);
    c->cpu_fallback_encode = atomic_load(&counts[JPEGJOB_CPU_ENCODED]);
}

int jpegjob_decode_src(struct job *job)
{
    struct jpegio_info info;
    struct img im = {0};
    int rc;

    if (!job->src || job->in.px)
        return 0;
    if ((rc = jpegio_peek(job->src, job->src_len, &info, job->err)) < 0 ||
        (rc = jpegio_decode(job->src, job->src_len, &info, &im, job->err)) < 0 ||
        (rc = imageio_orient(&im, job->orientation, job->err)) < 0) {
        img_free(&im);
        return rc;
    }
    if (im.w != job->in.w || im.h != job->in.h || im.ch != job->in.ch) {
        img_free(&im);
        return edged_fail(job->err, EDGED_E_BAD_IMAGE,
                          "the JPEG decodes to %d x %d x %d, its header said %d x %d x %d", im.w, im.h, im.ch,
                          job->in.w, job->in.h, job->in.ch);
    }
    job->in = im;
    return 0;
}
