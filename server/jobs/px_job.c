/* px_job.c — a GPU job's CPU-decoded pixels copied into pinned host memory on the request's thread,
 * and the counters of that path. */
#include "jobs/px_job.h"

#include <stdatomic.h>
#include <string.h>

#include "gpinned.h"

static atomic_ullong n_pinned, n_staged; /* process-wide, as the pool is */

/* The copy made here is the one gconv_submit would make on the GPU worker's thread, into its
 * stream's staging, on the one thread that submits every job while the request threads have cores
 * to spare (the worker's profile put such a submit at about 2 ms for a 2048 x 2048 RGB photograph).
 * The ordinary pixels are freed at once: the job holds one copy of its input, as before. */
int pxjob_pin(struct job *job)
{
    const struct img *in = &job->in;
    int w = in->w, h = in->h, ch = in->ch;
    size_t row = (size_t)w * (size_t)ch, cap = 0;
    uint8_t *p;

    if (job->lane != LANE_GPU || !in->px || in->packed || job->src || job->in_pinned)
        return 0;
    if (!(p = gpinned_get(row * (size_t)h, &cap))) {
        atomic_fetch_add(&n_staged, 1);
        return 0;
    }
    for (int y = 0; y < h; y++)
        memcpy(p + (size_t)y * row, in->px + (size_t)y * in->stride, row);
    job->in_pinned = p, job->in_pinned_cap = cap;
    img_free(&job->in);
    job->in = (struct img){.w = w, .h = h, .ch = ch};
    atomic_fetch_add(&n_pinned, 1);
    return 1;
}

void pxjob_counts(struct pxjob_counts *c)
{
    c->pinned = atomic_load(&n_pinned);
    c->staged = atomic_load(&n_staged);
}
