/* fuzz_png_util.h — what the PNG fuzz targets share: recomputing chunk CRCs so that mutations
 * reach the decoder's inner code instead of stopping at a CRC error. */
#ifndef EDGED_FUZZ_PNG_UTIL_H
#define EDGED_FUZZ_PNG_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static inline void fuzz_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Rewrites the CRC of every whole chunk after the signature; stops at the first that does not fit. */
static inline void fuzz_fix_crcs(uint8_t *d, size_t size)
{
    size_t pos = 8;

    while (size - pos >= 12) {
        size_t n = (size_t)d[pos] << 24 | (size_t)d[pos + 1] << 16 | (size_t)d[pos + 2] << 8 | d[pos + 3];
        if (n > size - pos - 12)
            return;
        fuzz_put_be32(d + pos + 8 + n, (uint32_t)crc32(0, d + pos + 4, (uInt)(n + 4)));
        pos += 12 + n;
    }
}

/* Runs one() on the input as given, then on a copy with every chunk CRC recomputed. */
static inline void fuzz_png_both(const uint8_t *data, size_t size, void (*one)(const uint8_t *, size_t))
{
    uint8_t *copy;

    one(data, size);
    if (size < 8 || !(copy = malloc(size)))
        return;
    memcpy(copy, data, size);
    fuzz_fix_crcs(copy, size);
    one(copy, size);
    free(copy);
}

#endif
