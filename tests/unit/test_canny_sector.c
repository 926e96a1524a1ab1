/* test_canny_sector.c — the tile kernel's packed sector (gpu/canny_sector.h) on the CPU: for every
 * gradient with |dx|, |dy| <= 1024 (aperture 3 reaches 1020) in either 16-bit lane, beside a second
 * gradient in the other lane, canny_sector_pair gives canny_sector's code of each lane. */

#include <stdio.h>

#include "canny_sector.h"
#include "check.h"

#define DMAX 1024

/* The lanes of sx, sy as the fast path builds them: each gradient plus 1024. */
static unsigned lanes(int lo, int hi)
{
    return (unsigned)(lo + 1024) | (unsigned)(hi + 1024) << 16;
}

/* Every (dx, dy) in lane `which`, the other lane running through gradients of its own. */
static long sweep(int which)
{
    long bad = 0;

    for (int dx = -DMAX; dx <= DMAX; dx++)
        for (int dy = -DMAX; dy <= DMAX; dy++) {
            int ox = (dy * 7 + dx * 3) % (DMAX + 1), oy = (dx * 5 - dy * 11) % (DMAX + 1);
            unsigned sx = which ? lanes(ox, dx) : lanes(dx, ox), sy = which ? lanes(oy, dy) : lanes(dy, oy);
            unsigned got = canny_sector_pair(sx, sy);
            unsigned want = (unsigned)canny_sector(dx, dy), other = (unsigned)canny_sector(ox, oy);
            unsigned exp = which ? other | want << 8 : want | other << 8;
            if (got != exp && bad++ < 5)
                fprintf(stderr, "lane %d dx %d dy %d (other %d %d): got %#x want %#x\n", which, dx, dy, ox,
                        oy, got, exp);
        }
    return bad;
}

int main(void)
{
    long bad0 = sweep(0), bad1 = sweep(1);

    CHECK(bad0 == 0, "low lane: %ld gradients with the wrong sector", bad0);
    CHECK(bad1 == 0, "high lane: %ld gradients with the wrong sector", bad1);
    /* the sectors themselves: one gradient of each (cv::Canny's cases, ties at the boundaries) */
    CHECK(canny_sector(10, 0) == (CANNY_NTIE | 1), "horizontal gradient: %#x", canny_sector(10, 0));
    CHECK(canny_sector(0, 10) == (CANNY_NTIE | CANNY_MAGW), "vertical gradient: %#x", canny_sector(0, 10));
    CHECK(canny_sector(10, 10) == CANNY_MAGW + 1, "diagonal: %#x", canny_sector(10, 10));
    CHECK(canny_sector(-10, 10) == CANNY_MAGW - 1, "anti-diagonal: %#x", canny_sector(-10, 10));
    CHECK(canny_sector(0, 0) == CANNY_MAGW + 1, "zero gradient: %#x", canny_sector(0, 0));
    return check_summary();
}
