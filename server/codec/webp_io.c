/* webp_io.c — WebP peek (WebPGetFeatures, RIFF chunk walk for EXIF) and decode into caller memory. */
#include "codec/webp_io.h"

#include <string.h>
#include <webp/decode.h>

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
