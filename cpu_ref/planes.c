/* planes.c — the stages cpu_serial and cpu share: input checks, u8 pixels to float planes and back. */
#include "planes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "pixel.h"

int planes_check(const struct img *in, const struct filter_plan *plan, size_t *n, char *err)
{
    int rc;

    if ((rc = filter_plan_check(plan, err)) < 0)
        return rc;
    if (!in->px)
        return edged_fail(err, EDGED_E_PARAM, "image %dx%d has no pixels", in->w, in->h);
    if ((rc = img_check_size(in->w, in->h, err)) < 0)
        return rc;
    if (in->ch != plan->in_ch || in->stride < (size_t)in->w * (size_t)in->ch)
        return edged_fail(err, EDGED_E_PARAM, "image has %d channels (stride %zu), the plan was made for %d",
                          in->ch, in->stride, plan->in_ch);
    *n = (size_t)in->w * (size_t)in->h;
    return 0;
}

void planes_load(const struct img *in, const struct filter_plan *plan, int p, float *dst, int y0, int y1)
{
    int w = in->w, ch = in->ch;

    for (int y = y0; y < y1; y++) {
        const uint8_t *s = in->px + (size_t)y * in->stride;
        float *d = dst + (size_t)y * (size_t)w;
        if (plan->gray) {
            for (int x = 0; x < w; x++)
                d[x] = pixel_luma((float)s[x * ch], (float)s[x * ch + 1], (float)s[x * ch + 2]);
        } else {
            for (int x = 0; x < w; x++)
                d[x] = (float)s[x * ch + p];
        }
    }
}

void planes_magnitude(float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = sqrtf(a[i] * a[i] + b[i] * b[i]);
}

/* One plane through step st: src -> dst, tmp the second buffer of MAGNITUDE and CHAIN. */
static int step_plane(const struct filter_plan *plan, const struct plan_step *st, const float *src, float *dst,
                      float *tmp, int w, int h, planes_conv_fn conv, void *ctx, char *err)
{
    const struct kernel2d *k = plan->conv + st->conv0;
    size_t n = (size_t)w * (size_t)h;
    int rc;

    switch (st->combine) {
    case COMBINE_THRESHOLD:
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i] >= st->value ? 255.0f : 0.0f;
        return 0;
    case COMBINE_MAGNITUDE:
        if ((rc = conv(ctx, src, dst, w, h, &k[0], st->border, err)) < 0 ||
            (rc = conv(ctx, src, tmp, w, h, &k[1], st->border, err)) < 0)
            return rc;
        planes_magnitude(dst, tmp, n);
        return 0;
    case COMBINE_CHAIN:
        if ((rc = conv(ctx, src, tmp, w, h, &k[0], st->border, err)) < 0)
            return rc;
        return conv(ctx, tmp, dst, w, h, &k[1], st->border, err);
    default:
        return conv(ctx, src, dst, w, h, &k[0], st->border, err);
    }
}

/* The three planes at a become one, their luma, in a's first plane. */
static void planes_to_gray(float *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = pixel_luma(a[i], a[n + i], a[2 * n + i]);
}

/* Two sets of the loaded planes (a step reads one and writes the other) and one spare plane. */
int planes_steps(const struct img *in, const struct filter_plan *plan, float *planes, planes_conv_fn conv,
                 void *ctx, char *err)
{
    int w = in->w, h = in->h, np = (in->ch >= 3 && !plan->gray) ? 3 : 1, rc = 0;
    size_t n = (size_t)w * (size_t)h;
    float *a = NULL, *b = NULL, *tmp = NULL, *t;

    if (!(a = malloc(n * np * sizeof(float))) || !(b = malloc(n * np * sizeof(float))) ||
        !(tmp = malloc(n * sizeof(float)))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate float planes for a %dx%d image", w, h);
        goto out;
    }
    for (int p = 0; p < np; p++)
        planes_load(in, plan, p, a + (size_t)p * n, 0, h);
    for (int i = 0; i < plan->nsteps; i++) {
        const struct plan_step *st = &plan->step[i];
        if (st->to_gray && np == 3) {
            planes_to_gray(a, n);
            np = 1;
        }
        for (int p = 0; p < np; p++)
            if ((rc = step_plane(plan, st, a + (size_t)p * n, b + (size_t)p * n, tmp, w, h, conv, ctx, err)) < 0)
                goto out;
        t = a, a = b, b = t;
    }
    if (np != plan->planes) {
        rc = edged_fail(err, EDGED_E_PARAM, "pipeline ends with %d planes, the plan says %d", np, plan->planes);
        goto out;
    }
    memcpy(planes, a, n * np * sizeof(float));
out:
    free(tmp);
    free(b);
    free(a);
    return rc;
}

void planes_store(const float *planes, const struct filter_plan *plan, const struct img *in, struct img *out,
                  int y0, int y1)
{
    int w = in->w, och = out->ch, np = plan->planes;
    size_t n = (size_t)w * (size_t)in->h;

    for (int y = y0; y < y1; y++) {
        uint8_t *d = out->px + (size_t)y * out->stride;
        const uint8_t *s = in->px + (size_t)y * in->stride;
        for (int p = 0; p < np; p++) {
            const float *v = planes + (size_t)p * n + (size_t)y * (size_t)w;
            for (int x = 0; x < w; x++)
                d[x * och + p] = pixel_post(v[x], plan->post, plan->threshold);
        }
        if (img_has_alpha(in->ch))
            for (int x = 0; x < w; x++)
                d[x * och + np] = s[x * in->ch + in->ch - 1];
    }
}
