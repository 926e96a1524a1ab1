/* png_frame.h — the PNG around a zlib stream: signature, IHDR, one IDAT, IEND, with their CRCs. */
#ifndef EDGED_PNG_FRAME_H
#define EDGED_PNG_FRAME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PNGFRAME_HEAD 41 /* signature 8, IHDR chunk 25, IDAT length and type 8 */
#define PNGFRAME_TAIL 16 /* IDAT CRC 4, IEND chunk 12 */
#define PNGFRAME_MAX_IDAT 0x7fffffffu

/* Writes the frame of a w x h PNG of ch channels (1..4: gray, gray+alpha, RGB, RGBA) at bit_depth
 * (8, or 1 for gray) around the zlen zlib bytes already at png + PNGFRAME_HEAD; png holds
 * PNGFRAME_HEAD + zlen + PNGFRAME_TAIL bytes. zlen is at most PNGFRAME_MAX_IDAT (the caller checks).
 * Returns the PNG's length. No other chunk is written: the encoders add no metadata. */
size_t pngframe_write(uint8_t *png, size_t zlen, int w, int h, int ch, int bit_depth);

/* The PNG of the zlen zlib bytes at z in a new malloc'd buffer (*png, *png_len; caller frees).
 * Returns 0, EDGED_E_PARAM (zlen over one IDAT chunk) or EDGED_E_NOMEM with a message in err. */
int pngframe_wrap(const uint8_t *z, size_t zlen, int w, int h, int ch, int bit_depth, uint8_t **png,
                  size_t *png_len, char *err);

#ifdef __cplusplus
}
#endif
#endif
