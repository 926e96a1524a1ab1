/* png_unfilter.h — PNG's row filters undone in place, for the fast decoder (png_decode.c): byte
 * loops for pixels of 1 and 2 bytes, SSE2 or AVX2 code (the fastest the CPU has) for 3 and 4. */
#ifndef EDGED_PNG_UNFILTER_H
#define EDGED_PNG_UNFILTER_H

#include <stddef.h>
#include <stdint.h>

/* The rows are unfiltered in place in one buffer: the inflated stream sits PNGUNF_LEAD(rowbytes)
 * bytes in, and row y, filter byte dropped, is written to y * rowbytes. Every row written then lies
 * before the stream bytes still to be read, also while two rows are decoded side by side. */
#define PNGUNF_LEAD(rb) (2 * (rb))
/* Bytes past the stream and past the zero row that the 4-byte moves of 3-byte pixels may read. */
#define PNGUNF_SLACK 4

/* pngunf_rows' answer for a row whose filter type is over 4 (libpng: "bad adaptive filter
 * value"). */
#define PNGUNF_BAD_FILTER 1

/* Unfilters the stream of h rows of rowbytes bytes (pixels of bpp bytes; 1 for palette images) at
 * buf + PNGUNF_LEAD(rowbytes) into packed rows at buf (the layout above; PNGUNF_SLACK bytes
 * follow the stream). Returns 0, PNGUNF_BAD_FILTER, or EDGED_E_NOMEM with a message in err. */
int pngunf_rows(uint8_t *buf, size_t rowbytes, uint32_t h, int bpp, char *err);

/* For tests: nonzero makes pngunf_rows use its baseline (SSE2) row code on any CPU; 0, the
 * default, picks the fastest the CPU has. */
void pngunf_set_baseline(int on);

#endif
