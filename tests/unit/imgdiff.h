/* imgdiff.h — the largest per-sample difference of two unpacked images, for the tests that compare
 * decoders and paths (256 when the geometry differs). */
#ifndef EDGED_TEST_IMGDIFF_H
#define EDGED_TEST_IMGDIFF_H

#include <stdlib.h>

#include "image.h"

static inline int imgdiff_max(const struct img *a, const struct img *b)
{
    int m = 0;

    if (a->w != b->w || a->h != b->h || a->ch != b->ch)
        return 256;
    for (int y = 0; y < a->h; y++)
        for (size_t x = 0; x < (size_t)a->w * a->ch; x++) {
            int d = abs((int)a->px[y * a->stride + x] - (int)b->px[y * b->stride + x]);
            m = d > m ? d : m;
        }
    return m;
}

#endif
