/* gconv_jpeg_stub.c — the nvJPEG calls of gconv.h in builds without nvJPEG (GPU=0, or NVJPEG=0):
 * JPEGs are never offered to the device; every call answers EDGED_E_NO_CUDA. */
#include <string.h>

#include "gconv.h"

#define NO_NVJPEG(err) edged_fail(err, EDGED_E_NO_CUDA, "built without nvJPEG")

int gconv_jpeg_available(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return 0;
}

const char *gconv_jpeg_backend(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return "none";
}

int gconv_jpeg_probe_open(struct gconv_jpeg_probe **out, int device, char *err)
{
    (void)device;
    *out = NULL;
    return NO_NVJPEG(err);
}

void gconv_jpeg_probe_close(struct gconv_jpeg_probe *p)
{
    (void)p;
}

int gconv_jpeg_probe(struct gconv_jpeg_probe *p, const uint8_t *data, size_t len,
                     struct gconv_jpeg_head *head, char *err)
{
    (void)p, (void)data, (void)len;
    memset(head, 0, sizeof(*head));
    return NO_NVJPEG(err);
}

int gconv_submit_jpeg(struct gconv_ctx *ctx, struct gconv_jpeg_job *jobs, int n)
{
    (void)ctx;
    for (int i = 0; i < n; i++)
        jobs[i].rc = NO_NVJPEG(jobs[i].err);
    return EDGED_E_NO_CUDA;
}

int gconv_jpeg_decoding(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return 0;
}

int gconv_jpeg_decode_host(struct gconv_ctx *ctx, int n, const uint8_t *const *data, const size_t *len,
                           const int *orient, int batched, struct img *out, int *rc, double *ms, char *err)
{
    (void)ctx, (void)n, (void)data, (void)len, (void)orient, (void)batched, (void)out, (void)rc, (void)ms;
    return NO_NVJPEG(err);
}

int gconv_jpeg_encode_result(struct gconv_ctx *ctx, int s, int quality, uint8_t **out, size_t *out_len,
                             char *err)
{
    (void)ctx, (void)s, (void)quality;
    *out = NULL, *out_len = 0;
    return NO_NVJPEG(err);
}

void gconv_jpeg_profile(const struct gconv_ctx *ctx, double ms[GCONV_JPEG_STAGES])
{
    (void)ctx;
    for (int i = 0; i < GCONV_JPEG_STAGES; i++)
        ms[i] = 0.0;
}

int gconv_jpeg_encode_host(struct gconv_ctx *ctx, const struct img *im, int quality, uint8_t **out,
                           size_t *out_len, char *err)
{
    (void)ctx, (void)im, (void)quality;
    *out = NULL, *out_len = 0;
    return NO_NVJPEG(err);
}
