/* png_io.h — in-memory PNG decode (every PNG kind, to 8-bit samples) and encode, with limits. */
#ifndef EDGED_PNG_IO_H
#define EDGED_PNG_IO_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* Limits applied while decoding; all are decided from IHDR before any row buffer exists. */
struct png_limits {
    uint32_t max_side;      /* largest width or height */
    uint64_t max_pixels;    /* largest width*height */
    size_t max_chunk_bytes; /* backstop: ancillary chunks other than tRNS are skipped unbuffered */
};

/* Defaults: side 32768, 50 megapixels, 8 MB chunks. */
void pngio_default_limits(struct png_limits *lim);

/* The one size check of an image against request limits (the server's --max-side and
 * --max-pixels, or the defaults), never looser than img_check_size's absolute bounds. Returns 0
 * or EDGED_E_IMAGE_TOO_LARGE with a message naming the limit (max-side, max-pixels). */
int pngio_check_size(const struct png_limits *lim, uint32_t w, uint32_t h, char *err);

/* Whether data starts with the 8-byte PNG signature. */
int pngio_is_png(const uint8_t *data, size_t len);

/* Decodes a whole PNG from memory into out (allocated here; free with img_free) as 8-bit samples:
 * gray -> 1 channel, gray+alpha -> 2, RGB and palette -> 3, with alpha or tRNS -> 2 or 4;
 * 1/2/4-bit gray scaled to 0..255; 16-bit samples -> round(v/257); interlacing undone.
 * Returns 0, EDGED_E_NOT_PNG (no signature), EDGED_E_IMAGE_TOO_LARGE (over lim), EDGED_E_BAD_PNG
 * (corrupt or truncated) or EDGED_E_NOMEM, with a message in err. Never a partial image.
 * lim NULL means the defaults. */
int pngio_decode(const uint8_t *data, size_t len, const struct png_limits *lim, struct img *out, char *err);

/* The reference decoder (libpng alone), used by pngio_decode for the files the fast decoder
 * declines, and by tests and the bench to compare with: same contract as pngio_decode. */
int pngio_decode_libpng(const uint8_t *data, size_t len, const struct png_limits *lim, struct img *out,
                        char *err);

/* What pngio_peek reads from IHDR and the chunk headers before the first IDAT. */
struct pngio_info {
    int w, h;
    int ch;         /* channels decode gives (tRNS adds alpha) */
    int depth;      /* IHDR bit depth: 1, 2, 4, 8 or 16 */
    int interlaced; /* Adam7 */
    int animated;   /* an acTL chunk (APNG): decode gives the default image */
};

/* Reads the signature and IHDR (and walks chunk headers up to IDAT for tRNS and acTL) into
 * *info. Returns 0, EDGED_E_NOT_PNG or EDGED_E_BAD_PNG (a damaged IHDR), message in err. */
int pngio_peek(const uint8_t *data, size_t len, struct pngio_info *info, char *err);

/* Encodes im (1..4 channels, 8-bit) as PNG with deflate level 0..9 into a malloc'd buffer (*out,
 * *out_len; caller frees). bit_depth 1 writes a 1-bit gray image (im must have 1 channel: samples
 * >= 128 become white, or im is packed and its rows are written as they are), else 8 (im not
 * packed). Returns 0 or a negative EDGED_E_* code. */
int pngio_encode(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len, char *err);

/* The reference encoder (libpng and zlib), used by tests and the bench to compare with: same
 * contract as pngio_encode, not the same bytes. */
int pngio_encode_libpng(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len,
                        char *err);

#define PNGIO_DEFAULT_LEVEL 1

#endif
