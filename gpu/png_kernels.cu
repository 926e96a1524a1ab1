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
 * __syncthreads() per step orders the two. A group of g rows and c chunks takes c + g - 1 steps. */
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

/* The last bpp bytes before position i0 of row p (0 before the row starts), newest in the low byte. */
static __device__ __forceinline__ uint32_t unf_hist(const uint8_t *p, int bpp, size_t i0)
{
    uint32_t h = 0;

    for (int j = bpp - 1; j >= 0; j--)
        h = h << 8 | (i0 >= (size_t)j + 1 ? p[i0 - 1 - j] : 0u);
    return h;
}

/* Reconstructs bytes [i0, i1) of row cur (filter type ft, row above up or NULL; pixels of bpp
 * bytes, 1..4). The left neighbours (a, and c from the row above) come from registers holding the
 * last bpp bytes, not from memory: each byte's chain of dependences stays in registers. A whole
 * chunk first loads its bytes and the row above's into registers (independent loads, one memory
 * latency), then reconstructs, then stores; a partial chunk (the row's tail) goes byte by byte. */
static __device__ void unf_bytes(uint8_t *__restrict__ cur, const uint8_t *__restrict__ up, int ft, int bpp,
                                 size_t i0, size_t i1)
{
    const int sh = 8 * (bpp - 1);
    const uint32_t mask = bpp >= 4 ? 0xffffffffu : (1u << (8 * bpp)) - 1;
    uint32_t hist = unf_hist(cur, bpp, i0), uhist = up ? unf_hist(up, bpp, i0) : 0; /* byte j: [i - 1 - j] */

    if (i1 - i0 == UNF_CHUNK) {
        uint8_t x[UNF_CHUNK], u[UNF_CHUNK];
#pragma unroll
        for (int k = 0; k < UNF_CHUNK; k++)
            x[k] = cur[i0 + k], u[k] = up ? up[i0 + k] : 0;
#pragma unroll
        for (int k = 0; k < UNF_CHUNK; k++) {
            int a = (int)(hist >> sh & 0xffu), c = (int)(uhist >> sh & 0xffu);
            x[k] = (uint8_t)unf_byte(ft, x[k], a, u[k], c);
            hist = (hist << 8 | x[k]) & mask;
            uhist = (uhist << 8 | u[k]) & mask;
        }
#pragma unroll
        for (int k = 0; k < UNF_CHUNK; k++)
            cur[i0 + k] = x[k];
        return;
    }
    for (size_t i = i0; i < i1; i++) {
        int a = (int)(hist >> sh & 0xffu), b = up ? up[i] : 0, c = (int)(uhist >> sh & 0xffu);
        uint8_t x = (uint8_t)unf_byte(ft, cur[i], a, b, c);
        cur[i] = x;
        hist = (hist << 8 | x) & mask;
        uhist = (uhist << 8 | (uint32_t)b) & mask;
    }
}

__global__ void __launch_bounds__(UNF_THREADS) unfilter_kernel(const struct png_unf_batch b)
{
    const struct png_unf_image im = b.im[blockIdx.x];
    size_t stride = im.rowbytes + 1, chunks = (im.rowbytes + UNF_CHUNK - 1) / UNF_CHUNK;
    int t = threadIdx.x;

    if (t == 0)
        im.d_status[0] = *im.d_inflated, im.d_status[1] = 0;
    __syncthreads(); /* before any thread reports a bad filter type */
    if (*im.d_inflated != GINFLATE_OK) /* the rows are undefined: the job declines */
        return;
    for (uint32_t r0 = 0; r0 < im.h; r0 += UNF_THREADS) {
        uint32_t rows = im.h - r0 < UNF_THREADS ? im.h - r0 : UNF_THREADS, y = r0 + t;
        uint8_t *row = im.d_raw + (size_t)y * stride;
        int ft = t < (int)rows ? row[0] : 0;

        if (ft > 4) {
            im.d_status[1] = 1;
            ft = 0; /* keep going without it: the result is dropped */
        }
        for (size_t k = 0; k < chunks + rows - 1; k++) {
            size_t j = k - (size_t)t;
            if (t < (int)rows && k >= (size_t)t && j < chunks) {
                size_t i1 = (j + 1) * UNF_CHUNK < im.rowbytes ? (j + 1) * UNF_CHUNK : im.rowbytes;
                unf_bytes(row + 1, y > 0 ? row + 1 - stride : NULL, ft, im.bpp, j * UNF_CHUNK, i1);
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
