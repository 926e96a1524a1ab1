/* image.c — allocation of the shared image type with overflow-checked sizes. */
#include "image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

int size_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

int img_alloc(struct img *im, int w, int h, int ch, char *err)
{
    size_t stride, bytes;

    memset(im, 0, sizeof(*im));
    if (w < 1 || h < 1 || w > IMG_MAX_SIDE || h > IMG_MAX_SIDE || ch < 1 || ch > 4)
        return edged_fail(err, EDGED_E_PARAM, "image %dx%dx%d out of range (sides 1..%d, channels 1..4)",
                          w, h, ch, IMG_MAX_SIDE);
    if (size_mul((size_t)w, (size_t)ch, &stride) || size_mul(stride, (size_t)h, &bytes))
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "image %dx%dx%d overflows memory size", w, h, ch);
    im->px = calloc(1, bytes);
    if (!im->px)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a %dx%d image", bytes, w, h);
    im->w = w;
    im->h = h;
    im->ch = ch;
    im->stride = stride;
    return 0;
}

void img_free(struct img *im)
{
    if (!im)
        return;
    free(im->px);
    memset(im, 0, sizeof(*im));
}

int img_check_size(int w, int h, char *err)
{
    if (w < 1 || h < 1 || w > IMG_MAX_SIDE || h > IMG_MAX_SIDE)
        return edged_fail(err, EDGED_E_PARAM, "image %d x %d invalid: sides must be 1..%d", w, h, IMG_MAX_SIDE);
    if ((size_t)w * (size_t)h > IMG_MAX_PIXELS)
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "image %d x %d has more than %zu pixels", w, h,
                          (size_t)IMG_MAX_PIXELS);
    return 0;
}

int img_same(const struct img *a, const struct img *b)
{
    if (a->w != b->w || a->h != b->h || a->ch != b->ch || !a->px || !b->px || a->packed || b->packed)
        return 0;
    for (int y = 0; y < a->h; y++)
        if (memcmp(a->px + (size_t)y * a->stride, b->px + (size_t)y * b->stride, (size_t)a->w * (size_t)a->ch))
            return 0;
    return 1;
}

int img_max_diff(const struct img *a, const struct img *b)
{
    int m = 0;

    if (a->w != b->w || a->h != b->h || a->ch != b->ch)
        return -1;
    for (int y = 0; y < a->h; y++)
        for (size_t x = 0; x < (size_t)a->w * a->ch; x++) {
            int d = abs((int)a->px[y * a->stride + x] - (int)b->px[y * b->stride + x]);
            m = d > m ? d : m;
        }
    return m;
}
