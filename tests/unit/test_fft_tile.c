/* test_fft_tile.c — the fused fft tile (gpu/fft_tile_core.h) on the CPU: a thread block emulated by
 * looping the thread index through each phase, whole images cut into tiles as conv_fft.cu cuts
 * them, against the exact correlation (double) and cpu_serial, on random data: taps 1x1 to 63x63
 * (square and not), every border, sizes from 1x1 to several tiles. Floats within the bound of
 * docs/semantics.md ("fft") with the tile's log2(n^2) = 14; cpu_serial's own error printed beside.
 * Also: the slot map is a bijection, every phase's 8-byte shared accesses are free of bank
 * conflicts (16 bank pairs per half-warp), and no thread of a phase reads a slot that another
 * thread of the same phase writes (each phase run in both thread orders gives the same bits).
 * Env: EDGED_SEED repeats a run. */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "corr_exact.h"
#include "cpu_serial.h"
#include "fft_tile_core.h"

#define LOG2_N2 14.0 /* log2(128^2) */

static ft_c s_buf[FT_SLOTS], s_save[FT_SLOTS], s_fwd[FT_SLOTS];
static ft_c s_tw[FT_TW];
static double cs[2 * FT_N];

enum phase { P_ROW_FWD2, P_COL_FWD1, P_COL_MID, P_COL_INV2, P_ROW_INV1 };

static void run_phase(enum phase p, int t, const ft_c *spec, int vy)
{
    if (p == P_ROW_INV1 && !ft_row_needed(t, vy))
        return;
    switch (p) {
    case P_ROW_FWD2:
        ft_row_fwd2(t, s_buf);
        break;
    case P_COL_FWD1:
        ft_col_fwd1(t, s_buf, s_tw);
        break;
    case P_COL_MID:
        ft_col_mid(t, s_buf, s_tw, spec);
        break;
    case P_COL_INV2:
        ft_col_inv2(t, s_buf);
        break;
    case P_ROW_INV1:
        ft_row_inv1(t, s_buf, s_tw);
        break;
    }
}

static long order_mismatch; /* phases whose result depended on the threads' order */

/* One in-buffer phase over every thread, ascending; when check, also descending from the same
 * start, and the two results compared bit for bit. vy: the valid rows (the row inverse skips the
 * threads of the others, as the kernel does). */
static void block_phase(enum phase p, const ft_c *spec, int check, int vy)
{
    if (check)
        memcpy(s_save, s_buf, sizeof(s_buf));
    for (int t = 0; t < FT_THREADS; t++)
        run_phase(p, t, spec, vy);
    if (!check)
        return;
    memcpy(s_fwd, s_buf, sizeof(s_buf));
    memcpy(s_buf, s_save, sizeof(s_buf));
    for (int t = FT_THREADS - 1; t >= 0; t--)
        run_phase(p, t, spec, vy);
    if (memcmp(s_fwd, s_buf, sizeof(s_buf)) != 0)
        order_mismatch++;
}

/* One tile as the kernel runs it: tile[v * FT_N + u] in, res[y * FT_N + x] out (the first vy rows
 * at least). */
static void block_tile(const float *tile, const ft_c *spec, float *res, int check, int vy)
{
    for (int t = 0; t < FT_THREADS; t++) {
        ft_c v[16];
        for (int i = 0; i < 32; i++) {
            int x, y;
            ft_row_sample(t, i, &x, &y);
            if (i & 1)
                v[i >> 1].y = tile[y * FT_N + x];
            else
                v[i >> 1].x = tile[y * FT_N + x];
        }
        ft_row_fwd1(t, v, s_buf, s_tw);
    }
    block_phase(P_ROW_FWD2, spec, check, FT_N);
    block_phase(P_COL_FWD1, spec, check, FT_N);
    block_phase(P_COL_MID, spec, check, FT_N);
    block_phase(P_COL_INV2, spec, check, FT_N);
    block_phase(P_ROW_INV1, spec, check, vy);
    for (int t = 0; t < FT_THREADS; t++) {
        ft_c out[16];
        if (!ft_row_needed(t, vy))
            continue;
        ft_row_inv2(t, s_buf, out);
        for (int m2 = 0; m2 < 16; m2++) {
            int x, y;
            ft_row_sample(t, 2 * m2, &x, &y);
            res[y * FT_N + x] = out[m2].x, res[(y + 1) * FT_N + x] = out[m2].y;
        }
    }
}

static void spectrum(const struct kernel2d *k, ft_c *spec)
{
    for (int e = 0; e < FT_SPEC; e++)
        spec[e] = ft_spec_value(k->taps, k->rows, k->cols, e, cs);
}

/* The correlation of a w x h plane by tiles, as conv_fft.cu's fused kernel cuts it. */
static void fused_corr(const float *in, float *out, int w, int h, const struct kernel2d *k, enum border b,
                       const ft_c *spec)
{
    static float tile[FT_N * FT_N], res[FT_N * FT_N];
    int vx = FT_N - k->cols + 1, vy = FT_N - k->rows + 1;

    for (int oy = 0; oy < h; oy += vy)
        for (int ox = 0; ox < w; ox += vx) {
            for (int v = 0; v < FT_N; v++)
                for (int u = 0; u < FT_N; u++) {
                    int xi = border_index(ox - k->cols / 2 + u, w, b),
                        yi = border_index(oy - k->rows / 2 + v, h, b);
                    tile[v * FT_N + u] = xi < 0 || yi < 0 ? 0.0f : in[(size_t)yi * w + xi];
                }
            for (int i = 0; i < FT_N * FT_N; i++)
                res[i] = NAN; /* rows the block skips must not be read */
            block_tile(tile, spec, res, ox == 0 && oy == 0, vy);
            for (int y = 0; y < vy && oy + y < h; y++)
                for (int x = 0; x < vx && ox + x < w; x++)
                    out[(size_t)(oy + y) * w + ox + x] = res[y * FT_N + x];
        }
}

static double worst_ratio;

static void test_case(int w, int h, int rows, int cols, enum border b)
{
    size_t n = (size_t)w * h;
    float *in = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float)), *ser = malloc(n * sizeof(float));
    double *ref = malloc(n * sizeof(double));
    ft_c *spec = malloc(FT_SPEC * sizeof(ft_c));
    struct kernel2d k;

    if (!in || !got || !ser || !ref || !spec)
        abort();
    corr_kernel_fill(&k, rows, cols, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++)
        in[i] = check_rng_float(0.0f, 255.0f), got[i] = NAN;
    spectrum(&k, spec);
    fused_corr(in, got, w, h, &k, b, spec);
    corr_exact(in, ref, w, h, &k, b);
    cpu_serial_conv(in, ser, w, h, (size_t)w, &k, b);
    double bound = corr_fft_bound(LOG2_N2, 255.0, corr_abs_sum(&k));
    double e = corr_max_diff(got, ref, n), es = corr_max_diff(ser, ref, n);
    if (e / bound > worst_ratio)
        worst_ratio = e / bound;
    printf("tile %4dx%-4d taps %2dx%-2d %-9s max |err| %.3g (cpu_serial %.3g), bound %.3g\n", w, h, rows,
           cols, border_name(b), e, es, bound);
    CHECK(e <= bound, "%dx%d taps %dx%d %s: max error %g > bound %g", w, h, rows, cols, border_name(b), e,
          bound);
    free(in), free(got), free(ser), free(ref), free(spec);
}

/* The dbank (8-byte bank pair) of a slot, and the largest number of distinct slots one dbank gets
 * from one half-warp's accesses. */
static int half_warp_conflicts(const int *slot)
{
    int worst = 1;
    for (int i = 0; i < 16; i++) {
        int same = 1;
        for (int j = 0; j < i; j++)
            if (slot[j] % 16 == slot[i] % 16 && slot[j] != slot[i])
                same++;
        worst = same > worst ? same : worst;
    }
    return worst;
}

/* Every phase's accesses, register by register, half-warp by half-warp (the index formulas of
 * fft_tile_core.h's phases): at most one slot per bank pair. */
static void test_banks(void)
{
    int worst = 0, slot[16];

    for (int hw = 0; hw < FT_THREADS / 16; hw++)
        for (int r = 0; r < 16; r++) {
            int pat[4][16];
            for (int l = 0; l < 16; l++) {
                int t = hw * 16 + l, hi = t >> 3, lo = t & 7, kb = ft_kb(lo);
                /* row exchange (phases 1, 7): thread (j, n2), register k1 */
                pat[0][l] = ft_phys(2 * hi + (lo >> 2), 16 * (lo & 3)) ^ r;
                /* row split (2, 6): thread (j, a), register n2 of column a or kb */
                pat[1][l] = ft_phys(2 * hi, r < 8 ? lo : kb) ^ ft_phys((r & 7) >> 2, 16 * (r & 3));
                /* column first and last factors (3, 5): thread (c, n2), register n1 */
                pat[2][l] = ft_phys(lo, hi) ^ ft_phys(8 * r, 0);
                /* column middle (4): thread (c, a), register n2 of row block a or kb */
                pat[3][l] = ft_phys(8 * (r < 8 ? lo : kb), hi) ^ ft_phys(r & 7, 0);
            }
            for (int p = 0; p < 4; p++) {
                memcpy(slot, pat[p], sizeof(slot));
                int c = half_warp_conflicts(slot);
                worst = c > worst ? c : worst;
            }
        }
    CHECK(worst == 1, "shared accesses: up to %d slots on one bank pair in a half-warp", worst);

    static unsigned char seen[FT_SLOTS];
    int bad = 0;
    for (int y = 0; y < FT_N; y++)
        for (int c = 0; c < FT_N / 2; c++) {
            int s = ft_phys(y, c);
            if (s < 0 || s >= FT_SLOTS || seen[s]++)
                bad++;
        }
    CHECK(bad == 0, "ft_phys is not a bijection onto the slots: %d collisions", bad);
}

/* The spectrum's index map: every (ky, kx) of the half spectrum once. */
static void test_spec_index(void)
{
    static unsigned char seen[FT_N][FT_N / 2 + 1];
    int bad = 0;

    for (int e = 0; e < FT_SPEC; e++) {
        int ky, kx;
        ft_spec_freq(e, &ky, &kx);
        if (ky < 0 || ky >= FT_N || kx < 0 || kx > FT_N / 2 || seen[ky][kx]++)
            bad++;
    }
    for (int t = 0; t < FT_THREADS; t++)
        for (int v = 0; v < (t < 8 ? 32 : 16); v++) {
            int e = ft_spec_index(t, v), ky, kx;
            ft_spec_freq(e, &ky, &kx);
            if (kx != (v >= 16 ? FT_N / 2 : t >> 3) ||
                ky != ((v & 15) >> 3 ? ft_kb(t & 7) : (t & 7)) + 16 * (v & 7))
                bad++;
        }
    CHECK(bad == 0, "spectrum index map: %d bad entries", bad);
}

int main(void)
{
    static const struct {
        int w, h, rows, cols;
    } cases[] = {{257, 263, 31, 31}, {150, 97, 63, 63}, {1, 1, 63, 63},  {7, 5, 31, 31},  {300, 41, 13, 13},
                 {129, 130, 3, 3},   {1, 300, 1, 1},    {200, 9, 5, 31}, {99, 131, 63, 7}};

    check_rng_init();
    ft_twiddles(s_tw);
    for (int m = 0; m < FT_N; m++)
        cs[2 * m] = cos(2.0 * M_PI * m / FT_N), cs[2 * m + 1] = sin(2.0 * M_PI * m / FT_N);
    test_banks();
    test_spec_index();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int b = 0; b < BORDER_COUNT; b++)
            test_case(cases[i].w, cases[i].h, cases[i].rows, cases[i].cols, (enum border)b);
    CHECK(order_mismatch == 0, "%ld phases gave different bits when their threads ran in reverse order",
          order_mismatch);
    printf("largest error / bound: %.3g\n", worst_ratio);
    return check_summary();
}
