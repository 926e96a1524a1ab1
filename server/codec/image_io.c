/* image_io.c — PNG/JPEG/WebP input (sniff, peek, limits, decode, orientation) and output encode. */
#include "codec/image_io.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

/* The first bytes of a PNG with a damaged signature still carry the IHDR tag of the first chunk
 * (at offset 12, give or take a byte the damage added or removed); no other format has it there. */
#define SNIFF_IHDR_WINDOW 24

int imageio_sniff(const uint8_t *d, size_t n, char *err)
{
    size_t win = n < SNIFF_IHDR_WINDOW ? n : SNIFF_IHDR_WINDOW;

    if (pngio_is_png(d, n))
        return IMAGEIO_PNG;
    if (jpegio_is_jpeg(d, n))
        return IMAGEIO_JPEG;
    if (webpio_is_webp(d, n))
        return IMAGEIO_WEBP;
    for (size_t i = 8; i + 4 <= win; i++)
        if (memcmp(d + i, "IHDR", 4) == 0)
            return edged_fail(err, EDGED_E_BAD_PNG, "corrupt PNG: damaged signature");
    return edged_fail(
        err, EDGED_E_NOT_PNG,
        "unsupported image format (%zu bytes): PNG, JPEG and WebP are accepted, sniffed from the bytes", n);
}

const char *imageio_format_name(enum imageio_format fmt)
{
    return fmt == IMAGEIO_JPEG ? "JPEG" : fmt == IMAGEIO_WEBP ? "WebP" : "PNG";
}

int imageio_probe(const uint8_t *d, size_t n, struct imageio_head *head, char *err)
{
    int rc;

    memset(head, 0, sizeof(*head));
    head->orientation = 1;
    if ((rc = imageio_sniff(d, n, err)) < 0)
        return rc;
    head->fmt = (enum imageio_format)rc;
    if (head->fmt == IMAGEIO_PNG) {
        if ((rc = pngio_peek(d, n, &head->png, err)) == 0)
            head->w = head->png.w, head->h = head->png.h, head->ch = head->png.ch;
    } else if (head->fmt == IMAGEIO_JPEG) {
        if ((rc = jpegio_peek(d, n, &head->jpeg, err)) == 0)
            head->w = head->jpeg.w, head->h = head->jpeg.h, head->ch = head->jpeg.ch,
            head->orientation = head->jpeg.orientation;
    } else if ((rc = webpio_peek(d, n, &head->webp, err)) == 0) {
        head->w = head->webp.w, head->h = head->webp.h, head->ch = head->webp.ch;
        head->orientation = head->webp.orientation;
    }
    return rc;
}

int imageio_check_limits(const struct imageio_head *head, const struct png_limits *lim, char *err)
{
    struct png_limits def;
    int rc;

    if (!lim) {
        pngio_default_limits(&def);
        lim = &def;
    }
    if ((rc = pngio_check_size(lim, (uint32_t)head->w, (uint32_t)head->h, err)) < 0)
        return rc;
    return head->fmt == IMAGEIO_JPEG ? jpegio_check_scans(&head->jpeg, err) : 0;
}

int imageio_peek(const uint8_t *d, size_t n, const struct png_limits *lim, struct imageio_head *head,
                 char *err)
{
    int rc = imageio_probe(d, n, head, err);

    return rc < 0 ? rc : imageio_check_limits(head, lim, err);
}

int imageio_decode(const uint8_t *d, size_t n, const struct png_limits *lim, const struct imageio_head *head,
                   int orient, struct img *out, char *err)
{
    int rc;

    if (head->fmt == IMAGEIO_PNG) {
        rc = pngio_decode(d, n, lim, out, err);
        return rc == EDGED_E_NOT_PNG ? edged_fail(err, EDGED_E_BAD_PNG, "corrupt PNG") : rc;
    }
    rc = head->fmt == IMAGEIO_JPEG ? jpegio_decode(d, n, &head->jpeg, out, err)
                                   : webpio_decode(d, n, &head->webp, out, err);
    if (rc == 0 && orient && head->orientation != 1 && (rc = imageio_orient(out, head->orientation, err)) < 0)
        img_free(out);
    return rc;
}

int imageio_load(const uint8_t *d, size_t n, const struct png_limits *lim, int orient, struct img *out,
                 char *err)
{
    struct imageio_head head;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = imageio_peek(d, n, lim, &head, err)) < 0)
        return rc;
    return imageio_decode(d, n, lim, &head, orient, out, err);
}

/* Where output pixel (x, y) comes from for EXIF orientation o on a w x h source, as coefficients:
 * sx = xx*x + xy*y + xc*(w-1), sy = yx*x + yy*y + yc*(h-1). The transforms are cv2's: 2 mirror,
 * 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90
 * counter-clockwise. */
static const signed char orient_coef[9][6] = {
    {1, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 1, 0},  {-1, 0, 1, 0, 1, 0},  {-1, 0, 1, 0, -1, 1}, {1, 0, 0, 0, -1, 1},
    {0, 1, 0, 1, 0, 0}, {0, 1, 0, -1, 0, 1}, {0, -1, 1, -1, 0, 1}, {0, -1, 1, 1, 0, 0},
};

int imageio_orient(struct img *im, int o, char *err)
{
    struct img t;
    int swap = o >= 5 && o <= 8, rc;
    const signed char *k = orient_coef[o < 0 || o > 8 ? 0 : o];

    if (o < 2 || o > 8)
        return 0;
    if ((rc = img_alloc(&t, swap ? im->h : im->w, swap ? im->w : im->h, im->ch, err)) < 0)
        return rc;
    for (int y = 0; y < t.h; y++)
        for (int x = 0; x < t.w; x++) {
            int sx = k[0] * x + k[1] * y + k[2] * (im->w - 1), sy = k[3] * x + k[4] * y + k[5] * (im->h - 1);
            memcpy(t.px + (size_t)y * t.stride + (size_t)x * t.ch,
                   im->px + (size_t)sy * im->stride + (size_t)sx * im->ch, (size_t)im->ch);
        }
    img_free(im);
    *im = t;
    return 0;
}

struct imageio_enc imageio_enc_of(const struct params *p, enum params_format fmt)
{
    enum imageio_out out = fmt == PARAMS_FORMAT_JPEG   ? IMAGEIO_OUT_JPEG
                           : fmt == PARAMS_FORMAT_WEBP ? IMAGEIO_OUT_WEBP
                                                       : IMAGEIO_OUT_PNG;

    return (struct imageio_enc){out, p->png_level, p->bit_depth, p->quality, !(p->given & PARAMS_F_QUALITY)};
}

/* libjpeg's JPEG_MAX_DIMENSION */
#define IMAGEIO_JPEG_MAX_SIDE 65500

int imageio_check_output(enum imageio_out fmt, int w, int h, char *err)
{
    int max = fmt == IMAGEIO_OUT_WEBP ? WEBPIO_MAX_SIDE : fmt == IMAGEIO_OUT_JPEG ? IMAGEIO_JPEG_MAX_SIDE : INT_MAX;

    if (w <= max && h <= max)
        return 0;
    return edged_fail(err, EDGED_E_PARAM, "format: %s holds at most %d pixels a side; the result is %dx%d (use "
                      "png%s)", fmt == IMAGEIO_OUT_WEBP ? "WebP" : "JPEG", max, w, h,
                      fmt == IMAGEIO_OUT_WEBP ? " or jpeg" : "");
}

int imageio_encode(const struct img *im, const struct imageio_enc *enc, uint8_t **out, size_t *out_len,
                   char *err)
{
    int rc;

    if ((rc = imageio_check_output(enc->fmt, im->w, im->h, err)) < 0)
        return rc;
    if (enc->fmt == IMAGEIO_OUT_JPEG)
        return jpegio_encode(im, enc->quality, out, out_len, err);
    if (enc->fmt == IMAGEIO_OUT_WEBP)
        return webpio_encode(im, enc->lossless, enc->quality, out, out_len, err);
    return pngio_encode(im, enc->png_level, enc->bit_depth, out, out_len, err);
}

const char *imageio_out_mime(enum imageio_out fmt)
{
    return fmt == IMAGEIO_OUT_JPEG ? "image/jpeg" : fmt == IMAGEIO_OUT_WEBP ? "image/webp" : "image/png";
}
