/* test_gpu.c — every GPU variant against cpu_serial on fresh random data: kernel sizes 1..63
 * (square, rectangular, separable or not), borders, channel counts, image sizes; variant limits,
 * the float planes and u8 output of whole plans, and the async API on several streams.
 *
 * Tolerances. Floats: |gpu - ref| <= f * S * M + 1e-6 where M = max |input|, S = sum |taps| and
 * f = 1e-5 + 1e-6 * sqrt(taps): the variants sum the same products in other orders and with FMA
 * contraction, and the serial reference's own sequential float sum drifts with the tap count (a
 * 63x63 box on 0..255 data is off by ~3e-3 = 1.2e-5 * S * M * sqrt(63*63)/5, measured). MAGNITUDE:
 * f0*S0 + f1*S1; CHAIN: (f0 + f1) * S0 * S1. A single missing tap of a 63x63 box (M/3969) is still
 * 3.4x the tolerance. u8: equal to pixel_post(ref), or to
 * pixel_post(ref +- tol) where the float lies within tol of a rounding step; the edge map exact
 * except where |L| is within 1e-3 of the threshold. Alpha exact.
 * Env: EDGED_SEED repeats a run; EDGED_GPU_QUICK=1 small sizes only (compute-sanitizer memcheck),
 * EDGED_GPU_QUICK=2 a third of those kernels and no async rounds (racecheck, synccheck);
 * EDGED_GPU_ONLY=name runs the kernel and plan matrices for that one variant (sanitizer runs);
 * EDGED_REQUIRE_GPU=1 fails instead of skipping when no device is usable.
 * fast and fft (where built) join every matrix; auto is checked per plan through backend_run (the
 * dispatch the service runs), and the fused u8 edge kernel of fast has its own test (every border,
 * sizes around its 240- and 120-column warp strips and below its 5x5 kernel, 1xN and Nx1, strips
 * of 32 rows and taller ones, every channel count, several thresholds, smooth images with |L| near
 * T); the default border (reflect) has its own, flat images included; fast's streaming kernels
 * also run one plane large enough for their 48-row strips (test_fast_stream_tall). tf32x3 (tensor
 * cores, 3xTF32) has its own matrix around its tiles and its two paths, also held to the bound
 * docs/gpu.md states against the exact double correlation (test_tf32x3).
 * Canny (test_canny): gconv_canny_host equals canny_serial bit for bit (0 pixels differ) on random
 * and smooth images of many sizes (widths 1, 15, 17, 7000, 7001, 8191: rows off 16-byte alignment),
 * every aperture, both norms and several threshold pairs; the spiral of canny_spiral.h is found
 * whole; plans of filter canny (gray, RGB, pre-blur) through
 * gconv_run and gconv_submit/gconv_finish equal canny_plan_run's serial map.
 * Pinned input (test_async_pinned): pixels in a buffer of the pinned pool (gconv_submit_pinned, as
 * the service's request threads leave them) give byte for byte the output of the same pixels staged
 * by gconv_submit. */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "corr_exact.h"
#include "cpu_serial.h"
#include "jobs/backend.h"
#include "canny.h"
#include "canny_spiral.h"
#include "errors.h"
#include "filter.h"
#include "gconv.h"
#include "gpinned.h"
#include "image.h"
#include "pixel.h"
#include "variant.h"

#define NSTREAMS 8
#define MAX_THREADS 1024 /* threads per block on every CUDA GPU since sm_20 */

static const int blocks[4] = {8, 16, 24, 32};
static int quick, only = -1;
static struct backend *eng; /* auto goes through the backend, as in the service */

static double now_s(void) { return clock_ms() / 1e3; }

/* ---- kernels ---------------------------------------------------------------------------- */

/* Random taps in [-1, 1): an outer product when `rank1`, otherwise independent (rank 1 anyway
 * when a side is 1); separable factors filled by the filter bank's detector. */
static void kernel_random(struct kernel2d *k, int rows, int cols, int rank1)
{
    float col[FILTER_MAX_SIDE], row[FILTER_MAX_SIDE];

    memset(k, 0, sizeof(*k));
    k->rows = rows;
    k->cols = cols;
    for (int i = 0; i < rows; i++)
        col[i] = check_rng_float(-1.0f, 1.0f);
    for (int j = 0; j < cols; j++)
        row[j] = check_rng_float(-1.0f, 1.0f);
    for (int i = 0; i < rows * cols; i++)
        k->taps[i] = rank1 ? col[i / cols] * row[i % cols] : check_rng_float(-1.0f, 1.0f);
    kernel_detect_separable(k);
}

static void kernel_bank(struct kernel2d *k, enum filter_id id, int size)
{
    struct filter_spec spec;
    char err[EDGED_ERR_LEN];

    filter_spec_init(&spec, id);
    spec.size = size;
    if (filter_kernel(&spec, k, err) < 0) {
        fprintf(stderr, "filter_kernel %s: %s\n", filter_name(id), err);
        abort();
    }
}

/* Relative tolerance factor f of a kernel (see the top of the file). */
static double taps_f(const struct kernel2d *k)
{
    return 1e-5 + 1e-6 * sqrt((double)k->rows * k->cols);
}

static double taps_abs_sum(const struct kernel2d *k)
{
    double s = 0.0;
    for (int i = 0; i < k->rows * k->cols; i++)
        s += fabs(k->taps[i]);
    return s;
}

#define TF32X3_MAX_COLS 33 /* tf32x3: the widest taps it serves (docs/gpu.md) */

/* Whether variant v must refuse kernel k at block side b (the documented limits). */
static int expect_limit(enum variant v, const struct kernel2d *k, int b)
{
    if ((v == VARIANT_SHARED || v == VARIANT_SHARED_CONSTANT) &&
        (b + k->cols - 1) * (b + k->rows - 1) > MAX_THREADS)
        return 1;
    if (v == VARIANT_TF32X3 && k->cols > TF32X3_MAX_COLS)
        return 1;
    return v == VARIANT_SEPARABLE && !k->separable;
}

/* ---- float comparison ------------------------------------------------------------------- */

struct diff {
    size_t bad, first;
    double max_err;
};

static struct diff compare_floats(const float *got, const float *ref, size_t n, double tol)
{
    struct diff d = {0, 0, 0.0};

    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= tol)) { /* NaN (an unwritten, poisoned sample) fails too */
            if (!d.bad++)
                d.first = i;
        }
        if (e > d.max_err || isnan(e))
            d.max_err = isnan(e) ? INFINITY : e;
    }
    return d;
}

static void poison_floats(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
}

static int all_nan(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isnan(p[i]))
            return 0;
    return 1;
}

/* ---- single-plane correlations ---------------------------------------------------------- */

struct conv_case {
    const char *label;
    struct kernel2d k;
    int borders; /* bit mask of borders to run */
};

/* One (image, kernel, border): reference once, then every variant (or only variant `one`, when not
 * -1) at the given blocks. */
static void conv_one(struct gconv_ctx *ctx, const float *in, float *out, float *ref, int w, int h,
                     float max_in, const struct conv_case *c, enum border b, int block_mask, int one)
{
    size_t n = (size_t)w * h;
    double tol = taps_f(&c->k) * taps_abs_sum(&c->k) * max_in + 1e-6;
    char err[EDGED_ERR_LEN];
    struct filter_plan plan;

    cpu_serial_conv(in, ref, w, h, (size_t)w, &c->k, b);
    memset(&plan, 0, sizeof(plan));
    plan.combine = COMBINE_SINGLE, plan.nconv = 1, plan.conv[0] = c->k, plan.border = b, plan.nsteps = 1;
    plan.step[0] = (struct plan_step){.filter = FILTER_CUSTOM, .combine = COMBINE_SINGLE, .nconv = 1, .border = b};
    plan.in_ch = plan.planes = plan.out_ch = 1, plan.post = POST_CLAMP;
    for (int v = VARIANT_FIRST_GPU; v < VARIANT_COUNT; v++)
        for (int bi = 0; bi < 4; bi++) {
            if (!(block_mask & (1 << bi)) || (only >= 0 && v != only) || (one >= 0 && v != one) ||
                !variant_built(v)) /* fft: FFT=0 */
                continue;
            int B = blocks[bi], lim = expect_limit(v, &c->k, B), rc, rc_check;
            poison_floats(out, n);
            err[0] = '\0';
            rc = gconv_conv_host(ctx, in, out, w, h, &c->k, b, v, B, NULL, err);
            rc_check = gconv_check(ctx, &plan, w, h, v, B, NULL);
            CHECK(rc == rc_check, "%s %s B=%d %s %dx%d: run %d but check %d", variant_name(v), c->label, B,
                  border_name(b), w, h, rc, rc_check);
            if (lim) {
                CHECK(rc == EDGED_E_VARIANT_LIMIT && strstr(err, variant_name(v)) && all_nan(out, n),
                      "%s %s B=%d %dx%d: expected a limit error naming the variant, untouched output; got %d "
                      "'%s'",
                      variant_name(v), c->label, B, w, h, rc, err);
                continue;
            }
            if (rc != 0) {
                CHECK(rc == 0, "%s %s B=%d %s %dx%d: %s", variant_name(v), c->label, B, border_name(b), w, h,
                      err);
                continue;
            }
            struct diff d = compare_floats(out, ref, n, tol);
            CHECK(d.bad == 0,
                  "%s %s B=%d %s %dx%d: %zu of %zu samples off, first at (%zu,%zu) gpu %g ref %g, max err %g "
                  "> tol %g",
                  variant_name(v), c->label, B, border_name(b), w, h, d.bad, n, d.first % w, d.first / w,
                  out[d.first], ref[d.first], d.max_err, tol);
        }
}

/* Kernel cases for an image of n pixels: everything on small images, fewer on large ones (the
 * serial reference costs n * taps). */
static int conv_cases(struct conv_case *cs, size_t n)
{
    /* every side a kernel of fast switches at: streaming up to 9 (full rank) and 3 (rank 1), tiles above */
    static const int sides[] = {1, 3, 5, 7, 9, 11, 13, 15, 17, 25, 31, 63};
    const int nsides = (int)(sizeof(sides) / sizeof(sides[0]));
    static const int rect[7][2] = {{1, 7}, {7, 1}, {3, 11}, {25, 5}, {1, 63}, {63, 1}, {5, 31}};
    const int all = 7, zero = 1;
    int nc = 0, big = n > 100000, huge = n > 2000000;

    for (int s = 0; s < nsides; s++)
        for (int rank1 = 0; rank1 < 2; rank1++) {
            int side = sides[s];
            if ((huge && side > 11) || (huge && side > 3 && !rank1 && side != 11))
                continue;
            if (big && side > 25 && rank1 == (side == 63)) /* 31 rank-1, 63 full: one each */
                continue;
            cs[nc].label = rank1 ? "rank1" : "full";
            kernel_random(&cs[nc].k, side, side, rank1);
            cs[nc++].borders = (big && (side > 25 || (huge && side > 5))) ? zero : all;
        }
    for (int r = 0; r < 7 && !huge; r++) {
        if (big && (rect[r][0] * rect[r][1] > 200))
            continue;
        cs[nc].label = r % 2 ? "rect-rank1" : "rect-full";
        kernel_random(&cs[nc].k, rect[r][0], rect[r][1], r % 2);
        cs[nc++].borders = all;
    }
    if (quick == 2) { /* every third case from the 3x3: still 3..63, full and rank 1, rectangles */
        int kept = 0;
        for (int c = 2; c < nc; c += 3)
            cs[kept++] = cs[c];
        nc = kept;
    }
    cs[nc].label = "gaussian5";
    kernel_bank(&cs[nc].k, FILTER_GAUSSIAN5, 0);
    cs[nc++].borders = all;
    cs[nc].label = "sobel_x";
    kernel_bank(&cs[nc].k, FILTER_SOBEL_X, 0);
    cs[nc++].borders = all;
    if (!big) {
        cs[nc].label = "emboss";
        kernel_bank(&cs[nc].k, FILTER_EMBOSS, 0);
        cs[nc++].borders = all;
        cs[nc].label = "box63";
        kernel_bank(&cs[nc].k, FILTER_BOX, 63);
        cs[nc++].borders = all;
    }
    return nc;
}

struct size2 {
    int w, h;
};

static void test_conv(struct gconv_ctx *ctx)
{
    static const struct size2 full[] = {{1, 1}, {17, 9}, {1000, 1}, {1, 1000}, {1023, 777}, {2048, 2048}};
    static const struct size2 small[] = {{1, 1}, {17, 9}, {100, 1}, {1, 100}, {61, 37}};
    const struct size2 *sizes = quick == 2 ? small + 3 : quick ? small : full;
    int nsizes = quick == 2 ? 2 : quick ? 5 : 6, rot = 0;
    struct conv_case *cs = malloc(sizeof(*cs) * 64);

    for (int si = 0; si < nsizes; si++) {
        int w = sizes[si].w, h = sizes[si].h;
        size_t n = (size_t)w * h;
        float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)),
              *ref = malloc(n * sizeof(float));
        float max_in = 0.0f;
        double t0 = now_s();
        int nc = conv_cases(cs, n), checks0 = check_passed + check_failed;

        for (size_t i = 0; i < n; i++) {
            in[i] = check_rng_float(-128.0f, 128.0f);
            max_in = fmaxf(max_in, fabsf(in[i]));
        }
        for (int c = 0; c < nc; c++)
            for (int b = 0; b < BORDER_COUNT; b++) {
                if (!(cs[c].borders & (1 << b)) || (quick && (c + si) % BORDER_COUNT != b))
                    continue; /* quick: one border per kernel, in rotation */
                /* every block on small images; on large ones 16 and one other in rotation */
                int mask = n <= 100000 ? 15 : (2 | (1 << (rot++ % 4)));
                conv_one(ctx, in, out, ref, w, h, max_in, &cs[c], b, mask, -1);
            }
        printf("conv %5dx%-5d %2d kernels: %d checks in %.1f s\n", w, h, nc,
               check_passed + check_failed - checks0, now_s() - t0);
        fflush(stdout);
        free(in), free(out), free(ref);
    }
    free(cs);
}

/* The fused separable kernel of fast walks each band of rows through a ring of row-filtered
 * samples. test_conv's images give it bands of one output step; here bands of 2, 3, 4 and 25 steps
 * (EDGED_SEP_BAND, rows) make the ring wrap, taller bands followed by a tail of 64-row ones
 * (EDGED_SEP_TAIL, EDGED_SEP_TAIL_PCT) cover the grid's two band heights, and the sides start the
 * staged window at every offset within a float4 (19: 3, 21: 2, 23: 1, 25: 0; 63 fills a ring of 96
 * rows). EDGED_SEP_BULK=0 runs the first case again with every step staged by the threads (on sm_90
 * the others stage interior steps by bulk copies). The racecheck set (EDGED_GPU_QUICK=2) keeps 63 with
 * bands of 96 rows and the tail. */
static void test_fast_sep_bands(struct gconv_ctx *ctx)
{
    static const int sides[] = {63, 19, 21, 23, 25};
    /* band rows, tail band rows, tail percent, bulk staging: 96-row bands then 64-row ones, 128-row
     * bands then 64-row ones (a 1 % tail: 64 rows or more, the rest of the 270 in taller bands), then
     * one height; the first again without bulk copies (with them, the interior steps of the middle
     * strip are bulk copies, frame steps never) */
    static const char *bands[][4] = {{"96", "64", "1", "1"},   {"128", "64", "1", "1"}, {"96", "0", "100", "1"},
                                     {"64", "0", "100", "1"},  {"800", "0", "100", "1"}, {"96", "64", "1", "0"}};
    const int nsides = quick == 2 ? 1 : 5, nbands = quick == 2 ? 1 : 6;
    const int w = 333, h = 270;
    size_t n = (size_t)w * h;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
    char err[EDGED_ERR_LEN];
    struct kernel2d k;
    double t0 = now_s();
    int checks0 = check_passed + check_failed;

    for (size_t i = 0; i < n; i++)
        in[i] = check_rng_float(-128.0f, 128.0f);
    for (int s = 0; s < nsides; s++) {
        kernel_random(&k, sides[s], sides[s], 1);
        double tol = taps_f(&k) * taps_abs_sum(&k) * 128.0 + 1e-6;
        for (int b = 0; b < BORDER_COUNT; b++) {
            cpu_serial_conv(in, ref, w, h, (size_t)w, &k, b);
            for (int bi = 0; bi < nbands; bi++) {
                poison_floats(out, n);
                check_knob("EDGED_SEP_BAND", bands[bi][0]), check_knob("EDGED_SEP_TAIL", bands[bi][1]),
                    check_knob("EDGED_SEP_TAIL_PCT", bands[bi][2]), check_knob("EDGED_SEP_BULK", bands[bi][3]);
                int rc = gconv_conv_host(ctx, in, out, w, h, &k, b, VARIANT_FAST, 16, NULL, err);
                check_knobs_reset();
                CHECK(rc == 0, "fast rank1 %dx%d band %s/%s bulk %s %s: %s", sides[s], sides[s], bands[bi][0],
                      bands[bi][1], bands[bi][3], border_name(b), err);
                if (rc != 0)
                    continue;
                struct diff d = compare_floats(out, ref, n, tol);
                CHECK(d.bad == 0,
                      "fast rank1 %dx%d band %s/%s bulk %s %s %dx%d: %zu samples off, first at (%zu,%zu) gpu %g ref %g",
                      sides[s], sides[s], bands[bi][0], bands[bi][1], bands[bi][3], border_name(b), w, h, d.bad,
                      d.first % w, d.first / w, out[d.first], ref[d.first]);
            }
        }
    }
    printf("fast separable bands: %d checks in %.1f s\n", check_passed + check_failed - checks0, now_s() - t0);
    free(in), free(out), free(ref);
}

/* ---- whole plans ------------------------------------------------------------------------ */

static void image_random(struct img *im, int w, int h, int ch)
{
    if (img_alloc(im, w, h, ch, NULL) < 0)
        abort();
    for (size_t i = 0; i < (size_t)w * h * ch; i++)
        im->px[i] = (uint8_t)(check_rng() >> 24);
}

/* A stepwise plan's tolerance: each step's error bound propagated through the later ones. E is the
 * error bound and M the magnitude bound of the values a step reads; a kernel of absolute sum s and
 * rounding factor f gives E' = s E + f s M, M' = s M (MAGNITUDE: the two kernels' sum; CHAIN: their
 * product); a threshold step gives exact 0/255 (M' = 255), valid only where its input is farther
 * than E from the cut (the caller's business). */
static double steps_tol(const struct filter_plan *p, double max_in)
{
    double e = 0.0, m = max_in;

    for (int i = 0; i < p->nsteps; i++) {
        const struct plan_step *st = &p->step[i];
        const struct kernel2d *k = p->conv + st->conv0;
        double s0 = st->nconv > 0 ? taps_abs_sum(&k[0]) : 0.0, f0 = st->nconv > 0 ? taps_f(&k[0]) : 0.0;
        double s1 = st->nconv > 1 ? taps_abs_sum(&k[1]) : 0.0, f1 = st->nconv > 1 ? taps_f(&k[1]) : 0.0;
        if (st->combine == COMBINE_THRESHOLD) {
            e = 0.0, m = 255.0;
        } else if (st->combine == COMBINE_MAGNITUDE) {
            e = (s0 + s1) * e + (f0 * s0 + f1 * s1) * m, m = (s0 + s1) * m;
        } else if (st->combine == COMBINE_CHAIN) {
            e = s0 * s1 * e + (f0 + f1) * s0 * s1 * m, m = s0 * s1 * m;
        } else {
            e = s0 * e + f0 * s0 * m, m = s0 * m;
        }
        e += 1e-6 * m; /* the luma of a gray step, the magnitude's square root */
    }
    return e + 1e-6;
}

static double plan_tol(const struct filter_plan *p, double max_in)
{
    if (filter_plan_stepwise(p))
        return steps_tol(p, max_in);
    double s0 = taps_abs_sum(&p->conv[0]), f0 = taps_f(&p->conv[0]), s1 = 0.0, f1 = 0.0, r;

    if (p->nconv > 1)
        s1 = taps_abs_sum(&p->conv[1]), f1 = taps_f(&p->conv[1]);
    r = p->combine == COMBINE_MAGNITUDE ? f0 * s0 + f1 * s1
        : p->combine == COMBINE_CHAIN   ? (f0 + f1) * s0 * s1
                                        : f0 * s0;
    return r * max_in + 1e-6;
}

/* Whether u8 `got` is a faithful post-processing of the reference float within tol. */
static int u8_ok(uint8_t got, float ref, float tol, const struct filter_plan *p)
{
    if (p->post == POST_THRESHOLD) {
        if (fabsf(fabsf(ref) - p->threshold) <= 1e-3f)
            return got == 0 || got == 255;
        return got == pixel_post(ref, p->post, p->threshold);
    }
    int a = pixel_post(ref - tol, p->post, p->threshold), b = pixel_post(ref + tol, p->post, p->threshold);
    int c = pixel_post(ref, p->post, p->threshold), lo = a < b ? a : b, hi = a > b ? a : b;
    if (p->post == POST_ABS && ref - tol < 0.0f && ref + tol > 0.0f)
        lo = 0;
    lo = c < lo ? c : lo;
    hi = c > hi ? c : hi;
    return got >= lo && got <= hi;
}

/* Samples of out that are not faithful to ref (planes) or to the input's alpha. */
static size_t compare_u8(const struct img *out, const struct img *in, const float *ref, double tol,
                         const struct filter_plan *p, size_t *first)
{
    size_t n = (size_t)in->w * in->h, bad = 0;

    for (size_t i = 0; i < n; i++) {
        size_t x = i % in->w, y = i / in->w;
        const uint8_t *o = out->px + y * out->stride + x * out->ch;
        int ok = 1;
        for (int c = 0; c < p->planes; c++)
            ok &= u8_ok(o[c], ref[c * n + i], (float)tol, p);
        if (out->ch > p->planes)
            ok &= o[p->planes] == in->px[y * in->stride + x * in->ch + in->ch - 1];
        if (!ok && !bad++)
            *first = i;
    }
    return bad;
}

struct plan_case {
    enum filter_id id;
    int size;
    enum color_mode color;
};

static int plan_make(struct filter_plan *plan, const struct plan_case *pc, enum border b, int ch)
{
    struct filter_spec spec;
    char err[EDGED_ERR_LEN];

    filter_spec_init(&spec, pc->id);
    spec.size = pc->size;
    spec.color = pc->color;
    spec.border = b;
    if (pc->id == FILTER_CUSTOM) {
        spec.custom_rows = 5, spec.custom_cols = 31;
        for (int i = 0; i < 5 * 31; i++)
            spec.custom_taps[i] = check_rng_float(-1.0f, 1.0f);
    }
    if (filter_plan_make(&spec, ch, plan, err) < 0) {
        CHECK(0, "filter_plan_make %s: %s", filter_name(pc->id), err);
        return -1;
    }
    return 0;
}

/* "gaussian->sobel->threshold": the filters of plan's steps, for messages. */
static const char *pipe_label(const struct filter_plan *plan, char *buf, size_t cap)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < plan->nsteps && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "->" : "", filter_name(plan->step[i].filter));
    return buf;
}

/* A stepwise plan run again without its float planes must give the very bytes of the run with them
 * (`with`): that run is the one whose planes hold every step's result, this one lets the pack apply a
 * trailing threshold and read the planes where the last step left them. */
static void pipe_same_without_planes(struct gconv_ctx *ctx, const struct img *in, const struct filter_plan *plan,
                                     enum variant v, int B, const struct img *with)
{
    char err[EDGED_ERR_LEN] = "", label[128];
    size_t row = (size_t)in->w * plan->out_ch, bad = 0, first = 0;
    struct img out;
    int rc;

    if (!filter_plan_stepwise(plan))
        return;
    if (img_alloc(&out, in->w, in->h, plan->out_ch, NULL) < 0)
        abort();
    memset(out.px, 0xAB, out.stride * out.h);
    rc = gconv_run(ctx, 1, in, plan, v, B, &out, NULL, NULL, err);
    for (size_t i = 0; rc == 0 && i < row * in->h; i++)
        if (out.px[(i / row) * out.stride + i % row] != with->px[(i / row) * with->stride + i % row] && !bad++)
            first = i;
    CHECK(rc == 0 && bad == 0, "pipeline %s %s B=%d %dx%dx%d without planes: rc %d %s; %zu bytes differ from the "
          "run with them, first at byte %zu", pipe_label(plan, label, sizeof(label)), variant_name(v), B, in->w,
          in->h, in->ch, rc, err, bad, first);
    img_free(&out);
}

/* One (image, plan): the serial reference, then the variants (block in rotation). */
static void plan_one(struct gconv_ctx *ctx, const struct img *in, const struct filter_plan *plan, int *rot)
{
    size_t n = (size_t)in->w * in->h, np = n * plan->planes;
    float *ref = malloc(np * sizeof(float)), *got = malloc(np * sizeof(float));
    double tol = plan_tol(plan, 255.0);
    char err[EDGED_ERR_LEN];
    struct img out;

    if (cpu_serial_compute(in, plan, ref, err) < 0) {
        CHECK(0, "cpu_serial_compute: %s", err);
        goto out;
    }
    if (img_alloc(&out, in->w, in->h, plan->out_ch, NULL) < 0)
        abort();
    for (int v = VARIANT_FIRST_GPU; v < VARIANT_COUNT; v++) {
        if ((only >= 0 && v != only) || !variant_built(v)) /* fft in a build without cuFFT */
            continue;
        int B = blocks[(*rot)++ % 4], lim = 0, rc;
        for (int i = 0; i < plan->nconv; i++)
            lim |= expect_limit(v, &plan->conv[i], B);
        memset(out.px, 0xAB, out.stride * out.h);
        poison_floats(got, np);
        rc = gconv_run(ctx, 1, in, plan, v, B, &out, got, NULL, err);
        const char *what = filter_name(plan->filter);
        if (lim) {
            int untouched = all_nan(got, np);
            for (size_t i = 0; i < out.stride * out.h; i++)
                untouched &= out.px[i] == 0xAB;
            CHECK(rc == EDGED_E_VARIANT_LIMIT && untouched,
                  "plan %s %s B=%d: expected limit, untouched; got %d %s", what, variant_name(v), B, rc, err);
            continue;
        }
        if (rc != 0) {
            CHECK(rc == 0, "plan %s %s B=%d %dx%dx%d: %s", what, variant_name(v), B, in->w, in->h, in->ch,
                  err);
            continue;
        }
        struct diff d = compare_floats(got, ref, np, tol);
        CHECK(d.bad == 0,
              "plan %s %s B=%d %s %dx%dx%d: %zu floats off, first %zu gpu %g ref %g (max err %g, tol %g)",
              what, variant_name(v), B, border_name(plan->border), in->w, in->h, in->ch, d.bad, d.first,
              got[d.first], ref[d.first], d.max_err, tol);
        size_t first = 0, bad = compare_u8(&out, in, ref, tol, plan, &first);
        CHECK(bad == 0, "plan %s %s B=%d %s %dx%dx%d: %zu u8 pixels off, first (%zu,%zu)", what,
              variant_name(v), B, border_name(plan->border), in->w, in->h, in->ch, bad, first % in->w,
              first / in->w);
        pipe_same_without_planes(ctx, in, plan, (enum variant)v, B, &out);
    }
    img_free(&out);
    if (eng && only < 0) { /* auto, routed and run by the backend as the service's worker runs it */
        struct job *job = job_new();
        enum variant used = VARIANT_AUTO;
        int rc = job ? img_alloc(&job->in, in->w, in->h, in->ch, err) : EDGED_E_NOMEM;
        if (rc == 0) {
            for (int y = 0; y < in->h; y++)
                memcpy(job->in.px + (size_t)y * job->in.stride, in->px + (size_t)y * in->stride,
                       (size_t)in->w * in->ch);
            job->plan = *plan;
            job->variant = VARIANT_AUTO;
            if ((rc = backend_route(eng, job, err)) == 0 && (rc = backend_run(eng, job)) < 0)
                snprintf(err, sizeof(err), "%s", job->err);
            used = job->used;
        }
        CHECK(rc == 0 && variant_is_gpu(used), "plan %s auto %dx%dx%d: %d %s (ran %s)", filter_name(plan->filter),
              in->w, in->h, in->ch, rc, err, variant_name(used));
        if (rc == 0) {
            size_t first = 0, bad = compare_u8(&job->out, in, ref, tol, plan, &first);
            CHECK(bad == 0, "plan %s auto (%s) %s %dx%dx%d: %zu u8 pixels off, first (%zu,%zu)",
                  filter_name(plan->filter), variant_name(used), border_name(plan->border), in->w, in->h, in->ch,
                  bad, first % in->w, first / in->w);
        }
        job_release(NULL, job);
    }
out:
    free(ref);
    free(got);
}

/* ---- pipelines (ops): several steps in one job, intermediate planes on the device ---------------- */

/* The pipeline of n steps ops (borders b) for ch channels. */
static int pipe_make(struct filter_plan *plan, const struct filter_spec *ops, int n, enum border b, int ch)
{
    struct filter_spec s[FILTER_MAX_STEPS];
    char err[EDGED_ERR_LEN];

    for (int i = 0; i < n; i++)
        s[i] = ops[i], s[i].border = b;
    if (filter_pipeline_make(s, n, ch, plan, err) < 0) {
        CHECK(0, "filter_pipeline_make: %s", err);
        return -1;
    }
    return 0;
}

/* A pipeline ending in a threshold step on every GPU variant: the map equals (v >= cut) of the
 * reference's float result of the steps before (mag: the plan of those steps; its luma when the
 * threshold step takes it) wherever that lies farther than its tolerance from the cut; the planes
 * downloaded hold the map; the run without planes gives the same bytes. */
static void pipe_threshold_one(struct gconv_ctx *ctx, const struct img *in, const struct filter_plan *plan,
                               const struct filter_plan *mag, int *rot)
{
    size_t n = (size_t)in->w * in->h, np = n * plan->planes;
    float *ref = malloc(n * mag->planes * sizeof(float)), *got = malloc(np * sizeof(float));
    float cut = plan->step[plan->nsteps - 1].value;
    double tol = steps_tol(mag, 255.0) + (mag->planes > plan->planes ? 1e-4 * 255.0 : 0.0);
    char err[EDGED_ERR_LEN], label[128];
    struct img out = {0};

    if (!ref || !got || img_alloc(&out, in->w, in->h, plan->out_ch, NULL) < 0 ||
        cpu_serial_compute(in, mag, ref, err) < 0) {
        CHECK(0, "pipeline threshold: setup: %s", err);
        goto out;
    }
    for (size_t i = 0; mag->planes > plan->planes && i < n; i++) /* the threshold step takes the luma */
        ref[i] = pixel_luma(ref[i], ref[n + i], ref[2 * n + i]);
    pipe_label(plan, label, sizeof(label));
    for (int v = VARIANT_FIRST_GPU; v < VARIANT_COUNT; v++) {
        int B = blocks[(*rot)++ % 4], lim = 0, rc;
        size_t bad = 0, near = 0;
        if ((only >= 0 && v != only) || !variant_built(v))
            continue;
        for (int i = 0; i < plan->nconv; i++)
            lim |= expect_limit(v, &plan->conv[i], B);
        rc = gconv_run(ctx, 1, in, plan, v, B, &out, got, NULL, err);
        if (lim) {
            CHECK(rc == EDGED_E_VARIANT_LIMIT, "pipeline %s B=%d: expected the limit, got %d %s", variant_name(v), B,
                  rc, err);
            continue;
        }
        CHECK(rc == 0, "pipeline %s %s B=%d %dx%dx%d: %s", label, variant_name(v), B, in->w, in->h, in->ch, err);
        for (size_t i = 0; rc == 0 && i < np; i++) {
            size_t px = i % n;
            uint8_t o = out.px[(px / in->w) * out.stride + (px % in->w) * out.ch + i / n];
            if (fabs(ref[i] - cut) <= tol) {
                near++;
                bad += (o != 0 && o != 255) || got[i] != (float)o;
            } else {
                bad += o != (ref[i] >= cut ? 255 : 0) || got[i] != (float)o;
            }
        }
        CHECK(bad == 0, "pipeline %s %s B=%d %s %dx%dx%d: %zu samples off (%zu near the cut %g, tol %g)", label,
              variant_name(v), B, border_name(plan->step[0].border), in->w, in->h, in->ch, bad, near, cut, tol);
        if (rc == 0)
            pipe_same_without_planes(ctx, in, plan, (enum variant)v, B, &out);
    }
out:
    img_free(&out);
    free(got);
    free(ref);
}

/* im with every sample 0 or 255: integer taps then give multiples of 255, far from any cut in
 * (0, 255), so a threshold after them maps exactly as the reference does. */
static void image_binary(struct img *im, int w, int h, int ch)
{
    image_random(im, w, h, ch);
    for (size_t i = 0; i < (size_t)w * h * ch; i++)
        im->px[i] = im->px[i] & 0x80 ? 255 : 0;
}

#define PIPE_CASES 10

/* Device pipelines against cpu_serial on random images: continuous ones through plan_one (floats
 * within the propagated tolerance steps_tol, u8 a faithful rounding of them, auto through the
 * backend), the ones ending in a threshold through pipe_threshold_one. Both also run every variant
 * without the float planes and want the same bytes. The cases cover each place a threshold step
 * runs (step_fold in gconv_plan.cu): into the magnitude before it (0, last; 9, last, on rgb planes;
 * 6, not last; 6 and 9 on a binary image so that the map is exact), into the pack (4, rgb; 5, after
 * the luma of rgb planes; 7, alone, on the loaded planes), its own pass (3, first); a magnitude as
 * the last step (3, gray; 8, rgb); and results left in either set of planes (odd and even counts of
 * passes). */
static void test_pipelines(struct gconv_ctx *ctx)
{
    static const struct size2 sizes[] = {{17, 9}, {61, 37}, {1023, 777}};
    struct filter_spec ops[PIPE_CASES][3];
    static const int nops[PIPE_CASES] = {3, 3, 2, 2, 3, 2, 3, 1, 2, 2};
    struct filter_plan *plan = malloc(sizeof(*plan)), *mag = malloc(sizeof(*mag));
    int rot = 0;

    if (!plan || !mag)
        abort();
    filter_spec_init(&ops[0][0], FILTER_GAUSSIAN), ops[0][0].size = 7; /* rgb blur, then gray */
    filter_spec_init(&ops[0][1], FILTER_SOBEL);
    filter_spec_init(&ops[0][2], FILTER_THRESHOLD), ops[0][2].value = 40.0f;
    filter_spec_init(&ops[1][0], FILTER_BOX), ops[1][0].size = 5; /* rgb throughout, offset at the end */
    filter_spec_init(&ops[1][1], FILTER_SHARPEN);
    filter_spec_init(&ops[1][2], FILTER_EMBOSS);
    filter_spec_init(&ops[2][0], FILTER_SCHARR_X); /* gray, signed values into a blur */
    filter_spec_init(&ops[2][1], FILTER_GAUSSIAN), ops[2][1].size = 15, ops[2][1].post = POST_ABS;
    filter_spec_init(&ops[3][0], FILTER_THRESHOLD); /* exact map of each channel, then a gradient */
    ops[3][0].color = COLOR_RGB; /* of the u8 samples themselves: a luma could round across the cut */
    filter_spec_init(&ops[3][1], FILTER_PREWITT);
    filter_spec_init(&ops[4][0], FILTER_BOX), ops[4][0].size = 3; /* rgb, the map of each channel */
    filter_spec_init(&ops[4][1], FILTER_SHARPEN);
    filter_spec_init(&ops[4][2], FILTER_THRESHOLD), ops[4][2].value = 100.0f, ops[4][2].color = COLOR_RGB;
    filter_spec_init(&ops[5][0], FILTER_GAUSSIAN), ops[5][0].size = 5; /* rgb blur, the map of its luma */
    filter_spec_init(&ops[5][1], FILTER_THRESHOLD), ops[5][1].value = 90.0f;
    filter_spec_init(&ops[6][0], FILTER_SOBEL), ops[6][0].color = COLOR_RGB; /* a map in the middle */
    filter_spec_init(&ops[6][1], FILTER_THRESHOLD), ops[6][1].value = 40.0f, ops[6][1].color = COLOR_RGB;
    filter_spec_init(&ops[6][2], FILTER_BOX), ops[6][2].size = 3;
    filter_spec_init(&ops[7][0], FILTER_THRESHOLD), ops[7][0].color = COLOR_RGB; /* u8 samples: exact */
    filter_spec_init(&ops[8][0], FILTER_BOX), ops[8][0].size = 3; /* rgb, a magnitude last */
    ops[8][0].color = COLOR_RGB;
    filter_spec_init(&ops[8][1], FILTER_SCHARR), ops[8][1].color = COLOR_RGB;
    filter_spec_init(&ops[9][0], FILTER_SOBEL), ops[9][0].color = COLOR_RGB; /* its map, the last step */
    filter_spec_init(&ops[9][1], FILTER_THRESHOLD), ops[9][1].value = 40.0f, ops[9][1].color = COLOR_RGB;
    for (int si = 0; si < (quick ? 2 : 3); si++) {
        double t0 = now_s();
        int checks0 = check_passed + check_failed;
        for (int ch = 1; ch <= 4; ch++) {
            struct img in, bin;
            if (quick == 2 && (ch != 4 || si > 0)) /* the racecheck set: one small RGBA image */
                continue;
            image_random(&in, sizes[si].w, sizes[si].h, ch);
            image_binary(&bin, sizes[si].w, sizes[si].h, ch);
            for (int c = 0; c < PIPE_CASES; c++) {
                enum border b = (enum border)((c + ch + si) % BORDER_COUNT);
                const struct img *im = c == 6 || c == 9 ? &bin : &in;
                if (pipe_make(plan, ops[c], nops[c], b, ch) < 0)
                    continue;
                if (ops[c][nops[c] - 1].filter != FILTER_THRESHOLD || nops[c] == 1)
                    plan_one(ctx, im, plan, &rot);
                else if (pipe_make(mag, ops[c], nops[c] - 1, b, ch) == 0)
                    pipe_threshold_one(ctx, im, plan, mag, &rot);
            }
            img_free(&bin);
            img_free(&in);
        }
        printf("pipelines %5dx%-5d: %d checks in %.1f s\n", sizes[si].w, sizes[si].h,
               check_passed + check_failed - checks0, now_s() - t0);
        fflush(stdout);
    }
    free(mag);
    free(plan);
}

/* The float planes of plan on fast (block 16) for in into got (plan->planes * w * h floats). */
static int fast_planes(struct gconv_ctx *ctx, const struct img *in, const struct filter_plan *plan, float *got,
                       const char *what)
{
    char err[EDGED_ERR_LEN] = "";
    struct img out;
    int rc;

    if (img_alloc(&out, in->w, in->h, plan->out_ch, NULL) < 0)
        abort();
    rc = gconv_run(ctx, 1, in, plan, VARIANT_FAST, 16, &out, got, NULL, err);
    CHECK(rc == 0, "fast magnitude: %s %dx%dx%d: %s", what, in->w, in->h, in->ch, err);
    img_free(&out);
    return rc;
}

/* fast runs a 3x3 magnitude step as one pass (fast_stream_magnitude) that must give the bits of its
 * two correlations alone followed by the magnitude kernel: for sobel, scharr and prewitt every float
 * equals sqrtf(x*x + y*y) (each product and the sum rounded apart, as k_magnitude rounds them) of
 * the planes of the x and y filters run alone on fast, exactly; and [filter, threshold 40], the
 * threshold folded into that pass, gives exactly the map of those floats. */
static void test_fast_magnitude(struct gconv_ctx *ctx)
{
    static const enum filter_id ids[3][3] = {{FILTER_SOBEL, FILTER_SOBEL_X, FILTER_SOBEL_Y},
                                             {FILTER_SCHARR, FILTER_SCHARR_X, FILTER_SCHARR_Y},
                                             {FILTER_PREWITT, FILTER_PREWITT_X, FILTER_PREWITT_Y}};
    static const struct size2 sizes[] = {{5, 3}, {130, 67}, {1023, 777}};
    struct filter_plan *pl = malloc(sizeof(*pl) * 4);
    double t0 = now_s();
    int checks0 = check_passed + check_failed;

    if (!pl)
        abort();
    for (int si = 0; si < (quick ? 2 : 3); si++)
        for (int ch = 1; ch <= 4; ch += 2) {
            size_t n = (size_t)sizes[si].w * sizes[si].h;
            float *f[4];
            struct img in;
            image_random(&in, sizes[si].w, sizes[si].h, ch);
            for (int j = 0; j < 4; j++)
                if (!(f[j] = malloc(n * sizeof(float))))
                    abort();
            for (int fi = 0; fi < 3; fi++) {
                enum border b = (enum border)((fi + ch + si) % BORDER_COUNT);
                struct filter_spec ops[2];
                size_t bad = 0, bad_map = 0, first = 0;
                int ok = 1;
                for (int j = 0; j < 3; j++)
                    ok &= plan_make(&pl[j], &(struct plan_case){ids[fi][j], 0, COLOR_AUTO}, b, ch) == 0;
                filter_spec_init(&ops[0], ids[fi][0]);
                filter_spec_init(&ops[1], FILTER_THRESHOLD), ops[1].value = 40.0f;
                ok = ok && pipe_make(&pl[3], ops, 2, b, ch) == 0;
                ok = ok && pl[0].planes == 1 && pl[0].nconv == 2 &&
                     memcmp(pl[0].conv[0].taps, pl[1].conv[0].taps, 9 * sizeof(float)) == 0 &&
                     memcmp(pl[0].conv[1].taps, pl[2].conv[0].taps, 9 * sizeof(float)) == 0;
                CHECK(ok, "fast magnitude %s: plans, or its taps are not those of its x and y filters",
                      filter_name(ids[fi][0]));
                for (int j = 0; ok && j < 4; j++)
                    ok = fast_planes(ctx, &in, &pl[j], f[j], filter_name(ids[fi][j < 3 ? j : 0])) == 0;
                for (size_t i = 0; ok && i < n; i++) {
                    float xx = f[1][i] * f[1][i], yy = f[2][i] * f[2][i], sum = xx + yy, m = sqrtf(sum);
                    if (f[0][i] != m && !bad++)
                        first = i;
                    bad_map += f[3][i] != (m >= 40.0f ? 255.0f : 0.0f);
                }
                CHECK(ok && bad == 0 && bad_map == 0, "fast magnitude %s %s %dx%dx%d: %zu floats differ from the "
                      "magnitude of its x and y planes (first at %zu: %g, not %g), %zu map samples from their map",
                      filter_name(ids[fi][0]), border_name(b), in.w, in.h, ch, bad, first, ok ? f[0][first] : 0.0,
                      ok ? sqrtf(f[1][first] * f[1][first] + f[2][first] * f[2][first]) : 0.0, bad_map);
            }
            for (int j = 0; j < 4; j++)
                free(f[j]);
            img_free(&in);
        }
    printf("fast magnitude: %d checks in %.1f s\n", check_passed + check_failed - checks0, now_s() - t0);
    free(pl);
}

/* tf32x3's error bound (docs/gpu.md): |out - exact| <= (3 + rows * nc) * 2^-22 * S * M, nc = the
 * Toeplitz blocks of a tap row, (cols + 14) / 8: the split's three dropped terms, and two units in
 * the last place of S * M for each mma step of the big accumulator. */
static double tf32x3_bound(const struct kernel2d *k, double abs_sum, double max_in)
{
    return (3.0 + (double)k->rows * ((k->cols + 14) / 8)) * ldexp(1.0, -22) * abs_sum * max_in + 1e-6;
}

/* One image of test_tf32x3: in its planes, through plan_one (every variant, auto) as a custom
 * full-rank rows x cols filter of color mode color. */
static void tf32x3_plan(struct gconv_ctx *ctx, const struct img *in, int rows, int cols,
                        enum color_mode color, enum border b, int *rot)
{
    struct filter_spec spec;
    struct filter_plan plan;
    char err[EDGED_ERR_LEN];

    filter_spec_init(&spec, FILTER_CUSTOM);
    spec.custom_rows = rows, spec.custom_cols = cols, spec.color = color, spec.border = b;
    for (int i = 0; i < rows * cols; i++)
        spec.custom_taps[i] = check_rng_float(-1.0f, 1.0f);
    if (filter_plan_make(&spec, in->ch, &plan, err) < 0) {
        CHECK(0, "tf32x3 plan %dx%d: %s", rows, cols, err);
        return;
    }
    plan_one(ctx, in, &plan, rot);
}

/* tf32x3 where its tiles and its paths switch: planes one sample short of, on and past its 64-row
 * x 128-column block tiles and its 16 x 64 warp tiles, narrow and flat ones; full-rank taps 9x9 to
 * 31x31, 33 columns (the widest), 63 rows, and widths of each count of Toeplitz blocks (1 to 5);
 * every border; samples that are integers 0..255 (every block takes the two-product path) and
 * samples with fractions (the three-product path). Each against cpu_serial with the file's
 * tolerance (conv_one) and against the exact double correlation with the variant's own bound
 * (tf32x3_bound); the largest error is printed as a fraction of that bound. Then plans of custom
 * 17x17 and 21x21 taps on gray, RGB and RGBA images through plan_one (u8 result, float planes). */
static void test_tf32x3(struct gconv_ctx *ctx)
{
    static const struct size2 sizes[] = {{1, 1},    {5, 300},  {63, 127},  {127, 63},
                                         {128, 64}, {129, 65}, {300, 131}, {1000, 5}};
    static const int ks[][2] = {{9, 9},  {13, 13}, {17, 17}, {21, 21}, {31, 31},
                                {3, 33}, {63, 27}, {11, 1},  {7, 3},   {5, 19}};
    const int nsizes = quick ? 4 : 8, nks = (int)(sizeof(ks) / sizeof(ks[0]));
    double t0 = now_s(), worst = 0.0;
    int checks0 = check_passed + check_failed, rot = 0;

    if (only >= 0 && only != VARIANT_TF32X3)
        return;
    for (int si = 0; si < nsizes; si++) {
        int w = sizes[quick ? si * 2 : si].w, h = sizes[quick ? si * 2 : si].h;
        size_t n = (size_t)w * h;
        float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)),
              *ref = malloc(n * sizeof(float));
        double *exact = malloc(n * sizeof(double));
        if (!in || !out || !ref || !exact)
            abort();
        for (int integer = 1; integer >= 0; integer--) {
            float max_in = 0.0f;
            for (size_t i = 0; i < n; i++) {
                in[i] = integer ? (float)(check_rng() >> 24) : check_rng_float(-128.0f, 128.0f);
                max_in = fmaxf(max_in, fabsf(in[i]));
            }
            for (int ki = 0; ki < nks; ki++) {
                struct conv_case c = {"tf32x3", {0}, 7};
                enum border b = (enum border)((ki + si + integer) % BORDER_COUNT);
                kernel_random(&c.k, ks[ki][0], ks[ki][1], 0);
                for (int bi = 0; bi < BORDER_COUNT; bi++) {
                    if (quick && bi != (int)b)
                        continue;
                    conv_one(ctx, in, out, ref, w, h, max_in, &c, (enum border)bi, 2, VARIANT_TF32X3);
                    corr_exact(in, exact, w, h, &c.k, (enum border)bi);
                    double e = corr_max_diff(out, exact, n),
                           bound = tf32x3_bound(&c.k, corr_abs_sum(&c.k), max_in);
                    CHECK(e <= bound, "tf32x3 %dx%d %s %dx%d %s samples: max |gpu - exact| %g > bound %g",
                          c.k.rows, c.k.cols, border_name((enum border)bi), w, h,
                          integer ? "integer" : "fractional", e, bound);
                    worst = fmax(worst, e / bound);
                }
            }
        }
        free(in), free(out), free(ref), free(exact);
    }
    for (int ch = 1; ch <= 4; ch++) {
        struct img im;
        if (ch == 2 || (quick && ch != 3))
            continue;
        image_random(&im, quick ? 130 : 257, quick ? 66 : 131, ch);
        tf32x3_plan(ctx, &im, 17, 17, ch == 1 ? COLOR_GRAY : COLOR_RGB, (enum border)(ch % BORDER_COUNT),
                    &rot);
        tf32x3_plan(ctx, &im, 21, 21, ch == 1 ? COLOR_AUTO : COLOR_RGB,
                    (enum border)((ch + 1) % BORDER_COUNT), &rot);
        img_free(&im);
    }
    printf("tf32x3: %d checks in %.1f s; largest error against the exact sum: %.3g of its bound\n",
           check_passed + check_failed - checks0, now_s() - t0, worst);
    fflush(stdout);
}

/* fast's streaming kernels take strips of 48 rows only where a plane has at least 16 strips of
 * 128 x 48 per SM (stream_short in fast_stream.cu, whose constants these are); the other tests'
 * planes are smaller and run the 12-row instantiations. Here one plane of 8191 x 2047 (64 x 43 =
 * 2752 strips: 48-row strips up to 172 SMs; the last column of strips and the last band, of 31
 * rows, are frame warps) runs on fast, at one border each: a full-rank 3x3 and 5x5 against
 * cpu_serial_conv, and sobel (the magnitude pass, k_fast_stream_mag3) against cpu_serial_compute,
 * with the tolerances stated at the top. The quick set keeps the 5x5 (memcheck); the racecheck set
 * none: these kernels use no shared memory and no barrier. */
#define TALL_STRIP_ROWS 48
#define TALL_STRIPS_PER_SM 16
static void test_fast_stream_tall(struct gconv_ctx *ctx)
{
    const int w = 8191, h = 2047, sms = gconv_get_info(ctx)->sms;
    const long strips = (long)((w + 127) / 128) * ((h + TALL_STRIP_ROWS - 1) / TALL_STRIP_ROWS);
    size_t n = (size_t)w * h;
    struct conv_case *c = malloc(sizeof(*c));
    struct filter_plan *plan = malloc(sizeof(*plan));
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
    float max_in = 0.0f;
    double t0 = now_s();
    int checks0 = check_passed + check_failed;
    struct img im = {0};

    if (!c || !plan || !in || !out || !ref)
        abort();
    if (quick == 2) {
        SKIP("fast 48-row strips are not run at EDGED_GPU_QUICK=2 (racecheck set: no shared memory)");
        goto out;
    }
    if (strips < (long)sms * TALL_STRIPS_PER_SM) {
        SKIP("fast 48-row strips: %dx%d has %ld strips, below %d per SM on %d SMs", w, h, strips,
             TALL_STRIPS_PER_SM, sms);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        in[i] = check_rng_float(-128.0f, 128.0f);
        max_in = fmaxf(max_in, fabsf(in[i]));
    }
    for (int side = quick ? 5 : 3; side <= 5; side += 2) {
        c->label = side == 3 ? "full 3x3" : "full 5x5";
        kernel_random(&c->k, side, side, 0);
        c->borders = 0;
        conv_one(ctx, in, out, ref, w, h, max_in, c, side == 3 ? BORDER_ZERO : BORDER_REFLECT, 2,
                 VARIANT_FAST);
    }
    if (!quick) {
        char err[EDGED_ERR_LEN];
        image_random(&im, w, h, 1);
        if (plan_make(plan, &(struct plan_case){FILTER_SOBEL, 0, COLOR_AUTO}, BORDER_REPLICATE, 1) < 0)
            goto out;
        if (cpu_serial_compute(&im, plan, ref, err) < 0) {
            CHECK(0, "cpu_serial_compute: %s", err);
        } else if (fast_planes(ctx, &im, plan, out, "sobel") == 0) {
            double tol = plan_tol(plan, 255.0);
            struct diff d = compare_floats(out, ref, n, tol);
            CHECK(d.bad == 0,
                  "fast sobel replicate %dx%d: %zu floats off, first at (%zu,%zu) gpu %g ref %g (max err %g, "
                  "tol %g)",
                  w, h, d.bad, d.first % w, d.first / w, out[d.first], ref[d.first], d.max_err, tol);
        }
    }
    printf("fast 48-row strips %dx%d (%ld strips, %d SMs): %d checks in %.1f s\n", w, h, strips, sms,
           check_passed + check_failed - checks0, now_s() - t0);
out:
    img_free(&im);
    free(c), free(plan), free(in), free(out), free(ref);
}

static void test_plans(struct gconv_ctx *ctx)
{
    static const struct plan_case small_cases[] = {
        {FILTER_EDGE, 0, COLOR_AUTO},      {FILTER_SOBEL, 0, COLOR_AUTO},
        {FILTER_GAUSSIAN5, 0, COLOR_AUTO}, {FILTER_GAUSSIAN, 31, COLOR_AUTO},
        {FILTER_LAPLACIAN3, 0, COLOR_RGB}, {FILTER_LAPLACIAN8, 0, COLOR_AUTO},
        {FILTER_SOBEL_Y, 0, COLOR_AUTO},   {FILTER_SHARPEN, 0, COLOR_GRAY},
        {FILTER_EMBOSS, 0, COLOR_AUTO},    {FILTER_BOX, 63, COLOR_AUTO},
        {FILTER_CUSTOM, 0, COLOR_AUTO},    {FILTER_SCHARR, 0, COLOR_AUTO},
        {FILTER_PREWITT, 0, COLOR_RGB},    {FILTER_SCHARR_X, 0, COLOR_AUTO},
        {FILTER_SCHARR_Y, 0, COLOR_AUTO},  {FILTER_PREWITT_X, 0, COLOR_AUTO},
        {FILTER_PREWITT_Y, 0, COLOR_GRAY},
    };
    static const struct plan_case big_cases[] = {
        {FILTER_EDGE, 0, COLOR_AUTO},   {FILTER_SOBEL, 0, COLOR_AUTO},  {FILTER_GAUSSIAN5, 0, COLOR_AUTO},
        {FILTER_EMBOSS, 0, COLOR_AUTO}, {FILTER_SHARPEN, 0, COLOR_RGB}, {FILTER_SCHARR, 0, COLOR_AUTO},
        {FILTER_PREWITT, 0, COLOR_AUTO},
    };
    static const struct size2 full[] = {{1, 1}, {17, 9}, {1000, 1}, {1, 1000}, {1023, 777}, {2048, 2048}};
    static const struct size2 small[] = {{17, 9}, {61, 37}};
    const struct size2 *sizes = quick ? small : full;
    int nsizes = quick ? 2 : 6, rot = 0;
    struct filter_plan plan;

    for (int si = 0; si < nsizes; si++) {
        int w = sizes[si].w, h = sizes[si].h, big = (size_t)w * h > 100000, huge = (size_t)w * h > 2000000;
        const struct plan_case *pcs = big ? big_cases : small_cases;
        int nbig = (int)(sizeof(big_cases) / sizeof(big_cases[0]));
        int nsmall = (int)(sizeof(small_cases) / sizeof(small_cases[0]));
        int npc = big ? (huge ? 2 : nbig) : quick == 2 ? 3 : nsmall, checks0 = check_passed + check_failed;
        double t0 = now_s();
        for (int ch = 1; ch <= 4; ch++) {
            if (((huge || quick) && ch != 4 && ch != 1) || (quick == 2 && (ch != 4 || si > 0)))
                continue;
            struct img in;
            image_random(&in, w, h, ch);
            for (int c = 0; c < npc; c++) {
                enum border b = (enum border)((c + ch + si) % BORDER_COUNT);
                if (plan_make(&plan, &pcs[c], b, ch) == 0)
                    plan_one(ctx, &in, &plan, &rot);
            }
            img_free(&in);
        }
        printf("plans %5dx%-5d: %d checks in %.1f s\n", w, h, check_passed + check_failed - checks0,
               now_s() - t0);
        fflush(stdout);
    }
}

/* ---- the fused u8 edge kernel of fast ---------------------------------------------------- */

/* Random u8 image, or a smooth one (a ramp plus 0..3 of noise: |L| small, often near T). */
static void image_edge(struct img *im, int w, int h, int ch, int smooth)
{
    if (img_alloc(im, w, h, ch, NULL) < 0)
        abort();
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                uint32_t r = check_rng() >> 24;
                im->px[(size_t)y * im->stride + (size_t)x * ch + c] =
                    (uint8_t)(smooth ? ((3 * x + 5 * y + 7 * c) / 8 + (r & 3)) % 256 : r);
            }
}

/* Sets (on) or clears the tuning knobs that give the edge kernel 16-row strips followed by a tail
 * of 8-row strips, so that both strip heights occur inside the test images. */
static void edge_short_strips(int on)
{
    if (on)
        check_knob("EDGED_EDGE_SY", "16"), check_knob("EDGED_EDGE_SY_TAIL", "8"), check_knob("EDGED_EDGE_TAIL", "1");
    else
        check_knobs_reset();
}

/* The 1-bit form of the map (gray or RGB input, plan accepting packed maps): packed exactly when w
 * is a multiple of 8, then bit x of row y (MSB first) set exactly when byte x of `map` (the u8 map
 * of the same plan) is not 0, otherwise the u8 map itself; also with the float L written (the same
 * L), with 4 pixels per lane for gray, and with short strips and tails. A packed result is refused
 * as the next output image. */
static void check_edge_packed(struct gconv_ctx *ctx, const struct img *in, const struct filter_plan *plan,
                              const struct img *map, const float *L)
{
    static const struct {
        const char *label;
        int px4, short_strips, with_l;
    } cases[] = {{"default", 0, 0, 0}, {"4 px per lane", 1, 0, 0}, {"short strips", 0, 1, 0}, {"with L", 0, 0, 1}};
    struct filter_plan pp = *plan;
    int w = in->w, h = in->h, want = w % 8 == 0;
    const char *bn = border_name(plan->border);
    size_t n = (size_t)w * h;
    float *got = malloc(n * sizeof(float));
    char err[EDGED_ERR_LEN];

    pp.accept_packed = 1;
    CHECK(gconv_packs(&pp, VARIANT_FAST, w) == want, "edge %s %dx%dx%d: gconv_packs %d", bn, w, h, in->ch, !want);
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        const char *label = cases[ci].label;
        struct img pk;
        int rc;
        if (cases[ci].px4)
            check_knob("EDGED_EDGE_PX", "4");
        edge_short_strips(cases[ci].short_strips);
        img_alloc(&pk, w, h, 1, NULL);
        memset(pk.px, 0xCD, pk.stride * h);
        poison_floats(got, n);
        rc = gconv_run(ctx, 3, in, &pp, VARIANT_FAST, 16, &pk, cases[ci].with_l ? got : NULL, NULL, err);
        CHECK(rc == 0 && pk.packed == want && pk.stride == (want ? (size_t)w / 8 : (size_t)w),
              "edge %s %dx%dx%d 1-bit (%s): rc %d packed %d stride %zu: %s", bn, w, h, in->ch, label, rc, pk.packed,
              pk.stride, rc ? err : "");
        if (rc == 0 && pk.packed == want) {
            size_t bad = 0, first = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int a = map->px[(size_t)y * map->stride + x] != 0,
                        b = want ? pk.px[(size_t)y * pk.stride + x / 8] >> (7 - x % 8) & 1
                                 : pk.px[(size_t)y * pk.stride + x] != 0;
                    if (a != b && bad++ == 0)
                        first = (size_t)y * w + x;
                }
            CHECK(bad == 0, "edge %s %dx%dx%d 1-bit (%s): %zu pixels differ from the u8 map, first (%zu,%zu)", bn, w,
                  h, in->ch, label, bad, first % w, first / w);
            if (cases[ci].with_l)
                CHECK(!memcmp(got, L, n * sizeof(float)), "edge %s %dx%dx%d 1-bit: L differs", bn, w, h, in->ch);
            if (want)
                CHECK(gconv_run(ctx, 3, in, &pp, VARIANT_FAST, 16, &pk, NULL, NULL, err) == EDGED_E_PARAM,
                      "a packed image is refused as output");
        }
        img_free(&pk);
        check_knobs_reset();
    }
    free(got);
}

/* fast on the edge plan under every border (the one-pass kernel) against cpu_serial: the map
 * exact except where |L_ref| is within 1e-3 of T, alpha exact, the kernel's float L (N/289) within
 * the CHAIN tolerance; the kernel that writes only the map (the one the service runs) byte for
 * byte the same; for gray and RGB the 1-bit form (check_edge_packed, which also proves that the
 * one-pass kernel serves the border: only it packs). Sizes: below the 5x5 kernel, 1xN and Nx1,
 * around the warp strips' widths. Also reports how far the reference's float L lies from the
 * kernel's (exact for gray input): the margin the 1e-3 exemption must cover. */
static void test_edge_fast(struct gconv_ctx *ctx)
{
    static const struct size2 full[] = {{1, 1},    {3, 5},    {4, 4},     {8, 3},    {5, 70},   {124, 33},
                                        {125, 40}, {481, 39}, {484, 70},  {964, 37}, {968, 97}, {1000, 100},
                                        {1443, 65}, {488, 70}, {1000, 400}, {2, 2},  {1, 77},   {243, 1},
                                        {2, 9},    {16, 2},   {7, 1}};
    static const struct size2 small[] = {{1, 1}, {3, 5}, {8, 3}, {124, 33}, {125, 40}, {484, 70}, {488, 70},
                                         {2, 2}, {1, 77}, {243, 1}};
    static const float thresholds[4] = {5.0f, 0.0f, 1.7f, 20.5f};
    const struct size2 *sizes = quick ? small : full;
    int nsizes = quick ? 10 : 21, checks0 = check_passed + check_failed;
    double max_dl = 0.0, t0 = now_s();
    size_t near = 0, total = 0;
    char err[EDGED_ERR_LEN];

    for (int b = 0; b < BORDER_COUNT; b++)
    for (int si = 0; si < nsizes; si++)
        for (int ch = 1; ch <= 4; ch++)
            for (int ti = 0; ti < 4; ti++) {
                if (quick && (ti + ch + si + b) % 2)
                    continue;
                int w = sizes[si].w, h = sizes[si].h, smooth = ti >= 2;
                struct plan_case pc = {FILTER_EDGE, 0, COLOR_AUTO};
                struct filter_plan plan;
                struct img in, out;
                const char *bn = border_name((enum border)b);
                image_edge(&in, w, h, ch, smooth);
                plan_make(&plan, &pc, (enum border)b, ch);
                plan.threshold = thresholds[ti];
                size_t n = (size_t)w * h;
                float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
                img_alloc(&out, w, h, plan.out_ch, NULL);
                memset(out.px, 0xAB, out.stride * h);
                poison_floats(got, n);
                if (cpu_serial_compute(&in, &plan, ref, err) < 0)
                    abort();
                int rc = gconv_run(ctx, 3, &in, &plan, VARIANT_FAST, 16, &out, got, NULL, err);
                CHECK(rc == 0, "edge fast %s %dx%dx%d T=%g: %s", bn, w, h, ch, thresholds[ti], err);
                if (rc == 0) {
                    double tol = plan_tol(&plan, 255.0);
                    struct diff d = compare_floats(got, ref, n, tol);
                    size_t first = 0, bad = compare_u8(&out, &in, ref, tol, &plan, &first);
                    CHECK(d.bad == 0, "edge fast %s %dx%dx%d T=%g: %zu L values off, first %zu: %g vs ref %g", bn, w,
                          h, ch, thresholds[ti], d.bad, d.first, got[d.first], ref[d.first]);
                    CHECK(bad == 0, "edge fast %s %dx%dx%d T=%g %s: %zu map pixels off, first (%zu,%zu)", bn, w, h,
                          ch, thresholds[ti], smooth ? "smooth" : "random", bad, first % w, first / w);
                    /* the kernel that writes only the map (what the service runs), with its default
                     * strips and with tall strips followed by short tail strips inside these images */
                    struct img map;
                    img_alloc(&map, w, h, plan.out_ch, NULL);
                    for (int strips = 0; strips < 2; strips++) {
                        edge_short_strips(strips);
                        memset(map.px, 0xCD, map.stride * h);
                        rc = gconv_run(ctx, 3, &in, &plan, VARIANT_FAST, 16, &map, NULL, NULL, err);
                        CHECK(rc == 0 && !memcmp(map.px, out.px, out.stride * h),
                              "edge fast %s %dx%dx%d T=%g%s: the map-only kernel differs from the one writing L (%s)",
                              bn, w, h, ch, thresholds[ti], strips ? " (16-row strips, 8-row tail)" : "",
                              rc ? err : "");
                    }
                    edge_short_strips(0);
                    img_free(&map);
                    if (ch == 1 || ch == 3)
                        check_edge_packed(ctx, &in, &plan, &out, got);
                    if (ch <= 2)
                        max_dl = fmax(max_dl, d.max_err);
                    for (size_t i = 0; i < n; i++)
                        near += fabsf(fabsf(ref[i]) - plan.threshold) <= 1e-3f;
                    total += n;
                }
                free(ref), free(got), img_free(&in), img_free(&out);
            }
    printf("edge fast: %d checks in %.1f s; gray: max |L_ref - L_exact| = %.3g; %zu of %zu pixels within 1e-3 "
           "of T (exempt)\n",
           check_passed + check_failed - checks0, now_s() - t0, max_dl, near, total);
}

/* The default border (reflect) end to end: the spec's defaults through every variant and auto
 * (plan_one) on random images and on flat ones; a flat image through edge, sobel and laplacian3
 * gives an all-zero result on fast (the one-pass kernel for edge) and in the reference, where the
 * zero border drew a frame. */
static void test_default_border(struct gconv_ctx *ctx)
{
    static const enum filter_id ids[] = {FILTER_EDGE, FILTER_SOBEL, FILTER_LAPLACIAN3};
    static const struct size2 sizes[] = {{1, 1}, {3, 2}, {1, 40}, {40, 1}, {245, 37}, {488, 70}};
    int rot = 0, checks0 = check_passed + check_failed;
    double t0 = now_s();
    char err[EDGED_ERR_LEN];

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (int ch = 1; ch <= 4; ch++)
            for (int flat = 0; flat < 2; flat++) {
                int w = sizes[si].w, h = sizes[si].h;
                struct img in, out;
                image_random(&in, w, h, ch);
                if (flat)
                    for (size_t i = 0; i < (size_t)w * h * ch; i++)
                        in.px[i] = (ch == 2 || ch == 4) && i % ch == (size_t)ch - 1 ? in.px[i] : 200; /* alpha kept */
                for (size_t f = 0; f < sizeof(ids) / sizeof(ids[0]); f++) {
                    struct filter_spec spec;
                    struct filter_plan plan;
                    filter_spec_init(&spec, ids[f]);
                    CHECK(spec.border == BORDER_REFLECT, "the default border is reflect");
                    if (filter_plan_make(&spec, ch, &plan, err) < 0) {
                        CHECK(0, "filter_plan_make %s: %s", filter_name(ids[f]), err);
                        continue;
                    }
                    if (!flat && ids[f] != FILTER_EDGE)
                        continue;
                    plan_one(ctx, &in, &plan, &rot);
                    if (!flat || img_alloc(&out, w, h, plan.out_ch, NULL) < 0)
                        continue;
                    int rc = gconv_run(ctx, 2, &in, &plan, VARIANT_FAST, 16, &out, NULL, NULL, err);
                    size_t lit = 0;
                    for (int y = 0; rc == 0 && y < h; y++)
                        for (int x = 0; x < w; x++)
                            lit += out.px[(size_t)y * out.stride + (size_t)x * plan.out_ch] != 0;
                    CHECK(rc == 0 && lit == 0, "flat %dx%dx%d through %s (default border) on fast: rc %d, %zu pixels "
                          "not 0 %s", w, h, ch, filter_name(ids[f]), rc, lit, rc ? err : "");
                    img_free(&out);
                }
                img_free(&in);
            }
    printf("default border: %d checks in %.1f s\n", check_passed + check_failed - checks0, now_s() - t0);
}

/* ---- async API, constant-memory slots, reuse, errors -------------------------------------- */

/* NSTREAMS jobs with different taps on NSTREAMS streams at once, constant-memory variants
 * included (streams s and s+4 share a __constant__ slot), each equal to its synchronous run. */
static void test_async(struct gconv_ctx *ctx)
{
    static const struct plan_case pcs[NSTREAMS] = {
        {FILTER_GAUSSIAN, 7, COLOR_AUTO}, {FILTER_BOX, 5, COLOR_AUTO},
        {FILTER_SHARPEN, 0, COLOR_AUTO},  {FILTER_EMBOSS, 0, COLOR_AUTO},
        {FILTER_GAUSSIAN, 3, COLOR_AUTO}, {FILTER_LAPLACIAN8, 0, COLOR_AUTO},
        {FILTER_CUSTOM, 0, COLOR_AUTO},   {FILTER_SOBEL, 0, COLOR_AUTO},
    };
    static const enum variant round_variants[4][2] = {{VARIANT_CONSTANT, VARIANT_SHARED_CONSTANT},
                                                      {VARIANT_TILED, VARIANT_TEXTURE2D},
                                                      {VARIANT_NAIVE, VARIANT_CACHED},
                                                      {VARIANT_FAST, VARIANT_FAST}};
    /* round 3: fast everywhere, the odd streams (2 and 4 channels) running the fused edge kernel */
    static const struct plan_case edge_case = {FILTER_EDGE, 0, COLOR_AUTO};
    struct filter_plan plans[NSTREAMS];
    struct img in[NSTREAMS], sync_out[NSTREAMS], async_out[NSTREAMS];
    char err[EDGED_ERR_LEN];
    int ns = gconv_stream_count(ctx);

    CHECK(ns == NSTREAMS, "stream count %d", ns);
    for (int r = 0; r < 4; r++) {
        for (int s = 0; s < NSTREAMS; s++) {
            int fused = r == 3 && s % 2;
            image_random(&in[s], 301 + 13 * s + (fused ? 3 : 0), 203 + 7 * s, 1 + s % 4);
            plan_make(&plans[s], fused ? &edge_case : &pcs[s], (enum border)(s % BORDER_COUNT),
                      in[s].ch);
            img_alloc(&sync_out[s], in[s].w, in[s].h, plans[s].out_ch, NULL);
            img_alloc(&async_out[s], in[s].w, in[s].h, plans[s].out_ch, NULL);
            int rc = gconv_run(ctx, 0, &in[s], &plans[s], round_variants[r][s % 2], 16, &sync_out[s], NULL,
                               NULL, err);
            CHECK(rc == 0, "sync %d: %s", s, err);
        }
        for (int s = 0; s < NSTREAMS; s++) {
            int rc = gconv_submit(ctx, s, &in[s], &plans[s], round_variants[r][s % 2], 16, err);
            CHECK(rc == 0, "submit %d: %s", s, err);
        }
        CHECK(gconv_submit(ctx, 0, &in[0], &plans[0], VARIANT_NAIVE, 16, err) == EDGED_E_PARAM,
              "second submit on a busy stream must be refused");
        int pending = NSTREAMS, spins = 0, polls_ok = 1;
        while (pending && spins++ < 10000000) {
            pending = 0;
            for (int s = 0; s < NSTREAMS; s++) {
                int p = gconv_poll(ctx, s);
                polls_ok &= p == 0 || p == 1;
                pending += p == 0;
            }
        }
        CHECK(polls_ok && pending == 0, "poll: every job done, no error (%d pending)", pending);
        for (int s = NSTREAMS - 1; s >= 0; s--) {
            struct gconv_times t = {-1, -1, -1};
            memset(async_out[s].px, 0xAB, async_out[s].stride * async_out[s].h);
            int rc = gconv_finish(ctx, s, &async_out[s], &t, err);
            CHECK(rc == 0 && t.upload_ms >= 0 && t.kernel_ms > 0 && t.download_ms >= 0, "finish %d: %d %s", s,
                  rc, err);
            CHECK(!memcmp(sync_out[s].px, async_out[s].px, sync_out[s].stride * sync_out[s].h),
                  "round %d stream %d (%s, %s): async result differs from sync", r, s,
                  variant_name(round_variants[r][s % 2]), filter_name(plans[s].filter));
        }
        for (int s = 0; s < NSTREAMS; s++)
            img_free(&in[s]), img_free(&sync_out[s]), img_free(&async_out[s]);
    }
    CHECK(gconv_finish(ctx, 0, &sync_out[0], NULL, err) == EDGED_E_PARAM, "finish without a job is refused");
    CHECK(gconv_poll(ctx, 0) == EDGED_E_PARAM, "poll without a job is refused");
}

/* Runs in[s] with plans[s] and variant vs[s % 2] on every stream at once and finishes them into
 * out[s] (allocated here): staged by gconv_submit, or when pin[s] is set uploaded from it
 * (gconv_submit_pinned, pin[s] the packed rows of in[s]). */
static void run_streams(struct gconv_ctx *ctx, const struct img *in, uint8_t *const *pin,
                        const struct filter_plan *plans, const enum variant *vs, struct img *out)
{
    char err[EDGED_ERR_LEN];

    for (int s = 0; s < NSTREAMS; s++) {
        struct img p = {.w = in[s].w, .h = in[s].h, .ch = in[s].ch, .stride = (size_t)in[s].w * in[s].ch,
                        .px = pin ? pin[s] : NULL};
        int rc = p.px ? gconv_submit_pinned(ctx, s, &p, &plans[s], vs[s % 2], 16, err)
                      : gconv_submit(ctx, s, &in[s], &plans[s], vs[s % 2], 16, err);
        img_alloc(&out[s], in[s].w, in[s].h, plans[s].out_ch, NULL);
        CHECK(rc == 0, "%s submit %d: %s", p.px ? "pinned" : "staged", s, err);
    }
    for (int s = 0; s < NSTREAMS; s++)
        CHECK(gconv_finish(ctx, s, &out[s], NULL, err) == 0, "finish %d: %s", s, err);
}

/* Pixels already in the pinned pool (gconv_submit_pinned, as the service's request threads leave
 * them) give byte for byte the output of the same pixels staged by gconv_submit, on every stream
 * at once, for several variants, channel counts 1..4 and odd widths; a pinned input whose rows are
 * padded is refused, and the context stays usable. */
static void test_async_pinned(struct gconv_ctx *ctx)
{
    static const struct plan_case pcs[2][2] = {
        {{FILTER_GAUSSIAN, 5, COLOR_AUTO}, {FILTER_EDGE, 0, COLOR_AUTO}},
        {{FILTER_GAUSSIAN, 7, COLOR_AUTO}, {FILTER_SOBEL, 0, COLOR_AUTO}},
    };
    static const enum variant vs[2][2] = {{VARIANT_FAST, VARIANT_FAST}, {VARIANT_NAIVE, VARIANT_CONSTANT}};
    struct filter_plan plans[NSTREAMS];
    struct img in[NSTREAMS], staged[NSTREAMS], pinned[NSTREAMS];
    uint8_t *pin[NSTREAMS];
    size_t cap[NSTREAMS];
    char err[EDGED_ERR_LEN];
    int same = 0;

    for (int r = 0; r < 2; r++) {
        for (int s = 0; s < NSTREAMS; s++) {
            image_random(&in[s], 333 + 17 * s, 129 + 5 * s, 1 + s % 4);
            plan_make(&plans[s], &pcs[r][s % 2], (enum border)(s % BORDER_COUNT), in[s].ch);
            pin[s] = gpinned_get(in[s].stride * (size_t)in[s].h, &cap[s]);
            CHECK(pin[s] != NULL, "no pinned buffer for %zu bytes", in[s].stride * (size_t)in[s].h);
            if (!pin[s]) {
                for (int k = 0; k < s; k++)
                    gpinned_put(pin[k], cap[k]), img_free(&in[k]);
                img_free(&in[s]);
                return;
            }
            memcpy(pin[s], in[s].px, in[s].stride * (size_t)in[s].h); /* img_alloc's rows are packed */
        }
        run_streams(ctx, in, NULL, plans, vs[r], staged);
        run_streams(ctx, in, pin, plans, vs[r], pinned);
        for (int s = 0; s < NSTREAMS; s++) {
            int eq = staged[s].stride == pinned[s].stride &&
                     !memcmp(staged[s].px, pinned[s].px, staged[s].stride * (size_t)staged[s].h);
            CHECK(eq, "round %d stream %d (%s, %s, %d channels): pinned result differs from staged", r, s,
                  variant_name(vs[r][s % 2]), filter_name(plans[s].filter), in[s].ch);
            same += eq;
            gpinned_put(pin[s], cap[s]); /* finished: its upload is over */
            img_free(&in[s]), img_free(&staged[s]), img_free(&pinned[s]);
        }
    }
    image_random(&in[0], 64, 8, 3);
    plan_make(&plans[0], &pcs[0][0], BORDER_REPLICATE, 3);
    in[0].w = 63; /* rows of 64 pixels: padded for a 63-wide image */
    CHECK(gconv_submit_pinned(ctx, 0, &in[0], &plans[0], VARIANT_FAST, 16, err) == EDGED_E_PARAM,
          "a pinned input with padded rows was taken");
    in[0].w = 64;
    img_free(&in[0]);
    CHECK(!gconv_is_dead(ctx) && gconv_poll(ctx, 0) == EDGED_E_PARAM,
          "the refusal left a job or a dead context");
    printf("pinned input: %d of %d jobs equal to their staged twins\n", same, 2 * NSTREAMS);
}

/* Limits and argument errors leave the context usable; buffers are reused, not regrown. */
static void test_errors(struct gconv_ctx *ctx)
{
    struct kernel2d k3, k7;
    struct filter_plan plan;
    struct plan_case pc = {FILTER_GAUSSIAN, 9, COLOR_AUTO};
    float in[64 * 64], out[64 * 64];
    char err[EDGED_ERR_LEN] = "";
    struct img im, om;
    size_t mem0, mem1;

    for (int i = 0; i < 64 * 64; i++)
        in[i] = check_rng_float(-1.0f, 1.0f);
    kernel_random(&k3, 3, 3, 0);
    kernel_random(&k7, 7, 7, 0);
    CHECK(gconv_conv_host(ctx, in, out, 64, 64, &k3, BORDER_ZERO, VARIANT_SHARED, 32, NULL, err) ==
                  EDGED_E_VARIANT_LIMIT &&
              strstr(err, "threads"),
          "shared 32 + 3x3 needs 34x34 threads: '%s'", err);
    printf("limit message: %s\n", err);
    CHECK(gconv_conv_host(ctx, in, out, 64, 64, &k7, BORDER_ZERO, VARIANT_SEPARABLE, 16, NULL, err) ==
                  EDGED_E_VARIANT_LIMIT &&
              strstr(err, "rank 1"),
          "separable refuses full 7x7: '%s'", err);
    printf("limit message: %s\n", err);
    CHECK(gconv_conv_host(ctx, in, out, 64, 64, &k3, BORDER_ZERO, VARIANT_NAIVE, 12, NULL, err) ==
              EDGED_E_PARAM,
          "block 12 refused");
    CHECK(gconv_conv_host(ctx, in, out, 64, 64, &k3, BORDER_ZERO, VARIANT_CPU, 16, NULL, err) ==
              EDGED_E_PARAM,
          "cpu is not a GPU variant");
    CHECK(gconv_conv_host(ctx, in, out, 0, 64, &k3, BORDER_ZERO, VARIANT_NAIVE, 16, NULL, err) ==
              EDGED_E_PARAM,
          "0-wide image refused");
    CHECK(!gconv_is_dead(ctx), "errors above are not fatal");

    image_random(&im, 640, 480, 3);
    plan_make(&plan, &pc, BORDER_REFLECT, 3);
    img_alloc(&om, 320, 480, plan.out_ch, NULL);
    CHECK(gconv_run(ctx, 2, &im, &plan, VARIANT_TILED, 16, &om, NULL, NULL, err) == EDGED_E_PARAM,
          "wrong output size refused");
    img_free(&om);
    img_alloc(&om, 640, 480, plan.out_ch, NULL);
    CHECK(gconv_run(ctx, 2, &im, &plan, VARIANT_TILED, 16, &om, NULL, NULL, err) == 0, "run: %s", err);
    mem0 = gconv_mem_used(ctx);
    for (int i = 0; i < 5; i++)
        gconv_run(ctx, 2, &im, &plan, VARIANT_SHARED_HALO, 16, &om, NULL, NULL, err);
    mem1 = gconv_mem_used(ctx);
    CHECK(mem0 > 0 && mem0 == mem1, "steady state allocates nothing: %zu then %zu bytes", mem0, mem1);
    img_free(&im), img_free(&om);
}

/* ---- Canny ------------------------------------------------------------------------------ */

/* Pixels where two maps differ; *first receives the first one's index. */
static size_t canny_diff(const struct img *a, const struct img *b, size_t *first)
{
    size_t bad = 0;

    *first = 0;
    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < a->w; x++)
            if (a->px[(size_t)y * a->stride + x] != b->px[(size_t)y * b->stride + x] && bad++ == 0)
                *first = (size_t)y * a->w + x;
    return bad;
}

/* One gray image through gconv_canny_host and canny_serial; the maps must be equal. */
static void canny_one(struct gconv_ctx *ctx, const struct img *g, const struct canny_params *p, const char *what)
{
    char err[EDGED_ERR_LEN] = "";
    struct img ref, got;
    size_t first, bad;
    int rc;

    img_alloc(&ref, g->w, g->h, 1, NULL);
    img_alloc(&got, g->w, g->h, 1, NULL);
    memset(got.px, 7, got.stride * got.h);
    if ((rc = canny_serial(g, p, &ref, err)) < 0) {
        CHECK(0, "canny_serial %s: %s", what, err);
    } else {
        rc = gconv_canny_host(ctx, g, p, &got, NULL, err);
        CHECK(rc == 0, "canny %s %dx%d ap %d l2 %d T %g/%g: %s", what, g->w, g->h, p->aperture, p->l2gradient,
              (double)p->low, (double)p->high, err);
        bad = rc == 0 ? canny_diff(&got, &ref, &first) : 0;
        CHECK(bad == 0, "canny %s %dx%d ap %d l2 %d T %g/%g: %zu pixels differ, first (%zu,%zu)", what, g->w, g->h,
              p->aperture, p->l2gradient, (double)p->low, (double)p->high, bad, bad ? first % g->w : 0,
              bad ? first / g->w : 0);
    }
    img_free(&ref);
    img_free(&got);
}

/* Smooth shading with steps and a little noise: long edges, ties in flat parts. */
static void image_photo(struct img *im, int w, int h)
{
    if (img_alloc(im, w, h, 1, NULL) < 0)
        abort();
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double f = 120 + 60 * sin(x * 0.05 + 2 * sin(y * 0.03)) * cos(y * 0.04 - x * 0.02);
            f += ((x / 37 + y / 53) & 1) ? 40 : -40;
            f += (double)(check_rng() >> 29);
            im->px[(size_t)y * im->stride + x] = (uint8_t)(f < 0 ? 0 : f > 255 ? 255 : f);
        }
}

static void test_canny_maps(struct gconv_ctx *ctx)
{
    /* widths and heights off the 16-byte rows of the map writer too: 15, 17, 7000, 7001, 8191 (the
     * map pass of k_canny_expand: words that span two tiles or several rows); 1001 x 333 with many
     * inner tiles */
    static const int sizes[][2] = {{1, 1},    {1, 77},    {93, 1},    {2, 2},     {64, 64},   {65, 63},
                                   {127, 129}, {200, 131}, {333, 257}, {1000, 3},  {3, 700},   {15, 15},
                                   {17, 17},   {15, 70},   {17, 130},  {7000, 70}, {7001, 67}, {8191, 65},
                                   {70, 7000}, {67, 7001}, {1, 8191},  {8191, 1},  {7001, 15}, {15, 7001},
                                   {1001, 333}};
    static const float thr[][2] = {{50, 150}, {0, 0}, {100, 100}, {10, 400}, {0, 60}, {400, 2000}};
    struct img g;

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (int ap = 3; ap <= 7; ap += 2)
            for (int l2 = 0; l2 <= 1; l2++) {
                const float *t = thr[check_rng() % (sizeof(thr) / sizeof(thr[0]))];
                struct canny_params p = {t[0] * (ap == 3 ? 1 : 8), t[1] * (ap == 3 ? 1 : 8), ap, l2};
                image_random(&g, sizes[si][0], sizes[si][1], 1);
                canny_one(ctx, &g, &p, "random");
                img_free(&g);
                image_photo(&g, sizes[si][0], sizes[si][1]);
                canny_one(ctx, &g, &p, "photo");
                img_free(&g);
            }
    for (size_t ti = 0; ti < sizeof(thr) / sizeof(thr[0]); ti++)
        for (int ap = 3; ap <= 7; ap += 2) {
            struct canny_params p = {thr[ti][0], thr[ti][1], ap, (int)(ti & 1)};
            image_photo(&g, quick ? 300 : 2000, quick ? 200 : 1500);
            canny_one(ctx, &g, &p, "photo large");
            img_free(&g);
        }
}

/* The hysteresis worst case: one chain of weak pixels across the image with its only strong pixels
 * at one end. The map equals the reference and the map with low == high (every candidate an
 * edge): the whole chain was reached. */
static void test_canny_spiral(struct gconv_ctx *ctx)
{
    int w = quick ? 300 : 2048, h = quick ? 200 : 1536;
    struct canny_params p = {CANNY_SPIRAL_LOW, CANNY_SPIRAL_HIGH, 3, 0}, all = p;
    char err[EDGED_ERR_LEN] = "";
    struct img g, got, every;
    size_t first, bad, edges = 0;

    img_alloc(&g, w, h, 1, NULL);
    img_alloc(&got, w, h, 1, NULL);
    img_alloc(&every, w, h, 1, NULL);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            g.px[(size_t)y * g.stride + x] = canny_spiral_px(x, y, w, h);
    canny_one(ctx, &g, &p, "spiral");
    all.high = all.low;
    CHECK(gconv_canny_host(ctx, &g, &p, &got, NULL, err) == 0 && canny_serial(&g, &all, &every, err) == 0,
          "spiral: %s", err);
    bad = canny_diff(&got, &every, &first);
    for (size_t i = 0; i < (size_t)w * h; i++)
        edges += got.px[i] != 0;
    CHECK(bad == 0 && edges > (size_t)w * h / 8, "spiral %dx%d: %zu edge pixels, %zu candidates not reached, "
          "first (%zu,%zu)", w, h, edges, bad, first % w, first / w);
    img_free(&g), img_free(&got), img_free(&every);
}

/* A canny spec for in_ch channels, with or without the pre-blur. */
static int canny_plan(struct filter_plan *plan, int in_ch, int blur, int ap)
{
    struct filter_spec spec;
    char err[EDGED_ERR_LEN] = "";

    filter_spec_init(&spec, FILTER_CANNY);
    spec.canny.aperture = ap;
    spec.canny.low = ap == 3 ? 40.0f : 400.0f;
    spec.canny.high = ap == 3 ? 120.0f : 1200.0f;
    spec.border = BORDER_REFLECT;
    if (blur)
        spec.size = 5, spec.sigma = 1.2f;
    if (filter_plan_make(&spec, in_ch, plan, err) < 0) {
        CHECK(0, "filter_plan_make canny: %s", err);
        return -1;
    }
    return 0;
}

static void test_canny_plans(struct gconv_ctx *ctx)
{
    char err[EDGED_ERR_LEN] = "";

    for (int ch = 1; ch <= 4; ch++)
        for (int blur = 0; blur <= 1; blur++) {
            struct filter_plan plan;
            struct img in, ref = {0}, got, got2;
            size_t first, bad;
            int w = 301 + 64 * ch, h = 203 + blur * 70, rc;
            if (canny_plan(&plan, ch, blur, 3 + 2 * ((ch + blur) % 3)) < 0)
                continue;
            image_edge(&in, w, h, ch, 1);
            for (size_t i = 0; i < (size_t)w * h * ch; i += 97)
                in.px[i] = (uint8_t)(check_rng() >> 24);
            img_alloc(&got, w, h, 1, NULL);
            img_alloc(&got2, w, h, 1, NULL);
            CHECK(canny_plan_run(&in, &plan, 1, 1, &ref, err) == 0, "canny_plan_run: %s", err);
            rc = gconv_run(ctx, 1, &in, &plan, VARIANT_FAST, 16, &got, NULL, NULL, err);
            CHECK(rc == 0, "canny plan %dx%dx%d blur %d gconv_run: %s", w, h, ch, blur, err);
            bad = rc == 0 && ref.px ? canny_diff(&got, &ref, &first) : 0;
            CHECK(bad == 0, "canny plan %dx%dx%d blur %d ap %d: %zu pixels differ from canny_plan_run, first "
                  "(%zu,%zu)", w, h, ch, blur, plan.canny.aperture, bad, first % w, first / w);
            rc = gconv_submit(ctx, 2, &in, &plan, VARIANT_FAST, 16, err);
            CHECK(rc == 0 && gconv_finish(ctx, 2, &got2, NULL, err) == 0, "canny submit/finish: %s", err);
            CHECK(!memcmp(got.px, got2.px, got.stride * h), "canny: submit/finish gives gconv_run's map");
            img_free(&in), img_free(&ref), img_free(&got), img_free(&got2);
        }
    {
        struct filter_plan plan;
        struct img in, out;
        if (canny_plan(&plan, 1, 0, 3) == 0) {
            image_random(&in, 64, 64, 1);
            img_alloc(&out, 64, 64, 1, NULL);
            CHECK(gconv_check(ctx, &plan, 64, 64, VARIANT_TILED, 16, err) == EDGED_E_VARIANT_LIMIT &&
                      strstr(err, "fast"),
                  "canny refuses tiled, naming fast: '%s'", err);
            CHECK(gconv_run(ctx, 0, &in, &plan, VARIANT_NAIVE, 16, &out, NULL, NULL, err) == EDGED_E_VARIANT_LIMIT,
                  "canny refuses naive");
            img_free(&in), img_free(&out);
        }
    }
}

static void test_canny(struct gconv_ctx *ctx)
{
    test_canny_maps(ctx);
    test_canny_spiral(ctx);
    test_canny_plans(ctx);
}

/* gconv_device_query, without a context: device 0's facts are those gconv_open read (gi), bar the
 * copy bandwidth it alone measures; every visible device answers; the first number past them is
 * EDGED_E_NO_CUDA naming the count, as gconv_open says it. */
static void test_device_query(const struct gconv_info *gi)
{
    struct gconv_info q;
    char err[EDGED_ERR_LEN] = "", want[EDGED_ERR_LEN];
    int n = gconv_device_count(), rc;

    CHECK(n >= 1, "gconv_device_count %d with a device open", n);
    rc = gconv_device_query(0, &q, err);
    CHECK(rc == 0 && gi && strcmp(q.name, gi->name) == 0 && q.cc_major == gi->cc_major &&
              q.cc_minor == gi->cc_minor && q.sms == gi->sms && q.global_mem == gi->global_mem &&
              q.l2_bytes == gi->l2_bytes && q.fp32_gflops == gi->fp32_gflops && q.copy_gbps == 0.0,
          "device query 0 against the open context: rc %d %s", rc, err);
    for (int i = 1; i < n; i++) {
        rc = gconv_device_query(i, &q, err);
        CHECK(rc == 0 && q.name[0] && q.sms > 0 && q.global_mem > 0, "device query %d: rc %d %s", i, rc, err);
        if (rc == 0)
            printf("device %d: %s, cc %d.%d, %d SMs\n", i, q.name, q.cc_major, q.cc_minor, q.sms);
    }
    snprintf(want, sizeof(want), "CUDA device %d does not exist (%d present)", n, n);
    rc = gconv_device_query(n, &q, err);
    CHECK(rc == EDGED_E_NO_CUDA && strcmp(err, want) == 0, "device query %d: rc %d '%s'", n, rc, err);
    rc = gconv_device_query(-1, &q, err);
    CHECK(rc == EDGED_E_NO_CUDA, "device query -1: rc %d", rc);
}

/* Without a usable GPU the query says why, as gconv_open does, and fills nothing. */
static void test_device_query_absent(void)
{
    struct gconv_info q;
    char err[EDGED_ERR_LEN] = "";
    int rc = gconv_device_query(0, &q, err);

    CHECK(rc == EDGED_E_NO_CUDA && err[0] && q.name[0] == '\0',
          "device query without a GPU: rc %d '%s' (want EDGED_E_NO_CUDA and why)", rc, err);
}

static void test_info(struct gconv_ctx *ctx)
{
    const struct gconv_info *gi = gconv_get_info(ctx);

    CHECK(gi && gi->name[0] && gi->sms > 0 && gi->l2_bytes > 0 && gi->global_mem > 0, "device info");
    CHECK(gi && gi->copy_gbps > 1.0 && gi->fp32_gflops > 1.0, "measured copy bandwidth and FP32 peak");
    CHECK(gi && gi->driver_version > 0 && gi->runtime_version > 0, "versions");
    if (gi)
        printf("device %s, cc %d.%d, %d SMs, L2 %zu KiB, opt-in smem %zu KiB, driver %d, runtime %d, copy "
               "%.0f GB/s, "
               "FP32 peak %.0f GFLOP/s\n",
               gi->name, gi->cc_major, gi->cc_minor, gi->sms, gi->l2_bytes >> 10,
               gi->smem_per_block_optin >> 10, gi->driver_version, gi->runtime_version, gi->copy_gbps,
               gi->fp32_gflops);
    test_device_query(gi);
}

/* A server drives every device from one process: the quick convolution and Canny checks again on
 * each further device, in this process after device 0, where state kept per device (a kernel's
 * shared-memory limit, the dependent-launch answer) must not be taken from device 0. */
static void test_other_devices(void)
{
    int n = gconv_device_count(), saved = quick;

    if (n < 2)
        SKIP("one device: the checks on a second device of one process need two");
    for (int d = 1; d < n; d++) {
        struct gconv_ctx *c = NULL;
        char err[EDGED_ERR_LEN] = "";
        if (gconv_open(&c, d, NSTREAMS, err) < 0) {
            CHECK(0, "device %d: %s", d, err);
            continue;
        }
        printf("device %d (%s), in the process of device 0:\n", d, gconv_get_info(c)->name);
        quick = quick ? quick : 1;
        test_conv(c);
        if (only < 0 || only == VARIANT_FAST)
            test_canny(c);
        quick = saved;
        CHECK(!gconv_is_dead(c), "device %d: context alive at the end", d);
        gconv_close(c);
    }
}

int main(void)
{
    struct gconv_ctx *ctx = NULL;
    char err[EDGED_ERR_LEN] = "";
    const char *req = getenv("EDGED_REQUIRE_GPU"), *q = getenv("EDGED_GPU_QUICK");
    double t0 = now_s();
    int rc;

    const char *o = getenv("EDGED_GPU_ONLY");

    check_rng_init();
    quick = q ? atoi(q) : 0;
    if (o && *o && (only = variant_from_name(o)) < 0) {
        CHECK(0, "EDGED_GPU_ONLY=%s is not a variant", o);
        return check_summary();
    }
    if ((rc = gconv_open(&ctx, 0, NSTREAMS, err)) < 0) {
        if (req && strcmp(req, "1") == 0)
            CHECK(rc == 0, "EDGED_REQUIRE_GPU=1 but no GPU: %s", err);
        else
            SKIP("GPU tests: %s", err);
        test_device_query_absent();
        return check_summary();
    }
    test_info(ctx);
    test_errors(ctx);
    if (quick == 2)
        SKIP("async rounds are not run at EDGED_GPU_QUICK=2 (racecheck set)");
    else {
        test_async(ctx);
        test_async_pinned(ctx);
    }
    if (backend_open(&eng, BACKEND_GPU, (const int[]){0}, 1, 1, 2, err) < 0) {
        CHECK(0, "backend_open for auto: %s", err);
        eng = NULL;
    }
    if (only < 0 || only == VARIANT_FAST)
        test_canny(ctx);
    if (only < 0 || only == VARIANT_FAST)
        test_edge_fast(ctx);
    test_default_border(ctx);
    test_conv(ctx);
    if (only < 0 || only == VARIANT_FAST)
        test_fast_sep_bands(ctx);
    test_plans(ctx);
    test_pipelines(ctx);
    if (only < 0 || only == VARIANT_FAST)
        test_fast_magnitude(ctx);
    if (only < 0 || only == VARIANT_FAST)
        test_fast_stream_tall(ctx);
    test_tf32x3(ctx);
    test_other_devices();
    CHECK(!gconv_is_dead(ctx), "context alive at the end");
    backend_close(eng);
    gconv_close(ctx);
    printf("%s set, %.1f s\n", quick ? "quick" : "full", now_s() - t0);
    return check_summary();
}
