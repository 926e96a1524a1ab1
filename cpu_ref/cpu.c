/* cpu.c — the fast CPU backend: pthreads over row chunks, separable filters as two passes. */
#include "cpu.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "pixel.h"
#include "planes.h"
#include "tuning.h"

#define CPU_MAX_THREADS 256 /* more are clamped to this (and to the row count) */
#define CPU_ALIGN 64        /* per-thread scratch starts on its own cache line */
#define CPU_GRAIN 64        /* rows per chunk of the cheap per-pixel stages */
/* A convolution chunk restarts its ring of rows (kernel rows - 1 row passes again): chunks of at
 * least this many kernel heights keep that under ~1/8 of the work. */
#define CPU_CONV_GRAIN_K 8
/* The two-pass path is taken when the factors reproduce the taps closely: sum |taps - col*row| at
 * most this fraction of sum |taps|, so the 1e-4 promise holds whatever kernel_detect_separable's
 * per-tap tolerance lets through. */
#define CPU_SEP_RESIDUAL 1e-6
/* Kernels of at most this many taps go direct even when separable: as fast at this size (the
 * passes are memory-bound), and bit-identical to the serial loop (same terms, same order), so the
 * small fixed filters (gaussian5, sobel, the edge pipeline) give exactly the reference's output. */
#define CPU_DIRECT_MAX_TAPS 25

/* ---- the inner loop ---------------------------------------------------------------------------- */

/* cpu_mac: out[x] = sum_k coef[k] * src[k][x] for x in [0, len). Each output adds its terms in
 * increasing k starting from 0, as the serial loop does: with the same terms in the same order the
 * result is the same float (no FMA: ISO C mode compiles with -ffp-contract=off). Blocks of CPU_ACC
 * vectors of outputs keep their accumulators in registers across k; the rest of a row goes one
 * vector, then one float, at a time. One body, instantiated for SSE (4 floats, every x86-64) and,
 * on x86-64 with GCC or clang, AVX2 (8) and AVX-512F (16), picked at run time by cpu_pick_mac.
 * Written with vector types rather than left to the auto-vectoriser, which kept the accumulators
 * in memory (several times slower). */
#define CPU_ACC 8 /* accumulator vectors per block: 8 of the 16 (AVX: 16, AVX-512: 32) registers */

/* The three loops of cpu_mac for vector type VT of VW floats, as the body of a function with
 * cpu_mac's parameters. A macro rather than a function so that each instantiation is compiled for
 * its own instruction set; the scalar tail (cpu_mac_tail) is always inlined into it. */
#define CPU_MAC_BODY(VT, VW)                                                                                 \
    {                                                                                                        \
        int x = 0;                                                                                           \
        for (; x + CPU_ACC * (VW) <= len; x += CPU_ACC * (VW)) {                                             \
            VT a[CPU_ACC] = {{0}}, v;                                                                        \
            for (int k = 0; k < n; k++) {                                                                    \
                const float *s = src[k] + x;                                                                 \
                float c = coef[k];                                                                           \
                _Pragma("GCC unroll 8") for (int i = 0; i < CPU_ACC; i++)                                    \
                {                                                                                            \
                    memcpy(&v, s + i * (VW), sizeof(v));                                                     \
                    a[i] += c * v;                                                                           \
                }                                                                                            \
            }                                                                                                \
            memcpy(out + x, a, sizeof(a));                                                                   \
        }                                                                                                    \
        for (; x + (VW) <= len; x += (VW)) {                                                                 \
            VT a = {0}, v;                                                                                   \
            for (int k = 0; k < n; k++) {                                                                    \
                memcpy(&v, src[k] + x, sizeof(v));                                                           \
                a += coef[k] * v;                                                                            \
            }                                                                                                \
            memcpy(out + x, &a, sizeof(a));                                                                  \
        }                                                                                                    \
        cpu_mac_tail(out, src, coef, n, x, len);                                                             \
    }

/* The last len - x outputs (fewer than one vector), one float at a time. */
static inline __attribute__((always_inline)) void cpu_mac_tail(float *restrict out, const float *const *src,
                                                               const float *coef, int n, int x, int len)
{
    for (; x < len; x++) {
        float a = 0.0f;
        for (int k = 0; k < n; k++)
            a += coef[k] * src[k][x];
        out[x] = a;
    }
}

typedef float cpu_v4 __attribute__((vector_size(16)));

static void cpu_mac_sse(float *restrict out, const float *const *src, const float *coef, int n, int len)
    CPU_MAC_BODY(cpu_v4, 4)

#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_HAVE_AVX2 1
typedef float cpu_v8 __attribute__((vector_size(32)));

__attribute__((target("avx2"))) static void cpu_mac_avx2(float *restrict out, const float *const *src,
                                                         const float *coef, int n, int len)
    CPU_MAC_BODY(cpu_v8, 8)

typedef float cpu_v16 __attribute__((vector_size(64)));

__attribute__((target("avx512f"))) static void cpu_mac_avx512(float *restrict out, const float *const *src,
                                                             const float *coef, int n, int len)
    CPU_MAC_BODY(cpu_v16, 16)
#endif

typedef void (*cpu_mac_fn)(float *restrict out, const float *const *src, const float *coef, int n, int len);

/* The widest inner loop this CPU runs; the cpu_simd knob caps it at sse or avx2 (tests, comparisons). */
static cpu_mac_fn cpu_pick_mac(void)
{
#ifdef CPU_HAVE_AVX2
    const int cap = tuning()->cpu_simd;

    if (__builtin_cpu_supports("avx512f") && cap == TUNING_SIMD_BEST)
        return cpu_mac_avx512;
    if (__builtin_cpu_supports("avx2") && cap != TUNING_SIMD_SSE)
        return cpu_mac_avx2;
#endif
    return cpu_mac_sse;
}

/* pad[rx + x] = src[x], and rx samples either side resolved by the border (0 for zero): the inner
 * loops then read pad without index checks. */
static void cpu_pad_line(const float *src, float *pad, int w, int rx, enum border b)
{
    memcpy(pad + rx, src, (size_t)w * sizeof(float));
    for (int q = 1; q <= rx; q++) {
        int l = border_index(-q, w, b), r = border_index(w - 1 + q, w, b);
        pad[rx - q] = l < 0 ? 0.0f : src[l];
        pad[rx + w - 1 + q] = r < 0 ? 0.0f : src[r];
    }
}

/* ---- threads ----------------------------------------------------------------------------------- */

/* One cpu_parallel call: rows [0, h) in `chunks` chunks of `rows` rows, taken in turn by the
 * threads from one atomic counter, so that a thread slowed by other load takes fewer of them. */
struct cpu_team {
    cpu_band_fn fn;
    void *ctx;
    int h, rows, chunks;
    atomic_int next;
    const atomic_int *cancel; /* may be NULL: no chunk is started once it is non-zero */
};

struct cpu_worker {
    pthread_t tid;
    struct cpu_team *team;
    int t; /* index of the thread: selects its scratch */
};

static void *cpu_worker_main(void *arg)
{
    struct cpu_worker *wk = arg;
    struct cpu_team *tm = wk->team;
    int c;

    while (!cpu_cancelled(tm->cancel) && (c = atomic_fetch_add(&tm->next, 1)) < tm->chunks) {
        int y0 = c * tm->rows, y1 = y0 + tm->rows < tm->h ? y0 + tm->rows : tm->h;
        tm->fn(tm->ctx, wk->t, y0, y1);
    }
    return NULL;
}

int cpu_threads(int threads, int h)
{
    long n = threads;

    if (n == 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > CPU_MAX_THREADS)
        n = CPU_MAX_THREADS;
    return (int)(n < h ? n : h);
}

void cpu_share_init(struct cpu_share *s, int threads)
{
    s->threads = cpu_threads(threads, CPU_MAX_THREADS);
    atomic_init(&s->running, 0);
}

void cpu_share_enter(struct cpu_share *s) { atomic_fetch_add(&s->running, 1); }

void cpu_share_leave(struct cpu_share *s) { atomic_fetch_sub(&s->running, 1); }

int cpu_share_threads(struct cpu_share *s)
{
    int running = atomic_load(&s->running), n = s->threads / (running > 1 ? running : 1);

    return n > 0 ? n : 1;
}

/* How a job's stages get their threads: a fixed count, or a share; and its cancel flag. */
struct cpu_ctl {
    int threads;             /* 0 = online cores; used without a share */
    struct cpu_share *share; /* may be NULL */
    const atomic_int *cancel;
    int most; /* the most threads a stage took */
};

/* The threads of a stage over h rows that starts now. */
static int cpu_ctl_threads(struct cpu_ctl *c, int h)
{
    int n = cpu_threads(c->share ? cpu_share_threads(c->share) : c->threads, h);

    if (n > c->most)
        c->most = n;
    return n;
}

/* Runs fn over rows [0, h) on n threads (the calling one included), in about 8 chunks per thread
 * of at least `grain` rows each (fewer where the rows run out). fn(ctx, t, y0, y1) may be called
 * several times per thread t, never concurrently for one t. When a thread cannot be started the
 * ones running finish, and EDGED_E_INTERNAL is returned: the result is incomplete. Once *cancel
 * (may be NULL) is set no chunk starts and EDGED_E_CANCELLED is returned. */
int cpu_parallel(int n, int h, int grain, cpu_band_fn fn, void *ctx, const atomic_int *cancel, char *err)
{
    struct cpu_team tm = {.fn = fn, .ctx = ctx, .h = h, .cancel = cancel};
    struct cpu_worker wk[CPU_MAX_THREADS];
    int started = 0, rc = 0, want = 8 * n;

    tm.rows = h / want > grain ? h / want : grain;
    if (tm.rows * n > h) /* too few rows for `grain`: one chunk per thread */
        tm.rows = (h + n - 1) / n;
    tm.chunks = (h + tm.rows - 1) / tm.rows;
    atomic_init(&tm.next, 0);
    for (int t = 1; t < n && rc == 0; t++) {
        wk[t] = (struct cpu_worker){.team = &tm, .t = t};
        if ((rc = pthread_create(&wk[t].tid, NULL, cpu_worker_main, &wk[t])) == 0)
            started++;
    }
    if (rc != 0)
        atomic_store(&tm.next, tm.chunks); /* nothing more to start; the started ones stop */
    wk[0] = (struct cpu_worker){.team = &tm, .t = 0};
    cpu_worker_main(&wk[0]);
    for (int t = 1; t <= started; t++)
        pthread_join(wk[t].tid, NULL);
    if (rc != 0)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot start CPU thread %d of %d (error %d%s)", started + 2, n,
                          rc, rc == EAGAIN ? ": thread or memory limit" : "");
    if (cpu_cancelled(cancel))
        return edged_fail(err, EDGED_E_CANCELLED, "job cancelled");
    return 0;
}

/* ---- one convolution --------------------------------------------------------------------------- */

struct cpu_conv_job {
    const float *in;
    float *out;
    int w, h;
    size_t pitch;
    const struct kernel2d *k;
    enum border b;
    int sep;
    cpu_mac_fn mac;
    const atomic_int *cancel;       /* read once per output row; may be NULL */
    char *scratch;                  /* per thread `stride` bytes: lines, src pointers, coefs */
    size_t stride, src_off, coef_off; /* offsets of the pointer and coefficient arrays */
};

/* Whether the two-pass path computes this kernel within the promised tolerance, and pays. */
int cpu_conv_separable(const struct kernel2d *k)
{
    double sum = 0.0, res = 0.0;

    if (!k->separable || k->rows == 1 || k->cols == 1 || k->rows * k->cols <= CPU_DIRECT_MAX_TAPS)
        return 0;
    for (int i = 0; i < k->rows; i++)
        for (int j = 0; j < k->cols; j++) {
            double t = k->taps[i * k->cols + j];
            sum += fabs(t);
            res += fabs(t - (double)k->col[i] * (double)k->row[j]);
        }
    return res <= CPU_SEP_RESIDUAL * sum;
}

static size_t cpu_align(size_t n) { return (n + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN; }

/* Sizes the per-thread scratch: separable: one padded line and a ring of `rows` row-pass lines;
 * direct: a ring of `rows` padded lines plus rows*cols source pointers and coefficients. */
static int cpu_scratch_size(struct cpu_conv_job *j, int nt, size_t *total)
{
    size_t padw = (size_t)j->w + 2 * (size_t)(j->k->cols / 2), rows = (size_t)j->k->rows, floats, bytes;
    size_t taps = j->sep ? 0 : rows * (size_t)j->k->cols; /* the two-pass path keeps its few on the stack */

    if (j->sep)
        floats = padw + rows * (size_t)j->w;
    else
        floats = rows * padw;
    if (size_mul(floats, sizeof(float), &bytes) < 0 || bytes > SIZE_MAX / 2)
        return -1;
    j->src_off = cpu_align(bytes);
    j->coef_off = j->src_off + cpu_align(taps * sizeof(float *));
    j->stride = j->coef_off + cpu_align(taps * sizeof(float));
    return size_mul(j->stride, (size_t)nt, total);
}

/* One row of the row pass: dst[x] = sum_j row[j] * src(x + j - rx), via the padded line. */
static void cpu_row_pass(const struct cpu_conv_job *j, const float *src, float *dst, float *pad)
{
    const float *p[FILTER_MAX_SIDE];
    int rx = j->k->cols / 2;

    cpu_pad_line(src, pad, j->w, rx, j->b);
    for (int c = 0; c < j->k->cols; c++)
        p[c] = pad + c;
    j->mac(dst, p, j->k->row, j->k->cols, j->w);
}

/* Separable, rows y0..y1-1: a ring of kh row-pass lines (slot v mod kh holds virtual row v); each
 * output row is the column pass over the lines of rows y-ry..y+ry (rows the border makes zero are
 * left out), so a row pass is computed once per chunk. */
static void cpu_sep_band(void *ctx, int t, int y0, int y1)
{
    const struct cpu_conv_job *j = ctx;
    int w = j->w, kh = j->k->rows, ry = kh / 2, held[FILTER_MAX_SIDE];
    float *pad = (float *)(j->scratch + (size_t)t * j->stride);
    float *ring = pad + w + 2 * (j->k->cols / 2), coef[FILTER_MAX_SIDE];
    const float *src[FILTER_MAX_SIDE];

    for (int i = 0; i < kh; i++)
        held[i] = INT_MIN;
    for (int y = y0; y < y1 && !cpu_cancelled(j->cancel); y++) {
        int n = 0;
        for (int i = 0; i < kh; i++) {
            int v = y + i - ry, sy = border_index(v, j->h, j->b), slot = ((v % kh) + kh) % kh;
            float *line = ring + (size_t)slot * (size_t)w;
            if (sy < 0)
                continue;
            if (held[slot] != v) {
                cpu_row_pass(j, j->in + (size_t)sy * j->pitch, line, pad);
                held[slot] = v;
            }
            src[n] = line;
            coef[n++] = j->k->col[i];
        }
        j->mac(j->out + (size_t)y * j->pitch, src, coef, n, w);
    }
}

/* Direct, rows y0..y1-1: a ring of kh padded source lines; each output row is one cpu_mac over every
 * (kernel row, kernel column) term in row-major tap order, the serial loop's order. */
static void cpu_direct_band(void *ctx, int t, int y0, int y1)
{
    const struct cpu_conv_job *j = ctx;
    int w = j->w, kh = j->k->rows, kw = j->k->cols, ry = kh / 2, held[FILTER_MAX_SIDE];
    size_t padw = (size_t)w + 2 * (size_t)(kw / 2);
    char *base = j->scratch + (size_t)t * j->stride;
    float *ring = (float *)base, *coef = (float *)(base + j->coef_off);
    const float **src = (const float **)(base + j->src_off);

    for (int i = 0; i < kh; i++)
        held[i] = INT_MIN;
    for (int y = y0; y < y1 && !cpu_cancelled(j->cancel); y++) {
        int n = 0;
        for (int i = 0; i < kh; i++) {
            int v = y + i - ry, sy = border_index(v, j->h, j->b), slot = ((v % kh) + kh) % kh;
            float *line = ring + (size_t)slot * padw;
            if (sy < 0)
                continue;
            if (held[slot] != v) {
                cpu_pad_line(j->in + (size_t)sy * j->pitch, line, w, kw / 2, j->b);
                held[slot] = v;
            }
            for (int c = 0; c < kw; c++) {
                src[n] = line + c;
                coef[n++] = j->k->taps[i * kw + c];
            }
        }
        j->mac(j->out + (size_t)y * j->pitch, src, coef, n, w);
    }
}

/* cpu_conv on nt threads, arguments checked. */
static int cpu_conv_run(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k,
                        enum border b, int nt, const atomic_int *cancel, char *err)
{
    struct cpu_conv_job j = {.in = in, .out = out, .w = w, .h = h, .pitch = pitch, .k = k, .b = b, .cancel = cancel};
    size_t bytes;
    int rc;

    j.sep = cpu_conv_separable(k);
    j.mac = cpu_pick_mac();
    if (cpu_scratch_size(&j, nt, &bytes) < 0)
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "scratch for a %d-wide image overflows", w);
    if (!(j.scratch = aligned_alloc(CPU_ALIGN, bytes)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes of convolution scratch", bytes);
    rc = cpu_parallel(nt, h, CPU_CONV_GRAIN_K * k->rows, j.sep ? cpu_sep_band : cpu_direct_band, &j, cancel, err);
    free(j.scratch);
    return rc;
}

int cpu_conv(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k, enum border b,
             int threads, char *err)
{
    return cpu_conv_cancel(in, out, w, h, pitch, k, b, threads, NULL, err);
}

int cpu_conv_cancel(const float *in, float *out, int w, int h, size_t pitch, const struct kernel2d *k, enum border b,
                    int threads, const atomic_int *cancel, char *err)
{
    int rc;

    if (!in || !out || in == out || !k || w < 1 || h < 1 || pitch < (size_t)w || threads < 0 ||
        (unsigned)b >= BORDER_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "cpu_conv: bad arguments (%dx%d, pitch %zu, threads %d, border %d)",
                          w, h, pitch, threads, (int)b);
    if ((rc = filter_kernel_check(k, err)) < 0)
        return rc;
    return cpu_conv_run(in, out, w, h, pitch, k, b, cpu_threads(threads, h), cancel, err);
}

/* ---- the plan ------------------------------------------------------------------------------------ */

/* What the per-band stages of a plan work on. */
struct cpu_stage {
    const struct img *in;
    const struct filter_plan *plan;
    int p;             /* load: the plane */
    float *a;          /* load: destination; magnitude: a = |(a, b)| */
    const float *b;
    const float *planes; /* store: all planes */
    struct img *out;
};

static void cpu_load_band(void *ctx, int t, int y0, int y1)
{
    const struct cpu_stage *s = ctx;

    (void)t;
    planes_load(s->in, s->plan, s->p, s->a, y0, y1);
}

static void cpu_magnitude_band(void *ctx, int t, int y0, int y1)
{
    const struct cpu_stage *s = ctx;
    size_t w = (size_t)s->in->w;

    (void)t;
    planes_magnitude(s->a + (size_t)y0 * w, s->b + (size_t)y0 * w, (size_t)(y1 - y0) * w);
}

static void cpu_store_band(void *ctx, int t, int y0, int y1)
{
    const struct cpu_stage *s = ctx;

    (void)t;
    planes_store(s->planes, s->plan, s->in, s->out, y0, y1);
}

/* One plane: src holds the input plane; dst receives the combined result; tmp is the second buffer
 * MAGNITUDE and CHAIN need. */
static int cpu_plane(const struct img *in, const struct filter_plan *plan, const float *src, float *dst, float *tmp,
                     struct cpu_ctl *c, char *err)
{
    int w = in->w, h = in->h, rc;
    const struct kernel2d *k0 = &plan->conv[0], *k1 = &plan->conv[1];
    struct cpu_stage mag = {.in = in, .plan = plan, .a = dst, .b = tmp};

    switch (plan->combine) {
    case COMBINE_MAGNITUDE:
        if ((rc = cpu_conv_run(src, dst, w, h, (size_t)w, k0, plan->border, cpu_ctl_threads(c, h), c->cancel, err)) < 0 ||
            (rc = cpu_conv_run(src, tmp, w, h, (size_t)w, k1, plan->border, cpu_ctl_threads(c, h), c->cancel, err)) < 0)
            return rc;
        return cpu_parallel(cpu_ctl_threads(c, h), h, CPU_GRAIN, cpu_magnitude_band, &mag, c->cancel, err);
    case COMBINE_CHAIN:
        if ((rc = cpu_conv_run(src, tmp, w, h, (size_t)w, k0, plan->border, cpu_ctl_threads(c, h), c->cancel, err)) < 0)
            return rc;
        return cpu_conv_run(tmp, dst, w, h, (size_t)w, k1, plan->border, cpu_ctl_threads(c, h), c->cancel, err);
    default:
        return cpu_conv_run(src, dst, w, h, (size_t)w, k0, plan->border, cpu_ctl_threads(c, h), c->cancel, err);
    }
}

/* planes_conv_fn of the threaded backend: cpu_conv_run with the job's threads and cancel flag. */
static int cpu_step_conv(void *ctx, const float *in, float *out, int w, int h, const struct kernel2d *k,
                         enum border b, char *err)
{
    struct cpu_ctl *c = ctx;

    return cpu_conv_run(in, out, w, h, (size_t)w, k, b, cpu_ctl_threads(c, h), c->cancel, err);
}

static int cpu_compute_ctl(const struct img *in, const struct filter_plan *plan, float *planes, struct cpu_ctl *c,
                           char *err)
{
    struct cpu_stage load = {.in = in, .plan = plan};
    float *src = NULL, *tmp = NULL;
    size_t n;
    int rc;

    if ((rc = planes_check(in, plan, &n, err)) < 0)
        return rc;
    if (plan->filter == FILTER_CANNY)
        return edged_fail(err, EDGED_E_PARAM, "canny has no float result (cpu_ref/canny.h runs it)");
    if (c->threads < 0 || !planes)
        return edged_fail(err, EDGED_E_PARAM, "threads %d or planes %p invalid", c->threads, (void *)planes);
    if (filter_plan_stepwise(plan))
        return planes_steps(in, plan, planes, cpu_step_conv, c, err);
    src = malloc(n * sizeof(float));
    if (plan->nconv == 2)
        tmp = malloc(n * sizeof(float));
    if (!src || (plan->nconv == 2 && !tmp)) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate float planes for a %dx%d image", in->w, in->h);
        goto out;
    }
    load.a = src;
    for (int p = 0; p < plan->planes; p++) {
        load.p = p;
        if ((rc = cpu_parallel(cpu_ctl_threads(c, in->h), in->h, CPU_GRAIN, cpu_load_band, &load, c->cancel,
                               err)) < 0 ||
            (rc = cpu_plane(in, plan, src, planes + (size_t)p * n, tmp, c, err)) < 0)
            goto out;
    }
    rc = 0;
out:
    free(tmp);
    free(src);
    return rc;
}

int cpu_compute(const struct img *in, const struct filter_plan *plan, float *planes, int threads, char *err)
{
    struct cpu_ctl c = {.threads = threads};

    return cpu_compute_ctl(in, plan, planes, &c, err);
}

int cpu_run(const struct img *in, const struct filter_plan *plan, struct img *out, int threads, char *err)
{
    return cpu_run_cancel(in, plan, out, threads, NULL, err);
}

static int cpu_run_ctl(const struct img *in, const struct filter_plan *plan, struct img *out, struct cpu_ctl *c,
                       char *err)
{
    struct cpu_stage store = {.in = in, .plan = plan, .out = out};
    float *planes = NULL;
    size_t n;
    int rc;

    *out = (struct img){0};
    if ((rc = planes_check(in, plan, &n, err)) < 0)
        return rc;
    if (c->threads < 0)
        return edged_fail(err, EDGED_E_PARAM, "threads %d invalid: must be >= 0", c->threads);
    if (!(planes = malloc(n * (size_t)plan->planes * sizeof(float)))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate float planes for a %dx%d image", in->w, in->h);
        goto out;
    }
    if ((rc = cpu_compute_ctl(in, plan, planes, c, err)) < 0 ||
        (rc = img_alloc(out, in->w, in->h, plan->out_ch, err)) < 0)
        goto out;
    store.planes = planes;
    rc = cpu_parallel(cpu_ctl_threads(c, in->h), in->h, CPU_GRAIN, cpu_store_band, &store, NULL, err);
out:
    free(planes);
    if (rc < 0)
        img_free(out);
    return rc;
}

int cpu_run_cancel(const struct img *in, const struct filter_plan *plan, struct img *out, int threads,
                   const atomic_int *cancel, char *err)
{
    struct cpu_ctl c = {.threads = threads, .cancel = cancel};

    return cpu_run_ctl(in, plan, out, &c, err);
}

int cpu_run_shared(const struct img *in, const struct filter_plan *plan, struct img *out, struct cpu_share *s,
                   const atomic_int *cancel, int *most, char *err)
{
    struct cpu_ctl c = {.share = s, .cancel = cancel};
    int rc = cpu_run_ctl(in, plan, out, &c, err);

    if (most)
        *most = c.most;
    return rc;
}
