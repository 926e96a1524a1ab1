/* cpu_serial.h — the serial reference: straightforward loops, the oracle for every other path. */
#ifndef EDGED_CPU_SERIAL_H
#define EDGED_CPU_SERIAL_H

#include <stdatomic.h>
#include <stddef.h>

#include "filter.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Correlates one float plane of w x h (rows pitch floats apart) with k under border b into out
 * (same geometry; must not alias in). Algorithm 1 of the Trento report. */
void cpu_serial_conv(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k,
                     enum border b);
/* As cpu_serial_conv, reading *cancel (may be NULL) once a row: once it is non-zero the loop stops
 * and EDGED_E_CANCELLED is returned (out then incomplete); else 0. */
int cpu_serial_conv_cancel(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k,
                           enum border b, const atomic_int *cancel, char *err);

/* Runs plan on in up to the float result before post-processing: planes holds plan->planes planes
 * of w*h floats each (plane p at planes + p*w*h), allocated by the caller. Returns 0 or a negative
 * EDGED_E_* code with a message in err. */
int cpu_serial_compute(const struct img *in, const struct filter_plan *plan, float *planes, char *err);

/* Full run: allocates out (in->w x in->h, plan->out_ch channels; free with img_free), post-processes
 * the planes and copies alpha. Returns 0 or a negative EDGED_E_* code. */
int cpu_serial_run(const struct img *in, const struct filter_plan *plan, struct img *out, char *err);
/* As cpu_serial_run, stopping within a few rows once *cancel (may be NULL) turns non-zero:
 * then EDGED_E_CANCELLED, out left empty. */
int cpu_serial_run_cancel(const struct img *in, const struct filter_plan *plan, struct img *out,
                          const atomic_int *cancel, char *err);

#ifdef __cplusplus
}
#endif
#endif
