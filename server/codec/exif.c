/* exif.c — reads the orientation tag of IFD0 in an EXIF (TIFF) block, bounds-checked. */
#include "codec/exif.h"

#include <string.h>

#define EXIF_TAG_ORIENTATION 0x0112
#define EXIF_TYPE_SHORT 3
#define EXIF_ENTRY_BYTES 12

static unsigned rd16(const uint8_t *p, int le)
{
    return le ? p[0] | p[1] << 8 : p[0] << 8 | p[1];
}

static uint32_t rd32(const uint8_t *p, int le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
              : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The value of a SHORT orientation entry sits in the first two bytes of its value field,
 * whatever the byte order. Anything else (another type, count != 1, a value outside 1..8) is
 * read as "no orientation". */
int exif_orientation(const uint8_t *d, size_t n)
{
    uint32_t ifd;
    unsigned count;
    int le;

    if (n >= 6 && memcmp(d, "Exif\0\0", 6) == 0) {
        d += 6;
        n -= 6;
    }
    if (n < 8 || !(memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0))
        return 1;
    le = d[0] == 'I';
    ifd = rd32(d + 4, le);
    if (ifd < 8 || ifd > n - 2)
        return 1;
    count = rd16(d + ifd, le);
    for (unsigned i = 0; i < count; i++) {
        size_t at = (size_t)ifd + 2 + (size_t)i * EXIF_ENTRY_BYTES;
        unsigned v;
        if (at + EXIF_ENTRY_BYTES > n)
            return 1;
        if (rd16(d + at, le) != EXIF_TAG_ORIENTATION)
            continue;
        if (rd16(d + at + 2, le) != EXIF_TYPE_SHORT || rd32(d + at + 4, le) != 1)
            return 1;
        v = rd16(d + at + 8, le);
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}
