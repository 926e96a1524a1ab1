/* backend_jpeg.c — the GPU lane's jobs whose input is JPEG bytes: the batched nvJPEG submit, with
 * the CPU decode (jpeg_job.c) serving what nvJPEG refuses. */
#include "jobs/backend.h"

#include <string.h>

#include "errors.h"
#include "gconv.h"
#include "jobs/jpeg_job.h"

int backend_gpu_jpeg(const struct backend *b)
{
    return backend_has_gpu(b) && gconv_jpeg_available(backend_gpu((struct backend *)b));
}

/* A job nvJPEG refused: decoded here on the CPU (on the GPU worker's thread: rare, the request path
 * keeps the kinds nvJPEG never takes away from it), then submitted with its pixels. */
static int submit_fallback(struct backend *b, int s, struct job *job)
{
    jpegjob_count(JPEGJOB_CPU_DECODED);
    return backend_submit(b, s, job); /* decodes job->src first */
}

void backend_submit_jpeg(struct backend *b, struct job *const *jobs, const int *streams, int n, int *rcs)
{
    struct gconv_jpeg_job gj[GCONV_JPEG_MAX_BATCH];
    int rc;

    memset(gj, 0, sizeof(gj[0]) * (size_t)n);
    for (int i = 0; i < n; i++) {
        struct job *job = jobs[i];
        int block = backend_resolve(b, job);
        gj[i] = (struct gconv_jpeg_job){.s = streams[i],
                                        .data = job->src,
                                        .len = job->src_len,
                                        .orientation = job->orientation,
                                        .head = job->jpeg_head_read ? &job->jpeg_head : NULL,
                                        .plan = &job->plan,
                                        .v = job->used,
                                        .quality = job->enc == JOB_ENC_JPEG ? job->enc_quality : 0,
                                        .w = job->in.w,
                                        .h = job->in.h,
                                        .block = block};
    }
    rc = gconv_submit_jpeg(backend_gpu(b), gj, n);
    for (int i = 0; i < n; i++) {
        rcs[i] = backend_batch_rc(b, streams[i], jobs[i], rc, gj[i].rc, GCONV_E_JPEG_REFUSED, submit_fallback,
                                  gj[i].err);
        if (gj[i].rc == 0 && rc != EDGED_E_GPU_FATAL)
            jpegjob_count(JPEGJOB_GPU_DECODED);
    }
}

int backend_jpeg_decoding(struct backend *b) { return backend_has_gpu(b) && gconv_jpeg_decoding(backend_gpu(b)); }

void backend_jpeg_profile(struct backend *b, double ms[BACKEND_JPEG_STAGES])
{
    _Static_assert(BACKEND_JPEG_STAGES == GCONV_JPEG_STAGES, "one list of stages");
    gconv_jpeg_profile(backend_has_gpu(b) ? backend_gpu(b) : NULL, ms);
}
