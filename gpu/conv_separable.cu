/* conv_separable.cu — separable: a row pass then a column pass for rank-1 kernels (KTH §3.4,
 * Zagreb 4.3.3, cuda-samples convolutionSeparable): rows+cols multiply-adds instead of rows*cols. */
#include "gconv_internal.h"

#define SEP_STEPS 4 /* outputs per thread along the pass direction: amortises the halo */

/* One pass's taps travel as a kernel parameter: parameters live in a constant bank of their own
 * launch, so concurrent jobs with different taps cannot race (no __constant__ array to share). */
struct taps1d {
    float t[FILTER_MAX_SIDE];
    int n;
};

/* Row pass: a block of B x B threads covers B rows x (B*SEP_STEPS) columns; the rows with their
 * horizontal halo are staged in shared memory (border rule in x applied while loading). The
 * output rows are image rows 0..h-1, so no vertical border arises here. */
__global__ void __launch_bounds__(1024)
    k_sep_rows(const float *__restrict__ d_in, float *__restrict__ d_out, conv_geom g, taps1d row)
{
    extern __shared__ float s_rows[];
    int B = blockDim.x, r = row.n / 2, tw = B * SEP_STEPS + row.n - 1;
    int x0 = blockIdx.x * B * SEP_STEPS, y = blockIdx.y * B + threadIdx.y;
    float *s_row = s_rows + threadIdx.y * tw;

    for (int c = threadIdx.x; c < tw; c += B)
        s_row[c] = conv_load(d_in, x0 - r + c, y, g);
    __syncthreads();
    if (y >= g.h)
        return;
#pragma unroll
    for (int s = 0; s < SEP_STEPS; s++) {
        int lx = threadIdx.x + s * B, x = x0 + lx;
        if (x >= g.w)
            break;
        float acc = 0.0f;
        for (int j = 0; j < row.n; j++)
            acc += row.t[j] * s_row[lx + j];
        d_out[(size_t)y * g.pitch + x] = acc;
    }
}

/* Column pass over the row results: B columns x (B*SEP_STEPS) rows per block with the vertical
 * halo; the border rule in y is applied to whole filtered rows, which is exact for rank-1 taps
 * (a zero row stays zero, a replicated or reflected row is that row's filtered value). */
__global__ void __launch_bounds__(1024)
    k_sep_cols(const float *__restrict__ d_in, float *__restrict__ d_out, conv_geom g, taps1d col)
{
    extern __shared__ float s_cols[];
    int B = blockDim.x, r = col.n / 2, th = B * SEP_STEPS + col.n - 1;
    int x = blockIdx.x * B + threadIdx.x, y0 = blockIdx.y * B * SEP_STEPS;

    for (int c = threadIdx.y; c < th; c += B)
        s_cols[c * B + threadIdx.x] = conv_load(d_in, x, y0 - r + c, g);
    __syncthreads();
    if (x >= g.w)
        return;
#pragma unroll
    for (int s = 0; s < SEP_STEPS; s++) {
        int ly = threadIdx.y + s * B, y = y0 + ly;
        if (y >= g.h)
            break;
        float acc = 0.0f;
        for (int i = 0; i < col.n; i++)
            acc += col.t[i] * s_cols[(ly + i) * B + threadIdx.x];
        d_out[(size_t)y * g.pitch + x] = acc;
    }
}

static taps1d taps1d_of(const float *t, int n)
{
    taps1d p;
    for (int i = 0; i < FILTER_MAX_SIDE; i++)
        p.t[i] = i < n ? t[i] : 0.0f;
    p.n = n;
    return p;
}

/* Limits: rank-1 taps only (kernel2d.separable, as detected by the filter bank), and the staged
 * rows must fit shared memory: B*(B*SEP_STEPS+62)*4 bytes, 24,320 at B=32. */
extern "C" int conv_separable(struct conv_args *a, char *err)
{
    int B = a->block, n = a->k->rows > a->k->cols ? a->k->rows : a->k->cols;
    size_t smem = sizeof(float) * B * (B * SEP_STEPS + n - 1);
    conv_geom g = conv_geom_of(a);
    int rc;

    if (!a->k->separable)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "separable: the %dx%d taps are not rank 1 (not an outer product of a column and a "
                          "row); use another variant",
                          a->k->rows, a->k->cols);
    if (smem > a->lim->smem_block)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "separable: staging needs %zu bytes of shared memory > %zu", smem,
                          a->lim->smem_block);
    if (a->check_only)
        return 0;
    if (!a->d_tmp)
        return edged_fail(err, EDGED_E_INTERNAL, "separable: no intermediate plane");
    dim3 block(B, B), grid_r(div_up(a->w, B * SEP_STEPS), div_up(a->h, B)),
        grid_c(div_up(a->w, B), div_up(a->h, B * SEP_STEPS));
    k_sep_rows<<<grid_r, block, sizeof(float) * B *(B * SEP_STEPS + a->k->cols - 1), a->stream>>>(
        a->d_in, a->d_tmp, g, taps1d_of(a->k->row, a->k->cols));
    if ((rc = conv_launched(a, "separable row kernel")) < 0)
        return rc;
    k_sep_cols<<<grid_c, block, sizeof(float) * B *(B * SEP_STEPS + a->k->rows - 1), a->stream>>>(
        a->d_tmp, a->d_out, g, taps1d_of(a->k->col, a->k->rows));
    return conv_launched(a, "separable column kernel");
}
