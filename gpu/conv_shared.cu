/* conv_shared.cu — shared and shared_constant: input-tile blocks with the tile in shared memory
 * (PMPP ch.7, Trento Algorithms 3 and 4); taps in global or __constant__ memory. */
#include "gconv_internal.h"

/* Taps of shared_constant, one slot per gctx_slot_lock slot (a module has its own constant bank,
 * so this family keeps its own array next to conv_global.cu's). */
__constant__ float c_taps_shared[GCONV_CSLOTS][FILTER_MAX_TAPS];

/* The block is the input tile: (B+cols-1) x (B+rows-1) threads, one sample each (border rule
 * applied while loading); after the barrier the inner B x B threads compute one output each
 * and the halo threads retire. Taps come through the read-only cache or the constant cache. */
template <bool CONST_TAPS>
__global__ void __launch_bounds__(1024)
    k_shared(const float *__restrict__ d_in, float *__restrict__ d_out, const float *__restrict__ d_taps,
             conv_geom g, int out_tile, int slot)
{
    extern __shared__ float s_tile[];
    int rr = g.rows / 2, rc = g.cols / 2, tw = blockDim.x;
    int tx = threadIdx.x, ty = threadIdx.y;
    int gx = blockIdx.x * out_tile + tx - rc, gy = blockIdx.y * out_tile + ty - rr;

    s_tile[ty * tw + tx] = conv_load(d_in, gx, gy, g);
    __syncthreads();
    int ox = tx - rc, oy = ty - rr;
    if (ox < 0 || oy < 0 || ox >= out_tile || oy >= out_tile || gx >= g.w || gy >= g.h)
        return;
    float acc = 0.0f;
    for (int i = 0; i < g.rows; i++)
        for (int j = 0; j < g.cols; j++) {
            float t = CONST_TAPS ? c_taps_shared[slot][i * g.cols + j] : __ldg(d_taps + i * g.cols + j);
            acc += t * s_tile[(oy + i) * tw + ox + j];
        }
    d_out[(size_t)gy * g.pitch + gx] = acc;
}

/* Limit: the input tile must fit one block, (B+cols-1)*(B+rows-1) <= max threads per block
 * (1024): with B=16 up to 17x17, B=8 up to 25x25, B=32 only 1x1. */
extern "C" int conv_shared(struct conv_args *a, char *err)
{
    int cst = a->variant == VARIANT_SHARED_CONSTANT;
    const char *name = cst ? "shared_constant" : "shared";
    int B = a->block, tw = B + a->k->cols - 1, th = B + a->k->rows - 1;
    conv_geom g = conv_geom_of(a);

    if (tw * th > a->lim->max_threads)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "%s: input tile %d+%d = %d x %d+%d = %d needs %d threads per block > %d; use a "
                          "smaller block or shared_halo",
                          name, B, a->k->cols - 1, tw, B, a->k->rows - 1, th, tw * th, a->lim->max_threads);
    if (cst && (a->cslot < 0 || a->cslot >= GCONV_CSLOTS))
        return edged_fail(err, EDGED_E_INTERNAL, "%s: no constant-memory slot held", name);
    if (a->check_only)
        return 0;
    if (cst && !a->taps_loaded) {
        a->cuerr = cudaMemcpyToSymbolAsync(c_taps_shared, a->d_taps, sizeof(float) * g.rows * g.cols,
                                           sizeof(float) * FILTER_MAX_TAPS * a->cslot,
                                           cudaMemcpyDeviceToDevice, a->stream);
        if (a->cuerr != cudaSuccess) {
            a->cuwhat = "shared_constant: cudaMemcpyToSymbolAsync";
            return GCONV_CUDA_FAILED;
        }
    }
    dim3 block(tw, th), grid(div_up(a->w, B), div_up(a->h, B));
    size_t smem = sizeof(float) * tw * th;
    if (cst)
        k_shared<true><<<grid, block, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, g, B, a->cslot);
    else
        k_shared<false><<<grid, block, smem, a->stream>>>(a->d_in, a->d_out, a->d_taps, g, B, 0);
    return conv_launched(a, cst ? "shared_constant kernel" : "shared kernel");
}
