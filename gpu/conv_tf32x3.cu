/* conv_tf32x3.cu — tf32x3: the correlation on the tensor cores, each tap row as a Toeplitz matrix,
 * with the 3xTF32 split that keeps float32 accuracy. */
#include "fast_common.cuh"

/* The method. For tap row r, out[y, x0 + n] += sum_c in[y + r, x0 + c] * T_r[c, n] with
 * T_r[c, n] = k[r, c - n] (zero outside 0..cols-1): a matrix product whose M is output rows, N
 * output columns and K input columns. One mma.sync m16n8k8 (TF32 in, FP32 accumulate) takes 16
 * output rows x 8 output columns x 8 input columns; the 8 output columns of tile j need the input
 * columns 8j .. 8j + cols + 6, that is TC chunks of 8 (tc_chunks), and chunk c of any tile meets
 * the same 8x8 block T_r[8c .. 8c+7, 0..7]: a warp holds the NC blocks of one tap row as B
 * fragments and applies each to the A fragment of every input chunk it meets. So a warp owns
 * 16 rows x 64 columns (8 tiles): per tap row it loads 8 + NC - 1 A fragments (ldmatrix from the
 * staged tile) and issues 8 * NC products of each kind. Of the 8 * 8 * NC multiply-adds of a
 * tile's row 8 * cols do work (the band): 56 % at 9x9, 54 % at 13x13, 71 % at 17x17, 66 % at 21x21.
 *
 * 3xTF32. TF32 keeps 10 of float's 23 stored mantissa bits. Each operand is split as x = hi + lo
 * with hi = rna(x) and lo = rna(x - hi) (x - hi is exact in float), and the product is
 * a_hi*b_hi + a_hi*b_lo + a_lo*b_hi: what is left out (a_lo*b_lo and the roundings of the two lo
 * parts) is below 3 * 2^-22 of |a*b|. The products in a tensor core are exact; their sums round
 * (truncate, on the A100 and H100) to float at every mma. a_hi*b_hi goes into one accumulator
 * (rows * NC mma steps of at most a few ulp of sum |a*b| each), the two small products into a
 * second one whose roundings are 2^-11 smaller, and the two are added at the end; test_gpu holds
 * the result to the tolerance every variant meets against cpu_serial (docs/gpu.md states the bound).
 * Where every staged sample of a block is a TF32 value already (a_lo = 0: any plane of u8 samples,
 * integers below 2048) the block skips the a_lo*b_hi products, which would add exact zeros: 2 mma
 * instead of 3, the same result bit for bit. The taps are split once per block into shared memory. */

#define TC_WX 2 /* warps across a block */
#define TC_WY 4 /* warps down a block */
#define TC_THREADS (32 * TC_WX * TC_WY)
#define TC_J 8                   /* 8-column tiles per warp: a warp owns 16 rows x 64 columns */
#define TC_TH (16 * TC_WY)       /* block tile: 64 rows */
#define TC_TW (8 * TC_J * TC_WX) /* x 128 columns */
#define TC_MAX_NC 5              /* B blocks per tap row a warp holds: up to 33 columns */
#define TC_MAX_COLS (8 * TC_MAX_NC - 7)

/* 8x8 blocks of T_r a tile meets: chunks c = 0..NC-1 cover tap columns 8c - 7 .. 8c + 7. */
static __host__ __device__ constexpr int tc_chunks(int cols)
{
    return (cols + 14) / 8;
}
/* Width (slots) of a split tap row in shared memory: slot e holds {hi, hi', lo, lo'} of tap columns
 * e - 7 and e - 3 (zero outside the row): the lane's B fragment of block c, hi and lo, is one
 * 16-byte load (slot 8c + t - g + 7), in the register pairs the mma takes, with no test. */
static __host__ __device__ constexpr int tc_tap_pitch(int nc)
{
    return 8 * nc + 8;
}

/* x rounded to TF32, to nearest with ties away from zero (cvt.rna.tf32.f32, which sm_90 expands
 * into a dozen instructions with NaN tests): half a TF32 ulp added to the magnitude bits, the 13
 * low bits cleared. Finite x only (the planes hold finite samples). */
static __device__ __forceinline__ uint32_t tc_tf32(float x)
{
    return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}

/* d += a * b for one 16x8x8 tile: a the A fragment (rows g and g + 8, columns t and t + 4 of the
 * lane's g = lane / 4, t = lane % 4), b0, b1 the B fragment (rows t and t + 4, column g); d rows g
 * and g + 8, columns 2t and 2t + 1. */
static __device__ __forceinline__ void tc_mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The A fragment of 16 rows x 8 columns of floats from shared memory: four 8x8 b16 matrices, each
 * 8 rows x 4 floats; lane l gives the address of row l % 8 of matrix l / 8 (mi, row, col in
 * k_tf32x3): rows 0-7 and 8-15 of columns 0-3, then of columns 4-7, so that r[] is a0..a3. */
static __device__ __forceinline__ void tc_ldsm4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* Every tap row through a warp's 8 tiles: big += a_hi*b_hi, small += a_hi*b_lo (+ a_lo*b_hi when
 * SPLIT). s_a: the shared address of the lane's ldmatrix row for tap row 0, chunk 0; tb: the lane's
 * B slot in tap row 0 (slot t - g + 7 of tc_tap_pitch). */
template <int NC, bool SPLIT>
static __device__ __forceinline__ void tc_rows(float (&big)[TC_J][4], float (&small)[TC_J][4], uint32_t s_a,
                                               const uint4 *tb, int rows, int sw)
{
    constexpr int TP = tc_tap_pitch(NC);

    for (int r = 0; r < rows; r++, tb += TP, s_a += 4 * sw) {
        uint32_t bh[NC][2], bl[NC][2];
#pragma unroll
        for (int c = 0; c < NC; c++) {
            uint4 p = tb[8 * c];
            bh[c][0] = p.x, bh[c][1] = p.y, bl[c][0] = p.z, bl[c][1] = p.w;
        }
#pragma unroll
        for (int q = 0; q < TC_J + NC - 1; q++) {
            uint32_t a[4], al[4];
            tc_ldsm4(a, s_a + 32 * q);
            if (SPLIT) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float x = __uint_as_float(a[e]);
                    a[e] = tc_tf32(x);
                    al[e] = tc_tf32(x - __uint_as_float(a[e]));
                }
            }
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const int j = q - c;
                if (j < 0 || j >= TC_J)
                    continue;
                tc_mma(small[j], a, bl[c][0], bl[c][1]);
                if (SPLIT)
                    tc_mma(small[j], al, bh[c][0], bh[c][1]);
                tc_mma(big[j], a, bh[c][0], bh[c][1]);
            }
        }
    }
}

/* Shared layout: the split taps (rows x tc_tap_pitch(NC) uint4 slots), then the input tile,
 * (TC_TH + rows - 1) rows of sw floats (4 mod 8: the eight rows of an ldmatrix phase fall in eight
 * different 16-byte bank groups). */
static size_t tc_taps_bytes(int rows, int nc)
{
    return sizeof(uint4) * (size_t)rows * tc_tap_pitch(nc);
}
static int tc_pitch(int nc)
{
    return fast_pitch(TC_TW + 8 * (nc - 1));
}

/* A block computes TC_TH x TC_TW outputs: warp (wx, wy) the 16 rows from 16 wy and the 64 columns
 * from 64 wx. The tile with its halo is staged as fast's direct kernel stages it (border rule
 * applied there), the taps split, and each warp then runs tc_rows and writes its two accumulators'
 * sum straight from the registers (each 8-column tile row a 32-byte segment). */
template <int NC>
__global__ void __launch_bounds__(TC_THREADS, 2)
    k_tf32x3(const float *__restrict__ d_in, float *__restrict__ d_out, const float *__restrict__ d_taps,
             conv_geom g, int sw)
{
    constexpr int TP = tc_tap_pitch(NC);
    extern __shared__ float4 s_dyn[];
    uint4 *s_taps = reinterpret_cast<uint4 *>(s_dyn);
    float *s_in = reinterpret_cast<float *>(s_taps + g.rows * TP);
    int th = TC_TH + g.rows - 1, bx0 = blockIdx.x * TC_TW, by0 = blockIdx.y * TC_TH;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wx0 = 64 * (warp % TC_WX),
        wy0 = 16 * (warp / TC_WX);
    int gq = lane >> 2, t = lane & 3, ok = 1;
    float big[TC_J][4], small[TC_J][4];

    fast_stage(s_in, d_in, bx0 - g.cols / 2, by0 - g.rows / 2, sw, th, g, TC_THREADS);
    for (int i = threadIdx.x; i < g.rows * TP; i += TC_THREADS) {
        int r = i / TP, c = i - r * TP - 7;
        float v0 = c >= 0 && c < g.cols ? __ldg(d_taps + r * g.cols + c) : 0.0f;
        float v1 = c + 4 >= 0 && c + 4 < g.cols ? __ldg(d_taps + r * g.cols + c + 4) : 0.0f;
        uint32_t h0 = tc_tf32(v0), h1 = tc_tf32(v1);
        s_taps[i] = make_uint4(h0, h1, tc_tf32(v0 - __uint_as_float(h0)), tc_tf32(v1 - __uint_as_float(h1)));
    }
    __syncthreads();
    for (int i = threadIdx.x; i < th * sw / 4; i += TC_THREADS) { /* sw is a multiple of 4 */
        uint4 u = reinterpret_cast<const uint4 *>(s_in)[i];
        ok &= ((u.x | u.y | u.z | u.w) & 0x1fffu) == 0; /* the 13 bits TF32 drops are zero */
    }
    int exact = __syncthreads_and(ok);
    if (by0 + wy0 >= g.h || bx0 + wx0 >= g.w) /* a warp wholly outside the plane */
        return;
#pragma unroll
    for (int j = 0; j < TC_J; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            big[j][e] = small[j][e] = 0.0f;
    {
        int mi = lane >> 3, row = (lane & 7) + 8 * (mi & 1),
            col = 4 * (mi >> 1); /* the lane's ldmatrix row */
        uint32_t s_a = (uint32_t)__cvta_generic_to_shared(s_in + (wy0 + row) * sw + wx0 + col);
        const uint4 *tb = s_taps + t - gq + 7;
        if (exact)
            tc_rows<NC, false>(big, small, s_a, tb, g.rows, sw);
        else
            tc_rows<NC, true>(big, small, s_a, tb, g.rows, sw);
    }
#pragma unroll
    for (int j = 0; j < TC_J; j++) {
        int x = bx0 + wx0 + 8 * j + 2 * t;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int y = by0 + wy0 + gq + 8 * half;
            if (y >= g.h || x >= g.w)
                continue;
            float v0 = big[j][2 * half] + small[j][2 * half],
                  v1 = big[j][2 * half + 1] + small[j][2 * half + 1];
            float *o = d_out + (size_t)y * g.pitch + x;
            if (x + 1 < g.w)
                *reinterpret_cast<float2 *>(o) = make_float2(v0, v1);
            else
                o[0] = v0;
        }
    }
}

/* ---- launcher ----------------------------------------------------------------------------- */

static size_t tc_smem(const struct kernel2d *k)
{
    int nc = tc_chunks(k->cols);
    return tc_taps_bytes(k->rows, nc) + sizeof(float) * (size_t)(TC_TH + k->rows - 1) * tc_pitch(nc);
}

template <int NC> static cudaError_t tc_launch(const struct conv_args *a)
{
    static unsigned long long attr_done; /* per device (fast_smem_attr) */
    size_t smem = tc_smem(a->k);
    dim3 grid(div_up(a->w, TC_TW), div_up(a->h, TC_TH));
    cudaError_t e = fast_smem_attr(k_tf32x3<NC>, a, smem, &attr_done);

    if (e != cudaSuccess)
        return e;
    k_tf32x3<NC>
        <<<grid, TC_THREADS, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, conv_geom_of(a), tc_pitch(NC));
    return cudaSuccess;
}

/* The launcher for each count of Toeplitz blocks, 1 .. TC_MAX_NC. */
static cudaError_t (*const tc_launchers[TC_MAX_NC])(const struct conv_args *) = {tc_launch<1>, tc_launch<2>,
                                                                                tc_launch<3>, tc_launch<4>,
                                                                                tc_launch<5>};

/* Limits: odd sides, at most TC_MAX_COLS (33) columns (the B blocks of a tap row a warp holds in
 * registers), any row count up to 63, and a tile that fits the opt-in shared memory of a block
 * (63 rows x 33 columns: 128 KiB, under the A100's 163 and the H100's 227). The block argument is
 * not used: the tiles are fixed (64 rows x 128 columns). */
extern "C" int conv_tf32x3(struct conv_args *a, char *err)
{
    const struct kernel2d *k = a->k;
    cudaError_t e;

    if ((k->cols & 1) == 0 || (k->rows & 1) == 0)
        return edged_fail(err, EDGED_E_PARAM, "tf32x3: kernel sides must be odd");
    if (k->cols > TC_MAX_COLS)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "tf32x3: the %dx%d taps are %d columns wide > %d (the Toeplitz blocks of a tap row "
                          "it holds); use fast",
                          k->rows, k->cols, k->cols, TC_MAX_COLS);
    if (tc_smem(k) > a->lim->smem_optin)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "tf32x3: a %dx%d tile needs %zu bytes of shared memory > %zu per block", k->rows,
                          k->cols, tc_smem(k), a->lim->smem_optin);
    if (a->check_only)
        return 0;
    if ((e = tc_launchers[tc_chunks(k->cols) - 1](a)) != cudaSuccess) {
        a->cuerr = e;
        a->cuwhat = "tf32x3: cudaFuncSetAttribute";
        return GCONV_CUDA_FAILED;
    }
    return conv_launched(a, "tf32x3 kernel");
}
