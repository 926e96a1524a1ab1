/* webp_io.h — WebP header peek, CPU decode of still images (lossy and lossless) and encode, with libwebp. */
#ifndef EDGED_WEBP_IO_H
#define EDGED_WEBP_IO_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* What webpio_peek reads from the RIFF header and the first frame's header. */
struct webpio_info {
    int w, h;
    int ch;          /* 3 RGB, 4 RGBA when the file has alpha */
    int lossless;    /* VP8L; 0 for VP8 (lossy) or a mixed/unknown file */
    int orientation; /* EXIF 1..8 from an EXIF chunk, 1 without one */
};

/* Whether data starts with a RIFF header of form WEBP. */
int webpio_is_webp(const uint8_t *data, size_t len);

/* Size, channels and kind without decoding. Returns 0, EDGED_E_NOT_PNG (415: animated WebP, or
 * not a WebP) or EDGED_E_BAD_IMAGE (malformed or truncated header), message in err. */
int webpio_peek(const uint8_t *data, size_t len, struct webpio_info *info, char *err);

/* Decodes a still WebP that passed webpio_peek and the size limits into out (allocated here,
 * free with img_free) with info->ch channels; orientation not applied. EDGED_E_BAD_IMAGE for
 * corrupt or truncated data (never a partial image), EDGED_E_NOMEM. */
int webpio_decode(const uint8_t *data, size_t len, const struct webpio_info *info, struct img *out,
                  char *err);

/* Largest side a WebP holds (14 bits of its header). */
#define WEBPIO_MAX_SIDE 16383

/* Encodes im into a malloc'd buffer (*out, *out_len; caller frees): lossless (VP8L, every sample
 * kept, also the colour under alpha 0) when lossless, else lossy (VP8) at quality 1..100, alpha
 * then kept losslessly beside it. WebP has no gray mode: 1 channel (and a packed 1-bit map, as
 * 0/255) becomes RGB, gray+alpha RGBA. Returns 0, EDGED_E_PARAM (a side over WEBPIO_MAX_SIDE,
 * quality out of range) or EDGED_E_NOMEM, message in err. */
int webpio_encode(const struct img *im, int lossless, int quality, uint8_t **out, size_t *out_len, char *err);

#endif
