/* canny_sector.h — cv::Canny's suppression sector of a pixel as the tile kernel keeps it, for one
 * gradient (canny_sector) and for two packed in the 16-bit lanes of the aperture-3 fast path
 * (canny_sector_pair). Host and device: tests/unit/test_canny_sector.c holds the packed form to the
 * single one on every gradient of aperture 3. */
#ifndef EDGED_CANNY_SECTOR_H
#define EDGED_CANNY_SECTOR_H

#include <stdint.h>
#include <stdlib.h>

#ifdef __CUDACC__
#define CANNY_HD static __forceinline__ __host__ __device__
#else
#define CANNY_HD static inline
#endif

#define CANNY_TG22 13573u /* tan(22.5 deg) in Q15, cv::Canny's sector test */
#define CANNY_MAGW 66     /* row pitch of the tile kernel's magnitude plane: the tile and its ring */
#define CANNY_NTIE 0x80   /* the sector's second comparison is >= */

/* The suppression sector as the magnitude-plane offset of the two neighbours it compares (m >
 * mp[-off] and m > mp[off], or m >= mp[off] where CANNY_NTIE is set): left and right (1, with the
 * tie), above and below (CANNY_MAGW, with the tie), above-left and below-right (CANNY_MAGW + 1),
 * above-right and below-left (CANNY_MAGW - 1). No branch, so that a warp whose pixels lie in
 * different sectors runs one path in the suppression (|d| <= 24480, so the Q15 products fit 32
 * bits). */
CANNY_HD int canny_sector(int dx, int dy)
{
    unsigned ax = (unsigned)abs(dx), ay = (unsigned)abs(dy) << 15, tg22 = ax * CANNY_TG22;
    int off = (dx ^ dy) < 0 ? CANNY_MAGW - 1 : CANNY_MAGW + 1;

    off = ay > tg22 + (ax << 16) ? CANNY_NTIE | CANNY_MAGW : off;
    return ay < tg22 ? CANNY_NTIE | 1 : off;
}

/* The larger of each pair of signed 16-bit lanes (max.s16x2). */
CANNY_HD unsigned canny_vmaxs2(unsigned a, unsigned b)
{
#ifdef __CUDA_ARCH__
    return __vmaxs2(a, b);
#else
    int al = (int16_t)(a & 0xffffu), bl = (int16_t)(b & 0xffffu), ah = (int16_t)(a >> 16),
        bh = (int16_t)(b >> 16);
    return (unsigned)(uint16_t)(al > bl ? al : bl) | (unsigned)(uint16_t)(ah > bh ? ah : bh) << 16;
#endif
}

/* canny_sector of one lane from a = CANNY_SB16 + |dx|, b = CANNY_SB16 + |dy| and neg, whether dx
 * and dy have opposite signs: the bias folds into the products' constants (every product and
 * difference is the unbiased one modulo 2^32, and that one fits). */
#define CANNY_SB16 0x4000u
CANNY_HD unsigned canny_sector_abs(unsigned a, unsigned b, int neg)
{
    const unsigned tg22 = a * CANNY_TG22 - CANNY_SB16 * CANNY_TG22, ay = (b << 15) - (CANNY_SB16 << 15);
    const unsigned tv = a * (CANNY_TG22 + 65536u) - CANNY_SB16 * (CANNY_TG22 + 65536u);
    unsigned off = neg ? CANNY_MAGW - 1 : CANNY_MAGW + 1;

    off = ay > tv ? CANNY_NTIE | CANNY_MAGW : off;
    return ay < tg22 ? CANNY_NTIE | 1 : off;
}

/* The sectors of two pixels whose gradients sit in the 16-bit lanes of sx, sy plus 1024 (lanes
 * 0..2048: |d| <= 1024), low lane's code in bits 0..7, high lane's in 8..15. |d| + CANNY_SB16 is the
 * larger of d + CANNY_SB16 and CANNY_SB16 - d (lanes within 15360..17408: no carry between lanes,
 * positive as s16); d >= 0 is bit 15 of the lane d + 0x8000 (within 31744..33792). */
CANNY_HD unsigned canny_sector_pair(unsigned sx, unsigned sy)
{
    const unsigned k1 = 0x00010001u, lo = (CANNY_SB16 - 1024u) * k1, hi = (CANNY_SB16 + 1024u) * k1;
    const unsigned ax = canny_vmaxs2(sx + lo, hi - sx), ay = canny_vmaxs2(sy + lo, hi - sy);
    const unsigned neg = ((sx + (0x8000u - 1024u) * k1) ^ (sy + (0x8000u - 1024u) * k1)) & 0x80008000u;

    return canny_sector_abs(ax & 0xffffu, ay & 0xffffu, (neg & 0x8000u) != 0) |
           canny_sector_abs(ax >> 16, ay >> 16, (neg >> 31) != 0) << 8;
}

#endif
