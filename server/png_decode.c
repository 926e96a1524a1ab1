/* png_decode.c — the fast PNG decoder: chunk walk, libdeflate inflate, unfiltering, expansion. */
#include "png_decode.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "errors.h"

/* Signature + IHDR chunk: where the second chunk starts. */
#define PNGDEC_IHDR_END 33
#define PNGDEC_MAX_CHUNK 0x7fffffffu
#define PNGDEC_COLOR_GRAY 0
#define PNGDEC_COLOR_RGB 2
#define PNGDEC_COLOR_PALETTE 3
#define PNGDEC_COLOR_GRAY_ALPHA 4
#define PNGDEC_COLOR_RGBA 6

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

/* The chunk at pos if libpng would read it without complaint: whole, length at most 2^31-1,
 * a name of four letters, CRC right. Its data length goes to *n. */
static int pngdec_chunk(const struct pngdec *d, size_t pos, uint32_t *n)
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
    return libdeflate_crc32(0, p + 4, (size_t)*n + 4) == pngdec_be32(p + 8 + *n);
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
    case PNGDEC_COLOR_GRAY:
        d->bpp = d->out_ch = 1;
        break;
    case PNGDEC_COLOR_GRAY_ALPHA:
        d->bpp = d->out_ch = 2;
        break;
    case PNGDEC_COLOR_RGB:
        d->bpp = d->out_ch = 3;
        break;
    case PNGDEC_COLOR_RGBA:
        d->bpp = d->out_ch = 4;
        break;
    case PNGDEC_COLOR_PALETTE:
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
    int num = (int)(n / 3), max = d->color == PNGDEC_COLOR_PALETTE ? 1 << d->depth : 256;

    if (!(d->color & 2) || d->nplte || d->ntrns || d->has_key || n == 0 || n % 3 || n > 768)
        return 0;
    if (num > max)
        num = max;
    d->nplte = num;
    if (d->color == PNGDEC_COLOR_PALETTE)
        memcpy(d->plte, p, (size_t)num * 3);
    return 1;
}

/* tRNS as libpng takes it without complaint: once, the right length for the colour type, after
 * PLTE for a palette image and no longer than the palette. */
static int pngdec_trns(struct pngdec *d, const uint8_t *p, uint32_t n)
{
    if (d->ntrns || d->has_key)
        return 0;
    if (d->color == PNGDEC_COLOR_GRAY && n == 2) {
        d->key[0] = p[1];
        d->has_key = 1;
        d->out_ch = 2;
        return 1;
    }
    if (d->color == PNGDEC_COLOR_RGB && n == 6) {
        d->key[0] = p[1], d->key[1] = p[3], d->key[2] = p[5];
        d->has_key = 1;
        d->out_ch = 4;
        return 1;
    }
    if (d->color == PNGDEC_COLOR_PALETTE && d->nplte && n >= 1 && n <= (uint32_t)d->nplte) {
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
            return d->color == PNGDEC_COLOR_PALETTE && !d->nplte ? 0 : pos;
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

/* The run of IDAT chunks, then anything but IHDR up to an empty IEND (libpng reads the chunks
 * after the image data for their CRC only). Returns 0 or PNGDEC_DECLINED. */
static int pngdec_walk(struct pngdec *d)
{
    size_t pos = pngdec_walk_head(d);
    uint32_t n;

    if (!pos)
        return PNGDEC_DECLINED;
    d->idat_at = pos;
    while (pngdec_chunk(d, pos, &n) && pngdec_is(d->data + pos + 4, "IDAT")) {
        d->idat_n++;
        d->idat_bytes += n;
        pos += 12 + (size_t)n;
    }
    for (;;) {
        const uint8_t *type = d->data + pos + 4;

        if (!pngdec_chunk(d, pos, &n) || pngdec_is(type, "IHDR"))
            return PNGDEC_DECLINED;
        if (pngdec_is(type, "IEND"))
            return n == 0 ? 0 : PNGDEC_DECLINED;
        pos += 12 + (size_t)n;
    }
}

/* Inflates the IDAT stream into raw, which holds exactly the image's (rowbytes + 1) * h bytes, so
 * no stream can make it grow. One IDAT is inflated where it lies; several are joined first. Only
 * a complete zlib stream (Adler-32 checked) giving exactly that many bytes is taken; anything
 * else declines (libpng accepts some of it, e.g. surplus data, with a warning). */
static int pngdec_inflate(const struct pngdec *d, uint8_t *raw, size_t raw_len, char *err)
{
    struct libdeflate_decompressor *z = libdeflate_alloc_decompressor();
    const uint8_t *in = d->data + d->idat_at + 8;
    uint8_t *joined = NULL;
    size_t got = 0;
    enum libdeflate_result r;

    if (!z)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the PNG inflater");
    if (d->idat_n > 1) {
        size_t pos = d->idat_at, at = 0;

        if (!(joined = malloc(d->idat_bytes ? d->idat_bytes : 1))) {
            libdeflate_free_decompressor(z);
            return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes of PNG image data", d->idat_bytes);
        }
        for (size_t i = 0; i < d->idat_n; i++) {
            size_t n = pngdec_be32(d->data + pos);

            memcpy(joined + at, d->data + pos + 8, n);
            at += n;
            pos += 12 + n;
        }
        in = joined;
    }
    r = libdeflate_zlib_decompress_ex(z, in, d->idat_bytes, raw, raw_len, NULL, &got);
    free(joined);
    libdeflate_free_decompressor(z);
    return r == LIBDEFLATE_SUCCESS && got == raw_len ? 0 : PNGDEC_DECLINED;
}

/* ---- unfiltering: cur is the row in place, prev the row above (zeros above the first) ---- */

static void pngdec_up(uint8_t *restrict cur, const uint8_t *restrict prev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cur[i] = (uint8_t)(cur[i] + prev[i]);
}

static inline int pngdec_paeth(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* bpp 1 and 2 (gray, gray+alpha, palette): byte loops with the distance fixed per caller. */
static inline void pngdec_rows_small(uint8_t *restrict cur, const uint8_t *restrict prev, size_t n, int f,
                                     const int bpp)
{
    size_t i;

    switch (f) {
    case 1:
        for (i = bpp; i < n; i++)
            cur[i] = (uint8_t)(cur[i] + cur[i - bpp]);
        break;
    case 3:
        for (i = 0; i < (size_t)bpp && i < n; i++)
            cur[i] = (uint8_t)(cur[i] + (prev[i] >> 1));
        for (; i < n; i++)
            cur[i] = (uint8_t)(cur[i] + ((cur[i - bpp] + prev[i]) >> 1));
        break;
    case 4:
        for (i = 0; i < (size_t)bpp && i < n; i++)
            cur[i] = (uint8_t)(cur[i] + prev[i]);
        for (; i < n; i++)
            cur[i] = (uint8_t)(cur[i] + pngdec_paeth(cur[i - bpp], prev[i], prev[i - bpp]));
        break;
    }
}

#if defined(__SSE2__)
/* bpp 3 and 4: one pixel per step in a vector register, as the serial dependency on the left
 * pixel allows no more; Paeth in 16-bit lanes. n is a multiple of bpp. */
/* 3-byte pixels are put together in a register: a memcpy through the stack would make every
 * load wait on partial stores (a store-forwarding stall per pixel). */
static inline __m128i pngdec_load(const uint8_t *p, const int bpp)
{
    uint32_t v;

    if (bpp == 4)
        memcpy(&v, p, 4);
    else
        v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    return _mm_cvtsi32_si128((int)v);
}

static inline void pngdec_store(uint8_t *p, __m128i v, const int bpp)
{
    uint32_t x = (uint32_t)_mm_cvtsi128_si32(v);

    if (bpp == 4) {
        memcpy(p, &x, 4);
    } else {
        p[0] = (uint8_t)x;
        p[1] = (uint8_t)(x >> 8);
        p[2] = (uint8_t)(x >> 16);
    }
}

static inline __m128i pngdec_abs16(__m128i x)
{
    return _mm_max_epi16(x, _mm_sub_epi16(_mm_setzero_si128(), x));
}

static inline void pngdec_paeth_px(uint8_t *cur, const uint8_t *prev, size_t n, const int bpp)
{
    const __m128i z = _mm_setzero_si128();
    __m128i a = z, c = z;

    for (size_t i = 0; i < n; i += bpp) {
        __m128i b = _mm_unpacklo_epi8(pngdec_load(prev + i, bpp), z);
        __m128i x = _mm_unpacklo_epi8(pngdec_load(cur + i, bpp), z);
        __m128i pa = _mm_sub_epi16(b, c), pb = _mm_sub_epi16(a, c);
        __m128i pc = pngdec_abs16(_mm_add_epi16(pa, pb));
        __m128i m, use_a, use_b, pred;

        pa = pngdec_abs16(pa);
        pb = pngdec_abs16(pb);
        m = _mm_min_epi16(_mm_min_epi16(pa, pb), pc);
        use_a = _mm_cmpeq_epi16(pa, m);
        use_b = _mm_andnot_si128(use_a, _mm_cmpeq_epi16(pb, m));
        pred = _mm_or_si128(_mm_and_si128(use_a, a), _mm_and_si128(use_b, b));
        pred = _mm_or_si128(pred, _mm_andnot_si128(_mm_or_si128(use_a, use_b), c));
        a = _mm_and_si128(_mm_add_epi16(x, pred), _mm_set1_epi16(0xff));
        pngdec_store(cur + i, _mm_packus_epi16(a, z), bpp);
        c = b;
    }
}

static inline void pngdec_rows_px(uint8_t *cur, const uint8_t *prev, size_t n, int f, const int bpp)
{
    __m128i a = _mm_setzero_si128();

    switch (f) {
    case 1:
        for (size_t i = 0; i < n; i += bpp) {
            a = _mm_add_epi8(pngdec_load(cur + i, bpp), a);
            pngdec_store(cur + i, a, bpp);
        }
        break;
    case 3:
        for (size_t i = 0; i < n; i += bpp) {
            __m128i b = pngdec_load(prev + i, bpp);
            __m128i avg = _mm_sub_epi8(_mm_avg_epu8(a, b), _mm_and_si128(_mm_xor_si128(a, b), _mm_set1_epi8(1)));

            a = _mm_add_epi8(pngdec_load(cur + i, bpp), avg);
            pngdec_store(cur + i, a, bpp);
        }
        break;
    case 4:
        pngdec_paeth_px(cur, prev, n, bpp);
        break;
    }
}
#else
static inline void pngdec_rows_px(uint8_t *cur, const uint8_t *prev, size_t n, int f, const int bpp)
{
    pngdec_rows_small(cur, prev, n, f, bpp);
}
#endif

/* Undoes filter f (1..4) on one row; the bpp switch lets each loop see a constant distance. */
static void pngdec_unfilter_row(uint8_t *cur, const uint8_t *prev, size_t n, int f, int bpp)
{
    if (f == 0)
        return;
    if (f == 2) {
        pngdec_up(cur, prev, n);
        return;
    }
    switch (bpp) {
    case 1:
        pngdec_rows_small(cur, prev, n, f, 1);
        break;
    case 2:
        pngdec_rows_small(cur, prev, n, f, 2);
        break;
    case 3:
        pngdec_rows_px(cur, prev, n, f, 3);
        break;
    default:
        pngdec_rows_px(cur, prev, n, f, 4);
        break;
    }
}

/* Unfilters raw in place and packs the rows together: row y moves from y * (rowbytes + 1) + 1 to
 * y * rowbytes (always leftwards) before it is unfiltered against the packed row above. A filter
 * type over 4 declines (libpng: "bad adaptive filter value"). */
static int pngdec_unfilter(const struct pngdec *d, uint8_t *raw, char *err)
{
    size_t rb = d->rowbytes;
    uint8_t *zeros = calloc(rb, 1);

    if (!zeros)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate a %zu-byte PNG row", rb);
    for (size_t y = 0; y < d->h; y++) {
        uint8_t *row = raw + y * rb;
        int f = raw[y * (rb + 1)];

        if (f > 4) {
            free(zeros);
            return PNGDEC_DECLINED;
        }
        memmove(row, raw + y * (rb + 1) + 1, rb);
        pngdec_unfilter_row(row, y ? row - rb : zeros, rb, f, d->bpp);
    }
    free(zeros);
    return 0;
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

/* Palette and tRNS-key images: from the packed rows in raw to a new image in out. */
static int pngdec_expand(const struct pngdec *d, const uint8_t *raw, struct img *out, char *err)
{
    uint8_t rgba[256][4];
    int rc = img_alloc(out, (int)d->w, (int)d->h, d->out_ch, err);

    if (rc)
        return rc;
    for (int i = 0; i < 256; i++) {
        memcpy(rgba[i], d->plte[i], 3);
        rgba[i][3] = i < d->ntrns ? d->alpha[i] : 255;
    }
    for (size_t y = 0; y < d->h; y++) {
        const uint8_t *src = raw + y * d->rowbytes;
        uint8_t *dst = out->px + y * out->stride;

        if (d->color == PNGDEC_COLOR_PALETTE)
            pngdec_expand_palette_row(d, src, dst, (const uint8_t(*)[4])rgba);
        else
            pngdec_expand_key_row(d, src, dst);
    }
    return 0;
}

int pngdec_decode(const uint8_t *data, size_t len, struct img *out, char *err)
{
    struct pngdec d = {.data = data, .len = len};
    uint8_t *raw = NULL, *small;
    size_t raw_len;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(d.alpha, 255, sizeof(d.alpha));
    if (!pngdec_kind(&d) || pngdec_walk(&d))
        return PNGDEC_DECLINED;
    if (size_mul(d.rowbytes + 1, d.h, &raw_len))
        return PNGDEC_DECLINED;
    if (!(raw = malloc(raw_len)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a %ux%u PNG", raw_len, d.w, d.h);
    if ((rc = pngdec_inflate(&d, raw, raw_len, err)) || (rc = pngdec_unfilter(&d, raw, err)))
        goto out;
    if (d.color == PNGDEC_COLOR_PALETTE || d.has_key) {
        rc = pngdec_expand(&d, raw, out, err);
        goto out;
    }
    /* the packed rows are the image: keep the buffer, without its h spare bytes */
    small = realloc(raw, d.rowbytes * d.h);
    *out = (struct img){(int)d.w, (int)d.h, d.out_ch, d.rowbytes, small ? small : raw, 0};
    return 0;
out:
    free(raw);
    return rc;
}

int pngdec_deflate_lenient(const char *err)
{
    static const char *const zlib_msgs[] = {"too many length or distance symbols", "invalid bit length repeat",
                                            "invalid literal/length code", "invalid distance code",
                                            "invalid code lengths set"};

    for (size_t i = 0; i < sizeof(zlib_msgs) / sizeof(zlib_msgs[0]); i++)
        if (strstr(err, zlib_msgs[i]))
            return 1;
    return 0;
}
