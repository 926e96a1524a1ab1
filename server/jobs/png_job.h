/* png_job.h — a job's PNG input left compressed for the device decoder: taking the bytes (the
 * layout read on the request's thread), the CPU decode that serves what the device refuses or
 * declines, the backlog rule of `auto`, and the device PNG path's counters. backend.c and
 * backend_png.c use these; the endpoint takes the bytes. */
#ifndef EDGED_PNG_JOB_H
#define EDGED_PNG_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "jobs/queue.h"

/* Gives job (in sized, plan set) the PNG bytes d, n, whose header imageio_peek accepted, borrowed
 * (job->src = d: the caller keeps them alive as long as the job, e.g. in job->src_block), and their
 * layout. When the pool gives a pinned buffer of gpu/gpinned.h (job->png_pinned, given back when
 * the job is freed), the zlib stream is copied into it in the pass that checks its CRCs
 * (pngdec_layout_into); without one, pngdec_layout leaves it in place or joined. Returns
 * 1 when the device may take them, 0 when the PNG is of a kind the device path does not take
 * (interlaced, 16-bit, sub-byte gray, a chunk out of the ordinary, a bad CRC: the CPU decodes it,
 * or names its fault) or memory is short (nothing kept). */
int pngjob_take(struct job *job, const uint8_t *d, size_t n);

/* Decodes job->src on the CPU (pngio_decode) into job->in; 0 at once for a job without PNG src or
 * already decoded. EDGED_E_BAD_PNG, EDGED_E_NOMEM, ... with the message in job->err. */
int pngjob_decode_src(struct job *job);

/* The backlog rule of the endpoint: 1 when a PNG of n bytes should go to the device, 0 when the
 * CPU should decode it because the device is busier than the cores: the compressed PNG bytes
 * already taken for the device and not yet answered are at least limit (--gpu-png-backlog-mb)
 * while cpu_free (no request waits for a codec slot) says the cores have room. begin counts n into
 * the backlog (after a 1), end takes it out when the request is over. */
int pngjob_gpu_ok(size_t n, int cpu_free, size_t limit);
void pngjob_backlog_begin(size_t n);
void pngjob_backlog_end(size_t n);

/* What the device PNG path did since start, for /metrics. */
enum pngjob_event {
    PNGJOB_GPU_DECODED,
    PNGJOB_CPU_REFUSED,
    PNGJOB_CPU_DECLINED,
    PNGJOB_CPU_BUSY,
    PNGJOB_Z_PINNED,   /* taken for the device with its zlib stream in pinned memory */
    PNGJOB_Z_UNPINNED, /* ... without (the pool answered NULL: the GPU worker stages it) */
    PNGJOB_EVENTS
};
struct pngjob_counts {
    unsigned long long gpu_decoded;  /* decoded on the device */
    unsigned long long cpu_refused;  /* refused at submit (kind, size, scratch): decoded on the CPU */
    unsigned long long cpu_declined; /* declined by the device inflate or unfilter: decoded on the CPU */
    unsigned long long cpu_busy;     /* sent to the CPU decoder by the backlog rule */
    /* taken for the device (pngjob_take) with the zlib stream in pinned memory (gpu/gpinned.h), and
     * without (the pool answered NULL: the GPU worker stages the stream) */
    unsigned long long z_pinned, z_unpinned;
};
void pngjob_count(enum pngjob_event e);
void pngjob_counts(struct pngjob_counts *c);

#endif
