/* test_cpu_serial.c — hand-computed correlations for every border, on cpu_serial_conv and cpu_conv. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu.h"
#include "cpu_serial.h"
#include "errors.h"
#include "filter.h"
#include "image.h"
#include "pixel.h"

#define PITCH_PAD 3          /* extra floats per row in the strided runs, filled with NaN */
#define SENTINEL -777.0f     /* what the output's row gaps hold before and after */
#define MAX_W 8

static const int thread_counts[] = {1, 2, 3, 7};

static void custom_kernel(struct kernel2d *k, int rows, int cols, const float *taps)
{
    struct filter_spec s;
    char err[EDGED_ERR_LEN] = "";

    filter_spec_init(&s, FILTER_CUSTOM);
    s.custom_rows = rows;
    s.custom_cols = cols;
    memcpy(s.custom_taps, taps, sizeof(float) * (size_t)(rows * cols));
    CHECK(filter_kernel(&s, k, err) == 0, "custom %dx%d: %s", rows, cols, err);
}

/* Runs in (w x h, packed) through cpu_serial_conv and cpu_conv (each thread count), packed and with
 * a pitch of w + PITCH_PAD whose gaps hold NaN on input and must stay untouched on output. Each
 * result must equal want: serial within tol_serial, cpu within tol_cpu (absolute). */
static void check_conv(const char *what, const float *in, int w, int h, const struct kernel2d *k, enum border b,
                       const float *want, float tol_serial, float tol_cpu)
{
    size_t pitch = (size_t)w + PITCH_PAD;
    float src[MAX_W * MAX_W + 64], dst[MAX_W * MAX_W + 64];
    char err[EDGED_ERR_LEN];

    for (int run = 0; run < 1 + 2 * (int)(sizeof(thread_counts) / sizeof(thread_counts[0])); run++) {
        int cpu = run > 0, strided = run > 0 && run % 2 == 0;
        int threads = cpu ? thread_counts[(run - 1) / 2] : 0;
        size_t p = strided || !cpu ? pitch : (size_t)w;
        float tol = cpu ? tol_cpu : tol_serial;
        int rc = 0;

        for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
            src[i] = NAN;
            dst[i] = SENTINEL;
        }
        for (int y = 0; y < h; y++)
            memcpy(src + (size_t)y * p, in + y * w, sizeof(float) * (size_t)w);
        if (cpu)
            rc = cpu_conv(src, dst, w, h, p, k, b, threads, err);
        else
            cpu_serial_conv(src, dst, w, h, p, k, b);
        CHECK(rc == 0, "%s %s: cpu_conv: %s", what, border_name(b), err);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                float got = dst[(size_t)y * p + x], exp = want[y * w + x];
                CHECK(fabsf(got - exp) <= tol, "%s %s %s (threads %d, pitch %zu): (%d,%d) = %.7g, want %.7g", what,
                      border_name(b), cpu ? "cpu" : "serial", threads, p, x, y, got, exp);
            }
            for (size_t x = (size_t)w; x < p; x++)
                CHECK(dst[(size_t)y * p + x] == SENTINEL, "%s: row gap (%zu,%d) written", what, x, y);
        }
    }
}

/* The 4x3 image in(x, y) = 4y + x + 1:
 *     1  2  3  4
 *     5  6  7  8
 *     9 10 11 12
 * Kernel A (not separable), anchor at the centre, correlation (no flip):
 *     0  1  0
 *     2 10  0
 *     0  0 -1
 * so out(x,y) = in(x,y-1) + 2 in(x-1,y) + 10 in(x,y) - in(x+1,y+1). */
static const float img43[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const float kern_a[9] = {0, 1, 0, 2, 10, 0, 0, 0, -1};

static void test_kernel_a(void)
{
    /* zero: outside samples are 0.
     * y0: x0: 0+0+10-6=4      x1: 0+2*1+20-7=15   x2: 0+2*2+30-8=26   x3: 0+2*3+40-0=46
     * y1: x0: 1+0+50-10=41    x1: 2+2*5+60-11=61  x2: 3+2*6+70-12=73  x3: 4+2*7+80-0=98
     * y2: x0: 5+0+90-0=95     x1: 6+2*9+100=124   x2: 7+2*10+110=137  x3: 8+2*11+120=150 */
    static const float zero[12] = {4, 15, 26, 46, 41, 61, 73, 98, 95, 124, 137, 150};
    /* replicate: x=-1 -> 0, x=4 -> 3, y=-1 -> 0, y=3 -> 2.
     * y0: x0: 1+2*1+10-6=7    x1: 2+2*1+20-7=17   x2: 3+2*2+30-8=29   x3: 4+2*3+40-8=42
     * y1: x0: 1+2*5+50-10=51  x1: 2+10+60-11=61   x2: 3+12+70-12=73   x3: 4+14+80-12=86
     * y2: x0: 5+2*9+90-10=103 x1: 6+18+100-11=113 x2: 7+20+110-12=125 x3: 8+22+120-12=138 */
    static const float repl[12] = {7, 17, 29, 42, 51, 61, 73, 86, 103, 113, 125, 138};
    /* reflect (101): x=-1 -> 1, x=4 -> 2, y=-1 -> 1, y=3 -> 1.
     * y0: x0: 5+2*2+10-6=13   x1: 6+2*1+20-7=21   x2: 7+2*2+30-8=33   x3: 8+2*3+40-7=47
     * y1: x0: 1+2*6+50-10=53  x1: 2+10+60-11=61   x2: 3+12+70-12=73   x3: 4+14+80-11=87
     * y2: x0: 5+2*10+90-6=109 x1: 6+18+100-7=117  x2: 7+20+110-8=129  x3: 8+22+120-7=143 */
    static const float refl[12] = {13, 21, 33, 47, 53, 61, 73, 87, 109, 117, 129, 143};
    struct kernel2d k;

    custom_kernel(&k, 3, 3, kern_a);
    CHECK(!k.separable, "kernel A must not be separable");
    /* Integer sums below 2^24 are exact in float on both paths. */
    check_conv("4x3 kernel A", img43, 4, 3, &k, BORDER_ZERO, zero, 0.0f, 0.0f);
    check_conv("4x3 kernel A", img43, 4, 3, &k, BORDER_REPLICATE, repl, 0.0f, 0.0f);
    check_conv("4x3 kernel A", img43, 4, 3, &k, BORDER_REFLECT, refl, 0.0f, 0.0f);
}

/* Kernel B = [1 0 -1]^T [1 2 3] (rank 1: cpu takes the two-pass path):
 *     1  2  3
 *     0  0  0
 *    -1 -2 -3
 * Row pass R(x,y) = in(x-1,y) + 2 in(x,y) + 3 in(x+1,y); out(x,y) = R(x,y-1) - R(x,y+1).
 * For a row a b c d: zero R = 2a+3b, a+2b+3c, b+2c+3d, c+2d; replicate R = 3a+3b, .., .., c+5d;
 * reflect R = 2a+4b, .., .., 4c+2d. */
static const float kern_b[9] = {1, 2, 3, 0, 0, 0, -1, -2, -3};

static void test_kernel_b(void)
{
    /* zero: R rows 0,1,2 = [8 14 20 11], [28 38 44 23], [48 62 68 35]
     * y0 = 0 - R1, y1 = R0 - R2, y2 = R1 - 0 */
    static const float zero[12] = {-28, -38, -44, -23, -40, -48, -48, -24, 28, 38, 44, 23};
    /* replicate: R = [9 14 20 23], [33 38 44 47], [57 62 68 71]; y=-1 -> 0, y=3 -> 2
     * y0 = R0 - R1 = -24 each, y1 = R0 - R2 = -48 each, y2 = R1 - R2 = -24 each */
    static const float repl[12] = {-24, -24, -24, -24, -48, -48, -48, -48, -24, -24, -24, -24};
    /* reflect: R = [10 14 20 20], [34 38 44 44], [58 62 68 68]; y=-1 -> 1, y=3 -> 1
     * y0 = R1 - R1 = 0, y1 = R0 - R2 = -48 each, y2 = R1 - R1 = 0 */
    static const float refl[12] = {0, 0, 0, 0, -48, -48, -48, -48, 0, 0, 0, 0};
    struct kernel2d k;
    /* The two-pass factors are col = [3 0 -3], row = [1/3 2/3 1]: not exact in float, so cpu
     * is held to its promise, 1e-4 of sum|taps| * max|in| = 1e-4 * 12 * 12. */
    float tol = 1e-4f * 12.0f * 12.0f;

    custom_kernel(&k, 3, 3, kern_b);
    CHECK(k.separable, "kernel B must be detected separable");
    check_conv("4x3 kernel B", img43, 4, 3, &k, BORDER_ZERO, zero, 0.0f, tol);
    check_conv("4x3 kernel B", img43, 4, 3, &k, BORDER_REPLICATE, repl, 0.0f, tol);
    check_conv("4x3 kernel B", img43, 4, 3, &k, BORDER_REFLECT, refl, 0.0f, tol);
}

/* A 1x1 image of 7 under a 5x5 kernel: zero keeps only the centre tap; replicate and reflect
 * (n = 1: every index folds to 0) see 7 everywhere, so out = 7 * sum(taps). */
static void test_one_pixel(void)
{
    float taps[25], px = 7.0f, want;
    struct kernel2d k;
    struct filter_spec s;
    char err[EDGED_ERR_LEN];

    for (int i = 0; i < 25; i++)
        taps[i] = (float)(i + 1); /* 1..25, centre 13, sum 325; rank 2 */
    custom_kernel(&k, 5, 5, taps);
    want = 13.0f * 7.0f; /* 91 */
    check_conv("1x1 taps 1..25", &px, 1, 1, &k, BORDER_ZERO, &want, 0.0f, 0.0f);
    want = 325.0f * 7.0f; /* 2275 */
    check_conv("1x1 taps 1..25", &px, 1, 1, &k, BORDER_REPLICATE, &want, 0.0f, 0.0f);
    check_conv("1x1 taps 1..25", &px, 1, 1, &k, BORDER_REFLECT, &want, 0.0f, 0.0f);

    filter_spec_init(&s, FILTER_GAUSSIAN5); /* separable; centre tap 25/289, taps sum to 1 */
    CHECK(filter_kernel(&s, &k, err) == 0, "gaussian5: %s", err);
    want = 7.0f * 25.0f / 289.0f;
    check_conv("1x1 gaussian5", &px, 1, 1, &k, BORDER_ZERO, &want, 1e-6f, 1e-5f);
    want = 7.0f;
    check_conv("1x1 gaussian5", &px, 1, 1, &k, BORDER_REPLICATE, &want, 1e-5f, 1e-5f);
    check_conv("1x1 gaussian5", &px, 1, 1, &k, BORDER_REFLECT, &want, 1e-5f, 1e-5f);
}

/* Reflect with a radius larger than the image folds repeatedly (period 2n-2). */
static void test_reflect_wide(void)
{
    /* [a b] = [1 10], 1x7 taps [1 2 4 8 16 32 64] (radius 3 > n = 2):
     * x=0 reads indices -3..3 -> 1 0 1 0 1 0 1 = b a b a b a b: 85*10 + 42*1 = 892
     * x=1 reads indices -2..4 -> 0 1 0 1 0 1 0 = a b a b a b a: 85*1 + 42*10 = 505 */
    static const float two[2] = {1, 10}, taps7[7] = {1, 2, 4, 8, 16, 32, 64}, want2[2] = {892, 505};
    /* [a b c] = [1 10 100], 1x9 taps 1..9 (radius 4 > n = 3, period 4):
     * x=0: -4..4 -> 0 1 2 1 0 1 2 1 0: a(1+5+9) + b(2+4+6+8) + c(3+7) = 15 + 200 + 1000 = 1215
     * x=1: -3..5 -> 1 2 1 0 1 2 1 0 1: a(4+8) + b(1+3+5+7+9) + c(2+6) = 12 + 250 + 800 = 1062
     * x=2: -2..6 -> 2 1 0 1 2 1 0 1 2: a(3+7) + b(2+4+6+8) + c(1+5+9) = 10 + 200 + 1500 = 1710 */
    static const float three[3] = {1, 10, 100}, taps9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, want3[3] = {1215, 1062, 1710};
    struct kernel2d k;

    custom_kernel(&k, 1, 7, taps7);
    check_conv("2x1 reflect 1x7", two, 2, 1, &k, BORDER_REFLECT, want2, 0.0f, 0.0f);
    custom_kernel(&k, 7, 1, taps7); /* the same along columns: a 1x2 image */
    check_conv("1x2 reflect 7x1", two, 1, 2, &k, BORDER_REFLECT, want2, 0.0f, 0.0f);
    custom_kernel(&k, 1, 9, taps9);
    check_conv("3x1 reflect 1x9", three, 3, 1, &k, BORDER_REFLECT, want3, 0.0f, 0.0f);
    custom_kernel(&k, 9, 1, taps9);
    check_conv("1x3 reflect 9x1", three, 1, 3, &k, BORDER_REFLECT, want3, 0.0f, 0.0f);
}

static void test_border_index(void)
{
    static const struct {
        int i, n, b, want;
    } cases[] = {
        /* reflect-101, n = 1: everything folds to 0 */
        {-1, 1, BORDER_REFLECT, 0}, {1, 1, BORDER_REFLECT, 0}, {-1000, 1, BORDER_REFLECT, 0},
        {999, 1, BORDER_REFLECT, 0},
        /* n = 2: period 2: ... 0 1 | 0 1 | 0 1 ... */
        {-1, 2, BORDER_REFLECT, 1}, {-2, 2, BORDER_REFLECT, 0}, {-3, 2, BORDER_REFLECT, 1},
        {2, 2, BORDER_REFLECT, 0}, {3, 2, BORDER_REFLECT, 1}, {100, 2, BORDER_REFLECT, 0},
        {-101, 2, BORDER_REFLECT, 1},
        /* n = 3: period 4: ... 2 1 | 0 1 2 | 1 0 1 2 1 0 ... */
        {-1, 3, BORDER_REFLECT, 1}, {-2, 3, BORDER_REFLECT, 2}, {-3, 3, BORDER_REFLECT, 1},
        {-4, 3, BORDER_REFLECT, 0}, {3, 3, BORDER_REFLECT, 1}, {4, 3, BORDER_REFLECT, 0},
        {5, 3, BORDER_REFLECT, 1}, {6, 3, BORDER_REFLECT, 2}, {1000, 3, BORDER_REFLECT, 0},
        {-1001, 3, BORDER_REFLECT, 1}, {1001, 3, BORDER_REFLECT, 1},
        /* n = 5: OpenCV's gfedcb|abcdefgh|gfedcba shape: -1 -> 1, -2 -> 2, 5 -> 3, 6 -> 2 */
        {-1, 5, BORDER_REFLECT, 1}, {-2, 5, BORDER_REFLECT, 2}, {5, 5, BORDER_REFLECT, 3},
        {6, 5, BORDER_REFLECT, 2},
        /* replicate clamps, zero says -1 */
        {-1, 3, BORDER_REPLICATE, 0}, {-100, 3, BORDER_REPLICATE, 0}, {3, 3, BORDER_REPLICATE, 2},
        {1000, 3, BORDER_REPLICATE, 2}, {-1, 1, BORDER_REPLICATE, 0}, {-1, 3, BORDER_ZERO, -1},
        {3, 3, BORDER_ZERO, -1}, {-1000, 3, BORDER_ZERO, -1},
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int got = border_index(cases[c].i, cases[c].n, cases[c].b);
        CHECK(got == cases[c].want, "border_index(%d, %d, %s) = %d, want %d", cases[c].i, cases[c].n,
              border_name((enum border)cases[c].b), got, cases[c].want);
    }
    for (int b = 0; b < BORDER_COUNT; b++)
        for (int n = 1; n <= 4; n++)
            for (int i = 0; i < n; i++)
                CHECK(border_index(i, n, b) == i, "border_index(%d, %d, %s) not the identity inside", i, n,
                      border_name((enum border)b));
}

/* cpu_conv refuses bad arguments with EDGED_E_PARAM and a message, writing nothing. */
static void test_conv_args(void)
{
    float in[16] = {0}, out[16];
    struct kernel2d k, even; /* `even`: a broken copy of k */
    char err[EDGED_ERR_LEN];
    const float one = 1.0f;

    custom_kernel(&k, 1, 1, &one);
    even = k;
    even.rows = 2;
#define BADCALL(call, what)                                                                        \
    do {                                                                                           \
        err[0] = '\0';                                                                             \
        for (int i = 0; i < 16; i++)                                                               \
            out[i] = SENTINEL;                                                                     \
        int rc_ = (call);                                                                          \
        CHECK(rc_ == EDGED_E_PARAM && err[0] && out[0] == SENTINEL, "%s: rc %d '%s'", what, rc_, err); \
    } while (0)
    BADCALL(cpu_conv(in, in, 4, 4, 4, &k, BORDER_ZERO, 1, err), "in == out");
    BADCALL(cpu_conv(in, out, 0, 4, 4, &k, BORDER_ZERO, 1, err), "w 0");
    BADCALL(cpu_conv(in, out, 4, -1, 4, &k, BORDER_ZERO, 1, err), "h -1");
    BADCALL(cpu_conv(in, out, 4, 4, 3, &k, BORDER_ZERO, 1, err), "pitch < w");
    BADCALL(cpu_conv(in, out, 4, 4, 4, &k, BORDER_ZERO, -1, err), "threads -1");
    BADCALL(cpu_conv(in, out, 4, 4, 4, &k, (enum border)BORDER_COUNT, 1, err), "border out of range");
    BADCALL(cpu_conv(in, out, 4, 4, 4, &even, BORDER_ZERO, 1, err), "2x1 kernel");
    BADCALL(cpu_conv(NULL, out, 4, 4, 4, &k, BORDER_ZERO, 1, err), "NULL input");
    even = k;
    even.taps[0] = INFINITY;
    BADCALL(cpu_conv(in, out, 4, 4, 4, &even, BORDER_ZERO, 1, err), "infinite tap");
#undef BADCALL
}

/* Runs filter f on the 6x4 gray image in through cpu_serial_run and cpu_run (each thread count) and
 * compares the u8 result with want where want >= 0 (-1: not checked). */
static void check_plan_u8(enum filter_id f, const uint8_t *in, const int *want, const char *what)
{
    struct filter_spec s;
    struct filter_plan p;
    struct img src = {6, 4, 1, 6, (uint8_t *)in, 0}, out = {0};
    char err[EDGED_ERR_LEN] = "";

    filter_spec_init(&s, f);
    if (filter_plan_make(&s, 1, &p, err) < 0) {
        CHECK(0, "%s %s: %s", filter_name(f), what, err);
        return;
    }
    for (int run = 0; run <= (int)(sizeof(thread_counts) / sizeof(thread_counts[0])); run++) {
        int rc = run ? cpu_run(&src, &p, &out, thread_counts[run - 1], err) : cpu_serial_run(&src, &p, &out, err);
        CHECK(rc == 0, "%s %s: %s", filter_name(f), what, err);
        for (int i = 0; rc == 0 && i < 24; i++)
            CHECK(want[i] < 0 || out.px[(i / 6) * out.stride + i % 6] == want[i],
                  "%s %s (run %d): (%d,%d) = %d, want %d", filter_name(f), what, run, i % 6, i / 6,
                  out.px[(i / 6) * out.stride + i % 6], want[i]);
        img_free(&out);
    }
}

/* Scharr and Prewitt (and Sobel beside them) on a vertical step edge and a ramp, reflect border.
 * Step 0 | 20 between columns 2 and 3: the x derivative in(x+1) - in(x-1) is 20 at x = 2 and 3 and
 * 0 elsewhere (reflect-101 repeats in(1) at x = -1), scaled by the column sum of the smoothing
 * factor: sobel 4 (80), prewitt 3 (60), scharr 16 (320, clamped to 255); y derivatives are 0.
 * Ramp in = 2x + 5y: inside, dx = 4, dy = 10: prewitt 12 and 30, magnitude sqrt(1044) = 32.31 -> 32;
 * scharr 64 and 160, magnitude sqrt(29696) = 172.33 -> 172. */
static void test_gradient_filters(void)
{
    static const struct {
        enum filter_id f;
        int ramp, value; /* ramp: inside pixels only; step: value at x = 2, 3 and 0 elsewhere */
    } cases[] = {
        {FILTER_SOBEL_X, 0, 80},    {FILTER_PREWITT_X, 0, 60}, {FILTER_PREWITT, 0, 60},
        {FILTER_SCHARR_X, 0, 255},  {FILTER_SCHARR, 0, 255},   {FILTER_SCHARR_Y, 0, 0},
        {FILTER_PREWITT_Y, 0, 0},   {FILTER_PREWITT_X, 1, 12}, {FILTER_PREWITT_Y, 1, 30},
        {FILTER_PREWITT, 1, 32},    {FILTER_SCHARR_X, 1, 64},  {FILTER_SCHARR_Y, 1, 160},
        {FILTER_SCHARR, 1, 172},
    };
    uint8_t step[24], ramp[24];
    int want[24];

    for (int i = 0; i < 24; i++) {
        step[i] = (uint8_t)(i % 6 >= 3 ? 20 : 0);
        ramp[i] = (uint8_t)(2 * (i % 6) + 5 * (i / 6));
    }
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int i = 0; i < 24; i++) {
            int x = i % 6, y = i / 6;
            if (cases[c].ramp)
                want[i] = (x >= 1 && x <= 4 && y >= 1 && y <= 2) ? cases[c].value : -1;
            else
                want[i] = (x == 2 || x == 3) ? cases[c].value : 0;
        }
        check_plan_u8(cases[c].f, cases[c].ramp ? ramp : step, want, cases[c].ramp ? "ramp" : "step");
    }
}

int main(void)
{
    (void)check_seed(); /* no random data here; printed for the uniform log */
    test_border_index();
    test_kernel_a();
    test_kernel_b();
    test_one_pixel();
    test_reflect_wide();
    test_conv_args();
    test_gradient_filters();
    return check_summary();
}
