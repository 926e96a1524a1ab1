/* exif.h — the EXIF orientation tag (1..8) from an EXIF block, for JPEG APP1 and the WebP EXIF chunk. */
#ifndef EDGED_EXIF_H
#define EDGED_EXIF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Orientation 1..8 from an EXIF block: a TIFF header ("II*\0" or "MM\0*") and IFD0, optionally
 * preceded by "Exif\0\0". 1 when the tag is absent, out of range or the block is malformed; every
 * offset is bounds-checked against len. */
int exif_orientation(const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
