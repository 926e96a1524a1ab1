/* mock_jpeg.c — backend_jpeg.c's entry points for the worker mock, whose jobs carry pixels, never
 * JPEG bytes: the real file would pull in every codec. */
#include "backend.h"
#include "errors.h"

int backend_gpu_jpeg(const struct backend *b)
{
    (void)b;
    return 0;
}

int backend_decode_src(struct job *job)
{
    return job->src ? edged_fail(job->err, EDGED_E_INTERNAL, "the worker mock has no JPEG decoder") : 0;
}

void backend_submit_jpeg(struct backend *b, struct job *const *jobs, const int *streams, int n, int *rcs)
{
    (void)b, (void)streams;
    for (int i = 0; i < n; i++)
        rcs[i] = backend_decode_src(jobs[i]);
}

int backend_finish_jpeg(struct backend *b, int s, struct job *job)
{
    (void)b, (void)s, (void)job;
    return 1; /* no JPEG output here: the pixels are left for backend_take */
}

void backend_jpeg_profile(struct backend *b, double ms[BACKEND_JPEG_STAGES])
{
    (void)b;
    for (int i = 0; i < BACKEND_JPEG_STAGES; i++)
        ms[i] = 0.0;
}

void backend_jpeg_counts(struct backend_jpeg_counts *c)
{
    *c = (struct backend_jpeg_counts){0};
}
