/* filter.h — the filter bank: what a request asks for (filter_spec), the exact taps
 * (kernel2d) and the plan every backend executes (filter_plan). */
#ifndef EDGED_FILTER_H
#define EDGED_FILTER_H

#include <stddef.h>

#include "pixel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FILTER_MAX_SIDE 63 /* largest kernel side (odd) */
#define FILTER_MAX_TAPS (FILTER_MAX_SIDE * FILTER_MAX_SIDE)
#define FILTER_DEFAULT_THRESHOLD 5.0f
#define FILTER_DEFAULT_VALUE 128.0f /* threshold: the cut */
#define FILTER_MAX_VALUE 1e6f       /* threshold: |value| at most this */
#define FILTER_MAX_STEPS 8          /* steps of a pipeline (request `ops`) */
#define FILTER_PLAN_MAX_CONVS (2 * FILTER_MAX_STEPS) /* kernels of a plan: two a step at most */

/* Each gradient magnitude (sobel, scharr, prewitt) follows its _x and _y filters, in that order
 * (filter_plan_make relies on it). */
enum filter_id {
    FILTER_EDGE,
    FILTER_GAUSSIAN5,
    FILTER_GAUSSIAN,
    FILTER_LAPLACIAN3,
    FILTER_LAPLACIAN8,
    FILTER_SOBEL_X,
    FILTER_SOBEL_Y,
    FILTER_SOBEL,
    FILTER_SCHARR_X,
    FILTER_SCHARR_Y,
    FILTER_SCHARR,
    FILTER_PREWITT_X,
    FILTER_PREWITT_Y,
    FILTER_PREWITT,
    FILTER_SHARPEN,
    FILTER_EMBOSS,
    FILTER_BOX,
    FILTER_CUSTOM,
    FILTER_CANNY,
    FILTER_THRESHOLD,
    FILTER_COUNT
};

enum color_mode { COLOR_AUTO, COLOR_GRAY, COLOR_RGB, COLOR_COUNT };

/* The knobs that only some filters take, by their request names, in the order GET /v1/filters
 * lists them. Every filter also takes the common ones (variant, block, border, color, output,
 * png_level). Which filter takes which is the one table in filter.c (filter_takes); the request
 * parser, the checks of a spec and the catalogue all read it. */
#define FILTER_KNOBS(X)                                                                                      \
    X(THRESHOLD, "threshold") /* edge: |L| > threshold */                                                    \
    X(TAPS, "taps")           /* custom: the kernel */                                                       \
    X(NORMALIZE, "normalize") /* custom: divide the taps by their sum */                                     \
    X(SIZE, "size")           /* kernel side */                                                              \
    X(SIGMA, "sigma")         /* gaussian width */                                                           \
    X(BIT_DEPTH, "bit_depth") /* 1: a 1-bit PNG of a binary map (8 is every filter's default) */             \
    X(POST, "post")           /* how a float result becomes 8 bits (a binary map has none) */           \
    X(LOW, "low")             /* canny: the low threshold */                                           \
    X(HIGH, "high")           /* canny: the high threshold */                                          \
    X(APERTURE, "aperture")   /* canny: the Sobel aperture 3, 5, 7 */                                  \
    X(L2GRADIENT, "l2gradient") /* canny: Euclidean gradient norm */                         \
    X(VALUE, "value")         /* threshold: 255 where v >= value */

enum filter_knob {
#define FILTER_KNOB_ENUM(id, name) FILTER_KNOB_##id,
    FILTER_KNOBS(FILTER_KNOB_ENUM)
#undef FILTER_KNOB_ENUM
    FILTER_KNOB_COUNT
};

/* Canny's knobs (filter canny), as cv::Canny takes them: thresholds on the gradient magnitude
 * (low <= high), the Sobel aperture (3, 5 or 7) and the norm (0: |gx|+|gy|, 1: Euclidean). */
struct canny_params {
    float low, high;
    int aperture;
    int l2gradient;
};

/* Canny's defaults; low and high take 0..FILTER_CANNY_MAX_THRESHOLD. */
#define FILTER_CANNY_LOW 50.0f
#define FILTER_CANNY_HIGH 150.0f
#define FILTER_CANNY_APERTURE 3
#define FILTER_CANNY_MAX_THRESHOLD 1e6f

/* A request: which filter and its knobs. Zero-initialise, then set what the caller gave. */
struct filter_spec {
    enum filter_id filter;
    enum border border;   /* default BORDER_REFLECT */
    enum color_mode color; /* default COLOR_AUTO */
    enum post_mode post;   /* default POST_AUTO (per filter) */
    int size;              /* gaussian, box: odd 3..63; 0 = default (5 gaussian, 3 box) */
    float sigma;           /* gaussian: <= 0 = OpenCV's default sigma 0.3*((size-1)/2-1)+0.8 */
    float threshold;       /* edge: |L| > threshold; set by filter_spec_init to 5 */
    int custom_rows, custom_cols; /* custom: odd, 1..63 */
    int custom_normalize;         /* custom: divide taps by their sum (which must not be 0) */
    float custom_taps[FILTER_MAX_TAPS]; /* custom: row-major */
    struct canny_params canny;          /* canny: set by filter_spec_init to the FILTER_CANNY_* defaults */
    float value;                        /* threshold: set by filter_spec_init to FILTER_DEFAULT_VALUE */
};

/* Taps of one correlation, row-major, anchor at the centre: out(x,y) =
 * sum_ij taps[i*cols+j] * in(x + j - cols/2, y + i - rows/2). When separable, the taps equal
 * col[i]*row[j] with a total residual sum|taps - col*row| <= 1e-6 * sum|taps|, so a row pass
 * with row[] followed by a column pass with col[] computes the same correlation. */
struct kernel2d {
    int rows, cols;
    int separable;
    float taps[FILTER_MAX_TAPS];
    float row[FILTER_MAX_SIDE], col[FILTER_MAX_SIDE];
};

/* How a step's convolutions (none, one or two) combine.
 * SINGLE: out = conv0(x). MAGNITUDE: out = sqrt(conv0(x)^2 + conv1(x)^2) (sobel, scharr, prewitt).
 * CHAIN: out = conv1(conv0(x)), both with the step's border (edge).
 * THRESHOLD: no kernel; out = 255 where x >= value, else 0 (threshold). */
enum combine { COMBINE_SINGLE, COMBINE_MAGNITUDE, COMBINE_CHAIN, COMBINE_THRESHOLD };

/* One step of a plan: what it does to every float plane. Its kernels are conv[conv0 .. conv0+nconv)
 * of the plan. to_gray: the three planes become one, their luma (pixel_luma on the floats), before
 * the step runs (a gray step after rgb ones). */
struct plan_step {
    enum filter_id filter;
    enum combine combine;
    int conv0, nconv;
    enum border border;
    int to_gray;
    float value; /* THRESHOLD: the cut */
};

/* What every backend executes for one image; made by filter_plan_make (one filter) or
 * filter_pipeline_make (a request's `ops`), nothing left on AUTO. Float planes: `planes` of them at
 * the end, each w*h; plane p is the luma (gray) or channel p (rgb) of the input filtered. The steps
 * run one after another on float planes, nothing rounded between them; post turns the last
 * step's floats into u8 once. The u8 output has out_ch channels: planes, then alpha copied from
 * the input when the input has alpha (in_ch 2 or 4).
 * A single filter is one step, and filter, combine, border mirror step[0] (the fields every path
 * reads); a pipeline has filter, combine and border of its last step. */
struct filter_plan {
    enum filter_id filter;
    enum combine combine;
    int nconv; /* kernels in conv[], all steps together: 0..FILTER_PLAN_MAX_CONVS (1 or 2 for most filters) */
    struct kernel2d conv[FILTER_PLAN_MAX_CONVS];
    int nsteps; /* 1..FILTER_MAX_STEPS */
    struct plan_step step[FILTER_MAX_STEPS];
    enum border border;
    int gray;  /* convert RGB to luma when loading the planes (the first step is gray) */
    enum post_mode post; /* resolved: never POST_AUTO */
    float threshold;
    int in_ch, planes, out_ch;
    int accept_packed; /* 1: the caller takes the binary map packed (struct img packed) where the
                        * backend makes it so (1-bit responses; filter_plan_make sets 0) */
    struct canny_params canny; /* filter canny only */
};

/* Sets defaults: filter id, reflect border, auto colour and post, threshold 5. */
void filter_spec_init(struct filter_spec *spec, enum filter_id id);

/* Builds the taps of a single-kernel filter (not edge or the magnitudes sobel, scharr and prewitt,
 * which are plans of two). */
int filter_kernel(const struct filter_spec *spec, struct kernel2d *k, char *err);

/* Resolves spec for an input of in_ch channels into a plan. Returns 0 or EDGED_E_PARAM with a
 * message naming the field and value. */
int filter_plan_make(const struct filter_spec *spec, int in_ch, struct filter_plan *plan, char *err);

/* Resolves the n steps of a pipeline (1..FILTER_MAX_STEPS; each spec exactly as one filter's) into
 * one plan: each step's colour rule applies where it runs (a gray step after rgb ones takes the
 * luma of the float planes; color rgb after a gray step is refused), post is the last step's,
 * canny is refused and edge may only be the last step. 0 or EDGED_E_PARAM naming the step,
 * "ops[i]: ...". */
int filter_pipeline_make(const struct filter_spec *steps, int n, int in_ch, struct filter_plan *plan, char *err);

/* 1 when plan must run step by step on whole planes (several steps, or a threshold step) rather
 * than as one or two convolutions a plane. */
int filter_plan_stepwise(const struct filter_plan *plan);

/* Fills row[]/col[] and sets k->separable when the taps are rank 1 (tolerance above). */
/* The one check of a kernel and of a plan that every backend runs before touching pixels: odd sides
 * 1..FILTER_MAX_SIDE, finite taps; a plan's kernel count, combine, border, post and channel counts
 * consistent. A plan normally comes from filter_plan_make; a hand-made or corrupted one is refused
 * here rather than read out of bounds. Return 0 or EDGED_E_PARAM with the reason in err. */
int filter_kernel_check(const struct kernel2d *k, char *err);
int filter_plan_check(const struct filter_plan *p, char *err);
void kernel_detect_separable(struct kernel2d *k);

/* Gaussian taps exp(-(i-c)^2/(2 sigma^2)) normalised to sum 1, for odd n; sigma <= 0 takes OpenCV's
 * default sigma formula. (OpenCV's getGaussianKernel uses fixed tables instead for n <= 9 with
 * sigma <= 0; edged always uses the formula.) */
void filter_gaussian_1d(int n, double sigma, float *out);

/* The sigma a gaussian of odd side n uses: sigma when > 0, else OpenCV's 0.3*((n-1)/2-1)+0.8. */
double filter_gaussian_sigma(int n, double sigma);

/* Multiply-adds per output pixel per plane, for GFLOP/s figures (2 flops each). */
double filter_plan_taps(const struct filter_plan *plan);

/* Whether variant v (an enum variant) runs filter id: every variant runs every filter but canny,
 * which runs on auto, cpu_serial, cpu and fast (the table in filter.c). */
int filter_variant_serves(enum filter_id id, int v);

/* The variants that run filter id, for messages ("auto, cpu_serial, cpu and fast"). Writes at most
 * cap bytes into buf and returns buf. */
char *filter_variants_serving(enum filter_id id, char *buf, size_t cap);

/* Checks Canny's knobs: finite 0 <= low <= high <= FILTER_CANNY_MAX_THRESHOLD, aperture 3, 5 or 7.
 * 0 or EDGED_E_PARAM naming the knob. */
int filter_canny_check(const struct canny_params *c, char *err);

/* Whether filter id takes knob k (the table in filter.c). */
int filter_takes(enum filter_id id, enum filter_knob k);

/* The request name of knob k ("threshold"); "?" when out of range. */
const char *filter_knob_name(enum filter_knob k);

/* The filters that take knob k, for messages: "edge", "gaussian and box", "a, b and c". Writes at
 * most cap bytes (NUL included) into buf and returns buf. */
char *filter_knob_takers(enum filter_knob k, char *buf, size_t cap);

/* Names: "edge", "zero", "gray", "clamp"... and back. *_from_name return -1 when unknown. */
const char *filter_name(enum filter_id id);
const char *filter_description(enum filter_id id);
int filter_from_name(const char *name);
const char *border_name(enum border b);
int border_from_name(const char *name);
const char *color_name(enum color_mode c);
int color_from_name(const char *name);
const char *post_name(enum post_mode p);
int post_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
