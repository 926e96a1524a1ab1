/* png_kernels.cu — a PNG's inflated rows on the device: the row filters undone by a wavefront of
 * threads, then the expansion to the decoded channels (palette, tRNS key) as pngio_decode does.
 *
 * Exactness: every byte is reconstructed by the formulas of the PNG specification (None, Sub, Up,
 * Average, Paeth on bytes, the left neighbour bpp bytes back, the row above already reconstructed)
 * in 8-bit wrap-around arithmetic, the same as server/codec/png_unfilter.c's byte loops; the
 * order of the work changes, not one value. The expansion copies the same table entries and key
 * test as png_decode.c's. test_gpu_png compares the two bit for bit. */
#include <string.h>

#include "gconv_internal.h"
#include "ginflate.h"
#include "png_layout.h"

/* Unfiltering: one block per image. Its threads own consecutive rows (thread t row r0 + t of each
 * group of UNF_THREADS rows) and walk them in chunks of UNF_CHUNK bytes, thread t one step behind
 * thread t - 1: at step k thread t does chunk k - t, whose upper row (chunk k - t and the bpp
 * bytes before it) thread t - 1 finished at step k - 1, and whose left bytes it did itself. A
 * __syncthreads() per step orders the two. A group of g rows and c chunks takes c + g - 1 steps.
 *
 * What a step costs is memory requests, not arithmetic: the threads of a warp read and write 32
 * different rows, so every byte access of a warp is 32 requests. So the row above comes from the
 * thread above through shared memory (its chunk of the step before; from memory only for a group's
 * first row, which the group before finished), the left and upper-left bytes stay in registers,
 * and a whole chunk is read as the aligned 16-byte words around it and written as one aligned
 * 16-byte word a step: the word that holds the chunk's first byte, whose earlier bytes are the end
 * of the thread's own previous chunk (so the end of each chunk goes out with the next one, and a
 * row's first and last bytes one by one, never touching a byte of another row). */
#define UNF_THREADS 1024
#define UNF_CHUNK 16 /* at least 4 (bpp): a chunk's upper-left bytes lie in the chunk before */

static __device__ __forceinline__ uint8_t unf_paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

    return (uint8_t)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

/* One byte of a row of filter type ft, without branches: the 32 rows of a warp carry their own
 * types, and a switch would run each type's path for the whole warp in turn. */
static __device__ __forceinline__ int unf_byte(int ft, int x, int a, int b, int c)
{
    int pred = ft == 1 ? a : 0;

    pred = ft == 2 ? b : pred;
    pred = ft == 3 ? (a + b) >> 1 : pred;
    pred = ft == 4 ? unf_paeth(a, b, c) : pred;
    return x + pred;
}

/* Byte k of a 16-byte chunk held as a uint4. */
static __device__ __forceinline__ uint32_t unf_get(uint4 v, int k)
{
    uint32_t w = k < 4 ? v.x : k < 8 ? v.y : k < 12 ? v.z : v.w;
    return (w >> (8 * (k % 4))) & 0xffu;
}

/* Word i (0..7) of the 32 bytes a ++ b, by selects: an array indexed at run time would live in
 * local memory. */
static __device__ __forceinline__ uint32_t unf_word(uint4 a, uint4 b, int i)
{
    uint4 v = i < 4 ? a : b;
    return (i & 3) == 0 ? v.x : (i & 3) == 1 ? v.y : (i & 3) == 2 ? v.z : v.w;
}

/* The 16 bytes from byte o (0..15) of the 32 bytes a ++ b: words q .. q + 4 with q = o / 4 <= 3. */
static __device__ __forceinline__ uint4 unf_window(uint4 a, uint4 b, int o)
{
    const int q = o / 4;
    const unsigned s = 8 * (o % 4);
    uint32_t w0 = unf_word(a, b, q), w1 = unf_word(a, b, q + 1), w2 = unf_word(a, b, q + 2);
    uint32_t w3 = unf_word(a, b, q + 3), w4 = unf_word(a, b, q + 4);

    return make_uint4(__funnelshift_r(w0, w1, s), __funnelshift_r(w1, w2, s), __funnelshift_r(w2, w3, s),
                      __funnelshift_r(w3, w4, s));
}

/* Row bytes [i0, i0 + n) (n <= 16) of p into a chunk, byte by byte. */
static __device__ __forceinline__ uint4 unf_load_bytes(const uint8_t *p, size_t i0, int n)
{
    uint32_t w[4] = {0, 0, 0, 0};

#pragma unroll
    for (int k = 0; k < UNF_CHUNK; k++)
        if (k < n)
            w[k / 4] |= (uint32_t)p[i0 + k] << (8 * (k % 4));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Bytes [lo, hi) of chunk v to p + i0 + lo .. , byte by byte. */
static __device__ __forceinline__ void unf_store_bytes(uint8_t *p, size_t i0, uint4 v, int lo, int hi)
{
#pragma unroll
    for (int k = 0; k < UNF_CHUNK; k++)
        if (k >= lo && k < hi)
            p[i0 + k] = (uint8_t)unf_get(v, k);
}

/* Reconstructs the chunk x (filter type ft) from the row above's chunk u and the last bpp bytes
 * before it of both rows (hist, uhist: byte j is [i - 1 - j]), which it moves on. The dependences
 * of each byte stay in registers. */
static __device__ __forceinline__ uint4 unf_chunk(uint4 x, uint4 u, int ft, int bpp, uint32_t *hist, uint32_t *uhist)
{
    const int sh = 8 * (bpp - 1);
    const uint32_t mask = bpp >= 4 ? 0xffffffffu : (1u << (8 * bpp)) - 1;
    uint32_t w[4] = {0, 0, 0, 0}, h = *hist, uh = *uhist;

#pragma unroll
    for (int k = 0; k < UNF_CHUNK; k++) {
        int a = (int)(h >> sh & 0xffu), b = (int)unf_get(u, k), c = (int)(uh >> sh & 0xffu);
        uint32_t r = (uint32_t)unf_byte(ft, (int)unf_get(x, k), a, b, c) & 0xffu;
        w[k / 4] |= r << (8 * (k % 4));
        h = (h << 8 | r) & mask;
        uh = (uh << 8 | (uint32_t)b) & mask;
    }
    *hist = h, *uhist = uh;
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__global__ void __launch_bounds__(UNF_THREADS) unfilter_kernel(const struct png_unf_batch b)
{
    __shared__ uint4 s_out[2][UNF_THREADS]; /* each thread's chunk of the step, by step parity */
    const struct png_unf_image im = b.im[blockIdx.x];
    const size_t stride = im.rowbytes + 1, chunks = (im.rowbytes + UNF_CHUNK - 1) / UNF_CHUNK;
    const bool vec = ((uintptr_t)im.d_raw & 15) == 0; /* aligned words stay inside the buffer */
    const int t = threadIdx.x;

    if (t == 0)
        im.d_status[0] = *im.d_inflated, im.d_status[1] = 0;
    __syncthreads(); /* before any thread reports a bad filter type */
    if (*im.d_inflated != GINFLATE_OK) /* the rows are undefined: the job declines */
        return;
    for (uint32_t r0 = 0; r0 < im.h; r0 += UNF_THREADS) {
        uint32_t rows = im.h - r0 < UNF_THREADS ? im.h - r0 : UNF_THREADS, y = r0 + t;
        uint8_t *row = im.d_raw + (size_t)y * stride, *cur = row + 1;
        const int o = (int)((uintptr_t)cur & 15);
        int ft = t < (int)rows ? row[0] : 0;
        uint32_t hist = 0, uhist = 0;
        uint4 prev = make_uint4(0, 0, 0, 0);

        if (ft > 4) {
            im.d_status[1] = 1;
            ft = 0; /* keep going without it: the result is dropped */
        }
        for (size_t k = 0; k < chunks + rows - 1; k++) {
            size_t j = k - (size_t)t;
            if (t < (int)rows && k >= (size_t)t && j < chunks) {
                const size_t i0 = j * UNF_CHUNK;
                const int n = im.rowbytes - i0 < UNF_CHUNK ? (int)(im.rowbytes - i0) : UNF_CHUNK;
                const bool whole = vec && n == UNF_CHUNK;
                uint4 u = make_uint4(0, 0, 0, 0), x;
                if (y > 0)
                    u = t > 0 ? s_out[(k + 1) & 1][t - 1] : unf_load_bytes(cur - stride, i0, n);
                if (whole) {
                    const uint4 *a = (const uint4 *)(cur + i0 - o);
                    x = o ? unf_window(a[0], a[1], o) : a[0];
                } else {
                    x = unf_load_bytes(cur, i0, n);
                }
                const uint4 r = unf_chunk(x, u, ft, im.bpp, &hist, &uhist);
                s_out[k & 1][t] = r;
                if (whole && (o == 0 || j > 0)) /* the aligned word of the chunk's first byte */
                    *(uint4 *)(cur + i0 - o) = o ? unf_window(prev, r, UNF_CHUNK - o) : r;
                else /* a row's first chunk, or a short one: its bytes alone, after the end of
                      * the chunk before where that waits */
                    unf_store_bytes(cur, i0, r, 0, whole ? UNF_CHUNK - o : n);
                if (!whole && j > 0 && vec && o)
                    unf_store_bytes(cur, i0 - UNF_CHUNK, prev, UNF_CHUNK - o, UNF_CHUNK);
                if (whole && o && j == chunks - 1) /* the row's end: the bytes that wait */
                    unf_store_bytes(cur, i0, r, UNF_CHUNK - o, UNF_CHUNK);
                prev = r;
            }
            __syncthreads();
        }
    }
}

cudaError_t png_unfilter_launch(const struct png_unf_batch *b, cudaStream_t s)
{
    if (b->n < 1)
        return cudaSuccess;
    unfilter_kernel<<<b->n, UNF_THREADS, 0, s>>>(*b);
    return cudaGetLastError();
}

/* Expansion: one thread per output pixel. */
#define EXPAND_BLOCK_X 64
#define EXPAND_BLOCK_Y 4

enum expand_mode { EXPAND_COPY, EXPAND_KEY, EXPAND_PALETTE };

struct expand_args {
    const uint8_t *d_raw;
    const uint8_t *d_rgba;
    uint8_t *d_dst;
    size_t stride;
    int w, h, depth, bpp, out_ch, mode;
    uint8_t key[3];
};

__global__ void expand_kernel(const struct expand_args a)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;

    if (x >= a.w || y >= a.h)
        return;
    const uint8_t *src = a.d_raw + (size_t)y * a.stride + 1;
    uint8_t *dst = a.d_dst + ((size_t)y * a.w + x) * a.out_ch;
    if (a.mode == EXPAND_PALETTE) {
        int ppb = 8 / a.depth, shift = a.depth * (ppb - 1 - x % ppb);
        int idx = a.depth == 8 ? src[x] : (src[x / ppb] >> shift) & ((1 << a.depth) - 1);
        for (int c = 0; c < a.out_ch; c++)
            dst[c] = __ldg(a.d_rgba + 4 * idx + c);
        return;
    }
    src += (size_t)x * a.bpp;
    int same = 1;
    for (int c = 0; c < a.bpp; c++) {
        dst[c] = src[c];
        same &= src[c] == a.key[c];
    }
    if (a.mode == EXPAND_KEY)
        dst[a.bpp] = same ? 0 : 255;
}

cudaError_t png_expand_launch(const struct png_layout *lay, const uint8_t *d_raw, const uint8_t *d_rgba,
                              uint8_t *d_dst, cudaStream_t s)
{
    struct expand_args a;
    dim3 block(EXPAND_BLOCK_X, EXPAND_BLOCK_Y);
    dim3 grid(div_up((int)lay->w, EXPAND_BLOCK_X), div_up((int)lay->h, EXPAND_BLOCK_Y));

    memset(&a, 0, sizeof(a));
    a.d_raw = d_raw, a.d_rgba = d_rgba, a.d_dst = d_dst, a.stride = lay->rowbytes + 1;
    a.w = (int)lay->w, a.h = (int)lay->h, a.depth = lay->depth, a.bpp = lay->bpp, a.out_ch = lay->out_ch;
    a.mode = lay->color == PNG_COLOR_PALETTE ? EXPAND_PALETTE : lay->has_key ? EXPAND_KEY : EXPAND_COPY;
    for (int c = 0; c < 3; c++)
        a.key[c] = lay->key[c];
    expand_kernel<<<grid, block, 0, s>>>(a);
    return cudaGetLastError();
}
