/* gconv_bench.cu — kernel timing for `edged bench`: one variant (or NVIDIA NPP) on device-resident
 * random planes or the caller's image, buffers rotated past L2, CUDA events, median of the repetitions. */
#include <stdlib.h>
#include <string.h>

#include "canny_spiral.h"
#include "clock.h"
#include "gconv_internal.h"

#if EDGED_NPP
#include <nppi_filtering_functions.h>
#endif

#define BENCH_MAX_ROT 512 /* input/output pairs cycled at most */
#define BENCH_MAX_REPS 10000
#define BENCH_WARM_MS 25.0       /* warm-up: at least this much kernel time, whatever --warmup says, */
#define BENCH_WARM_WALL_MS 100.0 /* unless it has taken this long (tiny kernels, one sync each) */

/* Random samples in [0, 255) from a hash of the index (no host transfer, never all zeros). */
__global__ void k_fill(float *d_p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t v = (uint32_t)i * 2654435761u ^ seed;
        v ^= v >> 15;
        v *= 2246822519u;
        v ^= v >> 13;
        d_p[i] = (v >> 8) * (255.0f / 16777216.0f);
    }
}

/* Device buffers of one timing: `rot` input/output plane pairs plus one scratch plane. */
struct bench_bufs {
    float *d_arena;
    size_t bytes, stride;
    int rot;
};

/* Enough pairs that the rotation touches at least twice the L2 size, fewer when memory is short. */
static cudaError_t bench_alloc(struct gconv_ctx *ctx, int w, int h, struct bench_bufs *b)
{
    size_t pair, want;
    cudaError_t e = cudaErrorMemoryAllocation;

    b->stride = gctx_plane_stride(ctx, w, h);
    pair = 2 * sizeof(float) * b->stride;
    want = (2 * ctx->info.l2_bytes + pair - 1) / pair;
    b->rot = want < 2 ? 2 : want > BENCH_MAX_ROT ? BENCH_MAX_ROT : (int)want;
    for (; b->rot >= 1; b->rot /= 2) {
        b->bytes = sizeof(float) * b->stride * (2 * (size_t)b->rot + 1);
        if ((e = cudaMalloc((void **)&b->d_arena, b->bytes)) == cudaSuccess)
            break;
        cudaGetLastError();
        b->d_arena = NULL;
    }
    if (e != cudaSuccess)
        return e;
    __atomic_fetch_add(&ctx->mem_used, b->bytes, __ATOMIC_SEQ_CST);
    k_fill<<<4 * ctx->lim.sms, 256, 0, ctx->st[0].s>>>(b->d_arena, b->bytes / sizeof(float), 0x9e3779b9u);
    return cudaGetLastError();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_args_ok(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, int warmup, int reps,
                         char *err, int check_k = 1)
{
    int rc;

    if ((rc = gctx_enter(ctx, err)) < 0)
        return rc;
    if (w < 1 || h < 1 || w > IMG_MAX_SIDE || h > IMG_MAX_SIDE)
        return edged_fail(err, EDGED_E_PARAM, "bench image %d x %d invalid", w, h);
    if (check_k && (k->rows < 1 || k->cols < 1 || k->rows > FILTER_MAX_SIDE || k->cols > FILTER_MAX_SIDE ||
        !(k->rows & 1) || !(k->cols & 1)))
        return edged_fail(err, EDGED_E_PARAM, "bench kernel %dx%d invalid", k->rows, k->cols);
    if (warmup < 0 || warmup > BENCH_MAX_REPS || reps < 1 || reps > BENCH_MAX_REPS)
        return edged_fail(err, EDGED_E_PARAM, "warmup 0..%d and reps 1..%d", BENCH_MAX_REPS, BENCH_MAX_REPS);
    if (ctx->st[0].busy)
        return edged_fail(err, EDGED_E_PARAM, "stream 0 has a job in flight");
    return 0;
}

/* Times warmup + reps launches of `launch(i)` on stream 0 (the launcher picks rotation i's buffers);
 * each rep is bracketed by its own events and waited for. Before its start event each rep queues
 * gctx_hold (200 us of GPU time), as nvbench does with its blocking kernel: the host's launch work
 * (microseconds per launch; more for multi-kernel pipelines and NPP) then happens while the GPU is
 * still busy, and the events time the GPU's work, not the gap before it (without the hold that gap
 * entered every rep and added about a tenth to the edge kernel's time). Host work longer than the
 * hold would show again as time.
 * The warm-up runs at least `warmup` launches and at least BENCH_WARM_MS of kernel time (or
 * BENCH_WARM_WALL_MS of wall time, for kernels of microseconds). Each case first allocates and
 * fills its rotation arena; with a few warm-up launches only, about one case in ten came out
 * several percent slow, a different one each time (figures in docs/performance.md). The GPU's
 * clocks and memory state after the allocation are the suspects; this was not measured directly. */
template <typename F>
static cudaError_t bench_loop(struct gconv_ctx *ctx, int warmup, int reps, double *median_ms, F launch)
{
    struct gstream *st = &ctx->st[0];
    double *ms = (double *)malloc(sizeof(double) * reps);
    cudaError_t e = cudaSuccess;
    double warm_ms = 0.0, t0 = clock_ms();
    float t;
    int i = 0;

    if (!ms)
        return cudaErrorMemoryAllocation;
    for (int r = 0; r < reps && e == cudaSuccess; i++) {
        if ((e = gctx_hold(st->s)) != cudaSuccess || (e = cudaEventRecord(st->ev_up, st->s)) != cudaSuccess ||
            (e = launch(i)) != cudaSuccess ||
            (e = cudaEventRecord(st->ev_kern, st->s)) != cudaSuccess ||
            (e = cudaEventSynchronize(st->ev_kern)) != cudaSuccess ||
            (e = cudaEventElapsedTime(&t, st->ev_up, st->ev_kern)) != cudaSuccess)
            break;
        if (i < warmup || (warm_ms < BENCH_WARM_MS && clock_ms() - t0 < BENCH_WARM_WALL_MS))
            warm_ms += t;
        else
            ms[r++] = t;
    }
    if (e == cudaSuccess) {
        qsort(ms, reps, sizeof(double), cmp_double);
        *median_ms = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    }
    free(ms);
    return e;
}

/* Input and output planes of rotation i. */
static const float *bench_in(const struct bench_bufs *b, int i)
{
    return b->d_arena + 2 * (size_t)(i % b->rot) * b->stride;
}
static float *bench_out(const struct bench_bufs *b, int i)
{
    return b->d_arena + (2 * (size_t)(i % b->rot) + 1) * b->stride;
}

static void bench_free(struct gconv_ctx *ctx, struct bench_bufs *b)
{
    cudaStreamSynchronize(ctx->st[0].s);
    gctx_free_device(ctx, b->d_arena, b->bytes);
}

int gconv_bench_conv(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, enum border bd,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err)
{
    struct gstream *st;
    struct bench_bufs b = {NULL, 0, 0, 0};
    struct tex_cache tc;
    struct conv_args a;
    cudaError_t e = cudaSuccess;
    const char *what = "bench buffers";
    int rc, slot = -1;

    if ((rc = bench_args_ok(ctx, w, h, k, warmup, reps, err)) < 0)
        return rc;
    if (!variant_is_gpu(v) || !variant_block_ok(block) || (unsigned)bd >= BORDER_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "bench: variant, block or border invalid");
    st = &ctx->st[0];
    memset(&tc, 0, sizeof(tc));
    memset(&a, 0, sizeof(a));
    a.w = w, a.h = h, a.pitch = gctx_pitch(ctx, w), a.k = k, a.border = bd, a.variant = v, a.block = block;
    a.stream = st->s, a.cslot = 0, a.tc = &tc, a.lim = &ctx->lim, a.check_only = 1, a.d_taps = st->d_taps;
    a.ctx = ctx, a.fft = &st->fft;
    if ((rc = conv_dispatch(&a, err)) < 0)
        return rc;
    if ((e = bench_alloc(ctx, w, h, &b)) != cudaSuccess)
        goto out;
    memcpy(st->h_taps, k->taps, sizeof(float) * k->rows * k->cols);
    what = "bench taps upload";
    if ((e = cudaMemcpyAsync(st->d_taps, st->h_taps, sizeof(float) * k->rows * k->cols,
                             cudaMemcpyHostToDevice, st->s)) != cudaSuccess)
        goto out;
    what = "cudaStreamWaitEvent (constant slot)";
    if (variant_uses_cslot(v) && (slot = gctx_slot_lock(ctx, 0, &e)) < 0)
        goto out;
    a.cslot = slot, a.check_only = 0, a.d_tmp = b.d_arena + 2 * (size_t)b.rot * b.stride;
    what = "bench kernel";
    e = bench_loop(ctx, warmup, reps, median_ms, [&](int i) {
        a.d_in = bench_in(&b, i), a.d_out = bench_out(&b, i), a.taps_loaded = i > 0;
        int r = conv_dispatch(&a, err);
        return r == 0 ? cudaSuccess : r == GCONV_CUDA_FAILED ? a.cuerr : cudaErrorInvalidValue;
    });
out:
    bench_free(ctx, &b);
    texcache_clear(&tc);
    if (slot >= 0)
        gctx_slot_unlock(ctx, 0, 1);
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, what, err);
}

/* ---- the u8 edge pipeline --------------------------------------------------------------- */

/* Random bytes from a hash of the index (never all zeros). */
__global__ void k_fill_u8(uint8_t *d_p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t v = (uint32_t)i * 2654435761u ^ seed;
        v ^= v >> 15;
        v *= 2246822519u;
        v ^= v >> 13;
        d_p[i] = (uint8_t)(v >> 24);
    }
}

/* Device buffers of an edge timing: `rot` pairs of u8 input (in_b bytes) and output (out_b bytes)
 * cycled past L2, and one float arena of `planes` planes for the pipelines that need it. */
struct bench_u8 {
    uint8_t *d_u8;
    float *d_arena;
    size_t in_b, out_b, u8_bytes, arena_bytes, stride;
    int rot;
};

static cudaError_t bench_u8_alloc(struct gconv_ctx *ctx, int w, int h, int in_ch, int out_ch, int planes,
                                  struct bench_u8 *b)
{
    size_t pair;
    cudaError_t e;

    memset(b, 0, sizeof(*b));
    b->in_b = (size_t)w * h * in_ch;
    b->out_b = (size_t)w * h * out_ch;
    b->stride = gctx_plane_stride(ctx, w, h);
    pair = b->in_b + b->out_b;
    b->rot = (int)((2 * ctx->info.l2_bytes + pair - 1) / pair);
    b->rot = b->rot < 2 ? 2 : b->rot > BENCH_MAX_ROT ? BENCH_MAX_ROT : b->rot;
    b->u8_bytes = pair * b->rot;
    b->arena_bytes = sizeof(float) * b->stride * planes;
    if ((e = cudaMalloc((void **)&b->d_u8, b->u8_bytes)) != cudaSuccess)
        return e;
    __atomic_fetch_add(&ctx->mem_used, b->u8_bytes, __ATOMIC_SEQ_CST);
    if (planes && (e = cudaMalloc((void **)&b->d_arena, b->arena_bytes)) != cudaSuccess)
        return e;
    if (planes)
        __atomic_fetch_add(&ctx->mem_used, b->arena_bytes, __ATOMIC_SEQ_CST);
    k_fill_u8<<<4 * ctx->lim.sms, 256, 0, ctx->st[0].s>>>(b->d_u8, b->u8_bytes, 0x85ebca6bu);
    return cudaGetLastError();
}

static void bench_u8_free(struct gconv_ctx *ctx, struct bench_u8 *b)
{
    cudaStreamSynchronize(ctx->st[0].s);
    gctx_free_device(ctx, b->d_u8, b->u8_bytes);
    if (b->d_arena)
        gctx_free_device(ctx, b->d_arena, b->arena_bytes);
}

static uint8_t *bench_u8_in(const struct bench_u8 *b, int i)
{
    return b->d_u8 + (size_t)(i % b->rot) * (b->in_b + b->out_b);
}

/* Copies the caller's image (in_b bytes) over every rotation's input; nothing when h_in is NULL. */
static cudaError_t bench_u8_load(struct gconv_ctx *ctx, const struct bench_u8 *b, const uint8_t *h_in)
{
    cudaError_t e = cudaSuccess;

    for (int i = 0; h_in && i < b->rot && e == cudaSuccess; i++)
        e = cudaMemcpyAsync(bench_u8_in(b, i), h_in, b->in_b, cudaMemcpyHostToDevice, ctx->st[0].s);
    return e;
}

static int bench_edge_plan(int ch, enum border b, struct filter_plan *plan, char *err)
{
    struct filter_spec spec;

    filter_spec_init(&spec, FILTER_EDGE);
    spec.border = b;
    return filter_plan_make(&spec, ch, plan, err);
}

/* Times gplan_kernels of plan (checked) on u8 images of w x h (h_in: the image, NULL: random bytes). */
static int bench_plan_kernels(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, const struct filter_plan *plan,
                              enum variant v, int block, int warmup, int reps, double *median_ms, char *err)
{
    struct bench_u8 b;
    struct gstream *st = &ctx->st[0];
    struct gplan_dev d;
    struct tex_cache tc;
    cudaError_t e = cudaSuccess;
    const char *what = "bench buffers";
    int slot = -1;

    memset(&tc, 0, sizeof(tc));
    if ((e = bench_u8_alloc(ctx, w, h, plan->in_ch, plan->out_ch, 2 * gplan_loaded_planes(plan) + 2, &b)) !=
            cudaSuccess ||
        (e = bench_u8_load(ctx, &b, h_in)) != cudaSuccess)
        goto out;
    for (int i = 0; i < plan->nconv; i++)
        memcpy(st->h_taps + i * FILTER_MAX_TAPS, plan->conv[i].taps,
               sizeof(float) * plan->conv[i].rows * plan->conv[i].cols);
    what = "bench taps upload";
    if ((e = cudaMemcpyAsync(st->d_taps, st->h_taps, sizeof(float) * GCONV_TAPS_FLOATS, cudaMemcpyHostToDevice,
                             st->s)) != cudaSuccess)
        goto out;
    what = "cudaStreamWaitEvent (constant slot)";
    if (variant_uses_cslot(v) && (slot = gctx_slot_lock(ctx, 0, &e)) < 0)
        goto out;
    memset(&d, 0, sizeof(d));
    d.stream = st->s, d.tc = &tc, d.fft = &st->fft, d.d_arena = b.d_arena, d.stride = b.stride, d.d_taps = st->d_taps;
    d.w = w, d.h = h;
    what = "bench u8 plan";
    e = bench_loop(ctx, warmup, reps, median_ms, [&](int i) {
        cudaError_t ce = cudaSuccess;
        d.d_in8 = bench_u8_in(&b, i), d.d_out8 = bench_u8_in(&b, i) + b.in_b, d.taps_loaded = i > 0;
        int r = gplan_kernels(ctx, &d, plan, v, block, slot, &ce, &what, err);
        return r == 0 ? cudaSuccess : r == GCONV_CUDA_FAILED ? ce : cudaErrorInvalidValue;
    });
out:
    bench_u8_free(ctx, &b);
    texcache_clear(&tc);
    if (slot >= 0)
        gctx_slot_unlock(ctx, 0, 1);
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, what, err);
}

int gconv_bench_edge(struct gconv_ctx *ctx, int w, int h, int ch, const uint8_t *h_in, int packed, enum border bd,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err)
{
    struct filter_plan plan;
    int rc;

    if ((rc = bench_edge_plan(ch, bd, &plan, err)) < 0 || (rc = bench_args_ok(ctx, w, h, NULL, warmup, reps, err, 0)) < 0 ||
        (rc = gconv_check(ctx, &plan, w, h, v, block, err)) < 0)
        return rc;
    plan.accept_packed = packed;
    if (packed && !gconv_packs(&plan, v, w))
        return edged_fail(err, EDGED_E_PARAM, "a packed map needs fast on gray or RGB input %d pixels wide, a "
                                              "multiple of 8", w);
    return bench_plan_kernels(ctx, w, h, h_in, &plan, v, block, warmup, reps, median_ms, err);
}

int gconv_bench_plan(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, const struct filter_plan *plan,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err)
{
    int rc;

    if ((rc = bench_args_ok(ctx, w, h, NULL, warmup, reps, err, 0)) < 0 ||
        (rc = gconv_check(ctx, plan, w, h, v, block, err)) < 0)
        return rc;
    if (plan->filter == FILTER_CANNY)
        return edged_fail(err, EDGED_E_PARAM, "canny has its own bench (--filter canny)");
    return bench_plan_kernels(ctx, w, h, h_in, plan, v, block, warmup, reps, median_ms, err);
}

/* ---- Canny ------------------------------------------------------------------------------- */

/* The synthetic gray image Canny is timed on when no photograph is given: smooth shading, large
 * soft waves, a checker of steps (long edges that cross many tiles) and a little noise. Far fewer of
 * its pixels are edges than of a photograph's, so it flatters the timing: `edged bench --input`. */
static __device__ uint8_t synthetic_px(int x, int y)
{
    uint32_t v = ((uint32_t)x * 73856093u) ^ ((uint32_t)y * 19349663u);
    float f = 120.0f + 60.0f * __sinf(x * 0.011f + 2.5f * __sinf(y * 0.0071f)) * __cosf(y * 0.0093f - x * 0.0037f);

    v ^= v >> 13;
    v *= 2246822519u;
    f += ((x / 700 + y / 500) & 1) ? 40.0f : -40.0f;
    f += (float)((v >> 24) & 7) - 3.5f;
    return (uint8_t)fminf(fmaxf(f, 0.0f), 255.0f);
}

__global__ void k_fill_canny(uint8_t *d_p, int w, int h, int spiral)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        d_p[(size_t)y * w + x] = spiral ? canny_spiral_px(x, y, w, h) : synthetic_px(x, y);
}

/* Rotation buffers of gray input and map (bench_u8) with every input holding the test image: h_gray,
 * else the spiral or the synthetic photo-like image made here. */
static cudaError_t bench_canny_alloc(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, int spiral,
                                     struct bench_u8 *b)
{
    dim3 blk(32, 8), grid(div_up(w, 32), div_up(h, 8));
    cudaError_t e;

    if ((e = bench_u8_alloc(ctx, w, h, 1, 1, 0, b)) != cudaSuccess)
        return e;
    if (h_gray)
        return bench_u8_load(ctx, b, h_gray);
    for (int i = 0; i < b->rot && e == cudaSuccess; i++) {
        k_fill_canny<<<grid, blk, 0, ctx->st[0].s>>>(bench_u8_in(b, i), w, h, spiral);
        e = cudaGetLastError();
    }
    return e;
}

static int bench_canny_run(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                           int spiral, int warmup, int reps, double *median_ms, char *err)
{
    struct bench_u8 b;
    struct canny_dev d;
    size_t nb = 2 * sizeof(int) * canny_nodes(w, h);
    int *d_nodes = NULL, rc;
    const char *what = "bench buffers";
    cudaError_t e;

    memset(&b, 0, sizeof(b));
    if ((rc = bench_args_ok(ctx, w, h, NULL, warmup, reps, err, 0)) < 0)
        return rc;
    if (p->aperture != 3 && p->aperture != 5 && p->aperture != 7)
        return edged_fail(err, EDGED_E_PARAM, "canny aperture %d invalid: must be 3, 5 or 7", p->aperture);
    if ((e = bench_canny_alloc(ctx, w, h, h_gray, spiral, &b)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d_nodes, nb)) != cudaSuccess)
        goto out;
    __atomic_fetch_add(&ctx->mem_used, nb, __ATOMIC_SEQ_CST);
    memset(&d, 0, sizeof(d));
    d.w = w, d.h = h, d.stream = ctx->st[0].s, d.d_parent = d_nodes, d.d_flag = d_nodes + canny_nodes(w, h);
    e = bench_loop(ctx, warmup, reps, median_ms, [&](int i) {
        d.d_gray = bench_u8_in(&b, i), d.d_out = bench_u8_in(&b, i) + b.in_b;
        return canny_core(&d, p, &what);
    });
out:
    bench_u8_free(ctx, &b);
    if (d_nodes)
        gctx_free_device(ctx, d_nodes, nb);
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, what, err);
}

int gconv_bench_canny(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                      int warmup, int reps, double *median_ms, char *err)
{
    return bench_canny_run(ctx, w, h, h_gray, p, 0, warmup, reps, median_ms, err);
}

int gconv_bench_canny_spiral(struct gconv_ctx *ctx, int w, int h, int warmup, int reps, double *median_ms,
                             char *err)
{
    const struct canny_params p = {CANNY_SPIRAL_LOW, CANNY_SPIRAL_HIGH, 3, 0};

    return bench_canny_run(ctx, w, h, NULL, &p, 1, warmup, reps, median_ms, err);
}

#if EDGED_NPP
/* NPP has no stream-context helper since CUDA 12.9 (nppGetStreamContext is gone): fill it from
 * the device's attributes. */
static cudaError_t npp_context(struct gconv_ctx *ctx, NppStreamContext *nc)
{
    int dev = ctx->device, v = 0;
    unsigned flags = 0;
    cudaError_t e;

    memset(nc, 0, sizeof(*nc));
    nc->hStream = ctx->st[0].s;
    nc->nCudaDeviceId = dev;
    nc->nMultiProcessorCount = ctx->lim.sms;
    nc->nMaxThreadsPerBlock = ctx->lim.max_threads;
    nc->nSharedMemPerBlock = ctx->lim.smem_block;
    nc->nCudaDevAttrComputeCapabilityMajor = ctx->info.cc_major;
    nc->nCudaDevAttrComputeCapabilityMinor = ctx->info.cc_minor;
    if ((e = cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerMultiProcessor, dev)) != cudaSuccess ||
        (e = cudaStreamGetFlags(ctx->st[0].s, &flags)) != cudaSuccess)
        return e;
    nc->nMaxThreadsPerMultiProcessor = v;
    nc->nStreamFlags = flags;
    return cudaSuccess;
}

/* NPP filters convolve (the kernel is applied reversed), so the taps are uploaded reversed to get
 * the same correlation; anchor at the centre; NPP_BORDER_REPLICATE (NPP's FilterBorder offers
 * replicate only). */
int gconv_bench_npp(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, int warmup, int reps,
                    double *median_ms, char *err)
{
    struct gstream *st;
    struct bench_bufs b = {NULL, 0, 0, 0};
    NppStreamContext nc;
    NppStatus ns = NPP_SUCCESS;
    cudaError_t e;
    const char *what = "bench buffers";
    int rc, n = k->rows * k->cols, step;

    if ((rc = bench_args_ok(ctx, w, h, k, warmup, reps, err)) < 0)
        return rc;
    st = &ctx->st[0];
    step = (int)sizeof(float) * gctx_pitch(ctx, w);
    if ((e = bench_alloc(ctx, w, h, &b)) != cudaSuccess)
        goto out;
    for (int i = 0; i < n; i++)
        st->h_taps[i] = k->taps[n - 1 - i];
    what = "NPP taps upload";
    if ((e = cudaMemcpyAsync(st->d_taps, st->h_taps, sizeof(float) * n, cudaMemcpyHostToDevice, st->s)) !=
            cudaSuccess ||
        (e = npp_context(ctx, &nc)) != cudaSuccess)
        goto out;
    what = "nppiFilterBorder_32f_C1R_Ctx";
    e = bench_loop(ctx, warmup, reps, median_ms, [&](int i) {
        const float *d_in = bench_in(&b, i);
        float *d_out = bench_out(&b, i);
        NppiSize size = {w, h}, ksize = {k->cols, k->rows};
        NppiPoint origin = {0, 0}, anchor = {k->cols / 2, k->rows / 2};
        ns = nppiFilterBorder_32f_C1R_Ctx(d_in, step, size, origin, d_out, step, size, st->d_taps, ksize,
                                          anchor, NPP_BORDER_REPLICATE, nc);
        return ns < 0 ? cudaErrorInvalidValue : cudaGetLastError();
    });
out:
    bench_free(ctx, &b);
    if (ns < 0)
        return edged_fail(err, EDGED_E_INTERNAL, "nppiFilterBorder_32f_C1R_Ctx failed with NPP status %d",
                          (int)ns);
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, what, err);
}

/* NPP's u8 edge pipeline for comparison: nppiFilterGaussBorder 5x5 then nppiFilterLaplaceBorder
 * 3x3, gray u8 in and out (replicate border, NPP's own Laplacian mask, no threshold): two passes
 * over memory with a u8 intermediate. */
int gconv_bench_edge_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, int warmup, int reps,
                         double *median_ms, char *err)
{
    struct bench_u8 b;
    NppStreamContext nc;
    NppStatus ns = NPP_SUCCESS;
    cudaError_t e;
    const char *what = "bench buffers";
    int rc;

    memset(&b, 0, sizeof(b));
    if ((rc = bench_args_ok(ctx, w, h, NULL, warmup, reps, err, 0)) < 0)
        return rc;
    /* one u8 plane for the intermediate: the float arena is not needed (planes = 0) */
    if ((e = bench_u8_alloc(ctx, w, h, 1, 2, 0, &b)) != cudaSuccess || (e = bench_u8_load(ctx, &b, h_in)) != cudaSuccess ||
        (e = npp_context(ctx, &nc)) != cudaSuccess)
        goto out;
    what = "nppiFilterGaussBorder_8u_C1R_Ctx + nppiFilterLaplaceBorder_8u_C1R_Ctx";
    e = bench_loop(ctx, warmup, reps, median_ms, [&](int i) {
        NppiSize size = {w, h};
        NppiPoint origin = {0, 0};
        uint8_t *d_in = bench_u8_in(&b, i), *d_tmp = d_in + b.in_b, *d_out = d_tmp + (size_t)w * h;
        ns = nppiFilterGaussBorder_8u_C1R_Ctx(d_in, w, size, origin, d_tmp, w, size, NPP_MASK_SIZE_5_X_5,
                                              NPP_BORDER_REPLICATE, nc);
        if (ns >= 0)
            ns = nppiFilterLaplaceBorder_8u_C1R_Ctx(d_tmp, w, size, origin, d_out, w, size, NPP_MASK_SIZE_3_X_3,
                                                    NPP_BORDER_REPLICATE, nc);
        return ns < 0 ? cudaErrorInvalidValue : cudaGetLastError();
    });
out:
    bench_u8_free(ctx, &b);
    if (ns < 0)
        return edged_fail(err, EDGED_E_INTERNAL, "NPP edge pipeline failed with NPP status %d", (int)ns);
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, what, err);
}
/* NPP's Canny on the same input as gconv_bench_canny: NPP_FILTER_SOBEL of the aperture's mask size (NPP
 * refuses the ones it lacks), the norm, NPP_BORDER_REPLICATE, its thresholds as 16-bit integers
 * and its scratch buffer allocated once. */
int gconv_bench_canny_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                          int warmup, int reps, double *median_ms, char *err)
{
    struct bench_u8 b;
    NppStreamContext nc;
    NppStatus ns = NPP_SUCCESS;
    NppiSize size = {w, h};
    Npp8u *d_buf = NULL;
    int rc, nbuf = 0;
    cudaError_t e;
    const char *what = "bench buffers";
    NppiMaskSize mask = p->aperture == 3 ? NPP_MASK_SIZE_3_X_3 : p->aperture == 5 ? NPP_MASK_SIZE_5_X_5
                                                                                  : NPP_MASK_SIZE_7_X_7;
    Npp16s lo = (Npp16s)fminf(p->low, 32767.0f), hi = (Npp16s)fminf(p->high, 32767.0f);

    memset(&b, 0, sizeof(b));
    if ((rc = bench_args_ok(ctx, w, h, NULL, warmup, reps, err, 0)) < 0)
        return rc;
    if ((ns = nppiFilterCannyBorderGetBufferSize(size, &nbuf)) < 0)
        return edged_fail(err, EDGED_E_INTERNAL, "nppiFilterCannyBorderGetBufferSize failed with NPP status %d",
                          (int)ns);
    if ((e = bench_canny_alloc(ctx, w, h, h_gray, 0, &b)) != cudaSuccess || (e = npp_context(ctx, &nc)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d_buf, (size_t)nbuf)) != cudaSuccess)
        goto out;
    __atomic_fetch_add(&ctx->mem_used, (size_t)nbuf, __ATOMIC_SEQ_CST);
    what = "nppiFilterCannyBorder_8u_C1R_Ctx";
    e = bench_loop(ctx, warmup, reps, median_ms, [&](int i) {
        NppiPoint origin = {0, 0};
        uint8_t *d_in = bench_u8_in(&b, i), *d_out = d_in + b.in_b;
        ns = nppiFilterCannyBorder_8u_C1R_Ctx(d_in, w, size, origin, d_out, w, size, NPP_FILTER_SOBEL, mask, lo, hi,
                                              p->l2gradient ? nppiNormL2 : nppiNormL1, NPP_BORDER_REPLICATE,
                                              d_buf, nc);
        return ns < 0 ? cudaErrorInvalidValue : cudaGetLastError();
    });
out:
    bench_u8_free(ctx, &b);
    if (d_buf)
        gctx_free_device(ctx, d_buf, (size_t)nbuf);
    if (ns < 0)
        return edged_fail(err, EDGED_E_INTERNAL, "nppiFilterCannyBorder_8u_C1R_Ctx failed with NPP status %d",
                          (int)ns);
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, what, err);
}
#else
int gconv_bench_npp(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, int warmup, int reps,
                    double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)k, (void)warmup, (void)reps, (void)median_ms;
    return edged_fail(err, EDGED_E_NO_CUDA, "NVIDIA NPP unavailable: built without NPP (libnppif not found)");
}

int gconv_bench_edge_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, int warmup, int reps,
                         double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)h_in, (void)warmup, (void)reps, (void)median_ms;
    return edged_fail(err, EDGED_E_NO_CUDA, "NVIDIA NPP unavailable: built without NPP (libnppif not found)");
}

int gconv_bench_canny_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                          int warmup, int reps, double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)h_gray, (void)p, (void)warmup, (void)reps, (void)median_ms;
    return edged_fail(err, EDGED_E_NO_CUDA, "NVIDIA NPP unavailable: built without NPP (libnppif not found)");
}
#endif
