/* pixel.h — the per-pixel semantics every backend shares: border indexing, luma, post-processing.
 * Inline for host and device so that CPU and GPU paths compute exactly the same function. */
#ifndef EDGED_PIXEL_H
#define EDGED_PIXEL_H

#ifdef __CUDACC__
#define EDGED_HD static inline __host__ __device__
#else
#define EDGED_HD static inline
#endif

#include <math.h>
#include <stdint.h>

/* zero: samples outside are 0 (the seed reports); replicate: aaa|abc|ccc;
 * reflect: OpenCV's BORDER_REFLECT_101, cb|abc|ba. */
enum border { BORDER_ZERO, BORDER_REPLICATE, BORDER_REFLECT, BORDER_COUNT };

/* Source index for coordinate i of a row or column of n samples under border b, or -1 when the
 * sample is zero. Any i works, also radii larger than n (reflect folds repeatedly). */
EDGED_HD int border_index(int i, int n, int b)
{
    if (i >= 0 && i < n)
        return i;
    if (b == BORDER_ZERO)
        return -1;
    if (b == BORDER_REPLICATE || n == 1)
        return i < 0 ? 0 : n - 1;
    int period = 2 * n - 2;
    i = i < 0 ? -i : i;
    i %= period;
    return i < n ? i : period - i;
}

/* ITU-R BT.601 luma in float32, always evaluated in this order. */
EDGED_HD float pixel_luma(float r, float g, float b)
{
    return 0.299f * r + 0.587f * g + 0.114f * b;
}

/* How a float result becomes an 8-bit sample. Rounding is to nearest, ties to even (rintf). */
enum post_mode { POST_AUTO, POST_CLAMP, POST_ABS, POST_OFFSET, POST_THRESHOLD, POST_COUNT };

/* NaN (only reachable from absurd custom taps) maps to 0: converting NaN to an integer is UB. */
EDGED_HD uint8_t pixel_clamp_u8(float v)
{
    v = rintf(v);
    return (uint8_t)(v >= 0.0f ? (v <= 255.0f ? v : 255.0f) : 0.0f);
}

/* threshold: 255 where |v| > t, else 0 (the edge map of the KTH report). */
EDGED_HD uint8_t pixel_post(float v, int post, float t)
{
    switch (post) {
    case POST_ABS:
        return pixel_clamp_u8(fabsf(v));
    case POST_OFFSET:
        return pixel_clamp_u8(v + 128.0f);
    case POST_THRESHOLD:
        return fabsf(v) > t ? 255 : 0;
    default:
        return pixel_clamp_u8(v);
    }
}

#endif
