/* canny.cu — Canny on the device with cv::Canny's map: gray conversion and pre-blur, one tiled
 * kernel for Sobel, magnitude, suppression, thresholds and the hysteresis inside each tile, then
 * hysteresis across tiles as connected components of the tiles' border pixels (docs/gpu.md).
 *
 * Why it is exact: the derivatives are integer sums (the order of the terms does not matter), the
 * magnitude, the sector test and the tie rules are the integer expressions of cpu_ref/canny.c, and
 * the hysteresis result is a property of the 8-connected components of the candidates (an edge is
 * a candidate whose component holds a pixel above the high threshold), which any correct labelling
 * finds, in whatever order its unions run. */
#include <string.h>

#include "canny.h"
#include "gconv_internal.h"

#define CANNY_T 64                         /* tile side */
#define CANNY_PERIM (4 * CANNY_T - 4)      /* border pixels of a tile: the global nodes per tile */
#define CANNY_THREADS 256                  /* per tile */
#define CANNY_ROWS (CANNY_THREADS / CANNY_T) /* rows a tile's threads cover at once */
#define CANNY_PX (CANNY_T * CANNY_T / CANNY_THREADS) /* pixels per thread */
#define CANNY_TG22 13573u                  /* tan(22.5 deg) in Q15, cv::Canny's sector test */
#define CANNY_EDGE 255                     /* codes of the map between the kernels: 0 none, 255 edge, */
#define CANNY_STRONG (1 << 30)             /* 1..CANNY_PERIM waits for node code-1 of its tile */

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

/* ---- union-find, shared by the tile (shared memory) and the global border graph ----------- */

/* Labels only ever decrease and point to a member of the same component with a smaller or equal
 * index; a root points to itself. Reads are volatile: other threads lower labels meanwhile. */
static __device__ __forceinline__ int uf_find(const volatile int *lab, int x)
{
    int p;
    while ((p = lab[x]) != x)
        x = p;
    return x;
}

/* uf_find while other threads link: path splitting (each visited label moves on to its
 * grandparent, with atomicMin so that it only ever decreases) keeps the trees shallow, so that a
 * chain of unions (a spiral) does not make every later find walk the whole chain. */
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

/* ---- the tile kernel -------------------------------------------------------------------------- */

/* Label of tile pixel (lx, ly): the border pixels first (top row, bottom row, left then right
 * column without the corners), so that the root of a component, its smallest label, is a border
 * pixel whenever the component touches the border, and names that component's global node. */
static __device__ __forceinline__ int canny_id(int lx, int ly)
{
    if (ly == 0)
        return lx;
    if (ly == CANNY_T - 1)
        return CANNY_T + lx;
    if (lx == 0)
        return 2 * CANNY_T + ly - 1;
    if (lx == CANNY_T - 1)
        return 3 * CANNY_T - 2 + ly - 1;
    return CANNY_PERIM + (ly - 1) * (CANNY_T - 2) + lx - 1;
}

/* The global node of image pixel (x, y), which must lie on its tile's border. */
static __device__ __forceinline__ int canny_node(int x, int y, int tiles_x)
{
    return ((y / CANNY_T) * tiles_x + x / CANNY_T) * CANNY_PERIM + canny_id(x % CANNY_T, y % CANNY_T);
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

/* dx, dy of the window whose top-left sample is p (rows `stride` bytes apart). */
template <int R>
static __device__ __forceinline__ void canny_sobel(const uint8_t *p, int stride, int *dx, int *dy)
{
    int sx = 0, sy = 0;
#pragma unroll
    for (int i = 0; i <= 2 * R; i++) {
        int a = 0, b = 0;
#pragma unroll
        for (int j = 0; j <= 2 * R; j++) {
            int v = p[i * stride + j];
            a += canny_de(R, j) * v;
            b += canny_sm(R, j) * v;
        }
        sx += canny_sm(R, i) * a;
        sy += canny_de(R, i) * b;
    }
    *dx = R == 3 ? canny_div16(sx) : sx;
    *dy = R == 3 ? canny_div16(sy) : sy;
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

/* One 64 x 64 tile: samples with a halo of r+1 (replicated at the image border), magnitudes with
 * a ring of 1 (0 outside the image, as cv::Canny frames them), suppression and thresholds, then
 * union-find over the tile's 8-connected candidates. Writes per pixel 255 (its component holds a
 * strong pixel), 0 (not a candidate, or a component inside the tile without one) or 1 + the label
 * of its component's root when that component touches the tile border and holds no strong pixel;
 * per border pixel its node's parent (the root's node, -1 when not a candidate) and flag (1: the
 * component holds a strong pixel). */
template <int R, bool L2>
__global__ void __launch_bounds__(CANNY_THREADS) k_canny_tile(const uint8_t *__restrict__ d_gray, int w, int h,
                                                              int low, int high, uint8_t *__restrict__ d_code,
                                                              int *__restrict__ d_parent, int *__restrict__ d_flag)
{
    constexpr int HR = R + 1, SW = CANNY_T + 2 * HR, MW = CANNY_T + 2;
    __shared__ uint8_t s_in[SW * SW];
    __shared__ int s_mag[MW * MW];
    __shared__ uint8_t s_sec[CANNY_T * CANNY_T];
    __shared__ uint8_t s_cls[CANNY_T * CANNY_T];
    __shared__ int s_lab[CANNY_T * CANNY_T];
    __shared__ unsigned s_rowbits[CANNY_T][2];
    const int tid = threadIdx.x, x0 = blockIdx.x * CANNY_T, y0 = blockIdx.y * CANNY_T;
    const int tile = blockIdx.y * gridDim.x + blockIdx.x, lx = tid % CANNY_T;
    int cls[CANNY_PX], root[CANNY_PX];

    for (int i = tid; i < SW * SW; i += CANNY_THREADS) {
        int sy = i / SW, sx = i - sy * SW;
        int gx = min(max(x0 + sx - HR, 0), w - 1), gy = min(max(y0 + sy - HR, 0), h - 1);
        s_in[i] = __ldg(d_gray + (size_t)gy * w + gx);
    }
    __syncthreads();
    for (int i = tid; i < MW * MW; i += CANNY_THREADS) {
        int my = i / MW, mx = i - my * MW, gx = x0 + mx - 1, gy = y0 + my - 1, m = 0;
        if ((unsigned)gx < (unsigned)w && (unsigned)gy < (unsigned)h) {
            int dx, dy;
            canny_sobel<R>(s_in + my * SW + mx, SW, &dx, &dy);
            m = L2 ? dx * dx + dy * dy : abs(dx) + abs(dy);
            if (mx >= 1 && mx <= CANNY_T && my >= 1 && my <= CANNY_T)
                s_sec[(my - 1) * CANNY_T + mx - 1] = (uint8_t)canny_sector(dx, dy);
        }
        s_mag[i] = m;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < CANNY_PX; k++) {
        int ly = tid / CANNY_T + k * CANNY_ROWS, c = 0;
        if (x0 + lx < w && y0 + ly < h) {
            const int *mp = s_mag + (ly + 1) * MW + lx + 1;
            int m = mp[0], sec = s_sec[ly * CANNY_T + lx], keep;
            if (m > low) {
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
        cls[k] = c;
        s_cls[ly * CANNY_T + lx] = (uint8_t)c;
        unsigned bits = __ballot_sync(0xffffffffu, c != 0);
        if (lx % 32 == 0)
            s_rowbits[ly][lx / 32] = bits;
    }
    __syncthreads();
    /* Each horizontal run of candidates starts as one tree of depth 1 under its smallest label (its
     * first pixel, or its last on the right column), so that the unions below are only the
     * vertical ones, about one per pair of touching runs: a dense tile then makes a few hundred
     * unions instead of four per pixel, all contending for the same roots. */
#pragma unroll
    for (int k = 0; k < CANNY_PX; k++) {
        int ly = tid / CANNY_T + k * CANNY_ROWS;
        unsigned long long m = s_rowbits[ly][0] | (unsigned long long)s_rowbits[ly][1] << 32;
        unsigned long long below = ~m & ((1ull << lx) - 1), above = ~m & ~((2ull << lx) - 1);
        int start = below ? 64 - __clzll(below) : 0, end = above ? __ffsll(above) - 2 : CANNY_T - 1;
        int rep = canny_id(start, ly);
        if (end == CANNY_T - 1 && canny_id(end, ly) < rep)
            rep = canny_id(end, ly);
        s_lab[canny_id(lx, ly)] = cls[k] ? rep : canny_id(lx, ly);
    }
    __syncthreads();
    /* a candidate joins the run above it at the first pixel of each stretch where they touch: the
     * pixel above; else above-left unless the left neighbour joined it; else above-right unless
     * the right neighbour joins it */
#pragma unroll
    for (int k = 0; k < CANNY_PX; k++) {
        int ly = tid / CANNY_T + k * CANNY_ROWS, id = canny_id(lx, ly);
        const uint8_t *up = s_cls + (ly - 1) * CANNY_T + lx, *row = s_cls + ly * CANNY_T + lx;
        if (!cls[k] || ly == 0)
            continue;
        int l = lx > 0 && row[-1], r = lx < CANNY_T - 1 && row[1];
        int ul = lx > 0 && up[-1], ur = lx < CANNY_T - 1 && up[1];
        if (up[0]) {
            if (!(l && ul))
                uf_union(s_lab, id, canny_id(lx, ly - 1));
        } else {
            if (ul && !l)
                uf_union(s_lab, id, canny_id(lx - 1, ly - 1));
            if (ur && !r)
                uf_union(s_lab, id, canny_id(lx + 1, ly - 1));
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < CANNY_PX; k++)
        root[k] = cls[k] ? uf_find(s_lab, canny_id(lx, tid / CANNY_T + k * CANNY_ROWS)) : -1;
    __syncthreads();
    /* one atomic per distinct root per warp: a large component's strong pixels would otherwise
     * all hit one shared word */
#pragma unroll
    for (int k = 0; k < CANNY_PX; k++) {
        unsigned same = __match_any_sync(0xffffffffu, cls[k] == 2 ? root[k] : -1);
        if (cls[k] == 2 && (threadIdx.x % 32) == __ffs(same) - 1)
            atomicOr(s_lab + root[k], CANNY_STRONG);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < CANNY_PX; k++) {
        int ly = tid / CANNY_T + k * CANNY_ROWS, id = canny_id(lx, ly), strong = 0, code = 0;
        if (cls[k]) {
            strong = (s_lab[root[k]] & CANNY_STRONG) != 0;
            code = strong ? CANNY_EDGE : root[k] < CANNY_PERIM ? root[k] + 1 : 0;
        }
        if (x0 + lx < w && y0 + ly < h)
            d_code[(size_t)(y0 + ly) * w + x0 + lx] = (uint8_t)code;
        if (id < CANNY_PERIM) {
            size_t node = (size_t)tile * CANNY_PERIM + id;
            d_parent[node] = cls[k] ? tile * CANNY_PERIM + root[k] : -1;
            d_flag[node] = strong;
        }
    }
}

/* ---- hysteresis across tiles ----------------------------------------------------------------- */

/* One thread per pixel of a tile's right column and bottom row: joins its node with the candidate
 * neighbours in the tiles to the right and below (each pair of 8-neighbours in two tiles is seen
 * from its left or upper pixel). */
__global__ void k_canny_seams(int w, int h, int tiles_x, int tiles, int *d_parent)
{
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    int tile = (int)(t / (2 * CANNY_T)), k = (int)(t % (2 * CANNY_T)), x, y, a;

    if (tile >= tiles)
        return;
    x = (tile % tiles_x) * CANNY_T + (k < CANNY_T ? CANNY_T - 1 : k - CANNY_T);
    y = (tile / tiles_x) * CANNY_T + (k < CANNY_T ? k : CANNY_T - 1);
    if (x >= w || y >= h || d_parent[a = canny_node(x, y, tiles_x)] < 0)
        return;
    for (int d = 0; d <= 2; d++) { /* across, then the two diagonals, which only matter without it */
        int e = d == 0 ? 0 : d == 1 ? -1 : 1, b;
        int nx = k < CANNY_T ? x + 1 : x + e, ny = k < CANNY_T ? y + e : y + 1;
        if ((unsigned)nx >= (unsigned)w || (unsigned)ny >= (unsigned)h || d_parent[b = canny_node(nx, ny, tiles_x)] < 0)
            continue;
        uf_union(d_parent, a, b);
        if (d == 0) /* the diagonal neighbours touch that one: joined through it */
            return;
    }
}

/* One thread per node: points each candidate node at its root and raises bit 2 of the root's flag
 * when the node's component in its tile holds a strong pixel. */
__global__ void k_canny_roots(int nodes, int *d_parent, int *d_flag)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x, r;

    if (i >= nodes || d_parent[i] < 0)
        return;
    r = uf_find_split(d_parent, i);
    atomicMin(d_parent + i, r);
    if (d_flag[i] & 1)
        atomicOr(d_flag + r, 2);
}

/* The code of one waiting pixel, linear index j, resolved through its node's root. */
static __device__ __forceinline__ uint8_t canny_wait(int code, size_t j, int w, int tiles_x, const int *d_parent,
                                                     const int *d_flag)
{
    int y = (int)(j / w), x = (int)(j - (size_t)y * w);
    int node = ((y / CANNY_T) * tiles_x + x / CANNY_T) * CANNY_PERIM + code - 1;
    return (d_flag[d_parent[node]] & 2) ? CANNY_EDGE : 0;
}

/* Every pixel still waiting becomes 255 or 0; 16 bytes a thread, most of them already final. */
__global__ void k_canny_resolve(uint8_t *d_code, size_t n, int w, int tiles_x, const int *__restrict__ d_parent,
                                const int *__restrict__ d_flag)
{
    size_t j0 = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 16;

    if (j0 >= n)
        return;
    if (j0 + 16 <= n) {
        uint4 v = *(const uint4 *)(d_code + j0);
        unsigned u[4] = {v.x, v.y, v.z, v.w}, busy = 0;
        for (int q = 0; q < 4; q++)
            busy |= ~(__vcmpeq4(u[q], 0u) | __vcmpeq4(u[q], 0xffffffffu));
        if (!busy)
            return;
    }
    for (size_t j = j0; j < j0 + 16 && j < n; j++) {
        int c = d_code[j];
        if (c != 0 && c != CANNY_EDGE)
            d_code[j] = canny_wait(c, j, w, tiles_x, d_parent, d_flag);
    }
}

/* ---- launchers -------------------------------------------------------------------------------- */

size_t canny_nodes(int w, int h)
{
    return (size_t)div_up(w, CANNY_T) * div_up(h, CANNY_T) * CANNY_PERIM;
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
static void canny_tile_launch(const struct canny_dev *d, int low, int high)
{
    dim3 grid(div_up(d->w, CANNY_T), div_up(d->h, CANNY_T));
    k_canny_tile<R, L2><<<grid, CANNY_THREADS, 0, d->stream>>>(d->d_gray, d->w, d->h, low, high, d->d_out,
                                                                d->d_parent, d->d_flag);
}

cudaError_t canny_core(const struct canny_dev *d, const struct canny_params *p, const char **what)
{
    int low, high, tiles_x = div_up(d->w, CANNY_T), tiles = tiles_x * div_up(d->h, CANNY_T);
    int nodes = tiles * CANNY_PERIM;
    size_t n = (size_t)d->w * d->h;
    cudaError_t e;

    canny_ints(p, &low, &high);
    *what = "canny tile kernel";
    switch (p->aperture * 2 + !!p->l2gradient) {
    case 6: canny_tile_launch<1, false>(d, low, high); break;
    case 7: canny_tile_launch<1, true>(d, low, high); break;
    case 10: canny_tile_launch<2, false>(d, low, high); break;
    case 11: canny_tile_launch<2, true>(d, low, high); break;
    case 14: canny_tile_launch<3, false>(d, low, high); break;
    default: canny_tile_launch<3, true>(d, low, high); break;
    }
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    *what = "canny seam kernel";
    k_canny_seams<<<div_up(tiles * 2 * CANNY_T, 256), 256, 0, d->stream>>>(d->w, d->h, tiles_x, tiles, d->d_parent);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    *what = "canny roots kernel";
    k_canny_roots<<<div_up(nodes, 256), 256, 0, d->stream>>>(nodes, d->d_parent, d->d_flag);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    *what = "canny resolve kernel";
    k_canny_resolve<<<(unsigned)((n + 16 * 256 - 1) / (16 * 256)), 256, 0, d->stream>>>(d->d_out, n, d->w, tiles_x,
                                                                                      d->d_parent, d->d_flag);
    return cudaGetLastError();
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
