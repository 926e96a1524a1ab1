/* test_cpu.c — the threaded CPU backend against the serial reference on random images and kernels. */
#define _GNU_SOURCE /* RTLD_NEXT, to wrap pthread_create */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "cpu.h"
#include "cpu_serial.h"
#include "errors.h"
#include "filter.h"
#include "image.h"
#include "pixel.h"

/* Tolerances (the cpu.h promise and the README's):
 * - float planes: |cpu - serial| <= CONV_TOL * scale, scale = sum|taps| * max|input| per
 *   convolution (CHAIN: the product of the two sums; MAGNITUDE: their sum);
 * - u8 output: cpu_run gives exactly post(cpu_compute's floats) and cpu_serial_run exactly
 *   post(cpu_serial_compute's); the two u8 images are equal except |diff| <= 1 where the serial
 *   float is within U8_MARGIN of a rounding boundary (x.5 after abs/offset), or where the serial
 *   and cpu floats, already held to the float tolerance, lie on the two sides of one (the serial
 *   oracle's own summation error reaches ~6e-5 of the scale for a 63x63 box, 0.015 at 255);
 * - edge maps (threshold): equal except where |L| (serial) is within U8_MARGIN of the threshold;
 *   nothing else is let off. */
#define CONV_TOL 1e-4
#define U8_MARGIN 1e-3

static const int thread_counts[] = {1, 2, 3, 7};
#define NTHREADS ((int)(sizeof(thread_counts) / sizeof(thread_counts[0])))

static int small_mode;        /* EDGED_TEST_SMALL=1: kernels up to 15, no 517x301 (valgrind) */
static double worst_rel;       /* largest |cpu - serial| / scale seen */
static double worst_edge;      /* largest |cpu - serial| of an edge pipeline's L */
static long compared, near_let_off, straddle_let_off; /* u8 samples: all, let off by each rule */

/* ---- pthread_create that fails on demand ----------------------------------------------------- */

static int create_fail_after = -1; /* >= 0: this many more succeed, then EAGAIN */

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    if (create_fail_after == 0)
        return EAGAIN;
    if (create_fail_after > 0)
        create_fail_after--;
    return real ? real(t, attr, fn, arg) : ENOSYS;
}

/* ---- random data (check_rng) -------------------------------------------------------------------- */

/* A w x h x ch image with a stride of up to 3 spare bytes: uniform noise, a noisy ramp (values
 * spread over the range after filtering) or a constant, by kind. Free with img_free. */
static int random_img(struct img *im, int w, int h, int ch)
{
    int kind = (int)(check_rng() % 4);
    uint8_t c = (uint8_t)check_rng();

    im->w = w, im->h = h, im->ch = ch;
    im->stride = (size_t)w * (size_t)ch + check_rng() % 4;
    if (!(im->px = malloc(im->stride * (size_t)h)))
        return -1;
    for (int y = 0; y < h; y++)
        for (size_t i = 0; i < im->stride; i++) {
            uint8_t *p = im->px + (size_t)y * im->stride + i;
            int x = (int)(i / (size_t)ch);
            if (kind == 0)
                *p = c;
            else if (kind == 1)
                *p = (uint8_t)((x * 7 + y * 3 + (int)(check_rng() % 9)) & 255);
            else
                *p = (uint8_t)check_rng();
        }
    return 0;
}

/* The knobs of filter f, at random: sizes up to max_side; custom taps positive and normalised
 * unless raw (then uniform in [-1, 1), rank 1 half the time). */
static void random_spec(struct filter_spec *s, enum filter_id f, int max_side, int raw)
{
    filter_spec_init(s, f);
    if (f == FILTER_GAUSSIAN || f == FILTER_BOX)
        s->size = check_rng_odd(3, max_side);
    if (f == FILTER_GAUSSIAN && check_rng() % 2)
        s->sigma = check_rng_float(0.3f, 10.0f);
    if (f == FILTER_EDGE)
        s->threshold = check_rng_float(0.0f, 20.0f);
    if (f == FILTER_CUSTOM) {
        float u[FILTER_MAX_SIDE], v[FILTER_MAX_SIDE];
        int rank1 = check_rng() % 2;
        s->custom_rows = check_rng_odd(1, max_side);
        s->custom_cols = check_rng_odd(1, max_side);
        for (int i = 0; i < FILTER_MAX_SIDE; i++) {
            u[i] = raw ? check_rng_float(-1.0f, 1.0f) : check_rng_float(0.1f, 1.0f);
            v[i] = raw ? check_rng_float(-1.0f, 1.0f) : check_rng_float(0.1f, 1.0f);
        }
        for (int i = 0; i < s->custom_rows; i++)
            for (int j = 0; j < s->custom_cols; j++)
                s->custom_taps[i * s->custom_cols + j] =
                    rank1 ? u[i] * v[j] : (raw ? check_rng_float(-1.0f, 1.0f) : check_rng_float(0.01f, 1.0f));
        s->custom_normalize = !raw;
    }
}

/* ---- comparisons ------------------------------------------------------------------------------ */

static double taps_abs_sum(const struct kernel2d *k)
{
    double s = 0.0;

    for (int i = 0; i < k->rows * k->cols; i++)
        s += fabs(k->taps[i]);
    return s;
}

/* sum|taps| * max|input| of the whole plan (see the tolerance note at the top). */
static double plan_scale(const struct filter_plan *p, const struct img *in)
{
    double s0 = taps_abs_sum(&p->conv[0]), s1 = p->nconv == 2 ? taps_abs_sum(&p->conv[1]) : 0.0;
    int maxin = 0;

    for (int y = 0; y < in->h; y++)
        for (int i = 0; i < in->w * in->ch; i++)
            if (in->px[(size_t)y * in->stride + i] > maxin)
                maxin = in->px[(size_t)y * in->stride + i];
    if (p->combine == COMBINE_CHAIN)
        return s0 * s1 * maxin;
    return (s0 + s1) * maxin;
}

/* |a - b| <= CONV_TOL * scale over n floats; records the worst ratio. Returns 0 when within. */
static int compare_floats(const float *a, const float *b, size_t n, double scale, const char *what)
{
    double worst = 0.0;
    size_t at = 0;

    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > worst || (d != d)) {
            worst = d != d ? INFINITY : d;
            at = i;
        }
    }
    if (scale > 0 && worst / scale > worst_rel)
        worst_rel = worst / scale;
    CHECK(worst <= CONV_TOL * scale, "%s: |cpu - serial| = %g at %zu (cpu %.9g, serial %.9g), tolerance %g", what,
          worst, at, a[at], b[at], CONV_TOL * scale);
    return worst <= CONV_TOL * scale ? 0 : -1;
}

/* Where post's result changes for v: the distance from v (after abs / offset) to the nearest x.5,
 * or from |v| to the threshold. */
static double boundary_distance(float v, const struct filter_plan *p)
{
    double x = p->post == POST_ABS ? fabs(v) : p->post == POST_OFFSET ? (double)v + 128.0 : v;

    if (p->post == POST_THRESHOLD)
        return fabs(fabs(v) - p->threshold);
    return fabs(x - (floor(x) + 0.5));
}

/* Whether a u8 difference d between cpu (float c) and serial (float v) is let off (see the top). */
static int let_off(int d, float v, float c, const struct filter_plan *p)
{
    if (p->post == POST_THRESHOLD) {
        if (d == 255 && boundary_distance(v, p) <= U8_MARGIN)
            return near_let_off++, 1;
        return 0;
    }
    if (d != 1)
        return 0;
    if (boundary_distance(v, p) <= U8_MARGIN)
        return near_let_off++, 1;
    if (pixel_post(v, p->post, 0) != pixel_post(c, p->post, 0))
        return straddle_let_off++, 1;
    return 0;
}

/* The u8 images of cpu (oc) and serial (os) against each other and against the floats they came
 * from (pc, ps); alpha copied from the input. */
static void compare_u8(const struct img *in, const struct filter_plan *p, const float *ps, const float *pc,
                       const struct img *os, const struct img *oc, const char *what)
{
    size_t n = (size_t)in->w * (size_t)in->h;
    int bad = 0, och = p->out_ch;

    CHECK(oc->w == in->w && oc->h == in->h && oc->ch == och && os->ch == och, "%s: output %dx%dx%d, want %dx%dx%d",
          what, oc->w, oc->h, oc->ch, in->w, in->h, och);
    if (oc->ch != och || os->ch != och || oc->w != in->w || oc->h != in->h)
        return;
    for (int y = 0; y < in->h && bad < 5; y++)
        for (int x = 0; x < in->w && bad < 5; x++) {
            const uint8_t *c = oc->px + (size_t)y * oc->stride + (size_t)x * och;
            const uint8_t *s = os->px + (size_t)y * os->stride + (size_t)x * och;
            const uint8_t *src = in->px + (size_t)y * in->stride + (size_t)x * in->ch;
            for (int q = 0; q < p->planes; q++) {
                size_t i = (size_t)q * n + (size_t)y * (size_t)in->w + (size_t)x;
                int d = abs(c[q] - s[q]);
                compared++;
                if (s[q] != pixel_post(ps[i], p->post, p->threshold) || c[q] != pixel_post(pc[i], p->post, p->threshold)) {
                    bad++;
                    fprintf(stderr, "%s: u8 (%d,%d,%d) serial %d / cpu %d are not post of their floats %.9g / %.9g\n",
                            what, x, y, q, s[q], c[q], ps[i], pc[i]);
                }
                if (p->post == POST_THRESHOLD && fabs(ps[i] - pc[i]) > worst_edge)
                    worst_edge = fabs(ps[i] - pc[i]);
                if (d != 0 && !let_off(d, ps[i], pc[i], p)) {
                    bad++;
                    fprintf(stderr, "%s: u8 (%d,%d,%d) cpu %d serial %d, floats %.9g / %.9g\n", what, x, y, q, c[q],
                            s[q], pc[i], ps[i]);
                }
            }
            if (img_has_alpha(in->ch) && (c[och - 1] != src[in->ch - 1] || s[och - 1] != src[in->ch - 1])) {
                bad++;
                fprintf(stderr, "%s: alpha (%d,%d) cpu %d serial %d, input %d\n", what, x, y, c[och - 1], s[och - 1],
                        src[in->ch - 1]);
            }
        }
    CHECK(bad == 0, "%s: u8 outputs differ (first differences above)", what);
}

/* cpu vs serial on one image and plan: float planes (compute), u8 output (run). */
static void check_plan(const struct img *in, const struct filter_plan *p, int threads, const char *what)
{
    size_t n = (size_t)in->w * (size_t)in->h * (size_t)p->planes;
    float *ps = malloc(n * sizeof(float)), *pc = malloc(n * sizeof(float));
    struct img os = {0}, oc = {0};
    char err[EDGED_ERR_LEN] = "";
    int rc;

    if (!ps || !pc) {
        CHECK(0, "%s: test out of memory", what);
        goto out;
    }
    CHECK((rc = cpu_serial_compute(in, p, ps, err)) == 0, "%s: cpu_serial_compute: %s", what, err);
    CHECK((rc |= cpu_compute(in, p, pc, threads, err)) == 0, "%s: cpu_compute: %s", what, err);
    if (rc == 0)
        compare_floats(pc, ps, n, plan_scale(p, in), what);
    CHECK((rc |= cpu_serial_run(in, p, &os, err)) == 0, "%s: cpu_serial_run: %s", what, err);
    CHECK((rc |= cpu_run(in, p, &oc, threads, err)) == 0, "%s: cpu_run: %s", what, err);
    if (rc == 0)
        compare_u8(in, p, ps, pc, &os, &oc, what);
out:
    img_free(&oc);
    img_free(&os);
    free(pc);
    free(ps);
}

/* ---- the matrix --------------------------------------------------------------------------------- */

static void run_case(int f, int w, int h, int ch, int color, int border, int threads, int max_side, int raw)
{
    struct filter_spec s;
    struct filter_plan p;
    struct img in = {0};

    if (f == FILTER_CANNY) /* no float planes: canny_cpu against canny_serial is test_canny.c */
        return;
    char err[EDGED_ERR_LEN], what[200];

    random_spec(&s, (enum filter_id)f, max_side, raw);
    s.color = (enum color_mode)color;
    s.border = (enum border)border;
    if (filter_plan_make(&s, ch, &p, err) < 0) {
        CHECK(0, "plan %s: %s", filter_name(f), err);
        return;
    }
    if (random_img(&in, w, h, ch) < 0) {
        CHECK(0, "test out of memory for %dx%d", w, h);
        return;
    }
    snprintf(what, sizeof(what), "%s %dx%d (k %dx%d) on %dx%dx%d color %s border %s threads %d%s", filter_name(f),
             p.conv[0].rows, p.conv[0].cols, p.conv[p.nconv ? p.nconv - 1 : 0].rows,
             p.conv[p.nconv ? p.nconv - 1 : 0].cols, w, h, ch, /* threshold: no kernel, 0x0 */
             color_name(color), border_name(border), threads, raw ? " raw taps" : "");
    check_plan(&in, &p, threads, what);
    img_free(&in);
}

/* Every filter x border x channel count x colour mode on the small shapes. */
static void test_matrix_small(void)
{
    static const int sizes[][2] = {{1, 1}, {1, 37}, {37, 1}, {7, 3}, {33, 65}};
    int run = 0, max_side = small_mode ? 15 : FILTER_MAX_SIDE;

    for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
        for (int f = 0; f < FILTER_COUNT; f++)
            for (int b = 0; b < BORDER_COUNT; b++)
                for (int ch = 1; ch <= 4; ch++)
                    for (int c = 0; c < COLOR_COUNT; c++, run++)
                        run_case(f, sizes[z][0], sizes[z][1], ch, c, b, run % 9 == 8 ? 0 : thread_counts[run % NTHREADS],
                                 max_side, f == FILTER_CUSTOM && run % 2);
}

/* Every filter x border on 517x301, channels, colours and threads cycling; kernels up to 15. */
static void test_matrix_large(void)
{
    int run = 0;

    if (small_mode) {
        SKIP("517x301 cases (EDGED_TEST_SMALL set)");
        return;
    }
    for (int f = 0; f < FILTER_COUNT; f++)
        for (int b = 0; b < BORDER_COUNT; b++, run++)
            run_case(f, 517, 301, 1 + run % 4, run % COLOR_COUNT, b, thread_counts[run % NTHREADS], 15,
                     f == FILTER_CUSTOM && b == 1);
    /* one full-size custom kernel at full size */
    run_case(FILTER_CUSTOM, 517, 301, 1, COLOR_AUTO, BORDER_REFLECT, 2, FILTER_MAX_SIDE, 0);
}

/* cpu_conv against cpu_serial_conv on float planes: custom kernels of random odd shapes up to
 * 63x63 (raw taps, rank 1 half the time), signed data, random pitch, threads 1/2/3/7, and each
 * inner loop (the EDGED_CPU_SIMD knob). The result must not depend on the thread count. */
static void test_conv_random(void)
{
    static const char *const simd[] = {"best", "sse", "avx2"};
    int cases = small_mode ? 40 : 240;

    for (int t = 0; t < cases; t++) {
        struct filter_spec s;
        struct kernel2d k;
        int w = 1 + (int)(check_rng() % 90), h = 1 + (int)(check_rng() % 70);
        int b = (int)(check_rng() % BORDER_COUNT);
        size_t pitch = (size_t)w + check_rng() % 5, n = pitch * (size_t)h;
        float *in = malloc(n * sizeof(float)), *os = calloc(n, sizeof(float)), *oc = calloc(n, sizeof(float));
        float *o1 = calloc(n, sizeof(float));
        char err[EDGED_ERR_LEN] = "", what[160];
        double maxin = 0.0;

        if (!in || !os || !oc || !o1) {
            CHECK(0, "test out of memory");
            goto next;
        }
        random_spec(&s, FILTER_CUSTOM, small_mode ? 15 : FILTER_MAX_SIDE, 1);
        if (filter_kernel(&s, &k, err) < 0) {
            CHECK(0, "custom kernel: %s", err);
            goto next;
        }
        for (size_t i = 0; i < n; i++) {
            in[i] = check_rng_float(-300.0f, 300.0f);
            maxin = fmax(maxin, fabs(in[i]));
        }
        check_knob("EDGED_CPU_SIMD", simd[t % 3]);
        snprintf(what, sizeof(what), "cpu_conv %dx%d%s on %dx%d pitch %zu %s threads %d simd '%s'", k.rows, k.cols,
                 k.separable ? " (separable)" : "", w, h, pitch, border_name(b), thread_counts[t % NTHREADS],
                 simd[t % 3]);
        cpu_serial_conv(in, os, w, h, pitch, &k, (enum border)b);
        CHECK(cpu_conv(in, oc, w, h, pitch, &k, (enum border)b, thread_counts[t % NTHREADS], err) == 0, "%s: %s",
              what, err);
        CHECK(cpu_conv(in, o1, w, h, pitch, &k, (enum border)b, 1, err) == 0, "%s: %s", what, err);
        CHECK(memcmp(oc, o1, n * sizeof(float)) == 0, "%s: result depends on the thread count", what);
        compare_floats(oc, os, n, taps_abs_sum(&k) * maxin, what);
    next:
        check_knobs_reset();
        free(o1);
        free(oc);
        free(os);
        free(in);
    }
}

/* More threads than rows, 0 (= cores), and more than the internal cap. */
static void test_thread_counts(void)
{
    static const struct {
        int w, h, threads;
    } cases[] = {{1, 1, 7}, {37, 1, 7}, {7, 3, 7}, {7, 3, 64}, {33, 65, 0}, {33, 65, 300}, {5, 2, 3}};
    struct img in = {0}, a = {0}, b = {0};
    struct filter_spec s;
    struct filter_plan p;
    char err[EDGED_ERR_LEN], what[120];

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int f = (int)(c % 2 ? FILTER_EDGE : FILTER_GAUSSIAN);
        snprintf(what, sizeof(what), "%s %dx%d threads %d", filter_name(f), cases[c].w, cases[c].h, cases[c].threads);
        run_case(f, cases[c].w, cases[c].h, 3, COLOR_AUTO, (int)(c % BORDER_COUNT), cases[c].threads, 11, 0);
        /* cpu_run with any thread count gives the same bytes as with one. */
        random_spec(&s, FILTER_SOBEL, 3, 0);
        if (filter_plan_make(&s, 4, &p, err) < 0 || random_img(&in, cases[c].w, cases[c].h, 4) < 0) {
            CHECK(0, "%s: setup", what);
            continue;
        }
        CHECK(cpu_run(&in, &p, &a, cases[c].threads, err) == 0 && cpu_run(&in, &p, &b, 1, err) == 0 &&
                  memcmp(a.px, b.px, a.stride * (size_t)a.h) == 0,
              "%s: cpu_run differs from 1 thread (%s)", what, err);
        img_free(&a);
        img_free(&b);
        img_free(&in);
    }
}

/* A shared pool: each stage takes the pool's threads over the jobs running (at least one), and a
 * job run on its share gives the same bytes as on one thread, reporting the most threads a stage
 * took. */
static void test_shared_threads(void)
{
    static const int want[] = {6, 6, 3, 2, 1, 1, 1, 1};
    struct cpu_share sh;
    struct img in = {0}, a = {0}, b = {0};
    struct filter_spec s;
    struct filter_plan p;
    char err[EDGED_ERR_LEN];
    int most = 0;

    cpu_share_init(&sh, 6);
    for (int r = 0; r < 8; r++) { /* r jobs running */
        CHECK(cpu_share_threads(&sh) == want[r], "%d jobs running: a stage takes %d threads, want %d", r,
              cpu_share_threads(&sh), want[r]);
        cpu_share_enter(&sh);
    }
    for (int r = 0; r < 7; r++)
        cpu_share_leave(&sh);
    random_spec(&s, FILTER_EDGE, 3, 0);
    if (filter_plan_make(&s, 3, &p, err) < 0 || random_img(&in, 41, 29, 3) < 0) {
        CHECK(0, "shared: setup: %s", err);
        return;
    }
    CHECK(cpu_run_shared(&in, &p, &a, &sh, NULL, &most, err) == 0 && cpu_run(&in, &p, &b, 1, err) == 0 &&
              memcmp(a.px, b.px, a.stride * (size_t)a.h) == 0,
          "cpu_run_shared differs from 1 thread (%s)", err);
    CHECK(most == 6, "one job running: its stages took at most %d threads, want 6", most);
    cpu_share_enter(&sh);
    img_free(&a);
    CHECK(cpu_run_shared(&in, &p, &a, &sh, NULL, &most, err) == 0 && memcmp(a.px, b.px, a.stride * (size_t)a.h) == 0 &&
              most == 3,
          "two jobs running: %d threads a stage, want 3 (%s)", most, err);
    cpu_share_leave(&sh);
    cpu_share_leave(&sh);
    img_free(&a);
    img_free(&b);
    img_free(&in);
}

/* The stages around the convolutions, checked against direct formulas rather than against each
 * other (cpu and serial share them): input planes (luma 0.299R + 0.587G + 0.114B in float for gray
 * of 3/4 channels, the gray channel of gray+alpha, channel p for rgb), alpha copied, MAGNITUDE =
 * sqrtf(a*a + b*b) and CHAIN = conv1(conv0(x)), each from cpu_serial_conv with the plan's border. */
static void test_semantics(void)
{
    const float one = 1.0f;
    char err[EDGED_ERR_LEN];

    for (int ch = 1; ch <= 4; ch++)
        for (int c = COLOR_GRAY; c <= COLOR_RGB; c++) {
            struct filter_spec s;
            struct filter_plan p;
            struct img in = {0}, out = {0};
            float planes[3 * 9 * 5];
            int w = 9, h = 5, bad = 0;
            filter_spec_init(&s, FILTER_CUSTOM);
            s.custom_rows = s.custom_cols = 1;
            s.custom_taps[0] = one;
            s.color = (enum color_mode)c;
            if (filter_plan_make(&s, ch, &p, err) < 0 || random_img(&in, w, h, ch) < 0 ||
                cpu_serial_compute(&in, &p, planes, err) < 0 || cpu_run(&in, &p, &out, 2, err) < 0) {
                CHECK(0, "identity ch %d color %s: %s", ch, color_name(c), err);
                img_free(&in);
                continue;
            }
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    const uint8_t *px = in.px + (size_t)y * in.stride + (size_t)x * ch;
                    const uint8_t *o = out.px + (size_t)y * out.stride + (size_t)x * out.ch;
                    for (int q = 0; q < p.planes; q++) {
                        float want = ch >= 3 && c == COLOR_GRAY
                                         ? 0.299f * (float)px[0] + 0.587f * (float)px[1] + 0.114f * (float)px[2]
                                         : (float)px[q];
                        float got = planes[(size_t)q * (size_t)(w * h) + (size_t)(y * w + x)];
                        bad += got != want || o[q] != (uint8_t)rintf(want);
                    }
                    bad += (ch == 2 || ch == 4) && o[out.ch - 1] != px[ch - 1];
                }
            CHECK(bad == 0 && p.planes == (ch >= 3 && c == COLOR_RGB ? 3 : 1) &&
                      out.ch == p.planes + (ch == 2 || ch == 4),
                  "identity ch %d color %s: %d samples wrong, planes %d, out_ch %d", ch, color_name(c), bad, p.planes,
                  out.ch);
            img_free(&out);
            img_free(&in);
        }
    for (int f = 0; f < 2; f++) {
        struct filter_spec s;
        struct filter_plan p;
        struct img in = {0};
        int w = 23, h = 17, bad = 0, b = (int)(check_rng() % BORDER_COUNT);
        float src[23 * 17], a[23 * 17], t[23 * 17], got[23 * 17];
        filter_spec_init(&s, f ? FILTER_EDGE : FILTER_SOBEL);
        s.border = (enum border)b;
        if (filter_plan_make(&s, 1, &p, err) < 0 || random_img(&in, w, h, 1) < 0 ||
            cpu_serial_compute(&in, &p, got, err) < 0) {
            CHECK(0, "%s: %s", filter_name(s.filter), err);
            img_free(&in);
            continue;
        }
        for (int i = 0; i < w * h; i++)
            src[i] = (float)in.px[(size_t)(i / w) * in.stride + (size_t)(i % w)];
        cpu_serial_conv(src, a, w, h, (size_t)w, &p.conv[0], (enum border)b);
        cpu_serial_conv(f ? a : src, t, w, h, (size_t)w, &p.conv[1], (enum border)b);
        for (int i = 0; i < w * h; i++)
            bad += got[i] != (f ? t[i] : sqrtf(a[i] * a[i] + t[i] * t[i]));
        CHECK(bad == 0, "%s %s: %d samples differ from the stages done by hand", filter_name(s.filter),
              border_name(b), bad);
        img_free(&in);
    }
}

/* The default border is reflect, and with it a flat image through every derivative filter gives an
 * all-zero result (cpu_serial and cpu, gray and RGB input, images smaller than the kernels too);
 * with border zero the same image gives a frame: the outermost pixels lit, those a kernel radius
 * in (3 for edge, 1 for the others) 0. */
static void test_default_border_no_frame(void)
{
    static const enum filter_id ids[] = {FILTER_EDGE,   FILTER_SOBEL,      FILTER_SOBEL_X,
                                         FILTER_SOBEL_Y, FILTER_LAPLACIAN3, FILTER_LAPLACIAN8};
    static const int sizes[][2] = {{19, 13}, {1, 1}, {2, 3}, {1, 9}, {9, 1}};
    char err[EDGED_ERR_LEN];

    for (size_t f = 0; f < sizeof(ids) / sizeof(ids[0]); f++)
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
            for (int ch = 1; ch <= 3; ch += 2)
                for (int b = 0; b < 2; b++) { /* 0: the default, 1: zero */
                    int w = sizes[si][0], h = sizes[si][1], r = ids[f] == FILTER_EDGE ? 3 : 1;
                    struct filter_spec s;
                    struct filter_plan p;
                    struct img in = {0}, out[2] = {{0}, {0}};
                    filter_spec_init(&s, ids[f]);
                    CHECK(s.border == BORDER_REFLECT, "filter_spec_init: border %s", border_name(s.border));
                    if (b)
                        s.border = BORDER_ZERO;
                    if (filter_plan_make(&s, ch, &p, err) < 0 || img_alloc(&in, w, h, ch, err) < 0) {
                        CHECK(0, "%s: %s", filter_name(ids[f]), err);
                        continue;
                    }
                    memset(in.px, 200, in.stride * (size_t)h);
                    int rc = cpu_serial_run(&in, &p, &out[0], err);
                    rc = rc < 0 ? rc : cpu_run(&in, &p, &out[1], 2, err);
                    CHECK(rc == 0, "%s flat %dx%dx%d: %s", filter_name(ids[f]), w, h, ch, err);
                    for (int k = 0; rc == 0 && k < 2; k++) {
                        size_t lit = 0, lit_inner = 0, corner = out[k].px[0] != 0;
                        for (int y = 0; y < h; y++)
                            for (int x = 0; x < w; x++) {
                                int v = out[k].px[(size_t)y * out[k].stride + (size_t)x * out[k].ch] != 0;
                                lit += v;
                                lit_inner += v && x >= r && y >= r && x < w - r && y < h - r;
                            }
                        if (!b)
                            CHECK(lit == 0, "%s flat %dx%dx%d (%s, default border): %zu pixels lit", filter_name(ids[f]),
                                  w, h, ch, k ? "cpu" : "cpu_serial", lit);
                        else if (si == 0)
                            CHECK(corner && lit_inner == 0, "%s flat %dx%dx%d (%s, zero): corner %zu, %zu lit inside",
                                  filter_name(ids[f]), w, h, ch, k ? "cpu" : "cpu_serial", corner, lit_inner);
                    }
                    img_free(&out[0]);
                    img_free(&out[1]);
                    img_free(&in);
                }
}

/* Images or plans that do not fit together are refused with EDGED_E_PARAM by all four entry points. */
static void test_bad_inputs(void)
{
    struct img in = {0}, out = {0};
    struct filter_spec s;
    struct filter_plan p, bad;
    char err[EDGED_ERR_LEN];
    float planes[3 * 8 * 8];

    filter_spec_init(&s, FILTER_BOX);
    if (filter_plan_make(&s, 3, &p, err) < 0 || random_img(&in, 8, 8, 4) < 0) {
        CHECK(0, "setup: %s", err);
        return;
    }
#define EXPECT_PARAM(call, what)                                                                   \
    do {                                                                                           \
        err[0] = '\0';                                                                             \
        int rc_ = (call);                                                                          \
        CHECK(rc_ == EDGED_E_PARAM && err[0] && out.px == NULL, "%s: rc %d '%s'", what, rc_, err);      \
    } while (0)
    EXPECT_PARAM(cpu_serial_compute(&in, &p, planes, err), "serial_compute, 4-channel image, 3-channel plan");
    EXPECT_PARAM(cpu_serial_run(&in, &p, &out, err), "serial_run, channel mismatch");
    EXPECT_PARAM(cpu_compute(&in, &p, planes, 2, err), "compute, channel mismatch");
    EXPECT_PARAM(cpu_run(&in, &p, &out, 2, err), "run, channel mismatch");
    in.ch = 3;
    EXPECT_PARAM(cpu_run(&in, &p, &out, -1, err), "run, threads -1");
    EXPECT_PARAM(cpu_compute(&in, &p, planes, -1, err), "compute, threads -1");
    bad = p;
    bad.conv[0].rows = 4;
    EXPECT_PARAM(cpu_run(&in, &bad, &out, 1, err), "run, 4-row kernel");
    EXPECT_PARAM(cpu_serial_run(&in, &bad, &out, err), "serial_run, 4-row kernel");
    bad = p;
    bad.conv[0].taps[4] = INFINITY; /* e.g. normalised taps that overflowed */
    EXPECT_PARAM(cpu_run(&in, &bad, &out, 1, err), "run, infinite tap");
    EXPECT_PARAM(cpu_serial_run(&in, &bad, &out, err), "serial_run, infinite tap");
    bad = p;
    bad.nconv = 2; /* SINGLE with two kernels */
    EXPECT_PARAM(cpu_run(&in, &bad, &out, 1, err), "run, nconv 2 for SINGLE");
    bad = p;
    bad.planes = 1; /* rgb plan of a 3-channel image has 3 planes */
    EXPECT_PARAM(cpu_serial_compute(&in, &bad, planes, err), "serial_compute, planes 1 for rgb");
    bad = p;
    bad.post = POST_AUTO;
    EXPECT_PARAM(cpu_compute(&in, &bad, planes, 1, err), "compute, post auto");
    in.w = 0;
    EXPECT_PARAM(cpu_run(&in, &p, &out, 1, err), "run, width 0");
#undef EXPECT_PARAM
    in.w = 8;
    in.ch = 4;
    img_free(&in);
}

/* pthread_create failing (k threads start, the next does not): EDGED_E_INTERNAL with a message,
 * nothing leaked (valgrind / ASan check that), no output left behind; afterwards all works. */
static void test_thread_failure(void)
{
    struct img in = {0}, out = {0};
    struct filter_spec s;
    struct filter_plan p;
    char err[EDGED_ERR_LEN];
    float *a = NULL, *b = NULL;
    int rc;

    filter_spec_init(&s, FILTER_SOBEL);
    if (filter_plan_make(&s, 3, &p, err) < 0 || random_img(&in, 64, 48, 3) < 0 ||
        !(a = malloc(64 * 48 * sizeof(float))) || !(b = malloc(64 * 48 * sizeof(float)))) {
        CHECK(0, "setup");
        goto out;
    }
    for (int after = 0; after < 8; after++) {
        err[0] = '\0';
        create_fail_after = after;
        rc = cpu_run(&in, &p, &out, 4, err);
        create_fail_after = -1;
        /* sobel on 4 threads: load, 2 convolutions, magnitude, store: 5 rounds of 3 threads */
        CHECK(rc == EDGED_E_INTERNAL && err[0] && out.px == NULL, "cpu_run, thread %d fails: rc %d '%s'", after + 1, rc,
              err);
        img_free(&out);
        create_fail_after = after % 3;
        rc = cpu_conv(a, b, 64, 48, 64, &p.conv[0], BORDER_ZERO, 4, err);
        create_fail_after = -1;
        CHECK(rc == EDGED_E_INTERNAL, "cpu_conv, thread %d fails: rc %d", after % 3 + 1, rc);
    }
    CHECK(cpu_run(&in, &p, &out, 4, err) == 0 && out.px, "cpu_run after the failures: %s", err);
out:
    img_free(&out);
    img_free(&in);
    free(b);
    free(a);
}

/* Allocation failures: with the address space capped just above what is in use, cpu_run on a large
 * image must fail with EDGED_E_NOMEM (or EDGED_E_INTERNAL when a thread stack cannot be mapped),
 * never crash, and leave no output. Skipped under sanitizers and valgrind (the cap starves them) and where
 * it is not enforced. */
static void test_alloc_failure(void)
{
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TEST_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(TEST_SANITIZER)
    SKIP("allocation failure test: an address-space cap breaks the sanitizer's allocator");
#else
    struct rlimit old, lim;
    struct img in = {0}, out = {0};
    struct filter_spec s;
    struct filter_plan p;
    char err[EDGED_ERR_LEN];
    long pages = 0, nomem = 0;
    int skipped = 0;
    const char *preload = getenv("LD_PRELOAD");
    FILE *f;

    if (preload && strstr(preload, "vgpreload")) { /* valgrind: the cap would starve valgrind itself */
        SKIP("allocation failure test: running under valgrind");
        return;
    }
    f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1 || getrlimit(RLIMIT_AS, &old) < 0) {
        if (f)
            fclose(f);
        SKIP("allocation failure test: no /proc/self/statm or getrlimit");
        return;
    }
    fclose(f);
    filter_spec_init(&s, FILTER_EDGE);
    if (filter_plan_make(&s, 3, &p, err) < 0 || random_img(&in, 2048, 1024, 3) < 0) {
        CHECK(0, "setup");
        return;
    }
    /* edge on 2048x1024 gray needs 3 float planes of 8 MB, the 2 MB output and a thread stack */
    for (int mb = 0; mb <= 60; mb += 4) {
        void *volatile probe; /* volatile: a compiler may drop an unused malloc/free pair */
        lim = old;
        lim.rlim_cur = (rlim_t)pages * 4096 + (rlim_t)mb * 1048576;
        if (setrlimit(RLIMIT_AS, &lim) < 0)
            break;
        probe = malloc((size_t)(mb + 64) * 1048576);
        if (probe) { /* the cap is not enforced here */
            free(probe);
            setrlimit(RLIMIT_AS, &old);
            SKIP("allocation failure test: RLIMIT_AS not enforced (valgrind?)");
            skipped = 1;
            break;
        }
        int rc = cpu_run(&in, &p, &out, 2, err);
        setrlimit(RLIMIT_AS, &old);
        CHECK(rc == 0 || ((rc == EDGED_E_NOMEM || rc == EDGED_E_INTERNAL) && out.px == NULL && err[0]),
              "cpu_run with %d MB spare: rc %d '%s'", mb, rc, rc ? err : "");
        nomem += rc == EDGED_E_NOMEM;
        img_free(&out);
    }
    setrlimit(RLIMIT_AS, &old);
    CHECK(skipped || nomem > 0, "no EDGED_E_NOMEM under the address-space cap");
    img_free(&in);
#endif
}

/* ---- pipelines (ops) ----------------------------------------------------------------------------- */

/* The 3-step pipeline gaussian 7 (rgb) -> sobel (gray) -> threshold 40, composed by hand from the
 * reference's single correlations in float: each channel blurred, the luma of the three blurred
 * planes, sqrtf(gx*gx + gy*gy), then >= 40 -> 255, into out (w*h floats), the magnitude after it. */
static void pipeline_by_hand(const struct img *in, enum border b, float *out)
{
    struct filter_spec s;
    struct kernel2d g, kx, ky;
    size_t n = (size_t)in->w * (size_t)in->h;
    float *c[3], *gx = malloc(n * sizeof(float)), *gy = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));

    filter_spec_init(&s, FILTER_GAUSSIAN);
    s.size = 7;
    filter_kernel(&s, &g, NULL);
    s = (struct filter_spec){.filter = FILTER_SOBEL_X};
    filter_kernel(&s, &kx, NULL);
    s.filter = FILTER_SOBEL_Y;
    filter_kernel(&s, &ky, NULL);
    for (int q = 0; q < 3; q++) {
        c[q] = malloc(n * sizeof(float));
        for (size_t i = 0; c[q] && gx && i < n; i++)
            gx[i] = in->px[(i / (size_t)in->w) * in->stride + (i % (size_t)in->w) * (size_t)in->ch + (size_t)q];
        if (c[q] && gx)
            cpu_serial_conv(gx, c[q], in->w, in->h, (size_t)in->w, &g, b);
    }
    if (!c[0] || !c[1] || !c[2] || !gx || !gy || !y) {
        CHECK(0, "pipeline by hand: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        y[i] = pixel_luma(c[0][i], c[1][i], c[2][i]);
    cpu_serial_conv(y, gx, in->w, in->h, (size_t)in->w, &kx, b);
    cpu_serial_conv(y, gy, in->w, in->h, (size_t)in->w, &ky, b);
    for (size_t i = 0; i < n; i++) {
        out[n + i] = sqrtf(gx[i] * gx[i] + gy[i] * gy[i]); /* the magnitude after the map, for the margin */
        out[i] = out[n + i] >= 40.0f ? 255.0f : 0.0f;
    }
out:
    for (int q = 0; q < 3; q++)
        free(c[q]);
    free(y);
    free(gy);
    free(gx);
}

/* cpu_serial runs the pipeline exactly as composed by hand (same floats, u8 = post of them);
 * cpu gives the same map except where the magnitude is within U8_MARGIN of the cut. */
static void test_pipeline(void)
{
    struct filter_spec ops[3];
    struct filter_plan *p = malloc(sizeof(*p));
    struct img in = {0}, os = {0}, oc = {0};
    char err[EDGED_ERR_LEN] = "";

    filter_spec_init(&ops[0], FILTER_GAUSSIAN);
    ops[0].size = 7;
    filter_spec_init(&ops[1], FILTER_SOBEL);
    filter_spec_init(&ops[2], FILTER_THRESHOLD);
    ops[2].value = 40.0f;
    for (int ch = 3; p && ch <= 4; ch++) {
        int w = 37 + ch, h = 23;
        size_t n = (size_t)w * h;
        float *want = malloc(2 * n * sizeof(float)), *got = malloc(n * sizeof(float));
        enum border b = (enum border)(ch % BORDER_COUNT);
        int bad = 0, rc;

        for (int i = 0; i < 3; i++)
            ops[i].border = b;
        if (!want || !got || random_img(&in, w, h, ch) < 0 || filter_pipeline_make(ops, 3, ch, p, err) < 0) {
            CHECK(0, "pipeline ch %d: setup: %s", ch, err);
            goto next;
        }
        pipeline_by_hand(&in, b, want);
        CHECK((rc = cpu_serial_compute(&in, p, got, err)) == 0, "pipeline ch %d: cpu_serial_compute: %s", ch, err);
        for (size_t i = 0; rc == 0 && i < n; i++)
            bad += got[i] != want[i];
        CHECK(rc == 0 && bad == 0, "pipeline ch %d: %d floats differ from the steps run by hand", ch, bad);
        CHECK((rc = cpu_serial_run(&in, p, &os, err)) == 0 && os.ch == ch - 2, "pipeline ch %d: serial run: %s", ch,
              err);
        CHECK((rc |= cpu_run(&in, p, &oc, 3, err)) == 0, "pipeline ch %d: cpu run: %s", ch, err);
        bad = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            size_t at = (i / (size_t)w) * os.stride + (i % (size_t)w) * (size_t)os.ch;
            uint8_t s = os.px[at], c = oc.px[(i / (size_t)w) * oc.stride + (i % (size_t)w) * (size_t)oc.ch];
            bad += s != pixel_post(want[i], POST_CLAMP, 0);
            bad += s != c && fabsf(want[n + i] - 40.0f) > U8_MARGIN;
            if (ch == 4)
                bad += os.px[at + 1] != in.px[(i / (size_t)w) * in.stride + (i % (size_t)w) * 4 + 3];
        }
        CHECK(rc == 0 && bad == 0, "pipeline ch %d: %d u8 samples wrong (serial vs by hand, cpu vs serial, alpha)", ch,
              bad);
    next:
        img_free(&oc);
        img_free(&os);
        img_free(&in);
        free(got);
        free(want);
    }
    free(p);
}

int main(void)
{
    const char *sm = getenv("EDGED_TEST_SMALL");

    check_rng_seed(check_seed());
    small_mode = sm && *sm && strcmp(sm, "0") != 0;
    test_bad_inputs();
    test_semantics();
    test_pipeline();
    test_default_border_no_frame();
    test_matrix_small();
    test_matrix_large();
    test_conv_random();
    test_thread_counts();
    test_shared_threads();
    test_thread_failure();
    test_alloc_failure();
    printf("worst |cpu - serial| / (sum|taps| * max|in|) = %.3g (tolerance %g); worst edge |dL| = %.3g\n"
           "u8 samples compared %ld: let off within %g of a boundary %ld, floats straddling one %ld\n",
           worst_rel, CONV_TOL, worst_edge, compared, U8_MARGIN, near_let_off, straddle_let_off);
    return check_summary();
}
