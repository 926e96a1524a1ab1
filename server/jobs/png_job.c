/* png_job.c — a job's PNG input left compressed for the device decoder: the take, the CPU decode,
 * the backlog rule and the counters. */
#include "jobs/png_job.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "gpinned.h"
#include "png_layout.h"
#include "codec/png_decode.h"
#include "codec/png_io.h"

/* Process-wide: one backend serves a process. Indexed by enum pngjob_event. */
static atomic_ullong counts[PNGJOB_EVENTS];
static atomic_size_t backlog;

void pngjob_count(enum pngjob_event e) { atomic_fetch_add(&counts[e], 1); }

void pngjob_counts(struct pngjob_counts *c)
{
    c->gpu_decoded = atomic_load(&counts[PNGJOB_GPU_DECODED]);
    c->cpu_refused = atomic_load(&counts[PNGJOB_CPU_REFUSED]);
    c->cpu_declined = atomic_load(&counts[PNGJOB_CPU_DECLINED]);
    c->cpu_busy = atomic_load(&counts[PNGJOB_CPU_BUSY]);
    c->z_pinned = atomic_load(&counts[PNGJOB_Z_PINNED]);
    c->z_unpinned = atomic_load(&counts[PNGJOB_Z_UNPINNED]);
}

int pngjob_gpu_ok(size_t n, int cpu_free, size_t limit)
{
    (void)n;
    if (atomic_load(&backlog) >= limit && cpu_free) {
        pngjob_count(PNGJOB_CPU_BUSY);
        return 0;
    }
    return 1;
}

void pngjob_backlog_begin(size_t n) { atomic_fetch_add(&backlog, n); }

void pngjob_backlog_end(size_t n) { atomic_fetch_sub(&backlog, n); }

/* The layout of the job's PNG (src) and its zlib stream, read on the request's thread so that the
 * one GPU worker thread copies nothing: every chunk's CRC checked, and the stream (one IDAT chunk
 * or several) copied in the same pass into a pinned buffer of the pool, which the device uploads
 * from directly. Without a buffer (no device, the pool's cap reached) the stream stays in src, or
 * for several IDAT chunks in their join, and the worker stages it. 0, or pngdec_layout's refusal. */
static int take_stream(struct job *job, char *err)
{
    size_t cap = 0;
    uint8_t *p = gpinned_get(job->src_len, &cap);

    if (!p) {
        pngjob_count(PNGJOB_Z_UNPINNED);
        return pngdec_layout(job->src, job->src_len, job->png_lay, &job->png_z, &job->png_z_len, &job->png_join,
                             err);
    }
    if (pngdec_layout_into(job->src, job->src_len, job->png_lay, p, &job->png_z_len) != 0) {
        gpinned_put(p, cap);
        return PNGDEC_DECLINED;
    }
    job->png_z = job->png_pinned = p;
    job->png_pinned_cap = cap;
    pngjob_count(PNGJOB_Z_PINNED);
    return 0;
}

int pngjob_take(struct job *job, const uint8_t *d, size_t n)
{
    char err[EDGED_ERR_LEN];

    job->src = d;
    if (!(job->png_lay = malloc(sizeof(*job->png_lay))))
        goto drop;
    job->src_len = n;
    if (take_stream(job, err) != 0)
        goto drop;
    if ((int)job->png_lay->w != job->in.w || (int)job->png_lay->h != job->in.h ||
        job->png_lay->out_ch != job->in.ch)
        goto drop; /* never for a header pngio_peek read: the CPU path judges */
    job->src_format = JOB_SRC_PNG;
    return 1;
drop:
    free(job->png_lay);
    free(job->png_join);
    gpinned_put(job->png_pinned, job->png_pinned_cap);
    job->src = NULL, job->png_lay = NULL, job->png_join = NULL, job->png_z = NULL, job->png_pinned = NULL;
    job->src_len = job->png_z_len = job->png_pinned_cap = 0;
    return 0;
}

/* The limits are the image's own size: the request's limits accepted its header already. */
int pngjob_decode_src(struct job *job)
{
    struct png_limits lim;
    struct img im = {0};
    int rc;

    if (!job->src || job->in.px || job->src_format != JOB_SRC_PNG)
        return 0;
    pngio_default_limits(&lim);
    lim.max_side = (uint32_t)(job->in.w > job->in.h ? job->in.w : job->in.h);
    lim.max_pixels = (uint64_t)job->in.w * (uint64_t)job->in.h;
    if ((rc = pngio_decode(job->src, job->src_len, &lim, &im, job->err)) < 0)
        return rc;
    if (im.w != job->in.w || im.h != job->in.h || im.ch != job->in.ch) {
        img_free(&im);
        return edged_fail(job->err, EDGED_E_BAD_PNG, "the PNG decodes to %d x %d x %d, its header said %d x %d x %d",
                          im.w, im.h, im.ch, job->in.w, job->in.h, job->in.ch);
    }
    job->in = im;
    return 0;
}
