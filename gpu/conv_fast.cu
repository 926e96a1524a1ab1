/* conv_fast.cu — fast: the production fp32 correlation. Kernels up to 5x5, full-rank 7x7 and 9x9,
 * and rank-1 square taps of side 7 to 17 stream through registers (conv_stream.cu); larger rank-1
 * square taps run as ONE fused row+column pass through shared memory; other taps run as a
 * register-blocked direct kernel. */
#include <string.h>

#include "gconv_internal.h"

/* Both kernels work on output tiles FAST_TW columns wide. A thread keeps FAST_OUT outputs of one
 * row (or, in the column pass, of one column) in registers and sweeps the taps in chunks of
 * FAST_CHUNK: per chunk it loads a (FAST_OUT + chunk - 1)-sample window with 16-byte shared loads
 * and does FAST_OUT * chunk FMAs, so a sample read from shared memory feeds ~FAST_OUT FMAs and a
 * tap read from the parameter bank feeds FAST_OUT. The chunk loop runs at run time over full
 * chunks of 16; the tail (cols % 16, odd) is a template argument, so every loop that indexes a
 * register array is unrolled with compile-time bounds (no local memory). */
#define FAST_TW 128
#define FAST_OUT 16
#define FAST_CHUNK 16
#define FAST_DIRECT_TH 32   /* direct kernel: 32 rows x 128 columns, 256 threads */
#define FAST_DIRECT_THREADS 256
#define FAST_SEP_SMALL_N 15 /* separable: N <= 15 uses 32-row tiles, larger N 64-row tiles */
#define FAST_OUT_PITCH 132  /* direct: staged output rows (4 mod 8; the staged input tile is larger) */

/* Taps travel as __grid_constant__ kernel parameters (CUDA 12.1+: up to 32 KiB on sm_70+): they
 * sit in the launch's own constant bank, so concurrent jobs with different taps cannot race (no
 * shared __constant__ array, no slot lock), and reads are LDC with an immediate offset. */
struct fast_taps2d {
    float t[FILTER_MAX_TAPS];
};
struct fast_taps1d {
    float row[FILTER_MAX_SIDE], col[FILTER_MAX_SIDE];
};

/* Shared-memory row pitch (floats) of at least `need`: 4 mod 8, so that the 8 lanes of a
 * quarter-warp reading 16 bytes each from 8 consecutive rows hit 8 different 16-byte bank groups
 * (the passes whose lanes walk down rows are then free of bank conflicts). */
static __host__ __device__ inline int fast_pitch(int need)
{
    return need + ((12 - need % 8) % 8);
}

/* Stages rows [gy0, gy0+th) x columns [gx0, gx0+sw) of the plane into s (pitch sw) under the border
 * rule. Thread t owns one aligned float4 column of the region (the region's start is not aligned:
 * the four samples are scattered into shared memory at their offsets) and walks down the rows,
 * FAST_STAGE_BATCH rows at a time: all the batch's global loads are issued before the first
 * store, so each thread keeps several 16-byte loads in flight. A float4 inside the image row is
 * one 16-byte load; at the left and right image edges the samples are resolved one by one through
 * border_index (columns resolved once per thread, rows once per row), so frame blocks take the
 * same path with a few scalar loads, and no sample is checked in the interior. */
#define FAST_STAGE_BATCH 4
static __device__ __forceinline__ void fast_stage(float *s, const float *__restrict__ d_in, int gx0, int gy0,
                                                  int sw, int th, const conv_geom &g, int nthreads)
{
    int ax0 = gx0 & ~3, nv = (gx0 + sw - ax0 + 3) >> 2; /* float4 per row (nv <= 50 < nthreads) */
    int rpp = nthreads / nv, r0 = threadIdx.x / nv, v = threadIdx.x - r0 * nv;
    int gx = ax0 + 4 * v, c = gx - gx0; /* image column and shared column of the float4's sample 0 */
    bool vec = gx >= 0 && gx + 3 < g.w;
    int xi[4];

    if (r0 >= rpp)
        return;
#pragma unroll
    for (int e = 0; e < 4; e++)
        xi[e] = border_index(gx + e, g.w, g.border);
    for (int rb = r0; rb < th; rb += FAST_STAGE_BATCH * rpp) {
        float4 q[FAST_STAGE_BATCH];
#pragma unroll
        for (int u = 0; u < FAST_STAGE_BATCH; u++) {
            int r = rb + u * rpp, yi = r < th ? border_index(gy0 + r, g.h, g.border) : -1;
            q[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (yi < 0)
                continue;
            const float *row = d_in + (size_t)yi * g.pitch;
            if (vec) {
                q[u] = __ldg(reinterpret_cast<const float4 *>(row + gx));
            } else {
                q[u].x = xi[0] >= 0 ? __ldg(row + xi[0]) : 0.0f;
                q[u].y = xi[1] >= 0 ? __ldg(row + xi[1]) : 0.0f;
                q[u].z = xi[2] >= 0 ? __ldg(row + xi[2]) : 0.0f;
                q[u].w = xi[3] >= 0 ? __ldg(row + xi[3]) : 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < FAST_STAGE_BATCH; u++) {
            int r = rb + u * rpp;
            if (r >= th)
                break;
            float *srow = s + r * sw;
            if (c >= 0)
                srow[c] = q[u].x;
            if (c + 1 >= 0 && c + 1 < sw)
                srow[c + 1] = q[u].y;
            if (c + 2 >= 0 && c + 2 < sw)
                srow[c + 2] = q[u].z;
            if (c + 3 < sw)
                srow[c + 3] = q[u].w;
        }
    }
}

/* acc[o] += sum_j t[j] * s_win[o + j] for o < FAST_OUT, j < W. s_win is 16-byte aligned; the
 * window is read as whole float4s (up to 3 samples past the last one used). */
template <int W>
static __device__ __forceinline__ void fast_chunk(float (&acc)[FAST_OUT], const float *s_win, const float *t)
{
    constexpr int NV = (FAST_OUT + W - 1 + 3) / 4;
    float win[4 * NV];
#pragma unroll
    for (int v = 0; v < NV; v++) {
        float4 q = reinterpret_cast<const float4 *>(s_win)[v];
        win[4 * v] = q.x, win[4 * v + 1] = q.y, win[4 * v + 2] = q.z, win[4 * v + 3] = q.w;
    }
#pragma unroll
    for (int j = 0; j < W; j++) {
        float f = t[j];
#pragma unroll
        for (int o = 0; o < FAST_OUT; o++)
            acc[o] = fmaf(f, win[o + j], acc[o]);
    }
}

/* One 1-D pass of n = 16 * nfull + TAIL taps over a window starting at s_win. */
template <int TAIL>
static __device__ __forceinline__ void fast_pass(float (&acc)[FAST_OUT], const float *s_win, const float *t,
                                                 int nfull)
{
    for (int c = 0; c < nfull; c++)
        fast_chunk<FAST_CHUNK>(acc, s_win + FAST_CHUNK * c, t + FAST_CHUNK * c);
    fast_chunk<TAIL>(acc, s_win + FAST_CHUNK * nfull, t + FAST_CHUNK * nfull);
}

/* ---- direct: any taps ------------------------------------------------------------------- */

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
        fast_pass<TAIL>(acc, s + (lane + i) * sw + FAST_OUT * grp, taps.t + i * g.cols, nfull);
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

/* ---- separable: rank-1 square taps, one fused pass ---------------------------------------- */

/* A block of 8*TH threads computes TH rows x 128 columns. The input tile (TH+N-1 rows with the
 * halo) is staged once; the row pass filters every tile row (lane = row, 16 columns per item) and
 * writes the results TRANSPOSED into s_mid (s_mid[column][row]); the column pass then is again a
 * 1-D pass along a shared row (lane = output column, 16 rows per thread) and its stores are
 * coalesced across the warp. Image data is read from global memory once and written once.
 * The border rule is applied to the staged samples in x and y, which for rank-1 taps equals the
 * 2-D correlation under that rule (a zero row filters to zero; a replicated or reflected sample
 * row filters to the same values). */
template <int TAIL, int TH>
__global__ void __launch_bounds__(8 * TH, TH == 32 ? 4 : 2)
    k_fast_sep(const float *__restrict__ d_in, float *__restrict__ d_out, conv_geom g, int sw, int mp,
               const __grid_constant__ fast_taps1d taps)
{
    extern __shared__ float4 s_dyn[];
    constexpr int NT = 8 * TH;
    int n = g.cols, th = TH + n - 1, nfull = n / FAST_CHUNK;
    int bx0 = blockIdx.x * FAST_TW, by0 = blockIdx.y * TH;
    float *s_in = reinterpret_cast<float *>(s_dyn), *s_mid = s_in + th * sw;
    float acc[FAST_OUT];

    fast_stage(s_in, d_in, bx0 - n / 2, by0 - n / 2, sw, th, g, NT);
    __syncthreads();
    for (int it = threadIdx.x; it < (FAST_TW / FAST_OUT) * th; it += NT) {
        int grp = it / th, r = it - grp * th;
#pragma unroll
        for (int o = 0; o < FAST_OUT; o++)
            acc[o] = 0.0f;
        fast_pass<TAIL>(acc, s_in + r * sw + FAST_OUT * grp, taps.row, nfull);
#pragma unroll
        for (int o = 0; o < FAST_OUT; o++)
            s_mid[(FAST_OUT * grp + o) * mp + r] = acc[o];
    }
    __syncthreads();
    int c = threadIdx.x % FAST_TW, hq = threadIdx.x / FAST_TW, x = bx0 + c, y0 = by0 + FAST_OUT * hq;
#pragma unroll
    for (int o = 0; o < FAST_OUT; o++)
        acc[o] = 0.0f;
    fast_pass<TAIL>(acc, s_mid + c * mp + FAST_OUT * hq, taps.col, nfull);
    if (x >= g.w)
        return;
#pragma unroll
    for (int o = 0; o < FAST_OUT; o++)
        if (y0 + o < g.h)
            d_out[(size_t)(y0 + o) * g.pitch + x] = acc[o];
}

/* ---- launchers ---------------------------------------------------------------------------- */

struct fast_plan {
    int sep;         /* 1: fused separable kernel */
    int th, sw, mp;  /* tile rows, shared pitches (floats) */
    size_t smem;     /* dynamic shared memory, bytes */
};

static struct fast_plan fast_plan_sep(const struct kernel2d *k)
{
    struct fast_plan p;
    int n = k->cols, TH = n <= FAST_SEP_SMALL_N ? 32 : 64;

    p.sep = 1;
    p.th = TH;
    p.sw = fast_pitch(FAST_TW + n + 3);
    p.mp = fast_pitch(TH + n + 2);
    p.smem = sizeof(float) * ((size_t)(TH + n - 1) * p.sw + (size_t)FAST_TW * p.mp);
    return p;
}

static struct fast_plan fast_plan_direct(const struct kernel2d *k)
{
    struct fast_plan p;

    p.sep = 0;
    p.th = FAST_DIRECT_TH;
    p.sw = fast_pitch(FAST_TW + k->cols + 3);
    p.mp = 0;
    p.smem = sizeof(float) * (size_t)(FAST_DIRECT_TH + k->rows - 1) * p.sw;
    return p;
}

/* Rank-1 square taps take the fused kernel when its tile fits the opt-in shared memory of a block
 * (on the H100 always: 63x63 needs 166 KiB of 227), everything else the direct kernel (63x63:
 * 72 KiB). */
static int fast_choose(const struct conv_args *a, struct fast_plan *p)
{
    const struct kernel2d *k = a->k;

    if (k->separable && k->rows == k->cols) {
        *p = fast_plan_sep(k);
        if (p->smem <= a->lim->smem_optin)
            return 0;
    }
    *p = fast_plan_direct(k);
    return p->smem <= a->lim->smem_optin ? 0 : -1;
}

/* Raises a kernel's dynamic shared-memory limit to the device's opt-in maximum, once: the
 * attribute is per function and process-wide, and every caller sets the same value, so racing
 * callers cannot leave it lower than a launch needs. Occupancy follows the launch's own size. */
template <typename K>
static cudaError_t fast_smem_attr(K kernel, const struct conv_args *a, size_t smem, int *done)
{
    cudaError_t e;

    if (smem <= 48 * 1024 || __atomic_load_n(done, __ATOMIC_ACQUIRE))
        return cudaSuccess;
    if ((e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)a->lim->smem_optin)) ==
        cudaSuccess)
        __atomic_store_n(done, 1, __ATOMIC_RELEASE);
    return e;
}

template <int TAIL>
static cudaError_t fast_launch_direct(const struct conv_args *a, const struct fast_plan *p)
{
    static int attr_done;
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

template <int TAIL, int TH>
static cudaError_t fast_launch_sep(const struct conv_args *a, const struct fast_plan *p)
{
    static int attr_done;
    conv_geom g = conv_geom_of(a);
    dim3 grid(div_up(a->w, FAST_TW), div_up(a->h, TH));
    cudaError_t e = fast_smem_attr(k_fast_sep<TAIL, TH>, a, p->smem, &attr_done);
    fast_taps1d t = {};

    if (e != cudaSuccess)
        return e;
    memcpy(t.row, a->k->row, sizeof(float) * a->k->cols);
    memcpy(t.col, a->k->col, sizeof(float) * a->k->rows);
    k_fast_sep<TAIL, TH><<<grid, 8 * TH, p->smem, a->stream>>>(a->d_in, a->d_out, g, p->sw, p->mp, t);
    return cudaSuccess;
}

#define FAST_TAIL_CASES(M)                                                                                   \
    M(1) M(3) M(5) M(7) M(9) M(11) M(13) M(15)

static cudaError_t fast_launch(const struct conv_args *a, const struct fast_plan *p)
{
    int tail = a->k->cols % FAST_CHUNK;

    if (!p->sep) {
        switch (tail) {
#define FAST_DIRECT_CASE(T)                                                                                  \
    case T:                                                                                                  \
        return fast_launch_direct<T>(a, p);
            FAST_TAIL_CASES(FAST_DIRECT_CASE)
        }
    } else if (p->th == 32) {
        switch (tail) {
#define FAST_SEP32_CASE(T)                                                                                   \
    case T:                                                                                                  \
        return fast_launch_sep<T, 32>(a, p);
            FAST_TAIL_CASES(FAST_SEP32_CASE)
        }
    } else {
        switch (tail) {
#define FAST_SEP64_CASE(T)                                                                                   \
    case T:                                                                                                  \
        return fast_launch_sep<T, 64>(a, p);
            FAST_TAIL_CASES(FAST_SEP64_CASE)
        }
    }
    return cudaErrorInvalidValue; /* even sides never reach here: kernel_ok rejects them */
}

/* Which taps take the streaming register kernel (conv_stream.cu) instead of the tiles above: both
 * sides 1, 3 or 5, rank 1 or not, and full-rank 7x7 and 9x9. At that size the tiled kernels are
 * bound by their phases (stage, barrier, compute, barrier: the memory pipe idles between them) and
 * by the staged halo (16 % more bytes at 3x3), and they lost to NPP at 3x3 and 5x5 on the H100. The
 * streaming kernel keeps the loads of every warp in flight and reads each row once per 128-column
 * strip. H100, 8192^2 (2026-11-21): full-rank 7x7 0.225 ms streaming against 0.308 on the direct
 * tile, 9x9 0.311 against 0.370; from 11x11 the tile's 16 outputs per thread win (its FMA work
 * dominates). Bench knobs: EDGED_FAST_STREAM=0 (all tiles), EDGED_FAST_STREAM_BIG=0 (7x7 and 9x9 on
 * the tile). */
static int fast_use_stream(const struct kernel2d *k)
{
    if (gconv_knob("EDGED_FAST_STREAM", 1) == 0)
        return 0;
    if (k->rows <= 5 && k->cols <= 5 && (k->rows & 1) && (k->cols & 1))
        return 1;
    return gconv_knob("EDGED_FAST_STREAM_BIG", 1) != 0 && !k->separable && k->rows == k->cols &&
           (k->rows == 7 || k->rows == 9);
}

/* Rank-1 square taps of odd side 7 to 17 stream too (conv_stream.cu): a row pass and a column pass
 * in registers, 2N FMAs per pixel, each row read once per strip. H100, 8192^2 gaussian
 * (2026-11-21): 0.216, 0.226, 0.225, 0.235, 0.255, 0.289 ms for N = 7 .. 17 against the fused
 * tile's 0.256, 0.263, 0.271, 0.276, 0.284, 0.298. Larger sides keep the tile (the halo of the
 * streaming kernel reaches radius 8). Same knob. */
static int fast_use_stream_sep(const struct kernel2d *k)
{
    return gconv_knob("EDGED_FAST_STREAM", 1) != 0 && k->separable && k->rows == k->cols && k->rows >= 7 &&
           k->rows <= 17 && (k->rows & 1);
}

/* Limits: none on the H100 (every odd size up to 63x63 fits); on a GPU with less opt-in shared
 * memory a tile that does not fit is refused with the size it needs. The block argument is not
 * used: the tiles are fixed (128 columns x 32 or 64 rows). */
extern "C" int conv_fast(struct conv_args *a, char *err)
{
    struct fast_plan p;
    cudaError_t e;

    if (fast_use_stream(a->k))
        return conv_fast_stream(a, err);
    if (fast_use_stream_sep(a->k))
        return conv_fast_stream_sep(a, err);
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
