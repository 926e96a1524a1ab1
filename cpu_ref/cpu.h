/* cpu.h — the fast CPU backend: pthreads over row bands, separable filters as two passes. */
#ifndef EDGED_CPU_H
#define EDGED_CPU_H

#include <stdatomic.h>
#include <stddef.h>

#include "filter.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* As cpu_serial_conv, on `threads` threads (0 = one per online core). Equals cpu_serial_conv
 * within 1e-4 relative. Returns 0 or a negative EDGED_E_* code (thread or memory failure). */
int cpu_conv(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k, enum border b,
             int threads, char *err);
/* As cpu_conv, stopping within a row per thread once *cancel (may be NULL) turns non-zero: then
 * EDGED_E_CANCELLED (out incomplete). */
int cpu_conv_cancel(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k, enum border b,
                    int threads, const atomic_int *cancel, char *err);
/* 1 when cpu_conv runs k as two passes (a row pass, then a column pass: rows + cols multiply-adds a
 * pixel), 0 when it runs it direct (rows x cols). */
int cpu_conv_separable(const struct kernel2d *k);

/* The cancel flag of a job, read relaxed: it only has to be seen within a row or a chunk. 0 when
 * cancel is NULL. */
static inline int cpu_cancelled(const atomic_int *cancel)
{
    return cancel && atomic_load_explicit(cancel, memory_order_relaxed);
}

/* As cpu_serial_compute / cpu_serial_run, threaded. */
int cpu_compute(const struct img *in, const struct filter_plan *plan, float *planes, int threads, char *err);
int cpu_run(const struct img *in, const struct filter_plan *plan, struct img *out, int threads, char *err);
/* As cpu_run, stopping within a row per thread once *cancel (may be NULL) turns non-zero: then
 * EDGED_E_CANCELLED, out left empty. */
int cpu_run_cancel(const struct img *in, const struct filter_plan *plan, struct img *out, int threads,
                   const atomic_int *cancel, char *err);

/* The threads that the CPU jobs of a process share (the service's CPU pool). Each stage of a job
 * (a load, a convolution, a store) takes `threads` divided by the jobs running when the stage
 * starts, at least one: a lone job uses them all, a busy pool about `threads` in all, and a job
 * takes back the threads of jobs that have ended at its next stage. */
struct cpu_share {
    int threads;        /* resolved: at least 1 */
    atomic_int running; /* jobs between cpu_share_enter and cpu_share_leave */
};
/* threads: 0 = one per online core. */
void cpu_share_init(struct cpu_share *s, int threads);
void cpu_share_enter(struct cpu_share *s);
void cpu_share_leave(struct cpu_share *s);
/* The threads a stage that starts now takes. */
int cpu_share_threads(struct cpu_share *s);

/* As cpu_run_cancel, each stage on its share of s (the job inside cpu_share_enter/leave); *most
 * (may be NULL) receives the most threads a stage ran on. */
int cpu_run_shared(const struct img *in, const struct filter_plan *plan, struct img *out, struct cpu_share *s,
                   const atomic_int *cancel, int *most, char *err);

/* A stage over rows [y0, y1) run by thread t (which selects its scratch). */
typedef void (*cpu_band_fn)(void *ctx, int t, int y0, int y1);

/* Threads to use for an image of h rows: 0 = online cores; never more than 256 or than rows. */
int cpu_threads(int threads, int h);

/* Runs fn over rows [0, h) on n threads (the calling one included), in about 8 chunks per thread
 * of at least `grain` rows each (fewer where the rows run out). fn(ctx, t, y0, y1) may be called
 * several times per thread t, never concurrently for one t. When a thread cannot be started the
 * ones running finish, and EDGED_E_INTERNAL is returned: the result is incomplete. Once *cancel
 * (may be NULL) is set no chunk starts and EDGED_E_CANCELLED is returned. */
int cpu_parallel(int n, int h, int grain, cpu_band_fn fn, void *ctx, const atomic_int *cancel, char *err);

#ifdef __cplusplus
}
#endif
#endif
