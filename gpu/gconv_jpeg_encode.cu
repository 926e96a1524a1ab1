/* gconv_jpeg_encode.cu — JPEG encode on the device with nvJPEG: a job's result behind the job on its
 * stream, a finished result, or a host image. NVJPEG=1 builds only. */
#include <string.h>

#include "clock.h"
#include "gconv_jpeg_internal.h"

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
    GJPEG_NVJ(nvjpegEncoderParamsSetQuality(params, quality, s));
    GJPEG_NVJ(nvjpegEncoderParamsSetSamplingFactors(params, ch == 1 ? NVJPEG_CSS_GRAY : NVJPEG_CSS_420, s));
    if (ch == 1)
        GJPEG_NVJ(nvjpegEncodeYUV(g->sw, enc, params, &src, NVJPEG_CSS_GRAY, w, h, s));
    else
        GJPEG_NVJ(nvjpegEncodeImage(g->sw, enc, params, &src, NVJPEG_INPUT_RGBI, w, h, s));
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

    GJPEG_NVJ(nvjpegEncodeRetrieveBitstream(g->sw, enc, NULL, &len, s));
    GCTX_CU(cudaStreamSynchronize(s));
    if (!(buf = (uint8_t *)malloc(len ? len : 1))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes of JPEG", len);
        goto out;
    }
    GJPEG_NVJ(nvjpegEncodeRetrieveBitstream(g->sw, enc, buf, &len, s));
    GCTX_CU(cudaStreamSynchronize(s));
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

int gjpeg_encode_behind(struct gconv_ctx *ctx, struct gjpeg *g, int s, int quality)
{
    struct gstream *st = &ctx->st[s];
    char err[EDGED_ERR_LEN];
    int rc = 0;

    if (st->packed || (st->out_ch != 1 && st->out_ch != 3))
        return GCONV_E_JPEG_REFUSED;
    if (!g->enc_s[s])
        GJPEG_NVJ(nvjpegEncoderStateCreate(g->sw, &g->enc_s[s], st->s));
    if (!g->par_s[s])
        GJPEG_NVJ(nvjpegEncoderParamsCreate(g->sw, &g->par_s[s], st->s));
    if ((rc = encode_enqueue(ctx, g, g->enc_s[s], g->par_s[s], st->d_out8, st->w, st->h, st->out_ch,
                             (size_t)st->w * st->out_ch, quality, st->s, err)) < 0)
        goto out;
    GCTX_CU(cudaEventRecord(st->ev_down, st->s));
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
        double t0 = clock_ms();
        st->jpeg_enc = 0;
        rc = encode_collect(ctx, g, g->enc_s[s], st->s, out, out_len, err);
        g->prof_ms[3] += clock_ms() - t0;
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
    GCTX_CU(cudaMalloc((void **)&d_px, row * im->h));
    GCTX_CU(cudaMemcpy2DAsync(d_px, row, im->px, im->stride, row, im->h, cudaMemcpyHostToDevice, g->s_dec));
    rc = encode_dev(ctx, g, d_px, im->w, im->h, im->ch, row, quality, g->s_dec, out, out_len, err);
out:
    if (d_px) {
        cudaStreamSynchronize(g->s_dec);
        cudaFree(d_px);
    }
    return rc;
}
