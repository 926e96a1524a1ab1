/* backend_png.c — the GPU lane's jobs whose input is PNG bytes: the batched device decode, with the
 * CPU decode (png_job.c) serving what the device refuses at submit or declines when it runs. */
#include "jobs/backend.h"

#include <string.h>

#include "errors.h"
#include "gconv.h"
#include "jobs/png_job.h"

int backend_gpu_png(const struct backend *b)
{
    return backend_has_gpu(b) && gconv_png_available(backend_gpu((struct backend *)b));
}

/* A job decoded here on the CPU (on the GPU worker's thread: rare, the endpoint keeps the kinds the
 * device never takes away from it), then submitted with its pixels. */
static int submit_decoded(struct backend *b, int s, struct job *job, enum pngjob_event why)
{
    pngjob_count(why);
    return backend_submit(b, s, job); /* decodes job->src first */
}

static int submit_refused(struct backend *b, int s, struct job *job)
{
    return submit_decoded(b, s, job, PNGJOB_CPU_REFUSED);
}

void backend_submit_png(struct backend *b, struct job *const *jobs, const int *streams, int n, int *rcs)
{
    struct gconv_png_job gj[GCONV_PNG_MAX_BATCH];
    int rc;

    memset(gj, 0, sizeof(gj[0]) * (size_t)n);
    for (int i = 0; i < n; i++) {
        struct job *job = jobs[i];
        int block = backend_resolve(b, job);
        int pinned = job->png_pinned && job->png_z == job->png_pinned; /* pngjob_take put it there */
        gj[i] = (struct gconv_png_job){.s = streams[i], .lay = job->png_lay, .z = job->png_z,
                                       .z_len = job->png_z_len, .z_pinned = pinned, .plan = &job->plan,
                                       .v = job->used, .w = job->in.w, .h = job->in.h, .block = block};
    }
    rc = gconv_submit_png(backend_gpu(b), gj, n);
    for (int i = 0; i < n; i++)
        rcs[i] = backend_batch_rc(b, streams[i], jobs[i], rc, gj[i].rc, GCONV_E_PNG_REFUSED, submit_refused,
                                  gj[i].err);
}

int backend_png_declined(struct backend *b, int s, struct job *job)
{
    int rc = submit_decoded(b, s, job, PNGJOB_CPU_DECLINED);

    return rc < 0 ? rc : BACKEND_RESUBMITTED;
}

int backend_png_decoding(struct backend *b) { return backend_has_gpu(b) && gconv_png_decoding(backend_gpu(b)); }
