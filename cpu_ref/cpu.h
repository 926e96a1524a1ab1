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

/* As cpu_serial_compute / cpu_serial_run, threaded. */
int cpu_compute(const struct img *in, const struct filter_plan *plan, float *planes, int threads, char *err);
int cpu_run(const struct img *in, const struct filter_plan *plan, struct img *out, int threads, char *err);
/* As cpu_run, stopping within a row per thread once *cancel (may be NULL) turns non-zero: then
 * EDGED_E_CANCELLED, out left empty. */
int cpu_run_cancel(const struct img *in, const struct filter_plan *plan, struct img *out, int threads,
                   const atomic_int *cancel, char *err);

#ifdef __cplusplus
}
#endif
#endif
