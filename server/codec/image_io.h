/* image_io.h — every input format (PNG, JPEG, WebP): sniff from the bytes, header peek, limits,
 * CPU decode dispatch, EXIF orientation, and the output encoders (PNG, JPEG, WebP). */
#ifndef EDGED_IMAGE_IO_H
#define EDGED_IMAGE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "params.h"
#include "codec/jpeg_io.h"
#include "codec/png_io.h"
#include "codec/webp_io.h"

enum imageio_format { IMAGEIO_PNG, IMAGEIO_JPEG, IMAGEIO_WEBP };

/* What the header says, before any pixel memory. */
struct imageio_head {
    enum imageio_format fmt;
    int w, h, ch;            /* as decoded, before orientation */
    int orientation;         /* EXIF 1..8 (JPEG, WebP); 1 for PNG */
    struct pngio_info png;   /* fmt PNG: bit depth, interlacing, acTL */
    struct jpegio_info jpeg; /* fmt JPEG: the frame (progressive, colour model, subsampling, scans) */
    struct webpio_info webp; /* fmt WEBP */
};

/* The input format from the first bytes, never from a name or Content-Type. Returns the
 * imageio_format, EDGED_E_BAD_PNG (a PNG whose signature is damaged) or EDGED_E_NOT_PNG (415
 * naming the accepted formats). */
int imageio_sniff(const uint8_t *data, size_t len, char *err);

/* Sniffs and reads the header (pngio_peek, jpegio_peek, webpio_peek) into *head, no limits
 * applied: 0 or the sniff's/peek's error (415 a format or kind not served, 422 a damaged header). */
int imageio_probe(const uint8_t *data, size_t len, struct imageio_head *head, char *err);

/* What a decode of head would cost, against lim (NULL: the defaults): the size (pngio_check_size)
 * and a JPEG's scan count (jpegio_check_scans). 0, EDGED_E_IMAGE_TOO_LARGE or EDGED_E_BAD_IMAGE. */
int imageio_check_limits(const struct imageio_head *head, const struct png_limits *lim, char *err);

/* imageio_probe, then imageio_check_limits. 0 or the first error. */
int imageio_peek(const uint8_t *data, size_t len, const struct png_limits *lim, struct imageio_head *head,
                 char *err);

/* Decodes data on the CPU after imageio_peek accepted head; with orient nonzero the EXIF
 * orientation is applied (imageio_orient). out allocated here (img_free). 0, EDGED_E_BAD_PNG /
 * EDGED_E_BAD_IMAGE (corrupt, truncated), EDGED_E_IMAGE_TOO_LARGE or EDGED_E_NOMEM. */
int imageio_decode(const uint8_t *data, size_t len, const struct png_limits *lim,
                   const struct imageio_head *head, int orient, struct img *out, char *err);

/* Peek, limits and decode in one call (the CLI and batch); orientation applied when orient. */
int imageio_load(const uint8_t *data, size_t len, const struct png_limits *lim, int orient, struct img *out,
                 char *err);

/* Rotates/flips im in place (new pixel buffer) so that EXIF orientation o (1..8) becomes 1:
 * 5..8 swap width and height. Unpacked images only. 0 or EDGED_E_NOMEM. */
int imageio_orient(struct img *im, int o, char *err);

/* "PNG", "JPEG", "WebP". */
const char *imageio_format_name(enum imageio_format fmt);

/* Output encoders: PNG (level, bit_depth as pngio_encode), JPEG (quality, jpegio_encode) or WebP
 * (lossless, or lossy at quality: webpio_encode). */
enum imageio_out { IMAGEIO_OUT_PNG, IMAGEIO_OUT_JPEG, IMAGEIO_OUT_WEBP };

struct imageio_enc {
    enum imageio_out fmt;
    int png_level, bit_depth; /* PNG */
    int quality;              /* JPEG, lossy WebP: 1..100 */
    int lossless;             /* WebP */
};

/* The encoder settings of request p for output format fmt (PNG, JPEG or WEBP: resolved, never
 * AUTO): p's png_level, bit_depth and quality; WebP is lossy when p gave a quality, else lossless. */
struct imageio_enc imageio_enc_of(const struct params *p, enum params_format fmt);

/* 0 when a w x h result fits output format fmt (WebP: WEBPIO_MAX_SIDE a side, JPEG 65500), else
 * EDGED_E_PARAM naming the bound: checked before any work, as the encoders check it again. */
int imageio_check_output(enum imageio_out fmt, int w, int h, char *err);

/* Encodes im into a malloc'd buffer (*out, *out_len; caller frees). 0 or a negative EDGED_E_*. */
int imageio_encode(const struct img *im, const struct imageio_enc *enc, uint8_t **out, size_t *out_len,
                   char *err);

/* The media type of an output format: "image/png", "image/jpeg", "image/webp". */
const char *imageio_out_mime(enum imageio_out fmt);

#endif
