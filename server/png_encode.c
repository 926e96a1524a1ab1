/* png_encode.c — the fast PNG encoder: row filters into one buffer, libdeflate, one IDAT. */
#include "png_encode.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

#define PNGENC_SIG_IHDR 33 /* signature 8 + IHDR chunk 25 */
#define PNGENC_IDAT_HEAD 8
#define PNGENC_TAIL 16 /* IDAT CRC 4 + IEND chunk 12 */
#define PNGENC_MAX_CHUNK 0x7fffffffu
/* Level 4 and up: choose each row's filter by the smallest sum of absolute residuals (libpng's
 * heuristic); below, the Up filter: it was the fastest and about the smallest at zlib levels 1-3
 * (the table above pngio_enc_configure in png_io.c). */
#define PNGENC_ADAPTIVE_LEVEL 4

enum { PNGENC_NONE, PNGENC_SUB, PNGENC_UP, PNGENC_AVG, PNGENC_PAETH, PNGENC_NFILTERS };

static const uint8_t pngenc_sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};

static void pngenc_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Writes a chunk's length and type at p (its n data bytes follow) and its CRC after them. */
static void pngenc_chunk(uint8_t *p, const char *type, size_t n)
{
    pngenc_put32(p, (uint32_t)n);
    memcpy(p + 4, type, 4);
    pngenc_put32(p + 8 + n, (uint32_t)libdeflate_crc32(0, p + 4, n + 4));
}

void pngenc_pack_row1(const uint8_t *src, int w, uint8_t *dst)
{
    memset(dst, 0, ((size_t)w + 7) / 8);
    for (int x = 0; x < w; x++)
        if (src[x] >= 128)
            dst[x >> 3] |= (uint8_t)(0x80u >> (x & 7));
}

static inline int pngenc_paeth(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Filters row cur (prev: the row above, zeros for the first) with filter f into out. */
static void pngenc_filter(int f, const uint8_t *restrict cur, const uint8_t *restrict prev, size_t n, int bpp,
                          uint8_t *restrict out)
{
    size_t i, b = (size_t)bpp < n ? (size_t)bpp : n;

    switch (f) {
    case PNGENC_NONE:
        memcpy(out, cur, n);
        break;
    case PNGENC_SUB:
        memcpy(out, cur, b);
        for (i = b; i < n; i++)
            out[i] = (uint8_t)(cur[i] - cur[i - bpp]);
        break;
    case PNGENC_UP:
        for (i = 0; i < n; i++)
            out[i] = (uint8_t)(cur[i] - prev[i]);
        break;
    case PNGENC_AVG:
        for (i = 0; i < b; i++)
            out[i] = (uint8_t)(cur[i] - (prev[i] >> 1));
        for (; i < n; i++)
            out[i] = (uint8_t)(cur[i] - ((cur[i - bpp] + prev[i]) >> 1));
        break;
    default:
        for (i = 0; i < b; i++)
            out[i] = (uint8_t)(cur[i] - prev[i]);
        for (; i < n; i++)
            out[i] = (uint8_t)(cur[i] - pngenc_paeth(cur[i - bpp], prev[i], prev[i - bpp]));
        break;
    }
}

/* Sum of the residuals as signed bytes, in absolute value: smaller usually deflates smaller. */
static size_t pngenc_cost(const uint8_t *p, size_t n)
{
    size_t s = 0;

    for (size_t i = 0; i < n; i++)
        s += p[i] < 128 ? p[i] : 256u - p[i];
    return s;
}

/* Writes filter byte + filtered row at dst; scratch holds one row per filter for the choice. */
static void pngenc_row(const uint8_t *cur, const uint8_t *prev, size_t n, int bpp, int adaptive, uint8_t *scratch,
                       uint8_t *dst)
{
    size_t best_cost = (size_t)-1;
    int best = PNGENC_NONE;

    if (!adaptive) {
        best = prev ? PNGENC_UP : PNGENC_NONE;
        dst[0] = (uint8_t)best;
        pngenc_filter(best, cur, prev, n, bpp, dst + 1);
        return;
    }
    for (int f = PNGENC_NONE; f < PNGENC_NFILTERS; f++) {
        size_t cost;

        pngenc_filter(f, cur, prev ? prev : scratch + PNGENC_NFILTERS * n, n, bpp, scratch + (size_t)f * n);
        cost = pngenc_cost(scratch + (size_t)f * n, n);
        if (cost < best_cost)
            best_cost = cost, best = f;
    }
    dst[0] = (uint8_t)best;
    memcpy(dst + 1, scratch + (size_t)best * n, n);
}

/* All rows, filtered, into raw ((rowbytes + 1) * h bytes). 1-bit rows are packed first (or taken
 * as they are from a packed map) and, like level 0, left unfiltered. */
static int pngenc_filter_all(const struct img *im, int level, int bit_depth, size_t rb, uint8_t *raw, char *err)
{
    int adaptive = bit_depth == 8 && level >= PNGENC_ADAPTIVE_LEVEL;
    int filtered = bit_depth == 8 && level > 0;
    uint8_t *scratch = NULL;

    /* PNGENC_NFILTERS candidate rows plus a zero row above the first */
    if (adaptive && !(scratch = calloc(PNGENC_NFILTERS + 1, rb)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate PNG filter rows");
    for (int y = 0; y < im->h; y++) {
        const uint8_t *row = im->px + (size_t)y * im->stride;
        uint8_t *dst = raw + (size_t)y * (rb + 1);

        if (!filtered) {
            dst[0] = PNGENC_NONE;
            if (bit_depth == 1 && !im->packed)
                pngenc_pack_row1(row, im->w, dst + 1);
            else
                memcpy(dst + 1, row, rb);
            continue;
        }
        pngenc_row(row, y ? row - im->stride : NULL, rb, im->ch, adaptive, scratch, dst);
    }
    free(scratch);
    return 0;
}

/* Signature, IHDR, IDAT around the zlen bytes already at png + 41, IEND. */
static size_t pngenc_frame(const struct img *im, int bit_depth, uint8_t *png, size_t zlen)
{
    static const uint8_t colors[5] = {0, 0, 4, 2, 6};
    uint8_t *ihdr = png + 8, *idat = png + PNGENC_SIG_IHDR;

    memcpy(png, pngenc_sig, 8);
    pngenc_put32(ihdr + 8, (uint32_t)im->w);
    pngenc_put32(ihdr + 12, (uint32_t)im->h);
    ihdr[16] = (uint8_t)bit_depth;
    ihdr[17] = colors[im->ch];
    ihdr[18] = ihdr[19] = ihdr[20] = 0;
    pngenc_chunk(ihdr, "IHDR", 13);
    pngenc_chunk(idat, "IDAT", zlen);
    pngenc_chunk(idat + 12 + zlen, "IEND", 0);
    return PNGENC_SIG_IHDR + 12 + zlen + 12;
}

int pngenc_encode(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len, char *err)
{
    struct libdeflate_compressor *z = NULL;
    size_t rb = bit_depth == 1 ? ((size_t)im->w + 7) / 8 : (size_t)im->w * (size_t)im->ch, raw_len, bound, zlen;
    uint8_t *raw = NULL, *png = NULL, *small;
    int rc;

    if (size_mul(rb + 1, (size_t)im->h, &raw_len))
        return edged_fail(err, EDGED_E_PARAM, "PNG encode: %dx%d image too large", im->w, im->h);
    /* edged's levels 0..9 are libdeflate's: 0 stores, 1 is the fastest, 9 the smallest of the
     * greedy and lazy matchers (10-12, optimal parsing, cost many times more) */
    if (!(z = libdeflate_alloc_compressor(level)) || !(raw = malloc(raw_len))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the PNG encoder");
        goto out;
    }
    if ((rc = pngenc_filter_all(im, level, bit_depth, rb, raw, err)))
        goto out;
    bound = libdeflate_zlib_compress_bound(z, raw_len);
    if (!(png = malloc(PNGENC_SIG_IHDR + PNGENC_IDAT_HEAD + bound + PNGENC_TAIL))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a PNG", bound);
        goto out;
    }
    zlen = libdeflate_zlib_compress(z, raw, raw_len, png + PNGENC_SIG_IHDR + PNGENC_IDAT_HEAD, bound);
    if (zlen == 0 || zlen > PNGENC_MAX_CHUNK) {
        rc = zlen ? PNGENC_DECLINED : edged_fail(err, EDGED_E_INTERNAL, "PNG encode: deflate overflowed its bound");
        goto out;
    }
    *out_len = pngenc_frame(im, bit_depth, png, zlen);
    small = realloc(png, *out_len);
    *out = small ? small : png;
    png = NULL;
    rc = 0;
out:
    free(png);
    free(raw);
    libdeflate_free_compressor(z);
    return rc;
}
