/* gconv_jpeg.cu — the nvJPEG state of a context: its handles, decode stream and encoders, made on
 * the first JPEG call and freed with the context; nvJPEG failures as error codes; which backend
 * serves. The decodes and JPEG jobs are in gconv_jpeg_decode.cu, the encodes in
 * gconv_jpeg_encode.cu. Built with NVJPEG=1 only; gconv_jpeg_stub.c stands in otherwise. */
#include "gconv_jpeg_internal.h"

const char *gjpeg_status_name(nvjpegStatus_t st)
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

int gjpeg_fail(struct gconv_ctx *ctx, nvjpegStatus_t st, const char *what, char *err)
{
    cudaError_t e;

    if (st == NVJPEG_STATUS_ALLOCATOR_FAILURE)
        return edged_fail(err, EDGED_E_GPU_OOM, "%s: %s", what, gjpeg_status_name(st));
    if ((st == NVJPEG_STATUS_EXECUTION_FAILED || st == NVJPEG_STATUS_INTERNAL_ERROR) &&
        (e = cudaGetLastError()) != cudaSuccess)
        return gctx_fail(ctx, e, what, err);
    return edged_fail(err, GCONV_E_JPEG_REFUSED, "%s: %s", what, gjpeg_status_name(st));
}

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
    for (int i = 0; i < GJPEG_TIMED; i++) {
        if (g->ev_t0[i])
            cudaEventDestroy(g->ev_t0[i]);
        if (g->ev_t1[i])
            cudaEventDestroy(g->ev_t1[i]);
    }
    if (g->s_dec)
        cudaStreamDestroy(g->s_dec);
    free(g);
}

static void gjpeg_close(struct gconv_ctx *ctx)
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

int gjpeg_get(struct gconv_ctx *ctx, struct gjpeg **out, char *err)
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
    GCTX_CU(cudaStreamCreateWithFlags(&g->s_dec, cudaStreamNonBlocking));
    GCTX_CU(cudaEventCreateWithFlags(&g->ev_dec, cudaEventDisableTiming));
    for (int i = 0; i < GJPEG_TIMED; i++) {
        GCTX_CU(cudaEventCreate(&g->ev_t0[i]));
        GCTX_CU(cudaEventCreate(&g->ev_t1[i]));
    }
    GJPEG_NVJ(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &g->sw));
    GJPEG_NVJ(nvjpegJpegStateCreate(g->sw, &g->sw_state));
    GJPEG_NVJ(nvjpegEncoderStateCreate(g->sw, &g->enc, NULL));
    GJPEG_NVJ(nvjpegEncoderParamsCreate(g->sw, &g->enc_params, NULL));
    gjpeg_try_hardware(g);
out:
    if (rc < 0) {
        gjpeg_free(g);
        return rc;
    }
    ctx->jpeg = *out = g;
    ctx->jpeg_close = gjpeg_close; /* the context frees the state through it */
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
    if (ctx && ctx->jpeg)
        gjpeg_time_read(ctx->jpeg);
    for (int i = 0; i < GCONV_JPEG_STAGES; i++)
        ms[i] = ctx && ctx->jpeg ? ctx->jpeg->prof_ms[i] : 0.0;
}
