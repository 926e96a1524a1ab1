/* png_frame.c — the PNG around a zlib stream, for the CPU encoder and the device encoder alike. */
#include "png_frame.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

static const uint8_t pngframe_sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};

static void pngframe_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Writes a chunk's length and type at p (its n data bytes follow) and its CRC after them. */
static void pngframe_chunk(uint8_t *p, const char *type, size_t n)
{
    pngframe_put32(p, (uint32_t)n);
    memcpy(p + 4, type, 4);
    pngframe_put32(p + 8 + n, (uint32_t)libdeflate_crc32(0, p + 4, n + 4));
}

size_t pngframe_write(uint8_t *png, size_t zlen, int w, int h, int ch, int bit_depth)
{
    static const uint8_t colors[5] = {0, 0, 4, 2, 6};
    uint8_t *ihdr = png + 8, *idat = png + PNGFRAME_HEAD - 8;

    memcpy(png, pngframe_sig, 8);
    pngframe_put32(ihdr + 8, (uint32_t)w);
    pngframe_put32(ihdr + 12, (uint32_t)h);
    ihdr[16] = (uint8_t)bit_depth;
    ihdr[17] = colors[ch];
    ihdr[18] = ihdr[19] = ihdr[20] = 0;
    pngframe_chunk(ihdr, "IHDR", 13);
    pngframe_chunk(idat, "IDAT", zlen);
    pngframe_chunk(idat + 12 + zlen, "IEND", 0);
    return PNGFRAME_HEAD + zlen + PNGFRAME_TAIL;
}

int pngframe_wrap(const uint8_t *z, size_t zlen, int w, int h, int ch, int bit_depth, uint8_t **png,
                  size_t *png_len, char *err)
{
    *png = NULL, *png_len = 0;
    if (zlen > PNGFRAME_MAX_IDAT)
        return edged_fail(err, EDGED_E_PARAM, "PNG: %zu compressed bytes do not fit one IDAT chunk", zlen);
    if (!(*png = malloc(PNGFRAME_HEAD + zlen + PNGFRAME_TAIL)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a PNG", zlen);
    memcpy(*png + PNGFRAME_HEAD, z, zlen);
    *png_len = pngframe_write(*png, zlen, w, h, ch, bit_depth);
    return 0;
}
