/* planes.c — the stages cpu_serial and cpu share: input checks, u8 pixels to float planes and back. */
#include "planes.h"

#include <math.h>

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
