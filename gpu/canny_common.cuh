/* canny_common.cuh — what the Canny kernels share (canny_tile.cu, canny_seams.cu; canny.cu sizes
 * the scratch by it): the tile and the layout of its slots in d_parent and d_flag, the border
 * labels, the tile's rows as 64-bit masks and their flood (the hysteresis inside a tile), and the
 * writer of a tile's map. .cu files only. */
#ifndef EDGED_CANNY_COMMON_CUH
#define EDGED_CANNY_COMMON_CUH

#include "gconv_internal.h"

#define CANNY_T 64                         /* tile side */
#define CANNY_PERIM (4 * CANNY_T - 4)      /* border pixels of a tile: the global nodes per tile */
#define CANNY_SLOTS 384                    /* ints per tile in d_parent and d_flag: the nodes, then */
#define CANNY_MASKS 256                    /* from here the tile's 64 rows of candidates (d_parent) */
                                           /* and of edges found inside the tile (d_flag) */
#define CANNY_EDGE 255                     /* an edge pixel in the map */
#define CANNY_STATE CANNY_PERIM            /* d_flag slot of a tile's state: CANNY_HAS_* bits */
#define CANNY_HAS_CAND 1                   /* the tile holds a candidate */
#define CANNY_HAS_NODE 2                   /* ... and one on its border (a node) */
#define CANNY_EDGES CANNY_PERIM            /* d_parent slot of the node that all edge nodes join */

/* ---- hysteresis inside a tile on bit masks ----------------------------------------------------- */

/* A tile's rows are 64-bit words (bit x: column x). One warp holds a tile: lane l rows 2l and
 * 2l+1. */
typedef unsigned long long canny_row;
#define CANNY_ALL 0xffffffffu

/* The runs of c (horizontal stretches of set bits) that hold a bit of s, s a subset of c: adding s
 * carries from each seed to the top of its run, the same on the reversed word to its bottom. */
static __device__ __forceinline__ canny_row canny_runs(canny_row c, canny_row s)
{
    canny_row rc = __brevll(c), rs = __brevll(s);
    return ((((c + s) ^ c) & c) | s) | __brevll((((rc + rs) ^ rc) & rc) | rs);
}

/* The columns of x and their left and right neighbours. */
static __device__ __forceinline__ canny_row canny_dil(canny_row x)
{
    return x | x << 1 | x >> 1;
}

/* Straight down (or up) through the columns of the tile's mask: every row gains the bits of the
 * row above (below) that it shares with c. A scan over the lanes with the operator (p, s) of the
 * rows it passes: s' = s | p & s_before, p' = p & p_before, in 5 doubling steps; upwards the
 * lanes run backwards and each lane's second row comes first. */
template <bool DOWN>
static __device__ __forceinline__ void canny_vscan(canny_row c0, canny_row c1, canny_row *a, canny_row *b)
{
    const int l = threadIdx.x % 32;
    canny_row *first = DOWN ? a : b, *last = DOWN ? b : a, cf = DOWN ? c0 : c1, cl = DOWN ? c1 : c0;
    canny_row p = c0 & c1, s = *last | (cl & *first), x;

#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        canny_row pp = DOWN ? __shfl_up_sync(CANNY_ALL, p, d) : __shfl_down_sync(CANNY_ALL, p, d);
        canny_row sp = DOWN ? __shfl_up_sync(CANNY_ALL, s, d) : __shfl_down_sync(CANNY_ALL, s, d);
        if (DOWN ? l >= d : l + d < 32)
            s |= p & sp, p &= pp;
    }
    x = DOWN ? __shfl_up_sync(CANNY_ALL, s, 1) : __shfl_down_sync(CANNY_ALL, s, 1);
    if (l == (DOWN ? 0 : 31))
        x = 0;
    *first |= cf & x;
    *last |= cl & *first;
}

/* Grows r0, r1 (subsets of c0, c1) to the whole 8-connected components of the tile's mask c that
 * they touch. Each round takes the neighbour rows from the adjacent lanes and fills the runs they
 * reach; when that changes no lane the set is closed (every candidate 8-neighbour of it and every
 * run it touches is in it) and the flood ends, else it runs straight down and up the columns and
 * goes round again. The closure test comes before the column scans, so a set that one step closes
 * (a small component, or the last round of a large one) costs no scans. */
static __device__ void canny_flood(canny_row c0, canny_row c1, canny_row *r0, canny_row *r1)
{
    const int l = threadIdx.x % 32;
    canny_row a = canny_runs(c0, *r0), b = canny_runs(c1, *r1);

    for (;;) {
        canny_row up = __shfl_up_sync(CANNY_ALL, b, 1), dn = __shfl_down_sync(CANNY_ALL, a, 1);
        if (l == 0)
            up = 0;
        if (l == 31)
            dn = 0;
        canny_row na = canny_runs(c0, (a | canny_dil(up | b)) & c0);
        canny_row nb = canny_runs(c1, (b | canny_dil(na | dn)) & c1);
        na = canny_runs(c0, (na | canny_dil(nb)) & c0);
        int changed = na != a || nb != b;
        a = na, b = nb;
        if (!__any_sync(CANNY_ALL, changed))
            break;
        canny_vscan<true>(c0, c1, &a, &b);
        canny_vscan<false>(c0, c1, &a, &b);
    }
    *r0 = a, *r1 = b;
}

/* The tile border pixels that lane l watches, as 8 bits: top row columns l and l+32, bottom row
 * the same, then its rows' first column (bits 4, 5) and last column (bits 6, 7), rows 1..62 only.
 * A set bit's node label (canny_bid) grows with the bit. */
static __device__ __forceinline__ unsigned canny_border8(canny_row r0, canny_row r1, int l)
{
    canny_row top = __shfl_sync(CANNY_ALL, r0, 0), bot = __shfl_sync(CANNY_ALL, r1, 31);
    unsigned m = ((unsigned)(top >> l) & 1) | ((unsigned)(top >> (l + 32)) & 1) << 1 |
                 ((unsigned)(bot >> l) & 1) << 2 | ((unsigned)(bot >> (l + 32)) & 1) << 3;

    if (l > 0)
        m |= ((unsigned)r0 & 1) << 4 | (unsigned)(r0 >> 63) << 6;
    if (l < 31)
        m |= ((unsigned)r1 & 1) << 5 | (unsigned)(r1 >> 63) << 7;
    return m;
}

/* The node label (canny_id) of bit b of lane l's border bits: base (one byte per bit: 0, 32, 64,
 * 96, 127, 128, 189, 190) plus l on the rows, 2l on the columns. */
static __device__ __forceinline__ int canny_bid(int l, int b)
{
    return (int)((0xBEBD807F60402000ull >> (8 * b)) & 0xff) + (b < 4 ? l : 2 * l);
}

/* Label of tile pixel (lx, ly) on the tile border: the top row, the bottom row, the left then the
 * right column without the corners. A component's smallest label names its global node. */
static __device__ __forceinline__ int canny_id(int lx, int ly)
{
    if (ly == 0)
        return lx;
    if (ly == CANNY_T - 1)
        return CANNY_T + lx;
    if (lx == 0)
        return 2 * CANNY_T + ly - 1;
    return 3 * CANNY_T - 2 + ly - 1;
}

/* ---- a tile's map ------------------------------------------------------------------------------ */

/* 4 bits to 4 bytes of 0 or 255. */
static __device__ __forceinline__ unsigned canny_bytes4(unsigned b)
{
    return ((b * 0x00204081u) & 0x01010101u) * 255u;
}

/* 16 bits to 16 bytes of 0 or 255. */
static __device__ __forceinline__ uint4 canny_bytes16(unsigned b)
{
    return make_uint4(canny_bytes4(b & 15), canny_bytes4((b >> 4) & 15), canny_bytes4((b >> 8) & 15),
                      canny_bytes4(b >> 12));
}

/* The 16 map bits of step q (row q / 4, columns (q % 4) * 16 ..) of s_rows (NULL: none). */
static __device__ __forceinline__ unsigned canny_bits16(const canny_row *s_rows, int q)
{
    return s_rows ? (unsigned)(s_rows[q / 4] >> ((q % 4) * 16)) & 0xffffu : 0;
}

/* Bytes [lo, hi) (0 <= lo < hi <= 16) of the 16-byte aligned word at o, byte i being 0 or 255 as bit
 * i of bits: in naturally aligned stores of 8, 4, 2 and 1 bytes, at most 4 on each side of the word's
 * middle, never a byte outside [lo, hi) (those lie outside the map: k_canny_expand's first and last
 * words). */
static __device__ __forceinline__ void canny_store_part(uint8_t *o, unsigned bits, int lo, int hi)
{
    for (int i = lo; i < hi;) {
        if ((i & 7) == 0 && i + 8 <= hi) {
            *(uint2 *)(o + i) = make_uint2(canny_bytes4((bits >> i) & 15), canny_bytes4((bits >> (i + 4)) & 15));
            i += 8;
        } else if ((i & 3) == 0 && i + 4 <= hi) {
            *(unsigned *)(o + i) = canny_bytes4((bits >> i) & 15);
            i += 4;
        } else if ((i & 1) == 0 && i + 2 <= hi) {
            *(unsigned short *)(o + i) = (unsigned short)canny_bytes4((bits >> i) & 3);
            i += 2;
        } else {
            o[i] = (bits >> i) & 1 ? CANNY_EDGE : 0;
            i++;
        }
    }
}

/* Thread t of n writes its share of a tile's 0/255 map from the row masks s_rows (NULL: no edge),
 * one 16-byte store per 16 columns. Only where the map's rows take 16-byte stores (w a multiple of
 * 16, d_out 16-byte aligned: canny_core's ovec): a tile's row inside the image is then whole
 * aligned words. Elsewhere k_canny_expand writes the map. */
static __device__ __forceinline__ void canny_write_map(uint8_t *__restrict__ d_out, int w, int h, int x0, int y0,
                                                       const canny_row *s_rows, int t, int n)
{
    const int cols = w - x0 < CANNY_T ? w - x0 : CANNY_T; /* a multiple of 16 */

    for (int q = t; q < CANNY_T * 4; q += n) {
        int y = y0 + q / 4, x = (q % 4) * 16;
        if (y < h && x < cols)
            *(uint4 *)(d_out + (size_t)y * w + x0 + x) = canny_bytes16(canny_bits16(s_rows, q));
    }
}

#endif
