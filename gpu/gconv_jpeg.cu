/* gconv_jpeg.cu — JPEG on the device with nvJPEG: decode (one image or a batch) into the streams'
 * input buffers, EXIF orientation on the device, jobs whose input is JPEG bytes, and encode. Built
 * with NVJPEG=1 only; gconv_jpeg_stub.c stands in otherwise. */
#include <string.h>
#include <time.h>

#include <nvjpeg.h>

#include "gconv_internal.h"

#define ORIENT_BLOCK 16
/* The engine's buffers are preallocated only while one image per stream at 3 bytes a pixel stays
 * under this: larger images are rare, and nvJPEG then allocates for them itself. */
#define HW_PREALLOC_MAX_BYTES ((size_t)512 << 20)

/* The nvJPEG objects of one context. hw is the hardware engine's handle (NULL on a GPU without
 * JPEG engines); sw the default backend's, which also serves what the engine refuses and every
 * encode. Decodes run on s_dec; ev_dec marks the end of the last batch for the job streams. enc
 * serves the encodes that wait for their result (host images, fallbacks); each job stream has an
 * encoder of its own, so that the encodes of results queue behind their jobs without a wait. */
struct gjpeg {
    nvjpegHandle_t hw, sw;
    nvjpegJpegState_t hw_state, sw_state;
    nvjpegJpegStream_t parse;
    nvjpegEncoderState_t enc;
    nvjpegEncoderParams_t enc_params;
    nvjpegEncoderState_t enc_s[GCONV_MAX_STREAMS]; /* made on a stream's first encode */
    nvjpegEncoderParams_t par_s[GCONV_MAX_STREAMS];
    cudaStream_t s_dec;
    cudaEvent_t ev_dec;
    uint8_t *d_raw[GCONV_MAX_STREAMS]; /* per stream: the decode before orientation */
    size_t raw_cap[GCONV_MAX_STREAMS];
    long long hw_pre_px; /* the engine's buffers were preallocated for a batch of images this large */
    double prof_ms[GCONV_JPEG_STAGES];
};

static double wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

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

static const char *nvj_name(nvjpegStatus_t st)
{
    switch (st) {
    case NVJPEG_STATUS_SUCCESS:
        return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
        return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER:
        return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
        return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
        return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
        return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED:
        return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
        return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR:
        return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
        return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
        return "incomplete bitstream";
    default:
        return "unknown status";
    }
}

/* Turns a failed nvJPEG call into a code. Allocation is EDGED_E_GPU_OOM; a failure with a CUDA
 * error pending is classified by gctx_fail (sticky errors kill the context); anything else is
 * about the data or what the library supports, GCONV_E_JPEG_REFUSED: the CPU codec serves that
 * image, or names its fault. */
static int nvj_fail(struct gconv_ctx *ctx, nvjpegStatus_t st, const char *what, char *err)
{
    cudaError_t e;

    if (st == NVJPEG_STATUS_ALLOCATOR_FAILURE)
        return edged_fail(err, EDGED_E_GPU_OOM, "%s: %s", what, nvj_name(st));
    if ((st == NVJPEG_STATUS_EXECUTION_FAILED || st == NVJPEG_STATUS_INTERNAL_ERROR) &&
        (e = cudaGetLastError()) != cudaSuccess)
        return gctx_fail(ctx, e, what, err);
    return edged_fail(err, GCONV_E_JPEG_REFUSED, "%s: %s", what, nvj_name(st));
}

#define NVJ(call)                                                                                            \
    do {                                                                                                     \
        nvjpegStatus_t st_ = (call);                                                                         \
        if (st_ != NVJPEG_STATUS_SUCCESS) {                                                                  \
            rc = nvj_fail(ctx, st_, #call, err);                                                             \
            goto out;                                                                                        \
        }                                                                                                    \
    } while (0)
#define CU(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            rc = gctx_fail(ctx, e_, #call, err);                                                             \
            goto out;                                                                                        \
        }                                                                                                    \
    } while (0)

static void gjpeg_free(struct gjpeg *g)
{
    if (!g)
        return;
    if (g->s_dec)
        cudaStreamSynchronize(g->s_dec);
    for (int i = 0; i < GCONV_MAX_STREAMS; i++) {
        cudaFree(g->d_raw[i]);
        if (g->par_s[i])
            nvjpegEncoderParamsDestroy(g->par_s[i]);
        if (g->enc_s[i])
            nvjpegEncoderStateDestroy(g->enc_s[i]);
    }
    if (g->enc_params)
        nvjpegEncoderParamsDestroy(g->enc_params);
    if (g->enc)
        nvjpegEncoderStateDestroy(g->enc);
    if (g->parse)
        nvjpegJpegStreamDestroy(g->parse);
    if (g->hw_state)
        nvjpegJpegStateDestroy(g->hw_state);
    if (g->sw_state)
        nvjpegJpegStateDestroy(g->sw_state);
    if (g->hw)
        nvjpegDestroy(g->hw);
    if (g->sw)
        nvjpegDestroy(g->sw);
    if (g->ev_dec)
        cudaEventDestroy(g->ev_dec);
    if (g->s_dec)
        cudaStreamDestroy(g->s_dec);
    free(g);
}

void gjpeg_close(struct gconv_ctx *ctx)
{
    if (ctx) {
        gjpeg_free(ctx->jpeg);
        ctx->jpeg = NULL;
    }
}

/* The hardware engine when the GPU has one: nvjpegCreateEx refuses the hardware backend
 * (architecture mismatch, not supported) elsewhere, and then the default backend serves alone. */
static void gjpeg_try_hardware(struct gjpeg *g)
{
    if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &g->hw) != NVJPEG_STATUS_SUCCESS) {
        g->hw = NULL;
        return;
    }
    if (nvjpegJpegStateCreate(g->hw, &g->hw_state) != NVJPEG_STATUS_SUCCESS ||
        nvjpegJpegStreamCreate(g->hw, &g->parse) != NVJPEG_STATUS_SUCCESS) {
        if (g->hw_state)
            nvjpegJpegStateDestroy(g->hw_state);
        nvjpegDestroy(g->hw);
        g->hw = NULL, g->hw_state = NULL;
    }
}

/* ctx's nvJPEG state, made on first use (gconv calls on one context come from one thread). */
static int gjpeg_get(struct gconv_ctx *ctx, struct gjpeg **out, char *err)
{
    struct gjpeg *g;
    int rc = 0;

    if ((rc = gctx_enter(ctx, err)) < 0)
        return rc;
    if (ctx->jpeg) {
        *out = ctx->jpeg;
        return 0;
    }
    if (!(g = (struct gjpeg *)calloc(1, sizeof(*g))))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the nvJPEG state");
    CU(cudaStreamCreateWithFlags(&g->s_dec, cudaStreamNonBlocking));
    CU(cudaEventCreateWithFlags(&g->ev_dec, cudaEventDisableTiming));
    NVJ(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &g->sw));
    NVJ(nvjpegJpegStateCreate(g->sw, &g->sw_state));
    NVJ(nvjpegEncoderStateCreate(g->sw, &g->enc, NULL));
    NVJ(nvjpegEncoderParamsCreate(g->sw, &g->enc_params, NULL));
    gjpeg_try_hardware(g);
out:
    if (rc < 0) {
        gjpeg_free(g);
        return rc;
    }
    ctx->jpeg = *out = g;
    return 0;
}

int gconv_jpeg_available(const struct gconv_ctx *ctx)
{
    return ctx != NULL && !gconv_is_dead(ctx);
}

const char *gconv_jpeg_backend(const struct gconv_ctx *ctx)
{
    if (!ctx || !ctx->jpeg)
        return "none";
    return ctx->jpeg->hw ? "hardware" : "default";
}

void gconv_jpeg_profile(const struct gconv_ctx *ctx, double ms[GCONV_JPEG_STAGES])
{
    for (int i = 0; i < GCONV_JPEG_STAGES; i++)
        ms[i] = ctx && ctx->jpeg ? ctx->jpeg->prof_ms[i] : 0.0;
}

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

/* Size, channels and backend of j from its header. 4 components (CMYK, YCCK) and what nvJPEG cannot
 * parse are GCONV_E_JPEG_REFUSED: the CPU decoder serves them, or names the fault. */
static int jdec_info(struct gconv_ctx *ctx, struct gjpeg *g, struct jdec *j)
{
    int ncomp = 0, ws[NVJPEG_MAX_COMPONENT], hs[NVJPEG_MAX_COMPONENT], unsupported = 1, swap;
    nvjpegChromaSubsampling_t css;
    nvjpegStatus_t st = nvjpegGetImageInfo(g->sw, j->data, j->len, &ncomp, &css, ws, hs);

    if (st != NVJPEG_STATUS_SUCCESS)
        return j->rc = nvj_fail(ctx, st, "nvjpegGetImageInfo", j->err);
    if (!(ncomp == 1 || (ncomp == 3 && css != NVJPEG_CSS_UNKNOWN)) || ws[0] < 1 || hs[0] < 1)
        return j->rc =
                   edged_fail(j->err, GCONV_E_JPEG_REFUSED, "nvJPEG takes 1 or 3 components, not %d", ncomp);
    j->w = ws[0], j->h = hs[0], j->ch = ncomp == 1 || css == NVJPEG_CSS_GRAY ? 1 : 3;
    swap = j->orient >= 5 && j->orient <= 8;
    j->ow = swap ? j->h : j->w, j->oh = swap ? j->w : j->h;
    /* the engine's own check: baseline, one scan, no 4:1:0 or 4:1:1 (0 means supported); it needs
     * the headers only, not a walk of the whole scan */
    j->hw = g->hw && nvjpegJpegStreamParseHeader(g->hw, j->data, j->len, g->parse) == NVJPEG_STATUS_SUCCESS &&
            nvjpegDecodeBatchedSupported(g->hw, g->parse, &unsupported) == NVJPEG_STATUS_SUCCESS &&
            unsupported == 0;
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

    return j->rc = st == NVJPEG_STATUS_SUCCESS ? 0 : nvj_fail(ctx, st, "nvjpegDecode", j->err);
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

/* Decodes js on s_dec after each image's stream has reached this point, then enqueues each
 * orientation on its stream behind ev_dec. batched: 0 decodes each image by a call of its own.
 * The images' rc say how each went; returns 0 or the error of a CUDA call that fails them all. */
static int jdec_run(struct gconv_ctx *ctx, struct gjpeg *g, struct jdec *js, int n, int batched, char *err)
{
    int rc = 0;

    for (int i = 0; i < n; i++)
        if (js[i].rc == 0 && !batched)
            jdec_group(ctx, g, &js[i], 1, js[i].hw, js[i].ch);
    if (batched)
        for (int hw = 0; hw <= 1; hw++)
            for (int ch = 1; ch <= 3; ch += 2)
                jdec_group(ctx, g, js, n, hw, ch);
    CU(cudaEventRecord(g->ev_dec, g->s_dec));
    for (int i = 0; i < n; i++) {
        if (js[i].rc < 0)
            continue;
        CU(cudaStreamWaitEvent(js[i].s, g->ev_dec, 0));
        CU(orient_launch(&js[i]));
    }
out:
    return rc;
}

/* ---- jobs ---- */

static int encode_behind(struct gconv_ctx *ctx, struct gjpeg *g, int s, int quality);

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
    if (jdec_info(ctx, g, j) < 0)
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
    t0 = wall_ms();
    for (int i = 0; i < n; i++)
        jobs[i].rc = job_prepare(ctx, g, &jobs[i], &js[i]);
    t1 = wall_ms();
    g->prof_ms[0] += t1 - t0;
    rc = jdec_run(ctx, g, js, n, 1, jobs[0].err);
    t0 = wall_ms();
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
                (void)encode_behind(ctx, g, jb->s, jb->quality); /* else the finish encodes */
        }
        if (gconv_is_dead(ctx))
            return EDGED_E_GPU_FATAL;
    }
    g->prof_ms[2] += wall_ms() - t0;
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
        CU(cudaMalloc((void **)&js[i].d_raw, bytes));
        js[i].d_dst = js[i].d_raw;
        if (js[i].orient > 1 && js[i].orient <= 8)
            CU(cudaMalloc((void **)&js[i].d_dst, bytes));
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
        CU(cudaMemcpy2D(out[i].px, out[i].stride, js[i].d_dst, (size_t)js[i].ow * js[i].ch,
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
        jdec_info(ctx, g, &js[i]);
        memset(&out[i], 0, sizeof(out[i]));
    }
    if ((rc = host_buffers(ctx, js, n, err)) < 0)
        goto out;
    t0 = wall_ms();
    if ((rc = jdec_run(ctx, g, js, n, batched, err)) < 0)
        goto out;
    CU(cudaStreamSynchronize(g->s_dec));
    if (ms)
        *ms = wall_ms() - t0;
    rc = host_download(ctx, js, n, out, rc_each, err);
out:
    if (rc < 0)
        cudaStreamSynchronize(g->s_dec); /* nothing may still write the buffers freed below */
    host_free(js, n);
    for (int i = 0; i < n && rc < 0; i++)
        img_free(&out[i]);
    return rc;
}

/* ---- encode ---- */

/* Enqueues the encode of the w x h image of ch channels (1 or 3) at d_px, rows pitch bytes apart,
 * on stream s with encoder enc and its params. */
static int encode_enqueue(struct gconv_ctx *ctx, struct gjpeg *g, nvjpegEncoderState_t enc,
                          nvjpegEncoderParams_t params, const uint8_t *d_px, int w, int h, int ch,
                          size_t pitch, int quality, cudaStream_t s, char *err)
{
    nvjpegImage_t src;
    int rc = 0;

    if (quality < 1 || quality > 100)
        return edged_fail(err, EDGED_E_PARAM, "quality %d invalid: 1..100", quality);
    if (ch != 1 && ch != 3)
        return edged_fail(err, GCONV_E_JPEG_REFUSED, "nvJPEG encodes 1 or 3 channels, not %d", ch);
    memset(&src, 0, sizeof(src));
    src.channel[0] = (unsigned char *)d_px;
    src.pitch[0] = pitch;
    NVJ(nvjpegEncoderParamsSetQuality(params, quality, s));
    NVJ(nvjpegEncoderParamsSetSamplingFactors(params, ch == 1 ? NVJPEG_CSS_GRAY : NVJPEG_CSS_420, s));
    if (ch == 1)
        NVJ(nvjpegEncodeYUV(g->sw, enc, params, &src, NVJPEG_CSS_GRAY, w, h, s));
    else
        NVJ(nvjpegEncodeImage(g->sw, enc, params, &src, NVJPEG_INPUT_RGBI, w, h, s));
out:
    return rc;
}

/* Copies the bitstream of enc's last encode on s into a malloc'd buffer. Its length is known once
 * the encode ran: after an encode just enqueued the first wait is the encode's. */
static int encode_collect(struct gconv_ctx *ctx, struct gjpeg *g, nvjpegEncoderState_t enc, cudaStream_t s,
                          uint8_t **out, size_t *out_len, char *err)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = 0;

    NVJ(nvjpegEncodeRetrieveBitstream(g->sw, enc, NULL, &len, s));
    CU(cudaStreamSynchronize(s));
    if (!(buf = (uint8_t *)malloc(len ? len : 1))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes of JPEG", len);
        goto out;
    }
    NVJ(nvjpegEncodeRetrieveBitstream(g->sw, enc, buf, &len, s));
    CU(cudaStreamSynchronize(s));
    *out = buf, *out_len = len, buf = NULL;
out:
    free(buf);
    return rc;
}

/* Encodes an image on s with the shared encoder and waits for the bytes (see encode_enqueue). */
static int encode_dev(struct gconv_ctx *ctx, struct gjpeg *g, const uint8_t *d_px, int w, int h, int ch,
                      size_t pitch, int quality, cudaStream_t s, uint8_t **out, size_t *out_len, char *err)
{
    int rc;

    *out = NULL, *out_len = 0;
    if ((rc = encode_enqueue(ctx, g, g->enc, g->enc_params, d_px, w, h, ch, pitch, quality, s, err)) < 0)
        return rc;
    return encode_collect(ctx, g, g->enc, s, out, out_len, err);
}

/* Enqueues the encode of stream s's result behind its job with the stream's own encoder, and moves
 * the job's end (ev_down, which gconv_poll and gconv_finish wait for) behind it. A result nvJPEG
 * does not encode (a packed map, 2 or 4 channels) or a failed enqueue leaves jpeg_enc 0:
 * gconv_jpeg_encode_result then encodes as before, or refuses. Returns 0 or why not (a CUDA error
 * that killed the context shows in gconv_is_dead). */
static int encode_behind(struct gconv_ctx *ctx, struct gjpeg *g, int s, int quality)
{
    struct gstream *st = &ctx->st[s];
    char err[EDGED_ERR_LEN];
    int rc = 0;

    if (st->packed || (st->out_ch != 1 && st->out_ch != 3))
        return GCONV_E_JPEG_REFUSED;
    if (!g->enc_s[s])
        NVJ(nvjpegEncoderStateCreate(g->sw, &g->enc_s[s], st->s));
    if (!g->par_s[s])
        NVJ(nvjpegEncoderParamsCreate(g->sw, &g->par_s[s], st->s));
    if ((rc = encode_enqueue(ctx, g, g->enc_s[s], g->par_s[s], st->d_out8, st->w, st->h, st->out_ch,
                             (size_t)st->w * st->out_ch, quality, st->s, err)) < 0)
        goto out;
    CU(cudaEventRecord(st->ev_down, st->s));
    st->jpeg_enc = 1;
out:
    return rc;
}

int gconv_jpeg_encode_result(struct gconv_ctx *ctx, int s, int quality, uint8_t **out, size_t *out_len,
                             char *err)
{
    struct gjpeg *g;
    struct gstream *st;
    int rc;

    *out = NULL, *out_len = 0;
    if (!ctx || s < 0 || s >= ctx->nstreams)
        return edged_fail(err, EDGED_E_PARAM, "stream %d invalid", s);
    st = &ctx->st[s];
    if (st->busy || !st->d_out8 || st->w < 1)
        return edged_fail(err, EDGED_E_PARAM, "stream %d has no finished job", s);
    if (st->packed)
        return edged_fail(err, GCONV_E_JPEG_REFUSED, "the result is a packed map");
    if ((rc = gjpeg_get(ctx, &g, err)) < 0)
        return rc;
    if (st->jpeg_enc) { /* encoded behind the job, which has ended: no wait */
        double t0 = wall_ms();
        st->jpeg_enc = 0;
        rc = encode_collect(ctx, g, g->enc_s[s], st->s, out, out_len, err);
        g->prof_ms[3] += wall_ms() - t0;
        return rc;
    }
    return encode_dev(ctx, g, st->d_out8, st->w, st->h, st->out_ch, (size_t)st->w * st->out_ch, quality,
                      st->s, out, out_len, err);
}

int gconv_jpeg_encode_host(struct gconv_ctx *ctx, const struct img *im, int quality, uint8_t **out,
                           size_t *out_len, char *err)
{
    struct gjpeg *g;
    uint8_t *d_px = NULL;
    size_t row;
    int rc;

    *out = NULL, *out_len = 0;
    if (!ctx || !im || !im->px || im->packed || im->w < 1 || im->h < 1)
        return edged_fail(err, EDGED_E_PARAM, "no image to encode");
    if (im->ch != 1 && im->ch != 3)
        return edged_fail(err, GCONV_E_JPEG_REFUSED, "nvJPEG encodes 1 or 3 channels, not %d", im->ch);
    if ((rc = gjpeg_get(ctx, &g, err)) < 0)
        return rc;
    row = (size_t)im->w * im->ch;
    CU(cudaMalloc((void **)&d_px, row * im->h));
    CU(cudaMemcpy2DAsync(d_px, row, im->px, im->stride, row, im->h, cudaMemcpyHostToDevice, g->s_dec));
    rc = encode_dev(ctx, g, d_px, im->w, im->h, im->ch, row, quality, g->s_dec, out, out_len, err);
out:
    if (d_px) {
        cudaStreamSynchronize(g->s_dec);
        cudaFree(d_px);
    }
    return rc;
}
