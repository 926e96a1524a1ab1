/* png_decode.h — the fast PNG decoder for the common kinds, inflating with libdeflate. */
#ifndef EDGED_PNG_DECODE_H
#define EDGED_PNG_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* pngdec_decode's answer for a file it does not serve: a rare kind (interlaced, 16-bit, 1/2/4-bit
 * gray) or anything out of the ordinary (a CRC error, truncation, a zlib error, extra or missing
 * image data, a chunk out of place). The caller then decodes with the reference decoder, whose
 * verdict (image, or error code and message) stands. */
#define PNGDEC_DECLINED 1

/* Decodes 8-bit gray, gray+alpha, RGB, RGBA and 1/2/4/8-bit palette PNGs (non-interlaced) into
 * out (allocated here, free with img_free), with pngio_decode's channel rules and pixels. data
 * must have passed pngio_decode's signature, IHDR and size-limit checks. Returns 0,
 * PNGDEC_DECLINED (nothing allocated, out zeroed) or EDGED_E_NOMEM with a message in err. */
int pngdec_decode(const uint8_t *data, size_t len, struct img *out, char *err);

struct png_layout;

/* For the device decoder: the layout (api/png_layout.h) of a PNG pngdec_decode would serve, and its
 * zlib stream, every chunk's CRC checked: *z points into data (one IDAT chunk) or into *join, where
 * several IDAT chunks are joined (malloc'd, caller frees; NULL when not needed). data must have
 * passed pngio_decode's signature, IHDR and size-limit checks. Returns 0, PNGDEC_DECLINED (a file
 * pngdec_decode would decline before inflating; *join NULL) or EDGED_E_NOMEM. */
int pngdec_layout(const uint8_t *data, size_t len, struct png_layout *lay, const uint8_t **z, size_t *z_len,
                  uint8_t **join, char *err);
/* As pngdec_layout, with the zlib stream (one IDAT chunk or several, their CRCs checked) copied
 * into dst, the caller's buffer of at least len bytes (the stream is never longer than the file):
 * one pass over the data, into memory the caller chose (pinned memory the device reads). Returns 0
 * or PNGDEC_DECLINED (dst's contents then undefined). */
int pngdec_layout_into(const uint8_t *data, size_t len, struct png_layout *lay, uint8_t *dst, size_t *z_len);

/* Whether libpng's refusal message err names one of the deflate-stream faults that libdeflate
 * reads and zlib refuses: more than 286 length or 30 distance codes, a code-length repeat past
 * their count, length symbols 286-287, distance symbols 30-31, the unused codeword of an empty or
 * one-symbol code, a one-symbol code-length code. No encoder writes these; the fast decoder takes
 * such a stream as libdeflate reads it, where libpng refuses it. Tests use this to tell that
 * difference from a defect. */
int pngdec_deflate_lenient(const char *err);

#endif
