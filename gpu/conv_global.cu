/* conv_global.cu — naive and constant: one thread per output pixel reading the image from global
 * memory (KTH §3.1, NTU 3.2.2/3.2.4, Trento Algorithm 2); taps in global or __constant__ memory. */
#include "gconv_internal.h"

/* Taps of the constant variant, one slot per gctx_slot_lock slot (see gconv_internal.h for why
 * a single array would race between streams). */
__constant__ float c_taps_global[GCONV_CSLOTS][FILTER_MAX_TAPS];

/* Every thread walks the whole window; taps come from global memory (naive) or from the
 * constant cache, which broadcasts one address to the warp in one cycle (constant). */
template <bool CONST_TAPS>
__global__ void __launch_bounds__(1024) k_global(const float *__restrict__ d_in, float *__restrict__ d_out,
                                                 const float *d_taps, conv_geom g, int slot)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= g.w || y >= g.h)
        return;
    int rr = g.rows / 2, rc = g.cols / 2;
    float acc = 0.0f;
    for (int i = 0; i < g.rows; i++)
        for (int j = 0; j < g.cols; j++) {
            float t = CONST_TAPS ? c_taps_global[slot][i * g.cols + j] : d_taps[i * g.cols + j];
            acc += t * conv_load(d_in, x + j - rc, y + i - rr, g);
        }
    d_out[(size_t)y * g.pitch + x] = acc;
}

/* No limits beyond the block side: any image, any kernel size. The constant variant first copies
 * the taps from device memory into its slot on the job's stream (ordered before the kernel). */
extern "C" int conv_global(struct conv_args *a, char *err)
{
    int cst = a->variant == VARIANT_CONSTANT;
    dim3 block(a->block, a->block), grid(div_up(a->w, a->block), div_up(a->h, a->block));
    conv_geom g = conv_geom_of(a);

    if (cst && (a->cslot < 0 || a->cslot >= GCONV_CSLOTS))
        return edged_fail(err, EDGED_E_INTERNAL, "constant: no constant-memory slot held");
    if (a->check_only)
        return 0;
    if (cst && !a->taps_loaded) {
        a->cuerr = cudaMemcpyToSymbolAsync(c_taps_global, a->d_taps, sizeof(float) * g.rows * g.cols,
                                           sizeof(float) * FILTER_MAX_TAPS * a->cslot,
                                           cudaMemcpyDeviceToDevice, a->stream);
        if (a->cuerr != cudaSuccess) {
            a->cuwhat = "constant: cudaMemcpyToSymbolAsync";
            return GCONV_CUDA_FAILED;
        }
    }
    if (cst)
        k_global<true><<<grid, block, 0, a->stream>>>(a->d_in, a->d_out, a->d_taps, g, a->cslot);
    else
        k_global<false><<<grid, block, 0, a->stream>>>(a->d_in, a->d_out, a->d_taps, g, 0);
    return conv_launched(a, cst ? "constant kernel" : "naive kernel");
}
