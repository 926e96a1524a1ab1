/* fast.cu — fast: the production fp32 correlation. conv_fast picks the kernel: taps up to 5x5 (but
 * rank-1 5x5) and full-rank 7x7 and 9x9 stream through registers (fast_stream.cu); rank-1 square
 * taps from 5x5 on run as ONE fused row+column pass down bands of rows (fast_sep.cu); other taps
 * run as the register-blocked direct tile kernel below. */
#include <string.h>

#include "fast_common.cuh"

#define FAST_DIRECT_TH 32   /* direct kernel: 32 rows x 128 columns, 256 threads */
#define FAST_DIRECT_THREADS 256
#define FAST_OUT_PITCH 132  /* direct: staged output rows (4 mod 8; the staged input tile is larger) */

/* A block computes 32 rows x 128 columns. Lane = output row, warp = 16-column group, so the
 * window loads of a warp walk down 32 rows (conflict-free with the 4-mod-8 pitch). For each tap
 * row the thread sweeps the columns in chunks; the sum per output runs over the taps in
 * row-major order, as the serial reference does (with FMA). */
template <int TAIL>
__global__ void __launch_bounds__(FAST_DIRECT_THREADS)
    k_fast_direct(const float *__restrict__ d_in, float *__restrict__ d_out, conv_geom g, int sw,
                  const __grid_constant__ fast_taps2d taps)
{
    extern __shared__ float4 s_dyn[];
    float *s = reinterpret_cast<float *>(s_dyn);
    int th = FAST_DIRECT_TH + g.rows - 1, bx0 = blockIdx.x * FAST_TW, by0 = blockIdx.y * FAST_DIRECT_TH;
    int lane = threadIdx.x & 31, grp = threadIdx.x >> 5, nfull = g.cols / FAST_CHUNK;
    float acc[FAST_OUT];

    fast_stage(s, d_in, bx0 - g.cols / 2, by0 - g.rows / 2, sw, th, g, FAST_DIRECT_THREADS);
    __syncthreads();
#pragma unroll
    for (int o = 0; o < FAST_OUT; o++)
        acc[o] = 0.0f;
    for (int i = 0; i < g.rows; i++)
        fast_pass<TAIL>(acc, fast_flat{s + (lane + i) * sw + FAST_OUT * grp}, taps.t + i * g.cols, nfull);
    /* the tile's 32 x 128 results go through shared memory (pitch FAST_OUT_PITCH, 4 mod 8: the
     * lanes' 16-byte stores down 32 rows are conflict-free) so that each warp then writes whole
     * 512-byte row segments */
    __syncthreads();
#pragma unroll
    for (int v = 0; v < FAST_OUT / 4; v++)
        *reinterpret_cast<float4 *>(s + lane * FAST_OUT_PITCH + FAST_OUT * grp + 4 * v) =
            make_float4(acc[4 * v], acc[4 * v + 1], acc[4 * v + 2], acc[4 * v + 3]);
    __syncthreads();
    for (int idx = threadIdx.x; idx < FAST_DIRECT_TH * (FAST_TW / 4); idx += FAST_DIRECT_THREADS) {
        int r = idx / (FAST_TW / 4), x = bx0 + 4 * (idx % (FAST_TW / 4)), y = by0 + r;
        if (y >= g.h || x >= g.w)
            continue;
        float4 o = *reinterpret_cast<const float4 *>(s + r * FAST_OUT_PITCH + x - bx0);
        float *o_row = d_out + (size_t)y * g.pitch;
        if (x + 3 < g.w) {
            *reinterpret_cast<float4 *>(o_row + x) = o;
        } else {
            o_row[x] = o.x;
            if (x + 1 < g.w)
                o_row[x + 1] = o.y;
            if (x + 2 < g.w)
                o_row[x + 2] = o.z;
        }
    }
}

/* ---- launchers ---------------------------------------------------------------------------- */

static struct fast_plan fast_direct_plan(const struct kernel2d *k)
{
    struct fast_plan p;

    p.sep = 0;
    p.sw = fast_pitch(FAST_TW + k->cols + 3);
    p.smem = sizeof(float) * (size_t)(FAST_DIRECT_TH + k->rows - 1) * p.sw;
    return p;
}

/* Rank-1 square taps take the fused kernel when its tile fits the opt-in shared memory of a block
 * (on the H100 always: 63x63 needs 99 KiB of 227), everything else the direct kernel (63x63:
 * 72 KiB). */
static int fast_choose(const struct conv_args *a, struct fast_plan *p)
{
    const struct kernel2d *k = a->k;

    if (k->separable && k->rows == k->cols) {
        *p = fast_sep_plan(k);
        if (p->smem <= a->lim->smem_optin)
            return 0;
    }
    *p = fast_direct_plan(k);
    return p->smem <= a->lim->smem_optin ? 0 : -1;
}

template <int TAIL>
static cudaError_t fast_direct_launch(const struct conv_args *a, const struct fast_plan *p)
{
    static unsigned long long attr_done; /* per device (fast_smem_attr) */
    conv_geom g = conv_geom_of(a);
    dim3 grid(div_up(a->w, FAST_TW), div_up(a->h, FAST_DIRECT_TH));
    cudaError_t e = fast_smem_attr(k_fast_direct<TAIL>, a, p->smem, &attr_done);
    fast_taps2d t = {}; /* 15.9 KiB on the host stack, copied into the launch's parameters */

    if (e != cudaSuccess)
        return e;
    memcpy(t.t, a->k->taps, sizeof(float) * a->k->rows * a->k->cols);
    k_fast_direct<TAIL><<<grid, FAST_DIRECT_THREADS, p->smem, a->stream>>>(a->d_in, a->d_out, g, p->sw, t);
    return cudaSuccess;
}

#define FAST_TAIL_CASES(M)                                                                                   \
    M(1) M(3) M(5) M(7) M(9) M(11) M(13) M(15)

static cudaError_t fast_launch(const struct conv_args *a, const struct fast_plan *p)
{
    if (p->sep)
        return fast_sep_launch(a, p);
    switch (a->k->cols % FAST_CHUNK) {
#define FAST_DIRECT_CASE(T)                                                                                  \
    case T:                                                                                                  \
        return fast_direct_launch<T>(a, p);
        FAST_TAIL_CASES(FAST_DIRECT_CASE)
    }
    return cudaErrorInvalidValue; /* even sides never reach here: filter_kernel_check rejects them */
}

/* Which taps take the streaming register kernel (fast_stream.cu) instead of the tiles: both sides
 * 1, 3 or 5 (but rank-1 5x5), rank 1 or not, and full-rank 7x7 and 9x9. At that size the tiled
 * kernels are bound by their phases (stage, barrier, compute, barrier: the memory pipe idles
 * between them) and by the staged halo (16 % more bytes at 3x3); the streaming kernel keeps every
 * warp's loads in flight and reads each row once per 128-column strip, and wins up to full-rank
 * 9x9. From 11x11 the tile's 16 outputs per thread win (its FMA work dominates). Rank-1 5x5 goes
 * to the separable band kernel (a kernel per side, bulk staging), which is ahead there but not at
 * 3x3. Figures in docs/perf/journal.md. Knobs: EDGED_FAST_STREAM=0 (all tiles),
 * EDGED_FAST_STREAM_BIG=0 (7x7 and 9x9 on the tile). */
static int fast_use_stream(const struct kernel2d *k)
{
    if (tuning()->fast_stream == 0 || !fast_stream_has(k->rows, k->cols))
        return 0;
    if (k->separable && k->rows == k->cols && k->rows >= 5)
        return 0;
    return k->rows <= 5 || tuning()->fast_stream_big != 0;
}

/* Only where each kernel alone takes the streaming kernel: the fused pass then adds the very FMA
 * chains, and the step's planes are bit for bit those of the two passes and k_magnitude. */
extern "C" int fast_magnitude_can(const struct kernel2d *k0, const struct kernel2d *k1)
{
    return k0->rows == 3 && k0->cols == 3 && k1->rows == 3 && k1->cols == 3 && fast_use_stream(k0) &&
           fast_use_stream(k1);
}

/* Limits: none on the H100 (every odd size up to 63x63 fits); on a GPU with less opt-in shared
 * memory a tile that does not fit is refused with the size it needs. The block argument is not
 * used: the tiles are fixed (128 columns x 32 rows; the separable kernel's steps of 32 rows). */
extern "C" int conv_fast(struct conv_args *a, char *err)
{
    struct fast_plan p;
    cudaError_t e;

    if (fast_use_stream(a->k))
        return fast_stream_conv(a, err);
    if (fast_choose(a, &p) < 0)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "fast: a %dx%d tile needs %zu bytes of shared memory > %zu per block",
                          a->k->rows, a->k->cols, p.smem, a->lim->smem_optin);
    if ((a->k->cols & 1) == 0 || (a->k->rows & 1) == 0)
        return edged_fail(err, EDGED_E_PARAM, "fast: kernel sides must be odd");
    if (a->check_only)
        return 0;
    if ((e = fast_launch(a, &p)) != cudaSuccess) {
        a->cuerr = e;
        a->cuwhat = "fast: cudaFuncSetAttribute";
        return GCONV_CUDA_FAILED;
    }
    return conv_launched(a, p.sep ? "fast separable kernel" : "fast direct kernel");
}
