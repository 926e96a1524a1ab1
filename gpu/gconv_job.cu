/* gconv_job.cu — jobs on a stream: pinned staging, upload, the plan's kernels, download; the
 * asynchronous submit/poll/finish, the synchronous run with its float planes, and the float-plane
 * correlation of host data. */
#include <string.h>

#include "gconv_internal.h"
#include "ginflate.h"

#define CK(call)                                                                                             \
    do {                                                                                                     \
        if ((e = (call)) != cudaSuccess) {                                                                   \
            what = #call;                                                                                    \
            goto out;                                                                                        \
        }                                                                                                    \
    } while (0)

/* Bytes of a job's u8 result. */
static size_t job_out_bytes(const struct filter_plan *plan, enum variant v, int w, int h)
{
    return gconv_packs(plan, v, w) ? (size_t)w / 8 * h : (size_t)w * h * plan->out_ch;
}

/* Pinned staging and device buffers of stream st for a w x h job with plan p. */
cudaError_t gjob_buffers(struct gconv_ctx *ctx, struct gstream *st, int w, int h,
                               const struct filter_plan *p, const char **what_out)
{
    size_t px = (size_t)w * h, stride = gctx_plane_stride(ctx, w, h);
    size_t arena = sizeof(float) * stride * (2 * gplan_loaded_planes(p) + 2);
    const char *what = "";
    cudaError_t e = cudaSuccess;

    CK(gctx_grow_pinned(ctx, (void **)&st->h_in, &st->h_in_cap, px * p->in_ch));
    CK(gctx_grow_pinned(ctx, (void **)&st->h_out, &st->h_out_cap, px * p->out_ch));
    CK(gctx_grow_device(ctx, st, (void **)&st->d_in8, &st->d_in8_cap, px * p->in_ch));
    CK(gctx_grow_device(ctx, st, (void **)&st->d_out8, &st->d_out8_cap, px * p->out_ch));
    if (p->filter == FILTER_CANNY) /* the arena holds Canny's scratch instead of float planes */
        arena = canny_scratch_bytes(w, h, p->in_ch, p->nconv > 0);
    CK(gctx_grow_device(ctx, st, (void **)&st->d_arena, &st->d_arena_cap, arena));
out:
    *what_out = what;
    return e;
}

/* Copies the input rows (none when the input is on the device already, in->px NULL, or already
 * page-locked, pinned 1) and the taps into the stream's pinned staging. The rows' copy, megabytes a
 * photograph on the one thread that submits every job, is what a pinned input spares it. */
static void job_stage(struct gstream *st, const struct img *in, int pinned, const struct filter_plan *plan)
{
    size_t row = (size_t)in->w * in->ch;

    for (int y = 0; in->px && !pinned && y < in->h; y++)
        memcpy(st->h_in + y * row, in->px + y * in->stride, row);
    for (int i = 0; i < plan->nconv; i++)
        memcpy(st->h_taps + i * FILTER_MAX_TAPS, plan->conv[i].taps,
               sizeof(float) * plan->conv[i].rows * plan->conv[i].cols);
}

/* Enqueues the whole job on stream s (limits were checked by the caller). GJOB_PLANES: the float
 * planes must be left in the arena's dst planes for download_planes (the fused edge kernel then
 * also writes its float L there). in->px NULL: the input is in st->d_in8 already (gjob_enqueue);
 * GJOB_IN_PINNED: it is uploaded from in->px, packed rows in page-locked memory. */
static int job_enqueue(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                       enum variant v, int block, unsigned flags, char *err)
{
    struct gstream *st = &ctx->st[s];
    int w = in->w, h = in->h, rc = 0, slot = -1, fused = gplan_fused_edge(plan, v);
    int pinned = (flags & GJOB_IN_PINNED) != 0;
    size_t px = (size_t)w * h;
    const char *what = "";
    cudaError_t e = cudaSuccess;
    struct gplan_dev d;

    if ((e = gjob_buffers(ctx, st, w, h, plan, &what)) != cudaSuccess)
        goto out;
    job_stage(st, in, pinned, plan);
    if (variant_uses_cslot(v) && (slot = gctx_slot_lock(ctx, s, &e)) < 0) {
        what = "cudaStreamWaitEvent (constant slot)";
        goto out;
    }
    if (in->px) {
        CK(cudaEventRecord(st->ev_start, st->s));
        CK(cudaMemcpyAsync(st->d_in8, pinned ? in->px : st->h_in, px * in->ch, cudaMemcpyHostToDevice,
                           st->s));
    }
    if (!fused)
        CK(cudaMemcpyAsync(st->d_taps, st->h_taps, sizeof(float) * FILTER_MAX_TAPS * plan->nconv,
                           cudaMemcpyHostToDevice, st->s));
    CK(cudaEventRecord(st->ev_up, st->s));
    memset(&d, 0, sizeof(d));
    d.stream = st->s, d.tc = &st->tc, d.fft = &st->fft, d.d_in8 = st->d_in8, d.d_out8 = st->d_out8, d.d_arena = st->d_arena;
    d.stride = gctx_plane_stride(ctx, w, h), d.d_taps = st->d_taps, d.w = w, d.h = h;
    d.want_planes = (flags & GJOB_PLANES) != 0;
    if ((rc = gplan_kernels(ctx, &d, plan, v, block, slot, &e, &what, err)) < 0) {
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
                      enum variant v, int block, unsigned flags, char *err)
{
    struct gstream *st;
    int rc;

    if ((rc = stream_ok(ctx, s, err)) < 0 ||
        (rc = gconv_check(ctx, plan, in ? in->w : 0, in ? in->h : 0, v, block, err)) < 0 ||
        (rc = img_ok(in, in->w, in->h, plan->in_ch, "input", err)) < 0)
        return rc;
    if ((flags & GJOB_IN_PINNED) && in->stride != (size_t)in->w * in->ch)
        return edged_fail(err, EDGED_E_PARAM, "a pinned input's rows must be packed: stride %zu, want %d",
                          in->stride, in->w * in->ch);
    st = &ctx->st[s];
    if (st->busy)
        return edged_fail(err, EDGED_E_PARAM, "stream %d already has a job in flight", s);
    return gjob_enqueue(ctx, s, in, plan, v, block, flags, err);
}

int gjob_enqueue(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                 enum variant v, int block, unsigned flags, char *err)
{
    struct gstream *st = &ctx->st[s];
    int rc;

    if ((rc = job_enqueue(ctx, s, in, plan, v, block, flags, err)) < 0) {
        cudaStreamSynchronize(st->s); /* drain what was enqueued before the failure */
        return rc;
    }
    st->busy = 1;
    st->rc = 0;
    st->jpeg_enc = 0;
    st->png_status = NULL;
    st->png_enc = 0;
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

int gconv_submit_pinned(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                        enum variant v, int block, char *err)
{
    return job_submit(ctx, s, in, plan, v, block, GJOB_IN_PINNED, err);
}

/* GCONV_E_PNG_DECLINED with a message in err when the PNG job that ended on st was declined by the
 * device (its inflate's verdict, or the unfilter's: a filter type over 4, or a wait it gave up, in
 * st->png_status: gconv_png.cu), else 0. */
static int job_png_declined(const struct gstream *st, char *err)
{
    const char *what = "gave up unfiltering";

    if (!st->png_status || (st->png_status[0] == GINFLATE_OK && st->png_status[1] == 0))
        return 0;
    if (st->png_status[0] != GINFLATE_OK)
        what = "declined to inflate";
    else if (st->png_status[1] == PNG_UNF_BAD_FILTER)
        what = "found a bad filter type in";
    return edged_fail(err, GCONV_E_PNG_DECLINED, "the device %s the PNG", what);
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
        return job_png_declined(st, st->err) < 0 ? st->rc = GCONV_E_PNG_DECLINED : 1;
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
    if ((rc = job_png_declined(st, err)) < 0)
        return st->rc = rc;
    job_times(st, t);
    return out ? gconv_finish_copy(ctx, s, out, err) : 0;
}

int gconv_finish_copy(struct gconv_ctx *ctx, int s, struct img *out, char *err)
{
    struct gstream *st;
    int rc;

    if ((rc = stream_ok(ctx, s, err)) < 0)
        return rc;
    st = &ctx->st[s];
    if (st->busy || st->rc < 0 || st->w < 1)
        return edged_fail(err, EDGED_E_PARAM, "stream %d has no finished job", s);
    if ((rc = img_ok(out, st->w, st->h, st->out_ch, "output", err)) < 0)
        return rc;
    if (st->packed) /* the rows fit the buffer: w/8 bytes each, the stride was >= w */
        out->stride = (size_t)st->w / 8, out->packed = 1;
    for (int y = 0; y < st->h; y++) {
        size_t row = st->packed ? out->stride : (size_t)st->w * st->out_ch;
        memcpy(out->px + y * out->stride, st->h_out + y * row, row);
    }
    return 0;
}

/* The float result of the job just finished on stream s, still in the stream's arena. */
static int download_planes(struct gconv_ctx *ctx, int s, float *h_planes, char *err)
{
    struct gstream *st = &ctx->st[s];
    struct gplan_planes jp = gplan_planes_of(st->d_arena, st->planes, st->plane_stride);
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

    if (h_planes && plan && plan->filter == FILTER_CANNY)
        return edged_fail(err, EDGED_E_PARAM, "canny has no float planes to return");
    if ((rc = stream_ok(ctx, s, err)) < 0 || (rc = filter_plan_check(plan, err)) < 0 ||
        (rc = img_ok(out, in ? in->w : 0, in ? in->h : 0, plan->out_ch, "output", err)) < 0 ||
        (rc = job_submit(ctx, s, in, plan, v, block, h_planes ? GJOB_PLANES : 0, err)) < 0 ||
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
    struct gplan_planes jp;
    const char *what = "";
    cudaError_t e = cudaSuccess;
    size_t stride;
    int rc, slot = -1;

    if ((rc = gplan_request_ok(ctx, w, h, v, block, err)) < 0 || (rc = filter_kernel_check(k, err)) < 0)
        return rc;
    if ((unsigned)b >= BORDER_COUNT)
        return edged_fail(err, EDGED_E_PARAM, "border %d invalid", (int)b);
    st = &ctx->st[0];
    if (st->busy)
        return edged_fail(err, EDGED_E_PARAM, "stream 0 has a job in flight");
    conv_args_init(&a, ctx, st, w, h, b, v, block);
    a.k = k;
    a.cslot = 0;
    a.check_only = 1;
    if ((rc = conv_dispatch(&a, err)) < 0)
        return rc;
    stride = gctx_plane_stride(ctx, w, h);
    CK(gctx_grow_device(ctx, st, (void **)&st->d_arena, &st->d_arena_cap, sizeof(float) * stride * 4));
    jp = gplan_planes_of(st->d_arena, 1, stride);
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
    if ((rc = conv_apply(&a, k, st->d_taps, jp.src, jp.dst, err)) < 0) {
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
