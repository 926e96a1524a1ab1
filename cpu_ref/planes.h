/* planes.h — the stages cpu_serial and cpu share: input checks, u8 pixels to float planes and back. */
#ifndef EDGED_PLANES_H
#define EDGED_PLANES_H

#include <stddef.h>

#include "filter.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that in (pixels present, sides 1..IMG_MAX_SIDE, ch == plan->in_ch) and plan (nconv,
 * combine, border, post, kernel shapes odd 1..FILTER_MAX_SIDE, planes/out_ch as filter_plan_make
 * sets them) can be run, and stores w*h in *n. Returns 0 or EDGED_E_PARAM / EDGED_E_IMAGE_TOO_LARGE. */
int planes_check(const struct img *in, const struct filter_plan *plan, size_t *n, char *err);

/* Writes rows y0..y1-1 of input plane p (the luma when plan->gray, else channel p; the gray
 * channel of a gray+alpha input) as floats into dst, a w*h plane with pitch w. */
void planes_load(const struct img *in, const struct filter_plan *plan, int p, float *dst, int y0, int y1);

/* a[i] = sqrtf(a[i]*a[i] + b[i]*b[i]) for i in [0, n): the MAGNITUDE combine. */
void planes_magnitude(float *a, const float *b, size_t n);

/* A backend's correlation of one w x h plane (pitch w) for planes_steps: in -> out (distinct), 0 or
 * a negative EDGED_E_* code (EDGED_E_CANCELLED when stopped) with the message in err. */
typedef int (*planes_conv_fn)(void *ctx, const float *in, float *out, int w, int h, const struct kernel2d *k,
                              enum border b, char *err);

/* Runs a stepwise plan (filter_plan_stepwise) on in: loads its planes, runs each step on whole float
 * planes with conv for the correlations (nothing rounded between the steps), and leaves the last
 * step's plan->planes planes of w*h floats in planes (the caller's). 0 or a negative EDGED_E_*. */
int planes_steps(const struct img *in, const struct filter_plan *plan, float *planes, planes_conv_fn conv,
                 void *ctx, char *err);

/* Writes rows y0..y1-1 of out (in's size, plan->out_ch channels): each float of the plan->planes
 * planes (plane p at planes + p*w*h) through pixel_post(v, plan->post, plan->threshold), then the
 * alpha channel copied unchanged from in when in has one. */
void planes_store(const float *planes, const struct filter_plan *plan, const struct img *in, struct img *out,
                  int y0, int y1);

#ifdef __cplusplus
}
#endif
#endif
