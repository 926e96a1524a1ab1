/* conv_tiled.cu — tiled: adaptive 1xT tiling (KTH §3.5 after van Werkhoven et al.): one block of
 * B x B threads computes T output tiles side by side, T picked per launch. */
#include "gconv_internal.h"

#define TILED_MAX_T 8 /* tiles per block: T in 1, 2, 4, 8 */

/* The (T*B+cols-1) x (B+rows-1) input region is staged once; each thread keeps T accumulators in
 * registers, so every tap read from cache feeds T multiply-adds and the halo is loaded once per T
 * tiles instead of once per tile. */
template <int T>
__global__ void __launch_bounds__(1024) k_tiled(const float *__restrict__ d_in, float *__restrict__ d_out,
                                                const float *__restrict__ d_taps, conv_geom g)
{
    extern __shared__ float s_tile[];
    int B = blockDim.x, rr = g.rows / 2, rc = g.cols / 2;
    int tw = T * B + g.cols - 1, th = B + g.rows - 1;
    int x0 = blockIdx.x * T * B, y0 = blockIdx.y * B;
    float acc[T];

    for (int idx = threadIdx.y * B + threadIdx.x; idx < tw * th; idx += B * B) {
        int r = idx / tw, c = idx - r * tw;
        s_tile[idx] = conv_load(d_in, x0 - rc + c, y0 - rr + r, g);
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < T; t++)
        acc[t] = 0.0f;
    for (int i = 0; i < g.rows; i++) {
        const float *s_row = s_tile + (threadIdx.y + i) * tw + threadIdx.x;
        for (int j = 0; j < g.cols; j++) {
            float f = __ldg(d_taps + i * g.cols + j);
#pragma unroll
            for (int t = 0; t < T; t++)
                acc[t] += f * s_row[t * B + j];
        }
    }
    int y = y0 + threadIdx.y;
    if (y >= g.h)
        return;
#pragma unroll
    for (int t = 0; t < T; t++) {
        int x = x0 + t * B + threadIdx.x;
        if (x < g.w)
            d_out[(size_t)y * g.pitch + x] = acc[t];
    }
}

static size_t tiled_smem(int T, int B, const struct kernel2d *k)
{
    return sizeof(float) * (size_t)(T * B + k->cols - 1) * (B + k->rows - 1);
}

/* T: the largest of 8, 4, 2, 1 whose staged region fits the shared memory of a block (so it
 * shrinks as the filter grows), that does not run past the image width (T*B <= w rounded up to
 * B) and that still leaves two blocks per SM to fill the GPU. */
static int tiled_pick(const struct conv_args *a)
{
    int B = a->block, T = TILED_MAX_T;
    long long rows_of_blocks = div_up(a->h, B);

    while (T > 1 && (tiled_smem(T, B, a->k) > a->lim->smem_block || T * B > div_up(a->w, B) * B ||
                     rows_of_blocks * div_up(a->w, T * B) < 2LL * a->lim->sms))
        T /= 2;
    return T;
}

/* Limit: even T = 1 must fit shared memory ((B+62)^2*4 = 35,344 bytes at B=32: always on current
 * GPUs). */
extern "C" int conv_tiled(struct conv_args *a, char *err)
{
    int B = a->block, T = tiled_pick(a);
    size_t smem = tiled_smem(T, B, a->k);

    if (smem > a->lim->smem_block)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "tiled: tile %d x %d needs %zu bytes of shared memory > %zu", B + a->k->cols - 1,
                          B + a->k->rows - 1, smem, a->lim->smem_block);
    if (a->check_only)
        return 0;
    dim3 block(B, B), grid(div_up(a->w, T * B), div_up(a->h, B));
    conv_geom g = conv_geom_of(a);
    switch (T) {
    case 8:
        k_tiled<8><<<grid, block, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, g);
        break;
    case 4:
        k_tiled<4><<<grid, block, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, g);
        break;
    case 2:
        k_tiled<2><<<grid, block, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, g);
        break;
    default:
        k_tiled<1><<<grid, block, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, g);
        break;
    }
    return conv_launched(a, "tiled kernel");
}
