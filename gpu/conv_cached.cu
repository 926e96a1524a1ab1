/* conv_cached.cu — cached: output-tile blocks with only the interior in shared memory; halo and
 * border samples come straight from global memory through L1/L2 (PMPP 7.5, Trento Algorithm 5). */
#include "gconv_internal.h"

/* Each of the B x B threads stages its own pixel. A window sample that falls inside the tile
 * (and the image) is read from shared memory; the rest are the neighbouring tiles' pixels, which
 * those blocks bring into L2/L1 anyway, so they are read from global memory. */
__global__ void __launch_bounds__(1024) k_cached(const float *__restrict__ d_in, float *__restrict__ d_out,
                                                 const float *__restrict__ d_taps, conv_geom g)
{
    extern __shared__ float s_tile[];
    int B = blockDim.x, tx = threadIdx.x, ty = threadIdx.y, rr = g.rows / 2, rc = g.cols / 2;
    int x = blockIdx.x * B + tx, y = blockIdx.y * B + ty;
    bool inside = x < g.w && y < g.h;

    s_tile[ty * B + tx] = inside ? __ldg(d_in + (size_t)y * g.pitch + x) : 0.0f;
    __syncthreads();
    if (!inside)
        return;
    float acc = 0.0f;
    for (int i = 0; i < g.rows; i++) {
        int sy = ty + i - rr, yy = y + i - rr;
        bool row_in = sy >= 0 && sy < B && yy < g.h;
        for (int j = 0; j < g.cols; j++) {
            int sx = tx + j - rc, xx = x + j - rc;
            float v =
                (row_in && sx >= 0 && sx < B && xx < g.w) ? s_tile[sy * B + sx] : conv_load(d_in, xx, yy, g);
            acc += __ldg(d_taps + i * g.cols + j) * v;
        }
    }
    d_out[(size_t)y * g.pitch + x] = acc;
}

/* No limit beyond the block side: shared memory holds only B x B floats (4 KiB at B=32). */
extern "C" int conv_cached(struct conv_args *a, char *err)
{
    int B = a->block;
    (void)err;
    if (a->check_only)
        return 0;
    dim3 block(B, B), grid(div_up(a->w, B), div_up(a->h, B));
    k_cached<<<grid, block, sizeof(float) * B * B, a->stream>>>(a->d_in, a->d_out, a->d_taps,
                                                                conv_geom_of(a));
    return conv_launched(a, "cached kernel");
}
