/* gconv_run.cu — the device pipeline of one image: u8 upload, planes, the plan's convolutions with
 * the chosen variant, combine, post-processing, u8 download; sync, async and float-plane entries. */
#include <string.h>

#include "gconv_internal.h"

#define PIPE_BX 32 /* block of the per-pixel pipeline kernels */
#define PIPE_BY 8

/* Why this layout: the image crosses PCIe as the u8 interleaved samples it arrived in (1 byte per
 * sample instead of 4 as float: 4x fewer bytes over the slowest link), and is unpacked on the
 * device into float planes (one dense 2-D array per channel, rows padded to 128 bytes) that every
 * variant reads with unit stride and that can back a texture; planar beat interleaved in the
 * Trento report. gray: the luma of RGB (pixel_luma, as the CPU does); otherwise channel p. */
__global__ void k_unpack(const uint8_t *__restrict__ d_in8, float *__restrict__ d_planes, size_t stride,
                         int w, int h, int pitch, int ch, int planes, int gray)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    const uint8_t *px = d_in8 + ((size_t)y * w + x) * ch;
    float *o = d_planes + (size_t)y * pitch + x;
    if (gray)
        o[0] = pixel_luma(px[0], px[1], px[2]);
    else
        for (int p = 0; p < planes; p++)
            o[p * stride] = px[p];
}

/* MAGNITUDE: a = sqrt(a² + b²), products rounded separately as in the host C code. */
__global__ void k_magnitude(float *__restrict__ d_a, const float *__restrict__ d_b, int w, int h, int pitch)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    size_t i = (size_t)y * pitch + x;
    float a = d_a[i], b = d_b[i];
    d_a[i] = sqrtf(__fadd_rn(__fmul_rn(a, a), __fmul_rn(b, b)));
}

/* Post-processing (pixel_post) of every plane and the alpha copy, in one pass writing the u8
 * interleaved result. */
__global__ void k_pack(const float *__restrict__ d_planes, size_t stride, const uint8_t *__restrict__ d_in8,
                       uint8_t *__restrict__ d_out8, int w, int h, int pitch, int in_ch, int planes,
                       int out_ch, int post, float threshold)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    size_t pix = (size_t)y * w + x;
    uint8_t *o = d_out8 + pix * out_ch;
    for (int p = 0; p < planes; p++)
        o[p] = pixel_post(d_planes[p * stride + (size_t)y * pitch + x], post, threshold);
    if (out_ch > planes)
        o[planes] = d_in8[pix * in_ch + in_ch - 1];
}

int conv_dispatch(struct conv_args *a, char *err)
{
    switch (a->variant) {
    case VARIANT_NAIVE:
    case VARIANT_CONSTANT:
        return conv_global(a, err);
    case VARIANT_SHARED:
    case VARIANT_SHARED_CONSTANT:
        return conv_shared(a, err);
    case VARIANT_SHARED_HALO:
        return conv_halo(a, err);
    case VARIANT_CACHED:
        return conv_cached(a, err);
    case VARIANT_SEPARABLE:
        return conv_separable(a, err);
    case VARIANT_TILED:
        return conv_tiled(a, err);
    case VARIANT_TEXTURE:
    case VARIANT_TEXTURE2D:
        return conv_texture(a, err);
    case VARIANT_FAST:
        return conv_fast(a, err);
    default:
        return edged_fail(err, EDGED_E_PARAM, "variant %s is not a GPU variant", variant_name(a->variant));
    }
}

static void args_init(struct conv_args *a, struct gconv_ctx *ctx, struct gstream *st, int w, int h,
                      enum border b, enum variant v, int block)
{
    memset(a, 0, sizeof(*a));
    a->w = w;
    a->h = h;
    a->pitch = gctx_pitch(ctx, w);
    a->border = b;
    a->variant = v;
    a->block = block;
    a->stream = st ? st->s : 0;
    a->cslot = -1;
    a->tc = st ? &st->tc : NULL;
    a->lim = &ctx->lim;
}

static int common_ok(struct gconv_ctx *ctx, int w, int h, enum variant v, int block, char *err)
{
    int rc;

    if ((rc = gctx_enter(ctx, err)) < 0)
        return rc;
    if (!variant_is_gpu(v))
        return edged_fail(err, EDGED_E_PARAM, "variant %s is not a GPU variant", variant_name(v));
    if (!variant_block_ok(block))
        return edged_fail(err, EDGED_E_PARAM, "block %d invalid: must be 8, 16, 24 or 32", block);
    return img_check_size(w, h, err);
}

int gconv_check(const struct gconv_ctx *cctx, const struct filter_plan *plan, int w, int h, enum variant v,
                int block, char *err)
{
    struct gconv_ctx *ctx = (struct gconv_ctx *)cctx; /* only read */
    struct conv_args a;
    int rc;

    if ((rc = common_ok(ctx, w, h, v, block, err)) < 0 || (rc = filter_plan_check(plan, err)) < 0)
        return rc;
    for (int i = 0; i < plan->nconv; i++) {
        args_init(&a, ctx, NULL, w, h, plan->border, v, block);
        a.k = &plan->conv[i];
        a.cslot = 0;
        a.check_only = 1;
        if ((rc = conv_dispatch(&a, err)) < 0)
            return rc;
    }
    return 0;
}

/* The float planes of a job in a stream's arena: src[P], dst[P], then two scratch planes. */
struct job_planes {
    float *src, *dst, *tmp_a, *tmp_b;
    size_t stride;
};

static struct job_planes job_planes_of(struct gstream *st, int planes, size_t stride)
{
    struct job_planes jp = {st->d_arena, st->d_arena + planes * stride, st->d_arena + 2 * planes * stride,
                            st->d_arena + (2 * planes + 1) * stride, stride};
    return jp;
}

static int run_conv(struct conv_args *a, const struct kernel2d *k, const float *d_taps, const float *d_in,
                    float *d_out, char *err)
{
    a->k = k;
    a->d_taps = d_taps;
    a->d_in = d_in;
    a->d_out = d_out;
    return conv_dispatch(a, err);
}

/* Plane p through the plan: SINGLE conv0 -> dst; MAGNITUDE conv0 -> dst, conv1 -> tmp_a, then
 * dst = |(dst, tmp_a)|; CHAIN conv0 -> tmp_a -> conv1 -> dst (the intermediate stays on the
 * device, in float). Separable variants use tmp_b between their passes. d_taps holds conv0's taps,
 * then conv1's FILTER_MAX_TAPS floats further. */
static int run_plane(struct conv_args *a, const struct filter_plan *plan, const float *d_taps,
                     struct job_planes *jp, int p, char *err)
{
    const float *src = jp->src + p * jp->stride;
    float *dst = jp->dst + p * jp->stride;
    const float *taps1 = d_taps + FILTER_MAX_TAPS;
    int rc;

    a->d_tmp = jp->tmp_b;
    if (plan->combine == COMBINE_CHAIN) {
        if ((rc = run_conv(a, &plan->conv[0], d_taps, src, jp->tmp_a, err)) < 0)
            return rc;
        return run_conv(a, &plan->conv[1], taps1, jp->tmp_a, dst, err);
    }
    if ((rc = run_conv(a, &plan->conv[0], d_taps, src, dst, err)) < 0 || plan->combine == COMBINE_SINGLE)
        return rc;
    if ((rc = run_conv(a, &plan->conv[1], taps1, src, jp->tmp_a, err)) < 0)
        return rc;
    dim3 block(PIPE_BX, PIPE_BY), grid(div_up(a->w, PIPE_BX), div_up(a->h, PIPE_BY));
    k_magnitude<<<grid, block, 0, a->stream>>>(dst, jp->tmp_a, a->w, a->h, a->pitch);
    return conv_launched(a, "magnitude kernel");
}

/* Whether a job runs as the fused u8 edge kernel (fast_edge.cu) instead of the float pipeline. */
static int job_fused_edge(const struct filter_plan *plan, enum variant v)
{
    return v == VARIANT_FAST && edge_fast_can(plan);
}

/* A job's map comes back packed, 8 pixels per byte (struct img packed), when the caller takes it
 * so and the fused edge kernel writes it so; the download is then 8 times smaller. */
int gconv_packs(const struct filter_plan *plan, enum variant v, int w)
{
    return plan->accept_packed && job_fused_edge(plan, v) && edge_fast_packs(plan->in_ch, w);
}

/* Bytes of a job's u8 result. */
static size_t job_out_bytes(const struct filter_plan *plan, enum variant v, int w, int h)
{
    return gconv_packs(plan, v, w) ? (size_t)w / 8 * h : (size_t)w * h * plan->out_ch;
}

int gconv_plan_kernels(struct gconv_ctx *ctx, const struct gplan_dev *d, const struct filter_plan *plan,
                       enum variant v, int block, int slot, cudaError_t *cuerr, const char **cuwhat, char *err)
{
    int w = d->w, h = d->h, pitch = gctx_pitch(ctx, w), rc;
    struct job_planes jp = {d->d_arena, d->d_arena + plan->planes * d->stride,
                            d->d_arena + 2 * plan->planes * d->stride,
                            d->d_arena + (2 * plan->planes + 1) * d->stride, d->stride};
    struct conv_args a;
    dim3 pb(PIPE_BX, PIPE_BY), pg(div_up(w, PIPE_BX), div_up(h, PIPE_BY));

    *cuerr = cudaSuccess;
    if (job_fused_edge(plan, v)) { /* one pass: u8 in, u8 map (and alpha) out */
        edge_fast_launch(d->d_in8, d->d_out8, d->want_planes ? jp.dst : NULL, pitch, w, h, plan->in_ch,
                         plan->threshold, gconv_packs(plan, v, w), d->stream);
        *cuwhat = "fast edge kernel";
        return (*cuerr = cudaGetLastError()) == cudaSuccess ? 0 : GCONV_CUDA_FAILED;
    }
    k_unpack<<<pg, pb, 0, d->stream>>>(d->d_in8, jp.src, d->stride, w, h, pitch, plan->in_ch, plan->planes,
                                       plan->gray);
    *cuwhat = "unpack kernel";
    if ((*cuerr = cudaGetLastError()) != cudaSuccess)
        return GCONV_CUDA_FAILED;
    args_init(&a, ctx, NULL, w, h, plan->border, v, block);
    a.stream = d->stream;
    a.tc = d->tc;
    a.cslot = slot;
    a.taps_loaded = d->taps_loaded;
    for (int p = 0; p < plan->planes; p++)
        if ((rc = run_plane(&a, plan, d->d_taps, &jp, p, err)) < 0) {
            if (rc == GCONV_CUDA_FAILED)
                *cuerr = a.cuerr, *cuwhat = a.cuwhat;
            return rc;
        }
    k_pack<<<pg, pb, 0, d->stream>>>(jp.dst, d->stride, d->d_in8, d->d_out8, w, h, pitch, plan->in_ch,
                                     plan->planes, plan->out_ch, plan->post, plan->threshold);
    *cuwhat = "pack kernel";
    return (*cuerr = cudaGetLastError()) == cudaSuccess ? 0 : GCONV_CUDA_FAILED;
}

#define CK(call)                                                                                             \
    do {                                                                                                     \
        if ((e = (call)) != cudaSuccess) {                                                                   \
            what = #call;                                                                                    \
            goto out;                                                                                        \
        }                                                                                                    \
    } while (0)

/* Pinned staging and device buffers of stream st for a w x h job with plan p. */
static cudaError_t job_buffers(struct gconv_ctx *ctx, struct gstream *st, int w, int h,
                               const struct filter_plan *p, const char **what_out)
{
    size_t px = (size_t)w * h, stride = gctx_plane_stride(ctx, w, h);
    const char *what = "";
    cudaError_t e = cudaSuccess;

    CK(gctx_grow_pinned(ctx, (void **)&st->h_in, &st->h_in_cap, px * p->in_ch));
    CK(gctx_grow_pinned(ctx, (void **)&st->h_out, &st->h_out_cap, px * p->out_ch));
    CK(gctx_grow_device(ctx, st, (void **)&st->d_in8, &st->d_in8_cap, px * p->in_ch));
    CK(gctx_grow_device(ctx, st, (void **)&st->d_out8, &st->d_out8_cap, px * p->out_ch));
    CK(gctx_grow_device(ctx, st, (void **)&st->d_arena, &st->d_arena_cap,
                        sizeof(float) * stride * (2 * p->planes + 2)));
out:
    *what_out = what;
    return e;
}

/* Copies the input rows and the taps into the stream's pinned staging. */
static void job_stage(struct gstream *st, const struct img *in, const struct filter_plan *plan)
{
    size_t row = (size_t)in->w * in->ch;

    for (int y = 0; y < in->h; y++)
        memcpy(st->h_in + y * row, in->px + y * in->stride, row);
    for (int i = 0; i < plan->nconv; i++)
        memcpy(st->h_taps + i * FILTER_MAX_TAPS, plan->conv[i].taps,
               sizeof(float) * plan->conv[i].rows * plan->conv[i].cols);
}

/* Enqueues the whole job on stream s (limits were checked by the caller). want_planes: the float
 * planes must be left in the arena's dst planes for download_planes (the fused edge kernel then
 * also writes its float L there). */
static int job_enqueue(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                       enum variant v, int block, int want_planes, char *err)
{
    struct gstream *st = &ctx->st[s];
    int w = in->w, h = in->h, rc = 0, slot = -1, fused = job_fused_edge(plan, v);
    size_t px = (size_t)w * h;
    const char *what = "";
    cudaError_t e = cudaSuccess;
    struct gplan_dev d;

    if ((e = job_buffers(ctx, st, w, h, plan, &what)) != cudaSuccess)
        goto out;
    job_stage(st, in, plan);
    if (variant_uses_cslot(v) && (slot = gctx_slot_lock(ctx, s, &e)) < 0) {
        what = "cudaStreamWaitEvent (constant slot)";
        goto out;
    }
    CK(cudaEventRecord(st->ev_start, st->s));
    CK(cudaMemcpyAsync(st->d_in8, st->h_in, px * in->ch, cudaMemcpyHostToDevice, st->s));
    if (!fused)
        CK(cudaMemcpyAsync(st->d_taps, st->h_taps, sizeof(float) * FILTER_MAX_TAPS * plan->nconv,
                           cudaMemcpyHostToDevice, st->s));
    CK(cudaEventRecord(st->ev_up, st->s));
    memset(&d, 0, sizeof(d));
    d.stream = st->s, d.tc = &st->tc, d.d_in8 = st->d_in8, d.d_out8 = st->d_out8, d.d_arena = st->d_arena;
    d.stride = gctx_plane_stride(ctx, w, h), d.d_taps = st->d_taps, d.w = w, d.h = h;
    d.want_planes = want_planes;
    if ((rc = gconv_plan_kernels(ctx, &d, plan, v, block, slot, &e, &what, err)) < 0) {
        if (rc != GCONV_CUDA_FAILED)
            e = cudaSuccess;
        goto out;
    }
    if (slot >= 0) { /* the last kernel reading the __constant__ slot is enqueued: free it */
        gctx_slot_unlock(ctx, s, 1);
        slot = -1;
    }
    CK(cudaEventRecord(st->ev_kern, st->s));
    CK(cudaMemcpyAsync(st->h_out, st->d_out8, job_out_bytes(plan, v, w, h), cudaMemcpyDeviceToHost, st->s));
    CK(cudaEventRecord(st->ev_down, st->s));
out:
    if (slot >= 0)
        gctx_slot_unlock(ctx, s, 1);
    if (e != cudaSuccess)
        rc = gctx_fail(ctx, e, what, err);
    return rc;
}

static int img_ok(const struct img *im, int w, int h, int ch, const char *what, char *err)
{
    if (!im || !im->px || im->w != w || im->h != h || im->ch != ch || im->stride < (size_t)w * ch)
        return edged_fail(err, EDGED_E_PARAM, "%s image must be %d x %d x %d with stride >= %d", what, w, h,
                          ch, w * ch);
    if (im->packed)
        return edged_fail(err, EDGED_E_PARAM, "%s image is a packed 1-bit map; give one of bytes", what);
    return 0;
}

static int stream_ok(const struct gconv_ctx *ctx, int s, char *err)
{
    if (!ctx)
        return edged_fail(err, EDGED_E_NO_CUDA, "no GPU context");
    if (s < 0 || s >= ctx->nstreams)
        return edged_fail(err, EDGED_E_PARAM, "stream %d invalid: 0..%d", s, ctx->nstreams - 1);
    return 0;
}

static int job_submit(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                      enum variant v, int block, int want_planes, char *err)
{
    struct gstream *st;
    int rc;

    if ((rc = stream_ok(ctx, s, err)) < 0 ||
        (rc = gconv_check(ctx, plan, in ? in->w : 0, in ? in->h : 0, v, block, err)) < 0 ||
        (rc = img_ok(in, in->w, in->h, plan->in_ch, "input", err)) < 0)
        return rc;
    st = &ctx->st[s];
    if (st->busy)
        return edged_fail(err, EDGED_E_PARAM, "stream %d already has a job in flight", s);
    if ((rc = job_enqueue(ctx, s, in, plan, v, block, want_planes, err)) < 0) {
        cudaStreamSynchronize(st->s); /* drain what was enqueued before the failure */
        return rc;
    }
    st->busy = 1;
    st->rc = 0;
    st->w = in->w;
    st->h = in->h;
    st->out_ch = plan->out_ch;
    st->packed = gconv_packs(plan, v, in->w);
    st->planes = plan->planes;
    st->pitch = gctx_pitch(ctx, in->w);
    st->plane_stride = gctx_plane_stride(ctx, in->w, in->h);
    return 0;
}

int gconv_submit(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                 enum variant v, int block, char *err)
{
    return job_submit(ctx, s, in, plan, v, block, 0, err);
}

int gconv_poll(struct gconv_ctx *ctx, int s)
{
    struct gstream *st;
    cudaError_t e;

    if (stream_ok(ctx, s, NULL) < 0 || !ctx->st[s].busy)
        return EDGED_E_PARAM;
    st = &ctx->st[s];
    if (st->rc < 0)
        return st->rc;
    if (gctx_enter(ctx, st->err) < 0)
        return st->rc = EDGED_E_GPU_FATAL;
    if ((e = cudaEventQuery(st->ev_down)) == cudaSuccess)
        return 1;
    if (e == cudaErrorNotReady)
        return 0;
    return st->rc = gctx_fail(ctx, e, "job", st->err);
}

static void job_times(struct gstream *st, struct gconv_times *t)
{
    if (!t)
        return;
    if (cudaEventElapsedTime(&t->upload_ms, st->ev_start, st->ev_up) != cudaSuccess ||
        cudaEventElapsedTime(&t->kernel_ms, st->ev_up, st->ev_kern) != cudaSuccess ||
        cudaEventElapsedTime(&t->download_ms, st->ev_kern, st->ev_down) != cudaSuccess)
        t->upload_ms = t->kernel_ms = t->download_ms = -1.0f;
}

int gconv_finish(struct gconv_ctx *ctx, int s, struct img *out, struct gconv_times *t, char *err)
{
    struct gstream *st;
    cudaError_t e;
    int rc;

    if ((rc = stream_ok(ctx, s, err)) < 0)
        return rc;
    st = &ctx->st[s];
    if (!st->busy)
        return edged_fail(err, EDGED_E_PARAM, "stream %d has no job", s);
    st->busy = 0;
    if (st->rc < 0) {
        if (err)
            memcpy(err, st->err, EDGED_ERR_LEN);
        return st->rc;
    }
    if ((rc = gctx_enter(ctx, err)) < 0)
        return rc;
    if ((e = cudaEventSynchronize(st->ev_down)) != cudaSuccess)
        return gctx_fail(ctx, e, "job", err);
    if ((rc = img_ok(out, st->w, st->h, st->out_ch, "output", err)) < 0)
        return rc;
    if (st->packed) /* the rows fit the buffer: w/8 bytes each, the stride was >= w */
        out->stride = (size_t)st->w / 8, out->packed = 1;
    for (int y = 0; y < st->h; y++) {
        size_t row = st->packed ? out->stride : (size_t)st->w * st->out_ch;
        memcpy(out->px + y * out->stride, st->h_out + y * row, row);
    }
    job_times(st, t);
    return 0;
}

/* The float result of the job just finished on stream s, still in the stream's arena. */
static int download_planes(struct gconv_ctx *ctx, int s, float *h_planes, char *err)
{
    struct gstream *st = &ctx->st[s];
    struct job_planes jp = job_planes_of(st, st->planes, st->plane_stride);
    size_t n = (size_t)st->w * st->h;
    const char *what = "";
    cudaError_t e = cudaSuccess;

    for (int p = 0; p < st->planes; p++)
        CK(cudaMemcpy2DAsync(h_planes + p * n, sizeof(float) * st->w, jp.dst + p * jp.stride,
                             sizeof(float) * st->pitch, sizeof(float) * st->w, st->h, cudaMemcpyDeviceToHost,
                             st->s));
    CK(cudaStreamSynchronize(st->s));
out:
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, what, err);
}

int gconv_run(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
              enum variant v, int block, struct img *out, float *h_planes, struct gconv_times *t, char *err)
{
    int rc;

    if ((rc = stream_ok(ctx, s, err)) < 0 || (rc = filter_plan_check(plan, err)) < 0 ||
        (rc = img_ok(out, in ? in->w : 0, in ? in->h : 0, plan->out_ch, "output", err)) < 0 ||
        (rc = job_submit(ctx, s, in, plan, v, block, h_planes != NULL, err)) < 0 ||
        (rc = gconv_finish(ctx, s, out, t, err)) < 0)
        return rc;
    return h_planes ? download_planes(ctx, s, h_planes, err) : 0;
}

/* One correlation of host floats on stream 0 (tests, bench --cpu comparisons). */
int gconv_conv_host(struct gconv_ctx *ctx, const float *h_in, float *h_out, int w, int h,
                    const struct kernel2d *k, enum border b, enum variant v, int block, float *kernel_ms,
                    char *err)
{
    struct gstream *st;
    struct conv_args a;
    struct job_planes jp;
    const char *what = "";
    cudaError_t e = cudaSuccess;
    size_t stride;
    int rc, slot = -1;

    if ((rc = common_ok(ctx, w, h, v, block, err)) < 0 || (rc = filter_kernel_check(k, err)) < 0)
        return rc;
    if ((unsigned)b >= BORDER_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "border %d invalid", (int)b);
    st = &ctx->st[0];
    if (st->busy)
        return edged_fail(err, EDGED_E_PARAM, "stream 0 has a job in flight");
    args_init(&a, ctx, st, w, h, b, v, block);
    a.k = k;
    a.cslot = 0;
    a.check_only = 1;
    if ((rc = conv_dispatch(&a, err)) < 0)
        return rc;
    stride = gctx_plane_stride(ctx, w, h);
    CK(gctx_grow_device(ctx, st, (void **)&st->d_arena, &st->d_arena_cap, sizeof(float) * stride * 4));
    jp = job_planes_of(st, 1, stride);
    memcpy(st->h_taps, k->taps, sizeof(float) * k->rows * k->cols);
    if (variant_uses_cslot(v) && (slot = gctx_slot_lock(ctx, 0, &e)) < 0) {
        what = "cudaStreamWaitEvent (constant slot)";
        goto out;
    }
    CK(cudaMemcpy2DAsync(jp.src, sizeof(float) * a.pitch, h_in, sizeof(float) * w, sizeof(float) * w, h,
                         cudaMemcpyHostToDevice, st->s));
    CK(cudaMemcpyAsync(st->d_taps, st->h_taps, sizeof(float) * k->rows * k->cols, cudaMemcpyHostToDevice,
                       st->s));
    CK(cudaEventRecord(st->ev_up, st->s));
    a.check_only = 0;
    a.cslot = slot;
    a.d_tmp = jp.tmp_b;
    if ((rc = run_conv(&a, k, st->d_taps, jp.src, jp.dst, err)) < 0) {
        if (rc == GCONV_CUDA_FAILED)
            e = a.cuerr, what = a.cuwhat;
        goto out;
    }
    CK(cudaEventRecord(st->ev_kern, st->s));
    CK(cudaMemcpy2DAsync(h_out, sizeof(float) * w, jp.dst, sizeof(float) * a.pitch, sizeof(float) * w, h,
                         cudaMemcpyDeviceToHost, st->s));
    CK(cudaStreamSynchronize(st->s));
    if (kernel_ms)
        CK(cudaEventElapsedTime(kernel_ms, st->ev_up, st->ev_kern));
out:
    if (slot >= 0)
        gctx_slot_unlock(ctx, 0, 1);
    if (e != cudaSuccess)
        rc = gctx_fail(ctx, e, what, err);
    return rc;
}
