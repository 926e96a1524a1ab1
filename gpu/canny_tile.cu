/* canny_tile.cu — the Canny tile kernels and their launcher: per 64 x 64 tile the samples, Sobel,
 * magnitude, suppression and thresholds into bit masks (k_canny_tile), then the hysteresis inside
 * the tile (k_canny_label), which writes the tile's border nodes for the hysteresis across tiles
 * (canny_seams.cu), or the tile's map where no candidate reaches its border. Why the result is
 * exact: canny.cu. */
#include <type_traits>

#include "canny.h"
#include "canny_common.cuh"
#include "canny_sector.h"

static_assert(CANNY_MAGW == CANNY_T + 2, "the magnitude plane: the tile and its ring");

#define CANNY_THREADS 256                  /* per tile */
#define CANNY_BLOCKS 6                     /* tiles an SM holds at once: 40 registers */
#define CANNY_OX 16                        /* s_in column of x0: rows hold x0 - 16 .. x0 + 79, */
#define CANNY_SS (CANNY_T + 2 * CANNY_OX)  /* 16-byte aligned where the image rows are */
#define CANNY_SPAN (CANNY_T + 8)           /* the columns a tile reads: x0 - 4 .. x0 + 67 */
#define CANNY_WARPS (CANNY_THREADS / 32)   /* a tile's warps: the suppression's rows at once */
#define CANNY_SB (1 << 9)                  /* a border label's mark: its component holds a strong pixel */
#define CANNY_LABEL_WARPS 4                /* tiles (a warp each) of a k_canny_label block */
#define CANNY_LABEL_BLOCKS 12              /* its blocks an SM holds at once: 48 warps */

/* ---- the tile kernel -------------------------------------------------------------------------- */

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

/* Notes that row y of the tile holds a pixel over low (s_rows: a 64-bit row mask in two words);
 * the read first spares dense tiles a queue of atomics on two words. */
static __device__ __forceinline__ void canny_mark_row(unsigned *s_rows, int y)
{
    if (!((((volatile unsigned *)s_rows)[y / 32] >> (y % 32)) & 1))
        atomicOr(s_rows + y / 32, 1u << (y % 32));
}

/* The magnitudes of the tile and its ring (s_mag, MW x MW, 0 outside the image) and the sectors of
 * the tile (s_sec, laid out as s_mag) from the samples s_in (rows CANNY_SS apart, from column
 * x0 - CANNY_OX), marking in s_rows the rows that hold a magnitude over low: one thread walks
 * down a third of a column, keeping the row sums of its window in registers, so that each output
 * costs one row sum instead of the whole window. The sums are integers: their order does not
 * change them. */
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
                    s_sec[my * MW + gx - x0 + 1] = (uint8_t)canny_sector(dx, dy);
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
 * the magnitude exceeds low, the only ones the suppression reads, two at once from the packed
 * gradients (canny_sector_pair); the rows over low gather in a register, one atomic per word at
 * the end. */
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
    unsigned short *sec = (unsigned short *)(s_sec + mx);
    unsigned dea, sma, deb, smb, seen = 0; /* the rows over low: bit k + 1 row my + k, bit 0 my0 */
    canny_hpair(p + my0 * SW, &dea, &sma);
    canny_hpair(p + (my0 + 1) * SW, &deb, &smb);
    /* row my of the magnitudes from the row sums above (a), at (b) and below (read here) */
    auto row = [&](int my, unsigned bit) {
        unsigned dec, smc;
        canny_hpair(p + (my + 2) * SW, &dec, &smc);
        unsigned sx = dea + dec + (deb << 1), sy = smc + 0x04000400u - sma;
        unsigned p1 = sx + sy + (CANNY_MB - 2048) * k1, p2 = (CANNY_MB + 2048) * k1 - sx - sy;
        unsigned p3 = sx - sy + CANNY_MB * k1, p4 = sy - sx + CANNY_MB * k1;
        unsigned mb = __vmaxs2(__vimax3_s16x2(p1, p2, p3), p4);
        *(unsigned *)(s_mag + my * MW + mx) = mb;
        if ((mb + over) & 0x80008000u) {
            sec[my * (MW / 2)] = (unsigned short)canny_sector_pair(sx, sy);
            seen |= bit;
        }
        dea = deb, sma = smb, deb = dec, smb = smc;
    };
    /* a strip holds NR or NR + 1 rows: the odd one first, then NR unrolled whole (constant offsets,
     * no loop counter) */
    constexpr int NR = MW / CANNY_STRIPS;
    static_assert((MW + CANNY_STRIPS - 1) / CANNY_STRIPS == NR + 1, "strips of NR or NR + 1 rows");
    const int my = my0 + (my1 - my0 - NR);
    if (my != my0)
        row(my0, 1u);
#pragma unroll
    for (int k = 0; k < NR; k++)
        row(my + k, 2u << k);
    if (my == my0) /* no odd row; now bit i is row my0 + i */
        seen >>= 1;
    /* magnitude row my is tile row my - 1 (rows 0 and 65 are the ring: shifted out) */
    const canny_row rows = my0 ? (canny_row)seen << (my0 - 1) : (canny_row)(seen >> 1);
    if ((unsigned)rows)
        atomicOr(s_rows, (unsigned)rows);
    if (rows >> 32)
        atomicOr(s_rows + 1, (unsigned)(rows >> 32));
}

/* The smallest node label among the set border bits of all lanes (1 << 20 when none). */
static __device__ __forceinline__ int canny_min_bid(unsigned m, int l)
{
    return (int)__reduce_min_sync(CANNY_ALL, m ? (unsigned)canny_bid(l, __ffs(m) - 1) : 1u << 20);
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

/* A warp on a tile's candidate rows c0, c1 (lane l: rows 2l, 2l+1) and strong rows e0, e1: the edge
 * mask E into e0, e1 (the components of the candidates that hold a strong pixel, one flood from all
 * strong pixels), then one flood per remaining component that touches the tile border, from its
 * smallest border pixel. s_blab[id] receives, per candidate border pixel, its component's smallest
 * label, plus CANNY_SB when it lies in E (all of E counts as one component: joining components
 * that are edges anyway changes no pixel). */
static __device__ void canny_tile_label(canny_row c0, canny_row c1, int *s_blab, canny_row *e0, canny_row *e1)
{
    const int l = threadIdx.x % 32;
    canny_row a, b;
    unsigned cb, eb, rem;
    int lab;

    if (__any_sync(CANNY_ALL, (*e0 | *e1) != 0))
        canny_flood(c0, c1, e0, e1);
    cb = canny_border8(c0, c1, l);
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
        canny_flood(c0, c1, &a, &b);
        unsigned fb = canny_border8(a, b, l) & rem;
        for (unsigned m = fb; m; m &= m - 1)
            s_blab[canny_bid(l, __ffs(m) - 1)] = seed;
        rem &= ~fb;
    }
}

/* A tile's samples, rows y0 - HR .. y0 + 63 + HR, into s_in (column CANNY_OX is x0): 16-byte loads
 * of x0 - 16 .. x0 + 79 where those lie inside the image and `vec` is 16 (rows and base aligned),
 * 4-byte loads of x0 - 4 .. x0 + 67 where those lie inside (aligned words shifted into place when
 * `vec` is 1: rows off 4-byte alignment), else bytes with the border replicated. */
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
    } else if (rows && x0 >= 4 && x0 + CANNY_SPAN - 1 <= w) {
        /* rows at any alignment (a width not a multiple of 4): the same columns from the aligned
         * 4-byte words around them, each shared word the funnel shift of two (the words read reach
         * at most 3 bytes past the span, inside the row: hence the 3 more columns asked of w) */
        constexpr int Q = CANNY_SPAN / 4;
        for (int i = threadIdx.x; i < SW * Q; i += CANNY_THREADS) {
            int sy = i / Q, k = i - sy * Q;
            const uint8_t *p = d_gray + (size_t)(y0 + sy - HR) * w + x0 - 4;
            unsigned mis = (unsigned)((uintptr_t)p & 3);
            const unsigned *q = (const unsigned *)(p - mis) + k;
            unsigned lo = __ldg(q), hi = mis ? __ldg(q + 1) : 0u;
            ((unsigned *)(s_in + sy * CANNY_SS + CANNY_OX - 4))[k] = __funnelshift_r(lo, hi, 8 * mis);
        }
    } else {
        for (int i = threadIdx.x; i < SW * CANNY_SPAN; i += CANNY_THREADS) {
            int sy = i / CANNY_SPAN, sx = i - sy * CANNY_SPAN;
            int gx = min(max(x0 + sx - 4, 0), w - 1), gy = min(max(y0 + sy - HR, 0), h - 1);
            s_in[sy * CANNY_SS + CANNY_OX - 4 + sx] = __ldg(d_gray + (size_t)gy * w + gx);
        }
    }
}

/* Suppression and thresholds at tile pixel (lx, ly) when `in` (inside the image): 0, or 1 for a
 * candidate (a local maximum over low), 2 for a strong one (over high too). Without a branch: a
 * pixel at or under low reads offset 0 (itself, which it does not beat), so that a warp runs one
 * path whatever its pixels. */
template <typename MT>
static __device__ __forceinline__ int canny_nms(const MT *s_mag, const uint8_t *s_sec, int lx, int ly, int low,
                                                int high, bool in)
{
    const int i = (ly + 1) * CANNY_MAGW + lx + 1, m = s_mag[i];
    const bool go = in && m > low;
    const int code = go ? s_sec[i] : 0, off = code & (CANNY_NTIE - 1);
    const bool keep = go & (m > (int)s_mag[i - off]) & (m + (code >> 7) > (int)s_mag[i + off]); /* the tie: >= */

    return keep ? (m > high ? 2 : 1) : 0;
}

/* The suppression and thresholds of the tile's rows that hold a magnitude over low (s_rows) into
 * s_cand and s_strong (the other rows keep their 0): warp wp takes rows wp, wp + CANNY_WARPS, ...,
 * lane l columns l and l + 32, so a row's masks are the warp's ballots. INNER: the tile lies inside
 * the image (no bounds). Returns whether the thread's warp found a candidate. */
template <bool INNER, typename MT>
static __device__ __forceinline__ int canny_suppress(const MT *s_mag, const uint8_t *s_sec, const unsigned *s_rows,
                                                     unsigned (*s_cand)[2], unsigned (*s_strong)[2], int x0,
                                                     int y0, int w, int h, int low, int high)
{
    const int l = threadIdx.x % 32, wp = threadIdx.x / 32;
    const canny_row over = (s_rows[0] | (canny_row)s_rows[1] << 32) >> wp; /* bit i: row wp + i */
    const bool c0in = INNER || x0 + l < w, c1in = INNER || x0 + l + 32 < w;
    int any = 0;

#pragma unroll
    for (int k = 0; k < CANNY_T / CANNY_WARPS; k++) {
        const int ly = wp + k * CANNY_WARPS;
        if (!((over >> (k * CANNY_WARPS)) & 1))
            continue;
        const bool rin = INNER || y0 + ly < h;
        const int c0 = canny_nms(s_mag, s_sec, l, ly, low, high, rin && c0in);
        const int c1 = canny_nms(s_mag, s_sec, l + 32, ly, low, high, rin && c1in);
        const unsigned cand0 = __ballot_sync(CANNY_ALL, c0 != 0), cand1 = __ballot_sync(CANNY_ALL, c1 != 0);
        const unsigned strong0 = __ballot_sync(CANNY_ALL, c0 == 2), strong1 = __ballot_sync(CANNY_ALL, c1 == 2);
        any |= (cand0 | cand1) != 0;
        if (l == 0) {
            *(uint2 *)s_cand[ly] = make_uint2(cand0, cand1);
            *(uint2 *)s_strong[ly] = make_uint2(strong0, strong1);
        }
    }
    return any;
}

/* One 64 x 64 tile: samples with a halo of r+1 (replicated at the image border), magnitudes with
 * a ring of 1 (0 outside the image, as cv::Canny frames them), suppression (on the rows that hold
 * a magnitude over low) and thresholds into row masks of candidates and strong pixels. A tile
 * without candidates gets state 0 (slot CANNY_STATE of d_flag) and, where ovec (the map's rows take
 * 16-byte stores), its map of zeros here (else k_canny_expand writes it); a tile with candidates
 * gets state CANNY_HAS_CAND and its candidate and strong masks in the tail of its slots in d_parent
 * and d_flag, for k_canny_label. */
template <int R, bool L2>
__global__ void __launch_bounds__(CANNY_THREADS, CANNY_BLOCKS)
    k_canny_tile(const uint8_t *__restrict__ d_gray, int w, int h, int low, int high, int *__restrict__ d_parent,
                 int *__restrict__ d_flag, int vec, uint8_t *__restrict__ d_out, int ovec)
{
    constexpr int HR = R + 1, SW = CANNY_T + 2 * HR, MW = CANNY_T + 2;
    __shared__ __align__(16) uint8_t s_in[SW * CANNY_SS];
    using MT = typename std::conditional<L2, int, unsigned short>::type; /* L1 magnitudes fit 16 bits */
    __shared__ __align__(16) MT s_mag[MW * MW];
    __shared__ __align__(4) uint8_t s_sec[MW * MW]; /* the sectors, laid out as s_mag */
    __shared__ __align__(8) unsigned s_cand[CANNY_T][2];
    __shared__ __align__(8) unsigned s_strong[CANNY_T][2];
    __shared__ unsigned s_rows[2]; /* bit y: a pixel of row y exceeds low */
    const int tid = threadIdx.x, x0 = blockIdx.x * CANNY_T, y0 = blockIdx.y * CANNY_T;
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;

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
    const int any = inner ? canny_suppress<true>(s_mag, s_sec, s_rows, s_cand, s_strong, x0, y0, w, h, low, high)
                          : canny_suppress<false>(s_mag, s_sec, s_rows, s_cand, s_strong, x0, y0, w, h, low, high);
    canny_row *cm = (canny_row *)(d_parent + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    canny_row *em = (canny_row *)(d_flag + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    if (!__syncthreads_or(any)) { /* no candidate: the state says so (the later kernels read no more of
                                   * the tile's slots) and the map is 0 */
        if (tid == 0)
            d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] = 0;
        if (ovec) /* else k_canny_expand writes it */
            canny_write_map(d_out, w, h, x0, y0, NULL, tid, CANNY_THREADS);
        return;
    }
    if (tid < CANNY_T) { /* for k_canny_label, which decides the tile */
        cm[tid] = s_cand[tid][0] | (canny_row)s_cand[tid][1] << 32;
        em[tid] = s_strong[tid][0] | (canny_row)s_strong[tid][1] << 32;
    }
    if (tid == 0)
        d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] = CANNY_HAS_CAND;
}

/* One warp per tile with candidates, after k_canny_tile: canny_tile_label on the tile's rows, then
 * the tile's edge mask E (d_flag's mask slots), its state (CANNY_HAS_NODE where a candidate lies on
 * its border) and per border pixel its node's parent (-1 when not a candidate; CANNY_EDGES of tile
 * 0 when in E, since all edges may form one component; else its component's smallest node) and
 * flag (1: in E). A tile without nodes gets its map E here where ovec; otherwise k_canny_expand
 * writes it. Its own kernel because the floods are chains of dependent shuffles on one warp: here
 * an SM holds many tiles' warps at once, where the tile kernel holds CANNY_BLOCKS. */
__global__ void __launch_bounds__(32 * CANNY_LABEL_WARPS, CANNY_LABEL_BLOCKS)
    k_canny_label(int w, int h, int tiles_x, int tiles, int *__restrict__ d_parent, int *__restrict__ d_flag,
                  uint8_t *__restrict__ d_out, int ovec)
{
    __shared__ int s_blab[CANNY_LABEL_WARPS][CANNY_PERIM];
    __shared__ canny_row s_map[CANNY_LABEL_WARPS][CANNY_T];
    const int wi = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32, tile = (int)blockIdx.x * CANNY_LABEL_WARPS + wi;

    if (tile >= tiles || d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] == 0) /* the warp leaves whole */
        return;
    int *blab = s_blab[wi];
    const canny_row *cm = (const canny_row *)(d_parent + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    canny_row *em = (canny_row *)(d_flag + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    const canny_row c0 = cm[2 * l], c1 = cm[2 * l + 1];
    canny_row e0 = em[2 * l], e1 = em[2 * l + 1];

    for (int i = l; i < CANNY_PERIM; i += 32)
        blab[i] = -1;
    __syncwarp();
    canny_tile_label(c0, c1, blab, &e0, &e1);
    em[2 * l] = e0, em[2 * l + 1] = e1;
    if (__any_sync(CANNY_ALL, canny_border8(c0, c1, l) != 0)) {
        if (l == 0)
            d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] = CANNY_HAS_CAND | CANNY_HAS_NODE;
    } else { /* no node: nothing outside the tile changes its map, E */
        if (l == 0)
            d_flag[(size_t)tile * CANNY_SLOTS + CANNY_STATE] = CANNY_HAS_CAND;
        s_map[wi][2 * l] = e0, s_map[wi][2 * l + 1] = e1;
        __syncwarp();
        if (ovec) /* else k_canny_expand writes it from the mask slots */
            canny_write_map(d_out, w, h, (tile % tiles_x) * CANNY_T, (tile / tiles_x) * CANNY_T, s_map[wi], l, 32);
    }
    __syncwarp();
    for (int i = l; i < CANNY_PERIM; i += 32) {
        int v = blab[i];
        size_t node = (size_t)tile * CANNY_SLOTS + i;
        d_parent[node] = v < 0 ? -1 : v & CANNY_SB ? CANNY_EDGES : tile * CANNY_SLOTS + v;
        d_flag[node] = v >= 0 && (v & CANNY_SB);
    }
}

/* ---- launcher --------------------------------------------------------------------------------- */

template <int R, bool L2>
static void canny_tile_enqueue(const struct canny_dev *d, int low, int high, int ovec)
{
    dim3 grid(div_up(d->w, CANNY_T), div_up(d->h, CANNY_T));
    int vec = d->w % 16 == 0 && (uintptr_t)d->d_gray % 16 == 0 ? 16
              : d->w % 4 == 0 && (uintptr_t)d->d_gray % 4 == 0 ? 4
                                                                : 1;
    k_canny_tile<R, L2><<<grid, CANNY_THREADS, 0, d->stream>>>(d->d_gray, d->w, d->h, low, high, d->d_parent,
                                                                d->d_flag, vec, d->d_out, ovec);
}

/* k_canny_label behind the tile kernel. */
static cudaError_t canny_label_enqueue(const struct canny_dev *d, int ovec)
{
    int tiles_x = div_up(d->w, CANNY_T), tiles = tiles_x * div_up(d->h, CANNY_T);

    k_canny_label<<<div_up(tiles, CANNY_LABEL_WARPS), 32 * CANNY_LABEL_WARPS, 0, d->stream>>>(
        d->w, d->h, tiles_x, tiles, d->d_parent, d->d_flag, d->d_out, ovec);
    return cudaGetLastError();
}

cudaError_t canny_tile_launch(const struct canny_dev *d, const struct canny_params *p, int ovec)
{
    int low, high;

    canny_ints(p, &low, &high);
    switch (p->aperture * 2 + !!p->l2gradient) {
    case 6: canny_tile_enqueue<1, false>(d, low, high, ovec); break;
    case 7: canny_tile_enqueue<1, true>(d, low, high, ovec); break;
    case 10: canny_tile_enqueue<2, false>(d, low, high, ovec); break;
    case 11: canny_tile_enqueue<2, true>(d, low, high, ovec); break;
    case 14: canny_tile_enqueue<3, false>(d, low, high, ovec); break;
    default: canny_tile_enqueue<3, true>(d, low, high, ovec); break;
    }
    cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : canny_label_enqueue(d, ovec);
}
