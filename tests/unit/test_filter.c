/* test_filter.c — the filter bank: exact taps, separability, plan channel rules, invalid knobs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "filter.h"

static int kernel_of(enum filter_id id, int size, float sigma, struct kernel2d *k)
{
    struct filter_spec s;
    char err[EDGED_ERR_LEN] = "";

    filter_spec_init(&s, id);
    s.size = size;
    s.sigma = sigma;
    int rc = filter_kernel(&s, k, err);
    CHECK(rc == 0, "%s size %d sigma %g: rc %d (%s)", filter_name(id), size, sigma, rc, err);
    return rc;
}

/* Taps equal the integer table t (row-major, n x n) divided by div, to the float. */
static void check_table(enum filter_id id, int n, const int *t, float div)
{
    struct kernel2d k;

    if (kernel_of(id, 0, 0.0f, &k) < 0)
        return;
    CHECK(k.rows == n && k.cols == n, "%s is %dx%d, want %dx%d", filter_name(id), k.rows, k.cols, n, n);
    for (int i = 0; i < n * n && k.rows == n && k.cols == n; i++)
        CHECK(k.taps[i] == (float)t[i] / div, "%s tap [%d][%d] = %.9g, want %d/%g", filter_name(id), i / n, i % n,
              k.taps[i], t[i], div);
}

/* col[i]*row[j] reproduces every tap within 1e-6 of the largest (the filter.h promise). */
static void check_factors(const struct kernel2d *k, const char *what)
{
    float maxabs = 0.0f, worst = 0.0f;

    for (int i = 0; i < k->rows * k->cols; i++)
        maxabs = fmaxf(maxabs, fabsf(k->taps[i]));
    for (int i = 0; i < k->rows; i++)
        for (int j = 0; j < k->cols; j++)
            worst = fmaxf(worst, fabsf(k->taps[i * k->cols + j] - k->col[i] * k->row[j]));
    CHECK(worst <= 1e-6f * maxabs, "%s: factors miss a tap by %g (largest tap %g)", what, worst, maxabs);
}

static void test_fixed_taps(void)
{
    static const int lap3[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    static const int lap8[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
    static const int sobx[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    static const int soby[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
    static const int schx[9] = {-3, 0, 3, -10, 0, 10, -3, 0, 3};
    static const int schy[9] = {-3, -10, -3, 0, 0, 0, 3, 10, 3};
    static const int prwx[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};
    static const int prwy[9] = {-1, -1, -1, 0, 0, 0, 1, 1, 1};
    /* The Zagreb report's 5x5 sharpen (sum 8, divided by it) and emboss (sum 0). */
    static const int sharpen[25] = {-1, -1, -1, -1, -1, -1, 2, 2, 2, -1, -1, 2, 8,
                                    2,  -1, -1, 2,  2,  2, -1, -1, -1, -1, -1, -1};
    static const int emboss[25] = {-1, -1, -1, -1, 0, -1, -1, -1, 0, 1, -1, -1, 0,
                                   1,  1,  -1, 0,  1,  1, 1,  0,  1, 1, 1,  1};
    static const int a[5] = {2, 4, 5, 4, 2};
    int g5[25];
    struct kernel2d k;
    double sum = 0.0;

    for (int i = 0; i < 25; i++)
        g5[i] = a[i / 5] * a[i % 5];
    check_table(FILTER_GAUSSIAN5, 5, g5, 289.0f); /* a_i * a_j / 289, a = [2,4,5,4,2], sum 17^2 */
    check_table(FILTER_LAPLACIAN3, 3, lap3, 1.0f);
    check_table(FILTER_LAPLACIAN8, 3, lap8, 1.0f);
    check_table(FILTER_SOBEL_X, 3, sobx, 1.0f);
    check_table(FILTER_SOBEL_Y, 3, soby, 1.0f);
    check_table(FILTER_SCHARR_X, 3, schx, 1.0f);
    check_table(FILTER_SCHARR_Y, 3, schy, 1.0f);
    check_table(FILTER_PREWITT_X, 3, prwx, 1.0f);
    check_table(FILTER_PREWITT_Y, 3, prwy, 1.0f);
    check_table(FILTER_SHARPEN, 5, sharpen, 8.0f);
    check_table(FILTER_EMBOSS, 5, emboss, 1.0f);
    if (kernel_of(FILTER_GAUSSIAN5, 0, 0.0f, &k) == 0) {
        for (int i = 0; i < 25; i++)
            sum += k.taps[i];
        CHECK(fabs(sum - 1.0) < 1e-6, "gaussian5 taps sum to %.9g", sum);
    }
}

static void test_box(void)
{
    struct kernel2d k;

    if (kernel_of(FILTER_BOX, 0, 0.0f, &k) == 0)
        CHECK(k.rows == 3 && k.cols == 3, "box default size is %dx%d, want 3x3", k.rows, k.cols);
    for (int n = 3; n <= FILTER_MAX_SIDE; n += 2) {
        double want = 1.0 / ((double)n * n), worst = 0.0;
        if (kernel_of(FILTER_BOX, n, 0.0f, &k) < 0)
            continue;
        CHECK(k.rows == n && k.cols == n, "box %d is %dx%d", n, k.rows, k.cols);
        for (int i = 0; i < n * n; i++)
            worst = fmax(worst, fabs(k.taps[i] - want));
        /* taps are (1/n)*(1/n) in float (the factors' product): within 2 ulp of 1/n^2 */
        CHECK(worst <= 2.4e-7 * want, "box %d: a tap is off 1/n^2 by %g", n, worst);
    }
}

/* Direct computation of the Gaussian in double: g_i = exp(-(i-c)^2 / (2 sigma^2)) / sum, with
 * OpenCV's default sigma 0.3*((n-1)*0.5 - 1) + 0.8 when sigma <= 0. */
static void gaussian_direct(int n, double sigma, double *g)
{
    double c = (n - 1) / 2.0, sum = 0.0;

    if (sigma <= 0.0)
        sigma = 0.3 * ((n - 1) * 0.5 - 1.0) + 0.8;
    for (int i = 0; i < n; i++)
        sum += g[i] = exp(-(i - c) * (i - c) / (2.0 * sigma * sigma));
    for (int i = 0; i < n; i++)
        g[i] /= sum;
}

static void test_gaussian(void)
{
    static const float sigmas[] = {0.0f, -1.0f, 0.3f, 1.4f, 5.0f, 100.0f};
    struct kernel2d k;
    double g[FILTER_MAX_SIDE];

    if (kernel_of(FILTER_GAUSSIAN, 0, 0.0f, &k) == 0)
        CHECK(k.rows == 5 && k.cols == 5, "gaussian default size is %dx%d, want 5x5", k.rows, k.cols);
    for (int n = 3; n <= FILTER_MAX_SIDE; n += 2)
        for (size_t s = 0; s < sizeof(sigmas) / sizeof(sigmas[0]); s++) {
            double sum = 0.0, worst = 0.0, sum1 = 0.0;
            if (kernel_of(FILTER_GAUSSIAN, n, sigmas[s], &k) < 0)
                continue;
            gaussian_direct(n, sigmas[s], g);
            for (int i = 0; i < n; i++) {
                sum1 += k.row[i];
                worst = fmax(worst, fabs(k.row[i] - g[i]));
                worst = fmax(worst, fabs(k.col[i] - g[i]));
                for (int j = 0; j < n; j++) {
                    sum += k.taps[i * n + j];
                    worst = fmax(worst, fabs(k.taps[i * n + j] - g[i] * g[j]));
                }
            }
            CHECK(worst < 1e-6, "gaussian %d sigma %g: off the direct computation by %g", n, sigmas[s], worst);
            CHECK(fabs(sum - 1.0) < 1e-5 && fabs(sum1 - 1.0) < 1e-6, "gaussian %d sigma %g sums to %.9g (1-D %.9g)",
                  n, sigmas[s], sum, sum1);
            CHECK(k.separable, "gaussian %d sigma %g not separable", n, sigmas[s]);
        }
    /* filter_gaussian_1d directly, default sigma. */
    for (int n = 3; n <= FILTER_MAX_SIDE; n += 2) {
        float f[FILTER_MAX_SIDE];
        double worst = 0.0;
        filter_gaussian_1d(n, 0.0, f);
        gaussian_direct(n, 0.0, g);
        for (int i = 0; i < n; i++)
            worst = fmax(worst, fabs(f[i] - g[i]));
        CHECK(worst < 1e-7, "filter_gaussian_1d(%d, default) off by %g", n, worst);
    }
}

static void test_separable_flags(void)
{
    static const struct {
        enum filter_id id;
        int size, separable;
    } cases[] = {
        {FILTER_GAUSSIAN5, 0, 1}, {FILTER_GAUSSIAN, 0, 1},   {FILTER_GAUSSIAN, 63, 1}, {FILTER_BOX, 0, 1},
        {FILTER_BOX, 25, 1},      {FILTER_SOBEL_X, 0, 1},    {FILTER_SOBEL_Y, 0, 1},   {FILTER_LAPLACIAN3, 0, 0},
        {FILTER_LAPLACIAN8, 0, 0}, {FILTER_SHARPEN, 0, 0},   {FILTER_EMBOSS, 0, 0},
        {FILTER_SCHARR_X, 0, 1},  {FILTER_SCHARR_Y, 0, 1},  {FILTER_PREWITT_X, 0, 1}, {FILTER_PREWITT_Y, 0, 1},
    };
    struct kernel2d k;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (kernel_of(cases[i].id, cases[i].size, 0.0f, &k) < 0)
            continue;
        CHECK(k.separable == cases[i].separable, "%s size %d: separable %d, want %d", filter_name(cases[i].id),
              cases[i].size, k.separable, cases[i].separable);
        if (k.separable)
            check_factors(&k, filter_name(cases[i].id));
    }
}

/* Random custom kernels: an outer product col x row (rank 1) must be detected and factored; the
 * sum of two outer products with factors in +-[0.5, 1) (rank 2) must not. */
static void test_custom_rank(void)
{
    struct filter_spec s;
    struct kernel2d k;
    char err[EDGED_ERR_LEN];

    for (int t = 0; t < 200; t++) {
        int r = check_rng_odd(1, FILTER_MAX_SIDE), c = check_rng_odd(1, FILTER_MAX_SIDE), rank2 = t % 2;
        float u[FILTER_MAX_SIDE], v[FILTER_MAX_SIDE], p[FILTER_MAX_SIDE], q[FILTER_MAX_SIDE];
        for (int i = 0; i < FILTER_MAX_SIDE; i++) {
            u[i] = check_rng_float(-2.0f, 2.0f);
            v[i] = check_rng_float(-2.0f, 2.0f);
            p[i] = check_rng_float(0.5f, 1.0f) * (check_rng() & 1 ? 1.0f : -1.0f);
            q[i] = check_rng_float(0.5f, 1.0f) * (check_rng() & 1 ? 1.0f : -1.0f);
        }
        if (rank2 && (r == 1 || c == 1)) /* a single row or column is always rank 1 */
            r = c = 3;
        filter_spec_init(&s, FILTER_CUSTOM);
        s.custom_rows = r;
        s.custom_cols = c;
        for (int i = 0; i < r; i++)
            for (int j = 0; j < c; j++)
                s.custom_taps[i * c + j] = u[i] * v[j] + (rank2 ? p[i] * q[j] : 0.0f);
        int rc = filter_kernel(&s, &k, err);
        CHECK(rc == 0, "custom %dx%d: %s", r, c, err);
        if (rc < 0)
            continue;
        CHECK(k.rows == r && k.cols == c && memcmp(k.taps, s.custom_taps, sizeof(float) * r * c) == 0,
              "custom %dx%d taps not kept as given", r, c);
        CHECK(k.separable == !rank2, "custom %dx%d rank %d: separable %d", r, c, rank2 + 1, k.separable);
        if (k.separable)
            check_factors(&k, "custom rank 1");
    }
    /* Normalisation divides by the sum. */
    filter_spec_init(&s, FILTER_CUSTOM);
    s.custom_rows = 1;
    s.custom_cols = 3;
    s.custom_taps[0] = 1.0f, s.custom_taps[1] = 2.0f, s.custom_taps[2] = 5.0f;
    s.custom_normalize = 1;
    if (filter_kernel(&s, &k, err) == 0)
        CHECK(k.taps[0] == 0.125f && k.taps[1] == 0.25f && k.taps[2] == 0.625f, "normalised [1 2 5] = [%g %g %g]",
              k.taps[0], k.taps[1], k.taps[2]);
    else
        CHECK(0, "custom 1x3 normalised: %s", err);
}

/* The colour and post rules each filter resolves AUTO to (the README's table). */
static enum color_mode default_color(enum filter_id f)
{
    switch (f) {
    case FILTER_EDGE:
    case FILTER_LAPLACIAN3:
    case FILTER_LAPLACIAN8:
    case FILTER_SOBEL_X:
    case FILTER_SOBEL_Y:
    case FILTER_SOBEL:
    case FILTER_SCHARR_X:
    case FILTER_SCHARR_Y:
    case FILTER_SCHARR:
    case FILTER_PREWITT_X:
    case FILTER_PREWITT_Y:
    case FILTER_PREWITT:
        return COLOR_GRAY;
    default:
        return COLOR_RGB;
    }
}

static enum post_mode default_post(enum filter_id f)
{
    switch (f) {
    case FILTER_EDGE:
        return POST_THRESHOLD;
    case FILTER_LAPLACIAN3:
    case FILTER_LAPLACIAN8:
    case FILTER_SOBEL_X:
    case FILTER_SOBEL_Y:
    case FILTER_SCHARR_X:
    case FILTER_SCHARR_Y:
    case FILTER_PREWITT_X:
    case FILTER_PREWITT_Y:
        return POST_ABS;
    case FILTER_EMBOSS:
        return POST_OFFSET;
    default:
        return POST_CLAMP;
    }
}

static void check_plan_kernels(const struct filter_plan *p, enum filter_id f)
{
    struct kernel2d k0, k1;

    if (f == FILTER_EDGE || f == FILTER_SOBEL || f == FILTER_SCHARR || f == FILTER_PREWITT) {
        int edge = f == FILTER_EDGE;
        kernel_of(edge ? FILTER_GAUSSIAN5 : f - 2, 0, 0.0f, &k0); /* the magnitude's x and y filters */
        kernel_of(edge ? FILTER_LAPLACIAN3 : f - 1, 0, 0.0f, &k1);
        CHECK(p->nconv == 2 && p->combine == (edge ? COMBINE_CHAIN : COMBINE_MAGNITUDE), "%s: nconv %d combine %d",
              filter_name(f), p->nconv, (int)p->combine);
        CHECK(memcmp(p->conv[0].taps, k0.taps, sizeof(k0.taps)) == 0 &&
                  memcmp(p->conv[1].taps, k1.taps, sizeof(k1.taps)) == 0,
              "%s: plan kernels are not %s then %s", filter_name(f), edge ? "gaussian5" : filter_name(f - 2),
              edge ? "laplacian3" : filter_name(f - 1));
    } else {
        CHECK(p->nconv == 1 && p->combine == COMBINE_SINGLE, "%s: nconv %d combine %d", filter_name(f), p->nconv,
              (int)p->combine);
    }
}

static void test_plan_channels(void)
{
    struct filter_spec s;
    struct filter_plan p;
    char err[EDGED_ERR_LEN];

    for (int f = 0; f < FILTER_CANNY; f++) /* canny's plan (gray, no alpha): test_canny.c */
        for (int ch = 1; ch <= 4; ch++)
            for (int c = 0; c < COLOR_COUNT; c++) {
                enum color_mode eff = c == COLOR_AUTO ? default_color((enum filter_id)f) : (enum color_mode)c;
                int gray = eff == COLOR_GRAY && ch >= 3, planes = (ch >= 3 && !gray) ? 3 : 1;
                int out_ch = planes + (ch == 2 || ch == 4);
                filter_spec_init(&s, (enum filter_id)f);
                s.color = (enum color_mode)c;
                s.border = (enum border)(check_rng() % BORDER_COUNT);
                s.threshold = (float)(check_rng() % 50);
                if (f == FILTER_CUSTOM) {
                    s.custom_rows = s.custom_cols = 3;
                    s.custom_taps[4] = 1.0f;
                }
                int rc = filter_plan_make(&s, ch, &p, err);
                CHECK(rc == 0, "%s ch %d color %s: %s", filter_name(f), ch, color_name(c), err);
                if (rc < 0)
                    continue;
                CHECK(p.gray == gray && p.planes == planes && p.out_ch == out_ch && p.in_ch == ch,
                      "%s ch %d color %s: gray %d planes %d out_ch %d, want %d %d %d", filter_name(f), ch,
                      color_name(c), p.gray, p.planes, p.out_ch, gray, planes, out_ch);
                CHECK(p.post == default_post((enum filter_id)f) && p.border == s.border &&
                          p.threshold == s.threshold && (int)p.filter == f,
                      "%s: post %s border %s threshold %g", filter_name(f), post_name(p.post), border_name(p.border),
                      p.threshold);
                check_plan_kernels(&p, (enum filter_id)f);
            }
    /* An explicit post wins over the filter's default. */
    filter_spec_init(&s, FILTER_LAPLACIAN3);
    s.post = POST_OFFSET;
    CHECK(filter_plan_make(&s, 1, &p, err) == 0 && p.post == POST_OFFSET, "laplacian3 post offset: %s",
          post_name(p.post));
}

/* spec with one knob wrong: filter_plan_make must say EDGED_E_PARAM with a message. */
static void expect_param(const struct filter_spec *s, int in_ch, const char *what)
{
    struct filter_plan p;
    char err[EDGED_ERR_LEN] = "";
    int rc = filter_plan_make(s, in_ch, &p, err);

    CHECK(rc == EDGED_E_PARAM && err[0] != '\0', "%s: rc %d, message '%s'", what, rc, err);
}

static void test_invalid(void)
{
    struct filter_spec s;

#define BAD(id, ch, stmt, what)                                                                    \
    do {                                                                                           \
        filter_spec_init(&s, id);                                                                  \
        stmt;                                                                                      \
        expect_param(&s, ch, what);                                                                \
    } while (0)
    BAD(FILTER_GAUSSIAN, 3, s.size = 4, "gaussian even size 4");
    BAD(FILTER_BOX, 3, s.size = 6, "box even size 6");
    BAD(FILTER_BOX, 3, s.size = 1, "box size 1");
    BAD(FILTER_GAUSSIAN, 3, s.size = 65, "gaussian size 65");
    BAD(FILTER_BOX, 3, s.size = -3, "box size -3");
    BAD(FILTER_SOBEL, 1, s.size = 5, "size for sobel");
    BAD(FILTER_SOBEL_X, 1, s.size = 3, "size for sobel_x");
    BAD(FILTER_EDGE, 1, s.size = 5, "size for edge");
    BAD(FILTER_BOX, 3, s.sigma = 1.0f, "sigma for box");
    BAD(FILTER_GAUSSIAN5, 3, s.sigma = 2.0f, "sigma for gaussian5");
    BAD(FILTER_GAUSSIAN, 3, s.sigma = NAN, "gaussian sigma NaN");
    BAD(FILTER_GAUSSIAN, 3, s.sigma = INFINITY, "gaussian sigma inf");
    BAD(FILTER_GAUSSIAN, 3, s.sigma = 1001.0f, "gaussian sigma 1001");
    BAD(FILTER_EDGE, 1, s.post = POST_CLAMP, "post clamp for edge");
    BAD(FILTER_EDGE, 1, s.post = POST_THRESHOLD, "post threshold for edge");
    BAD(FILTER_BOX, 3, s.post = POST_THRESHOLD, "post threshold for box");
    BAD(FILTER_BOX, 3, s.post = (enum post_mode)POST_COUNT, "post out of range");
    BAD(FILTER_BOX, 3, s.border = (enum border)BORDER_COUNT, "border out of range");
    BAD(FILTER_BOX, 3, s.color = (enum color_mode)COLOR_COUNT, "color out of range");
    BAD((enum filter_id)FILTER_COUNT, 3, (void)0, "filter id out of range");
    BAD(FILTER_BOX, 0, (void)0, "0 input channels");
    BAD(FILTER_BOX, 5, (void)0, "5 input channels");
    BAD(FILTER_EDGE, 1, s.threshold = -1.0f, "negative threshold");
    BAD(FILTER_EDGE, 1, s.threshold = NAN, "NaN threshold");
    BAD(FILTER_CUSTOM, 3, (s.custom_rows = 2, s.custom_cols = 3), "custom 2x3");
    BAD(FILTER_CUSTOM, 3, (s.custom_rows = 3, s.custom_cols = 4), "custom 3x4");
    BAD(FILTER_CUSTOM, 3, (s.custom_rows = 0, s.custom_cols = 3), "custom 0x3");
    BAD(FILTER_CUSTOM, 3, (s.custom_rows = 65, s.custom_cols = 1), "custom 65x1");
    BAD(FILTER_CUSTOM, 3, (s.custom_rows = 1, s.custom_cols = 3, s.custom_taps[0] = 1.0f, s.custom_taps[2] = -1.0f,
                           s.custom_normalize = 1),
        "custom normalise, zero sum");
    BAD(FILTER_CUSTOM, 3, (s.custom_rows = 3, s.custom_cols = 3, s.custom_taps[4] = NAN), "custom NaN tap");
    BAD(FILTER_CUSTOM, 3, (s.custom_rows = 3, s.custom_cols = 3, s.custom_taps[8] = -INFINITY), "custom -inf tap");
#undef BAD
}

static void test_names(void)
{
    for (int f = 0; f < FILTER_COUNT; f++)
        CHECK(filter_from_name(filter_name((enum filter_id)f)) == f, "filter name %s", filter_name(f));
    for (int b = 0; b < BORDER_COUNT; b++)
        CHECK(border_from_name(border_name((enum border)b)) == b, "border name %s", border_name(b));
    CHECK(filter_from_name("nope") == -1 && border_from_name("wrap") == -1, "unknown names give -1");
}

int main(void)
{
    check_rng_seed(check_seed());
    test_fixed_taps();
    test_box();
    test_gaussian();
    test_separable_flags();
    test_custom_rank();
    test_plan_channels();
    test_invalid();
    test_names();
    return check_summary();
}
