/* gconv_png.cu — PNG input decoded on the device: the PNG state of a context, the batched decode
 * (upload, ginflate, unfilter, expansion) into the streams' input buffers, jobs whose input is a
 * PNG's zlib stream, and the decode to host images of the tests and the bench.
 *
 * A batch maps onto streams as the JPEG path's does: each job uploads its stream on its own CUDA
 * stream, the context's decode stream waits for those uploads, inflates the whole batch in one
 * ginflate_enqueue call and unfilters it in one launch (a warp per band of rows of every image),
 * and each job's stream waits for that, expands its rows into its input buffer and runs its plan.
 * Nothing waits on the host: the device's verdicts travel with the job (a pinned status pair copied
 * before ev_down) and gconv_poll / gconv_finish turn a declined one into GCONV_E_PNG_DECLINED. */
#include <string.h>

#include "clock.h"
#include "gconv_internal.h"
#include "ginflate.h"
#include "png_layout.h"

/* Per-stream slot of pinned and device memory: the palette as RGBA, then the status pair. */
#define PNG_RGBA_BYTES 1024
#define PNG_SLOT_BYTES (PNG_RGBA_BYTES + 2 * sizeof(int))

struct gpng {
    struct ginflate *inf;
    cudaStream_t s_dec;
    cudaEvent_t ev_up, ev_dec;
    uint8_t *h_slots, *d_slots; /* GCONV_MAX_STREAMS slots of PNG_SLOT_BYTES */
    int *d_verdicts;            /* ginflate's status words of a batch, GCONV_PNG_MAX_BATCH */
    uint8_t *d_z[GCONV_MAX_STREAMS], *d_raw[GCONV_MAX_STREAMS];
    size_t z_cap[GCONV_MAX_STREAMS], raw_cap[GCONV_MAX_STREAMS];
};

/* One image of a decode call: the caller fills every buffer. */
struct pdec {
    const struct png_layout *lay;
    const uint8_t *z;
    size_t z_len;
    int z_pinned;   /* z is page-locked: uploaded from where it is, h_z unused */
    cudaStream_t s; /* uploads and expands; the decode stream waits for its uploads */
    uint8_t *h_z, *d_z, *d_raw, *d_dst;
    uint8_t *h_slot, *d_slot;
    int rc;
    char *err;
};

/* ---- state ---- */

static void gpng_free(struct gconv_ctx *ctx, struct gpng *g)
{
    if (!g)
        return;
    if (g->s_dec)
        cudaStreamSynchronize(g->s_dec);
    for (int i = 0; i < GCONV_MAX_STREAMS; i++) {
        gctx_free_device(ctx, g->d_z[i], g->z_cap[i]);
        gctx_free_device(ctx, g->d_raw[i], g->raw_cap[i]);
    }
    cudaFree(g->d_slots);
    cudaFree(g->d_verdicts);
    cudaFreeHost(g->h_slots);
    ginflate_destroy(g->inf);
    if (g->ev_dec)
        cudaEventDestroy(g->ev_dec);
    if (g->ev_up)
        cudaEventDestroy(g->ev_up);
    if (g->s_dec)
        cudaStreamDestroy(g->s_dec);
    free(g);
}

static void gpng_close(struct gconv_ctx *ctx)
{
    if (ctx) {
        gpng_free(ctx, ctx->png);
        ctx->png = NULL;
    }
}

static size_t gpng_mem(const struct gconv_ctx *ctx);

/* ctx's PNG state, made on first use (gconv calls on one context come from one thread); the
 * context frees it and counts its bytes through the functions set here. */
static int gpng_get(struct gconv_ctx *ctx, struct gpng **out, char *err)
{
    struct gpng *g;
    int rc;

    if ((rc = gctx_enter(ctx, err)) < 0)
        return rc;
    if (ctx->png) {
        *out = ctx->png;
        return 0;
    }
    if (!(g = (struct gpng *)calloc(1, sizeof(*g))))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the PNG decode state");
    GCTX_CU(cudaStreamCreateWithFlags(&g->s_dec, cudaStreamNonBlocking));
    GCTX_CU(cudaEventCreateWithFlags(&g->ev_up, cudaEventDisableTiming));
    GCTX_CU(cudaEventCreateWithFlags(&g->ev_dec, cudaEventDisableTiming));
    GCTX_CU(cudaHostAlloc((void **)&g->h_slots, GCONV_MAX_STREAMS * PNG_SLOT_BYTES, cudaHostAllocDefault));
    GCTX_CU(cudaMalloc((void **)&g->d_slots, GCONV_MAX_STREAMS * PNG_SLOT_BYTES));
    GCTX_CU(cudaMalloc((void **)&g->d_verdicts, GCONV_PNG_MAX_BATCH * sizeof(int)));
    memset(g->h_slots, 0, GCONV_MAX_STREAMS * PNG_SLOT_BYTES);
    rc = ginflate_create(&g->inf, err);
out:
    if (rc < 0) {
        gpng_free(ctx, g);
        return rc;
    }
    ctx->png = *out = g;
    ctx->png_close = gpng_close, ctx->png_mem = gpng_mem;
    return 0;
}

static size_t gpng_mem(const struct gconv_ctx *ctx)
{
    const struct gpng *g = ctx->png;

    return g ? ginflate_mem(g->inf) + GCONV_MAX_STREAMS * PNG_SLOT_BYTES + GCONV_PNG_MAX_BATCH * sizeof(int) : 0;
}

int gconv_png_available(const struct gconv_ctx *ctx)
{
    return ctx != NULL && !gconv_is_dead(ctx);
}

int gconv_png_decoding(const struct gconv_ctx *ctx)
{
    return ctx && ctx->png && cudaEventQuery(ctx->png->ev_dec) == cudaErrorNotReady;
}

static const volatile int *slot_status(const uint8_t *slot)
{
    return (const volatile int *)(slot + PNG_RGBA_BYTES);
}


/* ---- decode ---- */

/* Whether the device path serves lay (the kinds png_decode.c serves; the caller's layout came from
 * there, this is the contract's guard). */
static int layout_ok(const struct png_layout *lay)
{
    int pal = lay->color == PNG_COLOR_PALETTE;
    int depth_ok = pal ? lay->depth == 1 || lay->depth == 2 || lay->depth == 4 || lay->depth == 8 : lay->depth == 8;

    return depth_ok && lay->w >= 1 && lay->h >= 1 && lay->bpp >= 1 && lay->bpp <= 4 && lay->out_ch >= 1 &&
           lay->out_ch <= 4 && lay->rowbytes >= 1 && (!lay->has_key || lay->out_ch == lay->bpp + 1);
}

/* Bytes of lay's inflated stream, or 0 when they overflow. */
static size_t raw_bytes(const struct png_layout *lay)
{
    size_t n;

    return size_mul(lay->rowbytes + 1, lay->h, &n) ? 0 : n;
}

/* Bytes to allocate for them: the stream, then the unfilter kernel's padding and scratch (0 when
 * that overflows). */
static size_t raw_alloc_bytes(const struct png_layout *lay)
{
    return png_unfilter_bytes(lay->rowbytes, lay->h);
}

/* Uploads each image's stream and palette on its stream, and makes the decode stream wait for them
 * (one event, recorded and waited for in turn: a wait takes the record before it). A stream not yet
 * in pinned memory is staged first: that copy of megabytes a photograph is what a pinned z (the
 * service's request threads made it) spares the one thread that submits. */
static int pdec_upload(struct gconv_ctx *ctx, struct gpng *g, struct pdec *pd, int n, char *err)
{
    int rc = 0;

    for (int i = 0; i < n; i++) {
        const uint8_t *h_src = pd[i].z;
        if (pd[i].rc < 0)
            continue;
        if (!pd[i].z_pinned) {
            memcpy(pd[i].h_z, pd[i].z, pd[i].z_len);
            h_src = pd[i].h_z;
        }
        memcpy(pd[i].h_slot, pd[i].lay->rgba, PNG_RGBA_BYTES);
        GCTX_CU(cudaMemcpyAsync(pd[i].d_z, h_src, pd[i].z_len, cudaMemcpyHostToDevice, pd[i].s));
        GCTX_CU(cudaMemcpyAsync(pd[i].d_slot, pd[i].h_slot, PNG_RGBA_BYTES, cudaMemcpyHostToDevice, pd[i].s));
        GCTX_CU(cudaEventRecord(g->ev_up, pd[i].s));
        GCTX_CU(cudaStreamWaitEvent(g->s_dec, g->ev_up, 0));
    }
out:
    return rc;
}

/* The inflate and unfilter of the uploaded images (rc 0) as one batch on the decode stream:
 * ginflate writes its verdicts into one array, the unfilter launch copies each into its image's
 * slot. Scratch that cannot grow refuses them all (the CPU decodes them); returns 0 or the error
 * of a call that fails them all. */
static int pdec_inflate(struct gconv_ctx *ctx, struct gpng *g, struct pdec *pd, int n, char *err)
{
    const uint8_t *d_in[GCONV_PNG_MAX_BATCH];
    uint8_t *d_out[GCONV_PNG_MAX_BATCH];
    size_t in_len[GCONV_PNG_MAX_BATCH], out_len[GCONV_PNG_MAX_BATCH];
    struct png_unf_batch b;
    int rc = 0;

    memset(&b, 0, sizeof(b));
    for (int i = 0; i < n; i++) {
        if (pd[i].rc < 0)
            continue;
        struct png_unf_image *im = &b.im[b.n];
        d_in[b.n] = pd[i].d_z, in_len[b.n] = pd[i].z_len;
        d_out[b.n] = pd[i].d_raw, out_len[b.n] = raw_bytes(pd[i].lay);
        im->d_raw = pd[i].d_raw, im->rowbytes = pd[i].lay->rowbytes, im->h = pd[i].lay->h;
        im->bpp = pd[i].lay->bpp, im->d_inflated = g->d_verdicts + b.n;
        im->d_status = (int *)(pd[i].d_slot + PNG_RGBA_BYTES);
        b.n++;
    }
    if (b.n == 0)
        return 0;
    rc = ginflate_enqueue(g->inf, g->s_dec, b.n, d_in, in_len, d_out, out_len, g->d_verdicts, err);
    if (rc == EDGED_E_GPU_OOM) {
        for (int i = 0; i < n; i++)
            if (pd[i].rc == 0)
                pd[i].rc = edged_fail(pd[i].err, GCONV_E_PNG_REFUSED, "device inflate: %s", err);
        return 0;
    }
    if (rc < 0)
        return rc;
    GCTX_CU(png_unfilter_launch(&b, g->s_dec));
out:
    return rc;
}

/* Uploads, inflates and unfilters pd on the decode stream, then enqueues each image's expansion
 * into its d_dst and the copy of its verdicts into its pinned slot on its own stream. The images'
 * rc say how each went; returns 0 or the error of a CUDA call that fails them all. */
static int pdec_run(struct gconv_ctx *ctx, struct gpng *g, struct pdec *pd, int n, char *err)
{
    int rc;

    if ((rc = pdec_upload(ctx, g, pd, n, err)) < 0 || (rc = pdec_inflate(ctx, g, pd, n, err)) < 0)
        return rc;
    GCTX_CU(cudaEventRecord(g->ev_dec, g->s_dec));
    for (int i = 0; i < n; i++) {
        if (pd[i].rc < 0)
            continue;
        GCTX_CU(cudaStreamWaitEvent(pd[i].s, g->ev_dec, 0));
        GCTX_CU(png_expand_launch(pd[i].lay, pd[i].d_raw, pd[i].d_slot, pd[i].d_dst, pd[i].s));
        GCTX_CU(cudaMemcpyAsync(pd[i].h_slot + PNG_RGBA_BYTES, pd[i].d_slot + PNG_RGBA_BYTES, 2 * sizeof(int),
                                cudaMemcpyDeviceToHost, pd[i].s));
    }
out:
    return rc;
}

/* ---- jobs ---- */

/* Checks job jb against its layout, sizes its stream's buffers and describes its decode in pd. */
static int job_prepare(struct gconv_ctx *ctx, struct gpng *g, struct gconv_png_job *jb, struct pdec *pd)
{
    const struct png_layout *lay = jb->lay;
    struct gstream *st;
    const char *what = "";
    cudaError_t e;
    size_t raw, stage;

    memset(pd, 0, sizeof(*pd));
    pd->lay = lay, pd->z = jb->z, pd->z_len = jb->z_len, pd->z_pinned = jb->z_pinned, pd->err = jb->err;
    if (jb->s < 0 || jb->s >= ctx->nstreams || ctx->st[jb->s].busy)
        return pd->rc = edged_fail(jb->err, EDGED_E_PARAM, "stream %d invalid or busy", jb->s);
    if (!lay || !jb->z || !jb->plan || filter_plan_check(jb->plan, jb->err) < 0)
        return pd->rc = edged_fail(jb->err, EDGED_E_PARAM, "PNG job without data or with a bad plan");
    if (!layout_ok(lay) || !raw_bytes(lay) || !(raw = raw_alloc_bytes(lay)) || lay->w > INT32_MAX ||
        lay->h > INT32_MAX)
        return pd->rc = edged_fail(jb->err, GCONV_E_PNG_REFUSED, "the device does not decode this PNG kind");
    if (lay->out_ch != jb->plan->in_ch || (jb->w && (jb->w != (int)lay->w || jb->h != (int)lay->h)))
        return pd->rc = edged_fail(jb->err, GCONV_E_PNG_REFUSED,
                                   "the PNG is %u x %u x %d, the job expects %d x %d x %d", lay->w, lay->h,
                                   lay->out_ch, jb->w, jb->h, jb->plan->in_ch);
    jb->w = (int)lay->w, jb->h = (int)lay->h;
    if ((pd->rc = gconv_check(ctx, jb->plan, jb->w, jb->h, jb->v, jb->block, jb->err)) < 0)
        return pd->rc;
    st = &ctx->st[jb->s];
    stage = jb->z_pinned ? 0 : jb->z_len; /* a pinned z needs no staging */
    if ((e = gjob_buffers(ctx, st, jb->w, jb->h, jb->plan, &what)) != cudaSuccess ||
        (e = gctx_grow_pinned(ctx, (void **)&st->h_in, &st->h_in_cap, stage)) != cudaSuccess ||
        (e = gctx_grow_device(ctx, st, (void **)&g->d_z[jb->s], &g->z_cap[jb->s], jb->z_len)) != cudaSuccess ||
        (e = gctx_grow_device(ctx, st, (void **)&g->d_raw[jb->s], &g->raw_cap[jb->s], raw)) != cudaSuccess)
        return pd->rc = gctx_fail(ctx, e, *what ? what : "PNG buffers", jb->err);
    pd->s = st->s, pd->h_z = st->h_in, pd->d_z = g->d_z[jb->s], pd->d_raw = g->d_raw[jb->s];
    pd->d_dst = st->d_in8;
    pd->h_slot = g->h_slots + (size_t)jb->s * PNG_SLOT_BYTES;
    pd->d_slot = g->d_slots + (size_t)jb->s * PNG_SLOT_BYTES;
    /* the job's timing starts here, before its upload */
    if ((e = cudaEventRecord(st->ev_start, st->s)) != cudaSuccess)
        return pd->rc = gctx_fail(ctx, e, "cudaEventRecord (PNG job)", jb->err);
    return 0;
}

/* Waits for the stream of pd when its submit failed after its pinned z's upload was enqueued:
 * the caller may then give z back at once (a staged z is the stream's own). */
static void pdec_settle(const struct pdec *pd)
{
    if (pd->z_pinned && pd->s && cudaStreamSynchronize(pd->s) != cudaSuccess)
        cudaGetLastError(); /* the call that failed has said why */
}

/* Fails every job of the call with rc and the message in jobs[0].err. */
static void jobs_fail(struct gconv_png_job *jobs, int n, int rc)
{
    for (int i = 0; i < n; i++) {
        jobs[i].rc = rc;
        if (i > 0)
            memcpy(jobs[i].err, jobs[0].err, EDGED_ERR_LEN);
    }
}

int gconv_submit_png(struct gconv_ctx *ctx, struct gconv_png_job *jobs, int n)
{
    struct pdec pd[GCONV_PNG_MAX_BATCH];
    struct gpng *g;
    struct img in;
    int rc, done = 0;

    if (!ctx || n < 1 || n > GCONV_PNG_MAX_BATCH)
        return EDGED_E_PARAM;
    if ((rc = gpng_get(ctx, &g, jobs[0].err)) < 0) {
        if (rc != EDGED_E_GPU_FATAL && !gconv_is_dead(ctx)) /* no PNG state: the CPU decodes */
            rc = GCONV_E_PNG_REFUSED;
        jobs_fail(jobs, n, rc);
        return rc == GCONV_E_PNG_REFUSED ? 0 : rc;
    }
    for (int i = 0; i < n; i++)
        jobs[i].rc = job_prepare(ctx, g, &jobs[i], &pd[i]);
    if ((rc = pdec_run(ctx, g, pd, n, jobs[0].err)) < 0) {
        for (int i = 0; i < n; i++)
            if (pd[i].rc == 0)
                pdec_settle(&pd[i]);
        jobs_fail(jobs, n, rc);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        struct gconv_png_job *jb = &jobs[i];
        if ((jb->rc = pd[i].rc) < 0)
            continue;
        memset(&in, 0, sizeof(in));
        in.w = jb->w, in.h = jb->h, in.ch = jb->lay->out_ch, in.stride = (size_t)in.w * in.ch;
        if ((jb->rc = gjob_enqueue(ctx, jb->s, &in, jb->plan, jb->v, jb->block, 0, jb->err)) == 0) {
            ctx->st[jb->s].png_status = slot_status(pd[i].h_slot);
            done++;
        } else {
            pdec_settle(&pd[i]);
        }
        if (gconv_is_dead(ctx))
            return EDGED_E_GPU_FATAL;
    }
    return done;
}

/* ---- decode to the host (tests, bench) ---- */

/* Buffers of the n images in pd (rc 0): pinned memory holding the stream, device memory of their own,
 * slot i. */
static int host_buffers(struct gconv_ctx *ctx, struct gpng *g, struct pdec *pd, int n, char *err)
{
    int rc = 0;

    for (int i = 0; i < n; i++) {
        const struct png_layout *lay = pd[i].lay;
        size_t raw;
        if (pd[i].rc < 0)
            continue;
        if (!layout_ok(lay) || !raw_bytes(lay) || !(raw = raw_alloc_bytes(lay))) {
            pd[i].rc = edged_fail(pd[i].err, GCONV_E_PNG_REFUSED, "the device does not decode this PNG kind");
            continue;
        }
        pd[i].s = g->s_dec;
        pd[i].h_slot = g->h_slots + (size_t)i * PNG_SLOT_BYTES;
        pd[i].d_slot = g->d_slots + (size_t)i * PNG_SLOT_BYTES;
        GCTX_CU(cudaHostAlloc((void **)&pd[i].h_z, pd[i].z_len ? pd[i].z_len : 1, cudaHostAllocDefault));
        /* the stream waits in pinned memory, as a job's does (pngdec_layout_into on the request's
         * thread), so that the timed decode is the device's part: upload and kernels */
        memcpy(pd[i].h_z, pd[i].z, pd[i].z_len);
        pd[i].z = pd[i].h_z, pd[i].z_pinned = 1;
        GCTX_CU(cudaMalloc((void **)&pd[i].d_z, pd[i].z_len ? pd[i].z_len : 1));
        GCTX_CU(cudaMalloc((void **)&pd[i].d_raw, raw));
        GCTX_CU(cudaMalloc((void **)&pd[i].d_dst, (size_t)lay->w * lay->h * lay->out_ch));
    }
out:
    return rc;
}

static void host_free(struct pdec *pd, int n)
{
    for (int i = 0; i < n; i++) {
        cudaFreeHost(pd[i].h_z);
        cudaFree(pd[i].d_z);
        cudaFree(pd[i].d_raw);
        cudaFree(pd[i].d_dst);
    }
}

/* Downloads the decoded images (the caller waited for the decode stream). */
static int host_download(struct gconv_ctx *ctx, struct pdec *pd, int n, struct img *out, int *rcs, char *err)
{
    int rc = 0;

    for (int i = 0; i < n; i++) {
        const struct png_layout *lay = pd[i].lay;
        const volatile int *v = pd[i].rc < 0 ? NULL : slot_status(pd[i].h_slot);
        if ((rcs[i] = pd[i].rc) < 0)
            continue;
        if (v[0] != GINFLATE_OK || v[1] != 0) {
            rcs[i] = edged_fail(pd[i].err, GCONV_E_PNG_DECLINED, "declined on the device (%d, %d)", v[0], v[1]);
            continue;
        }
        if ((rcs[i] = img_alloc(&out[i], (int)lay->w, (int)lay->h, lay->out_ch, pd[i].err)) < 0)
            continue;
        GCTX_CU(cudaMemcpy2D(out[i].px, out[i].stride, pd[i].d_dst, (size_t)lay->w * lay->out_ch,
                             (size_t)lay->w * lay->out_ch, lay->h, cudaMemcpyDeviceToHost));
    }
out:
    return rc;
}

int gconv_png_decode_host(struct gconv_ctx *ctx, int n, const struct png_layout *const *lay,
                          const uint8_t *const *z, const size_t *z_len, int batched, struct img *out, int *rc_each,
                          double *ms, char *err)
{
    struct pdec pd[GCONV_PNG_MAX_BATCH];
    char errs[GCONV_PNG_MAX_BATCH][EDGED_ERR_LEN];
    struct gpng *g;
    double t0;
    int rc;

    if (!ctx || n < 1 || n > GCONV_PNG_MAX_BATCH)
        return edged_fail(err, EDGED_E_PARAM, "1..%d images per call", GCONV_PNG_MAX_BATCH);
    if ((rc = gpng_get(ctx, &g, err)) < 0)
        return rc;
    memset(pd, 0, sizeof(pd));
    for (int i = 0; i < n; i++) {
        pd[i].lay = lay[i], pd[i].z = z[i], pd[i].z_len = z_len[i], pd[i].err = errs[i];
        memset(&out[i], 0, sizeof(out[i]));
    }
    if ((rc = host_buffers(ctx, g, pd, n, err)) < 0)
        goto out;
    t0 = clock_ms();
    for (int i = 0; i < n && rc == 0; i += batched ? n : 1)
        rc = pdec_run(ctx, g, pd + i, batched ? n : 1, err);
    if (rc < 0)
        goto out;
    GCTX_CU(cudaStreamSynchronize(g->s_dec));
    if (ms)
        *ms = clock_ms() - t0;
    rc = host_download(ctx, pd, n, out, rc_each, err);
out:
    if (rc < 0)
        cudaStreamSynchronize(g->s_dec); /* nothing may still use the buffers freed below */
    host_free(pd, n);
    for (int i = 0; i < n && rc < 0; i++)
        img_free(&out[i]);
    return rc;
}
