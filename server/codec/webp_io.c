/* webp_io.c — WebP peek (WebPGetFeatures, RIFF chunk walk for EXIF), decode into caller memory, and
 * encode (WebPEncode into a buffer of ours). */
#include "codec/webp_io.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/encode.h>

#include "errors.h"
#include "codec/exif.h"

#define RIFF_HEADER 12
#define RIFF_CHUNK_HEADER 8

int webpio_is_webp(const uint8_t *d, size_t n)
{
    return d && n >= RIFF_HEADER && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0;
}

static uint32_t rd32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The EXIF chunk of an extended (VP8X) file: chunks are padded to even sizes; a chunk running
 * past the data ends the walk. */
static int exif_chunk_orientation(const uint8_t *d, size_t n)
{
    size_t at = RIFF_HEADER;

    while (at + RIFF_CHUNK_HEADER <= n) {
        size_t sz = rd32le(d + at + 4);
        if (sz > n - at - RIFF_CHUNK_HEADER)
            return 1;
        if (memcmp(d + at, "EXIF", 4) == 0)
            return exif_orientation(d + at + RIFF_CHUNK_HEADER, sz);
        at += RIFF_CHUNK_HEADER + sz + (sz & 1);
    }
    return 1;
}

static int status_fail(VP8StatusCode st, char *err)
{
    if (st == VP8_STATUS_OUT_OF_MEMORY)
        return edged_fail(err, EDGED_E_NOMEM, "out of memory decoding WebP");
    if (st == VP8_STATUS_NOT_ENOUGH_DATA)
        return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt WebP: truncated");
    if (st == VP8_STATUS_UNSUPPORTED_FEATURE)
        return edged_fail(err, EDGED_E_BAD_IMAGE, "unsupported WebP feature");
    return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt WebP: bitstream error (status %d)", (int)st);
}

int webpio_peek(const uint8_t *d, size_t n, struct webpio_info *info, char *err)
{
    WebPBitstreamFeatures f;
    VP8StatusCode st;

    memset(info, 0, sizeof(*info));
    if (!webpio_is_webp(d, n))
        return edged_fail(err, EDGED_E_NOT_PNG, "not a WebP: no RIFF/WEBP header");
    if ((st = WebPGetFeatures(d, n, &f)) != VP8_STATUS_OK)
        return status_fail(st, err);
    if (f.has_animation)
        return edged_fail(err, EDGED_E_NOT_PNG, "animated WebP not supported: send a still image");
    if (f.width < 1 || f.height < 1)
        return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt WebP: size %dx%d", f.width, f.height);
    info->w = f.width;
    info->h = f.height;
    info->ch = f.has_alpha ? 4 : 3;
    info->lossless = f.format == 2;
    info->orientation = exif_chunk_orientation(d, n);
    return 0;
}

int webpio_decode(const uint8_t *d, size_t n, const struct webpio_info *info, struct img *out, char *err)
{
    WebPDecoderConfig cfg;
    VP8StatusCode st;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!WebPInitDecoderConfig(&cfg))
        return edged_fail(err, EDGED_E_INTERNAL, "libwebp version mismatch");
    if ((rc = img_alloc(out, info->w, info->h, info->ch, err)) < 0)
        return rc;
    cfg.output.colorspace = info->ch == 4 ? MODE_RGBA : MODE_RGB;
    cfg.output.is_external_memory = 1;
    cfg.output.u.RGBA.rgba = out->px;
    cfg.output.u.RGBA.stride = (int)out->stride;
    cfg.output.u.RGBA.size = out->stride * (size_t)out->h;
    st = WebPDecode(d, n, &cfg);
    WebPFreeDecBuffer(&cfg.output);
    if (st == VP8_STATUS_OK && (cfg.output.width != info->w || cfg.output.height != info->h))
        st = VP8_STATUS_BITSTREAM_ERROR;
    if (st != VP8_STATUS_OK) {
        img_free(out);
        return status_fail(st, err);
    }
    return 0;
}

/* ---- encode -------------------------------------------------------------------------------- */

/* The encoder's output, grown by doubling in memory the caller frees with free(). */
struct wbuf {
    uint8_t *p;
    size_t len, cap;
};

static int wbuf_write(const uint8_t *data, size_t n, const WebPPicture *pic)
{
    struct wbuf *b = pic->custom_ptr;
    size_t cap = b->cap ? b->cap : 4096;
    uint8_t *p;

    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2)
            return 0;
        cap *= 2;
    }
    if (cap != b->cap) {
        if (!(p = realloc(b->p, cap)))
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 1;
}

/* Sample x of row `row` of im as gray: a packed map's bit as 0/255, else the first channel. */
static uint8_t gray_at(const struct img *im, const uint8_t *row, int x)
{
    if (im->packed)
        return (row[x >> 3] >> (7 - (x & 7))) & 1 ? 255 : 0;
    return row[(size_t)x * im->ch];
}

/* im as rows WebP takes: RGB and RGBA as they are; gray (and packed) to RGB and gray+alpha to
 * RGBA in *tmp (caller frees). *ch gets 3 or 4. */
static int encode_source(const struct img *im, const uint8_t **src, int *stride, int *ch, uint8_t **tmp,
                         char *err)
{
    int alpha = !im->packed && im->ch == 2, n = alpha ? 4 : 3;

    *tmp = NULL;
    *src = im->px;
    *stride = (int)im->stride;
    *ch = im->ch;
    if (!im->packed && im->ch >= 3)
        return 0;
    if (!(*tmp = malloc((size_t)im->w * (size_t)im->h * (size_t)n)))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory encoding WebP");
    for (int y = 0; y < im->h; y++) {
        const uint8_t *row = im->px + (size_t)y * im->stride;
        uint8_t *o = *tmp + (size_t)y * im->w * n;
        for (int x = 0; x < im->w; x++, o += n) {
            o[0] = o[1] = o[2] = gray_at(im, row, x);
            if (alpha)
                o[3] = row[2 * x + 1];
        }
    }
    *src = *tmp;
    *stride = im->w * n;
    *ch = n;
    return 0;
}

/* libwebp's fastest settings, as png_level defaults to 1: lossless preset 0 and lossy method 0.
 * Its default (method 4) costs ~10x lossless, ~4x lossy, for 12-15 % smaller files (performance.md).
 * `exact` keeps the colour of fully transparent pixels, which the one-call lossless API changes. */
#define WEBPIO_LOSSLESS_PRESET 0
#define WEBPIO_LOSSY_METHOD 0

static int encode_config(WebPConfig *cfg, int lossless, int quality, char *err)
{
    if (!WebPConfigPreset(cfg, WEBP_PRESET_DEFAULT, (float)quality) ||
        (lossless && !WebPConfigLosslessPreset(cfg, WEBPIO_LOSSLESS_PRESET)))
        return edged_fail(err, EDGED_E_INTERNAL, "libwebp version mismatch");
    cfg->lossless = lossless;
    cfg->exact = lossless;
    if (!lossless)
        cfg->method = WEBPIO_LOSSY_METHOD;
    return 0;
}

/* Memory (the encoder's or our writer's) is 503 and worth a retry; anything else libwebp refuses
 * (a VP8 partition over its 512 KiB bound on a huge detailed image) is the request's to change. */
static int encode_fail(WebPEncodingError e, char *err)
{
    if (e == VP8_ENC_OK || e == VP8_ENC_ERROR_OUT_OF_MEMORY || e == VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY ||
        e == VP8_ENC_ERROR_BAD_WRITE)
        return edged_fail(err, EDGED_E_NOMEM, "out of memory encoding WebP");
    return edged_fail(err, EDGED_E_PARAM, "format: libwebp cannot encode this result (error %d); use png or jpeg, "
                      "or webp without quality (lossless)", (int)e);
}

int webpio_encode(const struct img *im, int lossless, int quality, uint8_t **out, size_t *out_len, char *err)
{
    WebPConfig cfg;
    WebPPicture pic;
    struct wbuf b = {0};
    uint8_t *tmp = NULL;
    const uint8_t *src;
    int stride, ch, rc;

    *out = NULL;
    *out_len = 0;
    if (!lossless && (quality < 1 || quality > 100))
        return edged_fail(err, EDGED_E_PARAM, "quality: %d invalid; must be 1..100", quality);
    if (im->w > WEBPIO_MAX_SIDE || im->h > WEBPIO_MAX_SIDE)
        return edged_fail(err, EDGED_E_PARAM, "format: WebP holds at most %dx%d pixels; the result is %dx%d (use "
                          "png or jpeg)", WEBPIO_MAX_SIDE, WEBPIO_MAX_SIDE, im->w, im->h);
    if ((rc = encode_config(&cfg, lossless, quality, err)) < 0 || !WebPPictureInit(&pic))
        return rc < 0 ? rc : edged_fail(err, EDGED_E_INTERNAL, "libwebp version mismatch");
    if ((rc = encode_source(im, &src, &stride, &ch, &tmp, err)) < 0)
        return rc;
    pic.use_argb = lossless;
    pic.width = im->w;
    pic.height = im->h;
    pic.writer = wbuf_write;
    pic.custom_ptr = &b;
    if (!(ch == 4 ? WebPPictureImportRGBA(&pic, src, stride) : WebPPictureImportRGB(&pic, src, stride)) ||
        !WebPEncode(&cfg, &pic)) {
        rc = encode_fail(pic.error_code, err);
        free(b.p);
    } else {
        *out = b.p;
        *out_len = b.len;
    }
    WebPPictureFree(&pic);
    free(tmp);
    return rc;
}
