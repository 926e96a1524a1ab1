/* gconv_plan.cu — a filter plan on the device: the per-pixel kernels around the convolutions
 * (unpack, magnitude, pack), the variant dispatch, the limits check and the kernels of one image. */
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

/* MAGNITUDE: a = plan_magnitude(a, b). cut_on: the threshold step after this one is folded in
 * (step_fold), a = plan_threshold(plan_magnitude(a, b), cut). */
__global__ void k_magnitude(float *__restrict__ d_a, const float *__restrict__ d_b, int w, int h, int pitch,
                            int cut_on, float cut)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    size_t i = (size_t)y * pitch + x;
    float m = plan_magnitude(d_a[i], d_b[i]);
    d_a[i] = cut_on ? plan_threshold(m, cut) : m;
}

/* THRESHOLD step that no neighbour took in (step_fold): its own pass, src -> dst. */
__global__ void k_threshold(const float *__restrict__ d_src, float *__restrict__ d_dst, int w, int h, int pitch,
                            float cut)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    size_t i = (size_t)y * pitch + x;
    d_dst[i] = plan_threshold(d_src[i], cut);
}

/* A gray step after rgb ones: plane 0 = the luma of planes 0, 1, 2 (the float values), with
 * pixel_luma's roundings on the host (three products, two sums, none contracted into an fma). */
__global__ void k_luma(float *__restrict__ d_planes, size_t stride, int w, int h, int pitch)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    size_t i = (size_t)y * pitch + x;
    d_planes[i] = __fadd_rn(__fadd_rn(__fmul_rn(0.299f, d_planes[i]), __fmul_rn(0.587f, d_planes[stride + i])),
                            __fmul_rn(0.114f, d_planes[2 * stride + i]));
}

/* Post-processing (pixel_post) of every plane and the alpha copy, in one pass writing the u8
 * interleaved result. cut_on: a trailing threshold step is folded in (step_fold), each value
 * becomes plan_threshold(v, cut) first, as that step's own pass would have stored it. */
__global__ void k_pack(const float *__restrict__ d_planes, size_t stride, const uint8_t *__restrict__ d_in8,
                       uint8_t *__restrict__ d_out8, int w, int h, int pitch, int in_ch, int planes,
                       int out_ch, int post, float threshold, int cut_on, float cut)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    size_t pix = (size_t)y * w + x;
    uint8_t *o = d_out8 + pix * out_ch;
    for (int p = 0; p < planes; p++) {
        float v = d_planes[p * stride + (size_t)y * pitch + x];
        o[p] = pixel_post(cut_on ? plan_threshold(v, cut) : v, post, threshold);
    }
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
    case VARIANT_FFT:
        return conv_fft(a, err);
    case VARIANT_TF32X3:
        return conv_tf32x3(a, err);
    default:
        return edged_fail(err, EDGED_E_PARAM, "variant %s is not a GPU variant", variant_name(a->variant));
    }
}

int conv_apply(struct conv_args *a, const struct kernel2d *k, const float *d_taps, const float *d_in,
               float *d_out, char *err)
{
    a->k = k;
    a->d_taps = d_taps;
    a->d_in = d_in;
    a->d_out = d_out;
    return conv_dispatch(a, err);
}

void conv_args_init(struct conv_args *a, struct gconv_ctx *ctx, struct gstream *st, int w, int h,
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
    a->ctx = ctx;
    a->fft = st ? &st->fft : NULL;
}

int gplan_request_ok(struct gconv_ctx *ctx, int w, int h, enum variant v, int block, char *err)
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

    if ((rc = gplan_request_ok(ctx, w, h, v, block, err)) < 0 || (rc = filter_plan_check(plan, err)) < 0)
        return rc;
    if (plan->filter == FILTER_CANNY) /* its own kernels (canny.cu), any pre-blur size */
        return v == VARIANT_FAST ? 0 : edged_fail(err, EDGED_E_VARIANT_LIMIT, "variant %s does not run canny on "
                                                  "the GPU; fast does", variant_name(v));
    for (int i = 0; i < plan->nconv; i++) {
        conv_args_init(&a, ctx, NULL, w, h, plan->border, v, block);
        a.k = &plan->conv[i];
        a.cslot = 0;
        a.check_only = 1;
        if ((rc = conv_dispatch(&a, err)) < 0)
            return rc;
    }
    return 0;
}

/* Where a THRESHOLD step of a stepwise plan runs. Its own pass (k_threshold) reads and writes every
 * plane once more; folded into a neighbour's epilogue it costs nothing and gives the same bits, for
 * plan_threshold is applied to the very float the pass would have read:
 * - FOLD_MAGNITUDE: right after a MAGNITUDE step (and not taking the luma first, to_gray), the
 *   magnitude kernel writes the map instead of the magnitude;
 * - FOLD_PACK: the last step, unless the caller wants the float planes (they must hold the map):
 *   the pack kernel maps the planes of the step before.
 * The one decision for run_steps (which skips the folded step) and gplan_kernels (the pack's cut). */
enum step_fold { FOLD_NONE, FOLD_MAGNITUDE, FOLD_PACK };

static enum step_fold step_fold(const struct filter_plan *plan, int i, int want_planes)
{
    const struct plan_step *st = &plan->step[i];

    if (!filter_plan_stepwise(plan) || st->combine != COMBINE_THRESHOLD)
        return FOLD_NONE;
    if (i > 0 && plan->step[i - 1].combine == COMBINE_MAGNITUDE && !st->to_gray)
        return FOLD_MAGNITUDE;
    return i == plan->nsteps - 1 && !want_planes ? FOLD_PACK : FOLD_NONE;
}

/* One plane through step st: SINGLE conv0 -> dst; MAGNITUDE conv0 -> dst, conv1 -> tmp_a, then
 * dst = |(dst, tmp_a)| (or its map under *cut, a threshold folded in; cut NULL: none), on fast
 * in one pass where fast_magnitude_can; CHAIN
 * conv0 -> tmp_a -> conv1 -> dst (the intermediate stays on the device, in float); THRESHOLD
 * src -> dst. Separable variants use tmp_b between their passes. The step's kernels are
 * plan->conv[st->conv0..], their taps at d_taps + FILTER_MAX_TAPS * index. */
static int run_step_plane(struct conv_args *a, const struct filter_plan *plan, const struct plan_step *st,
                          const float *d_taps, const float *src, float *dst, float *tmp_a, float *tmp_b,
                          const float *cut, char *err)
{
    const struct kernel2d *k = plan->conv + st->conv0;
    const float *taps0 = d_taps + (size_t)FILTER_MAX_TAPS * st->conv0, *taps1 = taps0 + FILTER_MAX_TAPS;
    dim3 block(PIPE_BX, PIPE_BY), grid(div_up(a->w, PIPE_BX), div_up(a->h, PIPE_BY));
    int rc;

    a->d_tmp = tmp_b;
    a->border = st->border;
    switch (st->combine) {
    case COMBINE_THRESHOLD:
        k_threshold<<<grid, block, 0, a->stream>>>(src, dst, a->w, a->h, a->pitch, st->value);
        return conv_launched(a, "threshold kernel");
    case COMBINE_CHAIN:
        if ((rc = conv_apply(a, &k[0], taps0, src, tmp_a, err)) < 0)
            return rc;
        return conv_apply(a, &k[1], taps1, tmp_a, dst, err);
    case COMBINE_MAGNITUDE:
        if (a->variant == VARIANT_FAST && fast_magnitude_can(&k[0], &k[1])) { /* one pass, the same bits */
            a->d_in = src, a->d_out = dst;
            return fast_stream_magnitude(a, &k[0], &k[1], cut != NULL, cut ? *cut : 0.0f);
        }
        if ((rc = conv_apply(a, &k[0], taps0, src, dst, err)) < 0 ||
            (rc = conv_apply(a, &k[1], taps1, src, tmp_a, err)) < 0)
            return rc;
        k_magnitude<<<grid, block, 0, a->stream>>>(dst, tmp_a, a->w, a->h, a->pitch, cut != NULL, cut ? *cut : 0.0f);
        return conv_launched(a, "magnitude kernel");
    default:
        return conv_apply(a, &k[0], taps0, src, dst, err);
    }
}

/* Plane p through a plan of one step, from the arena's src planes to its dst planes. */
static int run_plane(struct conv_args *a, const struct filter_plan *plan, const float *d_taps,
                     struct gplan_planes *jp, int p, char *err)
{
    return run_step_plane(a, plan, &plan->step[0], d_taps, jp->src + p * jp->stride, jp->dst + p * jp->stride,
                          jp->tmp_a, jp->tmp_b, NULL, err);
}

/* A stepwise plan on the device: its loaded planes (np of them at d_arena) go through every step in
 * float, ping-ponging between two sets of planes, with no copy to the host and no rounding between
 * the steps; a threshold step folded into a neighbour (step_fold) has no pass of its own. *out: the
 * set the result ends in, for the pack to read where it is; with want_planes it is copied to (and
 * *out is) the dst planes of gplan_planes_of(arena, plan->planes), where download_planes reads. */
static int run_steps(struct conv_args *a, const struct filter_plan *plan, const float *d_taps, float *d_arena,
                     size_t stride, int want_planes, const float **out, char *err)
{
    int np = gplan_loaded_planes(plan), rc;
    float *cur = d_arena, *nxt = d_arena + np * stride, *tmp_a = d_arena + 2 * np * stride, *tmp_b = tmp_a + stride;
    float *dst = gplan_planes_of(d_arena, plan->planes, stride).dst, *t;
    dim3 block(PIPE_BX, PIPE_BY), grid(div_up(a->w, PIPE_BX), div_up(a->h, PIPE_BY));

    for (int i = 0; i < plan->nsteps; i++) {
        const struct plan_step *st = &plan->step[i];
        int next_in = i + 1 < plan->nsteps && step_fold(plan, i + 1, want_planes) == FOLD_MAGNITUDE;
        if (st->to_gray && np == 3) {
            k_luma<<<grid, block, 0, a->stream>>>(cur, stride, a->w, a->h, a->pitch);
            if ((rc = conv_launched(a, "luma kernel")) < 0)
                return rc;
            np = 1;
        }
        if (step_fold(plan, i, want_planes) != FOLD_NONE)
            continue;
        for (int p = 0; p < np; p++)
            if ((rc = run_step_plane(a, plan, st, d_taps, cur + p * stride, nxt + p * stride, tmp_a, tmp_b,
                                     next_in ? &plan->step[i + 1].value : NULL, err)) < 0)
                return rc;
        t = cur, cur = nxt, nxt = t;
    }
    *out = cur;
    if (!want_planes || cur == dst)
        return 0;
    *out = dst;
    if ((a->cuerr = cudaMemcpyAsync(dst, cur, sizeof(float) * stride * np, cudaMemcpyDeviceToDevice, a->stream)) !=
        cudaSuccess) {
        a->cuwhat = "cudaMemcpyAsync (pipeline result)";
        return GCONV_CUDA_FAILED;
    }
    return 0;
}

int gplan_fused_edge(const struct filter_plan *plan, enum variant v)
{
    return v == VARIANT_FAST && !filter_plan_stepwise(plan) && fast_edge_can(plan);
}

/* A job's map comes back packed, 8 pixels per byte (struct img packed), when the caller takes it
 * so and the fused edge kernel writes it so; the download is then 8 times smaller. */
int gconv_packs(const struct filter_plan *plan, enum variant v, int w)
{
    return plan->accept_packed && gplan_fused_edge(plan, v) && fast_edge_packs(plan->in_ch, w);
}

int gplan_kernels(struct gconv_ctx *ctx, const struct gplan_dev *d, const struct filter_plan *plan,
                       enum variant v, int block, int slot, cudaError_t *cuerr, const char **cuwhat, char *err)
{
    int w = d->w, h = d->h, pitch = gctx_pitch(ctx, w), rc, cut_on;
    struct gplan_planes jp = gplan_planes_of(d->d_arena, plan->planes, d->stride);
    const float *result = jp.dst; /* the planes the pack reads */
    struct conv_args a;
    dim3 pb(PIPE_BX, PIPE_BY), pg(div_up(w, PIPE_BX), div_up(h, PIPE_BY));

    *cuerr = cudaSuccess;
    if (plan->filter == FILTER_CANNY) /* u8 in, u8 map out; gconv_check allowed fast only */
        return (*cuerr = canny_plan_launch(plan, d->d_in8, d->d_taps, d->d_out8, d->d_arena, w, h, d->stream,
                                           cuwhat)) == cudaSuccess ? 0 : GCONV_CUDA_FAILED;
    if (gplan_fused_edge(plan, v)) { /* one pass: u8 in, u8 map (and alpha) out */
        fast_edge_launch(d->d_in8, d->d_out8, d->want_planes ? jp.dst : NULL, pitch, w, h, plan->in_ch,
                         plan->threshold, plan->border, gconv_packs(plan, v, w), d->stream);
        *cuwhat = "fast edge kernel";
        return (*cuerr = cudaGetLastError()) == cudaSuccess ? 0 : GCONV_CUDA_FAILED;
    }
    k_unpack<<<pg, pb, 0, d->stream>>>(d->d_in8, jp.src, d->stride, w, h, pitch, plan->in_ch,
                                       gplan_loaded_planes(plan), plan->gray);
    *cuwhat = "unpack kernel";
    if ((*cuerr = cudaGetLastError()) != cudaSuccess)
        return GCONV_CUDA_FAILED;
    conv_args_init(&a, ctx, NULL, w, h, plan->border, v, block);
    a.stream = d->stream;
    a.tc = d->tc;
    a.cslot = slot;
    a.taps_loaded = d->taps_loaded && !filter_plan_stepwise(plan); /* a pipeline reloads its slot per kernel */
    a.fft = d->fft;
    if (filter_plan_stepwise(plan)) {
        if ((rc = run_steps(&a, plan, d->d_taps, d->d_arena, d->stride, d->want_planes, &result, err)) < 0) {
            if (rc == GCONV_CUDA_FAILED)
                *cuerr = a.cuerr, *cuwhat = a.cuwhat;
            return rc;
        }
    } else if (v == VARIANT_FFT && plan->combine == COMBINE_SINGLE) { /* every plane in one batch of tiles */
        a.planes = plan->planes, a.plane_stride = d->stride;
    }
    for (int p = 0; !filter_plan_stepwise(plan) && p < (a.planes > 1 ? 1 : plan->planes); p++)
        if ((rc = run_plane(&a, plan, d->d_taps, &jp, p, err)) < 0) {
            if (rc == GCONV_CUDA_FAILED)
                *cuerr = a.cuerr, *cuwhat = a.cuwhat;
            return rc;
        }
    cut_on = step_fold(plan, plan->nsteps - 1, d->want_planes) == FOLD_PACK;
    k_pack<<<pg, pb, 0, d->stream>>>(result, d->stride, d->d_in8, d->d_out8, w, h, pitch, plan->in_ch,
                                     plan->planes, plan->out_ch, plan->post, plan->threshold, cut_on,
                                     plan->step[plan->nsteps - 1].value);
    *cuwhat = "pack kernel";
    return (*cuerr = cudaGetLastError()) == cudaSuccess ? 0 : GCONV_CUDA_FAILED;
}
