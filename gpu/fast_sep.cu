/* fast_sep.cu — fast, rank-1 square taps from 5x5 on: the fused separable band kernel, one row +
 * column pass through shared memory down bands of rows. */
#include <string.h>

#include <cuda_pipeline.h>

#include "fast_common.cuh"

/* A block of SEP_THREADS threads owns a 128-column strip of a band of rows and walks down it in
 * steps of SEP_ROWS input rows. Step j: the row pass filters staged input rows 32j .. 32j + 31 of
 * the band (counted from its first halo row; lane = row, warp = 16-column group, 16 outputs per
 * thread) and writes them TRANSPOSED into a ring of row-filtered samples, s_h[column][row % ring];
 * then, once the N rows an output needs are in the ring (from step lag = ceil((N - 1) / 32) on),
 * the column pass filters down the ring (thread = output column and 16 of the 32 rows of output
 * step j - lag) and writes them to global memory, the lanes of a warp on consecutive columns.
 * Meanwhile the input rows of step j + 1 are on their way into the other half of a double buffer
 * (bulk copies or cp.async: sep_bulk_rows), so loads and FMAs overlap inside the block. Each input
 * row is read once per band (the N - 1 halo rows of a band twice), filtered along x once, and each
 * output is written once: 2N FMAs per pixel, plus the halo. The ring holds the 32 + N - 1 rows in
 * use, rounded up to a multiple of 32 (so a warp's 32 row-pass stores never wrap); the row of a
 * sample is its ring index, the column pass reads its window through fast_ring.
 * The border rule is applied to the staged samples in x and y, which for rank-1 taps equals the
 * 2-D correlation under that rule (a zero row filters to zero; a replicated or reflected sample
 * row filters to the same values). */
#define SEP_ROWS 32
#define SEP_THREADS 256

/* The bands of a launch: rows 0 .. h1 - 1 in bands of b1 rows (band rows 0 .. n1 - 1 of the grid),
 * the rest in bands of b2 rows, launched last (fast_sep_bands). */
struct sep_bands {
    int b1, b2, h1, n1;
};

/* The staged columns begin at x0 - RX - OFF, a multiple of 4 (x0 is one), so that interior rows
 * are copied as 16-byte cp.async; the row pass's windows then begin OFF samples into a float4.
 * RX = N / 2 with N = 16 nfull + TAIL, so RX mod 4 = ((TAIL - 1) / 2) mod 4. */
static __host__ __device__ constexpr int sep_off(int tail)
{
    return (4 - ((tail - 1) / 2) % 4) % 4;
}

/* The shared layout for N taps (compile-time constants of each kernel, and fast_sep_plan's):
 * pitch of a staged row (the window's over-read included), rows of the ring (the 32 + N - 1 rows
 * in use, rounded up to a multiple of 32), pitch of a ring column. */
static __host__ __device__ constexpr int sep_sw(int n)
{
    return fast_pitch(sep_off(n % FAST_CHUNK) + FAST_TW + n + 2);
}
static __host__ __device__ constexpr int sep_ring(int n)
{
    return SEP_ROWS * (1 + (n - 1 + SEP_ROWS - 1) / SEP_ROWS);
}
static __host__ __device__ constexpr int sep_mp(int n)
{
    return fast_pitch(sep_ring(n));
}

/* The column pass's window source: a shared row used as a ring of `len` samples (a multiple of 4)
 * read from `start` on, wrapping once at most (start + i < 2 len), handed out as whole float4s.
 * It takes the row's shared-space address and wraps with an unsigned minimum, so a load costs an
 * add, a VIADDMNMX and a LEA; with a generic pointer and `k >= len ? k - len : k` the compiler
 * spent 7 instructions per load, recomputing the row's address each time: 2-5 % slower at N = 25
 * to 63 (figures in docs/perf/journal.md). */
struct fast_ring {
    unsigned base; /* shared-space address of the ring's sample 0 */
    int start, len;
    __device__ __forceinline__ float4 at(int i) const
    {
        unsigned k = (unsigned)(start + i), w = min(k, k - (unsigned)len); /* k - len wraps when k < len */
        float4 q;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(q.x), "=f"(q.y), "=f"(q.z), "=f"(q.w)
                     : "r"(base + 4 * w));
        return q;
    }
};

/* The staging work of one thread: one float4 column v of the nv staged from image column gx0 on,
 * rows r0, r0 + rpp, ... Its image columns are resolved once: vec when all four lie inside the
 * image row (one 16-byte copy), else each through border_index. */
struct sep_cols {
    int v, r0, rpp, gx;
    bool vec;
    int xi[4];
};

static __device__ __forceinline__ sep_cols sep_cols_of(int gx0, int nv, const conv_geom &g)
{
    sep_cols c;

    c.rpp = SEP_THREADS / nv, c.r0 = threadIdx.x / nv, c.v = threadIdx.x - c.r0 * nv;
    c.gx = gx0 + 4 * c.v;
    c.vec = c.gx >= 0 && c.gx + 3 < g.w;
#pragma unroll
    for (int e = 0; e < 4; e++)
        c.xi[e] = border_index(c.gx + e, g.w, g.border);
    return c;
}

/* Starts the copies of image rows gy0 .. gy0 + SEP_ROWS - 1 into s (pitch sw); rows and samples
 * outside the image under a zero border are stored as zeros. The caller commits and waits. */
static __device__ __forceinline__ void sep_stage(float *s, const float *__restrict__ d_in, const sep_cols &c,
                                                 int gy0, int sw, const conv_geom &g)
{
    if (c.r0 >= c.rpp)
        return;
    if (c.vec && gy0 >= 0 && gy0 + SEP_ROWS <= g.h) { /* all rows inside: no checks, pointers advance */
        const float *p = d_in + (size_t)(gy0 + c.r0) * g.pitch + c.gx;
        float *d = s + c.r0 * sw + 4 * c.v;
        size_t p_step = (size_t)c.rpp * g.pitch;
        int d_step = c.rpp * sw;
        for (int r = c.r0; r < SEP_ROWS; r += c.rpp, p += p_step, d += d_step)
            __pipeline_memcpy_async(d, p, 16);
        return;
    }
    for (int r = c.r0; r < SEP_ROWS; r += c.rpp) {
        int yi = border_index(gy0 + r, g.h, g.border);
        float *d = s + r * sw + 4 * c.v;
        if (yi < 0) {
            *reinterpret_cast<float4 *>(d) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            continue;
        }
        const float *row = d_in + (size_t)yi * g.pitch;
        if (c.vec) {
            __pipeline_memcpy_async(d, row + c.gx, 16);
            continue;
        }
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (c.xi[e] >= 0)
                __pipeline_memcpy_async(d + e, row + c.xi[e], 4);
            else
                d[e] = 0.0f;
        }
    }
}

/* Staging by the copy engine (sm_90 and later; EDGED_SEP_BULK=0 turns it off): when a step's
 * staged rows lie wholly inside the image, four lanes of each warp each start one bulk copy of a
 * row (cp.async.bulk, completing on an mbarrier per buffer, whose phase every thread waits for)
 * instead of every thread copying 16-byte pieces: sep_stage spends about 10 instructions per piece
 * (address arithmetic and three padding instructions ptxas puts before each LDGSTS), 5-6 pieces
 * per thread and step. The copy is a uniform instruction, so a warp starts its lanes' copies one
 * after the other: all 32 rows from warp 0 held the block's barrier up (slower than no bulk copies
 * at all), hence four rows per warp (figures in docs/perf/journal.md). Frame blocks and steps that
 * reach past the image take sep_stage. Rows are 16-byte aligned on both sides (pitched buffers;
 * staged columns start at a multiple of 4) and a multiple of 16 bytes. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SEP_BULK_ARCH 1
#else
#define SEP_BULK_ARCH 0
#endif

static __device__ __forceinline__ void sep_bar_init(unsigned bar)
{
#if SEP_BULK_ARCH
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n\tfence.proxy.async.shared::cta;" ::"r"(bar) : "memory");
#endif
}

/* All threads: rows gy .. gy + 31, columns gx .. gx + bytes / 4 - 1, into s (pitch sw), completing
 * on the mbarrier bar. Its one expected arrival (thread 0's, with the byte count) may come after
 * some copies have completed: the transaction count may go below zero meanwhile, and the phase
 * cannot complete before the arrival. The fence orders the block's earlier reads of the buffer
 * (before the caller's barrier) before the copy engine's writes. */
#define SEP_BULK_LANES (SEP_ROWS / (SEP_THREADS / 32))
static __device__ __forceinline__ void sep_bulk_rows(float *s, const float *__restrict__ d_in, int gx, int gy,
                                                     int sw, unsigned bytes, unsigned bar, const conv_geom &g)
{
#if SEP_BULK_ARCH
    int lane = threadIdx.x & 31, r = SEP_BULK_LANES * (threadIdx.x >> 5) + lane;

    if (threadIdx.x == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(SEP_ROWS * bytes)
                     : "memory");
    if (lane < SEP_BULK_LANES) {
        const float *src = d_in + (size_t)(gy + r) * g.pitch + gx;
        unsigned dst = (unsigned)__cvta_generic_to_shared(s + r * sw);
        asm volatile("fence.proxy.async.shared::cta;\n\t"
                     "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
                     : "memory");
    }
#endif
}

/* Waits until the mbarrier bar has completed the phase of the given parity. */
static __device__ __forceinline__ void sep_bar_wait(unsigned bar, unsigned parity)
{
#if SEP_BULK_ARCH
    unsigned done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}

/* One kernel per odd side N (fast_pass_n: the taps are parameter-bank operands), rather than one
 * per N % 16 with a run-time chunk loop: 14-16 % less time at N = 41 to 63 (figures in
 * docs/perf/journal.md). 3 blocks per SM asked of the register budget: ptxas takes 56-72 registers
 * on sm_90 and sm_80, no spill (CUDA 13.0); the shared memory admits 3 blocks up to N = 33, 2
 * above. */
template <int N>
__global__ void __launch_bounds__(SEP_THREADS, 3)
    k_fast_sep(const float *__restrict__ d_in, float *__restrict__ d_out, conv_geom g, sep_bands bands, int bulk,
               const __grid_constant__ fast_taps1d taps)
{
    constexpr int OFF = sep_off(N % FAST_CHUNK), rx = N / 2, sw = sep_sw(N), ring = sep_ring(N), mp = sep_mp(N);
    /* NV: float4 columns staged per row (the window of the block's 128 outputs) */
    constexpr int lag = (N - 1 + SEP_ROWS - 1) / SEP_ROWS, NV = (OFF + FAST_TW + N - 1 + 3) / 4;
    static_assert(mp >= ring + 4, "the mbarriers live in the pad of ring column 0");
    extern __shared__ float4 s_dyn[];
    int by = blockIdx.y, tail = by >= bands.n1, band = tail ? bands.b2 : bands.b1;
    int x0 = blockIdx.x * FAST_TW, y0 = tail ? bands.h1 + (by - bands.n1) * band : by * band, gy0 = y0 - rx;
    int steps = (min(band, g.h - y0) + SEP_ROWS - 1) / SEP_ROWS + lag;
    int lane = threadIdx.x & 31, grp = threadIdx.x >> 5, col = threadIdx.x % FAST_TW, hq = threadIdx.x / FAST_TW;
    float *s_in = reinterpret_cast<float *>(s_dyn), *s_h = s_in + 2 * SEP_ROWS * sw;
    const int gxs = x0 - rx - OFF; /* the first staged column */
    sep_cols c = sep_cols_of(gxs, NV, g);
    float acc[FAST_OUT];
    /* bulk staging for this block's columns; a step's rows gy .. gy + 31 must lie inside too */
    const bool bulk_x = SEP_BULK_ARCH && bulk && gxs >= 0 && gxs + 4 * NV <= g.w;
    /* the 2 mbarriers: the pad of ring column 0 (mp = ring + 4; ring samples only are ever read) */
    const unsigned bar0 = (unsigned)__cvta_generic_to_shared(s_h + ring);
    unsigned phase = 0; /* bit b: parity of buffer b's next bulk phase */
    auto bulk_step = [&](int gy) { return bulk_x && gy >= 0 && gy + SEP_ROWS <= g.h; };
    auto stage = [&](float *s, int gy, int b) {
        if (!bulk_step(gy))
            sep_stage(s, d_in, c, gy, sw, g);
        else
            sep_bulk_rows(s, d_in, gxs, gy, sw, 16 * NV, bar0 + 8 * b, g);
    };

    /* ring rows: where step j's row pass writes (32 j mod ring), where the column pass of output
     * step j - lag starts reading (its thread's 16 rows) */
    int put = 0, get = FAST_OUT * hq, x = x0 + col;
    const unsigned ring_base = (unsigned)__cvta_generic_to_shared(s_h + col * mp);
    float *o_col = d_out + (size_t)(y0 + FAST_OUT * hq) * g.pitch + x;

    if (bulk_x) {
        if (threadIdx.x == 0)
            sep_bar_init(bar0), sep_bar_init(bar0 + 8);
        __syncthreads();
    }
    stage(s_in, gy0, 0);
    __pipeline_commit();
    for (int j = 0; j < steps; j++) {
        const float *s_cur = s_in + (j & 1) * SEP_ROWS * sw;
        /* step j's rows have landed, and every thread is done with step j - 1 (its buffer and the
         * ring rows that step j overwrites) */
        __pipeline_wait_prior(0);
        if (bulk_step(gy0 + j * SEP_ROWS)) {
            sep_bar_wait(bar0 + 8 * (j & 1), (phase >> (j & 1)) & 1);
            phase ^= 1u << (j & 1);
        }
        __syncthreads();
        if (j + 1 < steps)
            stage(s_in + ((j + 1) & 1) * SEP_ROWS * sw, gy0 + (j + 1) * SEP_ROWS, (j + 1) & 1);
        __pipeline_commit();
        fast_pass_n<N, OFF>(acc, fast_flat{s_cur + lane * sw + FAST_OUT * grp}, taps.row);
#pragma unroll
        for (int o = 0; o < FAST_OUT; o++)
            s_h[(FAST_OUT * grp + o) * mp + put + lane] = acc[o];
        put = put + SEP_ROWS == ring ? 0 : put + SEP_ROWS;
        __syncthreads();
        if (j < lag)
            continue;
        fast_pass_n<N>(acc, fast_ring{ring_base, get, ring}, taps.col);
        get = get + SEP_ROWS >= ring ? get + SEP_ROWS - ring : get + SEP_ROWS;
        /* rows y .. y + 15 of column x; all 16 are inside the image but in the last step */
        int y = y0 + (j - lag) * SEP_ROWS + FAST_OUT * hq;
        if (x < g.w) {
            if (y + FAST_OUT <= g.h) {
#pragma unroll
                for (int o = 0; o < FAST_OUT; o++)
                    o_col[(size_t)o * g.pitch] = acc[o];
            } else {
                for (int o = 0; o < FAST_OUT && y + o < g.h; o++)
                    o_col[(size_t)o * g.pitch] = acc[o];
            }
        }
        o_col += (size_t)SEP_ROWS * g.pitch;
    }
}

/* ---- launcher ----------------------------------------------------------------------------- */

/* Two staged buffers of SEP_ROWS rows and the ring of 128 columns. N = 63: 49 + 50 KiB; N = 31:
 * 41 + 34 KiB (3 blocks of 256 threads per SM up to N = 33, 2 above). At 31 the three fill the SM
 * exactly: 16 bytes more per block for the mbarriers would leave 2 (a fifth slower; figures in
 * docs/perf/journal.md), so they live in the ring's pad, and the kernel has no static shared memory
 * (which would also lower the opt-in limit that fast_smem_attr sets). */
struct fast_plan fast_sep_plan(const struct kernel2d *k)
{
    struct fast_plan p;
    int n = k->cols;

    p.sep = 1;
    p.sw = 0; /* the kernel has its layout built in */
    p.smem = sizeof(float) * (2 * (size_t)SEP_ROWS * sep_sw(n) + (size_t)FAST_TW * sep_mp(n));
    return p;
}

/* The bands of the separable kernel. Rows per band: enough bands for about SEP_WAVES rounds of
 * the GPU's resident blocks. One round (each block as far down as it can, the halo rows read twice
 * as rarely as possible) lost: blocks that start together stage and compute together, and the GPU
 * idles while the slowest finish. Then the last round of blocks (EDGED_SEP_TAIL_PCT, 100 % of the
 * resident blocks) gets bands of at most EDGED_SEP_TAIL (128) rows, launched last, so that the GPU
 * drains in the time of a short band instead of idling SMs behind the tall ones. These defaults
 * were the best of the band heights and tails tried, or within 1 % of it, from N = 7 to 63
 * (figures in docs/perf/journal.md). Multiples of SEP_ROWS. Knobs: EDGED_SEP_BAND (rows; 0: from
 * the SM count), EDGED_SEP_TAIL (rows; 0: no tail), EDGED_SEP_TAIL_PCT (the tail's blocks as a
 * percentage of one round). */
#define SEP_WAVES 4
static sep_bands fast_sep_bands(const struct conv_args *a, const void *kernel, size_t smem)
{
    int strips = div_up(a->w, FAST_TW), knob = tuning()->sep_band, tail = tuning()->sep_tail,
        pct = tuning()->sep_tail_pct;
    long resident = gctx_resident(kernel, SEP_THREADS, smem), bands;
    sep_bands b;

    resident = resident > 0 ? resident : a->lim->sms; /* unknown: one block per SM */
    bands = SEP_WAVES * resident / strips;
    bands = bands < 1 ? 1 : bands;
    b.b1 = knob > 0 ? div_up(knob, SEP_ROWS) * SEP_ROWS : div_up(div_up(a->h, (int)bands), SEP_ROWS) * SEP_ROWS;
    b.b2 = tail > 0 ? div_up(tail, SEP_ROWS) * SEP_ROWS : b.b1;
    b.b2 = b.b2 < b.b1 ? b.b2 : b.b1;
    b.h1 = gctx_tail_split(a->h, strips, resident, b.b2 < b.b1 ? pct : 0, b.b1, b.b2);
    b.n1 = b.h1 / b.b1;
    return b;
}

template <int N>
static cudaError_t fast_sep_launch_n(const struct conv_args *a, const struct fast_plan *p)
{
    static unsigned long long attr_done; /* per device (fast_smem_attr) */
    conv_geom g = conv_geom_of(a);
    cudaError_t e = fast_smem_attr(k_fast_sep<N>, a, p->smem, &attr_done);
    fast_taps1d t = {};

    if (e != cudaSuccess)
        return e;
    sep_bands band = fast_sep_bands(a, reinterpret_cast<const void *>(k_fast_sep<N>), p->smem);
    dim3 grid(div_up(a->w, FAST_TW), band.n1 + div_up(a->h - band.h1, band.b2));
    memcpy(t.row, a->k->row, sizeof(float) * a->k->cols);
    memcpy(t.col, a->k->col, sizeof(float) * a->k->rows);
    k_fast_sep<N><<<grid, SEP_THREADS, p->smem, a->stream>>>(a->d_in, a->d_out, g, band,
                                                             tuning()->sep_bulk != 0, t);
    return cudaSuccess;
}

/* The separable kernel is compiled for each odd side (fast_pass_n) */
#define FAST_SEP_SIZES(M)                                                                                    \
    M(1) M(3) M(5) M(7) M(9) M(11) M(13) M(15) M(17) M(19) M(21) M(23) M(25) M(27) M(29) M(31) M(33) M(35)   \
    M(37) M(39) M(41) M(43) M(45) M(47) M(49) M(51) M(53) M(55) M(57) M(59) M(61) M(63)

cudaError_t fast_sep_launch(const struct conv_args *a, const struct fast_plan *p)
{
    switch (a->k->cols) {
#define FAST_SEP_CASE(N)                                                                                     \
    case N:                                                                                                  \
        return fast_sep_launch_n<N>(a, p);
        FAST_SEP_SIZES(FAST_SEP_CASE)
    }
    return cudaErrorInvalidValue; /* even sides never reach here: filter_kernel_check rejects them */
}
