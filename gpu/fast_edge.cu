/* fast_edge.cu — the edge filter (gaussian5 -> laplacian3 -> |L| > T) in ONE pass over the u8
 * image for the fast variant: u8 (gray, gray+alpha, RGB or RGBA as luma) in, u8 edge map out, or
 * for 1-bit responses the map packed 8 pixels per byte (an eighth of the bytes to write and to
 * download). */
#include <stdlib.h>

#include "gconv_internal.h"

/* Layout. A block is one warp. It owns 32*PX columns (PX per lane) and walks down a strip of
 * sy output rows (g.sy, or g.sy2 for the tail strips launched last: edge_strips), keeping the
 * vertical windows in registers. Horizontal neighbours come from the adjacent lanes by shuffles;
 * lanes 0 and 31 have no outer neighbour, so they only supply the halo and lanes 1..30 write
 * outputs: a warp produces 30*PX columns, and the warps of the grid overlap by 2*PX columns. No
 * shared memory, no barrier. A block of one warp keeps every branch above the shuffles uniform for
 * the compiler (blockIdx and the parameters only), so it emits plain SHFLs without a divergent
 * fallback.
 *
 * Row loop. Step k of a strip reads input row y0-3+k; steps 0..5 (EDGE_WARM) only fill the
 * windows, every later step writes output row y0+k-6. The later steps run as a rolled loop whose
 * body is EDGE_P steps long: the windows are register arrays indexed by k % EDGE_P, which is a
 * compile-time constant inside the unrolled body, so they rotate by renaming and the loop runs
 * over any number of rows (sy, a multiple of EDGE_P) with a fixed code size.
 *
 * Arithmetic. The gaussian is [2,4,5,4,2]^T[2,4,5,4,2]/289. For gray input (u8 samples) the
 * unnormalised sums are integers: row pass h <= 17*255, column pass G <= 289*255, laplacian
 * N = G_n + G_w - 4 G_c + G_e + G_s, |N| <= 8*73695 < 2^24, so arithmetic on them is exact in any
 * order and N = 289 * L exactly, L being the exact-math result. The map is |N| > floor(289 T)
 * <=> |L| > T in exact math. cpu_serial rounds its float sums (taps a_i a_j/289 as floats, 25
 * sequential adds); it differs from exact math by ~1e-5..1e-4 in L, so the two agree wherever |L|
 * is not within that of T (the tests exempt |L| within 1e-3 of T). Gray runs the row pass and the
 * first sums of the column pass in 32-bit integers that hold the 16-bit sums of two pixels (each
 * <= 5*4335 < 2^15, so no carry crosses the halves), turns a half s into the float s * 2^-141
 * with one PRMT against the zero register (s in bits 8..23 of a word whose other bytes are 0: a
 * denormal or the smallest normals, whose value is the bit pattern times 2^-149), finishes G with
 * one FMA and computes the laplacian and the threshold test in that scale: every value is an
 * integer multiple of 2^-141 below 2^-117, so all of it is exact (float arithmetic keeps
 * denormals: the build passes -ftz=false). A PRMT with a constant exponent byte instead (2^15 +
 * s) needs the constant or its selector in a register, which at this kernel's register budget
 * the compiler re-materialised before every use: 6 % of the loop's instructions. For RGB input
 * the luma is a float (pixel_luma, evaluated with the same roundings as the host code), the sums
 * are float sums in this kernel's order (that of the first version), and the test is
 * |N| > 289 T: again ~1e-5 relative from the reference. The map byte of a pixel is the sign of
 * thr - |N| spread over the byte: negative exactly when |N| > thr.
 *
 * Borders, for both stages as the plan defines them (each stage applies the border to its own
 * input). Only the frame warps (those whose strip, with its halo, is not entirely inside the image)
 * ever see one; the interior warps run the same code for every border. The kernels come in two
 * builds, EXT false (zero) and EXT true (replicate, reflect: g.border at run time), so that the zero
 * build is exactly the kernel that served zero alone. zero: the gaussian sees zeros outside the
 * image, and the laplacian sees ZEROS outside the image (the intermediate's own border), not the
 * gaussian of the zero-padded input; G is forced to 0 at every position outside the image. EXT: a
 * frame warp reads every row and column through border_index, so the gaussian sees the border's
 * samples and G is right at every position inside the image. For the laplacian, reflect-101 needs
 * nothing more: the extended input is symmetric about rows and columns 0 and n-1, the gaussian is
 * symmetric, and every sum of its passes here, mirrored, is the same sum with the operands of its
 * additions swapped (float addition commutes; gray sums are exact integers), so G at -1 equals G at
 * 1 bit for bit, as the intermediate's own reflect border asks (n = 1: every row or column is the
 * same). replicate: G at -1 must be G at 0,
 * which the gaussian of the extended input is not, so the laplacian of a pixel on the image's edge
 * takes its own G for the neighbour outside (edge_out). */
#define EDGE_P 8                        /* row steps per loop iteration: the period of the windows */
#define EDGE_WARM 6                     /* input rows a strip reads before its first output row */
#define EDGE_FULL 0xffffffffu
#define EDGE_PX(CH) ((CH) == 1 ? 8 : 4) /* pixels per lane when w is a multiple of it */
#define EDGE_GRAY_EXP 141               /* gray sums s are carried as the floats s * 2^-141 */
#define EDGE_U8F 8388608.0f             /* 2^23: a byte b in the low mantissa -> 2^23 + b */

/* Rows fetched ahead (< EDGE_P): 24-36 bytes of raw samples per lane (3 rows for gray with 8
 * pixels per lane, which then fits 80 registers), except for the packed gray map, which runs about
 * 2 % faster without the ring (the u8 map and packed RGB 3-5 % faster with it; figures in
 * docs/perf/journal.md). */
static constexpr int edge_prefetch(int ch, int px, bool pack)
{
    return ch * px <= 4 ? 6 : px == 8 ? (pack ? 0 : 3) : ch * px <= 8 ? 4 : ch * px <= 12 ? 3 : 2;
}

/* Warps per SM the register budget allows (without spills in the row loops; the gray kernel with
 * 8 pixels per lane and the ring spills 8 bytes once per strip, before its loop): 32 (64
 * registers) for gray with 4 pixels per lane, 24 (80) otherwise, 20 (96) for 8 pixels per lane
 * without the prefetch ring (the compiler then hoists more loads itself); the kernels that also
 * write L (tests) get 128. */
static constexpr int edge_minb(int ch, int px, int pf, bool want_l)
{
    return want_l ? 16 : ch <= 2 && px == 4 ? 32 : px == 8 && pf == 0 ? 20 : 24;
}

struct edge_geom {
    int w, h, lpitch;
    int sy;    /* output rows per warp in rows 0 .. h1-1, a multiple of EDGE_P */
    int sy2;   /* output rows per warp from row h1 on (the tail strips), a multiple of EDGE_P */
    int h1;    /* rows covered by the sy strips, a multiple of sy */
    int gx;    /* warps across the image */
    int n1;    /* warps of the sy strips: gx * h1 / sy; warp b >= n1 is a tail strip */
    float thr; /* gray: floor(289 T) 2^-141; luma: 289 T */
    int border; /* EXT kernels: BORDER_REPLICATE or BORDER_REFLECT */
};

/* The raw bytes of a lane's PX pixels in one row, as loaded. */
template <int CH, int PX>
struct edge_raw {
    unsigned v[CH * PX / 4];
};

/* Pixels x0..x0+PX-1 of a row (a: the address of pixel x0, which may lie outside the image in
 * the frame), zero bytes outside the image. ALIGNED (w % PX == 0): the group lies at a multiple of
 * its size and entirely inside or entirely outside; one to three vector loads. Otherwise byte by
 * byte. FRAME false: every byte is inside. */
template <int CH, int PX, bool ALIGNED, bool FRAME>
static __device__ __forceinline__ edge_raw<CH, PX> edge_fetch(uintptr_t a, bool row_in,
                                                              const bool (&col_in)[PX])
{
    constexpr int NB = CH * PX, V = NB % 16 == 0 ? 16 : NB % 8 == 0 ? 8 : 4;
    edge_raw<CH, PX> r;

#pragma unroll
    for (int i = 0; i < NB / 4; i++)
        r.v[i] = 0;
    if (FRAME && !row_in)
        return r;
    if constexpr (!ALIGNED) {
#pragma unroll
        for (int c = 0; c < PX; c++)
            if (col_in[c])
#pragma unroll
                for (int ch = 0; ch < CH; ch++) {
                    const int n = c * CH + ch;
                    r.v[n / 4] |= (unsigned)__ldg(reinterpret_cast<const uint8_t *>(a + n)) << (8 * (n % 4));
                }
        return r;
    }
    if (FRAME && !col_in[0])
        return r;
    const uint8_t *px = reinterpret_cast<const uint8_t *>(a);
#pragma unroll
    for (int i = 0; i < NB / V; i++) {
        if constexpr (V == 16) {
            uint4 q = __ldg(reinterpret_cast<const uint4 *>(px) + i);
            r.v[4 * i] = q.x, r.v[4 * i + 1] = q.y, r.v[4 * i + 2] = q.z, r.v[4 * i + 3] = q.w;
        } else if constexpr (V == 8) {
            uint2 q = __ldg(reinterpret_cast<const uint2 *>(px) + i);
            r.v[2 * i] = q.x, r.v[2 * i + 1] = q.y;
        } else {
            r.v[i] = __ldg(reinterpret_cast<const unsigned *>(px) + i);
        }
    }
    return r;
}

/* Byte n of the group as the float 2^23 + b (one PRMT: b in the low mantissa of 2^23). */
template <int CH, int PX>
static __device__ __forceinline__ float edge_byte(const edge_raw<CH, PX> &r, int n)
{
    return __int_as_float((int)__byte_perm(r.v[n / 4], 0x4B000000u, 0x7440 | (n % 4)));
}

/* pixel_luma with the host's roundings (three products, two sums, no contraction), from bytes
 * given as 2^23 + b: fma(c, 2^23 + b, -c 2^23) is the exact c*b rounded once, i.e. c*b in float. */
static __device__ __forceinline__ float edge_luma(float r, float g, float b)
{
    const float pr = __fmaf_rn(0.299f, r, -0.299f * EDGE_U8F), pg = __fmaf_rn(0.587f, g, -0.587f * EDGE_U8F),
                pb = __fmaf_rn(0.114f, b, -0.114f * EDGE_U8F);
    return __fadd_rn(__fadd_rn(pr, pg), pb);
}

/* Alpha bytes of pixels 4q..4q+3, packed (2 and 4 channels; 0 otherwise). */
template <int CH, int PX>
static __device__ __forceinline__ unsigned edge_alpha(const edge_raw<CH, PX> &r, int q)
{
    if constexpr (CH == 2)
        return __byte_perm(r.v[2 * q], r.v[2 * q + 1], 0x7531);
    else if constexpr (CH == 4)
        return __byte_perm(__byte_perm(r.v[4 * q], r.v[4 * q + 1], 0x0073),
                           __byte_perm(r.v[4 * q + 2], r.v[4 * q + 3], 0x0073), 0x5410);
    else
        return 0u;
}

/* Row pass of gray input in 16-bit halves. The samples b_k (k = -4 .. PX+3: the left lane's last
 * word, the lane's words, the right lane's first word) are spread into E_q = (b_4q, b_4q+2) and
 * O_q = (b_4q+1, b_4q+3) and their copies two pixels on, E'_q = (b_4q+2, b_4q+4) and
 * O'_q = (b_4q+3, b_4q+5); then (h_4q, h_4q+2) = 2 (E'_q-1 + E'_q) + 4 (O'_q-1 + O_q) + 5 E_q and
 * (h_4q+1, h_4q+3) = 2 (O'_q-1 + O'_q) + 4 (E_q + E'_q) + 5 O_q in one 32-bit word each (halves
 * <= 17*255, no carry). H[2q] holds the even pixels of quad q, H[2q+1] the odd ones. */
template <int CH, int PX>
static __device__ __forceinline__ void edge_hrow_gray(const edge_raw<CH, PX> &r, unsigned (&H)[PX / 2])
{
    constexpr int NQ = PX / 4;
    unsigned wd[NQ], E[NQ], O[NQ], E2[NQ + 1], O2[NQ + 1]; /* E2[q + 1] = E'_q */

#pragma unroll
    for (int q = 0; q < NQ; q++) {
        wd[q] = CH == 1 ? r.v[q] : __byte_perm(r.v[2 * q], r.v[2 * q + 1], 0x6420);
        E[q] = __byte_perm(wd[q], 0u, 0x4240);
        O[q] = __byte_perm(wd[q], 0u, 0x4341);
    }
    const unsigned left = __shfl_up_sync(EDGE_FULL, wd[NQ - 1], 1),
                   right = __shfl_down_sync(EDGE_FULL, wd[0], 1);
    E2[0] = __byte_perm(left, E[0], 0x5452);
    O2[0] = __byte_perm(left, O[0], 0x5453);
#pragma unroll
    for (int q = 0; q < NQ; q++) {
        E2[q + 1] = q + 1 < NQ ? __byte_perm(E[q], E[q + 1], 0x5432) : __byte_perm(E[q], right, 0x3432);
        O2[q + 1] = q + 1 < NQ ? __byte_perm(O[q], O[q + 1], 0x5432) : __byte_perm(O[q], right, 0x3532);
    }
#pragma unroll
    for (int q = 0; q < NQ; q++) {
        H[2 * q] = ((E2[q] + E2[q + 1]) << 1) + ((O2[q] + O[q] + E[q]) << 2) + E[q];
        H[2 * q + 1] = ((O2[q] + O2[q + 1]) << 1) + ((E[q] + E2[q + 1] + O[q]) << 2) + O[q];
    }
}

/* Half `hi` of a word of 16-bit sums as the float half * 2^-141 (one PRMT: the half in bits 8..23,
 * zero bytes around it). */
static __device__ __forceinline__ float edge_half(unsigned v, int hi)
{
    return __int_as_float((int)__byte_perm(v, 0u, hi ? 0x4324 : 0x4104));
}

/* Row pass of luma input, in the float order of the first version of this kernel. */
template <int CH, int PX>
static __device__ __forceinline__ void edge_hrow_luma(const edge_raw<CH, PX> &r, float (&hs)[PX])
{
    float q[PX + 4]; /* q[c + 2]: pixel c, c = -2 .. PX+1 */

#pragma unroll
    for (int c = 0; c < PX; c++)
        q[c + 2] = edge_luma(edge_byte(r, c * CH), edge_byte(r, c * CH + 1), edge_byte(r, c * CH + 2));
    q[0] = __shfl_up_sync(EDGE_FULL, q[PX], 1);
    q[1] = __shfl_up_sync(EDGE_FULL, q[PX + 1], 1);
    q[PX + 2] = __shfl_down_sync(EDGE_FULL, q[2], 1);
    q[PX + 3] = __shfl_down_sync(EDGE_FULL, q[3], 1);
#pragma unroll
    for (int c = 0; c < PX; c++)
        hs[c] = fmaf(2.0f, q[c] + q[c + 4], fmaf(4.0f, q[c + 1] + q[c + 3], 5.0f * q[c + 2]));
}

/* Map bytes of four pixels from d_c = thr - |N_c| (negative exactly when |N_c| > thr): the sign
 * bytes gathered, then replicated over each byte (PRMT's sign mode). */
static __device__ __forceinline__ unsigned edge_mask4(float d0, float d1, float d2, float d3)
{
    unsigned a = __byte_perm(__float_as_uint(d0), __float_as_uint(d1), 0x0073),
             b = __byte_perm(__float_as_uint(d2), __float_as_uint(d3), 0x0073), m;
    asm("prmt.b32 %0, %1, %2, 0xDC98;" : "=r"(m) : "r"(a), "r"(b));
    return m;
}

/* Writes the map bytes of pixels x0..x0+PX-1 of a row (a: the address of pixel x0's output), with
 * alpha after each when the input has alpha. ALIGNED: the caller checked that the group is inside. */
template <int CH, int PX, bool ALIGNED>
static __device__ __forceinline__ void edge_store(uintptr_t a, const unsigned (&bits)[PX / 4],
                                                  const unsigned (&al)[PX / 4], const bool (&col_in)[PX])
{
    constexpr int OC = (CH == 2 || CH == 4) ? 2 : 1, NW = PX / 4 * OC;
    unsigned v[NW];

    if constexpr (ALIGNED) {
#pragma unroll
        for (int q = 0; q < PX / 4; q++)
            if constexpr (OC == 1) {
                v[q] = bits[q];
            } else {
                v[2 * q] = __byte_perm(bits[q], al[q], 0x5140);
                v[2 * q + 1] = __byte_perm(bits[q], al[q], 0x7362);
            }
        if constexpr (NW == 1) /* __stwb: a plain global store (the address is an integer here) */
            __stwb(reinterpret_cast<unsigned *>(a), v[0]);
        else if constexpr (NW == 2)
            __stwb(reinterpret_cast<uint2 *>(a), make_uint2(v[0], v[1]));
        else
            __stwb(reinterpret_cast<uint4 *>(a), make_uint4(v[0], v[1], v[2], v[3]));
    } else {
#pragma unroll
        for (int c = 0; c < PX; c++)
            if (col_in[c]) {
                unsigned char *p = reinterpret_cast<unsigned char *>(a + c * OC);
                __stwb(p, (unsigned char)(bits[c / 4] >> (8 * (c % 4))));
                if constexpr (OC == 2)
                    __stwb(p + 1, (unsigned char)(al[c / 4] >> (8 * (c % 4))));
            }
    }
}

/* The map bits of a lane's pixels as a PNG 1-bit row has them (the leftmost pixel in the most
 * significant bit; a pixel's map byte is 0 or 0xff, so one mask keeps the bit it lands on and a
 * multiply sums the four bytes, whose bits are distinct, into the top byte). PX 8: the lane's
 * byte. PX 4: the byte of this lane's pixels and the next lane's, which the lane whose x0 is a
 * multiple of 8 stores; every lane must call it (a shuffle). */
template <int PX>
static __device__ __forceinline__ unsigned edge_pack(const unsigned (&bits)[PX / 4])
{
    const unsigned hi = (bits[0] & 0x10204080u) * 0x01010101u >> 24; /* pixels 0..3: bits 7..4 */

    if constexpr (PX == 8)
        return hi | (bits[1] & 0x01020408u) * 0x01010101u >> 24;
    else
        return hi | __shfl_down_sync(EDGE_FULL, (bits[0] & 0x01020408u) * 0x01010101u >> 24, 1);
}

/* The windows of a strip, indexed by step % EDGE_P (see edge_step). */
template <int CH, int PX>
struct edge_win {
    unsigned H[EDGE_P][PX / 2];                         /* gray: h in 16-bit halves (edge_hrow_gray) */
    float hs[EDGE_P][PX], D[EDGE_P][PX], Q[EDGE_P][PX]; /* luma: h and its partial sums */
    float G[EDGE_P][PX], Gw[EDGE_P], Ge[EDGE_P];
    unsigned al[EDGE_P][PX / 4];
    edge_raw<CH, PX> raw[EDGE_P];
};

/* Where a strip is: the lane's first column, the row strides of input and output, and which of
 * its columns and outputs are real. Addresses are integers (uintptr_t) until a sample is known to
 * be inside: in the frame they run outside the image. */
template <int PX>
struct edge_lane {
    uintptr_t in; /* the image (EXT frame warps read rows through border_index) */
    uintptr_t istride, ostride;
    int x0;
    bool store; /* a writer lane, its group inside the image when ALIGNED */
    bool col_in[PX];
};

/* An EXT frame warp's row y (any y): the pixels x0..x0+PX-1 of source row border_index(y), each
 * pixel from its border_index column; an ALIGNED group inside the image as one vector load. */
template <int CH, int PX, bool ALIGNED>
static __device__ __forceinline__ edge_raw<CH, PX> edge_fetch_ext(const edge_lane<PX> &ln, const edge_geom &g,
                                                                  int y)
{
    const uintptr_t row = ln.in + (uintptr_t)border_index(y, g.h, g.border) * ln.istride;
    edge_raw<CH, PX> r;

    if constexpr (ALIGNED)
        if (ln.col_in[0])
            return edge_fetch<CH, PX, true, false>(row + (uintptr_t)ln.x0 * CH, true, ln.col_in);
#pragma unroll
    for (int i = 0; i < CH * PX / 4; i++)
        r.v[i] = 0;
#pragma unroll
    for (int c = 0; c < PX; c++) {
        const uintptr_t a = row + (uintptr_t)border_index(ln.x0 + c, g.w, g.border) * CH;
#pragma unroll
        for (int ch = 0; ch < CH; ch++) {
            const int n = c * CH + ch;
            r.v[n / 4] |= (unsigned)__ldg(reinterpret_cast<const uint8_t *>(a + ch)) << (8 * (n % 4));
        }
    }
    return r;
}

/* Row y of the lane's pixels, a: the address of pixel x0 of row y: zero bytes outside the image,
 * or for EXT frame warps the border's samples (edge_fetch_ext). */
template <int CH, int PX, bool ALIGNED, bool FRAME, bool EXT>
static __device__ __forceinline__ edge_raw<CH, PX> edge_load(uintptr_t a, int y, const edge_lane<PX> &ln,
                                                             const edge_geom &g)
{
    if constexpr (FRAME && EXT)
        return edge_fetch_ext<CH, PX, ALIGNED>(ln, g, y);
    else
        return edge_fetch<CH, PX, ALIGNED, FRAME>(a, (unsigned)y < (unsigned)g.h, ln.col_in);
}

/* Column pass of gray input at step k (k >= 4): G(k-2) = [2,4,5,4,2] of h(k-4..k) = 4 T + Y with
 * T = h(k-3)+h(k-2)+h(k-1) and Y = 2 (h(k-4)+h(k)) + h(k-2), both summed in 16-bit halves
 * (<= 5*4335) and turned into floats T 2^-141, Y 2^-141, so one FMA gives G 2^-141. */
template <int CH, int PX>
static __device__ __forceinline__ void edge_col_gray(const edge_win<CH, PX> &s, const int k, float (&gv)[PX])
{
    constexpr int P = EDGE_P;
    const int i0 = k % P, i1 = (k + P - 1) % P, i2 = (k + P - 2) % P, i3 = (k + P - 3) % P,
              i4 = (k + P - 4) % P;

#pragma unroll
    for (int m = 0; m < PX / 2; m++) {
        const unsigned t = s.H[i3][m] + s.H[i2][m] + s.H[i1][m],
                       y = ((s.H[i4][m] + s.H[i0][m]) << 1) + s.H[i2][m];
#pragma unroll
        for (int hi = 0; hi < 2; hi++) /* word m holds pixels 4 (m/2) + m%2 + 2 hi */
            gv[4 * (m / 2) + m % 2 + 2 * hi] = fmaf(4.0f, edge_half(t, hi), edge_half(y, hi));
    }
}

/* Column pass of luma input at step k: h(k) is stored, D(k-1) = h(k-1)+h(k),
 * Q(k-2) = D(k-3)+D(k-1) (four consecutive h), and from k = 4 on S = Q(k-3)+Q(k-2),
 * G(k-2) = 2 S + h(k-2) = [2,4,5,4,2] of h(k-4..k). */
template <int CH, int PX>
static __device__ __forceinline__ void edge_col_luma(edge_win<CH, PX> &s, const int k, const float (&hs)[PX],
                                                     float (&gv)[PX])
{
    constexpr int P = EDGE_P;
    const int i0 = k % P, i1 = (k + P - 1) % P, i2 = (k + P - 2) % P, i3 = (k + P - 3) % P;

#pragma unroll
    for (int c = 0; c < PX; c++) {
        s.hs[i0][c] = hs[c];
        if (k >= 1)
            s.D[i1][c] = s.hs[i1][c] + hs[c];
        if (k >= 3)
            s.Q[i2][c] = s.D[i3][c] + s.D[i1][c];
        if (k >= 4)
            gv[c] = fmaf(2.0f, s.Q[i3][c] + s.Q[i2][c], s.hs[i2][c]);
    }
}

/* The laplacian of the row whose G is in slot (k-3) % EDGE_P, between the rows in slots k-4 and
 * k-2, thresholded into map bytes (and N into L for WANT_L), stored at address aout (row yo);
 * PACK: as bits, one byte per 8 pixels (edge_pack). EXT frame warps under replicate: a neighbour
 * outside the image is the pixel's own G (the intermediate's replicate border). */
template <int CH, int PX, bool ALIGNED, bool WANT_L, bool FRAME, bool PACK, bool EXT>
static __device__ __forceinline__ void edge_out(const edge_win<CH, PX> &s, const int k,
                                                const edge_lane<PX> &ln, uintptr_t aout,
                                                float *__restrict__ d_L, const edge_geom &g, int yo)
{
    constexpr int P = EDGE_P;
    const int n = (k + P - 4) % P, r = (k + P - 3) % P, so = (k + P - 2) % P;
    unsigned bits[PX / 4];
    float L[PX];

#pragma unroll
    for (int q = 0; q < PX / 4; q++) {
        float d[4];
#pragma unroll
        for (int j = 0; j < 4; j++) { /* the reference's tap order: n, w, c, e, s */
            const int c = 4 * q + j;
            float gn = s.G[n][c], gw = c > 0 ? s.G[r][c - 1] : s.Gw[r], ge = c < PX - 1 ? s.G[r][c + 1] : s.Ge[r],
                  gs = s.G[so][c];
            if constexpr (FRAME && EXT)
                if (g.border == BORDER_REPLICATE) {
                    const int x = ln.x0 + c;
                    gn = yo == 0 ? s.G[r][c] : gn;
                    gs = yo == g.h - 1 ? s.G[r][c] : gs;
                    gw = x == 0 ? s.G[r][c] : gw;
                    ge = x == g.w - 1 ? s.G[r][c] : ge;
                }
            float t = gn + gw;
            t = fmaf(-4.0f, s.G[r][c], t);
            t = t + ge;
            t = t + gs;
            L[c] = t;
            d[j] = g.thr - fabsf(t);
        }
        bits[q] = edge_mask4(d[0], d[1], d[2], d[3]);
    }
    const unsigned packed = PACK ? edge_pack<PX>(bits) : 0u;
    if (ln.store && (!FRAME || yo < g.h)) {
        if constexpr (!PACK)
            edge_store<CH, PX, ALIGNED>(aout, bits, s.al[r], ln.col_in);
        else if (PX == 8 || (ln.x0 & 7) == 0)
            __stwb(reinterpret_cast<unsigned char *>(aout), (unsigned char)packed);
        if constexpr (WANT_L) /* tests: the float L = N / 289 (gray: N 2^-141 scaled back exactly) */
#pragma unroll
            for (int c = 0; c < PX; c++)
                if (ln.col_in[c])
                    d_L[(size_t)yo * g.lpitch + ln.x0 + c] =
                        CH <= 2 ? L[c] * 0x1p126f * (0x1p15f / 289.0f) : L[c] * (1.0f / 289.0f);
    }
}

/* Step k of a strip, reading row y = y0-3+k (k only matters through k % EDGE_P and whether
 * k < EDGE_WARM; both are compile-time constants at every call): the row pass h of row k, the
 * column pass G(k-2), and from step 6 on the output row y-3. With PF > 0 the row was fetched PF
 * steps ago and row y+PF is fetched now when `fetch` says it lies in the strip. ain, aout: the
 * addresses of pixel x0 of input row y and of output row y-3. */
template <int CH, int PX, bool ALIGNED, bool WANT_L, int PF, bool FRAME, bool PACK, bool EXT>
static __device__ __forceinline__ void
edge_step(edge_win<CH, PX> &s, const int k, const edge_lane<PX> &ln, uintptr_t ain, uintptr_t aout,
          float *__restrict__ d_L, const edge_geom &g, int y, bool fetch)
{
    const int i0 = k % EDGE_P, i2 = (k + EDGE_P - 2) % EDGE_P;
    const bool grow_in = (unsigned)(y - 2) < (unsigned)g.h;
    edge_raw<CH, PX> r;
    float gv[PX];

    if constexpr (PF > 0) {
        if (fetch)
            s.raw[(k + PF) % EDGE_P] = edge_load<CH, PX, ALIGNED, FRAME, EXT>(ain + PF * ln.istride, y + PF, ln, g);
        r = s.raw[i0];
    } else {
        r = edge_load<CH, PX, ALIGNED, FRAME, EXT>(ain, y, ln, g);
    }
#pragma unroll
    for (int q = 0; q < PX / 4; q++)
        s.al[i0][q] = edge_alpha(r, q);
    if constexpr (CH <= 2) {
        edge_hrow_gray(r, s.H[i0]);
        if (k >= 4)
            edge_col_gray(s, k, gv);
    } else {
        float hs[PX];
        edge_hrow_luma(r, hs);
        edge_col_luma(s, k, hs, gv);
    }
    if (k >= 4) {
#pragma unroll
        for (int c = 0; c < PX; c++)
            s.G[i2][c] = (!FRAME || EXT || (ln.col_in[c] && grow_in)) ? gv[c] : 0.0f;
        s.Gw[i2] = __shfl_up_sync(EDGE_FULL, s.G[i2][PX - 1], 1);
        s.Ge[i2] = __shfl_down_sync(EDGE_FULL, s.G[i2][0], 1);
    }
    if (k >= EDGE_WARM)
        edge_out<CH, PX, ALIGNED, WANT_L, FRAME, PACK, EXT>(s, k, ln, aout, d_L, g, y - 3);
}

/* One warp's strip: input rows y0-3 .. y0+sy+2, output rows y0 .. y0+sy-1. With FRAME false
 * (the warp's columns and all its rows lie inside the image) no sample is checked. */
template <int CH, int PX, bool ALIGNED, bool WANT_L, int PF, bool FRAME, bool PACK, bool EXT>
static __device__ __forceinline__ void edge_strip(const uint8_t *__restrict__ in, uint8_t *__restrict__ out,
                                                  float *__restrict__ d_L, const edge_geom &g, int xw, int y0,
                                                  int sy)
{
    constexpr int OC = (CH == 2 || CH == 4) ? 2 : 1;
    const int lane = threadIdx.x & 31, niter = sy / EDGE_P;
    edge_lane<PX> ln;
    edge_win<CH, PX> s;

    ln.x0 = xw + PX * lane;
    ln.in = reinterpret_cast<uintptr_t>(in);
    ln.istride = (uintptr_t)g.w * CH, ln.ostride = PACK ? (uintptr_t)g.w / 8 : (uintptr_t)g.w * OC;
#pragma unroll
    for (int c = 0; c < PX; c++)
        ln.col_in[c] = !FRAME || (unsigned)(ln.x0 + c) < (unsigned)g.w;
    ln.store = lane >= 1 && lane <= 30 && (!ALIGNED || ln.col_in[0]);
    /* pixel x0 of input row y0-3 and of output row y0 (modulo 2^64: they may lie before the image;
     * PACK: the byte holding pixel x0, x0 >> 3 rounding down for the lane left of the image) */
    uintptr_t ain = reinterpret_cast<uintptr_t>(in) + (uintptr_t)(((ptrdiff_t)(y0 - 3) * g.w + ln.x0) * CH),
              aout = reinterpret_cast<uintptr_t>(out) +
                     (uintptr_t)(PACK ? (ptrdiff_t)y0 * (g.w / 8) + (ln.x0 >> 3) : ((ptrdiff_t)y0 * g.w + ln.x0) * OC);
#pragma unroll
    for (int k = 0; k < PF; k++)
        s.raw[k] = edge_load<CH, PX, ALIGNED, FRAME, EXT>(ain + k * ln.istride, y0 - 3 + k, ln, g);
#pragma unroll
    for (int k = 0; k < EDGE_WARM; k++)
        edge_step<CH, PX, ALIGNED, WANT_L, PF, FRAME, PACK, EXT>(s, k, ln, ain + k * ln.istride, aout, d_L, g,
                                                                 y0 - 3 + k, true);
    ain += EDGE_WARM * ln.istride;
#pragma unroll 1
    for (int i = 0; i < niter; i++) {
        const bool more = i + 1 < niter; /* rows below the strip are not fetched */
        const int y = y0 + EDGE_WARM - 3 + i * EDGE_P;
#pragma unroll
        for (int j = 0; j < EDGE_P; j++) {
            edge_step<CH, PX, ALIGNED, WANT_L, PF, FRAME, PACK, EXT>(s, EDGE_WARM + j, ln, ain, aout, d_L, g,
                                                                     y + j, j + PF < EDGE_P || more);
            ain += ln.istride, aout += ln.ostride;
        }
    }
}

/* PF: rows fetched ahead into a ring of registers (0: each row loaded in its step, where the
 * compiler hoists the loads of a loop iteration itself; EDGED_EDGE_PREFETCH=0). PACK: the map as
 * 1-bit rows of w/8 bytes (w a multiple of 8, no alpha). EXT: replicate or reflect (g.border), else
 * zero; the interior warps run the same code either way. */
template <int CH, int PX, bool ALIGNED, bool WANT_L, int PF, bool PACK, bool EXT>
__global__ void __launch_bounds__(32, edge_minb(CH, PX, PF, WANT_L))
    k_edge_fast(const uint8_t *__restrict__ in, uint8_t *__restrict__ out, float *__restrict__ d_L,
                edge_geom g)
{
    const int b = (int)blockIdx.x, tail = b >= g.n1, bt = b - (tail ? g.n1 : 0), sy = tail ? g.sy2 : g.sy;
    const int xw = bt % g.gx * (30 * PX) - PX, y0 = (tail ? g.h1 : 0) + bt / g.gx * sy;

    /* rings: raw PF+1 rows, h (gray) 5, alpha 4, the others 3 */
    static_assert(PF < EDGE_P && EDGE_P >= 5 && PX % 4 == 0, "window rings too short");
    static_assert(!PACK || (ALIGNED && (CH == 1 || CH == 3)), "packed maps: aligned groups, no alpha");
    if (xw >= 0 && xw + 32 * PX <= g.w && y0 >= 3 && y0 + sy + 3 <= g.h)
        edge_strip<CH, PX, ALIGNED, WANT_L, PF, false, PACK, EXT>(in, out, d_L, g, xw, y0, sy);
    else
        edge_strip<CH, PX, ALIGNED, WANT_L, PF, true, PACK, EXT>(in, out, d_L, g, xw, y0, sy);
}

/* Tuning knobs (tuning.h): EDGED_EDGE_PREFETCH=0 selects the kernel without the prefetch ring for
 * gray and RGB aligned images; EDGED_EDGE_PX=4 keeps gray at 4 pixels per lane when w % 8 == 0 (a
 * loop body half as long, 8.6 KiB instead of 15.4, for 12 % more instructions per pixel);
 * the strip knobs are edge_strips'. Results do not depend on them. */
static int edge_prefetch_on(void) { return tuning()->edge_prefetch != 0; }
static int edge_px8_on(void) { return tuning()->edge_px != 4; }

/* A strip height knob rounded up to a multiple of EDGE_P (the tuning table bounds it to 8..65536). */
static int edge_rows(int v) { return (v + EDGE_P - 1) / EDGE_P * EDGE_P; }

/* The strips of an image of g->h rows and gx warps across, for a device that holds `resident`
 * warps of the kernel at once. Rows 0 .. h1-1 run in strips of sy rows, the rest in strips of sy2
 * rows, launched last (a 1-D grid: the block scheduler hands out warps in index order): the last
 * wave is short strips, so the GPU drains in the time of a short strip, while most rows pay the
 * 6-row halo of a tall one. The tail covers EDGED_EDGE_TAIL % of one wave of warps. The defaults
 * (48-row strips, a tail of 16-row strips covering 100 % of a wave) were the fastest of the
 * heights and tails tried for gray, and within 1 % of the best for RGB, so one rule serves both
 * (figures in docs/perf/journal.md). Knobs: EDGED_EDGE_SY, EDGED_EDGE_SY_TAIL, EDGED_EDGE_TAIL
 * (percent; 0: every strip sy rows). Returns the warps of the grid. */
static unsigned edge_strips(edge_geom *g, int gx, long resident)
{
    const int hr = div_up(g->h, EDGE_P) * EDGE_P; /* no strip taller than the image */
    int sy = edge_rows(tuning()->edge_sy), sy2 = edge_rows(tuning()->edge_sy_tail);
    long pct = tuning()->edge_tail;

    sy = sy < hr ? sy : hr;
    sy2 = pct <= 0 ? sy : sy2 < hr ? sy2 : hr;
    g->sy = sy, g->sy2 = sy2, g->gx = gx;
    g->h1 = gctx_tail_split(g->h, gx, resident, pct, sy, sy2);
    g->n1 = gx * (g->h1 / sy);
    return (unsigned)(g->n1 + (long)gx * div_up(g->h - g->h1, sy2));
}

template <int CH, int PX, bool ALIGNED, bool WANT_L, int PF, bool PACK>
static void edge_launch_k(const uint8_t *d_in8, uint8_t *d_out8, float *d_L, edge_geom g, cudaStream_t s)
{
    void (*k)(const uint8_t *, uint8_t *, float *, edge_geom) =
        g.border == BORDER_ZERO ? k_edge_fast<CH, PX, ALIGNED, WANT_L, PF, PACK, false>
                                : k_edge_fast<CH, PX, ALIGNED, WANT_L, PF, PACK, true>;
    const long resident = gctx_resident(reinterpret_cast<const void *>(k), 32, 0); /* one-warp blocks */
    const unsigned warps = edge_strips(&g, div_up(g.w, 30 * PX), resident);

    k<<<dim3(warps), dim3(32), 0, s>>>(d_in8, d_out8, d_L, g);
}

/* The widest lane group the width allows: EDGE_PX(CH) pixels when w is a multiple of it, else 4
 * (aligned when w % 4 == 0, byte by byte otherwise). The prefetch ring serves aligned rows. */
template <int CH, int PX, bool ALIGNED, bool PACK>
static void edge_launch_px(const uint8_t *d_in8, uint8_t *d_out8, float *d_L, const edge_geom &g,
                           cudaStream_t s)
{
    constexpr int PF = ALIGNED ? edge_prefetch(CH, PX, PACK) : 0;

    if (d_L) {
        edge_launch_k<CH, PX, ALIGNED, true, PF, PACK>(d_in8, d_out8, d_L, g, s);
        return;
    }
    if constexpr (ALIGNED && (CH == 1 || CH == 3))
        if (!edge_prefetch_on()) {
            edge_launch_k<CH, PX, ALIGNED, false, 0, PACK>(d_in8, d_out8, d_L, g, s);
            return;
        }
    edge_launch_k<CH, PX, ALIGNED, false, PF, PACK>(d_in8, d_out8, d_L, g, s);
}

/* pack: the caller checked fast_edge_packs (gray or RGB, w % 8 == 0). */
template <int CH>
static void edge_launch_ch(const uint8_t *d_in8, uint8_t *d_out8, float *d_L, const edge_geom &g, bool pack,
                           cudaStream_t s)
{
    if constexpr (CH == 1 || CH == 3)
        if (pack) {
            if (EDGE_PX(CH) == 8 && edge_px8_on())
                edge_launch_px<CH, EDGE_PX(CH), true, true>(d_in8, d_out8, d_L, g, s);
            else
                edge_launch_px<CH, 4, true, true>(d_in8, d_out8, d_L, g, s);
            return;
        }
    if (EDGE_PX(CH) == 8 && g.w % 8 == 0 && edge_px8_on())
        edge_launch_px<CH, EDGE_PX(CH), true, false>(d_in8, d_out8, d_L, g, s);
    else if (g.w % 4 == 0)
        edge_launch_px<CH, 4, true, false>(d_in8, d_out8, d_L, g, s);
    else
        edge_launch_px<CH, 4, false, false>(d_in8, d_out8, d_L, g, s);
}

/* The plan is the bank's edge filter exactly: gaussian5 then laplacian3 chained, threshold post,
 * any border, one plane. */
extern "C" int fast_edge_can(const struct filter_plan *p)
{
    static const int a[5] = {2, 4, 5, 4, 2}, lap[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    const struct kernel2d *k0 = &p->conv[0], *k1 = &p->conv[1];

    if (p->filter != FILTER_EDGE || p->combine != COMBINE_CHAIN || p->nconv != 2 || p->post != POST_THRESHOLD ||
        (unsigned)p->border >= BORDER_COUNT || p->planes != 1 || p->in_ch < 1 || p->in_ch > 4 || k0->rows != 5 ||
        k0->cols != 5 || k1->rows != 3 || k1->cols != 3 || !(p->threshold >= 0.0f))
        return 0;
    for (int i = 0; i < 25; i++)
        if (k0->taps[i] != (float)(a[i / 5] * a[i % 5]) / 289.0f)
            return 0;
    for (int i = 0; i < 9; i++)
        if (k1->taps[i] != (float)lap[i])
            return 0;
    return 1;
}

extern "C" int fast_edge_packs(int in_ch, int w) { return (in_ch == 1 || in_ch == 3) && w % 8 == 0; }

extern "C" int fast_edge_launch(const uint8_t *d_in8, uint8_t *d_out8, float *d_L, int lpitch, int w, int h,
                                int in_ch, float threshold, enum border border, int pack, cudaStream_t s)
{
    edge_geom g;
    double t289 = 289.0 * (double)threshold;

    g.w = w, g.h = h, g.lpitch = lpitch, g.border = (int)border; /* the strips: edge_strips, per kernel */
    /* gray: N is an integer, |N| > 289 T <=> |N| > floor(289 T), clamped far above any |N| and
     * carried as floor(289 T) 2^-141 (exact: an integer below 2^24 times a power of 2) */
    g.thr = in_ch <= 2 ? (float)ldexp(t289 > 1e7 ? 1e7 : floor(t289), -EDGE_GRAY_EXP) : (float)t289;
    switch (in_ch) {
    case 1:
        edge_launch_ch<1>(d_in8, d_out8, d_L, g, pack != 0, s);
        break;
    case 2:
        edge_launch_ch<2>(d_in8, d_out8, d_L, g, pack != 0, s);
        break;
    case 3:
        edge_launch_ch<3>(d_in8, d_out8, d_L, g, pack != 0, s);
        break;
    default:
        edge_launch_ch<4>(d_in8, d_out8, d_L, g, pack != 0, s);
        break;
    }
    return 0;
}
