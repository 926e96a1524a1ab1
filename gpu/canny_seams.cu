/* canny_seams.cu — Canny's hysteresis across tiles and its launcher: the border pixels of the tiles
 * (the nodes canny_tile.cu writes) joined by union-find across the seams between tiles, then a last
 * pass per tile with nodes that grows its edges from the border pixels whose component holds an
 * edge and writes its map; where the map's rows are off 16-byte alignment, one more pass writes
 * the whole map from the tiles' edge masks in aligned 16-byte words. */
#include "canny_common.cuh"

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

/* ---- programmatic dependent launch ----------------------------------------------------------- */

/* From compute capability 9.0 the seam and final kernels are launched as dependents of the kernel
 * before them (canny_launch_dependent): they wait on the device for its completion and its writes
 * (canny_wait_prior) instead of the launch waiting for it, which takes the launch gap out of the
 * time between the kernels. The seam kernel lets the final kernel's blocks start at once
 * (canny_let_dependents_start); the tile kernel does not, so the seam blocks come as its blocks
 * finish (an early start there was measured no faster). Compiled for an earlier architecture both
 * are empty and the launches are plain (canny_seams_pdl). */
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

/* The global node of image pixel (x, y), which must lie on its tile's border. */
static __device__ __forceinline__ int canny_node(int x, int y, int tiles_x)
{
    return ((y / CANNY_T) * tiles_x + x / CANNY_T) * CANNY_SLOTS + canny_id(x % CANNY_T, y % CANNY_T);
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
 * a step) where `vec` (rows and base allow 16-byte stores), else back into the tile's edge mask
 * (d_flag's mask slots) for k_canny_expand. */
__global__ void __launch_bounds__(128) k_canny_final(uint8_t *__restrict__ d_out, int w, int h, int tiles_x,
                                                     int tiles, int vec, const int *__restrict__ d_parent,
                                                     int *__restrict__ d_flag)
{
    __shared__ canny_row s_rows[4][CANNY_T];
    const int wp = threadIdx.x / 32, l = threadIdx.x % 32, tile = blockIdx.x * 4 + wp;
    const canny_row *cm;
    canny_row *em;
    canny_row c0, c1, r0, r1;
    unsigned wait, seed = 0;
    int edges;

    canny_wait_prior(); /* the unions of the seam kernel */
    if (tile >= tiles)
        return;
    if (!canny_has_nodes(d_flag, tile))
        return; /* the tile kernel wrote its map (vec), or left E for k_canny_expand */
    cm = (const canny_row *)(d_parent + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
    em = (canny_row *)(d_flag + (size_t)tile * CANNY_SLOTS + CANNY_MASKS);
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
    if (!vec) { /* the lane's own rows, read above */
        em[2 * l] = r0, em[2 * l + 1] = r1;
        return;
    }
    s_rows[wp][2 * l] = r0, s_rows[wp][2 * l + 1] = r1;
    __syncwarp();
    canny_write_map(d_out, w, h, (tile % tiles_x) * CANNY_T, (tile / tiles_x) * CANNY_T, s_rows[wp], l, 32);
}

/* Bits x .. x + n - 1 (n <= 16, x + n <= w) of the map's row y: of the one or two tiles they lie in,
 * 0 for a tile without candidates (its state), else its edge mask, final once k_canny_final ran. */
static __device__ __forceinline__ unsigned canny_map_bits(const int *__restrict__ d_flag, int tiles_x, int y,
                                                          int x, int n)
{
    const int s = x % CANNY_T;
    const size_t tile = (size_t)(y / CANNY_T) * tiles_x + x / CANNY_T;
    canny_row v = 0;

    for (int k = 0; k < (s + n > CANNY_T ? 2 : 1); k++) {
        const int *slots = d_flag + (tile + k) * CANNY_SLOTS;
        canny_row r = slots[CANNY_STATE] ? ((const canny_row *)(slots + CANNY_MASKS))[y % CANNY_T] : 0;
        v |= k ? r << (CANNY_T - s) : r >> s;
    }
    return (unsigned)v & ((1u << n) - 1);
}

/* The whole map where its rows are off 16-byte alignment (k_canny_final's `vec` 0), one aligned
 * 16-byte word of d_out a thread, rather than each tile's rows cut at every word boundary they
 * cross (three full words and two partial ones a row: slower, docs/gpu.md). Word q of row y: the
 * words whose first byte of the map lies in row y, q counted from the one that holds the row's
 * first byte; a word may run on into the next rows. wpr: words a row at most (w / 16 + 2). */
__global__ void __launch_bounds__(256) k_canny_expand(uint8_t *__restrict__ d_out, int w, int h, int tiles_x,
                                                      unsigned wpr, const int *__restrict__ d_flag)
{
    const unsigned t = blockIdx.x * 256 + threadIdx.x, y = t / wpr, n = (unsigned)w * (unsigned)h;
    const unsigned head = (unsigned)((uintptr_t)d_out & 15); /* map byte i lies at aligned offset i + head */
    unsigned first, start, lo, hi, bits = 0;

    canny_wait_prior(); /* the final kernel's masks */
    if (y >= (unsigned)h)
        return;
    /* the first word owned by row y: the one holding its first byte, unless that word's first byte
     * lies in the row before (row 0 owns word 0 whatever) */
    first = (y * w + head) / 16 + (y > 0 && (y * w + head) % 16 != 0);
    start = (first + t % wpr) * 16; /* aligned offset of the word */
    if (start >= (y + 1) * w + head)
        return; /* not row y's: its first byte lies further down */
    lo = start < head ? head - start : 0;
    hi = n + head - start < 16 ? n + head - start : 16;
    for (unsigned k = lo, i = start + lo - head; k < hi;) { /* i: map byte of word byte k */
        unsigned ry = i / w, x = i - ry * w, c = min(hi - k, (unsigned)w - x);
        bits |= canny_map_bits(d_flag, tiles_x, (int)ry, (int)x, (int)c) << k;
        k += c, i += c;
    }
    if (lo == 0 && hi == 16)
        *(uint4 *)(d_out - head + start) = canny_bytes16(bits);
    else
        canny_store_part(d_out - head + start, bits, (int)lo, (int)hi);
}

/* ---- launcher --------------------------------------------------------------------------------- */

/* Whether the seam and final kernels go as dependent launches: the device runs code compiled
 * for compute capability 9.0 or later, in which they wait for the kernel before them. */
static bool canny_pdl_query(void)
{
    cudaFuncAttributes fa;

    return cudaFuncGetAttributes(&fa, k_canny_seams) == cudaSuccess && fa.ptxVersion >= 90 &&
           fa.binaryVersion >= 90 && cudaFuncGetAttributes(&fa, k_canny_final) == cudaSuccess &&
           fa.ptxVersion >= 90 && fa.binaryVersion >= 90;
}

/* canny_pdl_query, asked once per device (a server may drive several kinds): asked per job, its
 * two driver calls sat between the job's start and its first launch. */
int canny_seams_pdl(void)
{
    static signed char pdl[64]; /* by device number: 0 not asked yet, 1 no, 2 yes */
    int dev = 0;

    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
        return 0;
    if (!__atomic_load_n(&pdl[dev], __ATOMIC_ACQUIRE))
        __atomic_store_n(&pdl[dev], (signed char)(canny_pdl_query() ? 2 : 1), __ATOMIC_RELEASE);
    return __atomic_load_n(&pdl[dev], __ATOMIC_ACQUIRE) == 2;
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

cudaError_t canny_seams_launch(const struct canny_dev *d, int pdl, int ovec, const char **what)
{
    int tiles_x = div_up(d->w, CANNY_T), tiles = tiles_x * div_up(d->h, CANNY_T);
    unsigned wpr = (unsigned)d->w / 16 + 2;
    cudaError_t e;

    *what = "canny seam kernel";
    if ((e = canny_launch_dependent(pdl, k_canny_seams, div_up(tiles * 2 * CANNY_T, 256), 256, d->stream, d->w, d->h,
                                    tiles_x, tiles, d->d_parent, (const int *)d->d_flag)) != cudaSuccess)
        return e;
    *what = "canny final kernel";
    e = canny_launch_dependent(pdl, k_canny_final, div_up(tiles, 4), 128, d->stream, d->d_out, d->w, d->h,
                               tiles_x, tiles, ovec, (const int *)d->d_parent, d->d_flag);
    if (e != cudaSuccess || ovec)
        return e;
    *what = "canny map kernel";
    return canny_launch_dependent(pdl, k_canny_expand, div_up((int)(wpr * d->h), 256), 256, d->stream,
                                  d->d_out, d->w, d->h, tiles_x, wpr, (const int *)d->d_flag);
}
