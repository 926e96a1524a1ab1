/* gconv_jpeg_decode.cu — JPEG decode on the device with nvJPEG: one image or a batch into the
 * streams' input buffers, EXIF orientation on the device, jobs whose input is JPEG bytes, and the
 * decode to host images of the tests and the bench. NVJPEG=1 builds only. */
#include <string.h>

#include "clock.h"
#include "gconv_jpeg_internal.h"

#define ORIENT_BLOCK 16
/* The engine's buffers are preallocated only while one image per stream at 3 bytes a pixel stays
 * under this: larger images are rare, and nvJPEG then allocates for them itself. */
#define HW_PREALLOC_MAX_BYTES ((size_t)512 << 20)

/* One image of a decode call. */
struct jdec {
    const uint8_t *data;
    size_t len;
    int orient;
    int w, h, ch;   /* as decoded */
    int ow, oh;     /* after orientation */
    int hw;         /* the hardware engine takes it */
    uint8_t *d_raw; /* decode target: d_dst for orientation 1 */
    uint8_t *d_dst; /* the oriented image, ow x oh x ch, rows dense */
    cudaStream_t s; /* the stream that reads d_dst (orientation kernel) */
    int rc;
    char *err;
};

/* ---- orientation ---- */

/* Output pixel (x, y) of EXIF orientation o takes source pixel (sx, sy) of the w x h decode; the
 * same table as the CPU's imageio_orient. */
__global__ void orient_kernel(const uint8_t *__restrict__ d_src, uint8_t *__restrict__ d_dst, int w, int h,
                              int ch, int o, int ow, int oh)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, sx, sy;

    if (x >= ow || y >= oh)
        return;
    switch (o) {
    case 2:
        sx = w - 1 - x, sy = y;
        break;
    case 3:
        sx = w - 1 - x, sy = h - 1 - y;
        break;
    case 4:
        sx = x, sy = h - 1 - y;
        break;
    case 5:
        sx = y, sy = x;
        break;
    case 6:
        sx = y, sy = h - 1 - x;
        break;
    case 7:
        sx = w - 1 - y, sy = h - 1 - x;
        break;
    case 8:
        sx = w - 1 - y, sy = x;
        break;
    default:
        sx = x, sy = y;
        break;
    }
    const uint8_t *p = d_src + ((size_t)sy * w + sx) * ch;
    uint8_t *q = d_dst + ((size_t)y * ow + x) * ch;
    for (int c = 0; c < ch; c++)
        q[c] = p[c];
}

/* Enqueues the orientation of j on j->s (nothing for orientation 1: the decode wrote d_dst). */
static cudaError_t orient_launch(const struct jdec *j)
{
    dim3 block(ORIENT_BLOCK, ORIENT_BLOCK), grid(div_up(j->ow, ORIENT_BLOCK), div_up(j->oh, ORIENT_BLOCK));

    if (j->orient <= 1 || j->orient > 8)
        return cudaSuccess;
    orient_kernel<<<grid, block, 0, j->s>>>(j->d_raw, j->d_dst, j->w, j->h, j->ch, j->orient, j->ow, j->oh);
    return cudaGetLastError();
}

/* ---- decode ---- */

/* Size, channels and backend of j from its headers: head when a probe read them (gconv_jpeg_job),
 * else read here. 4 components (CMYK, YCCK) and what nvJPEG cannot parse are GCONV_E_JPEG_REFUSED:
 * the CPU decoder serves them, or names the fault. */
static int jdec_info(struct gjpeg *g, struct jdec *j, const struct gconv_jpeg_head *head)
{
    struct gconv_jpeg_head own;
    int swap;

    if (!head) {
        j->rc = gjpeg_read_head(g->sw, g->hw, g->parse, j->data, j->len, &own, &g->prof_ms[4], j->err);
        if (j->rc < 0)
            return j->rc;
        head = &own;
    }
    j->w = head->w, j->h = head->h, j->ch = head->ch;
    j->hw = g->hw && head->engine; /* a probe of a device with an engine speaks for this one's */
    swap = j->orient >= 5 && j->orient <= 8;
    j->ow = swap ? j->h : j->w, j->oh = swap ? j->w : j->h;
    return j->rc = 0;
}

static nvjpegImage_t jdec_dest(const struct jdec *j)
{
    nvjpegImage_t d;

    memset(&d, 0, sizeof(d));
    d.channel[0] = j->d_raw;
    d.pitch[0] = (size_t)j->w * j->ch;
    return d;
}

/* One image by itself on the default backend. */
static int jdec_single(struct gconv_ctx *ctx, struct gjpeg *g, struct jdec *j)
{
    nvjpegImage_t d = jdec_dest(j);
    nvjpegStatus_t st = nvjpegDecode(g->sw, g->sw_state, j->data, j->len,
                                     j->ch == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI, &d, g->s_dec);

    return j->rc = st == NVJPEG_STATUS_SUCCESS ? 0 : gjpeg_fail(ctx, st, "nvjpegDecode", j->err);
}

/* The engine's buffers for a batch of as many images as there are streams, each as large as the
 * largest seen (up to HW_PREALLOC_MAX_BYTES in all): without this nvJPEG frees and allocates device
 * memory whenever the batch size or the image size changes, and a cudaFree waits for the whole
 * device. Best effort: the decode allocates what it needs when this fails. */
static void hw_preallocate(struct gconv_ctx *ctx, struct gjpeg *g, struct jdec *const *pick, int k,
                           nvjpegOutputFormat_t fmt)
{
    long long px = 0;
    int w = 0, h = 0;

    for (int i = 0; i < k; i++)
        if ((long long)pick[i]->w * pick[i]->h > px)
            px = (long long)pick[i]->w * pick[i]->h, w = pick[i]->w, h = pick[i]->h;
    if (px <= g->hw_pre_px || (size_t)px * 3 * (size_t)ctx->nstreams > HW_PREALLOC_MAX_BYTES)
        return;
    if (nvjpegDecodeBatchedPreAllocate(g->hw, g->hw_state, ctx->nstreams, w, h, NVJPEG_CSS_444, fmt) ==
        NVJPEG_STATUS_SUCCESS)
        g->hw_pre_px = px;
    else
        cudaGetLastError(); /* a failed allocation leaves no sticky error; the decode tries again */
}

/* The images of js (rc 0) with engine flag hw and ch channels in one nvjpegDecodeBatched call of
 * the matching handle; when the batch fails, each is tried by itself so one bad stream does not
 * fail the others. Images of the engine that the engine then refuses still get the default
 * backend's try. */
static void jdec_group(struct gconv_ctx *ctx, struct gjpeg *g, struct jdec *js, int n, int hw, int ch)
{
    const unsigned char *data[GCONV_JPEG_MAX_BATCH];
    size_t len[GCONV_JPEG_MAX_BATCH];
    nvjpegImage_t dst[GCONV_JPEG_MAX_BATCH];
    struct jdec *pick[GCONV_JPEG_MAX_BATCH];
    nvjpegHandle_t h = hw ? g->hw : g->sw;
    nvjpegJpegState_t state = hw ? g->hw_state : g->sw_state;
    nvjpegOutputFormat_t fmt = ch == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
    nvjpegStatus_t st;
    int k = 0;

    for (int i = 0; i < n; i++)
        if (js[i].rc == 0 && js[i].hw == hw && js[i].ch == ch)
            pick[k] = &js[i], data[k] = js[i].data, len[k] = js[i].len, dst[k] = jdec_dest(&js[i]), k++;
    if (k == 0)
        return;
    if (hw)
        hw_preallocate(ctx, g, pick, k, fmt);
    st = nvjpegDecodeBatchedInitialize(h, state, k, 1, fmt);
    if (st == NVJPEG_STATUS_SUCCESS)
        st = nvjpegDecodeBatched(h, state, data, len, dst, g->s_dec);
    if (st == NVJPEG_STATUS_SUCCESS)
        return;
    for (int i = 0; i < k; i++)
        jdec_single(ctx, g, pick[i]);
}

void gjpeg_time_read(struct gjpeg *g)
{
    while (g->t_read < g->t_rec) {
        unsigned k = (unsigned)(g->t_read % GJPEG_TIMED);
        float ms = 0.0f;

        if (cudaEventQuery(g->ev_t1[k]) != cudaSuccess ||
            cudaEventElapsedTime(&ms, g->ev_t0[k], g->ev_t1[k]) != cudaSuccess)
            break; /* still running (a failed context reports its own errors elsewhere) */
        g->prof_ms[5] += ms;
        g->t_read++;
    }
}

/* Decodes js on s_dec after each image's stream has reached this point, then enqueues each
 * orientation on its stream behind ev_dec. batched: 0 decodes each image by a call of its own.
 * The images' rc say how each went; returns 0 or the error of a CUDA call that fails them all. */
static int jdec_run(struct gconv_ctx *ctx, struct gjpeg *g, struct jdec *js, int n, int batched, char *err)
{
    int rc = 0, timed;
    unsigned k = (unsigned)(g->t_rec % GJPEG_TIMED);

    gjpeg_time_read(g);
    if ((timed = g->t_rec - g->t_read < GJPEG_TIMED))
        GCTX_CU(cudaEventRecord(g->ev_t0[k], g->s_dec));
    for (int i = 0; i < n; i++)
        if (js[i].rc == 0 && !batched)
            jdec_group(ctx, g, &js[i], 1, js[i].hw, js[i].ch);
    if (batched)
        for (int hw = 0; hw <= 1; hw++)
            for (int ch = 1; ch <= 3; ch += 2)
                jdec_group(ctx, g, js, n, hw, ch);
    GCTX_CU(cudaEventRecord(g->ev_dec, g->s_dec));
    if (timed) {
        GCTX_CU(cudaEventRecord(g->ev_t1[k], g->s_dec));
        g->t_rec++;
    }
    for (int i = 0; i < n; i++) {
        if (js[i].rc < 0)
            continue;
        GCTX_CU(cudaStreamWaitEvent(js[i].s, g->ev_dec, 0));
        GCTX_CU(orient_launch(&js[i]));
    }
out:
    return rc;
}

/* ---- jobs ---- */

/* Checks job jb against its header and sizes its stream's buffers; j describes its decode. */
static int job_prepare(struct gconv_ctx *ctx, struct gjpeg *g, struct gconv_jpeg_job *jb, struct jdec *j)
{
    struct gstream *st;
    const char *what = "";
    cudaError_t e;
    size_t raw;

    memset(j, 0, sizeof(*j));
    j->data = jb->data, j->len = jb->len, j->orient = jb->orientation, j->err = jb->err;
    if (jb->s < 0 || jb->s >= ctx->nstreams || ctx->st[jb->s].busy)
        return j->rc = edged_fail(jb->err, EDGED_E_PARAM, "stream %d invalid or busy", jb->s);
    if (!jb->data || !jb->plan || filter_plan_check(jb->plan, jb->err) < 0)
        return j->rc = edged_fail(jb->err, EDGED_E_PARAM, "JPEG job without data or with a bad plan");
    if (jdec_info(g, j, jb->head) < 0)
        return j->rc;
    if (j->ch != jb->plan->in_ch || (jb->w && (jb->w != j->ow || jb->h != j->oh))) /* the CPU judges */
        return j->rc = edged_fail(jb->err, GCONV_E_JPEG_REFUSED,
                                  "nvJPEG sees %d x %d x %d, the job expects %d x %d x %d", j->ow, j->oh,
                                  j->ch, jb->w, jb->h, jb->plan->in_ch);
    jb->w = j->ow, jb->h = j->oh;
    if ((j->rc = gconv_check(ctx, jb->plan, j->ow, j->oh, jb->v, jb->block, jb->err)) < 0)
        return j->rc;
    st = &ctx->st[jb->s];
    j->s = st->s;
    if ((e = gjob_buffers(ctx, st, j->ow, j->oh, jb->plan, &what)) != cudaSuccess)
        return j->rc = gctx_fail(ctx, e, what, jb->err);
    j->d_dst = j->d_raw = st->d_in8;
    raw = (size_t)j->w * j->h * j->ch;
    if (j->orient > 1 && j->orient <= 8) {
        if ((e = gctx_grow_device(ctx, st, (void **)&g->d_raw[jb->s], &g->raw_cap[jb->s], raw)) !=
            cudaSuccess)
            return j->rc = gctx_fail(ctx, e, "nvJPEG scratch", jb->err);
        j->d_raw = g->d_raw[jb->s];
    }
    /* the job's timing starts here; the decode stream waits for the job's stream */
    if ((e = cudaEventRecord(st->ev_start, st->s)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(g->s_dec, st->ev_start, 0)) != cudaSuccess)
        return j->rc = gctx_fail(ctx, e, "cudaEventRecord (JPEG job)", jb->err);
    return 0;
}

int gconv_submit_jpeg(struct gconv_ctx *ctx, struct gconv_jpeg_job *jobs, int n)
{
    struct jdec js[GCONV_JPEG_MAX_BATCH];
    struct gjpeg *g;
    struct img in;
    double t0, t1;
    int rc, done = 0;

    if (!ctx || n < 1 || n > GCONV_JPEG_MAX_BATCH)
        return EDGED_E_PARAM;
    if ((rc = gjpeg_get(ctx, &g, jobs[0].err)) < 0) {
        if (rc != EDGED_E_GPU_FATAL && !gconv_is_dead(ctx)) /* no nvJPEG state: the CPU decodes */
            rc = GCONV_E_JPEG_REFUSED;
        for (int i = 0; i < n; i++)
            jobs[i].rc = rc, memcpy(jobs[i].err, jobs[0].err, EDGED_ERR_LEN);
        return rc == GCONV_E_JPEG_REFUSED ? 0 : rc;
    }
    t0 = clock_ms();
    for (int i = 0; i < n; i++)
        jobs[i].rc = job_prepare(ctx, g, &jobs[i], &js[i]);
    t1 = clock_ms();
    g->prof_ms[0] += t1 - t0;
    rc = jdec_run(ctx, g, js, n, 1, jobs[0].err);
    t0 = clock_ms();
    g->prof_ms[1] += t0 - t1;
    if (rc < 0) {
        for (int i = 0; i < n; i++)
            jobs[i].rc = rc, memcpy(jobs[i].err, jobs[0].err, EDGED_ERR_LEN);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        struct gconv_jpeg_job *jb = &jobs[i];
        if ((jb->rc = js[i].rc) < 0)
            continue;
        memset(&in, 0, sizeof(in));
        in.w = js[i].ow, in.h = js[i].oh, in.ch = js[i].ch, in.stride = (size_t)in.w * in.ch;
        if ((jb->rc = gjob_enqueue(ctx, jb->s, &in, jb->plan, jb->v, jb->block, 0, jb->err)) == 0) {
            done++;
            if (jb->quality > 0)
                (void)gjpeg_encode_behind(ctx, g, jb->s, jb->quality); /* else the finish encodes */
        }
        if (gconv_is_dead(ctx))
            return EDGED_E_GPU_FATAL;
    }
    g->prof_ms[2] += clock_ms() - t0;
    return done;
}

int gconv_jpeg_decoding(const struct gconv_ctx *ctx)
{
    return ctx && ctx->jpeg && cudaEventQuery(ctx->jpeg->ev_dec) == cudaErrorNotReady;
}

/* ---- decode to the host (tests, bench) ---- */

/* Device buffers of the n images in js (d_raw and, for an orientation, d_dst), images sized by
 * jdec_info. */
static int host_buffers(struct gconv_ctx *ctx, struct jdec *js, int n, char *err)
{
    int rc = 0;

    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)js[i].w * js[i].h * js[i].ch;
        if (js[i].rc < 0)
            continue;
        GCTX_CU(cudaMalloc((void **)&js[i].d_raw, bytes));
        js[i].d_dst = js[i].d_raw;
        if (js[i].orient > 1 && js[i].orient <= 8)
            GCTX_CU(cudaMalloc((void **)&js[i].d_dst, bytes));
    }
out:
    return rc;
}

static void host_free(struct jdec *js, int n)
{
    for (int i = 0; i < n; i++) {
        if (js[i].d_dst != js[i].d_raw)
            cudaFree(js[i].d_dst);
        cudaFree(js[i].d_raw);
    }
}

/* Downloads the decoded images (the caller waited for s_dec and the orientations). */
static int host_download(struct gconv_ctx *ctx, struct jdec *js, int n, struct img *out, int *rcs, char *err)
{
    int rc = 0;

    for (int i = 0; i < n; i++) {
        if ((rcs[i] = js[i].rc) < 0)
            continue;
        if ((rcs[i] = img_alloc(&out[i], js[i].ow, js[i].oh, js[i].ch, js[i].err)) < 0)
            continue;
        GCTX_CU(cudaMemcpy2D(out[i].px, out[i].stride, js[i].d_dst, (size_t)js[i].ow * js[i].ch,
                             (size_t)js[i].ow * js[i].ch, js[i].oh, cudaMemcpyDeviceToHost));
    }
out:
    return rc;
}

int gconv_jpeg_decode_host(struct gconv_ctx *ctx, int n, const uint8_t *const *data, const size_t *len,
                           const int *orient, int batched, struct img *out, int *rc_each, double *ms,
                           char *err)
{
    struct jdec js[GCONV_JPEG_MAX_BATCH];
    char errs[GCONV_JPEG_MAX_BATCH][EDGED_ERR_LEN];
    struct gjpeg *g;
    double t0;
    int rc;

    if (!ctx || n < 1 || n > GCONV_JPEG_MAX_BATCH)
        return edged_fail(err, EDGED_E_PARAM, "1..%d images per call", GCONV_JPEG_MAX_BATCH);
    if ((rc = gjpeg_get(ctx, &g, err)) < 0)
        return rc;
    memset(js, 0, sizeof(js));
    for (int i = 0; i < n; i++) {
        js[i].data = data[i], js[i].len = len[i], js[i].orient = orient ? orient[i] : 1, js[i].err = errs[i];
        js[i].s = g->s_dec;
        jdec_info(g, &js[i], NULL);
        memset(&out[i], 0, sizeof(out[i]));
    }
    if ((rc = host_buffers(ctx, js, n, err)) < 0)
        goto out;
    t0 = clock_ms();
    if ((rc = jdec_run(ctx, g, js, n, batched, err)) < 0)
        goto out;
    GCTX_CU(cudaStreamSynchronize(g->s_dec));
    if (ms)
        *ms = clock_ms() - t0;
    rc = host_download(ctx, js, n, out, rc_each, err);
out:
    if (rc < 0)
        cudaStreamSynchronize(g->s_dec); /* nothing may still write the buffers freed below */
    host_free(js, n);
    for (int i = 0; i < n && rc < 0; i++)
        img_free(&out[i]);
    return rc;
}
