/* gconv_stub.c — gconv without CUDA (GPU=0 builds): every entry point answers EDGED_E_NO_CUDA. */
#include "gconv.h"

#include <string.h>

#include "errors.h"

#define NO_CUDA(err) edged_fail(err, EDGED_E_NO_CUDA, "built without CUDA")

int gconv_device_count(void) { return 0; }

int gconv_device_query(int device, struct gconv_info *out, char *err)
{
    (void)device;
    memset(out, 0, sizeof(*out));
    return NO_CUDA(err);
}

int gconv_open(struct gconv_ctx **out, int device, int streams, char *err)
{
    (void)device, (void)streams;
    if (out)
        *out = NULL;
    return NO_CUDA(err);
}

void gconv_close(struct gconv_ctx *ctx)
{
    (void)ctx;
}
const struct gconv_info *gconv_get_info(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return NULL;
}
int gconv_stream_count(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return 0;
}
int gconv_is_dead(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return 0;
}
size_t gconv_mem_used(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return 0;
}

int gconv_check(const struct gconv_ctx *ctx, const struct filter_plan *plan, int w, int h, enum variant v,
                int block, char *err)
{
    (void)ctx, (void)plan, (void)w, (void)h, (void)v, (void)block;
    return NO_CUDA(err);
}

int gconv_packs(const struct filter_plan *plan, enum variant v, int w)
{
    (void)plan, (void)v, (void)w;
    return 0;
}

int gconv_run(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
              enum variant v, int block, struct img *out, float *h_planes, struct gconv_times *t, char *err)
{
    (void)ctx, (void)s, (void)in, (void)plan, (void)v, (void)block, (void)out, (void)h_planes, (void)t;
    return NO_CUDA(err);
}

int gconv_submit(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                 enum variant v, int block, char *err)
{
    (void)ctx, (void)s, (void)in, (void)plan, (void)v, (void)block;
    return NO_CUDA(err);
}

int gconv_submit_pinned(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                        enum variant v, int block, char *err)
{
    return gconv_submit(ctx, s, in, plan, v, block, err);
}

int gconv_poll(struct gconv_ctx *ctx, int s)
{
    (void)ctx, (void)s;
    return EDGED_E_NO_CUDA;
}

int gconv_finish(struct gconv_ctx *ctx, int s, struct img *out, struct gconv_times *t, char *err)
{
    (void)ctx, (void)s, (void)out, (void)t;
    return NO_CUDA(err);
}

int gconv_finish_copy(struct gconv_ctx *ctx, int s, struct img *out, char *err)
{
    (void)ctx, (void)s, (void)out;
    return NO_CUDA(err);
}

int gconv_conv_host(struct gconv_ctx *ctx, const float *h_in, float *h_out, int w, int h,
                    const struct kernel2d *k, enum border b, enum variant v, int block, float *kernel_ms,
                    char *err)
{
    (void)ctx, (void)h_in, (void)h_out, (void)w, (void)h, (void)k, (void)b, (void)v, (void)block,
        (void)kernel_ms;
    return NO_CUDA(err);
}

int gconv_bench_conv(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, enum border b,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)k, (void)b, (void)v, (void)block, (void)warmup, (void)reps,
        (void)median_ms;
    return NO_CUDA(err);
}

int gconv_bench_npp(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, int warmup, int reps,
                    double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)k, (void)warmup, (void)reps, (void)median_ms;
    return NO_CUDA(err);
}

int gconv_bench_edge(struct gconv_ctx *ctx, int w, int h, int ch, const uint8_t *h_in, int packed, enum border b,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)ch, (void)h_in, (void)packed, (void)b, (void)v, (void)block, (void)warmup, (void)reps,
        (void)median_ms;
    return NO_CUDA(err);
}

int gconv_bench_plan(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, const struct filter_plan *plan,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)h_in, (void)plan, (void)v, (void)block, (void)warmup, (void)reps,
        (void)median_ms;
    return NO_CUDA(err);
}

int gconv_bench_edge_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, int warmup, int reps,
                         double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)h_in, (void)warmup, (void)reps, (void)median_ms;
    return NO_CUDA(err);
}

int gconv_canny_host(struct gconv_ctx *ctx, const struct img *gray, const struct canny_params *p, struct img *out,
                     float *kernel_ms, char *err)
{
    (void)ctx, (void)gray, (void)p, (void)out, (void)kernel_ms;
    return NO_CUDA(err);
}

int gconv_bench_canny(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                      int warmup, int reps, double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)h_gray, (void)p, (void)warmup, (void)reps, (void)median_ms;
    return NO_CUDA(err);
}

int gconv_bench_canny_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                          int warmup, int reps, double *median_ms, char *err)
{
    (void)ctx, (void)w, (void)h, (void)h_gray, (void)p, (void)warmup, (void)reps, (void)median_ms;
    return NO_CUDA(err);
}

int gconv_bench_canny_spiral(struct gconv_ctx *ctx, int w, int h, int warmup, int reps, double *median_ms,
                             char *err)
{
    (void)ctx, (void)w, (void)h, (void)warmup, (void)reps, (void)median_ms;
    return NO_CUDA(err);
}

int gconv_png_available(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return 0;
}

int gconv_submit_png(struct gconv_ctx *ctx, struct gconv_png_job *jobs, int n)
{
    (void)ctx;
    for (int i = 0; i < n; i++)
        jobs[i].rc = NO_CUDA(jobs[i].err);
    return EDGED_E_NO_CUDA;
}

int gconv_png_decoding(const struct gconv_ctx *ctx)
{
    (void)ctx;
    return 0;
}

int gconv_png_decode_host(struct gconv_ctx *ctx, int n, const struct png_layout *const *lay,
                          const uint8_t *const *z, const size_t *z_len, int batched, struct img *out, int *rc,
                          double *ms, char *err)
{
    (void)ctx, (void)n, (void)lay, (void)z, (void)z_len, (void)batched, (void)out, (void)rc, (void)ms;
    return NO_CUDA(err);
}

int gconv_inflate_host(struct gconv_ctx *ctx, int n, const uint8_t *const *zlib, const size_t *len,
                       uint8_t *const *out, const size_t *out_len, int *status, double *ms, char *err)
{
    (void)ctx, (void)n, (void)zlib, (void)len, (void)out, (void)out_len, (void)status, (void)ms;
    return NO_CUDA(err);
}

int gconv_png_encode_result(struct gconv_ctx *ctx, int s, int level, int bit_depth, uint8_t **out,
                            size_t *out_len, char *err)
{
    (void)ctx, (void)s, (void)level, (void)bit_depth;
    *out = NULL, *out_len = 0;
    return NO_CUDA(err);
}

int gconv_png_encode_host(struct gconv_ctx *ctx, const struct img *im, int level, int bit_depth,
                          uint8_t **out, size_t *out_len, char *err)
{
    (void)ctx, (void)im, (void)level, (void)bit_depth;
    *out = NULL, *out_len = 0;
    return NO_CUDA(err);
}

int gconv_png_encode_behind(struct gconv_ctx *ctx, int s, int level, int bit_depth)
{
    (void)ctx, (void)s, (void)level, (void)bit_depth;
    return EDGED_E_NO_CUDA;
}
