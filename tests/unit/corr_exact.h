/* corr_exact.h — what the fft tests share: random taps, the exact correlation of a plane (double
 * sums of the float products, under a border rule), the largest difference from it, and the error
 * bound docs/semantics.md states for fft. */
#ifndef EDGED_TEST_CORR_EXACT_H
#define EDGED_TEST_CORR_EXACT_H

#include <math.h>
#include <string.h>

#include "check.h"
#include "filter.h"
#include "pixel.h"

#define FFT_C 4.0 /* the bound's constant (docs/semantics.md, "fft") */

/* |fft - exact| <= FFT_C * 2^-24 * log2(n^2) * M * S (+ 1e-6 for exact zeros), for inputs of
 * magnitude at most max_in, taps whose absolute values sum to abs_sum, tiles of side n. */
static inline double corr_fft_bound(double log2_n2, double max_in, double abs_sum)
{
    return FFT_C * ldexp(1.0, -24) * log2_n2 * max_in * abs_sum + 1e-6;
}

/* rows x cols taps uniform in [lo, hi). */
static inline void corr_kernel_fill(struct kernel2d *k, int rows, int cols, float lo, float hi)
{
    memset(k, 0, sizeof(*k));
    k->rows = rows, k->cols = cols;
    for (int i = 0; i < rows * cols; i++)
        k->taps[i] = check_rng_float(lo, hi);
    kernel_detect_separable(k);
}

static inline double corr_abs_sum(const struct kernel2d *k)
{
    double s = 0;
    for (int i = 0; i < k->rows * k->cols; i++)
        s += fabs(k->taps[i]);
    return s;
}

/* The exact correlation (double sums of the float products) of one w x h plane, rows w apart. */
static inline void corr_exact(const float *in, double *out, int w, int h, const struct kernel2d *k,
                              enum border b)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0;
            for (int i = 0; i < k->rows; i++) {
                int yi = border_index(y + i - k->rows / 2, h, b);
                for (int j = 0; yi >= 0 && j < k->cols; j++) {
                    int xi = border_index(x + j - k->cols / 2, w, b);
                    if (xi >= 0)
                        s += (double)k->taps[i * k->cols + j] * in[(size_t)yi * w + xi];
                }
            }
            out[(size_t)y * w + x] = s;
        }
}

/* The largest |got - ref| over n samples; a NaN in got wins. */
static inline double corr_max_diff(const float *got, const double *ref, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= m))
            m = e;
    }
    return m;
}

#endif
