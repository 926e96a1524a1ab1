/* cpu_serial.c — the serial reference: straightforward loops, the oracle for every other path. */
#include "cpu_serial.h"

#include <stdlib.h>

#include "errors.h"
#include "pixel.h"
#include "planes.h"

/* *cancel (may be NULL) is read every SERIAL_CANCEL_PIXELS outputs: a row of a wide image with a
 * 63x63 kernel is tens of milliseconds of this loop. */
#define SERIAL_CANCEL_PIXELS 1024

/* Algorithm 1 of the Trento report: every output pixel is the sum over the taps in row-major order
 * of tap * sample, the sample's row and column each resolved by border_index (-1: zero, skipped).
 * Returns -1 when *cancel stopped the loop, else 0. */
static int serial_conv(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k,
                       enum border b, const atomic_int *cancel)
{
    int ry = k->rows / 2, rx = k->cols / 2;

    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            float acc = 0.0f;
            if (x % SERIAL_CANCEL_PIXELS == 0 && cancel && atomic_load_explicit(cancel, memory_order_relaxed))
                return -1;
            for (int i = 0; i < k->rows; i++) {
                int sy = border_index(y + i - ry, h, b);
                if (sy < 0)
                    continue;
                for (int j = 0; j < k->cols; j++) {
                    int sx = border_index(x + j - rx, w, b);
                    if (sx >= 0)
                        acc += k->taps[i * k->cols + j] * in[(size_t)sy * pitch + (size_t)sx];
                }
            }
            out[(size_t)y * pitch + (size_t)x] = acc;
        }
    }
    return 0;
}

void cpu_serial_conv(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k,
                     enum border b)
{
    serial_conv(in, out, w, h, pitch, k, b, NULL);
}

int cpu_serial_conv_cancel(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k,
                           enum border b, const atomic_int *cancel, char *err)
{
    if (serial_conv(in, out, w, h, pitch, k, b, cancel) < 0)
        return edged_fail(err, EDGED_E_CANCELLED, "job cancelled");
    return 0;
}

/* One plane: src holds the input plane; dst receives the combined result; tmp is the second buffer
 * MAGNITUDE and CHAIN need. -1 when cancelled. */
static int serial_plane(const float *src, float *dst, float *tmp, int w, int h, const struct filter_plan *plan,
                        const atomic_int *cancel)
{
    const struct kernel2d *k0 = &plan->conv[0], *k1 = &plan->conv[1];

    switch (plan->combine) {
    case COMBINE_MAGNITUDE:
        if (serial_conv(src, dst, w, h, (size_t)w, k0, plan->border, cancel) < 0 ||
            serial_conv(src, tmp, w, h, (size_t)w, k1, plan->border, cancel) < 0)
            return -1;
        planes_magnitude(dst, tmp, (size_t)w * (size_t)h);
        return 0;
    case COMBINE_CHAIN:
        if (serial_conv(src, tmp, w, h, (size_t)w, k0, plan->border, cancel) < 0)
            return -1;
        return serial_conv(tmp, dst, w, h, (size_t)w, k1, plan->border, cancel);
    default:
        return serial_conv(src, dst, w, h, (size_t)w, k0, plan->border, cancel);
    }
}

/* planes_conv_fn of the reference: serial_conv under the job's cancel flag. */
static int serial_step_conv(void *ctx, const float *in, float *out, int w, int h, const struct kernel2d *k,
                            enum border b, char *err)
{
    return cpu_serial_conv_cancel(in, out, w, h, (size_t)w, k, b, ctx, err);
}

static int serial_compute(const struct img *in, const struct filter_plan *plan, float *planes,
                          const atomic_int *cancel, char *err)
{
    float *src = NULL, *tmp = NULL;
    size_t n;
    int rc;

    if ((rc = planes_check(in, plan, &n, err)) < 0)
        return rc;
    if (plan->filter == FILTER_CANNY)
        return edged_fail(err, EDGED_E_PARAM, "canny has no float result (cpu_ref/canny.h runs it)");
    if (!planes)
        return edged_fail(err, EDGED_E_PARAM, "no buffer for the float planes");
    if (filter_plan_stepwise(plan))
        return planes_steps(in, plan, planes, serial_step_conv, (void *)cancel, err);
    src = malloc(n * sizeof(float));
    if (plan->nconv == 2)
        tmp = malloc(n * sizeof(float));
    if (!src || (plan->nconv == 2 && !tmp)) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate float planes for a %dx%d image", in->w, in->h);
        goto out;
    }
    for (int p = 0; p < plan->planes; p++) {
        planes_load(in, plan, p, src, 0, in->h);
        if (serial_plane(src, planes + (size_t)p * n, tmp, in->w, in->h, plan, cancel) < 0) {
            rc = edged_fail(err, EDGED_E_CANCELLED, "job cancelled");
            goto out;
        }
    }
    rc = 0;
out:
    free(tmp);
    free(src);
    return rc;
}

int cpu_serial_compute(const struct img *in, const struct filter_plan *plan, float *planes, char *err)
{
    return serial_compute(in, plan, planes, NULL, err);
}

int cpu_serial_run(const struct img *in, const struct filter_plan *plan, struct img *out, char *err)
{
    return cpu_serial_run_cancel(in, plan, out, NULL, err);
}

int cpu_serial_run_cancel(const struct img *in, const struct filter_plan *plan, struct img *out,
                          const atomic_int *cancel, char *err)
{
    float *planes = NULL;
    size_t n;
    int rc;

    *out = (struct img){0};
    if ((rc = planes_check(in, plan, &n, err)) < 0)
        return rc;
    planes = malloc(n * (size_t)plan->planes * sizeof(float));
    if (!planes) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate float planes for a %dx%d image", in->w, in->h);
        goto out;
    }
    if ((rc = serial_compute(in, plan, planes, cancel, err)) < 0 ||
        (rc = img_alloc(out, in->w, in->h, plan->out_ch, err)) < 0)
        goto out;
    planes_store(planes, plan, in, out, 0, in->h);
out:
    free(planes);
    if (rc < 0)
        img_free(out);
    return rc;
}
