/* test_backend_jpeg.c — jobs that carry JPEG bytes (server/jobs/jpeg_job.c) on the CPU: the decode
 * that serves what nvJPEG refuses gives the pixels and orientation of imageio_load's decode, a job
 * with bytes runs on the CPU lane as the job with pixels does (exactly equal output), a header that
 * does not match the bytes is refused, and the counters start at zero. */
#include <stdlib.h>
#include <string.h>

#include "jobs/backend.h"
#include "jobs/jpeg_job.h"
#include "check.h"
#include "filter.h"
#include "codec/image_io.h"
#include "imgdiff.h"
#include "jobs/queue.h"

/* A job with a copy of the JPEG jpg as its input (in a block it owns, as an endpoint's job owns
 * the request's body), sized w x h x ch after orientation o. */
static struct job *jpeg_job(const uint8_t *jpg, size_t len, int w, int h, int ch, int o)
{
    struct job *job = job_new();

    if (!job || !(job->src_block = malloc(len))) {
        job_release(NULL, job);
        return NULL;
    }
    memcpy(job->src_block, jpg, len);
    job->src = job->src_block;
    job->src_len = len;
    job->orientation = o;
    job->in = (struct img){.w = w, .h = h, .ch = ch};
    return job;
}

static void test_orientations(const uint8_t *jpg, size_t len, const struct img *src, struct backend *b)
{
    char err[EDGED_ERR_LEN];
    struct filter_spec spec;

    filter_spec_init(&spec, FILTER_GAUSSIAN5);
    for (int o = 1; o <= 8; o++) {
        int swap = o >= 5, w = swap ? src->h : src->w, h = swap ? src->w : src->h;
        struct job *job = jpeg_job(jpg, len, w, h, src->ch, o), *ref = job_new();
        struct img dec = {0};

        if (!job || !ref) {
            CHECK(0, "out of memory");
            job_release(NULL, job);
            job_release(NULL, ref);
            return;
        }
        CHECK(imageio_load(jpg, len, NULL, 0, &dec, err) == 0, "imageio_load: %s", err);
        CHECK(imageio_orient(&dec, o, err) == 0, "imageio_orient: %s", err);
        ref->in = dec;
        CHECK(filter_plan_make(&spec, src->ch, &job->plan, err) == 0, "plan: %s", err);
        ref->plan = job->plan;
        job->variant = ref->variant = VARIANT_CPU;
        CHECK(backend_run_cpu(b, job, 1, NULL) == 0, "orientation %d: %s", o, job->err);
        CHECK(job->in.px && imgdiff_max(&job->in, &ref->in) == 0, "orientation %d: decode differs", o);
        CHECK(backend_run_cpu(b, ref, 1, NULL) == 0, "reference: %s", ref->err);
        CHECK(imgdiff_max(&job->out, &ref->out) == 0, "orientation %d: output differs", o);
        job_release(NULL, job);
        job_release(NULL, ref);
    }
}

int main(void)
{
    char err[EDGED_ERR_LEN];
    struct backend *b = NULL;
    struct jpegjob_counts c;
    struct img src = {0};
    uint8_t *jpg = NULL;
    size_t len = 0;
    struct job *job;

    CHECK(backend_open(&b, BACKEND_CPU, NULL, 0, 1, 1, err) == 0, "backend_open: %s", err);
    CHECK(!backend_gpu_jpeg(b), "the CPU backend decodes no JPEG on a device");
    CHECK(img_alloc(&src, 37, 23, 3, err) == 0, "%s", err);
    for (size_t i = 0; i < src.stride * (size_t)src.h; i++)
        src.px[i] = (uint8_t)(i * 7 % 251);
    CHECK(jpegio_encode(&src, 90, &jpg, &len, err) == 0, "jpegio_encode: %s", err);
    if (b && jpg)
        test_orientations(jpg, len, &src, b);

    job = jpeg_job(jpg, len, 36, 23, 3, 1); /* a header that does not match the bytes */
    CHECK(job && jpegjob_decode_src(job) == EDGED_E_BAD_IMAGE && !job->in.px,
          "a size mismatch must be refused");
    job_release(NULL, job);
    job = job_new();
    CHECK(job && jpegjob_decode_src(job) == 0, "a job without bytes has nothing to decode");
    job_release(NULL, job);

    jpegjob_counts(&c);
    CHECK(c.gpu_decoded == 0 && c.gpu_encoded == 0 && c.cpu_fallback_decode == 0 &&
              c.cpu_fallback_encode == 0,
          "no counts without nvJPEG work");
    free(jpg);
    img_free(&src);
    backend_close(b);
    return check_summary();
}
