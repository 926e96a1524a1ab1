/* conv_texture.cu — texture and texture2d: the image read through texture objects (NTU 3.2.6,
 * 3.2.7), over the same pitched planes the other variants use. */
#include <string.h>

#include "gconv_internal.h"

/* 1-D texture over the plane's linear memory: tex1Dfetch takes an element index, so 2-D borders
 * are computed in software (border_index) and a zero sample is never fetched. */
__global__ void __launch_bounds__(1024)
    k_tex1d(cudaTextureObject_t tex, float *__restrict__ d_out, const float *__restrict__ d_taps, conv_geom g)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= g.w || y >= g.h)
        return;
    int rr = g.rows / 2, rc = g.cols / 2;
    float acc = 0.0f;
    for (int i = 0; i < g.rows; i++) {
        int yi = border_index(y + i - rr, g.h, g.border);
        for (int j = 0; j < g.cols; j++) {
            int xi = border_index(x + j - rc, g.w, g.border);
            float v = (xi < 0 || yi < 0) ? 0.0f : tex1Dfetch<float>(tex, yi * g.pitch + xi);
            acc += __ldg(d_taps + i * g.cols + j) * v;
        }
    }
    d_out[(size_t)y * g.pitch + x] = acc;
}

/* 2-D texture, unnormalised coordinates, point sampling at texel centres (+0.5). zero and
 * replicate are the hardware's Border (border colour 0) and Clamp address modes, so no index
 * arithmetic at all. reflect (OpenCV reflect-101) has no hardware mode (Mirror is reflect
 * without 101 and needs normalised coordinates): its indices are computed with border_index and
 * read at integer coordinates, on a texture in Clamp mode. */
template <bool SOFT_BORDER>
__global__ void __launch_bounds__(1024)
    k_tex2d(cudaTextureObject_t tex, float *__restrict__ d_out, const float *__restrict__ d_taps, conv_geom g)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= g.w || y >= g.h)
        return;
    int rr = g.rows / 2, rc = g.cols / 2;
    float acc = 0.0f;
    for (int i = 0; i < g.rows; i++) {
        int yi = SOFT_BORDER ? border_index(y + i - rr, g.h, g.border) : y + i - rr;
        for (int j = 0; j < g.cols; j++) {
            int xi = SOFT_BORDER ? border_index(x + j - rc, g.w, g.border) : x + j - rc;
            acc += __ldg(d_taps + i * g.cols + j) * tex2D<float>(tex, xi + 0.5f, yi + 0.5f);
        }
    }
    d_out[(size_t)y * g.pitch + x] = acc;
}

static void tex_desc_1d(const struct conv_args *a, struct cudaResourceDesc *res, struct cudaTextureDesc *td)
{
    memset(res, 0, sizeof(*res));
    memset(td, 0, sizeof(*td));
    res->resType = cudaResourceTypeLinear;
    res->res.linear.devPtr = (void *)a->d_in;
    res->res.linear.desc = cudaCreateChannelDesc<float>();
    res->res.linear.sizeInBytes = sizeof(float) * (size_t)a->pitch * a->h;
    td->readMode = cudaReadModeElementType;
    td->filterMode = cudaFilterModePoint;
}

static void tex_desc_2d(const struct conv_args *a, struct cudaResourceDesc *res, struct cudaTextureDesc *td)
{
    enum cudaTextureAddressMode m = a->border == BORDER_ZERO ? cudaAddressModeBorder : cudaAddressModeClamp;

    memset(res, 0, sizeof(*res));
    memset(td, 0, sizeof(*td));
    res->resType = cudaResourceTypePitch2D;
    res->res.pitch2D.devPtr = (void *)a->d_in;
    res->res.pitch2D.desc = cudaCreateChannelDesc<float>();
    res->res.pitch2D.width = a->w;
    res->res.pitch2D.height = a->h;
    res->res.pitch2D.pitchInBytes = sizeof(float) * (size_t)a->pitch;
    td->addressMode[0] = td->addressMode[1] = m; /* borderColor stays 0: the zero border */
    td->filterMode = cudaFilterModePoint;
    td->readMode = cudaReadModeElementType;
    td->normalizedCoords = 0;
}

/* Limits: the device's texture sizes. 1-D: pitch*h samples <= the 1-D linear limit (2^28 on
 * current GPUs). 2-D: w, h and the pitch within the pitched-2-D limits (h <= 65000 on Hopper). */
static int texture_limits(const struct conv_args *a, char *err)
{
    const struct gconv_limits *l = a->lim;
    size_t n = (size_t)a->pitch * a->h, pitch_bytes = sizeof(float) * (size_t)a->pitch;

    if (a->variant == VARIANT_TEXTURE && n > l->tex1d_max)
        return edged_fail(err, EDGED_E_VARIANT_LIMIT,
                          "texture: a %d x %d plane (%zu samples with row padding) exceeds the 1-D texture "
                          "limit of %zu samples; use texture2d",
                          a->w, a->h, n, l->tex1d_max);
    if (a->variant == VARIANT_TEXTURE2D &&
        (a->w > l->tex2d_w || a->h > l->tex2d_h || pitch_bytes > (size_t)l->tex2d_pitch))
        return edged_fail(
            err, EDGED_E_VARIANT_LIMIT,
            "texture2d: a %d x %d plane (pitch %zu bytes) exceeds the 2-D texture limit of %d x %d "
            "(pitch %d bytes)",
            a->w, a->h, pitch_bytes, l->tex2d_w, l->tex2d_h, l->tex2d_pitch);
    if (!a->check_only && ((uintptr_t)a->d_in % l->tex_align || pitch_bytes % l->tex_pitch_align))
        return edged_fail(err, EDGED_E_INTERNAL, "%s: plane not aligned for a texture",
                          variant_name(a->variant));
    return 0;
}

extern "C" int conv_texture(struct conv_args *a, char *err)
{
    struct cudaResourceDesc res;
    struct cudaTextureDesc td;
    cudaTextureObject_t tex = 0;
    int rc, B = a->block, is2d = a->variant == VARIANT_TEXTURE2D;

    if ((rc = texture_limits(a, err)) < 0 || a->check_only)
        return rc;
    if (is2d)
        tex_desc_2d(a, &res, &td);
    else
        tex_desc_1d(a, &res, &td);
    if ((a->cuerr = texcache_get(a->tc, a->stream, &res, &td, &tex)) != cudaSuccess) {
        a->cuwhat = "cudaCreateTextureObject";
        return GCONV_CUDA_FAILED;
    }
    dim3 block(B, B), grid(div_up(a->w, B), div_up(a->h, B));
    conv_geom g = conv_geom_of(a);
    if (!is2d)
        k_tex1d<<<grid, block, 0, a->stream>>>(tex, a->d_out, a->d_taps, g);
    else if (a->border == BORDER_REFLECT)
        k_tex2d<true><<<grid, block, 0, a->stream>>>(tex, a->d_out, a->d_taps, g);
    else
        k_tex2d<false><<<grid, block, 0, a->stream>>>(tex, a->d_out, a->d_taps, g);
    return conv_launched(a, is2d ? "texture2d kernel" : "texture kernel");
}
