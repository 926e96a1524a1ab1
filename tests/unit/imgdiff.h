/* imgdiff.h — the largest per-sample difference of two unpacked images, for the tests that compare
 * decoders and paths (256 when the geometry differs). */
#ifndef EDGED_TEST_IMGDIFF_H
#define EDGED_TEST_IMGDIFF_H

#include "image.h"

static inline int imgdiff_max(const struct img *a, const struct img *b)
{
    int d = img_max_diff(a, b);

    return d < 0 ? 256 : d;
}

#endif
