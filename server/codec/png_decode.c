/* png_decode.c — the fast PNG decoder: chunk walk, libdeflate inflate, expansion (the unfiltering
 * is png_unfilter.c's). */
#include "codec/png_decode.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "errors.h"
#include "png_layout.h"
#include "codec/png_unfilter.h"

/* Signature + IHDR chunk: where the second chunk starts. */
#define PNGDEC_IHDR_END 33
#define PNGDEC_MAX_CHUNK 0x7fffffffu
/* The transparent huge page size of x86-64 (and of arm64 with 4 KiB pages). */
#define PNGDEC_HUGE ((size_t)2 << 20)

/* What the chunk walk learns; the pixels are decided by these fields alone. */
struct pngdec {
    const uint8_t *data;
    size_t len;
    uint32_t w, h;
    int depth, color;
    int bpp;         /* filter unit: bytes per pixel, at least 1 */
    int out_ch;      /* channels of the decoded image */
    size_t rowbytes; /* bytes of one row without its filter byte */
    int nplte, ntrns, has_key;
    uint8_t plte[256][3]; /* entries past nplte stay 0, as libpng's palette */
    uint8_t alpha[256];   /* tRNS of a palette image; 255 past ntrns */
    uint8_t key[3];       /* tRNS of a gray (key[0]) or RGB image, the low byte of each sample */
    size_t idat_at;       /* offset of the first IDAT chunk */
    size_t idat_n;        /* number of consecutive IDAT chunks */
    size_t idat_bytes;    /* their payload bytes together */
};

static uint32_t pngdec_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int pngdec_is(const uint8_t *type, const char *name)
{
    return memcmp(type, name, 4) == 0;
}

/* The chunk at pos if its frame is as libpng reads it without complaint: whole, length at most
 * 2^31-1, a name of four letters. Its data length goes to *n. The CRC is not looked at. */
static int pngdec_chunk_frame(const struct pngdec *d, size_t pos, uint32_t *n)
{
    const uint8_t *p = d->data + pos;

    if (d->len - pos < 12)
        return 0;
    *n = pngdec_be32(p);
    if (*n > PNGDEC_MAX_CHUNK || *n > d->len - pos - 12)
        return 0;
    for (int i = 4; i < 8; i++) {
        uint8_t c = (uint8_t)(p[i] & ~0x20);
        if (c < 'A' || c > 'Z')
            return 0;
    }
    return 1;
}

/* Whether the CRC of the chunk at p, n data bytes, is right. */
static int pngdec_crc_ok(const uint8_t *p, uint32_t n)
{
    return libdeflate_crc32(0, p + 4, (size_t)n + 4) == pngdec_be32(p + 8 + n);
}

/* The chunk at pos if libpng would read it without complaint: the frame above, CRC right. */
static int pngdec_chunk(const struct pngdec *d, size_t pos, uint32_t *n)
{
    return pngdec_chunk_frame(d, pos, n) && pngdec_crc_ok(d->data + pos, *n);
}

/* The kinds served and their output channels (before tRNS); 0 declines. */
static int pngdec_kind(struct pngdec *d)
{
    const uint8_t *ihdr = d->data + 16;
    size_t bits;

    d->w = pngdec_be32(ihdr);
    d->h = pngdec_be32(ihdr + 4);
    d->depth = ihdr[8];
    d->color = ihdr[9];
    if (ihdr[12] != 0)
        return 0;
    switch (d->color) {
    case PNG_COLOR_GRAY:
        d->bpp = d->out_ch = 1;
        break;
    case PNG_COLOR_GRAY_ALPHA:
        d->bpp = d->out_ch = 2;
        break;
    case PNG_COLOR_RGB:
        d->bpp = d->out_ch = 3;
        break;
    case PNG_COLOR_RGBA:
        d->bpp = d->out_ch = 4;
        break;
    case PNG_COLOR_PALETTE:
        d->bpp = 1;
        d->out_ch = 3;
        bits = (size_t)d->w * (size_t)d->depth;
        d->rowbytes = (bits + 7) / 8;
        return d->depth == 1 || d->depth == 2 || d->depth == 4 || d->depth == 8;
    default:
        return 0;
    }
    d->rowbytes = (size_t)d->w * (size_t)d->bpp;
    return d->depth == 8;
}

/* PLTE as libpng takes it without complaint: once, before tRNS, 1..256 entries; a palette image
 * keeps at most 2^depth of them. A suggested palette (RGB, RGBA) is checked and ignored. */
static int pngdec_plte(struct pngdec *d, const uint8_t *p, uint32_t n)
{
    int num = (int)(n / 3), max = d->color == PNG_COLOR_PALETTE ? 1 << d->depth : 256;

    if (!(d->color & 2) || d->nplte || d->ntrns || d->has_key || n == 0 || n % 3 || n > 768)
        return 0;
    if (num > max)
        num = max;
    d->nplte = num;
    if (d->color == PNG_COLOR_PALETTE)
        memcpy(d->plte, p, (size_t)num * 3);
    return 1;
}

/* tRNS as libpng takes it without complaint: once, the right length for the colour type, after
 * PLTE for a palette image and no longer than the palette. */
static int pngdec_trns(struct pngdec *d, const uint8_t *p, uint32_t n)
{
    if (d->ntrns || d->has_key)
        return 0;
    if (d->color == PNG_COLOR_GRAY && n == 2) {
        d->key[0] = p[1];
        d->has_key = 1;
        d->out_ch = 2;
        return 1;
    }
    if (d->color == PNG_COLOR_RGB && n == 6) {
        d->key[0] = p[1], d->key[1] = p[3], d->key[2] = p[5];
        d->has_key = 1;
        d->out_ch = 4;
        return 1;
    }
    if (d->color == PNG_COLOR_PALETTE && d->nplte && n >= 1 && n <= (uint32_t)d->nplte) {
        memcpy(d->alpha, p, n);
        d->ntrns = (int)n;
        d->out_ch = 4;
        return 1;
    }
    return 0;
}

/* Chunks before the first IDAT: PLTE, tRNS and ancillary chunks (skipped) only. Returns the
 * offset of the first IDAT, or 0 to decline. */
static size_t pngdec_walk_head(struct pngdec *d)
{
    size_t pos = PNGDEC_IHDR_END;
    uint32_t n;

    for (;;) {
        const uint8_t *type = d->data + pos + 4, *p = d->data + pos + 8;

        if (!pngdec_chunk(d, pos, &n))
            return 0;
        if (pngdec_is(type, "IDAT"))
            return d->color == PNG_COLOR_PALETTE && !d->nplte ? 0 : pos;
        if (pngdec_is(type, "PLTE")) {
            if (!pngdec_plte(d, p, n))
                return 0;
        } else if (pngdec_is(type, "tRNS")) {
            if (!pngdec_trns(d, p, n))
                return 0;
        } else if (!(type[0] & 0x20)) {
            return 0; /* IHDR again, IEND, an unknown critical chunk */
        }
        pos += 12 + (size_t)n;
    }
}

/* The run of IDAT chunks, then ancillary chunks up to an empty IEND (libpng reads those for their
 * CRC only). A critical chunk there (an unknown one, which the specification and libpng refuse,
 * or an out-of-place PLTE or IDAT) is declined: libpng decides it. The CRCs of the IDAT chunks
 * are checked later, as their data is read (pngdec_gather). Returns 0 or PNGDEC_DECLINED. */
static int pngdec_walk(struct pngdec *d)
{
    size_t pos = pngdec_walk_head(d);
    uint32_t n;

    if (!pos)
        return PNGDEC_DECLINED;
    d->idat_at = pos;
    while (pngdec_chunk_frame(d, pos, &n) && pngdec_is(d->data + pos + 4, "IDAT")) {
        d->idat_n++;
        d->idat_bytes += n;
        pos += 12 + (size_t)n;
    }
    for (;;) {
        const uint8_t *type = d->data + pos + 4;

        if (!pngdec_chunk(d, pos, &n))
            return PNGDEC_DECLINED;
        if (pngdec_is(type, "IEND"))
            return n == 0 ? 0 : PNGDEC_DECLINED;
        if (!(type[0] & 0x20))
            return PNGDEC_DECLINED;
        pos += 12 + (size_t)n;
    }
}

/* Bytes of IDAT data checked and copied at a time, so the copy reads what the CRC has just
 * brought into the first-level cache. */
#define PNGDEC_PIECE ((size_t)16 << 10)

/* The IDAT stream as one piece, every IDAT chunk's CRC checked on the way: with join NULL (one
 * chunk only) taken where it lies, else copied into join (idat_bytes long), one chunk or several.
 * NULL on a CRC fault. */
static const uint8_t *pngdec_gather(const struct pngdec *d, uint8_t *join)
{
    size_t pos = d->idat_at, at = 0;

    if (!join)
        return pngdec_crc_ok(d->data + pos, pngdec_be32(d->data + pos)) ? d->data + pos + 8 : NULL;
    for (size_t i = 0; i < d->idat_n; i++) {
        const uint8_t *p = d->data + pos;
        uint32_t n = pngdec_be32(p), crc = libdeflate_crc32(0, p + 4, 4);

        for (size_t k = 0; k < n; k += PNGDEC_PIECE) {
            size_t m = n - k < PNGDEC_PIECE ? n - k : PNGDEC_PIECE;

            crc = libdeflate_crc32(crc, p + 8 + k, m);
            memcpy(join + at + k, p + 8 + k, m);
        }
        if (crc != pngdec_be32(p + 8 + n))
            return NULL;
        at += n;
        pos += 12 + (size_t)n;
    }
    return join;
}

/* Inflates the IDAT stream (from pngdec_gather, join as there) into raw, which holds exactly the
 * image's (rowbytes + 1) * h bytes, so no stream can make it grow. Only a complete zlib stream
 * (libdeflate checks its Adler-32) giving exactly that many bytes is taken; anything else
 * declines (libpng accepts some of it, e.g. surplus data, with a warning). */
static int pngdec_inflate(const struct pngdec *d, uint8_t *raw, size_t raw_len, uint8_t *join, char *err)
{
    struct libdeflate_decompressor *z;
    const uint8_t *in = pngdec_gather(d, join);
    size_t got = 0;
    enum libdeflate_result r;

    if (!in)
        return PNGDEC_DECLINED;
    if (!(z = libdeflate_alloc_decompressor()))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the PNG inflater");
    r = libdeflate_zlib_decompress_ex(z, in, d->idat_bytes, raw, raw_len, NULL, &got);
    libdeflate_free_decompressor(z);
    return r == LIBDEFLATE_SUCCESS && got == raw_len ? 0 : PNGDEC_DECLINED;
}

/* Undoes the row filters of the inflated stream (png_unfilter.h's layout); a filter type over 4
 * declines. */
static int pngdec_unfilter(const struct pngdec *d, uint8_t *buf, char *err)
{
    int rc = pngunf_rows(buf, d->rowbytes, d->h, d->bpp, err);

    return rc == PNGUNF_BAD_FILTER ? PNGDEC_DECLINED : rc;
}

/* ---- expansion to the output channels ---- */

/* Palette indices of one row (1/2/4/8 bits, most significant first) to RGB or RGBA. */
static void pngdec_expand_palette_row(const struct pngdec *d, const uint8_t *src, uint8_t *dst,
                                      const uint8_t (*rgba)[4])
{
    int ppb = 8 / d->depth, mask = (1 << d->depth) - 1, ch = d->out_ch;

    for (uint32_t x = 0; x < d->w; x++) {
        int shift = d->depth * (ppb - 1 - (int)(x % (uint32_t)ppb));
        int idx = d->depth == 8 ? src[x] : (src[x / (uint32_t)ppb] >> shift) & mask;

        memcpy(dst + (size_t)x * ch, rgba[idx], (size_t)ch);
    }
}

/* Gray or RGB rows with a tRNS key: one more channel, 0 where the pixel equals the key. */
static void pngdec_expand_key_row(const struct pngdec *d, const uint8_t *src, uint8_t *dst)
{
    int ch = d->bpp;

    for (uint32_t x = 0; x < d->w; x++, src += ch, dst += ch + 1) {
        memcpy(dst, src, (size_t)ch);
        dst[ch] = memcmp(src, d->key, (size_t)ch) == 0 ? 0 : 255;
    }
}

/* The palette as RGBA entries: PLTE, then tRNS's alpha (255 past it). */
static void pngdec_rgba(const struct pngdec *d, uint8_t rgba[256][4])
{
    for (int i = 0; i < 256; i++) {
        memcpy(rgba[i], d->plte[i], 3);
        rgba[i][3] = i < d->ntrns ? d->alpha[i] : 255;
    }
}

/* Palette and tRNS-key images: from the packed rows in raw to a new image in out. */
static int pngdec_expand(const struct pngdec *d, const uint8_t *raw, struct img *out, char *err)
{
    uint8_t rgba[256][4];
    int rc = img_alloc(out, (int)d->w, (int)d->h, d->out_ch, err);

    if (rc)
        return rc;
    pngdec_rgba(d, rgba);
    for (size_t y = 0; y < d->h; y++) {
        const uint8_t *src = raw + y * d->rowbytes;
        uint8_t *dst = out->px + y * out->stride;

        if (d->color == PNG_COLOR_PALETTE)
            pngdec_expand_palette_row(d, src, dst, (const uint8_t(*)[4])rgba);
        else
            pngdec_expand_key_row(d, src, dst);
    }
    return 0;
}

/* Memory for the decode buffer, freed with free. A large one is aligned to a 2 MiB boundary and
 * advised for transparent huge pages, so that fresh memory faults in 2 MiB at a time: 4 KiB
 * faults would take a tenth of a large decode. Only advice: without huge pages it is plain. */
static uint8_t *pngdec_alloc(size_t n)
{
#if defined(MADV_HUGEPAGE)
    void *p;

    if (n >= 2 * PNGDEC_HUGE) {
        if (posix_memalign(&p, PNGDEC_HUGE, n))
            return NULL;
        (void)madvise(p, n & ~(PNGDEC_HUGE - 1), MADV_HUGEPAGE);
        return p;
    }
#endif
    return malloc(n);
}

/* One buffer holds the rows, the inflated stream behind them (the unfiltering layout) and, for
 * several IDAT chunks, their data joined at its end; the shrink at the end gives the last two
 * back. */
/* The chunk walk of a file pngdec_decode may serve, and the bytes of its inflated stream;
 * PNGDEC_DECLINED for any other. */
static int pngdec_read_head(struct pngdec *d, size_t *raw_len)
{
    memset(d->alpha, 255, sizeof(d->alpha));
    if (!pngdec_kind(d) || pngdec_walk(d))
        return PNGDEC_DECLINED;
    if (size_mul(d->rowbytes + 1, d->h, raw_len) || *raw_len > SIZE_MAX / 4)
        return PNGDEC_DECLINED;
    return 0;
}

int pngdec_decode(const uint8_t *data, size_t len, struct img *out, char *err)
{
    struct pngdec d = {.data = data, .len = len};
    uint8_t *raw = NULL, *small;
    size_t raw_len, buf_len, join_at;
    int rc;

    memset(out, 0, sizeof(*out));
    if (pngdec_read_head(&d, &raw_len))
        return PNGDEC_DECLINED;
    join_at = PNGUNF_LEAD(d.rowbytes) + raw_len + PNGUNF_SLACK;
    if (d.idat_n > 1 && d.idat_bytes > SIZE_MAX - join_at)
        return PNGDEC_DECLINED;
    buf_len = join_at + (d.idat_n > 1 ? d.idat_bytes : 0);
    if (!(raw = pngdec_alloc(buf_len)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a %ux%u PNG", buf_len, d.w, d.h);
    if ((rc = pngdec_inflate(&d, raw + PNGUNF_LEAD(d.rowbytes), raw_len, d.idat_n > 1 ? raw + join_at : NULL, err)) ||
        (rc = pngdec_unfilter(&d, raw, err)))
        goto out;
    if (d.color == PNG_COLOR_PALETTE || d.has_key) {
        rc = pngdec_expand(&d, raw, out, err);
        goto out;
    }
    /* the packed rows are the image: keep the buffer, without the stream behind them */
    small = realloc(raw, d.rowbytes * d.h);
    *out = (struct img){(int)d.w, (int)d.h, d.out_ch, d.rowbytes, small ? small : raw, 0};
    return 0;
out:
    free(raw);
    return rc;
}

/* The layout of d (read by pngdec_read_head) into lay. */
static void pngdec_lay(const struct pngdec *d, struct png_layout *lay)
{
    memset(lay, 0, sizeof(*lay));
    lay->w = d->w, lay->h = d->h, lay->depth = d->depth, lay->color = d->color;
    lay->bpp = d->bpp, lay->out_ch = d->out_ch, lay->rowbytes = d->rowbytes;
    lay->has_key = d->has_key;
    memcpy(lay->key, d->key, sizeof(lay->key));
    pngdec_rgba(d, lay->rgba);
}

int pngdec_layout(const uint8_t *data, size_t len, struct png_layout *lay, const uint8_t **z, size_t *z_len,
                  uint8_t **join, char *err)
{
    struct pngdec d = {.data = data, .len = len};
    size_t raw_len;

    *join = NULL;
    if (pngdec_read_head(&d, &raw_len))
        return PNGDEC_DECLINED;
    if (d.idat_n > 1 && !(*join = malloc(d.idat_bytes ? d.idat_bytes : 1)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes of PNG image data", d.idat_bytes);
    if (!(*z = pngdec_gather(&d, *join))) {
        free(*join);
        *join = NULL;
        return PNGDEC_DECLINED;
    }
    *z_len = d.idat_bytes;
    pngdec_lay(&d, lay);
    return 0;
}

int pngdec_layout_into(const uint8_t *data, size_t len, struct png_layout *lay, uint8_t *dst, size_t *z_len)
{
    struct pngdec d = {.data = data, .len = len};
    size_t raw_len;

    if (pngdec_read_head(&d, &raw_len) || d.idat_bytes > len || !pngdec_gather(&d, dst))
        return PNGDEC_DECLINED;
    *z_len = d.idat_bytes;
    pngdec_lay(&d, lay);
    return 0;
}

int pngdec_deflate_lenient(const char *err)
{
    static const char *const zlib_msgs[] = {"too many length or distance symbols",
                                            "invalid bit length repeat", "invalid literal/length code",
                                            "invalid distance code", "invalid code lengths set"};

    for (size_t i = 0; i < sizeof(zlib_msgs) / sizeof(zlib_msgs[0]); i++)
        if (strstr(err, zlib_msgs[i]))
            return 1;
    return 0;
}
