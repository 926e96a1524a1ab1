/* mock_png.c — the entry points of png_job.c for the worker mock (the real file pulls in the PNG
 * codec): a PNG job "decodes" on the CPU to an 8 x 8 RGB image, and the counters are recorded for
 * the test. The device side is mock_gpu.c's gconv_submit_png. */
#include <stdatomic.h>
#include <string.h>

#include "errors.h"
#include "jobs/png_job.h"

atomic_int mock_png_events[PNGJOB_EVENTS];

int pngjob_decode_src(struct job *job)
{
    if (!job->src || job->in.px || job->src_format != JOB_SRC_PNG)
        return 0;
    return img_alloc(&job->in, 8, 8, 3, job->err);
}

void pngjob_count(enum pngjob_event e) { atomic_fetch_add(&mock_png_events[e], 1); }

void pngjob_counts(struct pngjob_counts *c)
{
    c->gpu_decoded = (unsigned long long)atomic_load(&mock_png_events[PNGJOB_GPU_DECODED]);
    c->cpu_refused = (unsigned long long)atomic_load(&mock_png_events[PNGJOB_CPU_REFUSED]);
    c->cpu_declined = (unsigned long long)atomic_load(&mock_png_events[PNGJOB_CPU_DECLINED]);
    c->cpu_busy = (unsigned long long)atomic_load(&mock_png_events[PNGJOB_CPU_BUSY]);
    c->z_pinned = c->z_unpinned = 0; /* the mock's jobs never take a PNG (pngjob_take) */
}
