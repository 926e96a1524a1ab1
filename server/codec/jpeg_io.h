/* jpeg_io.h — JPEG header peek (no decode), EXIF orientation, and CPU decode/encode with libjpeg-turbo. */
#ifndef EDGED_JPEG_IO_H
#define EDGED_JPEG_IO_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The colour model of the frame: from the component count, the Adobe APP14 transform and JFIF. */
enum jpegio_colorspace { JPEGIO_CS_GRAY, JPEGIO_CS_YCBCR, JPEGIO_CS_RGB, JPEGIO_CS_CMYK, JPEGIO_CS_YCCK };

/* Chroma subsampling, from the sampling factors of the first component against the others. */
enum jpegio_subsamp {
    JPEGIO_SUB_GRAY,
    JPEGIO_SUB_444,
    JPEGIO_SUB_422,
    JPEGIO_SUB_420,
    JPEGIO_SUB_440,
    JPEGIO_SUB_411,
    JPEGIO_SUB_OTHER, /* any other combination; the CPU decoder still serves it */
};

/* What jpegio_peek reads from the markers up to the first scan. */
struct jpegio_info {
    int w, h;
    int ch;          /* channels the decode gives: 1 gray, 3 colour (CMYK and YCCK become RGB) */
    int components;  /* in the frame: 1, 3 or 4 */
    int progressive; /* SOF2, SOF6, SOF10 */
    int arithmetic;  /* SOF9..SOF11 */
    enum jpegio_colorspace cs;
    enum jpegio_subsamp sub;
    char factors[24]; /* each component's sampling factors, HxV comma-separated: "2x2,1x1,1x1" */
    int orientation; /* EXIF 1..8, 1 without an EXIF APP1 */
    int scans;       /* SOS markers up to EOI (or the end of the data) */
};

/* Scans a JPEG may have: each scan of a progressive file passes over the whole image, so 500
 * scans of a 50-megapixel file cost seconds of CPU (libjpeg-turbo's TJFLAG_LIMITSCANS bound). */
#define JPEGIO_MAX_SCANS 500

/* Whether data starts with the JPEG SOI marker and a marker after it (FF D8 FF). */
int jpegio_is_jpeg(const uint8_t *data, size_t len);

/* Walks the markers up to the frame header (SOF) and the first scan without decoding: size,
 * channels, progressive, colour model, subsampling and orientation into *info; then on over the
 * entropy-coded data to count the scans (a memchr walk, no decode). Returns 0,
 * EDGED_E_NOT_PNG (415: not a JPEG, or a kind no decoder here serves: lossless, hierarchical,
 * 12-bit, 2 components) or EDGED_E_BAD_IMAGE (a malformed or truncated header), message in err. */
int jpegio_peek(const uint8_t *data, size_t len, struct jpegio_info *info, char *err);

/* 0 when info->scans is at most JPEGIO_MAX_SCANS, else EDGED_E_BAD_IMAGE naming the count and
 * the limit: refused before any decode. */
int jpegio_check_scans(const struct jpegio_info *info, char *err);

/* 1 when the segments after SOI, each scan's entropy-coded data included, run to an EOI marker;
 * 0 when the data ends first (a truncated file) or a segment is malformed. Bytes after the EOI do
 * not matter, as for libjpeg. Reads at most len bytes; never an error. */
int jpegio_complete(const uint8_t *data, size_t len);

/* EXIF orientation 1..8 from the first APP1 Exif segment before the scan; 1 when absent or
 * unreadable (never an error). */
int jpegio_orientation(const uint8_t *data, size_t len);

/* Short names for messages and the bench: "4:2:0", "YCbCr". */
const char *jpegio_subsamp_name(enum jpegio_subsamp s);
const char *jpegio_colorspace_name(enum jpegio_colorspace cs);

/* Decodes data (which passed jpegio_peek and the limits) with libjpeg into out (allocated here,
 * free with img_free): gray 1 channel, colour 3 (RGB) at any sampling factors, CMYK/YCCK
 * converted to RGB as OpenCV does. The orientation is not applied. Any libjpeg warning (truncated
 * data, a corrupt scan) is an error, as is a scan past JPEGIO_MAX_SCANS: EDGED_E_BAD_IMAGE naming
 * it; EDGED_E_NOMEM. Never a partial image. */
int jpegio_decode(const uint8_t *data, size_t len, const struct jpegio_info *info, struct img *out,
                  char *err);

#define JPEGIO_DEFAULT_QUALITY 90

/* Encodes im as a baseline JPEG of quality 1..100 into a malloc'd buffer (*out, *out_len; caller
 * frees): 1 channel gray, 3 RGB with 4:2:0 chroma; alpha (2 or 4 channels) is dropped; a packed
 * 1-bit map is written as 0/255 gray. Returns 0, EDGED_E_PARAM (quality) or another EDGED_E_*. */
int jpegio_encode(const struct img *im, int quality, uint8_t **out, size_t *out_len, char *err);

#ifdef __cplusplus
}
#endif
#endif
