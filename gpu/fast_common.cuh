/* fast_common.cuh — what the fast variant's tile kernels (fast.cu's direct kernel, fast_sep.cu's
 * separable band kernel) share: the tile and chunk sizes, the taps as launch parameters, the
 * shared-memory pitch, the chunked register passes over a window, the launch plan; the pitch and
 * the staging of an input tile serve tf32x3's tiles too (conv_tf32x3.cu). */
#ifndef EDGED_FAST_COMMON_CUH
#define EDGED_FAST_COMMON_CUH

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
static __host__ __device__ constexpr int fast_pitch(int need)
{
    return need + ((12 - need % 8) % 8);
}

/* A thread's window of samples in a shared row (16-byte aligned at index 0), handed out as whole
 * float4s; fast_sep.cu's fast_ring is the other source the passes read. */
struct fast_flat {
    const float *s;
    __device__ __forceinline__ float4 at(int i) const { return reinterpret_cast<const float4 *>(s + i)[0]; }
};

/* acc[o] += sum_j t[j] * win[OFF + o + j] for o < FAST_OUT, j < W, where win[i] is sample at + i
 * of src, at a multiple of 4. The window is read as whole float4s (up to 3 samples past the last
 * one used); OFF (0..3, a constant) lets a window start between two float4s. FIRST: the chunk
 * starts the sums (acc = t[0] * win + ...), so the caller does not zero them. */
template <int W, int OFF, bool FIRST = false, typename SRC>
static __device__ __forceinline__ void fast_chunk(float (&acc)[FAST_OUT], const SRC &src, int at, const float *t)
{
    constexpr int NV = (OFF + FAST_OUT + W - 1 + 3) / 4;
    float win[4 * NV];
#pragma unroll
    for (int v = 0; v < NV; v++) {
        float4 q = src.at(at + 4 * v);
        win[4 * v] = q.x, win[4 * v + 1] = q.y, win[4 * v + 2] = q.z, win[4 * v + 3] = q.w;
    }
#pragma unroll
    for (int j = 0; j < W; j++) {
        float f = t[j];
#pragma unroll
        for (int o = 0; o < FAST_OUT; o++)
            acc[o] = FIRST && j == 0 ? f * win[OFF + o] : fmaf(f, win[OFF + o + j], acc[o]);
    }
}

/* One 1-D pass of n = 16 * nfull + TAIL taps over the window of src that starts at sample OFF,
 * added to acc. */
template <int TAIL, int OFF = 0, typename SRC>
static __device__ __forceinline__ void fast_pass(float (&acc)[FAST_OUT], const SRC &src, const float *t, int nfull)
{
    for (int c = 0; c < nfull; c++)
        fast_chunk<FAST_CHUNK, OFF>(acc, src, FAST_CHUNK * c, t + FAST_CHUNK * c);
    fast_chunk<TAIL, OFF>(acc, src, FAST_CHUNK * nfull, t + FAST_CHUNK * nfull);
}

/* The same pass for N taps known at compile time, into acc (no zeroing: the first chunk starts
 * the sums). The chunks unroll, so every tap is an immediate offset into the launch's parameter
 * bank and each FFMA reads it there: a runtime chunk loop first loaded each tap into a register
 * (62 LDC/ULDC per step of the separable kernel at N = 31, against 992 FFMA). */
template <int N, int OFF = 0, typename SRC>
static __device__ __forceinline__ void fast_pass_n(float (&acc)[FAST_OUT], const SRC &src, const float *t)
{
    constexpr int NFULL = N / FAST_CHUNK, TAIL = N % FAST_CHUNK;
#pragma unroll
    for (int c = 0; c < NFULL; c++) {
        if (c == 0)
            fast_chunk<FAST_CHUNK, OFF, true>(acc, src, 0, t);
        else
            fast_chunk<FAST_CHUNK, OFF>(acc, src, FAST_CHUNK * c, t + FAST_CHUNK * c);
    }
    fast_chunk<TAIL, OFF, NFULL == 0>(acc, src, FAST_CHUNK * NFULL, t + FAST_CHUNK * NFULL);
}

/* Stages rows [gy0, gy0+th) x columns [gx0, gx0+sw) of the plane into s (pitch sw) under the border
 * rule. Thread t owns one aligned float4 column of the region (the region's start is not aligned:
 * the four samples are scattered into shared memory at their offsets) and walks down the rows,
 * FAST_STAGE_BATCH rows at a time: all the batch's global loads start before the first
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

/* How a tile launch runs: which kernel, its shared pitch and dynamic shared memory. */
struct fast_plan {
    int sep;     /* 1: fused separable kernel (its layout: sep_sw, sep_ring, sep_mp) */
    int sw;      /* direct: shared pitch (floats) of the staged input rows */
    size_t smem; /* dynamic shared memory, bytes */
};

/* Raises a kernel's dynamic shared-memory limit to the device's opt-in maximum, once per device:
 * the attribute belongs to the function in the current device's context (a server may drive
 * several), and every caller sets the same value, so racing callers cannot leave it lower than a
 * launch needs. done: one bit per device number (0..63). Occupancy follows the launch's own size. */
template <typename K>
static cudaError_t fast_smem_attr(K kernel, const struct conv_args *a, size_t smem, unsigned long long *done)
{
    unsigned long long bit;
    int dev = 0;
    cudaError_t e;

    if (smem <= 48 * 1024)
        return cudaSuccess;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess)
        return e;
    bit = 1ull << (dev & 63);
    if (__atomic_load_n(done, __ATOMIC_ACQUIRE) & bit)
        return cudaSuccess;
    if ((e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)a->lim->smem_optin)) ==
        cudaSuccess)
        __atomic_fetch_or(done, bit, __ATOMIC_RELEASE);
    return e;
}

/* The separable band kernel (fast_sep.cu). plan: its launch plan for rank-1 square taps k (the
 * caller compares smem with the device's opt-in limit). launch: enqueues it for a->k with that
 * plan; 0 or the CUDA error of setting the kernel's shared-memory attribute. */
struct fast_plan fast_sep_plan(const struct kernel2d *k);
cudaError_t fast_sep_launch(const struct conv_args *a, const struct fast_plan *p);

#endif
