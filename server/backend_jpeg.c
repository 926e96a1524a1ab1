/* backend_jpeg.c — jobs whose input is JPEG bytes: the batched nvJPEG submit of the GPU lane, the
 * CPU decode that serves what nvJPEG refuses, the JPEG encode of results on the device, and their
 * counters. */
#include "backend.h"

#include <stdatomic.h>
#include <string.h>

#include "errors.h"
#include "gconv.h"
#include "image_io.h"

/* Process-wide: one backend serves a process. */
static atomic_ullong n_gpu_decoded, n_gpu_encoded, n_fallback_decode, n_fallback_encode;

int backend_gpu_jpeg(const struct backend *b)
{
    return backend_has_gpu(b) && gconv_jpeg_available(backend_gpu((struct backend *)b));
}

int backend_decode_src(struct job *job)
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

/* A job nvJPEG refused: decoded here on the CPU (on the GPU worker's thread: rare, the request path
 * keeps the kinds nvJPEG never takes away from it), then submitted with its pixels. */
static int submit_fallback(struct backend *b, int s, struct job *job)
{
    int rc;

    atomic_fetch_add(&n_fallback_decode, 1);
    if ((rc = backend_decode_src(job)) < 0)
        return rc;
    return backend_submit(b, s, job);
}

void backend_submit_jpeg(struct backend *b, struct job *const *jobs, const int *streams, int n, int *rcs)
{
    struct gconv_jpeg_job gj[GCONV_JPEG_MAX_BATCH];
    int rc;

    memset(gj, 0, sizeof(gj[0]) * (size_t)n);
    for (int i = 0; i < n; i++) {
        struct job *job = jobs[i];
        if (job->variant == VARIANT_AUTO)
            job->variant = backend_pick(b, &job->plan, job->in.w, job->in.h);
        job->used = job->variant;
        gj[i] = (struct gconv_jpeg_job){.s = streams[i],
                                        .data = job->src,
                                        .len = job->src_len,
                                        .orientation = job->orientation,
                                        .plan = &job->plan,
                                        .v = job->used,
                                        .quality = job->jpeg_quality,
                                        .w = job->in.w,
                                        .h = job->in.h,
                                        .block = job->block ? job->block : VARIANT_DEFAULT_BLOCK};
    }
    rc = gconv_submit_jpeg(backend_gpu(b), gj, n);
    for (int i = 0; i < n; i++) {
        rcs[i] = rc == EDGED_E_GPU_FATAL ? rc : gj[i].rc;
        if (rcs[i] == GCONV_E_JPEG_REFUSED)
            rcs[i] = submit_fallback(b, streams[i], jobs[i]);
        else if (rcs[i] < 0)
            memcpy(jobs[i]->err, gj[i].err, EDGED_ERR_LEN);
        else
            atomic_fetch_add(&n_gpu_decoded, 1);
    }
}

int backend_jpeg_decoding(struct backend *b) { return backend_has_gpu(b) && gconv_jpeg_decoding(backend_gpu(b)); }

/* The pixels of a job with JPEG output are copied to the host only when the device encode fails
 * and the connection encodes them. */
int backend_finish_jpeg(struct backend *b, int s, struct job *job)
{
    char err[EDGED_ERR_LEN];
    int rc;

    if (job->jpeg_quality <= 0)
        return 1;
    rc = gconv_jpeg_encode_result(backend_gpu(b), s, job->jpeg_quality, &job->out_jpeg, &job->out_jpeg_len,
                                  err);
    if (rc == 0) {
        atomic_fetch_add(&n_gpu_encoded, 1);
        return 0;
    }
    if (rc == EDGED_E_GPU_FATAL || gconv_is_dead(backend_gpu(b))) {
        memcpy(job->err, err, EDGED_ERR_LEN);
        return EDGED_E_GPU_FATAL;
    }
    atomic_fetch_add(&n_fallback_encode, 1); /* the connection encodes out on the CPU */
    return 1;
}

void backend_jpeg_profile(struct backend *b, double ms[BACKEND_JPEG_STAGES])
{
    _Static_assert(BACKEND_JPEG_STAGES == GCONV_JPEG_STAGES, "one list of stages");
    gconv_jpeg_profile(backend_has_gpu(b) ? backend_gpu(b) : NULL, ms);
}

void backend_jpeg_counts(struct backend_jpeg_counts *c)
{
    c->gpu_decoded = atomic_load(&n_gpu_decoded);
    c->gpu_encoded = atomic_load(&n_gpu_encoded);
    c->cpu_fallback_decode = atomic_load(&n_fallback_decode);
    c->cpu_fallback_encode = atomic_load(&n_fallback_encode);
}
