/* canny.cu — Canny on the device with cv::Canny's map: gray conversion and pre-blur (here), one
 * tiled kernel for Sobel, magnitude, suppression, thresholds and the hysteresis inside each tile (on
 * bit masks; canny_tile.cu), then hysteresis across tiles as connected components of the tiles'
 * border pixels, and a last pass per tile that writes the map (canny_seams.cu); a tile whose
 * candidates do not reach its border is decided inside it, and the tile kernel writes its map
 * (docs/gpu.md). Here too: the scratch, the order of the launches and the host entry of the tests.
 *
 * Why it is exact: the derivatives are integer sums (the order of the terms does not matter; the
 * aperture-3 path packs two of them into the 16-bit lanes of a word, each lane kept in 0..65535),
 * the magnitude, the sector test and the tie rules are the integer expressions of cpu_ref/canny.c, and
 * the hysteresis result is a property of the 8-connected components of the candidates (an edge is
 * a candidate whose component holds a pixel above the high threshold), which any correct labelling
 * finds, in whatever order its unions run. */
#include <string.h>

#include "canny_common.cuh"

/* ---- gray conversion and pre-blur ------------------------------------------------------------ */

/* pixel_luma with the host's roundings: three products and two sums, never contracted. */
static __device__ __forceinline__ float canny_luma(const uint8_t *px, int ch)
{
    if (ch < 3)
        return (float)px[0];
    return __fadd_rn(__fadd_rn(__fmul_rn(0.299f, (float)px[0]), __fmul_rn(0.587f, (float)px[1])),
                     __fmul_rn(0.114f, (float)px[2]));
}

/* The u8 gray without a pre-blur: the sample, or pixel_clamp_u8 of the luma. */
__global__ void k_canny_gray(const uint8_t *__restrict__ d_in8, uint8_t *__restrict__ d_gray, size_t n, int ch)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        d_gray[i] = pixel_clamp_u8(canny_luma(d_in8 + i * ch, ch));
}

/* The float luma plane the pre-blur reads. */
__global__ void k_canny_luma(const uint8_t *__restrict__ d_in8, float *__restrict__ d_l, size_t n, int ch)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        d_l[i] = canny_luma(d_in8 + i * ch, ch);
}

/* The pre-blur exactly as cpu_serial_conv: taps in row-major order, samples outside under the
 * border rule (zero ones skipped), one float accumulator, products and sums rounded separately;
 * then pixel_clamp_u8. */
__global__ void k_canny_blur(const float *__restrict__ d_l, const float *__restrict__ d_taps, int rows, int cols,
                             int border, uint8_t *__restrict__ d_gray, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;

    if (x >= w || y >= h)
        return;
    for (int i = 0; i < rows; i++) {
        int sy = border_index(y + i - rows / 2, h, border);
        if (sy < 0)
            continue;
        for (int j = 0; j < cols; j++) {
            int sx = border_index(x + j - cols / 2, w, border);
            if (sx >= 0)
                acc = __fadd_rn(acc, __fmul_rn(__ldg(d_taps + i * cols + j), __ldg(d_l + (size_t)sy * w + sx)));
        }
    }
    d_gray[(size_t)y * w + x] = pixel_clamp_u8(acc);
}

/* ---- launchers -------------------------------------------------------------------------------- */

size_t canny_nodes(int w, int h)
{
    return (size_t)div_up(w, CANNY_T) * div_up(h, CANNY_T) * CANNY_SLOTS;
}

size_t canny_scratch_bytes(int w, int h, int in_ch, int blur)
{
    size_t px = (size_t)w * h, b = 2 * sizeof(int) * canny_nodes(w, h);

    if (blur)
        b += sizeof(float) * px + 256;
    if (blur || in_ch != 1)
        b += px + 256;
    return b;
}

cudaError_t canny_core(const struct canny_dev *d, const struct canny_params *p, const char **what)
{
    int ovec = d->w % 16 == 0 && (uintptr_t)d->d_out % 16 == 0; /* the map's rows take 16-byte stores */
    int pdl = canny_seams_pdl();
    cudaError_t e;

    *what = "canny tile kernel";
    if ((e = canny_tile_launch(d, p, ovec)) != cudaSuccess)
        return e;
    return canny_seams_launch(d, pdl, ovec, what);
}

/* Carves the scratch: parents and flags, then the float luma and the u8 gray where needed. */
static uint8_t *canny_carve(struct canny_dev *d, void *scratch, int in_ch, int blur, float **d_l)
{
    size_t nodes = canny_nodes(d->w, d->h), px = (size_t)d->w * d->h;
    uint8_t *p = (uint8_t *)scratch;

    d->d_parent = (int *)p;
    d->d_flag = (int *)(p + sizeof(int) * nodes);
    p += 2 * sizeof(int) * nodes;
    *d_l = NULL;
    if (blur) {
        *d_l = (float *)p;
        p += (sizeof(float) * px + 255) / 256 * 256;
    }
    if (blur || in_ch != 1)
        d->d_gray = p;
    return p;
}

cudaError_t canny_plan_launch(const struct filter_plan *plan, const uint8_t *d_in8, const float *d_taps,
                              uint8_t *d_out8, void *scratch, int w, int h, cudaStream_t s, const char **what)
{
    struct canny_dev d;
    size_t n = (size_t)w * h;
    unsigned blocks = (unsigned)((n + 255) / 256);
    int blur = plan->nconv > 0;
    float *d_l;
    uint8_t *d_gray;
    cudaError_t e;

    memset(&d, 0, sizeof(d));
    d.w = w, d.h = h, d.stream = s, d.d_out = d_out8, d.d_gray = d_in8;
    d_gray = canny_carve(&d, scratch, plan->in_ch, blur, &d_l);
    *what = "canny gray kernel";
    if (blur) {
        dim3 b(32, 8), g(div_up(w, 32), div_up(h, 8));
        k_canny_luma<<<blocks, 256, 0, s>>>(d_in8, d_l, n, plan->in_ch);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return e;
        *what = "canny pre-blur kernel";
        k_canny_blur<<<g, b, 0, s>>>(d_l, d_taps, plan->conv[0].rows, plan->conv[0].cols, (int)plan->border,
                                     d_gray, w, h);
    } else if (plan->in_ch != 1) {
        k_canny_gray<<<blocks, 256, 0, s>>>(d_in8, d_gray, n, plan->in_ch);
    }
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    return canny_core(&d, &plan->canny, what);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static int canny_params_ok(const struct canny_params *p, char *err)
{
    if (!p || (p->aperture != 3 && p->aperture != 5 && p->aperture != 7))
        return edged_fail(err, EDGED_E_PARAM, "canny aperture %d invalid: must be 3, 5 or 7", p ? p->aperture : 0);
    if (isnan(p->low) || isnan(p->high))
        return edged_fail(err, EDGED_E_PARAM, "canny thresholds must be numbers");
    return 0;
}

int gconv_canny_host(struct gconv_ctx *ctx, const struct img *gray, const struct canny_params *p, struct img *out,
                     float *kernel_ms, char *err)
{
    struct gstream *st;
    struct canny_dev d;
    const char *what = "canny buffers";
    cudaError_t e = cudaSuccess;
    int rc, w, h;

    if ((rc = gctx_enter(ctx, err)) < 0 || (rc = canny_params_ok(p, err)) < 0)
        return rc;
    if (!gray || !gray->px || gray->ch != 1 || gray->packed || gray->stride < (size_t)gray->w || !out ||
        !out->px || out->ch != 1 || out->packed || out->w != gray->w || out->h != gray->h ||
        out->stride < (size_t)out->w)
        return edged_fail(err, EDGED_E_PARAM, "canny needs unpacked 1-channel input and output of one size");
    if ((rc = img_check_size(gray->w, gray->h, err)) < 0)
        return rc;
    w = gray->w, h = gray->h;
    st = &ctx->st[0];
    if (st->busy)
        return edged_fail(err, EDGED_E_PARAM, "stream 0 has a job in flight");
    memset(&d, 0, sizeof(d));
    if ((e = gctx_grow_device(ctx, st, (void **)&st->d_in8, &st->d_in8_cap, (size_t)w * h)) != cudaSuccess ||
        (e = gctx_grow_device(ctx, st, (void **)&st->d_out8, &st->d_out8_cap, (size_t)w * h)) != cudaSuccess ||
        (e = gctx_grow_device(ctx, st, (void **)&st->d_arena, &st->d_arena_cap,
                              canny_scratch_bytes(w, h, 1, 0))) != cudaSuccess)
        goto out;
    d.w = w, d.h = h, d.stream = st->s, d.d_gray = st->d_in8, d.d_out = st->d_out8;
    d.d_parent = (int *)st->d_arena;
    d.d_flag = d.d_parent + canny_nodes(w, h);
    what = "canny upload";
    if ((e = cudaMemcpy2DAsync(st->d_in8, w, gray->px, gray->stride, w, h, cudaMemcpyHostToDevice, st->s)) !=
            cudaSuccess ||
        (e = cudaEventRecord(st->ev_up, st->s)) != cudaSuccess)
        goto out;
    if ((e = canny_core(&d, p, &what)) != cudaSuccess)
        goto out;
    what = "canny download";
    if ((e = cudaEventRecord(st->ev_kern, st->s)) != cudaSuccess ||
        (e = cudaMemcpy2DAsync(out->px, out->stride, st->d_out8, w, w, h, cudaMemcpyDeviceToHost, st->s)) !=
            cudaSuccess ||
        (e = cudaStreamSynchronize(st->s)) != cudaSuccess)
        goto out;
    if (kernel_ms)
        e = cudaEventElapsedTime(kernel_ms, st->ev_up, st->ev_kern);
out:
    if (e != cudaSuccess) {
        cudaStreamSynchronize(st->s);
        return gctx_fail(ctx, e, what, err);
    }
    return 0;
}
