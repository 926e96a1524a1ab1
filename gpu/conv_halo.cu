/* conv_halo.cu — shared_halo: output-tile blocks whose threads load the input tile including its
 * halo cooperatively (KTH §3.2 (ii), NTU 4.1.1 "no overlap", Zagreb 4.3.1). */
#include "gconv_internal.h"

/* The block is the output tile, B x B threads. The (B+cols-1) x (B+rows-1) input tile is loaded
 * in a block-strided loop, so each thread loads ceil(tile/B²) samples (1, 2, 4 ... for growing
 * kernels) and no thread idles as in the input-tile scheme. Taps via the read-only cache. */
__global__ void __launch_bounds__(1024) k_halo(const float *__restrict__ d_in, float *__restrict__ d_out,
                                               const float *__restrict__ d_taps, conv_geom g)
{
    extern __shared__ float s_tile[];
    int B = blockDim.x, rr = g.rows / 2, rc = g.cols / 2;
    int tw = B + g.cols - 1, th = B + g.rows - 1;
    int x0 = blockIdx.x * B, y0 = blockIdx.y * B;

    for (int idx = threadIdx.y * B + threadIdx.x; idx < tw * th; idx += B * B) {
        int r = idx / tw, c = idx - r * tw;
        s_tile[idx] = conv_load(d_in, x0 - rc + c, y0 - rr + r, g);
    }
    __syncthreads();
    int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= g.w || y >= g.h)
        return;
    float acc = 0.0f;
    for (int i = 0; i < g.rows; i++) {
        const float *s_row = s_tile + (threadIdx.y + i) * tw + threadIdx.x;
        for (int j = 0; j < g.cols; j++)
            acc += __ldg(d_taps + i * g.cols + j) * s_row[j];
    }
    d_out[(size_t)y * g.pitch + x] = acc;
}

/* Limit: the tile in shared memory, (B+cols-1)*(B+rows-1)*4 bytes <= the per-block default
 * (48 KiB; B=32 with 63x63 needs 35,344 bytes, so every size fits on current GPUs). */
extern "C" int conv_halo(struct conv_args *a, char *err)
{
    int B = a->block, tw = B + a->k->cols - 1, th = B + a->k->rows - 1;
    size_t smem = sizeof(float) * tw * th;

    if (smem > a->lim->smem_block)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "shared_halo: tile %d x %d needs %zu bytes of shared memory per block > %zu", tw,
                          th, smem, a->lim->smem_block);
    if (a->check_only)
        return 0;
    dim3 block(B, B), grid(div_up(a->w, B), div_up(a->h, B));
    k_halo<<<grid, block, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, conv_geom_of(a));
    return conv_launched(a, "shared_halo kernel");
}
