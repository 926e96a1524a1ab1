/* canny_spiral.h — the worst case of Canny's hysteresis as an image: a square spiral band (value 60
 * on 0, 4 pixels wide, 4 apart) across the whole image whose contour is one chain of weak pixels
 * under knobs {100, 1000, 3, L1}, with one strong spot (255) at its outer end. For the GPU tests and
 * `edged bench --canny-input spiral`; host and device. */
#ifndef EDGED_CANNY_SPIRAL_H
#define EDGED_CANNY_SPIRAL_H

#include "pixel.h"

#define CANNY_SPIRAL_LOW 100.0f
#define CANNY_SPIRAL_HIGH 1000.0f

/* Sample (x, y) of the w x h spiral. Ring k of the band lies 4 + 8k .. 7 + 8k pixels from the
 * border; each ring is cut in its left column just below its top row, and a bridge across the gap
 * below the cut joins it to the next ring's corner, so that the rings make one path. */
EDGED_HD uint8_t canny_spiral_px(int x, int y, int w, int h)
{
    int a = x < y ? x : y, b = w - 1 - x < h - 1 - y ? w - 1 - x : h - 1 - y;
    int d = (a < b ? a : b) - 4, k, ty, left;

    if (d < 0)
        return 0;
    k = d / 8;
    ty = y - 4 - 8 * k;
    left = x - 4 == d;
    if (d % 8 < 4) {
        if (left && ty >= 4 && ty <= 7)
            return 0;
        return k == 0 && ty >= 0 && ty <= 3 && x - 4 <= 3 ? 255 : 60;
    }
    return left && ty >= 8 && ty <= 11 ? 60 : 0;
}

#endif
