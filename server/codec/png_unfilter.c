/* png_unfilter.c — PNG's row filters undone in place: byte loops, and SSE2/AVX2 code that takes
 * the pixels of 3 and 4 bytes one per step, or two rows side by side. */
#include "codec/png_unfilter.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "errors.h"

/* The row functions write dst from the filtered bytes src; prev is the row above as written
 * (zeros above the first). */
static void pngunf_up(uint8_t *restrict dst, const uint8_t *restrict src, const uint8_t *restrict prev,
                      size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint8_t)(src[i] + prev[i]);
}

static inline int pngunf_paeth(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Sub, Avg and Paeth byte by byte with the distance bpp fixed per caller (1 and 2; any without
 * SSE2). */
static inline void pngunf_rows_small(uint8_t *restrict dst, const uint8_t *restrict src,
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
            dst[i] = (uint8_t)(src[i] + pngunf_paeth(dst[i - bpp], prev[i], prev[i - bpp]));
        break;
    }
}

/* Row code for 3- and 4-byte pixels: one row (filters 1, 3, 4), or two rows with serial filters
 * (3, 4; NULL where there is none). */
struct pngunf_simd {
    void (*row)(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f, int bpp);
    void (*pair)(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0, int f1, int bpp);
};

#if defined(__SSE2__)
/* bpp 3 and 4: one pixel per step in 16-bit lanes, as the dependency on the left pixel allows no
 * more within a row. A pixel moves as 4 bytes (3-byte pixels too: byte-wise moves would make each
 * load wait on partial stores); the store of a row's last pixel is exact. */
static inline __m128i pngunf_load(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)v), _mm_setzero_si128());
}

static inline void pngunf_store(uint8_t *p, __m128i v, const int bpp, int last)
{
    uint32_t x = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(v, v));

    if (bpp == 4 || !last) {
        memcpy(p, &x, 4);
    } else {
        memcpy(p, &x, 2);
        p[2] = (uint8_t)(x >> 16);
    }
}

#define PNGUNF_INLINE static inline __attribute__((always_inline))

/* Paeth with few steps after a is known: pa and the terms of pb, pc without a come first; then
 * b replaces a where pb < pa, and c replaces that where pc < min(pa, pb) (libpng's tie order). */
static inline __m128i pngunf_paeth_sse2(__m128i x, __m128i a, __m128i b, __m128i c)
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
__attribute__((target("avx2"))) static inline __m128i pngunf_paeth_avx2(__m128i x, __m128i a, __m128i b,
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
PNGUNF_INLINE __m128i pngunf_px(const int f, const int avx2, __m128i x, __m128i a, __m128i b, __m128i c)
{
    switch (f) {
    case 1:
        return _mm_add_epi8(x, a);
    case 3:
        return _mm_add_epi8(x, _mm_srli_epi16(_mm_add_epi16(a, b), 1));
    default:
        return avx2 ? pngunf_paeth_avx2(x, a, b, c) : pngunf_paeth_sse2(x, a, b, c);
    }
}

PNGUNF_INLINE void pngunf_row_px(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, const int f,
                                 const int bpp, const int avx2)
{
    __m128i a = _mm_setzero_si128(), c = a;

    for (size_t i = 0;; i += bpp) {
        __m128i b = pngunf_load(prev + i);

        a = pngunf_px(f, avx2, pngunf_load(src + i), a, b, c);
        pngunf_store(dst + i, a, bpp, i + bpp >= n);
        if (i + bpp >= n)
            return;
        c = b;
    }
}

/* Two rows with a serial filter each (f0 on the upper, f1 on the lower), the lower one pixel
 * behind: its above and above-left pixels are the upper row's last two results, still in
 * registers, and the two dependency chains overlap in the core. src is the upper row's filtered
 * bytes, the lower row's follow after its filter byte; dst the upper row, the lower follows. */
PNGUNF_INLINE void pngunf_pair_px(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n,
                                  const int f0, const int f1, const int bpp, const int avx2)
{
    const uint8_t *src1 = src + n + 1;
    uint8_t *dst1 = dst + n;
    __m128i z = _mm_setzero_si128(), b0 = pngunf_load(prev), c0 = b0, a1 = z, c1 = z;
    __m128i a0 = pngunf_px(f0, avx2, pngunf_load(src), z, b0, z);

    pngunf_store(dst, a0, bpp, n == (size_t)bpp);
    for (size_t i = bpp; i < n; i += bpp) {
        __m128i b = pngunf_load(prev + i), next0 = pngunf_px(f0, avx2, pngunf_load(src + i), a0, b, c0);

        pngunf_store(dst + i, next0, bpp, i + bpp >= n);
        a1 = pngunf_px(f1, avx2, pngunf_load(src1 + i - bpp), a1, a0, c1);
        pngunf_store(dst1 + i - bpp, a1, bpp, 0);
        c1 = a0, a0 = next0, c0 = b;
    }
    a1 = pngunf_px(f1, avx2, pngunf_load(src1 + n - bpp), a1, a0, c1);
    pngunf_store(dst1 + n - bpp, a1, bpp, 1);
}

/* The pair and row kinds, each with constant filters and pixel size. */
PNGUNF_INLINE void pngunf_pair_f(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0,
                                 int f1, const int bpp, const int avx2)
{
    if (f0 == 3 && f1 == 3)
        pngunf_pair_px(dst, src, prev, n, 3, 3, bpp, avx2);
    else if (f0 == 3)
        pngunf_pair_px(dst, src, prev, n, 3, 4, bpp, avx2);
    else if (f1 == 3)
        pngunf_pair_px(dst, src, prev, n, 4, 3, bpp, avx2);
    else
        pngunf_pair_px(dst, src, prev, n, 4, 4, bpp, avx2);
}

PNGUNF_INLINE void pngunf_pair_kinds(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0,
                                     int f1, int bpp, const int avx2)
{
    if (bpp == 3)
        pngunf_pair_f(dst, src, prev, n, f0, f1, 3, avx2);
    else
        pngunf_pair_f(dst, src, prev, n, f0, f1, 4, avx2);
}

PNGUNF_INLINE void pngunf_row_f(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f,
                                const int bpp, const int avx2)
{
    if (f == 1)
        pngunf_row_px(dst, src, prev, n, 1, bpp, avx2);
    else if (f == 3)
        pngunf_row_px(dst, src, prev, n, 3, bpp, avx2);
    else
        pngunf_row_px(dst, src, prev, n, 4, bpp, avx2);
}

PNGUNF_INLINE void pngunf_row_kinds(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f,
                                    int bpp, const int avx2)
{
    if (bpp == 3)
        pngunf_row_f(dst, src, prev, n, f, 3, avx2);
    else
        pngunf_row_f(dst, src, prev, n, f, 4, avx2);
}

static void pngunf_pair_sse2(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0, int f1,
                             int bpp)
{
    pngunf_pair_kinds(dst, src, prev, n, f0, f1, bpp, 0);
}

__attribute__((target("avx2"))) static void
pngunf_pair_avx2(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f0, int f1, int bpp)
{
    pngunf_pair_kinds(dst, src, prev, n, f0, f1, bpp, 1);
}

static void pngunf_row_sse2(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f, int bpp)
{
    pngunf_row_kinds(dst, src, prev, n, f, bpp, 0);
}

__attribute__((target("avx2"))) static void pngunf_row_avx2(uint8_t *dst, const uint8_t *src,
                                                            const uint8_t *prev, size_t n, int f, int bpp)
{
    pngunf_row_kinds(dst, src, prev, n, f, bpp, 1);
}

static int pngunf_baseline;

/* The unfilter code for this CPU, chosen once per image. */
static struct pngunf_simd pngunf_simd_pick(void)
{
    if (!pngunf_baseline && __builtin_cpu_supports("avx2"))
        return (struct pngunf_simd){pngunf_row_avx2, pngunf_pair_avx2};
    return (struct pngunf_simd){pngunf_row_sse2, pngunf_pair_sse2};
}
#else
static void pngunf_row_scalar(uint8_t *dst, const uint8_t *src, const uint8_t *prev, size_t n, int f, int bpp)
{
    if (bpp == 3)
        pngunf_rows_small(dst, src, prev, n, f, 3);
    else
        pngunf_rows_small(dst, src, prev, n, f, 4);
}

static struct pngunf_simd pngunf_simd_pick(void)
{
    return (struct pngunf_simd){pngunf_row_scalar, NULL};
}
#endif

/* Undoes filter f (0..4) on one row; the bpp switch lets each loop see a constant distance. */
static void pngunf_unfilter_row(const struct pngunf_simd *v, uint8_t *dst, const uint8_t *src,
                                const uint8_t *prev, size_t n, int f, int bpp)
{
    if (f == 0)
        memcpy(dst, src, n);
    else if (f == 2)
        pngunf_up(dst, src, prev, n);
    else if (bpp == 1)
        pngunf_rows_small(dst, src, prev, n, f, 1);
    else if (bpp == 2)
        pngunf_rows_small(dst, src, prev, n, f, 2);
    else
        v->row(dst, src, prev, n, f, bpp);
}

/* Whether rows with filters f0 then f1 go through the pair code: both serial (Avg, Paeth) and
 * multi-byte pixels, where one row alone leaves the core waiting on each pixel. */
static int pngunf_pairs(const struct pngunf_simd *v, int f0, int f1, int bpp)
{
    return v->pair && bpp >= 3 && (f0 == 3 || f0 == 4) && (f1 == 3 || f1 == 4);
}

/* Two rows at a time where the pair code takes them (pngunf_pairs), else one. */
int pngunf_rows(uint8_t *buf, size_t rb, uint32_t h, int bpp, char *err)
{
    struct pngunf_simd v = pngunf_simd_pick();
    size_t y = 0;
    const uint8_t *src = buf + PNGUNF_LEAD(rb);
    uint8_t *zeros = calloc(rb + PNGUNF_SLACK, 1);

    if (!zeros)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate a %zu-byte PNG row", rb);
    while (y < h) {
        const uint8_t *s = src + y * (rb + 1), *prev = y ? buf + (y - 1) * rb : zeros;
        int f = s[0], f1 = y + 1 < h ? s[rb + 1] : 0;

        if (f > 4)
            break;
        if (pngunf_pairs(&v, f, f1, bpp)) {
            v.pair(buf + y * rb, s + 1, prev, rb, f, f1, bpp);
            y += 2;
        } else {
            pngunf_unfilter_row(&v, buf + y * rb, s + 1, prev, rb, f, bpp);
            y++;
        }
    }
    free(zeros);
    return y < h ? PNGUNF_BAD_FILTER : 0;
}

void pngunf_set_baseline(int on)
{
#if defined(__SSE2__)
    pngunf_baseline = on;
#else
    (void)on;
#endif
}
