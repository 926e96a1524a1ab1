/* edgemap.h — synthetic edge maps for the encoder tests: 0/255 curves at a chosen density. */
#ifndef EDGED_EDGEMAP_H
#define EDGED_EDGEMAP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* xorshift32 over *state (never 0). */
static inline uint32_t edgemap_rng(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

/* A w x h map (rows stride bytes apart) of 0 with curves of 255 drawn until about density of the
 * pixels are set: circles and short lines, as edge detectors answer on photographs. */
static inline void edgemap_draw(uint8_t *m, int w, int h, size_t stride, double density, uint32_t *rng)
{
    size_t want = (size_t)(density * w * h), set = 0;

    for (int y = 0; y < h; y++)
        memset(m + (size_t)y * stride, 0, (size_t)w);
    while (set < want) {
        int cx = (int)(edgemap_rng(rng) % (unsigned)w), cy = (int)(edgemap_rng(rng) % (unsigned)h);
        int r = 4 + (int)(edgemap_rng(rng) % 60), circle = edgemap_rng(rng) & 1;
        int dx = (int)(edgemap_rng(rng) % 5) - 2, dy = (int)(edgemap_rng(rng) % 5) - 2;
        int steps = circle ? 8 * r : 2 * r;

        for (int a = 0; a < steps; a++) {
            double t = a * 6.28318530718 / steps;
            int x = circle ? cx + (int)(r * cos(t)) : cx + a * dx / 2;
            int y = circle ? cy + (int)(r * sin(t)) : cy + a * dy / 2;

            if (x >= 0 && x < w && y >= 0 && y < h && !m[(size_t)y * stride + x])
                m[(size_t)y * stride + x] = 255, set++;
        }
        if (!dx && !dy && !circle)
            set += (size_t)steps / 4 + 1; /* a dot: count it so that tiny maps end */
    }
}

#endif
