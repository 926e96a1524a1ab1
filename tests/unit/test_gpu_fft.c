/* test_gpu_fft.c — variant fft against the exact correlation (double, on the CPU): random taps
 * 3x3 to 63x63, every border, gray and RGB, sizes from 1x1 to prime widths and whole multiples of
 * the fused tile's valid part (196 x 132: 2 x 98 for 31 taps, 2 x 66 for 63); each case on every
 * path: the fused tile kernel, its one-block-per-SM build and cuFFT (EDGED_FFT_FUSED 1, 2 and 0);
 * floats within the documented bound, u8 within one level and only next to a rounding tie.
 *
 * Bound (docs/semantics.md, "fft"): |fft - exact| <= FFT_C * 2^-24 * log2(n^2) * M * S, with
 * M = max |input|, S = sum |taps|, n <= 1024 the tile side (log2(n^2) <= 20 is used here), FFT_C 4.
 * A transform of N samples in float rounds each of its log2(N) stages, so its error relative to
 * the largest spectrum value is a few eps * log2(N); a tile's spectrum is at most n^2 * M, the
 * taps' at most S, and the inverse's 1/n^2 brings the product back to M * S. The cpu_serial
 * reference is itself a float sum whose error grows with the tap count, so both are measured
 * against the double sum and the largest errors are printed beside the bound.
 * u8: got == post(exact), or one level off where exact lies within the bound of a rounding tie
 * (post(exact - B) != post(exact + B)).
 * Env: EDGED_SEED repeats a run; EDGED_REQUIRE_GPU=1 fails instead of skipping without a GPU;
 * EDGED_GPU_QUICK (not 0) runs a few small cases only, for compute-sanitizer. */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "corr_exact.h"
#include "cpu_serial.h"
#include "errors.h"
#include "filter.h"
#include "gconv.h"
#include "image.h"
#include "pixel.h"
#include "variant.h"

#define FFT_LOG2_N2_MAX 20.0 /* log2(1024^2): the largest tile conv_fft uses */

static const int sides[] = {3, 13, 31, 63};
static const struct {
    int w, h;
} sizes[] = {{1, 1}, {7, 5}, {1000, 1}, {1, 1000}, {257, 263}, {1031, 7}, {61, 997}, {509, 127}, {196, 132}};

static double fft_bound(double max_in, double abs_sum)
{
    return corr_fft_bound(FFT_LOG2_N2_MAX, max_in, abs_sum);
}

static double worst_ratio; /* largest error / bound seen */
/* EDGED_FFT_FUSED: the fused tile kernel, its one-block-per-SM build, cuFFT */
static const char *const paths[] = {"1", "2", "0"};
#define NPATHS 3

/* One plane through gconv_conv_host on every path: random 0..255 floats, random taps in [-1, 1). */
static void test_float_case(struct gconv_ctx *ctx, int w, int h, int side, enum border b)
{
    size_t n = (size_t)w * h;
    float *in = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float)), *ser = malloc(n * sizeof(float));
    double *ref = malloc(n * sizeof(double));
    struct kernel2d k;
    char err[EDGED_ERR_LEN];

    if (!in || !got || !ser || !ref)
        abort();
    corr_kernel_fill(&k, side, side, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++)
        in[i] = check_rng_float(0.0f, 255.0f);
    double bound = fft_bound(255.0, corr_abs_sum(&k));
    corr_exact(in, ref, w, h, &k, b);
    cpu_serial_conv(in, ser, w, h, (size_t)w, &k, b);
    double es = corr_max_diff(ser, ref, n);
    for (int p = 0; p < NPATHS; p++) {
        check_knob("EDGED_FFT_FUSED", paths[p]);
        for (size_t i = 0; i < n; i++)
            got[i] = NAN;
        int rc = gconv_conv_host(ctx, in, got, w, h, &k, b, VARIANT_FFT, 16, NULL, err);
        CHECK(rc == 0, "fft fused=%s %dx%d taps %dx%d %s: %s", paths[p], w, h, side, side, border_name(b),
              err);
        if (rc < 0)
            continue;
        double e = corr_max_diff(got, ref, n);
        if (e / bound > worst_ratio)
            worst_ratio = e / bound;
        printf("fft fused=%s %4dx%-4d taps %2dx%-2d %-9s max |err| %.3g (cpu_serial %.3g), bound %.3g\n",
               paths[p], w, h, side, side, border_name(b), e, es, bound);
        CHECK(e <= bound, "fft fused=%s %dx%d taps %dx%d %s: max error %g > bound %g", paths[p], w, h, side,
              side, border_name(b), e, bound);
    }
    check_knobs_reset();
    free(in), free(got), free(ser), free(ref);
}

/* One run of a plan case (the knobs as set): the float planes within the bound of ref (the exact
 * planes), the u8 image within one level next to a tie. */
static void plan_case_check(struct gconv_ctx *ctx, const struct img *in, const struct filter_plan *plan,
                            struct img *out, float *got, const double *ref, const char *path)
{
    int w = in->w, h = in->h, ch = in->ch, side = plan->conv[0].rows;
    size_t n = (size_t)w * h;
    char err[EDGED_ERR_LEN];
    long off_by_one = 0, bad = 0;

    int rc = gconv_run(ctx, 1, in, plan, VARIANT_FFT, 16, out, got, NULL, err);
    CHECK(rc == 0, "fft fused=%s plan %dx%dx%d taps %d %s: %s", path, w, h, ch, side,
          border_name(plan->border), err);
    if (rc < 0)
        return;
    double bound = fft_bound(255.0, corr_abs_sum(&plan->conv[0])), worst = 0;
    for (int p = 0; p < plan->planes; p++) {
        const double *r = ref + p * n;
        double e = corr_max_diff(got + p * n, r, n);
        worst = e > worst ? e : worst;
        for (size_t i = 0; i < n; i++) {
            int g = out->px[(i / w) * out->stride + (i % w) * plan->out_ch + p];
            int c = pixel_post((float)r[i], plan->post, plan->threshold);
            int lo = pixel_post((float)(r[i] - bound), plan->post, plan->threshold);
            int hi = pixel_post((float)(r[i] + bound), plan->post, plan->threshold);
            if (g == c)
                continue;
            if (abs(g - c) == 1 && lo != hi && g >= (lo < hi ? lo : hi) && g <= (lo > hi ? lo : hi))
                off_by_one++;
            else if (!bad++)
                fprintf(stderr,
                        "fft fused=%s plan %dx%dx%d taps %d: pixel %zu plane %d u8 %d, exact %.6f -> %d\n",
                        path, w, h, ch, side, i, p, g, r[i], c);
        }
    }
    if (worst / bound > worst_ratio)
        worst_ratio = worst / bound;
    printf(
        "fft fused=%s plan %4dx%-4dx%d taps %2d %-9s max |err| %.3g, bound %.3g, u8 off by one at ties %ld\n",
        path, w, h, ch, side, border_name(plan->border), worst, bound, off_by_one);
    CHECK(worst <= bound, "fft fused=%s plan %dx%dx%d taps %d %s: float error %g > bound %g", path, w, h, ch,
          side, border_name(plan->border), worst, bound);
    CHECK(bad == 0, "fft fused=%s plan %dx%dx%d taps %d %s: %ld u8 samples off beyond a tie's band", path, w,
          h, ch, side, border_name(plan->border), bad);
}

/* A custom plan (normalised positive taps, so that the results span 0..255) on a gray or RGB image
 * through gconv_run on every path: float planes within the bound, u8 within one level next to a
 * tie. */
static void test_plan_case(struct gconv_ctx *ctx, int w, int h, int ch, int side, enum border b)
{
    struct filter_spec spec;
    struct filter_plan plan;
    struct img in = {0}, out = {0};
    char err[EDGED_ERR_LEN];
    size_t n = (size_t)w * h;
    float *got = NULL, *plane = NULL;
    double *ref = NULL;

    filter_spec_init(&spec, FILTER_CUSTOM);
    spec.border = b, spec.custom_rows = spec.custom_cols = side, spec.custom_normalize = 1;
    for (int i = 0; i < side * side; i++)
        spec.custom_taps[i] = check_rng_float(0.0f, 1.0f);
    if (filter_plan_make(&spec, ch, &plan, err) < 0 || img_alloc(&in, w, h, ch, err) < 0 ||
        img_alloc(&out, w, h, plan.out_ch, err) < 0) {
        CHECK(0, "plan setup: %s", err);
        goto out;
    }
    got = malloc(n * plan.planes * sizeof(float)), plane = malloc(n * sizeof(float)),
    ref = malloc(n * plan.planes * sizeof(double));
    if (!got || !plane || !ref)
        abort();
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w * ch; x++)
            in.px[y * in.stride + x] = (uint8_t)(check_rng() >> 24);
    for (int p = 0; p < plan.planes; p++) {
        for (size_t i = 0; i < n; i++) { /* the plane as the CPU reads it: luma for gray plans */
            const uint8_t *px = in.px + (i / w) * in.stride + (i % w) * ch;
            plane[i] = plan.gray ? pixel_luma(px[0], px[1], px[2]) : px[p];
        }
        corr_exact(plane, ref + p * n, w, h, &plan.conv[0], b);
    }
    for (int q = 0; q < NPATHS; q++) {
        check_knob("EDGED_FFT_FUSED", paths[q]);
        plan_case_check(ctx, &in, &plan, &out, got, ref, paths[q]);
    }
    check_knobs_reset();
out:
    free(got), free(plane), free(ref);
    img_free(&in), img_free(&out);
}

int main(void)
{
    struct gconv_ctx *ctx = NULL;
    struct filter_plan plan;
    struct filter_spec spec;
    char err[EDGED_ERR_LEN] = "";
    const char *req = getenv("EDGED_REQUIRE_GPU"), *q = getenv("EDGED_GPU_QUICK");
    int rc;

    check_rng_init();
    if ((rc = gconv_open(&ctx, 0, 2, err)) < 0) {
        if (req && strcmp(req, "1") == 0)
            CHECK(rc == 0, "EDGED_REQUIRE_GPU=1 but no GPU: %s", err);
        else
            SKIP("fft GPU tests: %s", err);
        return check_summary();
    }
    filter_spec_init(&spec, FILTER_BOX);
    if (filter_plan_make(&spec, 1, &plan, err) < 0)
        abort();
    if ((rc = gconv_check(ctx, &plan, 64, 64, VARIANT_FFT, 16, err)) == EDGED_E_NO_CUDA) {
        CHECK(strstr(err, "cuFFT") != NULL, "fft refused without naming cuFFT: %s", err);
        SKIP("fft GPU tests: %s", err);
        gconv_close(ctx);
        return check_summary();
    }
    CHECK(rc == 0, "gconv_check fft: %s", err);
    if (q && *q && strcmp(q, "0") != 0) { /* the compute-sanitizer set: a few tiles, every path */
        for (int b = 0; b < BORDER_COUNT; b++) {
            test_float_case(ctx, 7, 5, 63, (enum border)b);
            test_float_case(ctx, 257, 131, 31, (enum border)b);
        }
        test_plan_case(ctx, 257, 131, 3, 63, BORDER_REFLECT);
        goto done;
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t k = 0; k < sizeof(sides) / sizeof(sides[0]); k++)
            for (int b = 0; b < BORDER_COUNT; b++)
                test_float_case(ctx, sizes[s].w, sizes[s].h, sides[k], (enum border)b);
    for (int ch = 1; ch <= 3; ch += 2)
        for (size_t k = 0; k < sizeof(sides) / sizeof(sides[0]); k++)
            for (int b = 0; b < BORDER_COUNT; b++) {
                test_plan_case(ctx, 257, 131, ch, sides[k], (enum border)b);
                test_plan_case(ctx, 7, 5, ch, sides[k], (enum border)b);
            }
    test_plan_case(ctx, 2053, 1031, 3, 31, BORDER_REFLECT); /* several tiles, planes batched */
done:
    printf("largest error / bound: %.3g\n", worst_ratio);
    CHECK(!gconv_is_dead(ctx), "context alive at the end");
    gconv_close(ctx);
    return check_summary();
}
