/* fast_stream.cu — fast, kernels up to 5x5 and full-rank 7x7 and 9x9: streaming register kernels (no
 * shared memory, no barrier) that read each input row once per 128-column strip and write each
 * output once. */
#include <string.h>

#include <type_traits>

#include "gconv_internal.h"

/* Layout. A block is one warp; it owns a strip of 128 columns (one float4 per lane) and walks down
 * SY output rows. Step s reads input row y0 - RY + s: one 16-byte load per lane, plus one load of
 * the RX samples just outside the strip by lanes 0 (left) and 31 (right). The lane's horizontal
 * window (4 + 2 RX samples) is completed from lanes -1 and +1 by shuffles, and the row is pushed
 * into the KR output rows it contributes to: output r gets tap row i at step r + i. So each output
 * adds its taps in row-major order, as cpu_serial does (here with FMA), and only KR - 1 float4
 * accumulators stay live between steps. Output r is complete after step r + KR - 1 and is written
 * with one 16-byte store per lane (512 contiguous bytes per warp). Direct correlation for rank-1
 * taps up to 5x5 too (but square 5x5, which fast_sep.cu's band kernel serves): at most 25 FMAs per
 * pixel are far from the FP32 peak at the memory floor.
 *
 * Registers, not local memory: every array is indexed with compile-time constants. The pending
 * outputs SHIFT down one accumulator per step (stream_direct::push): the oldest completes, each
 * other one moves to the next slot as it takes its tap row, and a new one starts in the last. Each
 * FMA chain reads one slot and writes the slot below, so the shift costs no moves, and every step
 * does the same thing whatever its row number. The row loop is rolled over periods of U = D + 1
 * steps, each period unrolled, so the prefetch ring slot of step s, ring[s % U], is a constant in
 * the body. Rows are fetched D steps before they are used, so a warp keeps about D rows of loads in
 * flight while it computes (ptxas may move a load within a period). Rotating the outputs through
 * acc[r % KR] instead needs a period that is a multiple of KR: the unrolled loop grows with KR^2,
 * and the warps stall on instruction fetch (slower from 7x7 on; figures in docs/perf/journal.md).
 *
 * Bytes. A strip reads SY + KR - 1 rows for SY output rows; its KR - 1 halo rows are read by the
 * strip above or below as well, which runs at about the same time, so they come from L2. Lanes 0
 * and 31 read one 32-byte sector each outside the strip (L2 hits too).
 *
 * Borders. A warp whose strip, its RX halo columns and its RY halo rows lie inside the image takes
 * the path with no checks. Other (frame) warps resolve each row once with border_index, and each
 * lane resolves its four columns once: a float4 inside the image row is still one 16-byte load,
 * other samples are loaded one by one at their border_index column (zero when -1). The shuffles
 * then hand every lane border-resolved neighbours, since each lane holds the resolved values of its
 * own columns whether or not they lie inside the image. Frame stores stay inside the image. */
#define STREAM_ROWS 48       /* output rows per strip, a multiple of both periods (4 and 3) */
#define STREAM_ROWS_SHORT 12 /* the same where STREAM_ROWS gives too few strips (stream_short) */
#define STREAM_WARPS_PER_SM 16 /* strips per SM below which stream_short holds */
#define STREAM_DEPTH 3       /* rows fetched ahead of the one in use, interior warps (stream_depth) */
#define STREAM_FRAME_DEPTH 2 /* the same in frame warps: their fetches need more registers */
#define STREAM_FULL 0xffffffffu

/* The interior depth for kr x kc taps: 2 for 9x9, whose unrolled period of 4 rows is the longest
 * (1412 instructions, 22 KB, against 1057 at depth 2: its warps stalled on instruction fetch), and
 * for 5x5, where it measured faster too; 3 elsewhere, the fastest there (figures in
 * docs/perf/journal.md). */
static __host__ __device__ constexpr int stream_depth(int kr, int kc)
{
    return kr == kc && (kr == 5 || kr == 9) ? 2 : STREAM_DEPTH;
}

/* Period of the unrolled row loop for depth d: the ring slot of the row being fetched must differ
 * from the one in use. 4 in interior warps (3 at 5x5 and 9x9), 3 in frame warps. */
static __host__ __device__ constexpr int stream_period(int d)
{
    return d + 1;
}

/* Warps (one-warp blocks) per SM that __launch_bounds__ asks the register budget to allow: 32, the
 * most one-warp blocks an SM holds (64 registers); 28 (72 registers) for 3x5 and 5x3, and 24 (80)
 * for 5x5, where fewer registers spill (sm_90 at 64, sm_80 at 72); 16 (128) for 7x7 and 9x9
 * (ptxas then takes 96 and 128, no spill; 7x7 spilled at 80). With one-warp blocks every
 * launch-wide branch depends on blockIdx only, and ptxas gives FFMA the taps as uniform-register
 * operands (with 4-warp blocks, whose branches depend on threadIdx, it kept them in ordinary
 * registers: 127 at 5x5). One-warp blocks also keep a slower frame warp from holding other warps'
 * registers. Re-check the ptxas -v report (0 bytes spill; CUDA 13.0, sm_90 and sm_80) after any
 * change. */
static __host__ __device__ constexpr int stream_min_warps(int kr, int kc)
{
    return kr * kc >= 49 ? 16 : kr * kc >= 25 ? 24 : kr * kc >= 15 ? 28 : 32;
}

template <int N>
struct stream_taps {
    float t[N]; /* row-major, a __grid_constant__ parameter: each launch carries its own */
};

/* Halo width HW: the samples loaded beyond each side of the strip for a horizontal radius rx. Up to
 * rx = 2, lanes 0 and 31 load rx each (one 4- or 8-byte load) and keep them. Wider halos would cost
 * every lane rx registers per prefetched row, so they are SPREAD: lanes 0..7 load one sample each of
 * columns xw - 8 .. xw - 1, lanes 24..31 of xw + 128 .. xw + 135 (one 32-byte sector per side, one
 * 4-byte load per lane), and the window brings them to lanes 0 and 31 by shuffles. */
#define STREAM_SPREAD 8
static __host__ __device__ constexpr int stream_halo(int rx)
{
    return rx <= 2 ? rx : STREAM_SPREAD;
}

/* One input row as a lane holds it: its four samples and the halo: for HW <= 2, in lanes 0 and 31,
 * the HW samples left (lane 0: columns xw - HW ..) or right (lane 31: columns xw + 128 ..) of the
 * strip; for a spread halo the lane's one sample (above). */
template <int HW>
static __host__ __device__ constexpr int stream_hn(void) /* halo samples a lane holds */
{
    return HW == STREAM_SPREAD ? 1 : HW;
}

template <int HW>
struct stream_row {
    float4 v;
    float h[stream_hn<HW>() > 0 ? stream_hn<HW>() : 1];
};

/* The halo column that this lane loads for a spread halo. */
static __device__ __forceinline__ int stream_spread_col(int xw, int lane)
{
    return lane >= 16 ? xw + 128 + (lane & 7) : xw - 8 + (lane & 7);
}

/* Interior source: no checks. The pointers advance one row per fetch (rows are fetched in order). */
template <int HW>
struct stream_src_inner {
    const float *p, *hp;
    int pitch;

    __device__ __forceinline__ stream_src_inner(const float *__restrict__ d_in, const conv_geom &g, int xw,
                                                int lane, int y)
    {
        const float *row = d_in + (size_t)y * g.pitch;
        p = row + xw + 4 * lane;
        /* lanes 1..30 load lane 0's address: their value is not used, and the warp's load touches
         * only the two sectors it needs, without a predicate */
        if constexpr (HW == STREAM_SPREAD)
            hp = row + stream_spread_col(xw, lane); /* lanes 8..23 load what 0..7 or 24..31 load */
        else
            hp = row + (lane == 31 ? xw + 128 : xw - HW);
        pitch = g.pitch;
    }

    __device__ __forceinline__ stream_row<HW> fetch()
    {
        stream_row<HW> r;
        r.v = __ldg(reinterpret_cast<const float4 *>(p));
        if constexpr (HW == STREAM_SPREAD) {
            r.h[0] = __ldg(hp);
        } else if constexpr (HW == 2) {
            float2 q = __ldg(reinterpret_cast<const float2 *>(hp)); /* xw - 2 and xw + 128: 8-byte aligned */
            r.h[0] = q.x, r.h[1] = q.y;
        } else if constexpr (HW == 1) {
            r.h[0] = __ldg(hp);
        }
        p += pitch;
        hp += pitch;
        return r;
    }
};

/* Frame source: columns resolved once per lane, rows once per fetch (in order, from y). */
template <int HW>
struct stream_src_frame {
    const float *d_in;
    int pitch, h, border, y, x0;
    int xi[4], hx[stream_hn<HW>() > 0 ? stream_hn<HW>() : 1];
    bool vec; /* the lane's four columns lie inside the image row: one 16-byte load */

    __device__ __forceinline__ stream_src_frame(const float *__restrict__ d_in_, const conv_geom &g, int xw,
                                                int lane, int y_)
    {
        d_in = d_in_, pitch = g.pitch, h = g.h, border = g.border, y = y_;
        x0 = xw + 4 * lane;
        vec = x0 + 3 < g.w;
#pragma unroll
        for (int e = 0; e < 4; e++)
            xi[e] = border_index(x0 + e, g.w, g.border);
        if constexpr (HW == STREAM_SPREAD) {
            hx[0] = lane < 8 || lane >= 24 ? border_index(stream_spread_col(xw, lane), g.w, g.border) : -1;
        } else {
#pragma unroll
            for (int j = 0; j < HW; j++)
                hx[j] = lane == 0    ? border_index(xw - HW + j, g.w, g.border)
                        : lane == 31 ? border_index(xw + 128 + j, g.w, g.border)
                                     : -1;
        }
    }

    __device__ __forceinline__ stream_row<HW> fetch()
    {
        stream_row<HW> r;
        int yi = border_index(y++, h, border);

        r.v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int j = 0; j < stream_hn<HW>(); j++)
            r.h[j] = 0.0f;
        if (yi < 0)
            return r;
        const float *row = d_in + (size_t)yi * pitch;
        if (vec) {
            r.v = __ldg(reinterpret_cast<const float4 *>(row + x0));
        } else {
            r.v.x = xi[0] >= 0 ? __ldg(row + xi[0]) : 0.0f;
            r.v.y = xi[1] >= 0 ? __ldg(row + xi[1]) : 0.0f;
            r.v.z = xi[2] >= 0 ? __ldg(row + xi[2]) : 0.0f;
            r.v.w = xi[3] >= 0 ? __ldg(row + xi[3]) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < stream_hn<HW>(); j++)
            if (hx[j] >= 0)
                r.h[j] = __ldg(row + hx[j]);
        return r;
    }
};

/* The lane's window of one row: samples x0 - RX .. x0 + 3 + RX, filled outwards from the lane's
 * own four. Sample x0 + q (q < 0) is sample x0 + q + 4 of lane - 1, already in that lane's window;
 * x0 + 4 + j is x0 + j of lane + 1. So every sample costs one shuffle from an adjacent lane, also
 * for RX > 4 (the samples of lane -2 come through lane -1's window), and lanes 0 and 31 take theirs
 * from the halo: their own, or for a spread halo one more shuffle per j: with xor mask 7 - j, lane 0
 * gets column xw - 1 - j from lane 7 - j and lane 31 gets xw + 128 + j from lane 24 + j. */
template <int RX, int HW>
static __device__ __forceinline__ void stream_window(const stream_row<HW> &r, int lane,
                                                     float (&w)[4 + 2 * RX])
{
    static_assert(HW >= RX, "the halo covers the radius");
    w[RX] = r.v.x, w[RX + 1] = r.v.y, w[RX + 2] = r.v.z, w[RX + 3] = r.v.w;
#pragma unroll
    for (int j = 0; j < RX; j++) {
        float left = __shfl_up_sync(STREAM_FULL, w[RX + 3 - j], 1);
        float right = __shfl_down_sync(STREAM_FULL, w[RX + j], 1);
        if constexpr (HW == STREAM_SPREAD) {
            float halo = __shfl_xor_sync(STREAM_FULL, r.h[0], 7 - j);
            w[RX - 1 - j] = lane == 0 ? halo : left;
            w[RX + 4 + j] = lane == 31 ? halo : right;
        } else {
            w[RX - 1 - j] = lane == 0 ? r.h[HW - 1 - j] : left;
            w[RX + 4 + j] = lane == 31 ? r.h[j] : right;
        }
    }
}

/* What the strip walk below needs of a filter: KR tap rows (outputs pending at once), the
 * horizontal radius RX and halo width HW, the taps' and the accumulators' types, push, which adds
 * one input row (window w) to the outputs it feeds and shifts them (the Registers paragraph above),
 * and result, the four values of the output just completed. For one correlation (stream_direct):
 * before the push, acc[p] (p < KR - 1) holds the output that takes tap row KR - 1 - p now, oldest
 * first; the push completes acc[0]'s output into acc[KR - 1], moves each acc[p] into acc[p - 1] with
 * its tap row added, and starts a new output in acc[KR - 2] with tap row 0. Tap rows above imax are
 * skipped: in the first KR - 1 steps of a strip those outputs would lie above it. */

/* Direct correlation: each output adds its taps in row-major order. Launched for sides up to 5, and
 * for full-rank 7x7 and 9x9 (49 and 81 FMAs per pixel, 96 and 128 registers), where it beats the
 * direct tile (fast_use_stream in fast.cu). */
template <int KR_, int KC_>
struct stream_direct {
    static constexpr int KR = KR_, KC = KC_, RX = KC / 2, HW = stream_halo(RX);
    using taps_t = stream_taps<KR * KC>;
    using acc_t = float[KR][4];

    static __device__ __forceinline__ void result(const acc_t &acc, const taps_t &, float (&r)[4])
    {
#pragma unroll
        for (int c = 0; c < 4; c++)
            r[c] = acc[KR - 1][c];
    }

    static __device__ __forceinline__ void push(acc_t &acc, const float (&w)[4 + 2 * RX], const taps_t &taps,
                                                int imax)
    {
#pragma unroll
        for (int p = 0; p < KR; p++) {
            int i = KR - 1 - p, dst = p == 0 ? KR - 1 : p - 1;
            if (i > imax)
                continue;
#pragma unroll
            for (int j = 0; j < KC; j++) {
                float t = taps.t[i * KC + j];
#pragma unroll
                for (int c = 0; c < 4; c++)
                    acc[dst][c] = (i == 0 && j == 0) ? t * w[c]
                                                     : fmaf(t, w[c + j], j == 0 ? acc[p][c] : acc[dst][c]);
            }
        }
    }
};

/* A MAGNITUDE step in one pass: the two correlations of each output are stream_direct's, the very
 * FMA chains fast_stream_conv runs for each kernel alone, kept side by side; result is
 * plan_magnitude of them (or its plan_threshold map when a threshold step is folded in), as
 * k_magnitude gives it from the two planes this pass no longer writes and reads back. */
struct stream_mag_taps3 {
    stream_taps<9> a, b;
    float cut;
    int cut_on;
};

template <int KR_, int KC_>
struct stream_magnitude {
    using one = stream_direct<KR_, KC_>;
    static constexpr int KR = KR_, KC = KC_, RX = one::RX, HW = one::HW;
    static_assert(KR == 3 && KC == 3, "the taps type holds 3x3 pairs");
    using taps_t = stream_mag_taps3;
    struct acc_t {
        float a[KR][4], b[KR][4];
    };

    static __device__ __forceinline__ void push(acc_t &acc, const float (&w)[4 + 2 * RX], const taps_t &taps,
                                                int imax)
    {
        one::push(acc.a, w, taps.a, imax);
        one::push(acc.b, w, taps.b, imax);
    }

    static __device__ __forceinline__ void result(const acc_t &acc, const taps_t &taps, float (&r)[4])
    {
#pragma unroll
        for (int c = 0; c < 4; c++) {
            float m = plan_magnitude(acc.a[KR - 1][c], acc.b[KR - 1][c]);
            r[c] = taps.cut_on ? plan_threshold(m, taps.cut) : m;
        }
    }
};

/* Writes output row yo, columns x0..x0+3, at o. FRAME: only the part inside the image. */
template <bool FRAME>
static __device__ __forceinline__ void stream_store(float *__restrict__ o, const float (&a)[4],
                                                    const conv_geom &g, int x0, int yo)
{
    float4 q = make_float4(a[0], a[1], a[2], a[3]);

    if (!FRAME || x0 + 3 < g.w) {
        if (!FRAME || yo < g.h)
            *reinterpret_cast<float4 *>(o) = q;
        return;
    }
    if (yo >= g.h || x0 >= g.w)
        return;
    o[0] = q.x;
    if (x0 + 1 < g.w)
        o[1] = q.y;
    if (x0 + 2 < g.w)
        o[2] = q.z;
}

/* One warp's strip: output rows y0 .. y0 + SY - 1 from input rows y0 - RY .. y0 + SY - 1 + RY
 * (steps 0 .. SY + KR - 2). Steps 0 .. KR - 2 only start outputs; from step KR - 1 on, step s
 * completes output s - KR + 1. Row s + D is fetched at step s. */
template <typename F, bool FRAME, int D, int SY>
static __device__ __forceinline__ void stream_strip(const float *__restrict__ d_in, float *__restrict__ d_out,
                                                    const conv_geom &g, const typename F::taps_t &taps, int xw,
                                                    int y0)
{
    constexpr int KR = F::KR, RX = F::RX, HW = F::HW, RY = KR / 2;
    constexpr int U = stream_period(D), NP = SY / U;
    constexpr int S0 = KR - 1; /* first step of the rolled loop */
    static_assert(SY % U == 0 && D < U, "a strip is whole periods, the ring holds D + 1 rows");
    using src_t = typename std::conditional<FRAME, stream_src_frame<HW>, stream_src_inner<HW>>::type;
    int lane = threadIdx.x & 31, x0 = xw + 4 * lane;
    src_t src(d_in, g, xw, lane, y0 - RY);
    float *o = d_out + (size_t)y0 * g.pitch + x0;
    stream_row<HW> ring[U];
    typename F::acc_t acc;
    float w[4 + 2 * RX], r[4];

#pragma unroll
    for (int s = 0; s < D; s++)
        ring[s] = src.fetch();
#pragma unroll
    for (int s = 0; s < S0; s++) { /* s + D < SY + KR - 1: these fetches always exist */
        ring[(s + D) % U] = src.fetch();
        stream_window<RX>(ring[s % U], lane, w);
        F::push(acc, w, taps, s);
    }
    /* Period p: steps S0 + p U + u, outputs p U + u. The last period fetches only up to the strip's
     * last row, so it is peeled (a conditional fetch in the rolled loop keeps dead ring values
     * alive across the back edge). */
    auto period = [&](int p, auto last) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (!decltype(last)::value || u + D < U)
                ring[(S0 + u + D) % U] = src.fetch();
            stream_window<RX>(ring[(S0 + u) % U], lane, w);
            F::push(acc, w, taps, KR - 1);
            F::result(acc, taps, r);
            stream_store<FRAME>(o, r, g, x0, y0 + p * U + u);
            o += g.pitch;
        }
    };
#pragma unroll 1
    for (int p = 0; p < NP - 1; p++) {
        if (FRAME && y0 + p * U >= g.h)
            return;
        period(p, std::false_type());
    }
    if (!FRAME || y0 + (NP - 1) * U < g.h)
        period(NP - 1, std::true_type());
}

/* Band order: the top band, then the bottom band, then the others top-down. Both edge bands are
 * frame warps (border checks, shallower prefetch: slower per row), and with the natural order the
 * bottom band would start last and stretch the kernel's tail; bands 1.. still start right after
 * their upper neighbours, whose halo rows are then in L2. */
static __device__ __forceinline__ int stream_band(void)
{
    int b = blockIdx.y, n = gridDim.y;
    return b == 0 ? 0 : b == 1 ? n - 1 : b - 1;
}

/* One warp's strip of SY rows of filter F: interior warps (the strip, its HW halo columns and RY
 * halo rows inside the image) without checks, the others through border_index. */
template <typename F, int SY>
static __device__ __forceinline__ void stream_run(const float *__restrict__ d_in, float *__restrict__ d_out,
                                                  const conv_geom &g, const typename F::taps_t &taps)
{
    constexpr int HW = F::HW, RY = F::KR / 2;
    int xw = blockIdx.x * 128, y0 = stream_band() * SY;

    if (xw >= HW && xw + 128 + HW <= g.w && y0 >= RY && y0 + SY + RY <= g.h)
        stream_strip<F, false, stream_depth(F::KR, F::KC), SY>(d_in, d_out, g, taps, xw, y0);
    else
        stream_strip<F, true, STREAM_FRAME_DEPTH, SY>(d_in, d_out, g, taps, xw, y0);
}

template <int KR, int KC, int SY>
__global__ void __launch_bounds__(32, stream_min_warps(KR, KC))
    k_fast_stream(const float *__restrict__ d_in, float *__restrict__ d_out, conv_geom g,
                  const __grid_constant__ stream_taps<KR * KC> taps)
{
    static_assert(KR % 2 == 1 && KC % 2 == 1 && KR <= 9 && KC <= 9, "odd sides up to 9 (spread halo: radius <= 8)");
    stream_run<stream_direct<KR, KC>, SY>(d_in, d_out, g, taps);
}

/* The magnitude pass (stream_magnitude) of 3x3 pairs. Its two accumulator sets take more registers
 * than one correlation: it asks for 28 warps per SM (72 registers) where k_fast_stream<3, 3> asks
 * for 32; ptxas takes 72, no spill (CUDA 13.0, sm_90 and sm_80). Re-check after any change. */
#define STREAM_MAG_MIN_WARPS 28
template <int SY>
__global__ void __launch_bounds__(32, STREAM_MAG_MIN_WARPS)
    k_fast_stream_mag3(const float *__restrict__ d_in, float *__restrict__ d_out, conv_geom g,
                       const __grid_constant__ stream_mag_taps3 taps)
{
    stream_run<stream_magnitude<3, 3>, SY>(d_in, d_out, g, taps);
}

/* ---- launchers --------------------------------------------------------------------------- */

/* Whether a plane takes strips of STREAM_ROWS_SHORT rows: where strips of STREAM_ROWS would give
 * fewer than STREAM_WARPS_PER_SM warps an SM. A warp's rows are a chain of dependent steps, and a
 * 2048 x 2048 plane has only 688 strips of 48 rows: too few warps for 132 SMs to hide the loads'
 * latency. A short strip reads its halo rows (from L2) once more per 12 rows instead of 48, which
 * costs where the strips already fill the device; the row count is a template argument, since a
 * count known only at run time made the larger planes slower. */
static bool stream_short(const struct conv_args *a)
{
    return (long)div_up(a->w, 128) * div_up(a->h, STREAM_ROWS) < (long)a->lim->sms * STREAM_WARPS_PER_SM;
}

/* Calls f(std::integral_constant<int, SY>()) with the plane's strip rows SY: STREAM_ROWS_SHORT
 * where stream_short holds, STREAM_ROWS elsewhere. The one place that picks them, for every
 * streaming kernel, so that each kernel's SY stays a template argument. */
template <typename Fn>
static void stream_with_rows(const struct conv_args *a, Fn &&f)
{
    if (stream_short(a))
        f(std::integral_constant<int, STREAM_ROWS_SHORT>());
    else
        f(std::integral_constant<int, STREAM_ROWS>());
}

/* The grid for strips of sy rows: one one-warp block per 128 columns and sy rows. */
static dim3 stream_grid(const struct conv_args *a, int sy)
{
    return dim3(div_up(a->w, 128), div_up(a->h, sy));
}

template <int KR, int KC>
static void stream_launch(const struct conv_args *a)
{
    stream_taps<KR * KC> t;
    conv_geom g = conv_geom_of(a);

    memcpy(t.t, a->k->taps, sizeof(t.t));
    stream_with_rows(a, [&](auto sy) {
        constexpr int SY = decltype(sy)::value;
        k_fast_stream<KR, KC, SY><<<stream_grid(a, SY), 32, 0, a->stream>>>(a->d_in, a->d_out, g, t);
    });
}

extern "C" int fast_stream_has(int kr, int kc)
{
    return (kr >= 1 && kr <= 5 && kc >= 1 && kc <= 5 && (kr & 1) && (kc & 1)) || (kr == kc && (kr == 7 || kr == 9));
}

/* The taps fast_stream_has admits; conv_fast decides which of them come here. No limits: no
 * shared memory, one warp per block. */
extern "C" int fast_stream_conv(struct conv_args *a, char *err)
{
    int kr = a->k->rows, kc = a->k->cols;

    if (!fast_stream_has(kr, kc))
        return edged_fail(err, EDGED_E_PARAM,
                          "fast streaming kernel: %dx%d taps, sides must be 1, 3 or 5, or 7x7 or 9x9", kr, kc);
    if (a->check_only)
        return 0;
    switch (kr * 16 + kc) {
#define STREAM_CASE(R, C)                                                                                    \
    case R * 16 + C:                                                                                         \
        stream_launch<R, C>(a);                                                                              \
        break;
        STREAM_CASE(1, 1) STREAM_CASE(1, 3) STREAM_CASE(1, 5)
        STREAM_CASE(3, 1) STREAM_CASE(3, 3) STREAM_CASE(3, 5)
        STREAM_CASE(5, 1) STREAM_CASE(5, 3) STREAM_CASE(5, 5)
        STREAM_CASE(7, 7) STREAM_CASE(9, 9)
#undef STREAM_CASE
    }
    return conv_launched(a, "fast streaming kernel");
}

extern "C" int fast_stream_magnitude(struct conv_args *a, const struct kernel2d *k0, const struct kernel2d *k1,
                                     int cut_on, float cut)
{
    stream_mag_taps3 t;
    conv_geom g = {a->w, a->h, a->pitch, 3, 3, (int)a->border};

    memcpy(t.a.t, k0->taps, sizeof(t.a.t));
    memcpy(t.b.t, k1->taps, sizeof(t.b.t));
    t.cut = cut, t.cut_on = cut_on;
    stream_with_rows(a, [&](auto sy) {
        constexpr int SY = decltype(sy)::value;
        k_fast_stream_mag3<SY><<<stream_grid(a, SY), 32, 0, a->stream>>>(a->d_in, a->d_out, g, t);
    });
    return conv_launched(a, "fast magnitude kernel");
}
