/* planes.c — the stages cpu_serial and cpu share: plan checks, u8 pixels to float planes and back. */
#include "planes.h"

#include <math.h>

#include "errors.h"
#include "pixel.h"

int planes_check_kernel(const struct kernel2d *k, char *err)
{
    if (k->rows < 1 || k->cols < 1 || k->rows > FILTER_MAX_SIDE || k->cols > FILTER_MAX_SIDE ||
        k->rows % 2 == 0 || k->cols % 2 == 0)
        return edged_fail(err, EDGED_E_PARAM, "kernel is %dx%d: rows and cols must be odd, 1..%d", k->rows,
                          k->cols, FILTER_MAX_SIDE);
    for (int i = 0; i < k->rows * k->cols; i++)
        if (!isfinite(k->taps[i]))
            return edged_fail(err, EDGED_E_PARAM, "kernel tap [%d][%d] is not finite", i / k->cols, i % k->cols);
    return 0;
}

/* The plan normally comes from filter_plan_make; a hand-made or corrupted one is refused here rather
 * than read out of bounds. */
static int planes_check_plan(const struct filter_plan *p, char *err)
{
    int want_planes = (p->in_ch >= 3 && !p->gray) ? 3 : 1;
    int rc;

    if (p->nconv < 1 || p->nconv > 2 || (p->combine == COMBINE_SINGLE) != (p->nconv == 1) ||
        (unsigned)p->combine > COMBINE_CHAIN)
        return edged_fail(err, EDGED_E_PARAM, "plan has %d kernels for combine %d", p->nconv, (int)p->combine);
    if ((unsigned)p->border >= BORDER_COUNT || p->post == POST_AUTO || (unsigned)p->post >= POST_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "plan border %d or post %d out of range", (int)p->border,
                          (int)p->post);
    if (p->in_ch < 1 || p->in_ch > 4 || (p->gray && p->in_ch < 3) || p->planes != want_planes ||
        p->out_ch != p->planes + (img_has_alpha(p->in_ch) ? 1 : 0))
        return edged_fail(err, EDGED_E_PARAM, "plan channels in %d, planes %d, out %d are inconsistent",
                          p->in_ch, p->planes, p->out_ch);
    for (int i = 0; i < p->nconv; i++)
        if ((rc = planes_check_kernel(&p->conv[i], err)) < 0)
            return rc;
    return 0;
}

int planes_check(const struct img *in, const struct filter_plan *plan, size_t *n, char *err)
{
    int rc;

    if ((rc = planes_check_plan(plan, err)) < 0)
        return rc;
    if (!in->px || in->w < 1 || in->h < 1 || in->w > IMG_MAX_SIDE || in->h > IMG_MAX_SIDE)
        return edged_fail(err, EDGED_E_PARAM, "image %dx%d has no pixels or is out of range", in->w, in->h);
    if (in->ch != plan->in_ch || in->stride < (size_t)in->w * (size_t)in->ch)
        return edged_fail(err, EDGED_E_PARAM, "image has %d channels (stride %zu), the plan was made for %d",
                          in->ch, in->stride, plan->in_ch);
    if (size_mul((size_t)in->w, (size_t)in->h, n) < 0 || *n > IMG_MAX_PIXELS)
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "image %dx%d has too many pixels", in->w, in->h);
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
