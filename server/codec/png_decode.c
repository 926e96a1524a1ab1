/* png_decode.c — the fast PNG decoder: chunk walk, libdeflate inflate, unfiltering, expansion. */
#include "codec/png_decode.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SSE2__)
#include <immintrin.h>
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
 * after the image data for their CRC only). The CRCs of the IDAT chunks are checked later, as
 * their data is read (pngdec_gather). Returns 0 or PNGDEC_DECLINED. */
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

        if (!pngdec_chunk(d, pos, &n) || pngdec_is(type, "IHDR"))
            return PNGDEC_DECLINED;
        if (pngdec_is(type, "IEND"))
            return n == 0 ? 0 : PNGDEC_DECLINED;
        pos += 12 + (size_t)n;
    }
}

/* Bytes of IDAT data checked and copied at a time, so the copy reads what the CRC has just
 * brought into the first-level cache. */
#define PNGDEC_PIECE ((size_t)16 << 10)

/* The IDAT stream as one piece, every IDAT chunk's CRC checked on the way: one chunk is taken
 * where it lies, several are joined into join (idat_bytes long). NULL on a CRC fault. */
static const uint8_t *pngdec_gather(const struct pngdec *d, uint8_t *join)
{
    size_t pos = d->idat_at, at = 0;

    if (d->idat_n == 1)
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

/* ---- unfiltering ----
 * The rows are unfiltered in place in one buffer: the inflated stream sits PNGDEC_LEAD(rowbytes)
 * bytes in, and row y, filter byte dropped, is written to y * rowbytes. Every row written then lies
 * before the stream bytes still to be read, also while two rows are decoded side by side; prev is
 * the row above as written (zeros above the first). */
#define PNGDEC_LEAD(rb) (2 * (rb))
/* Bytes past the stream and past the zero row that the 4-byte moves of 3-byte pixels may read. */
#define PNGDEC_SLACK 4

static void pngdec_up(uint8_t *restrict dst, const uint8_t *restrict src, const uint8_t *restrict prev,
                      size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint8_t)(src[i] + prev[i]);
}

static inline int pngdec_paeth(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Sub, Avg and Paeth byte by byte with the distance bpp fixed per caller (1 and 2; any without
 * SSE2). */
static inline void pngdec_rows_small(uint8_t *restrict dst, const uint8_t *restrict src,
                                     const uint8_t *restrict prev, size_t n, int f, const int bpp)
{
    size_t i, b = (size_t)bpp < n ? (size_t)bpp : n;

    switch (f) {
    case 1:
        memcpy(dst, src, b);
        for (i = b; i < n; i++)
            dst[i] = (uint8_t)(src[i] + dst[i - bpp]);
        break;
    case 3:
        for (i = 0; i < b; i++)
            dst[i] = (uint8_t)(src[i] + (prev[i] >> 1));
        for (; i < n; i++)
            dst[i] = (uint8_t)(src[i] + ((dst[i - bpp] + prev[i]) >> 1));
        break;
    case 4:
        for (i = 0; i < b; i++)
            dst[i] = (uint8_t)(src[i] + prev[i]);
        for (; i < n; i++)
            dst[i] = (uint8_t)(src[i] + pngdec_paeth(dst[i - bpp], prev[i], prev[i - bpp]));
        break;
    }
}

/* Row code for 3- and 4-byte pixels: one row (filters 1, 3, 4), or two rows with serial filters
 * (3, 4; NULL where there is none). */
struct pngdec_simd {
    void (*row)(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f, int bpp);
    void (*pair)(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0, int f1, int bpp);
};

#if defined(__SSE2__)
/* bpp 3 and 4: one pixel per step in 16-bit lanes, as the dependency on the left pixel allows no
 * more within a row. A pixel moves as 4 bytes (3-byte pixels too: byte-wise moves would make each
 * load wait on partial stores); the store of a row's last pixel is exact. */
static inline __m128i pngdec_load(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)v), _mm_setzero_si128());
}

static inline void pngdec_store(uint8_t *p, __m128i v, const int bpp, int last)
{
    uint32_t x = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(v, v));

    if (bpp == 4 || !last) {
        memcpy(p, &x, 4);
    } else {
        memcpy(p, &x, 2);
        p[2] = (uint8_t)(x >> 16);
    }
}

#define PNGDEC_INLINE static inline __attribute__((always_inline))

/* Paeth with few steps after a is known: pa and the terms of pb, pc without a come first; then
 * b replaces a where pb < pa, and c replaces that where pc < min(pa, pb) (libpng's tie order). */
static inline __m128i pngdec_paeth_sse2(__m128i x, __m128i a, __m128i b, __m128i c)
{
    __m128i d = _mm_sub_epi16(b, c), nd = _mm_sub_epi16(c, b);
    __m128i pa = _mm_max_epi16(d, nd), k = _mm_sub_epi16(d, c), nk = _mm_sub_epi16(c, d);
    __m128i pb = _mm_max_epi16(_mm_sub_epi16(a, c), _mm_sub_epi16(c, a));
    __m128i pc = _mm_max_epi16(_mm_add_epi16(a, k), _mm_sub_epi16(nk, a));
    __m128i use_b = _mm_cmpgt_epi16(pa, pb), use_c = _mm_cmpgt_epi16(_mm_min_epi16(pa, pb), pc);
    __m128i ab = _mm_or_si128(_mm_and_si128(use_b, b), _mm_andnot_si128(use_b, a));

    return _mm_add_epi8(x, _mm_or_si128(_mm_and_si128(use_c, c), _mm_andnot_si128(use_c, ab)));
}

/* The same with abs and blend instructions, in three-operand form: about a tenth fewer cycles. */
__attribute__((target("avx2"))) static inline __m128i pngdec_paeth_avx2(__m128i x, __m128i a, __m128i b,
                                                                        __m128i c)
{
    __m128i d = _mm_sub_epi16(b, c), k = _mm_sub_epi16(d, c), pa = _mm_abs_epi16(d);
    __m128i pb = _mm_abs_epi16(_mm_sub_epi16(a, c)), pc = _mm_abs_epi16(_mm_add_epi16(a, k));
    __m128i use_b = _mm_cmpgt_epi16(pa, pb), use_c = _mm_cmpgt_epi16(_mm_min_epi16(pa, pb), pc);

    return _mm_add_epi8(x, _mm_blendv_epi8(_mm_blendv_epi8(a, b, use_b), c, use_c));
}

/* One pixel of filter f (1, 3 or 4): x filtered, a left, b above, c above-left, all decoded; the
 * 16-bit lanes hold bytes, so a byte add wraps as the filters want. avx2: called from code built
 * for AVX2 (the dead branch of the other kind is dropped when inlined). */
PNGDEC_INLINE __m128i pngdec_px(const int f, const int avx2, __m128i x, __m128i a, __m128i b, __m128i c)
{
    switch (f) {
    case 1:
        return _mm_add_epi8(x, a);
    case 3:
        return _mm_add_epi8(x, _mm_srli_epi16(_mm_add_epi16(a, b), 1));
    default:
        return avx2 ? pngdec_paeth_avx2(x, a, b, c) : pngdec_paeth_sse2(x, a, b, c);
    }
}

PNGDEC_INLINE void pngdec_row_px(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, const int f,
                                 const int bpp, const int avx2)
{
    __m128i a = _mm_setzero_si128(), c = a;

    for (size_t i = 0;; i += bpp) {
        __m128i b = pngdec_load(prev + i);

        a = pngdec_px(f, avx2, pngdec_load(src + i), a, b, c);
        pngdec_store(dst + i, a, bpp, i + bpp >= n);
        if (i + bpp >= n)
            return;
        c = b;
    }
}

/* Two rows with a serial filter each (f0 on the upper, f1 on the lower), the lower one pixel
 * behind: its above and above-left pixels are the upper row's last two results, still in
 * registers, and the two dependency chains overlap in the core. src is the upper row's filtered
 * bytes, the lower row's follow after its filter byte; dst the upper row, the lower follows. */
PNGDEC_INLINE void pngdec_pair_px(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n,
                                  const int f0, const int f1, const int bpp, const int avx2)
{
    const uint8_t *src1 = src + n + 1;
    uint8_t *dst1 = dst + n;
    __m128i z = _mm_setzero_si128(), b0 = pngdec_load(prev), c0 = b0, a1 = z, c1 = z;
    __m128i a0 = pngdec_px(f0, avx2, pngdec_load(src), z, b0, z);

    pngdec_store(dst, a0, bpp, n == (size_t)bpp);
    for (size_t i = bpp; i < n; i += bpp) {
        __m128i b = pngdec_load(prev + i), next0 = pngdec_px(f0, avx2, pngdec_load(src + i), a0, b, c0);

        pngdec_store(dst + i, next0, bpp, i + bpp >= n);
        a1 = pngdec_px(f1, avx2, pngdec_load(src1 + i - bpp), a1, a0, c1);
        pngdec_store(dst1 + i - bpp, a1, bpp, 0);
        c1 = a0, a0 = next0, c0 = b;
    }
    a1 = pngdec_px(f1, avx2, pngdec_load(src1 + n - bpp), a1, a0, c1);
    pngdec_store(dst1 + n - bpp, a1, bpp, 1);
}

/* The pair and row kinds, each with constant filters and pixel size. */
PNGDEC_INLINE void pngdec_pair_f(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0,
                                 int f1, const int bpp, const int avx2)
{
    if (f0 == 3 && f1 == 3)
        pngdec_pair_px(dst, src, prev, n, 3, 3, bpp, avx2);
    else if (f0 == 3)
        pngdec_pair_px(dst, src, prev, n, 3, 4, bpp, avx2);
    else if (f1 == 3)
        pngdec_pair_px(dst, src, prev, n, 4, 3, bpp, avx2);
    else
        pngdec_pair_px(dst, src, prev, n, 4, 4, bpp, avx2);
}

PNGDEC_INLINE void pngdec_pair_kinds(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0,
                                     int f1, int bpp, const int avx2)
{
    if (bpp == 3)
        pngdec_pair_f(dst, src, prev, n, f0, f1, 3, avx2);
    else
        pngdec_pair_f(dst, src, prev, n, f0, f1, 4, avx2);
}

PNGDEC_INLINE void pngdec_row_f(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f,
                                const int bpp, const int avx2)
{
    if (f == 1)
        pngdec_row_px(dst, src, prev, n, 1, bpp, avx2);
    else if (f == 3)
        pngdec_row_px(dst, src, prev, n, 3, bpp, avx2);
    else
        pngdec_row_px(dst, src, prev, n, 4, bpp, avx2);
}

PNGDEC_INLINE void pngdec_row_kinds(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f,
                                    int bpp, const int avx2)
{
    if (bpp == 3)
        pngdec_row_f(dst, src, prev, n, f, 3, avx2);
    else
        pngdec_row_f(dst, src, prev, n, f, 4, avx2);
}

static void pngdec_pair_sse2(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0, int f1,
                             int bpp)
{
    pngdec_pair_kinds(dst, src, prev, n, f0, f1, bpp, 0);
}

__attribute__((target("avx2"))) static void
pngdec_pair_avx2(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0, int f1, int bpp)
{
    pngdec_pair_kinds(dst, src, prev, n, f0, f1, bpp, 1);
}

static void pngdec_row_sse2(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f, int bpp)
{
    pngdec_row_kinds(dst, src, prev, n, f, bpp, 0);
}

__attribute__((target("avx2"))) static void pngdec_row_avx2(uint8_t *dst, const uint8_t *src,
                                                            const uint8_t *prev, size_t n, int f, int bpp)
{
    pngdec_row_kinds(dst, src, prev, n, f, bpp, 1);
}

static int pngdec_baseline;

/* The unfilter code for this CPU, chosen once per image. */
static struct pngdec_simd pngdec_simd_pick(void)
{
    if (!pngdec_baseline && __builtin_cpu_supports("avx2"))
        return (struct pngdec_simd){pngdec_row_avx2, pngdec_pair_avx2};
    return (struct pngdec_simd){pngdec_row_sse2, pngdec_pair_sse2};
}
#else
static void pngdec_row_scalar(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f, int bpp)
{
    if (bpp == 3)
        pngdec_rows_small(dst, src, prev, n, f, 3);
    else
        pngdec_rows_small(dst, src, prev, n, f, 4);
}

static struct pngdec_simd pngdec_simd_pick(void)
{
    return (struct pngdec_simd){pngdec_row_scalar, NULL};
}
#endif

/* Undoes filter f (0..4) on one row; the bpp switch lets each loop see a constant distance. */
static void pngdec_unfilter_row(const struct pngdec_simd *v, uint8_t *dst, const uint8_t *src,
                                const uint8_t *prev, size_t n, int f, int bpp)
{
    if (f == 0)
        memcpy(dst, src, n);
    else if (f == 2)
        pngdec_up(dst, src, prev, n);
    else if (bpp == 1)
        pngdec_rows_small(dst, src, prev, n, f, 1);
    else if (bpp == 2)
        pngdec_rows_small(dst, src, prev, n, f, 2);
    else
        v->row(dst, src, prev, n, f, bpp);
}

/* Whether rows with filters f0 then f1 go through the pair code: both serial (Avg, Paeth) and
 * multi-byte pixels, where one row alone leaves the core waiting on each pixel. */
static int pngdec_pairs(const struct pngdec_simd *v, int f0, int f1, int bpp)
{
    return v->pair && bpp >= 3 && (f0 == 3 || f0 == 4) && (f1 == 3 || f1 == 4);
}

/* Unfilters the stream at buf + PNGDEC_LEAD(rowbytes) into packed rows at buf (the layout above).
 * A filter type over 4 declines (libpng: "bad adaptive filter value"). */
static int pngdec_unfilter(const struct pngdec *d, uint8_t *buf, char *err)
{
    struct pngdec_simd v = pngdec_simd_pick();
    size_t rb = d->rowbytes, y = 0;
    const uint8_t *src = buf + PNGDEC_LEAD(rb);
    uint8_t *zeros = calloc(rb + PNGDEC_SLACK, 1);

    if (!zeros)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate a %zu-byte PNG row", rb);
    while (y < d->h) {
        const uint8_t *s = src + y * (rb + 1), *prev = y ? buf + (y - 1) * rb : zeros;
        int f = s[0], f1 = y + 1 < d->h ? s[rb + 1] : 0;

        if (f > 4)
            break;
        if (pngdec_pairs(&v, f, f1, d->bpp)) {
            v.pair(buf + y * rb, s + 1, prev, rb, f, f1, d->bpp);
            y += 2;
        } else {
            pngdec_unfilter_row(&v, buf + y * rb, s + 1, prev, rb, f, d->bpp);
            y++;
        }
    }
    free(zeros);
    return y < d->h ? PNGDEC_DECLINED : 0;
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
int pngdec_decode(const uint8_t *data, size_t len, struct img *out, char *err)
{
    struct pngdec d = {.data = data, .len = len};
    uint8_t *raw = NULL, *small;
    size_t raw_len, buf_len, join_at;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(d.alpha, 255, sizeof(d.alpha));
    if (!pngdec_kind(&d) || pngdec_walk(&d))
        return PNGDEC_DECLINED;
    if (size_mul(d.rowbytes + 1, d.h, &raw_len) || raw_len > SIZE_MAX / 4)
        return PNGDEC_DECLINED;
    join_at = PNGDEC_LEAD(d.rowbytes) + raw_len + PNGDEC_SLACK;
    if (d.idat_n > 1 && d.idat_bytes > SIZE_MAX - join_at)
        return PNGDEC_DECLINED;
    buf_len = join_at + (d.idat_n > 1 ? d.idat_bytes : 0);
    if (!(raw = pngdec_alloc(buf_len)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a %ux%u PNG", buf_len, d.w, d.h);
    if ((rc = pngdec_inflate(&d, raw + PNGDEC_LEAD(d.rowbytes), raw_len, raw + join_at, err)) ||
        (rc = pngdec_unfilter(&d, raw, err)))
        goto out;
    if (d.color == PNGDEC_COLOR_PALETTE || d.has_key) {
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

void pngdec_set_baseline(int on)
{
#if defined(__SSE2__)
    pngdec_baseline = on;
#else
    (void)on;
#endif
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
