/* fft_tile_core.h — the fused fft tile: one 128 x 128 real tile through a 2D FFT, the product with
 * the taps' spectrum and the inverse FFT, as phases of one block of FT_THREADS threads over one
 * shared buffer. One C source for the host (C11: tests/unit/test_fft_tile.c runs a block by looping
 * the thread index between phases) and the device (gpu/conv_fft.cu runs the phases with
 * __syncthreads between them). Host and device; CUDA types in device code only.
 *
 * The transforms. Each 128-point transform is split as 16 x 8 (Cooley-Tukey): x[8 n1 + n2] with
 * n1 < 16, n2 < 8; X[k1 + 16 k2] with k1 < 16, k2 < 8. Eight threads share one transform: thread n2
 * does the 16-point DFT over n1 in registers and multiplies by W^(n2 k1) (W = e^(-2 pi i / 128));
 * after one exchange through shared memory, thread a does the 8-point DFTs over n2 of the two
 * columns k1 = a and k1 = kb(a) = 16 - a (8 when a is 0), so that it holds both X[k] and X[128 - k]
 * of each of its 16 frequencies. The inverse runs the same factors the other way round: 8-point
 * inverse DFTs of the frequencies a thread holds, the conjugate twiddle, one exchange, 16-point
 * inverse DFTs. So a 1D transform costs one shared-memory round trip.
 *
 * The real tile. Rows 2j and 2j+1 go through one complex row transform as z = a + i b; thread a
 * then splits Z into the half spectra A[k] = Z[k] + conj(Z[-k]) and B[k] = -i (Z[k] - conj(Z[-k]))
 * (twice the spectra: the factor is in the taps' spectrum) for k = 0..64. A[0] and A[64] are real
 * and share the slot of column 0 as A[0] + i A[64], so the half spectrum of a row takes 64 complex
 * slots and the whole tile 128 x 64 (64 KiB). The column transforms run over those 64 columns;
 * column 0 holds two real columns packed, which the product step splits, multiplies and repacks.
 * Then the inverse column transforms, and the inverse row transforms take rows 2j, 2j+1 back as one
 * complex row (Z'[k] = A'[k] + i B'[k], with Z'[128 - k] from the conjugates), whose real and
 * imaginary parts are the two output rows.
 *
 * Shared memory. Every phase reads a set of slots into registers and writes its results back to
 * exactly the same set (the exchange layouts below are chosen so), so no barrier is needed inside a
 * phase, only between phases. Slot (y, c) of the tile (row y < 128, half-spectrum column c < 64)
 * lies at ft_phys(y, c): rows 64 slots apart, the low four bits of c XOR-swizzled by bits of y and
 * c / 16 so that every phase's 8-byte accesses hit 16 different bank pairs per half-warp. The map is
 * linear over GF(2), so an address is a per-thread base XOR a per-register constant. The row
 * exchange of row pair j keeps Y[n2][k1] at slot (2j + n2 / 4, k1 + 16 (n2 % 4)); the column
 * exchange of column c keeps Y[n2][k1] at (8 k1 + n2, c).
 *
 * The taps' spectrum S is n x (n/2 + 1) complex values in the order the threads of the product step
 * read them (ft_spec_index), each conj(T[ky][kx]) / (2 n^2), or / (4 n^2) for kx 0 and 64 (the
 * factors the split leaves), T the DFT of the taps zero-padded to n x n, summed in double. */
#ifndef EDGED_FFT_TILE_CORE_H
#define EDGED_FFT_TILE_CORE_H

#include <math.h>

#ifdef __CUDACC__
#define FT_HD static __forceinline__ __host__ __device__
#else
#define FT_HD static inline
#endif
#ifdef __CUDA_ARCH__
#define FT_UNROLL _Pragma("unroll")
#else
#define FT_UNROLL
#endif

#define FT_N 128                   /* tile side */
#define FT_THREADS 512             /* threads of a block: 8 per row pair, 8 per column */
#define FT_SLOTS (FT_N * FT_N / 2) /* complex slots of the shared buffer */
#define FT_TW_PITCH 17             /* twiddle table: 8 rows of 17 (16 used), bank-conflict free */
#define FT_TW (8 * FT_TW_PITCH)
#define FT_SPEC (FT_N * (FT_N / 2 + 1))  /* complex values of the taps' spectrum */
#define FT_SMEM ((FT_SLOTS + FT_TW) * 8) /* dynamic shared memory of a block, bytes */

/* A complex float, laid out as CUDA's float2 (8-byte aligned: one 64-bit access). */
typedef struct __attribute__((aligned(8))) ft_c {
    float x, y;
} ft_c;

FT_HD ft_c ft_make(float x, float y)
{
    ft_c r;
    r.x = x, r.y = y;
    return r;
}
FT_HD ft_c ft_add(ft_c a, ft_c b)
{
    return ft_make(a.x + b.x, a.y + b.y);
}
FT_HD ft_c ft_sub(ft_c a, ft_c b)
{
    return ft_make(a.x - b.x, a.y - b.y);
}
FT_HD ft_c ft_mul(ft_c a, ft_c b)
{
    return ft_make(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
/* a * conj(b) */
FT_HD ft_c ft_mulc(ft_c a, ft_c b)
{
    return ft_make(a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y);
}
/* a * (-i) forward, a * i inverse */
FT_HD ft_c ft_rot4(ft_c a, int inv)
{
    return inv ? ft_make(-a.y, a.x) : ft_make(a.y, -a.x);
}

#define FT_R2 0.70710678118654752f /* cos(pi/4) */
#define FT_C8 0.92387953251128676f /* cos(pi/8) */
#define FT_S8 0.38268343236508977f /* sin(pi/8) */

/* a * W16^m (W16 = e^(-2 pi i / 16); the conjugate when inv), m known at compile time once inlined:
 * quarter turns exact, eighth turns with one constant, the rest with two. */
FT_HD ft_c ft_rot16(ft_c a, int m, int inv)
{
    m &= 15;
    for (; m >= 4; m -= 4)
        a = ft_rot4(a, inv);
    if (m == 0)
        return a;
    if (m == 2) { /* (1 - i) / sqrt 2 forward */
        float p = a.x + (inv ? -a.y : a.y), q = a.y + (inv ? a.x : -a.x);
        return ft_make(p * FT_R2, q * FT_R2);
    }
    float c = m == 1 ? FT_C8 : FT_S8, s = m == 1 ? FT_S8 : FT_C8; /* W16^m = c - i s */
    if (inv)
        s = -s;
    return ft_make(a.x * c + a.y * s, a.y * c - a.x * s);
}

/* The radix-4 DFT of v[o], v[o + s], v[o + 2s], v[o + 3s], in place, in natural order. */
FT_HD void ft_dft4(ft_c *v, int o, int s, int inv)
{
    ft_c t0 = ft_add(v[o], v[o + 2 * s]), t1 = ft_sub(v[o], v[o + 2 * s]);
    ft_c t2 = ft_add(v[o + s], v[o + 3 * s]), t3 = ft_rot4(ft_sub(v[o + s], v[o + 3 * s]), inv);
    v[o] = ft_add(t0, t2), v[o + 2 * s] = ft_sub(t0, t2);
    v[o + s] = ft_add(t1, t3), v[o + 3 * s] = ft_sub(t1, t3);
}

/* out[k] = the 8-point DFT of in[] (in is consumed): one radix-2 step (decimation in frequency),
 * then two radix-4 DFTs. */
FT_HD void ft_dft8(ft_c *in, ft_c *out, int inv)
{
    FT_UNROLL
    for (int n = 0; n < 4; n++) {
        ft_c a = in[n], b = in[n + 4];
        in[n] = ft_add(a, b);
        in[n + 4] = ft_rot16(ft_sub(a, b), 2 * n, inv);
    }
    ft_dft4(in, 0, 1, inv);
    ft_dft4(in, 4, 1, inv);
    FT_UNROLL
    for (int k = 0; k < 4; k++)
        out[2 * k] = in[k], out[2 * k + 1] = in[4 + k];
}

/* out[k] = the 16-point DFT of in[] (in is consumed): 4 x 4, x[4 n1 + n2]. */
FT_HD void ft_dft16(ft_c *in, ft_c *out, int inv)
{
    FT_UNROLL
    for (int n2 = 0; n2 < 4; n2++) {
        ft_dft4(in, n2, 4, inv); /* in[n2 + 4 k1] = Y[n2][k1] */
        FT_UNROLL
        for (int k1 = 1; k1 < 4; k1++)
            in[n2 + 4 * k1] = ft_rot16(in[n2 + 4 * k1], n2 * k1, inv);
    }
    FT_UNROLL
    for (int k1 = 0; k1 < 4; k1++)
        ft_dft4(in, 4 * k1, 1, inv); /* in[4 k1 + k2] = X[k1 + 4 k2] */
    FT_UNROLL
    for (int k = 0; k < 16; k++)
        out[k] = in[4 * (k & 3) + (k >> 2)];
}

/* The slot of tile row y < 128, half-spectrum column c < 64 (see the header comment). */
FT_HD int ft_phys(int y, int c)
{
    int h = ((c >> 4) & 1) | (((y ^ (y >> 3)) & 1) << 1) | ((((y >> 2) ^ (y >> 4) ^ (c >> 5)) & 1) << 2) |
            ((((y >> 1) ^ (y >> 5)) & 1) << 3);
    return y * 64 + (c & 48) + ((c ^ h) & 15);
}

/* The second column of thread a's pair: 16 - a, or 8 for a = 0. */
FT_HD int ft_kb(int a)
{
    return a ? 16 - a : 8;
}

/* The twiddle table: tw[q * FT_TW_PITCH + k] = W^(q k) for q < 8, k < 16 (W = e^(-2 pi i / 128)),
 * computed in double. Host only: the kernel gets it as a launch parameter. */
static inline void ft_twiddles(ft_c *tw)
{
    for (int q = 0; q < 8; q++)
        for (int k = 0; k < FT_TW_PITCH; k++) {
            double t = 2.0 * 3.14159265358979323846 * (q * k) / FT_N;
            tw[q * FT_TW_PITCH + k] = ft_make((float)cos(t), (float)-sin(t));
        }
}

/* Thread n2 = t % 8 of a transform: the 16-point DFT of v[] (v[n1] = x[8 n1 + n2]), times
 * W^(n2 k1), to slot base ^ off(k1) for k1 < 16. */
FT_HD void ft_first_fwd(ft_c *v, int n2, ft_c *s_buf, int base, int col_major, const ft_c *s_tw)
{
    ft_c o[16];

    ft_dft16(v, o, 0);
    FT_UNROLL
    for (int k1 = 0; k1 < 16; k1++)
        s_buf[base ^ (col_major ? ft_phys(8 * k1, 0) : k1)] =
            k1 ? ft_mul(o[k1], s_tw[n2 * FT_TW_PITCH + k1]) : o[0];
}

/* Thread m1 = t % 8 of an inverse transform: reads Y'[k1][m1] from slot base ^ off(k1) and returns
 * x[m1 + 8 m2] in out[m2]. */
FT_HD void ft_last_inv(ft_c *out, const ft_c *s_buf, int base, int col_major)
{
    ft_c v[16];

    FT_UNROLL
    for (int k1 = 0; k1 < 16; k1++)
        v[k1] = s_buf[base ^ (col_major ? ft_phys(8 * k1, 0) : k1)];
    ft_dft16(v, out, 1);
}

/* Thread a's inverse 8-point DFT of its column k1 (f[k2] = X[k1 + 16 k2], consumed) times the
 * conjugate twiddles W^(-k1 m1) (k1 = a: tw[a][m1]; k1 = kb: tw[m1][kb]), to slot base ^ off(m1):
 * Y'[k1][m1] where the forward's Y[m1][k1] was. */
FT_HD void ft_first_inv(ft_c *f, int a, int h, ft_c *s_buf, int base, int col_major, const ft_c *s_tw)
{
    ft_c g[8];

    ft_dft8(f, g, 1);
    FT_UNROLL
    for (int m1 = 0; m1 < 8; m1++) {
        ft_c w = s_tw[h ? m1 * FT_TW_PITCH + ft_kb(a) : a * FT_TW_PITCH + m1];
        s_buf[base ^ (col_major ? ft_phys(m1, 0) : ft_phys(m1 >> 2, 16 * (m1 & 3)))] =
            m1 ? ft_mulc(g[m1], w) : g[0];
    }
}

/* Of the frequencies thread a holds after its 8-point DFTs (f[0][i] at k = a + 16 i, f[1][i] at
 * kb + 16 i), the one at 128 - k for f[h][i] is f[*hm][*im] (a is only tested for 0). */
FT_HD void ft_mirror_pos(int h, int i, int a, int *hm, int *im)
{
    *hm = a ? 1 - h : h;
    *im = a || h ? 7 - i : (8 - i) & 7;
}
FT_HD ft_c ft_mirror(ft_c f[2][8], int h, int i, int a)
{
    int h1, i1, h0, i0;

    ft_mirror_pos(h, i, 1, &h1, &i1);
    ft_mirror_pos(h, i, 0, &h0, &i0);
    return a ? f[h1][i1] : f[h0][i0];
}

/* The transforms p and q of two real sequences from that of z = p + i q, at k, given z[k] and
 * m = z[-k]: *p = z + conj(m), *q = -i (z - conj(m)) (twice the transforms). */
FT_HD void ft_split(ft_c z, ft_c m, ft_c *p, ft_c *q)
{
    *p = ft_make(z.x + m.x, z.y - m.y);
    *q = ft_make(z.y + m.y, m.x - z.x);
}

/* Phase 1, row transforms, first factor. Thread t = 8 j + n2 brings v[n1] = (tile[2j][8 n1 + n2],
 * tile[2j + 1][8 n1 + n2]) for n1 < 16 (ft_row_sample says where); v is consumed. */
FT_HD void ft_row_fwd1(int t, ft_c *v, ft_c *s_buf, const ft_c *s_tw)
{
    int j = t >> 3, n2 = t & 7;

    ft_first_fwd(v, n2, s_buf, ft_phys(2 * j + (n2 >> 2), 16 * (n2 & 3)), 0, s_tw);
}

/* Where thread t's sample i of phase 1 comes from: tile row *y (even i: row 2j; odd: 2j + 1),
 * column *x; v[i / 2] gets sample i in .x for even i, .y for odd. */
FT_HD void ft_row_sample(int t, int i, int *x, int *y)
{
    *y = 2 * (t >> 3) + (i & 1);
    *x = 8 * (i >> 1) + (t & 7);
}

/* Phase 2, row transforms, second factor and the split into the half spectra of rows 2j and
 * 2j + 1: thread t = 8 j + a. */
FT_HD void ft_row_fwd2(int t, ft_c *s_buf)
{
    int j = t >> 3, a = t & 7;
    int base[2] = {ft_phys(2 * j, a), ft_phys(2 * j, ft_kb(a))};
    ft_c in[8], f[2][8];

    FT_UNROLL
    for (int g = 0; g < 2; g++) {
        FT_UNROLL
        for (int n2 = 0; n2 < 8; n2++)
            in[n2] = s_buf[base[g] ^ ft_phys(n2 >> 2, 16 * (n2 & 3))];
        ft_dft8(in, f[g], 0); /* f[0][k2] = Z[a + 16 k2], f[1][k2] = Z[kb + 16 k2] */
    }
    FT_UNROLL
    for (int v = 0; v < 8; v++) { /* k = (g ? kb : a) + 16 i, and its mirror 128 - k */
        int g = v >> 2, i = v & 3;
        ft_c ra, rb;
        ft_split(f[g][i], ft_mirror(f, g, i, a), &ra, &rb);
        if (g == 0 && i == 0 && a == 0) /* k = 0 and k = 64 share the slot: A[0] + i A[64] */
            ra.y = 2.0f * f[0][4].x, rb.y = 2.0f * f[0][4].y;
        s_buf[base[g] ^ ft_phys(0, 16 * i)] = ra;
        s_buf[base[g] ^ ft_phys(1, 16 * i)] = rb;
    }
}

/* Phase 3, column transforms, first factor: thread t = 8 c + n2 over rows 8 n1 + n2 of column c. */
FT_HD void ft_col_fwd1(int t, ft_c *s_buf, const ft_c *s_tw)
{
    int c = t >> 3, n2 = t & 7, base = ft_phys(n2, c);
    ft_c v[16];

    FT_UNROLL
    for (int n1 = 0; n1 < 16; n1++)
        v[n1] = s_buf[base ^ ft_phys(8 * n1, 0)];
    ft_first_fwd(v, n2, s_buf, base, 1, s_tw);
}

/* Index of the taps' spectrum that thread t reads as its value v < 16 in phase 4 (column 64:
 * value 16 + v of threads 0..7), and the frequency (ky, kx) it holds. */
FT_HD int ft_spec_index(int t, int v)
{
    if (v >= 16)
        return FT_N * FT_N / 2 + ((((v - 16) >> 1) * 8 + t) << 1) + (v & 1);
    return (((v >> 1) * FT_THREADS + t) << 1) + (v & 1);
}
FT_HD void ft_spec_freq(int e, int *ky, int *kx)
{
    int t, v;

    if (e >= FT_N * FT_N / 2) {
        e -= FT_N * FT_N / 2;
        t = (e >> 1) & 7, v = ((e >> 4) << 1) + (e & 1), *kx = FT_N / 2;
    } else {
        t = (e >> 1) & (FT_THREADS - 1), v = ((e >> 10) << 1) + (e & 1), *kx = t >> 3;
    }
    *ky = ((v >> 3) ? ft_kb(t & 7) : (t & 7)) + 16 * (v & 7);
}

/* The value of the taps' spectrum at spectrum index e: conj(DFT of the rows x cols taps at
 * (ky, kx)) / (2 n^2), / (4 n^2) for kx 0 and 64, summed in double; cs[2 m], cs[2 m + 1] =
 * cos, sin of 2 pi m / n. */
FT_HD ft_c ft_spec_value(const float *taps, int rows, int cols, int e, const double *cs)
{
    int ky, kx;
    double re = 0, im = 0;

    ft_spec_freq(e, &ky, &kx);
    for (int v = 0; v < rows; v++) {
        int m = (ky * v) & (FT_N - 1);
        for (int u = 0; u < cols; u++, m = (m + kx) & (FT_N - 1)) {
            double tap = taps[v * cols + u];
            re += tap * cs[2 * m], im += tap * cs[2 * m + 1];
        }
    }
    double w = 1.0 / ((kx == 0 || kx == FT_N / 2 ? 4.0 : 2.0) * FT_N * FT_N);
    return ft_make((float)(re * w), (float)(im * w));
}

/* One value of the taps' spectrum, through the read-only path on the device. */
FT_HD ft_c ft_spec_load(const ft_c *p)
{
#ifdef __CUDA_ARCH__
    float2 v = __ldg((const float2 *)p);
    return ft_make(v.x, v.y);
#else
    return *p;
#endif
}

/* Two adjacent values of the taps' spectrum (p 16-byte aligned): one read-only 16-byte load on the
 * device. */
FT_HD void ft_spec_load2(const ft_c *p, ft_c *lo, ft_c *hi)
{
#ifdef __CUDA_ARCH__
    float4 v = __ldg((const float4 *)p);
    *lo = ft_make(v.x, v.y), *hi = ft_make(v.z, v.w);
#else
    *lo = p[0], *hi = p[1];
#endif
}

/* Phase 4, column transforms, second factor, the product with the taps' spectrum d_spec, the
 * inverse's first factor: thread t = 8 c + a. */
FT_HD void ft_col_mid(int t, ft_c *s_buf, const ft_c *s_tw, const ft_c *d_spec)
{
    int c = t >> 3, a = t & 7;
    int base[2] = {ft_phys(8 * a, c), ft_phys(8 * ft_kb(a), c)};
    ft_c in[8], f[2][8];

    FT_UNROLL
    for (int h = 0; h < 2; h++) {
        FT_UNROLL
        for (int n2 = 0; n2 < 8; n2++)
            in[n2] = s_buf[base[h] ^ ft_phys(n2, 0)];
        ft_dft8(in, f[h], 0); /* f[0][k2] = X[a + 16 k2], f[1][k2] = X[kb + 16 k2] */
    }
    if (c) {
        FT_UNROLL
        for (int v = 0; v < 16; v += 2) {
            ft_c s0, s1;
            ft_spec_load2(d_spec + ft_spec_index(t, v), &s0, &s1);
            f[v >> 3][v & 7] = ft_mul(f[v >> 3][v & 7], s0);
            f[v >> 3][(v & 7) + 1] = ft_mul(f[v >> 3][(v & 7) + 1], s1);
        }
    } else { /* column 0 holds columns 0 and 64 as P = C0 + i C64: split, multiply, repack, with the
              * inputs parked in the thread's own slots (the mirrors are read from there) */
        FT_UNROLL
        for (int v = 0; v < 16; v++)
            s_buf[base[v >> 3] ^ ft_phys(v & 7, 0)] = f[v >> 3][v & 7];
        FT_UNROLL
        for (int v = 0; v < 16; v++) {
            int h = v >> 3, i = v & 7, h1, i1, h0, i0;
            ft_mirror_pos(h, i, 1, &h1, &i1);
            ft_mirror_pos(h, i, 0, &h0, &i0);
            ft_c c0, c64, m = s_buf[a ? base[h1] ^ ft_phys(i1, 0) : base[h0] ^ ft_phys(i0, 0)];
            ft_split(s_buf[base[h] ^ ft_phys(i, 0)], m, &c0, &c64);
            c0 = ft_mul(c0, ft_spec_load(d_spec + ft_spec_index(t, v)));
            c64 = ft_mul(c64, ft_spec_load(d_spec + ft_spec_index(t, 16 + v)));
            f[h][i] = ft_make(c0.x - c64.y, c0.y + c64.x);
        }
    }
    ft_first_inv(f[0], a, 0, s_buf, base[0], 1, s_tw);
    ft_first_inv(f[1], a, 1, s_buf, base[1], 1, s_tw);
}

/* Phase 5, column transforms, inverse second factor: thread t = 8 c + m1. */
FT_HD void ft_col_inv2(int t, ft_c *s_buf)
{
    int c = t >> 3, m1 = t & 7, base = ft_phys(m1, c);
    ft_c o[16];

    ft_last_inv(o, s_buf, base, 1);
    FT_UNROLL
    for (int m2 = 0; m2 < 16; m2++)
        s_buf[base ^ ft_phys(8 * m2, 0)] = o[m2];
}

/* Whether thread t of phases 6 and 7 (row pair j = t / 8) has rows in the first vy, the valid ones:
 * the others may skip both phases. */
FT_HD int ft_row_needed(int t, int vy)
{
    return 2 * (t >> 3) < vy;
}

/* Phase 6, row transforms, inverse first factor: thread t = 8 j + a packs the half spectra of rows
 * 2j and 2j + 1 into the frequencies a + 16 k2 and kb + 16 k2 of one complex row. */
FT_HD void ft_row_inv1(int t, ft_c *s_buf, const ft_c *s_tw)
{
    int j = t >> 3, a = t & 7;
    int base[2] = {ft_phys(2 * j, a), ft_phys(2 * j, ft_kb(a))};
    ft_c f[2][8], mir[2][4], z64 = ft_make(0.0f, 0.0f);

    FT_UNROLL
    for (int v = 0; v < 8; v++) { /* k = (h ? kb : a) + 16 i */
        int h = v >> 2, i = v & 3;
        ft_c al = s_buf[base[h] ^ ft_phys(0, 16 * i)], be = s_buf[base[h] ^ ft_phys(1, 16 * i)];
        f[h][i] = ft_make(al.x - be.y, al.y + be.x);   /* Z'[k] */
        mir[h][i] = ft_make(al.x + be.y, be.x - al.y); /* Z'[128 - k] */
        if (h == 0 && i == 0 && a == 0) {              /* the slot of column 0 is A'[0] + i A'[64] */
            f[0][0] = ft_make(al.x, be.x);
            z64 = ft_make(al.y, be.y);
        }
    }
    FT_UNROLL
    for (int r = 0; r < 4; r++) {
        f[0][4 + r] = a ? mir[1][3 - r] : r ? mir[0][4 - r] : z64;
        f[1][4 + r] = a ? mir[0][3 - r] : mir[1][3 - r];
    }
    ft_first_inv(f[0], a, 0, s_buf, base[0], 0, s_tw);
    ft_first_inv(f[1], a, 1, s_buf, base[1], 0, s_tw);
}

/* Phase 7, row transforms, inverse second factor: thread t = 8 j + m1 gets out[m2] = (result row
 * 2j, row 2j + 1) at column m1 + 8 m2 (ft_row_sample(t, 2 m2, ...) says where). */
FT_HD void ft_row_inv2(int t, const ft_c *s_buf, ft_c *out)
{
    int j = t >> 3, m1 = t & 7;

    ft_last_inv(out, s_buf, ft_phys(2 * j + (m1 >> 2), 16 * (m1 & 3)), 0);
}

#endif
