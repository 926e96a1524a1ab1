/* mock_jpeg.c — the entry points of backend_jpeg.c, jpeg_job.c and dev_encode.c for the worker
 * mock: the real files would pull in every codec. A job with JPEG bytes "decodes" to an 8 x 8 RGB image and goes
 * on as a pixel job; the sizes of the batches are recorded, and the test says whether the decoder
 * is busy. */
#include <stdatomic.h>

#include "jobs/backend.h"
#include "jobs/dev_encode.h"
#include "jobs/jpeg_job.h"
#include "errors.h"

atomic_int mock_jpeg_busy, mock_jpeg_nbatches;
int mock_jpeg_batch[64];

int backend_gpu_jpeg(const struct backend *b)
{
    (void)b;
    return 0;
}

int jpegjob_decode_src(struct job *job)
{
    return job->src && !job->in.px ? edged_fail(job->err, EDGED_E_INTERNAL, "the worker mock has no JPEG decoder")
                                   : 0;
}

void backend_submit_jpeg(struct backend *b, struct job *const *jobs, const int *streams, int n, int *rcs)
{
    int k = atomic_load(&mock_jpeg_nbatches); /* one writer: the worker's thread */

    if (k < 64)
        mock_jpeg_batch[k] = n;
    atomic_store(&mock_jpeg_nbatches, k + 1); /* after the size, for the test thread's reads */
    for (int i = 0; i < n; i++) {
        img_free(&jobs[i]->in);
        rcs[i] = img_alloc(&jobs[i]->in, 8, 8, 3, jobs[i]->err);
        if (rcs[i] == 0)
            rcs[i] = backend_submit(b, streams[i], jobs[i]);
    }
}

int backend_jpeg_decoding(struct backend *b)
{
    (void)b;
    return atomic_load(&mock_jpeg_busy);
}

void devenc_behind(struct gconv_ctx *g, int s, const struct job *job)
{
    (void)g, (void)s, (void)job;
}

int devenc_result(struct gconv_ctx *g, int s, struct job *job)
{
    (void)g, (void)s, (void)job;
    return 1; /* no device encode here: the pixels are left for backend_take */
}

void backend_jpeg_profile(struct backend *b, double ms[BACKEND_JPEG_STAGES])
{
    (void)b;
    for (int i = 0; i < BACKEND_JPEG_STAGES; i++)
        ms[i] = 0.0;
}

void jpegjob_counts(struct jpegjob_counts *c)
{
    *c = (struct jpegjob_counts){0};
}
