/* png_encode.h — the fast PNG encoder: row filters and libdeflate, or a run coder for 0/255 maps. */
#ifndef EDGED_PNG_ENCODE_H
#define EDGED_PNG_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* pngenc_encode's answer when the compressed image would not fit one IDAT chunk (2^31-1 bytes):
 * the caller encodes with the reference encoder. */
#define PNGENC_DECLINED 1

/* Encodes im as pngio_encode does (same arguments, already checked by it: level 0..9, bit_depth
 * 8 or 1) into a malloc'd PNG (*out, *out_len; caller frees). Level 0 stores, 1-3 use the Up
 * filter, 4-9 choose a filter per row; 1-bit rows are never filtered. At level 1 an 8-bit gray
 * image of only 0 and 255 (an edge map) goes unfiltered through a run coder. Returns 0,
 * PNGENC_DECLINED or a negative EDGED_E_* code with a message in err. */
int pngenc_encode(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len, char *err);

/* Packs one gray row of w samples to 1 bit per pixel at dst ((w + 7) / 8 bytes), most
 * significant bit first; samples >= 128 are white. */
void pngenc_pack_row1(const uint8_t *src, int w, uint8_t *dst);

#endif
