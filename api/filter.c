/* filter.c — exact taps of the filter bank and the resolution of a request into a plan. */
#include "filter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "image.h"
#include "variant.h"

struct filter_row {
    const char *name, *desc;
    enum color_mode color; /* what COLOR_AUTO means */
    enum post_mode post;   /* what POST_AUTO means */
    unsigned knobs;        /* bit (1u << FILTER_KNOB_*) per knob the filter takes */
    int gpu_fast_only;     /* 1: of the GPU variants only fast runs it */
};

#define KNOB(id) (1u << FILTER_KNOB_##id)
#define KNOBS_POST_ONLY KNOB(POST)

/* THE table of the filter bank: names, plain descriptions, defaults and the knobs each takes. */
static const struct filter_row filter_rows[FILTER_COUNT] = {
    [FILTER_EDGE] = {"edge", "gaussian5 -> laplacian3 -> |L| > threshold: binary edge map", COLOR_GRAY,
                     POST_THRESHOLD, KNOB(THRESHOLD) | KNOB(BIT_DEPTH)},
    [FILTER_GAUSSIAN5] = {"gaussian5", "5x5 Gaussian (1/289)[2,4,5,4,2]^T[2,4,5,4,2], sigma ~1.4", COLOR_RGB,
                          POST_CLAMP, KNOBS_POST_ONLY},
    [FILTER_GAUSSIAN] = {"gaussian", "Gaussian blur, odd size 3..63, sigma (default as OpenCV)", COLOR_RGB,
                         POST_CLAMP, KNOB(SIZE) | KNOB(SIGMA) | KNOB(POST)},
    [FILTER_LAPLACIAN3] = {"laplacian3", "3x3 Laplacian [[0,1,0],[1,-4,1],[0,1,0]]", COLOR_GRAY, POST_ABS,
                           KNOBS_POST_ONLY},
    [FILTER_LAPLACIAN8] = {"laplacian8", "3x3 Laplacian, all ones with centre -8", COLOR_GRAY, POST_ABS,
                           KNOBS_POST_ONLY},
    [FILTER_SOBEL_X] = {"sobel_x", "Sobel x derivative [-1 0 1; -2 0 2; -1 0 1]", COLOR_GRAY, POST_ABS,
                        KNOBS_POST_ONLY},
    [FILTER_SOBEL_Y] = {"sobel_y", "Sobel y derivative (transpose of sobel_x)", COLOR_GRAY, POST_ABS,
                        KNOBS_POST_ONLY},
    [FILTER_SOBEL] = {"sobel", "Sobel gradient magnitude sqrt(gx^2 + gy^2)", COLOR_GRAY, POST_CLAMP,
                      KNOBS_POST_ONLY},
    [FILTER_SCHARR_X] = {"scharr_x", "Scharr x derivative [-3 0 3; -10 0 10; -3 0 3] = [3 10 3]^T[-1 0 1]",
                         COLOR_GRAY, POST_ABS, KNOBS_POST_ONLY},
    [FILTER_SCHARR_Y] = {"scharr_y", "Scharr y derivative (transpose of scharr_x)", COLOR_GRAY, POST_ABS,
                         KNOBS_POST_ONLY},
    [FILTER_SCHARR] = {"scharr", "Scharr gradient magnitude sqrt(gx^2 + gy^2)", COLOR_GRAY, POST_CLAMP,
                       KNOBS_POST_ONLY},
    [FILTER_PREWITT_X] = {"prewitt_x", "Prewitt x derivative [-1 0 1; -1 0 1; -1 0 1] = [1 1 1]^T[-1 0 1]",
                          COLOR_GRAY, POST_ABS, KNOBS_POST_ONLY},
    [FILTER_PREWITT_Y] = {"prewitt_y", "Prewitt y derivative (transpose of prewitt_x)", COLOR_GRAY, POST_ABS,
                          KNOBS_POST_ONLY},
    [FILTER_PREWITT] = {"prewitt", "Prewitt gradient magnitude sqrt(gx^2 + gy^2)", COLOR_GRAY, POST_CLAMP,
                        KNOBS_POST_ONLY},
    [FILTER_SHARPEN] = {"sharpen", "5x5 sharpen: centre 8, inner ring 2, outer ring -1, divided by its sum 8",
                        COLOR_RGB, POST_CLAMP, KNOBS_POST_ONLY},
    [FILTER_EMBOSS] = {"emboss",
                       "5x5 emboss: -1 above-left of the anti-diagonal, +1 below-right, output offset by 128",
                       COLOR_RGB, POST_OFFSET, KNOBS_POST_ONLY},
    [FILTER_BOX] = {"box", "box blur (mean), odd size 3..63", COLOR_RGB, POST_CLAMP, KNOB(SIZE) | KNOB(POST)},
    [FILTER_CUSTOM] = {"custom", "your taps: odd rows x odd cols up to 63x63, optional normalisation",
                       COLOR_RGB, POST_CLAMP, KNOB(TAPS) | KNOB(NORMALIZE) | KNOB(POST)},
    [FILTER_CANNY] = {"canny",
                      "Canny edge map exactly as OpenCV's cv::Canny: Sobel of aperture 3/5/7, suppression, "
                      "hysteresis between low and high; optional gaussian pre-blur (sigma, size)",
                      COLOR_GRAY, POST_THRESHOLD,
                      KNOB(LOW) | KNOB(HIGH) | KNOB(APERTURE) | KNOB(L2GRADIENT) | KNOB(SIGMA) | KNOB(SIZE) |
                          KNOB(BIT_DEPTH),
                      1},
    [FILTER_THRESHOLD] = {"threshold", "255 where the value >= value (default 128), else 0: a binary map; in a "
                          "pipeline, of the float result of the step before",
                          COLOR_GRAY, POST_CLAMP, KNOB(VALUE) | KNOB(BIT_DEPTH)},
};

static const char *const knob_names[FILTER_KNOB_COUNT] = {
#define FILTER_KNOB_NAME(id, name) name,
    FILTER_KNOBS(FILTER_KNOB_NAME)
#undef FILTER_KNOB_NAME
};

static const char *const border_names[BORDER_COUNT] = {"zero", "replicate", "reflect"};
static const char *const color_names[COLOR_COUNT] = {"auto", "gray", "rgb"};
static const char *const post_names[POST_COUNT] = {"auto", "clamp", "abs", "offset", "threshold"};

static int name_find(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *filter_name(enum filter_id id) { return id < FILTER_COUNT ? filter_rows[id].name : "?"; }
const char *filter_description(enum filter_id id) { return id < FILTER_COUNT ? filter_rows[id].desc : "?"; }
const char *border_name(enum border b) { return b < BORDER_COUNT ? border_names[b] : "?"; }
const char *color_name(enum color_mode c) { return c < COLOR_COUNT ? color_names[c] : "?"; }
const char *post_name(enum post_mode p) { return p < POST_COUNT ? post_names[p] : "?"; }
int border_from_name(const char *name) { return name_find(border_names, BORDER_COUNT, name); }
int color_from_name(const char *name) { return name_find(color_names, COLOR_COUNT, name); }
int post_from_name(const char *name) { return name_find(post_names, POST_COUNT, name); }

int filter_takes(enum filter_id id, enum filter_knob k)
{
    return id < FILTER_COUNT && k < FILTER_KNOB_COUNT && (filter_rows[id].knobs & (1u << k)) != 0;
}

const char *filter_knob_name(enum filter_knob k) { return k < FILTER_KNOB_COUNT ? knob_names[k] : "?"; }

/* names[0..n) as "a", "a and b" or "a, b and c" into buf (at most cap bytes); returns buf. */
static char *english_list(const char *const *names, int n, char *buf, size_t cap)
{
    size_t pos = 0;

    buf[0] = '\0';
    for (int i = 0; i < n && pos < cap; i++)
        pos += (size_t)snprintf(buf + pos, cap - pos, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ", names[i]);
    return buf;
}

char *filter_knob_takers(enum filter_knob k, char *buf, size_t cap)
{
    const char *names[FILTER_COUNT];
    int n = 0;

    for (int f = 0; f < FILTER_COUNT; f++)
        if (filter_takes(f, k))
            names[n++] = filter_rows[f].name;
    return english_list(names, n, buf, cap);
}

int filter_variant_serves(enum filter_id id, int v)
{
    return id >= FILTER_COUNT || !filter_rows[id].gpu_fast_only || !variant_is_gpu((enum variant)v) ||
           v == VARIANT_FAST;
}

char *filter_variants_serving(enum filter_id id, char *buf, size_t cap)
{
    const char *names[VARIANT_COUNT];
    int n = 0;

    for (int v = 0; v < VARIANT_COUNT; v++)
        if (filter_variant_serves(id, v))
            names[n++] = variant_name((enum variant)v);
    return english_list(names, n, buf, cap);
}

int filter_canny_check(const struct canny_params *c, char *err)
{
    if (!isfinite(c->low) || c->low < 0.0f || c->low > FILTER_CANNY_MAX_THRESHOLD)
        return edged_fail(err, EDGED_E_PARAM, "low %g invalid: must be 0..%g", c->low,
                          (double)FILTER_CANNY_MAX_THRESHOLD);
    if (!isfinite(c->high) || c->high < c->low || c->high > FILTER_CANNY_MAX_THRESHOLD)
        return edged_fail(err, EDGED_E_PARAM, "high %g invalid: must be low (%g)..%g", c->high, c->low,
                          (double)FILTER_CANNY_MAX_THRESHOLD);
    if (c->aperture != 3 && c->aperture != 5 && c->aperture != 7)
        return edged_fail(err, EDGED_E_PARAM, "aperture %d invalid: must be 3, 5 or 7", c->aperture);
    if (c->l2gradient != 0 && c->l2gradient != 1)
        return edged_fail(err, EDGED_E_PARAM, "l2gradient %d invalid: must be 0 or 1", c->l2gradient);
    return 0;
}

int filter_from_name(const char *name)
{
    for (int i = 0; name && i < FILTER_COUNT; i++)
        if (strcmp(filter_rows[i].name, name) == 0)
            return i;
    return -1;
}

void filter_spec_init(struct filter_spec *spec, enum filter_id id)
{
    memset(spec, 0, sizeof(*spec));
    spec->filter = id;
    spec->border = BORDER_REFLECT; /* zero drew a frame around every derivative filter's result */
    spec->threshold = FILTER_DEFAULT_THRESHOLD;
    spec->canny = (struct canny_params){FILTER_CANNY_LOW, FILTER_CANNY_HIGH, FILTER_CANNY_APERTURE, 0};
    spec->value = FILTER_DEFAULT_VALUE;
}

double filter_gaussian_sigma(int n, double sigma)
{
    return sigma > 0.0 ? sigma : 0.3 * ((n - 1) * 0.5 - 1.0) + 0.8;
}

void filter_gaussian_1d(int n, double sigma, float *out)
{
    double g[FILTER_MAX_SIDE], sum = 0.0, c = (n - 1) / 2.0;

    sigma = filter_gaussian_sigma(n, sigma);
    for (int i = 0; i < n; i++) {
        g[i] = exp(-(i - c) * (i - c) / (2.0 * sigma * sigma));
        sum += g[i];
    }
    for (int i = 0; i < n; i++)
        out[i] = (float)(g[i] / sum);
}

/* Rank-1 test: take the largest tap as pivot, factor through its row and column, and accept when
 * the residuals summed over all taps stay within 1e-6 of sum|taps| (a bound on the difference
 * between the two-pass and the direct result, relative to the result's scale). */
void kernel_detect_separable(struct kernel2d *k)
{
    int pr = 0, pc = 0;
    double maxabs = 0.0, sumabs = 0.0, resid = 0.0;

    for (int i = 0; i < k->rows; i++)
        for (int j = 0; j < k->cols; j++) {
            double t = fabs(k->taps[i * k->cols + j]);
            sumabs += t;
            if (t > maxabs) {
                maxabs = t;
                pr = i;
                pc = j;
            }
        }
    k->separable = 1;
    if (maxabs == 0.0) {
        memset(k->row, 0, sizeof(k->row));
        memset(k->col, 0, sizeof(k->col));
        return;
    }
    for (int i = 0; i < k->rows; i++)
        k->col[i] = k->taps[i * k->cols + pc];
    for (int j = 0; j < k->cols; j++)
        k->row[j] = (float)((double)k->taps[pr * k->cols + j] / k->taps[pr * k->cols + pc]);
    for (int i = 0; i < k->rows; i++)
        for (int j = 0; j < k->cols; j++)
            resid += fabs(k->taps[i * k->cols + j] - (double)k->col[i] * k->row[j]);
    k->separable = resid <= 1e-6 * sumabs;
}

/* Taps as the outer product col^T row, with the factors kept exactly as given. */
static void kernel_outer(struct kernel2d *k, const float *col, int rows, const float *row, int cols)
{
    k->rows = rows;
    k->cols = cols;
    k->separable = 1;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            k->taps[i * cols + j] = col[i] * row[j];
    memcpy(k->col, col, sizeof(float) * rows);
    memcpy(k->row, row, sizeof(float) * cols);
}

/* Taps from a small integer table divided by div; separability detected. */
static void kernel_table(struct kernel2d *k, int n, const int *t, float div)
{
    k->rows = k->cols = n;
    for (int i = 0; i < n * n; i++)
        k->taps[i] = (float)t[i] / div;
    kernel_detect_separable(k);
}

static int odd_size(int size, int dflt, const char *what, char *err)
{
    if (size == 0)
        return dflt;
    if (size < 3 || size > FILTER_MAX_SIDE || size % 2 == 0)
        return edged_fail(err, EDGED_E_PARAM, "size %d invalid for %s: must be odd, 3..%d", size, what,
                          FILTER_MAX_SIDE);
    return size;
}

static int kernel_custom(const struct filter_spec *s, struct kernel2d *k, char *err)
{
    double sum = 0.0;
    int r = s->custom_rows, c = s->custom_cols;

    if (r < 1 || c < 1 || r > FILTER_MAX_SIDE || c > FILTER_MAX_SIDE || r % 2 == 0 || c % 2 == 0)
        return edged_fail(err, EDGED_E_PARAM, "taps is %dx%d: rows and cols must be odd, 1..%d", r, c,
                          FILTER_MAX_SIDE);
    k->rows = r;
    k->cols = c;
    for (int i = 0; i < r * c; i++) {
        if (!isfinite(s->custom_taps[i]))
            return edged_fail(err, EDGED_E_PARAM, "taps[%d][%d] is not a finite number", i / c, i % c);
        k->taps[i] = s->custom_taps[i];
        sum += s->custom_taps[i];
    }
    if (s->custom_normalize) {
        if (fabs(sum) < 1e-12)
            return edged_fail(err, EDGED_E_PARAM, "taps sum to 0 and cannot be normalised");
        for (int i = 0; i < r * c; i++) {
            k->taps[i] = (float)(k->taps[i] / sum);
            if (!isfinite(k->taps[i]))
                return edged_fail(err, EDGED_E_PARAM, "taps overflow when normalised by their sum %g", sum);
        }
    }
    kernel_detect_separable(k);
    return 0;
}

int filter_kernel(const struct filter_spec *s, struct kernel2d *k, char *err)
{
    static const int g5[5] = {2, 4, 5, 4, 2};
    static const int lap3[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    static const int lap8[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
    static const int sharpen[25] = {-1, -1, -1, -1, -1, -1, 2, 2, 2, -1, -1, 2, 8, 2, -1,
                                    -1, 2, 2, 2, -1, -1, -1, -1, -1, -1};
    static const int emboss[25] = {-1, -1, -1, -1, 0, -1, -1, -1, 0, 1, -1, -1, 0,
                                   1, 1, -1, 0, 1, 1, 1, 0, 1, 1, 1, 1};
    /* The derivative filters as (smoothing column, derivative row) factors: x is smooth^T deriv,
     * y its transpose deriv^T smooth; kept exact so that the separable variants take them. */
    static const float deriv[3] = {-1, 0, 1}, sobel_s[3] = {1, 2, 1}, scharr_s[3] = {3, 10, 3},
                       prewitt_s[3] = {1, 1, 1};
    float f[FILTER_MAX_SIDE];
    int n;

    memset(k, 0, sizeof(*k));
    switch (s->filter) {
    case FILTER_GAUSSIAN5:
        for (int i = 0; i < 5; i++)
            f[i] = g5[i] / 17.0f;
        kernel_outer(k, f, 5, f, 5);
        for (int i = 0; i < 25; i++) /* the exact taps; factors stay a/17 */
            k->taps[i] = (float)(g5[i / 5] * g5[i % 5]) / 289.0f;
        return 0;
    case FILTER_GAUSSIAN:
        if ((n = odd_size(s->size, 5, "gaussian", err)) < 0)
            return n;
        if (!isfinite(s->sigma) || s->sigma > 1000.0f)
            return edged_fail(err, EDGED_E_PARAM, "sigma %g invalid: must be finite, <= 1000", s->sigma);
        filter_gaussian_1d(n, s->sigma, f);
        kernel_outer(k, f, n, f, n);
        return 0;
    case FILTER_BOX:
        if ((n = odd_size(s->size, 3, "box", err)) < 0)
            return n;
        for (int i = 0; i < n; i++)
            f[i] = 1.0f / (float)n;
        kernel_outer(k, f, n, f, n);
        return 0;
    case FILTER_SOBEL_X:
    case FILTER_SCHARR_X:
    case FILTER_PREWITT_X:
        kernel_outer(k, s->filter == FILTER_SOBEL_X ? sobel_s : s->filter == FILTER_SCHARR_X ? scharr_s : prewitt_s,
                     3, deriv, 3);
        return 0;
    case FILTER_SOBEL_Y:
    case FILTER_SCHARR_Y:
    case FILTER_PREWITT_Y:
        kernel_outer(k, deriv, 3,
                     s->filter == FILTER_SOBEL_Y ? sobel_s : s->filter == FILTER_SCHARR_Y ? scharr_s : prewitt_s, 3);
        return 0;
    case FILTER_LAPLACIAN3:
        kernel_table(k, 3, lap3, 1.0f);
        return 0;
    case FILTER_LAPLACIAN8:
        kernel_table(k, 3, lap8, 1.0f);
        return 0;
    case FILTER_SHARPEN:
        kernel_table(k, 5, sharpen, 8.0f);
        return 0;
    case FILTER_EMBOSS:
        kernel_table(k, 5, emboss, 1.0f);
        return 0;
    case FILTER_CUSTOM:
        return kernel_custom(s, k, err);
    default:
        return edged_fail(err, EDGED_E_PARAM, "filter %s is a pipeline, not a single kernel",
                          filter_name(s->filter));
    }
}

/* Knobs given to a filter that does not take them are errors, so that typos are not ignored. */
static int check_knobs(const struct filter_spec *s, char *err)
{
    enum filter_id f = s->filter;
    char who[128];

    if (s->size != 0 && !filter_takes(f, FILTER_KNOB_SIZE))
        return edged_fail(err, EDGED_E_PARAM, "size applies to %s, not %s",
                          filter_knob_takers(FILTER_KNOB_SIZE, who, sizeof(who)), filter_name(f));
    if (s->sigma != 0.0f && !filter_takes(f, FILTER_KNOB_SIGMA))
        return edged_fail(err, EDGED_E_PARAM, "sigma applies to %s, not %s",
                          filter_knob_takers(FILTER_KNOB_SIGMA, who, sizeof(who)), filter_name(f));
    if (!isfinite(s->threshold) || s->threshold < 0.0f || s->threshold > 1e6f)
        return edged_fail(err, EDGED_E_PARAM, "threshold %g invalid: must be 0..1e6", s->threshold);
    if (s->post != POST_AUTO && !filter_takes(f, FILTER_KNOB_POST)) /* edge: its output is binary */
        return edged_fail(err, EDGED_E_PARAM, "post %s does not apply to %s (its output is binary)",
                          post_name(s->post), filter_name(f));
    if (s->post == POST_THRESHOLD)
        return edged_fail(err, EDGED_E_PARAM, "post must be clamp, abs or offset");
    if ((unsigned)s->border >= BORDER_COUNT || (unsigned)s->color >= COLOR_COUNT ||
        (unsigned)s->post >= POST_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "border, color or post out of range");
    return 0;
}

/* The kernels and combine of spec s as one step: its kernels go to k[0..st->nconv). */
static int step_kernels(const struct filter_spec *s, struct kernel2d *k, struct plan_step *st, char *err)
{
    struct filter_spec sub = *s;

    st->filter = s->filter;
    st->border = s->border;
    st->nconv = 2;
    switch (s->filter) {
    case FILTER_EDGE:
        st->combine = COMBINE_CHAIN;
        sub.filter = FILTER_GAUSSIAN5;
        filter_kernel(&sub, &k[0], err);
        sub.filter = FILTER_LAPLACIAN3;
        return filter_kernel(&sub, &k[1], err);
    case FILTER_SOBEL:
    case FILTER_SCHARR:
    case FILTER_PREWITT: /* the magnitude of the x and y filters listed just before it */
        st->combine = COMBINE_MAGNITUDE;
        sub.filter = s->filter - 2;
        filter_kernel(&sub, &k[0], err);
        sub.filter = s->filter - 1;
        return filter_kernel(&sub, &k[1], err);
    case FILTER_THRESHOLD:
        if (!isfinite(s->value) || fabsf(s->value) > FILTER_MAX_VALUE)
            return edged_fail(err, EDGED_E_PARAM, "value %g invalid: must be -%g..%g", s->value,
                              (double)FILTER_MAX_VALUE, (double)FILTER_MAX_VALUE);
        st->combine = COMBINE_THRESHOLD;
        st->value = s->value;
        st->nconv = 0;
        return 0;
    default:
        st->combine = COMBINE_SINGLE;
        st->nconv = 1;
        return filter_kernel(s, &k[0], err);
    }
}

/* The pre-blur's side when only sigma is given: GaussianBlur's rule for 8-bit images,
 * round(6 sigma + 1) made odd, within 3..FILTER_MAX_SIDE. */
static int canny_blur_side(float sigma)
{
    int n = (int)lrint(sigma * 6.0 + 1.0) | 1;

    return n < 3 ? 3 : n > FILTER_MAX_SIDE ? FILTER_MAX_SIDE : n;
}

/* Canny: one gray plane, a binary map without alpha; a gaussian pre-blur (conv[0]) when sigma or
 * size is given, none otherwise. */
static int plan_canny(const struct filter_spec *s, int in_ch, struct filter_plan *p, char *err)
{
    struct filter_spec g = *s;
    int rc;

    if ((rc = filter_canny_check(&s->canny, err)) < 0)
        return rc;
    if (s->color == COLOR_RGB)
        return edged_fail(err, EDGED_E_PARAM, "color rgb does not apply to canny: it works on the gray image");
    p->filter = FILTER_CANNY;
    p->combine = COMBINE_SINGLE;
    p->border = s->border;
    p->post = POST_THRESHOLD;
    p->threshold = s->threshold;
    p->in_ch = in_ch;
    p->gray = 1;
    p->planes = p->out_ch = 1;
    p->canny = s->canny;
    p->nsteps = 1;
    p->step[0] = (struct plan_step){.filter = FILTER_CANNY, .combine = COMBINE_SINGLE, .border = s->border};
    if (s->sigma <= 0.0f && s->size == 0)
        return 0;
    g.filter = FILTER_GAUSSIAN;
    g.size = s->size ? s->size : canny_blur_side(s->sigma);
    p->nconv = 1;
    return filter_kernel(&g, &p->conv[0], err);
}

int filter_plan_make(const struct filter_spec *s, int in_ch, struct filter_plan *p, char *err)
{
    int rc;
    enum color_mode color;

    memset(p, 0, sizeof(*p));
    if ((unsigned)s->filter >= FILTER_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "filter id %d unknown", (int)s->filter);
    if (in_ch < 1 || in_ch > 4)
        return edged_fail(err, EDGED_E_PARAM, "input has %d channels: must be 1..4", in_ch);
    if ((rc = check_knobs(s, err)) < 0)
        return rc;
    if (s->filter == FILTER_CANNY)
        return plan_canny(s, in_ch, p, err);
    if ((rc = step_kernels(s, p->conv, &p->step[0], err)) < 0)
        return rc;
    p->nsteps = 1;
    p->nconv = p->step[0].nconv;
    p->combine = p->step[0].combine;
    color = s->color == COLOR_AUTO ? filter_rows[s->filter].color : s->color;
    p->filter = s->filter;
    p->border = s->border;
    p->post = s->post == POST_AUTO ? filter_rows[s->filter].post : s->post;
    p->threshold = s->threshold;
    p->in_ch = in_ch;
    p->gray = color == COLOR_GRAY && in_ch >= 3;
    p->planes = (in_ch >= 3 && !p->gray) ? 3 : 1;
    p->out_ch = p->planes + ((in_ch == 2 || in_ch == 4) ? 1 : 0);
    return 0;
}

/* Step i of a pipeline (spec s) appended to p, whose planes so far are p->planes. */
static int pipeline_step(const struct filter_spec *s, int i, int n, struct filter_plan *p, char *err)
{
    struct plan_step *st = &p->step[i];
    enum color_mode color = s->color == COLOR_AUTO ? filter_rows[s->filter].color : s->color;
    char m[EDGED_ERR_LEN] = "";
    int rc;

    if (s->filter == FILTER_CANNY)
        return edged_fail(err, EDGED_E_PARAM, "ops[%d]: canny runs alone, not in a pipeline", i);
    if (s->filter == FILTER_EDGE && i != n - 1)
        return edged_fail(err, EDGED_E_PARAM, "ops[%d]: edge gives a binary map and may only be the last step", i);
    if (s->post != POST_AUTO && i != n - 1)
        return edged_fail(err, EDGED_E_PARAM, "ops[%d]: post applies to the last step only (the steps before "
                          "pass on float values)", i);
    if ((rc = check_knobs(s, m)) < 0 || (rc = step_kernels(s, p->conv + p->nconv, st, m)) < 0)
        return edged_fail(err, rc, "ops[%d]: %s", i, m);
    if (i > 0 && s->color == COLOR_RGB && p->planes == 1 && p->in_ch >= 3)
        return edged_fail(err, EDGED_E_PARAM, "ops[%d]: color rgb after a step that made the image gray", i);
    if (i == 0)
        p->gray = color == COLOR_GRAY && p->in_ch >= 3;
    else
        st->to_gray = color == COLOR_GRAY && p->planes == 3;
    if (i == 0 || st->to_gray)
        p->planes = (p->in_ch >= 3 && !p->gray && !st->to_gray) ? 3 : 1;
    st->conv0 = p->nconv;
    p->nconv += st->nconv;
    p->nsteps = i + 1;
    p->filter = s->filter;
    p->combine = st->combine;
    p->border = s->border;
    p->post = s->post == POST_AUTO ? filter_rows[s->filter].post : s->post;
    p->threshold = s->threshold;
    return 0;
}

int filter_pipeline_make(const struct filter_spec *steps, int n, int in_ch, struct filter_plan *p, char *err)
{
    int rc;

    memset(p, 0, sizeof(*p));
    if (n < 1 || n > FILTER_MAX_STEPS)
        return edged_fail(err, EDGED_E_PARAM, "ops: %d steps; a pipeline has 1..%d (FILTER_MAX_STEPS)", n,
                          FILTER_MAX_STEPS);
    if (in_ch < 1 || in_ch > 4)
        return edged_fail(err, EDGED_E_PARAM, "input has %d channels: must be 1..4", in_ch);
    p->in_ch = in_ch;
    for (int i = 0; i < n; i++) {
        if ((unsigned)steps[i].filter >= FILTER_COUNT)
            return edged_fail(err, EDGED_E_PARAM, "ops[%d]: filter id %d unknown", i, (int)steps[i].filter);
        if ((rc = pipeline_step(&steps[i], i, n, p, err)) < 0)
            return rc;
    }
    p->out_ch = p->planes + ((in_ch == 2 || in_ch == 4) ? 1 : 0);
    return 0;
}

int filter_plan_stepwise(const struct filter_plan *p)
{
    return p->nsteps > 1 || (p->nsteps == 1 && p->step[0].combine == COMBINE_THRESHOLD);
}

double filter_plan_taps(const struct filter_plan *p)
{
    double n = 0.0;

    for (int i = 0; i < p->nconv; i++)
        n += (double)p->conv[i].rows * p->conv[i].cols;
    return n;
}

int filter_kernel_check(const struct kernel2d *k, char *err)
{
    if (k->rows < 1 || k->cols < 1 || k->rows > FILTER_MAX_SIDE || k->cols > FILTER_MAX_SIDE ||
        k->rows % 2 == 0 || k->cols % 2 == 0)
        return edged_fail(err, EDGED_E_PARAM, "kernel is %dx%d: rows and cols must be odd, 1..%d", k->rows,
                          k->cols, FILTER_MAX_SIDE);
    for (int i = 0; i < k->rows * k->cols; i++)
        if (!isfinite(k->taps[i]))
            return edged_fail(err, EDGED_E_PARAM, "kernel tap [%d][%d] is not finite", i / k->cols, i % k->cols);
    return 0;
}

/* A canny plan: as plan_canny makes it. */
static int canny_plan_check(const struct filter_plan *p, char *err)
{
    int rc;

    if ((p->nconv != 0 && p->nconv != 1) || p->combine != COMBINE_SINGLE)
        return edged_fail(err, EDGED_E_PARAM, "canny plan has %d kernels for combine %d", p->nconv, (int)p->combine);
    if ((unsigned)p->border >= BORDER_COUNT || p->post != POST_THRESHOLD)
        return edged_fail(err, EDGED_E_PARAM, "canny plan border %d or post %d out of range", (int)p->border,
                          (int)p->post);
    if (p->in_ch < 1 || p->in_ch > 4 || !p->gray || p->planes != 1 || p->out_ch != 1)
        return edged_fail(err, EDGED_E_PARAM, "canny plan channels in %d, planes %d, out %d are inconsistent",
                          p->in_ch, p->planes, p->out_ch);
    if ((rc = filter_canny_check(&p->canny, err)) < 0)
        return rc;
    return p->nconv ? filter_kernel_check(&p->conv[0], err) : 0;
}

/* The steps: kernel counts that fit their combine, kernels in order, borders and cuts in range. */
static int steps_check(const struct filter_plan *p, int *gray_later, char *err)
{
    static const int want_nconv[] = {[COMBINE_SINGLE] = 1, [COMBINE_MAGNITUDE] = 2, [COMBINE_CHAIN] = 2,
                                     [COMBINE_THRESHOLD] = 0};
    int nconv = 0;

    *gray_later = 0;
    if (p->nsteps < 1 || p->nsteps > FILTER_MAX_STEPS || p->nconv < 0 || p->nconv > FILTER_PLAN_MAX_CONVS)
        return edged_fail(err, EDGED_E_PARAM, "plan has %d steps and %d kernels", p->nsteps, p->nconv);
    for (int i = 0; i < p->nsteps; i++) {
        const struct plan_step *st = &p->step[i];
        if ((unsigned)st->combine > COMBINE_THRESHOLD || st->nconv != want_nconv[st->combine] ||
            st->conv0 != nconv || (unsigned)st->border >= BORDER_COUNT || !isfinite(st->value) ||
            (st->to_gray && i == 0))
            return edged_fail(err, EDGED_E_PARAM, "plan step %d is inconsistent (combine %d, %d kernels from %d)",
                              i, (int)st->combine, st->nconv, st->conv0);
        nconv += st->nconv;
        *gray_later |= st->to_gray;
    }
    if (nconv != p->nconv || (p->nsteps == 1 && p->combine != p->step[0].combine))
        return edged_fail(err, EDGED_E_PARAM, "plan has %d kernels, its steps %d", p->nconv, nconv);
    return 0;
}

int filter_plan_check(const struct filter_plan *p, char *err)
{
    int gray_later = 0, want_planes, rc;

    if (p->filter == FILTER_CANNY)
        return canny_plan_check(p, err);
    if ((rc = steps_check(p, &gray_later, err)) < 0)
        return rc;
    want_planes = (p->in_ch >= 3 && !p->gray && !gray_later) ? 3 : 1;
    if ((unsigned)p->border >= BORDER_COUNT || p->post == POST_AUTO || (unsigned)p->post >= POST_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "plan border %d or post %d out of range", (int)p->border,
                          (int)p->post);
    if (p->in_ch < 1 || p->in_ch > 4 || (p->gray && p->in_ch < 3) || p->planes != want_planes ||
        p->out_ch != p->planes + (img_has_alpha(p->in_ch) ? 1 : 0))
        return edged_fail(err, EDGED_E_PARAM, "plan channels in %d, planes %d, out %d are inconsistent",
                          p->in_ch, p->planes, p->out_ch);
    for (int i = 0; i < p->nconv; i++)
        if ((rc = filter_kernel_check(&p->conv[i], err)) < 0)
            return rc;
    return 0;
}
