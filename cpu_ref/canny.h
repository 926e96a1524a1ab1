/* canny.h — Canny edge maps on 8-bit gray with the semantics of OpenCV's cv::Canny: the serial
 * reference and the threaded CPU form, which give the same map. */
#ifndef EDGED_CANNY_H
#define EDGED_CANNY_H

#include "filter.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gray: 1 channel, unpacked. out: allocated by the caller as gray->w x gray->h x 1 (unpacked);
 * receives 255 on edge pixels and 0 elsewhere. Sobel derivatives of p->aperture with replicated
 * borders, suppression and 8-connected hysteresis as cv::Canny (docs/semantics.md). Returns 0 or
 * EDGED_E_PARAM (bad knobs or images) / EDGED_E_NOMEM with the reason in err. */
int canny_serial(const struct img *gray, const struct canny_params *p, struct img *out, char *err);

/* The integer thresholds cv::Canny compares the magnitudes with (the GPU uses the same). */
void canny_ints(const struct canny_params *p, int *low, int *high);

/* As canny_serial with `threads` threads (0 = cores); the same map bit for bit. */
int canny_cpu(const struct img *gray, const struct canny_params *p, int threads, struct img *out, char *err);

/* Runs a plan of filter canny (filter_plan_make) on in: the u8 gray it defines (the sample, or the
 * luma of RGB(A); blurred by conv[0] when nconv is 1), then canny_serial (serial = 1) or canny_cpu
 * on `threads` threads. Allocates out (1 channel, 0/255; free with img_free). 0 or EDGED_E_*. */
int canny_plan_run(const struct img *in, const struct filter_plan *plan, int serial, int threads, struct img *out,
                   char *err);

#ifndef __cplusplus /* <stdatomic.h> is C's; the CUDA sources (C++) do not cancel */
#include <stdatomic.h>

/* As canny_plan_run, stopping soon after *cancel (may be NULL) turns non-zero: the pre-blur, the
 * gradients and the suppression read it once a row, the hysteresis flood every few ten thousand
 * pixels. Then EDGED_E_CANCELLED, out left empty. The pre-blur always runs direct (rows x cols
 * multiply-adds a pixel, never as two passes), so that both forms give the same gray. */
int canny_plan_run_cancel(const struct img *in, const struct filter_plan *plan, int serial, int threads,
                          struct img *out, const atomic_int *cancel, char *err);
#endif

#ifdef __cplusplus
}
#endif
#endif
