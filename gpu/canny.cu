/* canny.cu — Canny on the device with cv::Canny's map: gray conversion and pre-blur, one tiled
 * kernel for Sobel, magnitude, suppression, thresholds and the hysteresis inside each tile (on bit
 * masks), then hysteresis across tiles as connected components of the tiles' border pixels, and a
 * last pass per tile that writes the map; a tile whose candidates do not reach its border is
 * decided inside it, and the tile kernel writes its map (docs/gpu.md).
 *
 * Why it is exact: the derivatives are integer sums (the order of the terms does not matter; the
 * aperture-3 path packs two of them into the 16-bit lanes of a word, each lane kept in 0..65535),
 * the magnitude, the sector test and the tie rules are the integer expressions of cpu_ref/canny.c, and
 * the hysteresis result is a property of the 8-connected components of the candidates (an edge is
 * a candidate whose component holds a pixel above the high threshold), which any correct labelling
 * finds, in whatever order its unions run. */
#include <string.h>

#include <type_traits>

#include "canny.h"
#include "gconv_internal.h"

#define CANNY_T 64                         /* tile side */
#define CANNY_PERIM (4 * CANNY_T - 4)      /* border pixels of a tile: the global nodes per tile */
#define CANNY_SLOTS 384                    /* ints per tile in d_parent and d_flag: the nodes, then */
#define CANNY_MASKS 256                    /* from here the tile's 64 rows of candidates (d_parent) */
                                           /* and of edges found inside the tile (d_flag) */
#define CANNY_THREADS 256                  /* per tile */
#define CANNY_BLOCKS 6                     /* tiles an SM holds at once: 40 registers */
#define CANNY_OX 16                        /* s_in column of x0: rows hold x0 - 16 .. x0 + 79, */
#define CANNY_SS (CANNY_T + 2 * CANNY_OX)  /* 16-byte aligned where the image rows are */
#define CANNY_SPAN (CANNY_T + 8)           /* the columns a tile reads: x0 - 4 .. x0 + 67 */
#define CANNY_ROWS (CANNY_THREADS / CANNY_T) /* rows a tile's threads cover at once */
#define CANNY_TG22 13573u                  /* tan(22.5 deg) in Q15, cv::Canny's sector test */
#define CANNY_EDGE 255                     /* an edge pixel in the map */
#define CANNY_SB (1 << 9)                  /* a border label's mark: its component holds a strong pixel */
#define CANNY_STATE CANNY_PERIM            /* d_flag slot of a tile's state: CANNY_HAS_* bits */
#define CANNY_HAS_CAND 1                   /* the tile holds a candidate */
#define CANNY_HAS_NODE 2                   /* ... and one on its border (a node) */
#define CANNY_EDGES CANNY_PERIM            /* d_parent slot of the node that all edge nodes join */

/* ---- gray conversion and pre-blur ------------------------------------------------------------ */

/* pixel_luma with the host's roundings: three products and two sums, never contracted. */
static __device__ __forceinline__ float canny_luma(const uint8_t *px, int ch)
{
    if (ch < 3)
        return (float)px[0];
    return __fadd_rn(__fadd_rn(__fmul_rn(0.299f, (float)px[0]), __fmul_rn(0.587f, (float)px[1])),
                     __fmul_rn(0.114f, (float)px[2]));
}

/* The u8 gray without a pre-blur: the sample, or pixel_clamp_u8 of the luma. */
__global__ void k_canny_gray(const uint8_t *__restrict__ d_in8, uint8_t *__restrict__ d_gray, size_t n, int ch)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        d_gray[i] = pixel_clamp_u8(canny_luma(d_in8 + i * ch, ch));
}

/* The float luma plane the pre-blur reads. */
__global__ void k_canny_luma(const uint8_t *__restrict__ d_in8, float *__restrict__ d_l, size_t n, int ch)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        d_l[i] = canny_luma(d_in8 + i * ch, ch);
}

/* The pre-blur exactly as cpu_serial_conv: taps in row-major order, samples outside under the
 * border rule (zero ones skipped), one float accumulator, products and sums rounded separately;
 * then pixel_clamp_u8. */
__global__ void k_canny_blur(const float *__restrict__ d_l, const float *__restrict__ d_taps, int rows, int cols,
                             int border, uint8_t *__restrict__ d_gray, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;

    if (x >= w || y >= h)
        return;
    for (int i = 0; i < rows; i++) {
        int sy = border_index(y + i - rows / 2, h, border);
        if (sy < 0)
            continue;
        for (int j = 0; j < cols; j++) {
            int sx = border_index(x + j - cols / 2, w, border);
            if (sx >= 0)
                acc = __fadd_rn(acc, __fmul_rn(__ldg(d_taps + i * cols + j), __ldg(d_l + (size_t)sy * w + sx)));
        }
    }
    d_gray[(size_t)y * w + x] = pixel_clamp_u8(acc);
}

/* ---- union-find over the global border graph --------------------------------------------------- */

/* Labels only ever decrease and point to a member of the same component with a smaller or equal
 * index; a root points to itself. (One exception: the edge nodes of tile 0 point up to the edges'
 * node CANNY_EDGES; nothing ever points at them, so no cycle can pass through them.) uf_find_split
 * finds the root while other threads link: path splitting (each visited label moves on to its
 * grandparent, with atomicMin so that it only ever decreases) keeps the trees shallow, so that a
 * chain of unions (a spiral) does not make every later find walk the whole chain. Reads are
 * volatile: other threads lower labels meanwhile. */
static __device__ __forceinline__ int uf_find_split(int *lab, int x)
{
    const volatile int *v = lab;
    int p = v[x], g;

    while (p != x) {
        g = v[p];
        if (g < p)
            atomicMin(lab + x, g);
        x = p;
        p = g;
    }
    return x;
}

/* Links the trees of a and b under the smaller root (Playne and Hawick's union: an atomicMin on a
 * root, retried from the returned label when another thread moved that root first). */
static __device__ void uf_union(int *lab, int a, int b)
{
    for (;;) {
        a = uf_find_split(lab, a);
        b = uf_find_split(lab, b);
        if (a == b)
            return;
        if (a < b) {
            int t = a;
            a = b;
            b = t;
        }
        int old = atomicMin(lab + a, b);
        if (old == a)
            return;
        a = old;
    }
}

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
 * they touch. Each round runs straight down and up the columns, then takes the neighbour rows
 * from the adjacent lanes and fills the runs they reach, until a round changes no lane. */
static __device__ void canny_flood(canny_row c0, canny_row c1, canny_row *r0, canny_row *r1)
{
    const int l = threadIdx.x % 32;
    canny_row a = canny_runs(c0, *r0), b = canny_runs(c1, *r1);

    for (;;) {
        canny_vscan<true>(c0, c1, &a, &b);
        canny_vscan<false>(c0, c1, &a, &b);
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

/* The smallest node label among the set border bits of all lanes (1 << 20 when none). */
static __device__ __forceinline__ int canny_min_bid(unsigned m, int l)
{
    return (int)__reduce_min_sync(CANNY_ALL, m ? (unsigned)canny_bid(l, __ffs(m) - 1) : 1u << 20);
}

/* ---- programmatic dependent launch ----------------------------------------------------------- */

/* From compute capability 9.0 the seam and final kernels are launched as dependents of the kernel
 * before them (canny_launch_dependent): they wait on the device for its completion and its writes
 * (canny_wait_prior) instead of the launch waiting for it, which takes the launch gap out of the
 * time between the kernels. The seam kernel lets the final kernel's blocks start at once
 * (canny_let_dependents_start); the tile kernel does not, so the seam blocks come as its blocks
 * finish (an early start there was measured no faster). Compiled for an earlier architecture both
 * are empty and the launches are plain (canny_pdl). */
static __device__ __forceinline__ void canny_let_dependents_start(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

static __device__ __forceinline__ void canny_wait_prior(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
}

/* ---- the tile kernel -------------------------------------------------------------------------- */

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

/* The global node of image pixel (x, y), which must lie on its tile's border. */
static __device__ __forceinline__ int canny_node(int x, int y, int tiles_x)
{
    return ((y / CANNY_T) * tiles_x + x / CANNY_T) * CANNY_SLOTS + canny_id(x % CANNY_T, y % CANNY_T);
}

/* cv::getSobelKernels' smoothing and derivative taps, index k of 2r+1. */
static __device__ __forceinline__ int canny_sm(int r, int k)
{
    int a = k - r < 0 ? r - k : k - r;
    if (r == 1)
        return a ? 1 : 2;
    if (r == 2)
        return a == 2 ? 1 : a == 1 ? 4 : 6;
    return a == 3 ? 1 : a == 2 ? 6 : a == 1 ? 15 : 20;
}
static __device__ __forceinline__ int canny_de(int r, int k)
{
    int c = k - r, a = c < 0 ? -c : c, v;
    if (r == 1)
        return c;
    v = r == 2 ? (a == 2 ? 1 : a == 1 ? 2 : 0) : (a == 3 ? 1 : a == 2 ? 4 : a == 1 ? 5 : 0);
    return c < 0 ? -v : v;
}

/* s/16 to nearest, ties to even: aperture 7's scaled Sobel as cv::Canny rounds it. */
static __device__ __forceinline__ int canny_div16(int s)
{
    int q = s >> 4, r = s & 15;
    return r > 8 || (r == 8 && (q & 1)) ? q + 1 : q;
}

/* The derivative and smoothing sums of one row of the window whose first sample is p. */
template <int R>
static __device__ __forceinline__ void canny_hrow(const uint8_t *p, int *de, int *sm)
{
    int a = 0, b = 0;
#pragma unroll
    for (int j = 0; j <= 2 * R; j++) {
        int v = p[j];
        a += canny_de(R, j) * v;
        b += canny_sm(R, j) * v;
    }
    *de = a, *sm = b;
}

/* The suppression sector: 0 compares left and right, 1 above and below, 2 above-left and
 * below-right, 3 above-right and below-left (|d| <= 24480, so the Q15 products fit 32 bits). */
static __device__ __forceinline__ int canny_sector(int dx, int dy)
{
    unsigned ax = (unsigned)abs(dx), ay = (unsigned)abs(dy) << 15, tg22 = ax * CANNY_TG22;

    if (ay < tg22)
        return 0;
    if (ay > tg22 + (ax << 16))
        return 1;
    return (dx ^ dy) < 0 ? 3 : 2;
}

/* Notes that row y of the tile holds a pixel over low (s_rows: a 64-bit row mask in two words);
 * the read first spares dense tiles a queue of atomics on two words. */
static __device__ __forceinline__ void canny_mark_row(unsigned *s_rows, int y)
{
    if (!((((volatile unsigned *)s_rows)[y / 32] >> (y % 32)) & 1))
        atomicOr(s_rows + y / 32, 1u << (y % 32));
}

/* The magnitudes of the tile and its ring (s_mag, MW x MW, 0 outside the image) and the sectors of
 * the tile (s_sec) from the samples s_in (rows CANNY_SS apart, from column x0 - CANNY_OX), marking
 * in s_rows the rows that hold a magnitude over low: one thread walks down a third of a column,
 * keeping the row sums of its window in registers, so that each output costs one row sum instead
 * of the whole window. The sums are integers: their order does not change them. */
template <int R, bool L2, typename MT>
static __device__ __forceinline__ void canny_mags(const uint8_t *s_in, MT *s_mag, uint8_t *s_sec, unsigned *s_rows,
                                                  int x0, int y0, int w, int h, int low)
{
    constexpr int SW = CANNY_SS, MW = CANNY_T + 2, K = 2 * R + 1, SR = MW / 3;
    static_assert(MW % 3 == 0, "three strips per column");

    for (int item = threadIdx.x; item < 3 * MW; item += CANNY_THREADS) {
        const int mx = item % MW + CANNY_OX - 1 - R, my0 = item / MW * SR, gx = x0 + item % MW - 1;
        int hde[K], hsm[K];
#pragma unroll
        for (int i = 0; i < K - 1; i++)
            canny_hrow<R>(s_in + (my0 + i) * SW + mx, &hde[i], &hsm[i]);
        for (int my = my0; my < my0 + SR; my++) {
            int gy = y0 + my - 1, sx = 0, sy = 0, m = 0;
            canny_hrow<R>(s_in + (my + K - 1) * SW + mx, &hde[K - 1], &hsm[K - 1]);
#pragma unroll
            for (int i = 0; i < K; i++) {
                sx += canny_sm(R, i) * hde[i];
                sy += canny_de(R, i) * hsm[i];
            }
            if ((unsigned)gx < (unsigned)w && (unsigned)gy < (unsigned)h) {
                int dx = R == 3 ? canny_div16(sx) : sx, dy = R == 3 ? canny_div16(sy) : sy;
                m = L2 ? dx * dx + dy * dy : abs(dx) + abs(dy);
                if (gx >= x0 && gx < x0 + CANNY_T && my >= 1 && my <= CANNY_T) {
                    s_sec[(my - 1) * CANNY_T + gx - x0] = (uint8_t)canny_sector(dx, dy);
                    if (m > low)
                        canny_mark_row(s_rows, my - 1);
                }
            }
            s_mag[my * MW + gx - x0 + 1] = (MT)m;
#pragma unroll
            for (int i = 0; i < K - 1; i++)
                hde[i] = hde[i + 1], hsm[i] = hsm[i + 1];
        }
    }
}

/* Aperture 3 with the L1 norm on a tile whose halo lies inside the image: canny_mags on pairs of
 * columns, two 16-bit lanes per register. Every lane of a sum stays within 0..65535, so the 32-bit
 * adds are the lanes' own: the horizontal derivative carries +256, the derivatives +1024, and
 * |dx| + |dy| = max(dx + dy, -dx - dy, dx - dy, dy - dx) is taken on four lanes carrying +B
 * (max.s16x2). s_mag receives the magnitudes plus CANNY_MB; the sectors are written only where
 * the magnitude exceeds low, the only ones the suppression reads. */
#define CANNY_MB 4096 /* the bias of the fast path's magnitudes */
#define CANNY_PAIRS ((CANNY_T + 2) / 2)
#define CANNY_STRIPS (CANNY_THREADS / CANNY_PAIRS)
static __device__ __forceinline__ void canny_hpair(const uint8_t *row, unsigned *de, unsigned *sm)
{
    unsigned lo = *(const unsigned short *)row, hi = *(const unsigned short *)(row + 2);
    unsigned o = __byte_perm(lo, hi, 0x2120), e = __byte_perm(lo, hi, 0x2524), m = __byte_perm(lo, hi, 0x2421);

    *de = e + 0x01000100u - o;
    *sm = o + e + (m << 1);
}

static __device__ __forceinline__ void canny_sec_px(unsigned sx, unsigned sy, uint8_t *s_sec, int tx, int ty)
{
    if ((unsigned)tx < CANNY_T && (unsigned)ty < CANNY_T)
        s_sec[ty * CANNY_T + tx] = (uint8_t)canny_sector((int)sx - 1024, (int)sy - 1024);
}

static __device__ __forceinline__ void canny_mags_pair3(const uint8_t *s_in, unsigned short *s_mag, uint8_t *s_sec,
                                                        unsigned *s_rows, int low)
{
    constexpr int MW = CANNY_T + 2, SW = CANNY_SS;
    const int item = threadIdx.x, strip = item / CANNY_PAIRS, mx = 2 * (item % CANNY_PAIRS);
    const unsigned k1 = 0x00010001u, over = (0x7fffu - (unsigned)(min(max(low, -1), 2040) + CANNY_MB)) * k1;

    if (strip >= CANNY_STRIPS)
        return;
    const int my0 = strip * MW / CANNY_STRIPS, my1 = (strip + 1) * MW / CANNY_STRIPS;
    const uint8_t *p = s_in + mx + CANNY_OX - 2; /* the window's first column */
    unsigned dea, sma, deb, smb;
    canny_hpair(p + my0 * SW, &dea, &sma);
    canny_hpair(p + (my0 + 1) * SW, &deb, &smb);
    /* row my of the magnitudes from the row sums above (a), at (b) and below (read here) */
    auto row = [&](int my) {
        unsigned dec, smc;
        canny_hpair(p + (my + 2) * SW, &dec, &smc);
        unsigned sx = dea + dec + (deb << 1), sy = smc + 0x04000400u - sma;
        unsigned p1 = sx + sy + (CANNY_MB - 2048) * k1, p2 = (CANNY_MB + 2048) * k1 - sx - sy;
        unsigned p3 = sx - sy + CANNY_MB * k1, p4 = sy - sx + CANNY_MB * k1;
        unsigned mb = __vmaxs2(__vimax3_s16x2(p1, p2, p3), p4);
        *(unsigned *)(s_mag + my * MW + mx) = mb;
        if ((mb + over) & 0x80008000u) {
            canny_sec_px(sx & 0xffffu, sy & 0xffffu, s_sec, mx - 1, my - 1);
            canny_sec_px(sx >> 16, sy >> 16, s_sec, mx, my - 1);
            if ((unsigned)(my - 1) < CANNY_T)
                canny_mark_row(s_rows, my - 1);
        }
        dea = deb, sma = smb, deb = dec, smb = smc;
    };
    /* a strip holds NR or NR + 1 rows: the odd one first, then NR unrolled whole (constant offsets,
     * no loop counter) */
    constexpr int NR = MW / CANNY_STRIPS;
    static_assert((MW + CANNY_STRIPS - 1) / CANNY_STRIPS == NR + 1, "strips of NR or NR + 1 rows");
    const int my = my0 + (my1 - my0 - NR);
    if (my != my0)
        row(my0);
#pragma unroll
    for (int k = 0; k < NR; k++)
        row(my + k);
}

/* The position of border label id in the tile. */
static __device__ __forceinline__ void canny_bpos(int id, int *sx, int *sy)
{
    if (id < CANNY_T)
        *sx = id, *sy = 0;
    else if (id < 2 * CANNY_T)
        *sx = id - CANNY_T, *sy = CANNY_T - 1;
    else if (id < 3 * CANNY_T - 2)
        *sx = 0, *sy = id - (2 * CANNY_T - 1);
    else
        *sx = CANNY_T - 1, *sy = id - (3 * CANNY_T - 3);
}

/* Warp 0 of a tile, after the classification: the edge mask E (the components of the candidates
 * that hold a strong pixel, one flood from all strong pixels), then one flood per remaining
 * component that touches the tile border, from its smallest border pixel. s_blab[id] receives,
 * per candidate border pixel, its component's smallest label, plus CANNY_SB when it lies in E
 * (all of E counts as one component: joining components that are edges anyway changes no pixel). */
static __device__ void canny_tile_label(const unsigned (*s_cand)[2], const unsigned (*s_strong)[2], int *s_blab,
                                        canny_row *e0, canny_row *e1, canny_row *c0, canny_row *c1)
{
    const int l = threadIdx.x % 32;
    canny_row a, b;
    unsigned cb, eb, rem;
    int lab;

    *c0 = s_cand[2 * l][0] | (canny_row)s_cand[2 * l][1] << 32;
    *c1 = s_cand[2 * l + 1][0] | (canny_row)s_cand[2 * l + 1][1] << 32;
    *e0 = s_strong[2 * l][0] | (canny_row)s_strong[2 * l][1] << 32;
    *e1 = s_strong[2 * l + 1][0] | (canny_row)s_strong[2 * l + 1][1] << 32;
    if (__any_sync(CANNY_ALL, (*e0 | *e1) != 0))
        canny_flood(*c0, *c1, e0, e1);
    cb = canny_border8(*c0, *c1, l);
    eb = canny_border8(*e0, *e1, l);
    lab = canny_min_bid(eb, l);
    for (unsigned m = eb; m; m &= m - 1)
        s_blab[canny_bid(l, __ffs(m) - 1)] = lab | CANNY_SB;
    rem = cb & ~eb;
    while (__any_sync(CANNY_ALL, rem != 0)) {
        int seed = canny_min_bid(rem, l), sx, sy;
        canny_bpos(seed, &sx, &sy);
        a = l == sy / 2 && !(sy & 1) ? 1ull << sx : 0;
        b = l == sy / 2 && (sy & 1) ? 1ull << sx : 0;
        canny_flood(*c0, *c1, &a, &b);
        unsigned fb = canny_border8(a, b, l) & rem;
        for (unsigned m = fb; m; m &= m - 1)
            s_blab[canny_bid(l, __ffs(m) - 1)] = seed;
        rem &= ~fb;
    }
}

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

/* Thread t of n writes its share of a tile's 0/255 map from the row masks s_rows (NULL: no edge), 16
 * bytes a step (`vec`: rows and base allow 16-byte stores). */
static __device__ __forceinline__ void canny_write_map(uint8_t *__restrict__ d_out, int w, int h, int x0, int y0,
                                                       int vec, const canny_row *s_rows, int t, int n)
{
    if (vec && x0 + CANNY_T <= w && y0 + CANNY_T <= h) { /* a whole tile: no bounds */
        uint8_t *o = d_out + (size_t)y0 * w + x0;
        for (int q = t; q < CANNY_T * 4; q += n)
            *(uint4 *)(o + (size_t)(q / 4) * w + (q % 4) * 16) = canny_bytes16(canny_bits16(s_rows, q));
        return;
    }
    for (int q = t; q < CANNY_T * 4; q += n) {
        int x = x0 + (q % 4) * 16, y = y0 + q / 4;
        unsigned bits = canny_bits16(s_rows, q);
        uint8_t *o = d_out + (size_t)y * w + x;
        if (y >= h || x >= w)
            continue;
        if (vec) {
            *(uint4 *)o = canny_bytes16(bits);
        } else {
            for (int j = 0; j < 16 && x + j < w; j++)
                o[j] = (bits >> j) & 1 ? CANNY_EDGE : 0;
        }
    }
}

/* A tile's samples, rows y0 - HR .. y0 + 63 + HR, into s_in (column CANNY_OX is x0): 16-byte loads
 * of x0 - 16 .. x0 + 79 where those lie inside the image and `vec` is 16 (rows and base aligned),
 * 4-byte loads of x0 - 4 .. x0 + 67 where those lie inside and `vec` is 4 or 16, else bytes with
 * the border replicated. */
template <int HR>
static __device__ __forceinline__ void canny_load(const uint8_t *__restrict__ d_gray, uint8_t *s_in, int x0, int y0,
                                                  int w, int h, int vec)
{
    constexpr int SW = CANNY_T + 2 * HR;
    const bool rows = y0 >= HR && y0 + CANNY_T + HR <= h;

    if (vec == 16 && rows && x0 >= CANNY_OX && x0 + CANNY_T + CANNY_OX <= w) {
        constexpr int Q = CANNY_SS / 16, N = SW * Q;
        static_assert(N >= CANNY_THREADS && N <= 2 * CANNY_THREADS, "one or two loads a thread");
        const uint8_t *p = d_gray + (size_t)(y0 - HR) * w + x0 - CANNY_OX;
        const int i0 = threadIdx.x, i1 = i0 + CANNY_THREADS;
        uint4 a = __ldg((const uint4 *)(p + (size_t)(i0 / Q) * w) + i0 % Q), b; /* both in flight */
        if (i1 < N)
            b = __ldg((const uint4 *)(p + (size_t)(i1 / Q) * w) + i1 % Q);
        ((uint4 *)s_in)[i0] = a;
        if (i1 < N)
            ((uint4 *)s_in)[i1] = b;
    } else if (vec >= 4 && rows && x0 >= 4 && x0 + CANNY_SPAN - 4 <= w) {
        constexpr int Q = CANNY_SPAN / 4;
        for (int i = threadIdx.x; i < SW * Q; i += CANNY_THREADS) {
            int sy = i / Q, k = i - sy * Q;
            ((unsigned *)(s_in + sy * CANNY_SS + CANNY_OX - 4))[k] =
                __ldg((const unsigned *)(d_gray + (size_t)(y0 + sy - HR) * w + x0 - 4) + k);
        }
    } else {
        for (int i = threadIdx.x; i < SW * CANNY_SPAN; i += CANNY_THREADS) {
            int sy = i / CANNY_SPAN, sx = i - sy * CANNY_SPAN;
            int gx = min(max(x0 + sx - 4, 0), w - 1), gy = min(max(y0 + sy - HR, 0), h - 1);
            s_in[sy * CANNY_SS + CANNY_OX - 4 + sx] = __ldg(d_gray + (size_t)gy * w + gx);
        }
    }
}

/* One 64 x 64 tile: samples with a halo of r+1 (replicated at the image border), magnitudes with
 * a ring of 1 (0 outside the image, as cv::Canny frames them), suppression (on the rows that hold
 * a magnitude over low) and thresholds into row masks of candidates and strong pixels, then
 * canny_tile_label. Writes the tile's state (slot CANNY_STATE of d_flag); for a tile with
 * candidates also its candidate and edge masks (the tail of its slots in d_parent and d_flag) and
 * per border pixel its node's parent (-1 when not a candidate; CANNY_EDGES of tile 0 when in E,
 * since all edges may form one component; else its component's smallest node) and flag (1: in E).
 * A tile without nodes gets its map here: 0, or E. */
template <int R, bool L2>
__global__ void __launch_bounds__(CANNY_THREADS, CANNY_BLOCKS)
    k_canny_tile(const uint8_t *__restrict__ d_gray, int w, int h, int low, int high, int *__restrict__ d_parent,
                 int *__restrict__ d_flag, int vec, uint8_t *__restrict__ d_out, int ovec)
{
    constexpr int HR = R + 1, SW = CANNY_T + 2 * HR, MW = CANNY_T + 2;
    __shared__ __align__(16) uint8_t s_in[SW * CANNY_SS];
    using MT = typename std::conditional<L2, int, unsigned short>::type; /* L1 magnitudes fit 16 bits */
    __shared__ __align__(16) MT s_mag[MW * MW];
    __shared__ uint8_t s_sec[CANNY_T * CANNY_T];
    __shared__ unsigned s_cand[CANNY_T][2];
    __shared__ __align__(8) unsigned s_strong[CANNY_T][2];
    __shared__ int s_blab[CANNY_PERIM];
    __shared__ unsigned s_rows[2]; /* bit y: a pixel of row y exceeds low */
    const int tid = threadIdx.x, x0 = blockIdx.x * CANNY_T, y0 = blockIdx.y * CANNY_T;
    const int tile = blockIdx.y * gridDim.x + blockIdx.x, lx = tid % CANNY_T;

    if (tid < 2)
        s_rows[tid] = 0;
    if (tile == 0 && tid == 0) /* the root of the edges, before any union (the next kernel's) */
        d_parent[CANNY_EDGES] = CANNY_EDGES;
    (tid < 2 * CANNY_T ? &s_cand[0][0] : &s_strong[0][0])[tid % (2 * CANNY_T)] = 0;
    /* the tile and its halo lie inside the image: no clamps, no bounds */
    const bool inner = x0 >= 4 && x0 + CANNY_SPAN - 4 <= w && y0 >= HR && y0 + CANNY_T + HR <= h;
    canny_load<HR>(d_gray, s_in, x0, y0, w, h, vec);
    __syncthreads();
    if constexpr (R == 1 && !L2) {
        if (inner) {
            canny_mags_pair3(s_in, s_mag, s_sec, s_rows, low);
            low += CANNY_MB, high += CANNY_MB;
        } else {
            canny_mags<R, L2>(s_in, s_mag, s_sec, s_rows, x0, y0, w, h, low);
        }
    } else {
        canny_mags<R, L2>(s_in, s_mag, s_sec, s_rows, x0, y0, w, h, low);
    }
    __syncthreads();
    /* the rows of this thread (tid / CANNY_T + k * CANNY_ROWS: the same for the whole warp) that hold
     * a magnitude over low; the others keep 0 in s_cand and s_strong */
    const canny_row over = s_rows[0] | (canny_row)s_rows[1] << 32;
    int any = 0;
    static_assert(CANNY_ROWS == 4, "every fourth row");
    for (canny_row todo = (over >> (tid / CANNY_T)) & 0x1111111111111111ull; todo; todo &= todo - 1) {
        int ly = tid / CANNY_T + __ffsll((long long)todo) - 1, c = 0;
        if (inner || (x0 + lx < w && y0 + ly < h)) {
            const MT *mp = s_mag + (ly + 1) * MW + lx + 1;
            int m = mp[0], keep;
            if (m > low) {
                int sec = s_sec[ly * CANNY_T + lx];
                if (sec == 0)
                    keep = m > mp[-1] && m >= mp[1];
                else if (sec == 1)
                    keep = m > mp[-MW] && m >= mp[MW];
                else if (sec == 2)
                    keep = m > mp[-MW - 1] && m > mp[MW + 1];
                else
                    keep = m > mp[-MW + 1] && m > mp[MW - 1];
                c = keep ? (m > high ? 2 : 1) : 0;
            }
        }
        unsigned cand = __ballot_sync(CANNY_ALL, c != 0), strong = __ballot_sync(CANNY_ALL, c == 2);
        any |= cand != 0;
        if (lx % 32 == 0)
            s_cand[ly][lx / 32] = cand, s_strong[ly][lx / 32] = strong;
    }
    canny_row c0, c1, e0, e1, *cm = (canny_row *)(d_parent + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    canny_row *em = (canny_row *)(d_flag + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    if (!__syncthreads_or(any)) { /* no candidate: the state says so (the later kernels read no more of
                                   * the tile's slots) and the map is 0 */
        if (tid == 0)
            d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] = 0;
        canny_write_map(d_out, w, h, x0, y0, ovec, NULL, tid, CANNY_THREADS);
        return;
    }
    if (tid >= 32)
        return;
    for (int i = tid; i < CANNY_PERIM; i += 32)
        s_blab[i] = -1;
    __syncwarp();
    canny_tile_label(s_cand, s_strong, s_blab, &e0, &e1, &c0, &c1);
    cm[2 * tid] = c0, cm[2 * tid + 1] = c1, em[2 * tid] = e0, em[2 * tid + 1] = e1;
    if (__any_sync(CANNY_ALL, canny_border8(c0, c1, tid) != 0)) {
        if (tid == 0)
            d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] = CANNY_HAS_CAND | CANNY_HAS_NODE;
    } else { /* no node: nothing outside the tile changes its map, E */
        canny_row *s_rows = (canny_row *)s_strong; /* read only at the start of canny_tile_label */
        if (tid == 0)
            d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] = CANNY_HAS_CAND;
        s_rows[2 * tid] = e0, s_rows[2 * tid + 1] = e1;
        __syncwarp();
        canny_write_map(d_out, w, h, x0, y0, ovec, s_rows, tid, 32);
    }
    __syncwarp();
    for (int i = tid; i < CANNY_PERIM; i += 32) {
        int v = s_blab[i];
        size_t node = (size_t)tile * CANNY_SLOTS + i;
        d_parent[node] = v < 0 ? -1 : v & CANNY_SB ? CANNY_EDGES : tile * CANNY_SLOTS + v;
        d_flag[node] = v >= 0 && (v & CANNY_SB);
    }
}

/* ---- hysteresis across tiles ----------------------------------------------------------------- */

/* Whether the tile holds nodes; the slots of a tile without are not written. */
static __device__ __forceinline__ bool canny_has_nodes(const int *d_flag, int tile)
{
    return d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] & CANNY_HAS_NODE;
}

/* One thread per pixel of a tile's right column and bottom row: joins its node with the candidate
 * neighbours in the tiles to the right and below (each pair of 8-neighbours in two tiles is seen
 * from its left or upper pixel). Threads of tiles without nodes leave at once. */
__global__ void k_canny_seams(int w, int h, int tiles_x, int tiles, int *d_parent, const int *__restrict__ d_flag)
{
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    int tile = (int)(t / (2 * CANNY_T)), k = (int)(t % (2 * CANNY_T)), x, y, a, strong;

    canny_let_dependents_start();
    canny_wait_prior(); /* the tile kernel's slots */
    if (tile >= tiles || !canny_has_nodes(d_flag, tile))
        return;
    x = (tile % tiles_x) * CANNY_T + (k < CANNY_T ? CANNY_T - 1 : k - CANNY_T);
    y = (tile / tiles_x) * CANNY_T + (k < CANNY_T ? k : CANNY_T - 1);
    if (x >= w || y >= h || d_parent[a = canny_node(x, y, tiles_x)] < 0)
        return;
    strong = d_flag[a] & 1;
    for (int d = 0; d <= 2; d++) { /* across, then the two diagonals, which only matter without it */
        int e = d == 0 ? 0 : d == 1 ? -1 : 1, b;
        int nx = k < CANNY_T ? x + 1 : x + e, ny = k < CANNY_T ? y + e : y + 1;
        if ((unsigned)nx >= (unsigned)w || (unsigned)ny >= (unsigned)h)
            continue;
        b = canny_node(nx, ny, tiles_x);
        if (!canny_has_nodes(d_flag, b / CANNY_SLOTS) || d_parent[b] < 0)
            continue;
        if (!(strong && (d_flag[b] & 1))) /* two edge nodes: one tree already */
            uf_union(d_parent, a, b);
        if (d == 0) /* the diagonal neighbours touch that one: joined through it */
            return;
    }
}

/* The root of x's tree, once the unions are done. */
static __device__ __forceinline__ int canny_root(const int *__restrict__ d_parent, int x)
{
    int p;

    while ((p = d_parent[x]) != x)
        x = p;
    return x;
}

/* One warp per tile: the edge mask grown by the border pixels whose global component holds an
 * edge (their root is the root of CANNY_EDGES), written as the 0/255 map (16 bytes a lane, 8 rows
 * a step; `vec`: rows and base allow 16-byte stores). */
__global__ void __launch_bounds__(128) k_canny_final(uint8_t *__restrict__ d_out, int w, int h, int tiles_x,
                                                     int tiles, int vec, const int *__restrict__ d_parent,
                                                     const int *__restrict__ d_flag)
{
    __shared__ canny_row s_rows[4][CANNY_T];
    const int wp = threadIdx.x / 32, l = threadIdx.x % 32, tile = blockIdx.x * 4 + wp;
    const canny_row *cm, *em;
    canny_row c0, c1, r0, r1;
    unsigned wait, seed = 0;
    int edges;

    canny_wait_prior(); /* the unions of the seam kernel */
    if (tile >= tiles)
        return;
    if (!canny_has_nodes(d_flag, tile))
        return; /* the tile kernel wrote its map */
    cm = (const canny_row *)(d_parent + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    em = (const canny_row *)(d_flag + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    c0 = cm[2 * l], c1 = cm[2 * l + 1], r0 = em[2 * l], r1 = em[2 * l + 1];
    wait = canny_border8(c0, c1, l) & ~canny_border8(r0, r1, l);
    edges = wait ? canny_root(d_parent, CANNY_EDGES) : -1;
    for (unsigned m = wait; m; m &= m - 1) {
        int b = __ffs(m) - 1;
        if (canny_root(d_parent, tile * CANNY_SLOTS + canny_bid(l, b)) == edges)
            seed |= 1u << b;
    }
    if (__any_sync(CANNY_ALL, seed != 0)) {
        canny_row top = __ballot_sync(CANNY_ALL, seed & 1) | (canny_row)__ballot_sync(CANNY_ALL, seed & 2) << 32;
        canny_row bot = __ballot_sync(CANNY_ALL, seed & 4) | (canny_row)__ballot_sync(CANNY_ALL, seed & 8) << 32;
        if (l == 0)
            r0 |= top;
        if (l == 31)
            r1 |= bot;
        r0 |= (canny_row)((seed >> 4) & 1) | (canny_row)((seed >> 6) & 1) << 63;
        r1 |= (canny_row)((seed >> 5) & 1) | (canny_row)((seed >> 7) & 1) << 63;
        canny_flood(c0, c1, &r0, &r1);
    }
    s_rows[wp][2 * l] = r0, s_rows[wp][2 * l + 1] = r1;
    __syncwarp();
    canny_write_map(d_out, w, h, (tile % tiles_x) * CANNY_T, (tile / tiles_x) * CANNY_T, vec, s_rows[wp], l, 32);
}

/* ---- launchers -------------------------------------------------------------------------------- */

size_t canny_nodes(int w, int h)
{
    return (size_t)div_up(w, CANNY_T) * div_up(h, CANNY_T) * CANNY_SLOTS;
}

size_t canny_scratch_bytes(int w, int h, int in_ch, int blur)
{
    size_t px = (size_t)w * h, b = 2 * sizeof(int) * canny_nodes(w, h);

    if (blur)
        b += sizeof(float) * px + 256;
    if (blur || in_ch != 1)
        b += px + 256;
    return b;
}

template <int R, bool L2>
static void canny_tile_launch(const struct canny_dev *d, int low, int high, int ovec)
{
    dim3 grid(div_up(d->w, CANNY_T), div_up(d->h, CANNY_T));
    int vec = d->w % 16 == 0 && (uintptr_t)d->d_gray % 16 == 0 ? 16
              : d->w % 4 == 0 && (uintptr_t)d->d_gray % 4 == 0 ? 4
                                                                : 1;
    k_canny_tile<R, L2><<<grid, CANNY_THREADS, 0, d->stream>>>(d->d_gray, d->w, d->h, low, high, d->d_parent,
                                                                d->d_flag, vec, d->d_out, ovec);
}

/* Whether the seam and final kernels go as dependent launches: the device runs code compiled
 * for compute capability 9.0 or later, in which they wait for the kernel before them. */
static bool canny_pdl_query(void)
{
    cudaFuncAttributes fa;

    return cudaFuncGetAttributes(&fa, k_canny_seams) == cudaSuccess && fa.ptxVersion >= 90 &&
           fa.binaryVersion >= 90 && cudaFuncGetAttributes(&fa, k_canny_final) == cudaSuccess &&
           fa.ptxVersion >= 90 && fa.binaryVersion >= 90;
}

/* canny_pdl_query, asked once a process (the process drives one device): asked per job, its two
 * driver calls sat between the job's start and its first launch. */
static bool canny_pdl(void)
{
    static const bool pdl = canny_pdl_query();

    return pdl;
}

/* kernel<<<grid, block, 0, s>>>(args...), as a dependent launch when pdl is set. */
template <typename... P, typename... A>
static cudaError_t canny_launch_dependent(bool pdl, void (*kernel)(P...), unsigned grid, unsigned block,
                                          cudaStream_t s, A... args)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at = {};

    at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at.val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(grid), cfg.blockDim = dim3(block), cfg.stream = s;
    cfg.attrs = &at, cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

cudaError_t canny_core(const struct canny_dev *d, const struct canny_params *p, const char **what)
{
    int low, high, tiles_x = div_up(d->w, CANNY_T), tiles = tiles_x * div_up(d->h, CANNY_T);
    int ovec = d->w % 16 == 0 && (uintptr_t)d->d_out % 16 == 0; /* the map's rows take 16-byte stores */
    bool pdl = canny_pdl();
    cudaError_t e;

    canny_ints(p, &low, &high);
    *what = "canny tile kernel";
    switch (p->aperture * 2 + !!p->l2gradient) {
    case 6: canny_tile_launch<1, false>(d, low, high, ovec); break;
    case 7: canny_tile_launch<1, true>(d, low, high, ovec); break;
    case 10: canny_tile_launch<2, false>(d, low, high, ovec); break;
    case 11: canny_tile_launch<2, true>(d, low, high, ovec); break;
    case 14: canny_tile_launch<3, false>(d, low, high, ovec); break;
    default: canny_tile_launch<3, true>(d, low, high, ovec); break;
    }
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    *what = "canny seam kernel";
    if ((e = canny_launch_dependent(pdl, k_canny_seams, div_up(tiles * 2 * CANNY_T, 256), 256, d->stream, d->w, d->h,
                                    tiles_x, tiles, d->d_parent, (const int *)d->d_flag)) != cudaSuccess)
        return e;
    *what = "canny final kernel";
    return canny_launch_dependent(pdl, k_canny_final, div_up(tiles, 4), 128, d->stream, d->d_out, d->w, d->h, tiles_x,
                                  tiles, ovec, (const int *)d->d_parent, (const int *)d->d_flag);
}

/* Carves the scratch: parents and flags, then the float luma and the u8 gray where needed. */
static uint8_t *canny_carve(struct canny_dev *d, void *scratch, int in_ch, int blur, float **d_l)
{
    size_t nodes = canny_nodes(d->w, d->h), px = (size_t)d->w * d->h;
    uint8_t *p = (uint8_t *)scratch;

    d->d_parent = (int *)p;
    d->d_flag = (int *)(p + sizeof(int) * nodes);
    p += 2 * sizeof(int) * nodes;
    *d_l = NULL;
    if (blur) {
        *d_l = (float *)p;
        p += (sizeof(float) * px + 255) / 256 * 256;
    }
    if (blur || in_ch != 1)
        d->d_gray = p;
    return p;
}

cudaError_t canny_plan_launch(const struct filter_plan *plan, const uint8_t *d_in8, const float *d_taps,
                              uint8_t *d_out8, void *scratch, int w, int h, cudaStream_t s, const char **what)
{
    struct canny_dev d;
    size_t n = (size_t)w * h;
    unsigned blocks = (unsigned)((n + 255) / 256);
    int blur = plan->nconv > 0;
    float *d_l;
    uint8_t *d_gray;
    cudaError_t e;

    memset(&d, 0, sizeof(d));
    d.w = w, d.h = h, d.stream = s, d.d_out = d_out8, d.d_gray = d_in8;
    d_gray = canny_carve(&d, scratch, plan->in_ch, blur, &d_l);
    *what = "canny gray kernel";
    if (blur) {
        dim3 b(32, 8), g(div_up(w, 32), div_up(h, 8));
        k_canny_luma<<<blocks, 256, 0, s>>>(d_in8, d_l, n, plan->in_ch);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return e;
        *what = "canny pre-blur kernel";
        k_canny_blur<<<g, b, 0, s>>>(d_l, d_taps, plan->conv[0].rows, plan->conv[0].cols, (int)plan->border,
                                     d_gray, w, h);
    } else if (plan->in_ch != 1) {
        k_canny_gray<<<blocks, 256, 0, s>>>(d_in8, d_gray, n, plan->in_ch);
    }
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    return canny_core(&d, &plan->canny, what);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static int canny_params_ok(const struct canny_params *p, char *err)
{
    if (!p || (p->aperture != 3 && p->aperture != 5 && p->aperture != 7))
        return edged_fail(err, EDGED_E_PARAM, "canny aperture %d invalid: must be 3, 5 or 7", p ? p->aperture : 0);
    if (isnan(p->low) || isnan(p->high))
        return edged_fail(err, EDGED_E_PARAM, "canny thresholds must be numbers");
    return 0;
}

int gconv_canny_host(struct gconv_ctx *ctx, const struct img *gray, const struct canny_params *p, struct img *out,
                     float *kernel_ms, char *err)
{
    struct gstream *st;
    struct canny_dev d;
    const char *what = "canny buffers";
    cudaError_t e = cudaSuccess;
    int rc, w, h;

    if ((rc = gctx_enter(ctx, err)) < 0 || (rc = canny_params_ok(p, err)) < 0)
        return rc;
    if (!gray || !gray->px || gray->ch != 1 || gray->packed || gray->stride < (size_t)gray->w || !out ||
        !out->px || out->ch != 1 || out->packed || out->w != gray->w || out->h != gray->h ||
        out->stride < (size_t)out->w)
        return edged_fail(err, EDGED_E_PARAM, "canny needs unpacked 1-channel input and output of one size");
    if ((rc = img_check_size(gray->w, gray->h, err)) < 0)
        return rc;
    w = gray->w, h = gray->h;
    st = &ctx->st[0];
    if (st->busy)
        return edged_fail(err, EDGED_E_PARAM, "stream 0 has a job in flight");
    memset(&d, 0, sizeof(d));
    if ((e = gctx_grow_device(ctx, st, (void **)&st->d_in8, &st->d_in8_cap, (size_t)w * h)) != cudaSuccess ||
        (e = gctx_grow_device(ctx, st, (void **)&st->d_out8, &st->d_out8_cap, (size_t)w * h)) != cudaSuccess ||
        (e = gctx_grow_device(ctx, st, (void **)&st->d_arena, &st->d_arena_cap,
                              canny_scratch_bytes(w, h, 1, 0))) != cudaSuccess)
        goto out;
    d.w = w, d.h = h, d.stream = st->s, d.d_gray = st->d_in8, d.d_out = st->d_out8;
    d.d_parent = (int *)st->d_arena;
    d.d_flag = d.d_parent + canny_nodes(w, h);
    what = "canny upload";
    if ((e = cudaMemcpy2DAsync(st->d_in8, w, gray->px, gray->stride, w, h, cudaMemcpyHostToDevice, st->s)) !=
            cudaSuccess ||
        (e = cudaEventRecord(st->ev_up, st->s)) != cudaSuccess)
        goto out;
    if ((e = canny_core(&d, p, &what)) != cudaSuccess)
        goto out;
    what = "canny download";
    if ((e = cudaEventRecord(st->ev_kern, st->s)) != cudaSuccess ||
        (e = cudaMemcpy2DAsync(out->px, out->stride, st->d_out8, w, w, h, cudaMemcpyDeviceToHost, st->s)) !=
            cudaSuccess ||
        (e = cudaStreamSynchronize(st->s)) != cudaSuccess)
        goto out;
    if (kernel_ms)
        e = cudaEventElapsedTime(kernel_ms, st->ev_up, st->ev_kern);
out:
    if (e != cudaSuccess) {
        cudaStreamSynchronize(st->s);
        return gctx_fail(ctx, e, what, err);
    }
    return 0;
}
