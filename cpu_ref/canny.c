/* canny.c — Canny edge maps on 8-bit gray with cv::Canny's semantics: the serial reference, the
 * threaded form, and a plan of filter canny (gray conversion and the optional pre-blur). */
#include "canny.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "cpu_serial.h"
#include "errors.h"
#include "pixel.h"
#include "planes.h"

/* The hot loops (Sobel rows, magnitudes) are plain integer loops the vectoriser turns into SIMD at
 * -O3; -O2's cost model leaves most of them scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

/* tan(22.5 deg) in Q15, rounded: cv::Canny's sector test. */
#define CANNY_TG22 13573
#define CANNY_MAX_R 3 /* aperture 7 */
#define CANNY_SPAN 32 /* magnitudes tested against low at once */
#define CANNY_GRAIN 64 /* rows per band at least: each band computes two rows of gradients twice */
/* The loops over rows read the job's cancel flag once a row (a row of the widest image is about a
 * millisecond of work); a flood, whose work a row does not bound, every CANNY_CANCEL_POPS pixels
 * it takes off its stack (well under a millisecond). */
#define CANNY_CANCEL_POPS 65536

/* Map values, as cv::Canny keeps them: 0 a candidate (suppression passed, magnitude > low), 1 not
 * an edge, 2 an edge. The map has a frame of 1 around the image, so neighbours need no checks. */
enum { MAP_CAND = 0, MAP_NONE = 1, MAP_EDGE = 2 };

/* Binomial smoothing and first-derivative taps of cv::getSobelKernels for apertures 3, 5, 7. */
static const int canny_smooth[3][7] = {{1, 2, 1}, {1, 4, 6, 4, 1}, {1, 6, 15, 20, 15, 6, 1}};
static const int canny_deriv[3][7] = {{-1, 0, 1}, {-1, -2, 0, 2, 1}, {-1, -4, -5, 0, 5, 4, 1}};

/* Integer thresholds as cv::Canny derives them from its float arguments: aperture 7 divides both by
 * 16 (its Sobel output is scaled by 1/16), a low above high swaps them, the L2 norm clamps each to
 * 32767 and squares it where positive, and both are floored. A threshold below -1 is clamped to -1
 * and one above 2^30 to 2^30: no magnitude (at most 2^29 squared) tells them apart. */
void canny_ints(const struct canny_params *p, int *low, int *high)
{
    double lo = p->low, hi = p->high, t;

    if (p->aperture == 7) {
        lo /= 16.0;
        hi /= 16.0;
    }
    if (lo > hi) {
        t = lo;
        lo = hi;
        hi = t;
    }
    if (p->l2gradient) {
        lo = lo < 32767.0 ? lo : 32767.0;
        hi = hi < 32767.0 ? hi : 32767.0;
        lo = lo > 0.0 ? lo * lo : lo;
        hi = hi > 0.0 ? hi * hi : hi;
    }
    lo = floor(lo);
    hi = floor(hi);
    *low = lo < -1.0 ? -1 : lo > 1073741824.0 ? 1073741824 : (int)lo;
    *high = hi < -1.0 ? -1 : hi > 1073741824.0 ? 1073741824 : (int)hi;
}

static int canny_check(const struct img *gray, const struct canny_params *p, const struct img *out, char *err)
{
    int rc;

    if (!p || (p->aperture != 3 && p->aperture != 5 && p->aperture != 7))
        return edged_fail(err, EDGED_E_PARAM, "canny aperture %d invalid: must be 3, 5 or 7", p ? p->aperture : 0);
    if (isnan(p->low) || isnan(p->high))
        return edged_fail(err, EDGED_E_PARAM, "canny thresholds must be numbers");
    if (!gray || !gray->px || gray->ch != 1 || gray->packed || gray->stride < (size_t)gray->w)
        return edged_fail(err, EDGED_E_PARAM, "canny needs an unpacked 1-channel image");
    if ((rc = img_check_size(gray->w, gray->h, err)) < 0)
        return rc;
    if (!out || !out->px || out->ch != 1 || out->packed || out->w != gray->w || out->h != gray->h ||
        out->stride < (size_t)out->w)
        return edged_fail(err, EDGED_E_PARAM, "canny output must be an unpacked %dx%d 1-channel image", gray->w,
                          gray->h);
    return 0;
}

/* The magnitude cv::Canny compares: |dx|+|dy| or dx^2+dy^2 (both fit in int: |d| <= 12240). */
static inline int canny_mag(int dx, int dy, int l2) { return l2 ? dx * dx + dy * dy : abs(dx) + abs(dy); }

/* Aperture 7's Sobel is computed with scale 1/16 and rounded to 16 bits as OpenCV's float path does:
 * s/16 to nearest, ties to even (s/16 is exact in float; |s| <= 163200). */
static inline int canny_div16(int s)
{
    int q = s >> 4, r = s & 15; /* floor division */

    return r > 8 || (r == 8 && (q & 1)) ? q + 1 : q;
}

/* Suppression and the low threshold at one pixel: whether m = mag(x, y) is a local maximum across
 * its gradient direction. mu, mc, md are the magnitude rows above, at and below y, each readable
 * at x-1 and x+1 (0 outside the image). The direction is one of four sectors, split at 22.5 and
 * 67.5 degrees by the Q15 tangent; the neighbour before (left, above) is beaten with >, the one
 * after (right, below) with >=, both diagonal neighbours with >: cv::Canny's tie rules. */
static inline int canny_nms(int m, int dx, int dy, const int *mu, const int *mc, const int *md, int x)
{
    long ax = labs(dx), ay = (long)labs(dy) << 15, tg22 = ax * CANNY_TG22;

    if (ay < tg22)
        return m > mc[x - 1] && m >= mc[x + 1];
    if (ay > tg22 + (ax << 16))
        return m > mu[x] && m >= md[x];
    int s = (dx ^ dy) < 0 ? -1 : 1;
    return m > mu[x - s] && m > md[x + s];
}

/* ---- the serial reference ------------------------------------------------------------------- */

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* dx, dy at (x, y) straight from the definition: the correlation with smooth (x) deriv taps, every
 * sample's row and column replicated at the border. */
static void serial_sobel(const struct img *g, int ap, int x, int y, int *dx, int *dy)
{
    const int *sm = canny_smooth[ap / 2 - 1], *de = canny_deriv[ap / 2 - 1];
    int r = ap / 2, sx = 0, sy = 0;

    for (int i = 0; i < ap; i++) {
        const uint8_t *row = g->px + (size_t)clampi(y + i - r, 0, g->h - 1) * g->stride;
        for (int j = 0; j < ap; j++) {
            int v = row[clampi(x + j - r, 0, g->w - 1)];
            sx += sm[i] * de[j] * v;
            sy += de[i] * sm[j] * v;
        }
    }
    *dx = ap == 7 ? canny_div16(sx) : sx;
    *dy = ap == 7 ? canny_div16(sy) : sy;
}

/* Whether a flood that has taken `pops` pixels off its stack must stop for *cancel. */
static inline int flood_cancelled(size_t pops, const atomic_int *cancel)
{
    return pops % CANNY_CANCEL_POPS == 0 && cpu_cancelled(cancel);
}

/* 8-connected flood from every MAP_EDGE pixel on the stack through MAP_CAND pixels. -1 when the
 * stack overflows, 1 when cancelled, else 0. */
static int flood(size_t mstep, uint8_t **stack, size_t n, size_t cap, const atomic_int *cancel)
{
    const ptrdiff_t off[8] = {-(ptrdiff_t)mstep - 1, -(ptrdiff_t)mstep, -(ptrdiff_t)mstep + 1, -1, 1,
                              (ptrdiff_t)mstep - 1,  (ptrdiff_t)mstep,  (ptrdiff_t)mstep + 1};

    for (size_t pops = 1; n > 0; pops++) {
        uint8_t *m = stack[--n];
        if (flood_cancelled(pops, cancel))
            return 1;
        for (int k = 0; k < 8; k++)
            if (m[off[k]] == MAP_CAND) {
                m[off[k]] = MAP_EDGE;
                if (n == cap) /* cannot happen: each pixel is pushed at most once and cap >= w*h */
                    return -1;
                stack[n++] = m + off[k];
            }
    }
    return 0;
}

static int cancelled(char *err) { return edged_fail(err, EDGED_E_CANCELLED, "job cancelled"); }

/* canny_serial, reading *cancel (may be NULL) once a row and in the flood. */
static int serial_run(const struct img *gray, const struct canny_params *p, struct img *out,
                      const atomic_int *cancel, char *err)
{
    int w, h, low, high, rc;
    size_t n, mstep, top = 0;
    int *dx = NULL, *dy = NULL, *mag = NULL;
    uint8_t *map = NULL, **stack = NULL;

    if ((rc = canny_check(gray, p, out, err)) < 0)
        return rc;
    w = gray->w;
    h = gray->h;
    n = (size_t)w * (size_t)h;
    mstep = (size_t)w + 2;
    canny_ints(p, &low, &high);
    dx = malloc(n * sizeof(int));
    dy = malloc(n * sizeof(int));
    mag = calloc((size_t)(w + 2) * (size_t)(h + 2), sizeof(int)); /* framed by zeros */
    map = malloc(mstep * ((size_t)h + 2));
    stack = malloc(n * sizeof(*stack));
    if (!dx || !dy || !mag || !map || !stack) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate Canny buffers for a %dx%d image", w, h);
        goto out;
    }
    for (int y = 0; y < h; y++) {
        if (cpu_cancelled(cancel)) {
            rc = cancelled(err);
            goto out;
        }
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            serial_sobel(gray, p->aperture, x, y, &dx[i], &dy[i]);
            mag[(size_t)(y + 1) * mstep + x + 1] = canny_mag(dx[i], dy[i], p->l2gradient);
        }
    }
    memset(map, MAP_NONE, mstep * ((size_t)h + 2));
    for (int y = 0; y < h; y++) {
        const int *mc = mag + (size_t)(y + 1) * mstep + 1;
        if (cpu_cancelled(cancel)) {
            rc = cancelled(err);
            goto out;
        }
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            uint8_t *m = map + (size_t)(y + 1) * mstep + x + 1;
            if (mc[x] <= low || !canny_nms(mc[x], dx[i], dy[i], mc - mstep, mc, mc + mstep, x))
                continue;
            *m = mc[x] > high ? MAP_EDGE : MAP_CAND;
            if (*m == MAP_EDGE)
                stack[top++] = m;
        }
    }
    if ((rc = flood(mstep, stack, top, n, cancel)) != 0) {
        rc = rc > 0 ? cancelled(err) : edged_fail(err, EDGED_E_INTERNAL, "canny: hysteresis stack overflow");
        goto out;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            out->px[(size_t)y * out->stride + x] = map[(size_t)(y + 1) * mstep + x + 1] == MAP_EDGE ? 255 : 0;
    rc = 0;
out:
    free(stack);
    free(map);
    free(mag);
    free(dy);
    free(dx);
    return rc;
}

int canny_serial(const struct img *gray, const struct canny_params *p, struct img *out, char *err)
{
    return serial_run(gray, p, out, NULL, err);
}

/* ---- the threaded form ---------------------------------------------------------------------- */

/* Per thread: three rows of dx, dy and magnitude (a ring over image rows, each padded by one zero
 * on either side), the column sums of one row, and the stack of its bands' flood. */
struct canny_scratch {
    int *dx[3], *dy[3], *mag[3];
    int16_t *cs, *cd;      /* column sums (|.| <= 64 * 255): smoothing (for dx) and derivative (for
                            * dy), padded by r; 16 bits halve what the row pass reads */
    uint8_t **stack;
    size_t cap;
};

struct canny_job {
    const struct img *g;
    const struct canny_params *p;
    int low, high;
    uint8_t *map;
    size_t mstep;
    uint8_t *seam;   /* seam[y] = 1: a band starts at row y */
    struct canny_scratch *s;
    atomic_int failed; /* a band could not grow its stack */
    struct img *out;
    const atomic_int *cancel; /* may be NULL */
};

/* Row y's dx, dy and magnitude into dx, dy, mag (x in [0, w)), zero magnitudes at -1 and w. The
 * column pass sums the ap source rows (replicated at the top and bottom) into cs and cd, padded by
 * replicating their end columns (the same as replicating the pixels); the row pass then applies
 * the other factor. Integer arithmetic, so the order of the terms does not matter. */
static inline __attribute__((always_inline)) void row_grad_n(const struct canny_job *j, struct canny_scratch *s,
                                                             int y, int *dx, int *dy, int *mag, const int ap)
{
    const struct img *g = j->g;
    const int *sm = canny_smooth[ap / 2 - 1], *de = canny_deriv[ap / 2 - 1];
    const uint8_t *rows[7];
    const int r = ap / 2, w = g->w, l2 = j->p->l2gradient;
    int16_t *cs = s->cs + r, *cd = s->cd + r;

    for (int i = 0; i < ap; i++)
        rows[i] = g->px + (size_t)clampi(y + i - r, 0, g->h - 1) * g->stride;
    for (int x = 0; x < w; x++) {
        int a = 0, b = 0;
        for (int i = 0; i < ap; i++) {
            a += sm[i] * rows[i][x];
            b += de[i] * rows[i][x];
        }
        cs[x] = (int16_t)a;
        cd[x] = (int16_t)b;
    }
    for (int q = 1; q <= r; q++) {
        cs[-q] = cs[0];
        cd[-q] = cd[0];
        cs[w - 1 + q] = cs[w - 1];
        cd[w - 1 + q] = cd[w - 1];
    }
    for (int x = 0; x < w; x++) {
        int a = 0, b = 0;
        for (int k = 0; k < ap; k++) {
            a += de[k] * cs[x + k - r];
            b += sm[k] * cd[x + k - r];
        }
        if (ap == 7) {
            a = canny_div16(a);
            b = canny_div16(b);
        }
        dx[x] = a;
        dy[x] = b;
        mag[x] = l2 ? a * a + b * b : abs(a) + abs(b);
    }
    mag[-1] = mag[w] = 0;
}

/* Compiled for AVX2 as well where the compiler can (chosen at load time by the CPU), since the
 * loops above are integer SIMD at their widest. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void row_grad(const struct canny_job *j, struct canny_scratch *s, int y, int slot)
{
    int *dx = s->dx[slot], *dy = s->dy[slot], *mag = s->mag[slot] + 1;

    if (y < 0 || y >= j->g->h) {
        memset(mag - 1, 0, ((size_t)j->g->w + 2) * sizeof(int));
        return;
    }
    switch (j->p->aperture) {
    case 3:
        row_grad_n(j, s, y, dx, dy, mag, 3);
        break;
    case 5:
        row_grad_n(j, s, y, dx, dy, mag, 5);
        break;
    default:
        row_grad_n(j, s, y, dx, dy, mag, 7);
    }
}

static int push(struct canny_scratch *s, size_t *n, uint8_t *m)
{
    if (*n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        uint8_t **st = realloc(s->stack, cap * sizeof(*st));
        if (!st)
            return -1;
        s->stack = st;
        s->cap = cap;
    }
    s->stack[(*n)++] = m;
    return 0;
}

/* Whether any of the CANNY_SPAN magnitudes at m exceeds low: one vector compare for a span that
 * is (in most images, mostly) below the low threshold and so needs no suppression test. */
static inline int span_above(const int *m, int low)
{
    int any = 0;

    for (int k = 0; k < CANNY_SPAN; k++)
        any |= m[k] > low;
    return any;
}

/* Suppression of rows y0..y1-1 into the map, then the flood within those rows: neighbours in
 * other bands are left to the seam pass. */
static void canny_band(void *ctx, int t, int y0, int y1)
{
    struct canny_job *j = ctx;
    struct canny_scratch *s = &j->s[t];
    const int w = j->g->w, low = j->low, high = j->high;
    uint8_t *lo = j->map + (size_t)(y0 + 1) * j->mstep, *hi = j->map + (size_t)(y1 + 1) * j->mstep;
    const ptrdiff_t ms = (ptrdiff_t)j->mstep;
    const ptrdiff_t off[8] = {-ms - 1, -ms, -ms + 1, -1, 1, ms - 1, ms, ms + 1};
    size_t n = 0;

    j->seam[y0] = 1;
    row_grad(j, s, y0 - 1, 0);
    row_grad(j, s, y0, 1);
    for (int y = y0; y < y1; y++) {
        int u = (y - y0) % 3, c = (y - y0 + 1) % 3, d = (y - y0 + 2) % 3;
        if (cpu_cancelled(j->cancel))
            return; /* cpu_parallel reports it */
        const int *mu = s->mag[u] + 1, *mc = s->mag[c] + 1, *md = s->mag[d] + 1, *dx = s->dx[c], *dy = s->dy[c];
        uint8_t *mrow = j->map + (size_t)(y + 1) * j->mstep + 1;

        row_grad(j, s, y + 1, d);
        memset(mrow, MAP_NONE, (size_t)w);
        for (int x0 = 0; x0 < w; x0 += CANNY_SPAN) {
            int x1 = x0 + CANNY_SPAN < w ? x0 + CANNY_SPAN : w;
            if (x1 - x0 == CANNY_SPAN && !span_above(mc + x0, low))
                continue;
            for (int x = x0; x < x1; x++) {
                int m = mc[x];
                if (m <= low || !canny_nms(m, dx[x], dy[x], mu, mc, md, x))
                    continue;
                mrow[x] = m > high ? MAP_EDGE : MAP_CAND;
                if (m > high && push(s, &n, mrow + x) < 0)
                    goto fail;
            }
        }
    }
    for (size_t pops = 1; n > 0; pops++) {
        uint8_t *m = s->stack[--n];
        if (flood_cancelled(pops, j->cancel))
            return;
        for (int k = 0; k < 8; k++) {
            uint8_t *q = m + off[k];
            if (q >= lo && q < hi && *q == MAP_CAND) {
                *q = MAP_EDGE;
                if (push(s, &n, q) < 0)
                    goto fail;
            }
        }
    }
    return;
fail:
    atomic_store(&j->failed, 1);
}

/* Joins the bands: where an edge pixel of one band touches a candidate of the next across a seam,
 * the candidate becomes an edge, and the flood goes on from there over the whole image. Every edge
 * pixel then has had all its 8 neighbours looked at (in its band, at a seam or here), so the map
 * is the same as one flood over the whole image. -1 when the stack cannot grow, 1 when cancelled. */
static int canny_seams(struct canny_job *j)
{
    struct canny_scratch *s = &j->s[0];
    const int w = j->g->w;
    size_t n = 0;

    for (int y = 1; y < j->g->h; y++) {
        uint8_t *a = j->map + (size_t)y * j->mstep + 1, *b = a + j->mstep; /* rows y-1 and y */
        if (!j->seam[y])
            continue;
        if (cpu_cancelled(j->cancel))
            return 1;
        for (int x = 0; x < w; x++)
            for (int k = -1; k <= 1; k++) {
                if (a[x] == MAP_EDGE && b[x + k] == MAP_CAND) {
                    b[x + k] = MAP_EDGE;
                    if (push(s, &n, b + x + k) < 0)
                        return -1;
                }
                if (b[x] == MAP_EDGE && a[x + k] == MAP_CAND) {
                    a[x + k] = MAP_EDGE;
                    if (push(s, &n, a + x + k) < 0)
                        return -1;
                }
            }
    }
    for (size_t pops = 1; n > 0; pops++) {
        uint8_t *m = s->stack[--n];
        if (flood_cancelled(pops, j->cancel))
            return 1;
        for (int k = 0; k < 9; k++) {
            uint8_t *q = m + (k / 3 - 1) * (ptrdiff_t)j->mstep + (k % 3 - 1);
            if (*q == MAP_CAND) {
                *q = MAP_EDGE;
                if (push(s, &n, q) < 0)
                    return -1;
            }
        }
    }
    return 0;
}

static void canny_store_band(void *ctx, int t, int y0, int y1)
{
    struct canny_job *j = ctx;

    const int w = j->g->w;

    (void)t;
    for (int y = y0; y < y1; y++) { /* locals and restrict: byte stores would otherwise reload w */
        const uint8_t *restrict m = j->map + (size_t)(y + 1) * j->mstep + 1;
        uint8_t *restrict o = j->out->px + (size_t)y * j->out->stride;
        for (int x = 0; x < w; x++)
            o[x] = (uint8_t)-(m[x] == MAP_EDGE);
    }
}

/* Per-thread scratch, one block per thread. */
static int scratch_alloc(struct canny_job *j, int nt)
{
    size_t row = (size_t)j->g->w + 2 * CANNY_MAX_R + 2;

    if (!(j->s = calloc((size_t)nt, sizeof(*j->s))))
        return -1;
    for (int t = 0; t < nt; t++) {
        int *b = malloc(11 * row * sizeof(int));
        if (!b)
            return -1;
        for (int k = 0; k < 3; k++) {
            j->s[t].dx[k] = b + (size_t)k * row;
            j->s[t].dy[k] = b + (size_t)(3 + k) * row;
            j->s[t].mag[k] = b + (size_t)(6 + k) * row;
        }
        j->s[t].cs = (int16_t *)(b + 9 * row);
        j->s[t].cd = (int16_t *)(b + 10 * row);
    }
    return 0;
}

static void scratch_free(struct canny_job *j, int nt)
{
    for (int t = 0; j->s && t < nt; t++) {
        free(j->s[t].dx[0]);
        free(j->s[t].stack);
    }
    free(j->s);
}

/* canny_cpu, its loops reading *cancel (may be NULL) once a row and in the floods. */
static int threaded_run(const struct img *gray, const struct canny_params *p, int threads, struct img *out,
                   const atomic_int *cancel, char *err)
{
    struct canny_job j = {.g = gray, .p = p, .out = out, .cancel = cancel};
    int rc, nt;

    if ((rc = canny_check(gray, p, out, err)) < 0)
        return rc;
    if (threads < 0)
        return edged_fail(err, EDGED_E_PARAM, "threads %d invalid: must be >= 0", threads);
    nt = cpu_threads(threads, gray->h);
    canny_ints(p, &j.low, &j.high);
    j.mstep = (size_t)gray->w + 2;
    atomic_init(&j.failed, 0);
    j.map = malloc(j.mstep * ((size_t)gray->h + 2));
    j.seam = calloc((size_t)gray->h, 1);
    if (!j.map || !j.seam || scratch_alloc(&j, nt) < 0) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate Canny buffers for a %dx%d image", gray->w, gray->h);
        goto out;
    }
    memset(j.map, MAP_NONE, j.mstep);
    memset(j.map + j.mstep * ((size_t)gray->h + 1), MAP_NONE, j.mstep);
    for (int y = 0; y < gray->h; y++)
        j.map[(size_t)(y + 1) * j.mstep] = j.map[(size_t)(y + 2) * j.mstep - 1] = MAP_NONE;
    if ((rc = cpu_parallel(nt, gray->h, CANNY_GRAIN, canny_band, &j, cancel, err)) < 0)
        goto out;
    if (atomic_load(&j.failed) || (rc = canny_seams(&j)) < 0) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot grow the Canny hysteresis stack");
        goto out;
    }
    rc = rc > 0 ? cancelled(err) : cpu_parallel(nt, gray->h, CANNY_GRAIN, canny_store_band, &j, cancel, err);
out:
    scratch_free(&j, nt);
    free(j.seam);
    free(j.map);
    return rc;
}

int canny_cpu(const struct img *gray, const struct canny_params *p, int threads, struct img *out, char *err)
{
    return threaded_run(gray, p, threads, out, NULL, err);
}

/* ---- a plan of filter canny ----------------------------------------------------------------- */

/* The float plane Canny's gray comes from: the luma of RGB(A), else the gray sample. */
static void plan_load(const struct img *in, float *dst)
{
    for (int y = 0; y < in->h; y++) {
        const uint8_t *s = in->px + (size_t)y * in->stride;
        float *d = dst + (size_t)y * in->w;
        for (int x = 0; x < in->w; x++)
            d[x] = in->ch >= 3 ? pixel_luma(s[x * in->ch], s[x * in->ch + 1], s[x * in->ch + 2])
                               : (float)s[x * in->ch];
    }
}

/* The u8 gray of a canny plan into gray (allocated by the caller): pixel_clamp_u8 of the plane,
 * blurred first by conv[0] under plan->border when the plan has a pre-blur. The threaded form
 * runs the blur direct (never as two passes), so that both forms give the same gray. */
static int plan_gray(const struct img *in, const struct filter_plan *plan, int serial, int threads,
                     const atomic_int *cancel, struct img *gray, char *err)
{
    size_t n = (size_t)in->w * (size_t)in->h;
    float *a = NULL, *b = NULL;
    struct kernel2d *k = NULL;
    int rc = 0;

    if (!plan->nconv) { /* straight to u8, no float plane */
        for (int y = 0; y < in->h; y++) {
            const uint8_t *s = in->px + (size_t)y * in->stride;
            uint8_t *d = gray->px + (size_t)y * gray->stride;
            for (int x = 0; x < in->w; x++)
                d[x] = in->ch >= 3 ? pixel_clamp_u8(pixel_luma(s[x * in->ch], s[x * in->ch + 1], s[x * in->ch + 2]))
                                   : s[x * in->ch];
        }
        return 0;
    }
    a = malloc(n * sizeof(float));
    b = malloc(n * sizeof(float));
    if (!a || !b) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the gray plane of a %dx%d image", in->w, in->h);
        goto out;
    }
    plan_load(in, a);
    if (serial) {
        if ((rc = cpu_serial_conv_cancel(a, b, in->w, in->h, (size_t)in->w, &plan->conv[0], plan->border, cancel,
                                         err)) < 0)
            goto out;
    } else {
        if (!(k = malloc(sizeof(*k)))) {
            rc = edged_fail(err, EDGED_E_NOMEM, "out of memory");
            goto out;
        }
        *k = plan->conv[0];
        k->separable = 0;
        if ((rc = cpu_conv_cancel(a, b, in->w, in->h, (size_t)in->w, k, plan->border, threads, cancel, err)) < 0)
            goto out;
    }
    for (int y = 0; y < in->h; y++)
        for (int x = 0; x < in->w; x++)
            gray->px[(size_t)y * gray->stride + x] = pixel_clamp_u8(b[(size_t)y * in->w + x]);
out:
    free(k);
    free(b);
    free(a);
    return rc;
}

int canny_plan_run(const struct img *in, const struct filter_plan *plan, int serial, int threads, struct img *out,
                   char *err)
{
    return canny_plan_run_cancel(in, plan, serial, threads, out, NULL, err);
}

int canny_plan_run_cancel(const struct img *in, const struct filter_plan *plan, int serial, int threads,
                          struct img *out, const atomic_int *cancel, char *err)
{
    struct img gray = {0};
    const struct img *src;
    size_t n;
    int rc;

    *out = (struct img){0};
    if ((rc = planes_check(in, plan, &n, err)) < 0)
        return rc;
    if (plan->filter != FILTER_CANNY)
        return edged_fail(err, EDGED_E_PARAM, "plan of filter %s is not canny", filter_name(plan->filter));
    if (in->ch == 1 && !plan->nconv) { /* the image is its own gray: no copy */
        gray = *in;
        gray.px = NULL;
    } else if ((rc = img_alloc(&gray, in->w, in->h, 1, err)) < 0 ||
               (rc = plan_gray(in, plan, serial, threads, cancel, &gray, err)) < 0) {
        goto out;
    }
    if ((rc = img_alloc(out, in->w, in->h, 1, err)) < 0)
        goto out;
    src = gray.px ? &gray : in;
    rc = serial ? serial_run(src, &plan->canny, out, cancel, err) : threaded_run(src, &plan->canny, threads, out, cancel, err);
out:
    img_free(&gray);
    if (rc < 0)
        img_free(out);
    return rc;
}
