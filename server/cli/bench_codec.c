/* bench_codec.c — `edged bench --codec`: times the codecs of each file's format on the same files:
 * PNG (edged's, libpng, the device decoder and encoder), JPEG (libjpeg-turbo, nvJPEG), WebP (libwebp). */
#include "cli/bench_codec.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cli/commands.h"
#include "errors.h"
#include "ops/file_io.h"
#include "gconv.h"
#include "image.h"
#include "codec/image_io.h"
#include "codec/png_decode.h"
#include "ops/opts.h"
#include "params.h"
#include "png_layout.h"

#define BENCH_CODEC_REPS 5
#define BENCH_CODEC_MAX_REPS 1000
#define BENCH_CODEC_MAX_FILE ((size_t)1 << 30)

struct bench_codec_opts {
    int json, reps, level, quality;
    int device, device_given; /* --device: the CUDA device of the device rows (default 0), and whether given */
};

/* One codec of one input format: its decoder (pngio_decode's contract) and an encoder of the
 * decoded image (into *out, freed by the caller with free(); NULL when the encoder freed it). */
struct bench_codec {
    const char *name;
    enum imageio_format fmt;
    int (*decode)(const uint8_t *, size_t, const struct png_limits *, struct img *, char *);
    int (*encode)(const struct img *, const struct bench_codec_opts *, uint8_t **, size_t *, char *);
};

static int enc_edged_png(const struct img *im, const struct bench_codec_opts *o, uint8_t **out, size_t *len, char *err)
{
    return pngio_encode(im, o->level, 8, out, len, err);
}

static int enc_libpng(const struct img *im, const struct bench_codec_opts *o, uint8_t **out, size_t *len, char *err)
{
    return pngio_encode_libpng(im, o->level, 8, out, len, err);
}

static int enc_jpeg(const struct img *im, const struct bench_codec_opts *o, uint8_t **out, size_t *len, char *err)
{
    return jpegio_encode(im, o->quality, out, len, err);
}

/* edged's WebP encoder, lossy at --quality (format=webp with quality), as the service runs it. */
static int enc_webp(const struct img *im, const struct bench_codec_opts *o, uint8_t **out, size_t *len, char *err)
{
    return webpio_encode(im, 0, o->quality, out, len, err);
}

/* The CPU decode of JPEG and WebP as the service runs it (header, limits, decode), orientation
 * not applied. */
static int dec_image(const uint8_t *d, size_t n, const struct png_limits *lim, struct img *im, char *err)
{
    return imageio_load(d, n, lim, 0, im, err);
}

/* Rows per format, in print order; GPU decoders (nvJPEG) add their rows here under EDGED_GPU. */
static const struct bench_codec bench_codecs[] = {
    {"edged", IMAGEIO_PNG, pngio_decode, enc_edged_png},
    {"libpng", IMAGEIO_PNG, pngio_decode_libpng, enc_libpng},
    {"libjpeg-turbo", IMAGEIO_JPEG, dec_image, enc_jpeg},
    {"libwebp", IMAGEIO_WEBP, dec_image, enc_webp},
};

struct bench_codec_result {
    double decode_ms, encode_ms;
    size_t bytes;
};

static int bench_codec_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double bench_codec_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_codec_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Decodes and re-encodes data reps + 1 times (the first untimed); medians into *r. */
static int bench_codec_one(const struct bench_codec *c, const uint8_t *data, size_t len,
                           const struct bench_codec_opts *o, struct bench_codec_result *r, char *err)
{
    double dec[BENCH_CODEC_MAX_REPS], enc[BENCH_CODEC_MAX_REPS];
    struct png_limits lim = {IMG_MAX_SIDE, IMG_MAX_PIXELS, (size_t)8 << 20};
    int rc = 0;

    for (int i = 0; i <= o->reps && rc == 0; i++) {
        struct img im;
        uint8_t *png = NULL;
        double t0 = clock_ms(), t1, t2;

        rc = c->decode(data, len, &lim, &im, err);
        t1 = clock_ms();
        if (rc == 0)
            rc = c->encode(&im, o, &png, &r->bytes, err);
        t2 = clock_ms();
        if (i > 0)
            dec[i - 1] = t1 - t0, enc[i - 1] = t2 - t1;
        img_free(&im);
        free(png);
    }
    if (rc)
        return rc;
    r->decode_ms = bench_codec_median(dec, o->reps);
    r->encode_ms = bench_codec_median(enc, o->reps);
    return 0;
}

static struct gconv_ctx *bench_gpu; /* opened by the first JPEG or PNG file; NULL: no device rows */
static int bench_gpu_tried;

/* One row; a device row (dev >= 0, the CUDA device number) names its device in JSON. */
static void bench_codec_print(const char *file, const char *codec, const struct bench_codec_result *r, int json,
                              int dev)
{
    if (json) {
        cJSON *o = cJSON_CreateObject();
        char *s;

        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "codec", codec);
        if (dev >= 0) {
            cJSON_AddNumberToObject(o, "device", dev);
            cJSON_AddStringToObject(o, "device_name", gconv_get_info(bench_gpu)->name);
        }
        cJSON_AddNumberToObject(o, "decode_ms", round(r->decode_ms * 1000) / 1000);
        cJSON_AddNumberToObject(o, "encode_ms", round(r->encode_ms * 1000) / 1000);
        cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
        if ((s = cJSON_PrintUnformatted(o)))
            puts(s);
        cJSON_free(s);
        cJSON_Delete(o);
    } else {
        printf("%-40s %-13s %10.2f %10.2f %12zu\n", file, codec, r->decode_ms, r->encode_ms, r->bytes);
    }
}

/* ---- device rows: nvJPEG (GPU builds with nvJPEG), the device PNG decoder (GPU builds) ---- */

/* Copies of one file per call in the largest batched device row. */
#define BENCH_CODEC_BATCH 32

/* What a device row decodes: one file's bytes, and for a PNG its layout and zlib stream. */
struct bench_dev_src {
    enum imageio_format fmt;
    const uint8_t *data;
    size_t len;
    struct png_layout lay;
    const uint8_t *z;
    size_t z_len;
};

/* batch copies of src decoded on the device into out, rcs and *ms as gconv_*_decode_host's. */
static int bench_dev_decode(const struct bench_dev_src *src, int batch, struct img *out, int *rcs, double *ms,
                            char *err)
{
    const uint8_t *datas[BENCH_CODEC_BATCH];
    const struct png_layout *lays[BENCH_CODEC_BATCH];
    size_t lens[BENCH_CODEC_BATCH];

    for (int k = 0; k < batch; k++) {
        datas[k] = src->fmt == IMAGEIO_PNG ? src->z : src->data;
        lens[k] = src->fmt == IMAGEIO_PNG ? src->z_len : src->len;
        lays[k] = &src->lay;
    }
    if (src->fmt == IMAGEIO_PNG)
        return gconv_png_decode_host(bench_gpu, batch, lays, datas, lens, 1, out, rcs, ms, err);
    return gconv_jpeg_decode_host(bench_gpu, batch, datas, lens, NULL, 1, out, rcs, ms, err);
}

/* One device row: `batch` copies decoded per call (1: one at a time), the decode time being the
 * device's up to the last image (uploads included, download excluded; a PNG's stream starts in
 * pinned memory, where a request thread's pass, gpu-png-host, leaves it), divided by batch; the
 * encode is the device's of the decoded image, upload included (nvJPEG at --quality, the device
 * PNG encoder at --level). Medians of reps after a warm-up. */
static int bench_codec_device(const struct bench_dev_src *src, int batch, const struct bench_codec_opts *o,
                              struct bench_codec_result *r, char *err)
{
    struct img out[BENCH_CODEC_BATCH];
    int rcs[BENCH_CODEC_BATCH], rc = 0;
    double dec[BENCH_CODEC_MAX_REPS], enc[BENCH_CODEC_MAX_REPS];

    for (int i = 0; i <= o->reps && rc == 0; i++) {
        uint8_t *enc_out = NULL;
        double ms = 0, t0;

        rc = bench_dev_decode(src, batch, out, rcs, &ms, err);
        for (int k = 0; rc == 0 && k < batch; k++)
            if (rcs[k] < 0)
                rc = edged_fail(err, rcs[k], "the device did not decode it (the CPU decoder serves it)");
        t0 = clock_ms();
        if (rc == 0)
            rc = src->fmt == IMAGEIO_JPEG
                     ? gconv_jpeg_encode_host(bench_gpu, &out[0], o->quality, &enc_out, &r->bytes, err)
                     : gconv_png_encode_host(bench_gpu, &out[0], o->level, 8, &enc_out, &r->bytes, err);
        if (i > 0)
            dec[i - 1] = ms / batch, enc[i - 1] = clock_ms() - t0;
        for (int k = 0; k < batch; k++)
            img_free(&out[k]);
        free(enc_out);
    }
    if (rc)
        return rc;
    r->decode_ms = bench_codec_median(dec, o->reps);
    r->encode_ms = bench_codec_median(enc, o->reps);
    return 0;
}

/* Opens --device's context once (bench_gpu; NULL when it does not open: no device rows). Returns
 * gconv_open's code, message in err. */
static int bench_dev_open(const struct bench_codec_opts *o, char *err)
{
    int rc = 0;

    if (!bench_gpu_tried) {
        bench_gpu_tried = 1;
        if ((rc = gconv_open(&bench_gpu, o->device, 1, err)) < 0) {
            gconv_close(bench_gpu);
            bench_gpu = NULL;
        }
    }
    return rc;
}

/* Whether the device serves src's format, the context opened on the first call. */
static int bench_dev_ready(const struct bench_dev_src *src, const struct bench_codec_opts *o)
{
    char err[EDGED_ERR_LEN];

    bench_dev_open(o, err);
    return bench_gpu && (src->fmt == IMAGEIO_PNG ? gconv_png_available(bench_gpu) : gconv_jpeg_available(bench_gpu));
}

/* The host's part of a device PNG decode, as a request thread does it before the device decodes:
 * pngdec_layout_into over the file (header, every chunk's CRC, the zlib stream copied into one
 * buffer). Its median over reps after a warm-up into r->decode_ms, the stream's length into
 * r->bytes; r->encode_ms stays 0. */
static int bench_codec_png_host(const struct bench_dev_src *src, const struct bench_codec_opts *o,
                                struct bench_codec_result *r, char *err)
{
    double t[BENCH_CODEC_MAX_REPS];
    struct png_layout lay;
    uint8_t *dst = malloc(src->len);
    int rc = 0;

    if (!dst)
        return edged_fail(err, EDGED_E_NOMEM, "no memory for a %zu-byte stream", src->len);
    for (int i = 0; i <= o->reps && rc == 0; i++) {
        double t0 = clock_ms();
        if (pngdec_layout_into(src->data, src->len, &lay, dst, &r->bytes) < 0)
            rc = edged_fail(err, EDGED_E_BAD_IMAGE, "pngdec_layout_into declined the file");
        if (i > 0)
            t[i - 1] = clock_ms() - t0;
    }
    free(dst);
    if (rc == 0)
        r->decode_ms = bench_codec_median(t, o->reps);
    return rc;
}

/* The device rows of a JPEG (nvjpeg, nvjpeg-batchN) or PNG file (gpu-png-host, gpu-png,
 * gpu-png-batchN) when the build and the device serve it. A file the device path does not take has
 * none. */
static int bench_codec_gpu_rows(const char *path, struct bench_dev_src *src, const struct bench_codec_opts *o)
{
    static const int batches[] = {1, 4, 8, 16, BENCH_CODEC_BATCH};
    const char *base = src->fmt == IMAGEIO_PNG ? "gpu-png" : "nvjpeg";
    char err[EDGED_ERR_LEN], name[32];
    uint8_t *join = NULL;
    int rc = EXIT_OK;

    struct pngio_info info;

    if (!bench_dev_ready(src, o) ||
        (src->fmt == IMAGEIO_PNG && (pngio_peek(src->data, src->len, &info, err) ||
                                     pngdec_layout(src->data, src->len, &src->lay, &src->z, &src->z_len, &join, err))))
        return EXIT_OK;
    if (src->fmt == IMAGEIO_PNG) {
        struct bench_codec_result r = {0};

        if (bench_codec_png_host(src, o, &r, err) < 0) {
            fprintf(stderr, "edged bench --codec: %s (%s-host): %s\n", path, base, err);
            free(join);
            return EXIT_BAD_INPUT;
        }
        bench_codec_print(path, "gpu-png-host", &r, o->json, o->device);
    }
    for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
        struct bench_codec_result r = {0};

        int e = bench_codec_device(src, batches[i], o, &r, err);
        if (e < 0) { /* a file the device refuses or declines has no row; any other failure is one */
            fprintf(stderr, "edged bench --codec: %s (%s): %s\n", path, base, err);
            rc = e == GCONV_E_JPEG_REFUSED || e == GCONV_E_PNG_REFUSED || e == GCONV_E_PNG_DECLINED ? EXIT_OK
                                                                                                   : EXIT_BAD_INPUT;
            break;
        }
        if (batches[i] == 1)
            snprintf(name, sizeof(name), "%s", base);
        else
            snprintf(name, sizeof(name), "%s-batch%d", base, batches[i]);
        bench_codec_print(path, name, &r, o->json, o->device);
    }
    free(join);
    return rc;
}

static int bench_codec_file(const char *path, const struct bench_codec_opts *o)
{
    char err[EDGED_ERR_LEN];
    size_t len = 0;
    uint8_t *data = NULL;
    int rc = 0, fmt = 0;

    if (fileio_read(path, BENCH_CODEC_MAX_FILE, &data, &len, err) < 0) {
        fprintf(stderr, "edged bench --codec: %s\n", err);
        rc = EXIT_BAD_INPUT;
    }
    if (rc == 0 && (fmt = imageio_sniff(data, len, err)) < 0) {
        fprintf(stderr, "edged bench --codec: %s: %s\n", path, err);
        rc = EXIT_BAD_INPUT;
    }
    for (size_t i = 0; rc == 0 && i < sizeof(bench_codecs) / sizeof(bench_codecs[0]); i++) {
        struct bench_codec_result r = {0};

        if (bench_codecs[i].fmt != (enum imageio_format)fmt)
            continue;
        if (bench_codec_one(&bench_codecs[i], data, len, o, &r, err)) {
            fprintf(stderr, "edged bench --codec: %s (%s): %s\n", path, bench_codecs[i].name, err);
            rc = EXIT_BAD_INPUT;
        } else {
            bench_codec_print(path, bench_codecs[i].name, &r, o->json, -1);
        }
    }
    if (rc == 0 && (fmt == IMAGEIO_JPEG || fmt == IMAGEIO_PNG)) {
        struct bench_dev_src src = {.fmt = (enum imageio_format)fmt, .data = data, .len = len};
        rc = bench_codec_gpu_rows(path, &src, o);
    }
    free(data);
    return rc;
}

static const struct opts_spec bench_codec_specs[] = {
    {"codec", NULL, "time the codecs of each FILE's format: PNG, JPEG, WebP (this mode)"},
    {"json", NULL, "one JSON object per line: file, codec, decode_ms, encode_ms, bytes"},
    {"reps", "N", "timed repetitions after a warm-up, median reported (default 5; at most 1000)"},
    {"level", "L", "PNG level of the encodes, 0..9 (default 1)"},
    {"quality", "Q", "JPEG and WebP quality of the encodes, 1..100 (default 90)"},
    {"device", "N", "the CUDA device number of the device rows (default 0); given, the GPU is required"},
};
#define BENCH_CODEC_NSPECS ((int)(sizeof(bench_codec_specs) / sizeof(bench_codec_specs[0])))

static void bench_codec_usage(FILE *f)
{
    fprintf(f, "usage: edged bench --codec [--json] [--reps N] [--level L] [--quality Q] [--device N] FILE...\n"
               "  per file: median decode and encode ms of the codecs of its format (PNG: edged's and\n"
               "  libpng; JPEG: libjpeg-turbo, and nvJPEG one at a time and in batches of 4, 8, 16\n"
               "  and %d when the GPU has it; WebP: libwebp), measured in the same run, and the bytes\n"
               "  each encodes the decoded image to\n", BENCH_CODEC_BATCH);
    opts_print(f, bench_codec_specs, BENCH_CODEC_NSPECS);
}

static int bench_codec_opt(void *app, int i, const char *val, char *err)
{
    struct bench_codec_opts *o = app;
    char *end;
    long v;

    if (i == 0)
        return 0;
    if (i == 1)
        return o->json = 1, 0;
    v = strtol(val, &end, 10);
    if (i == 2 && (*end || end == val || v < 1 || v > BENCH_CODEC_MAX_REPS))
        return edged_fail(err, EDGED_E_USAGE, "--reps '%s': expected 1..%d", val, BENCH_CODEC_MAX_REPS);
    if (i == 3 && (*end || end == val || v < 0 || v > 9))
        return edged_fail(err, EDGED_E_USAGE, "--level '%s': expected 0..9", val);
    if (i == 4 && (*end || end == val || v < 1 || v > 100))
        return edged_fail(err, EDGED_E_USAGE, "--quality '%s': expected 1..100", val);
    if (i == 5 && (*end || end == val || v < 0 || v > PARAMS_MAX_DEVICE))
        return edged_fail(err, EDGED_E_USAGE, "--device '%s': expected a CUDA device number 0..%d", val,
                          PARAMS_MAX_DEVICE);
    o->device_given |= i == 5;
    *(i == 2 ? &o->reps : i == 3 ? &o->level : i == 4 ? &o->quality : &o->device) = (int)v;
    return 0;
}

int bench_codec_main(int argc, char **argv)
{
    struct bench_codec_opts o = {0, BENCH_CODEC_REPS, PNGIO_DEFAULT_LEVEL, JPEGIO_DEFAULT_QUALITY, 0, 0};
    char err[EDGED_ERR_LEN] = "";
    int first = argc, rc = opts_parse(argc, argv, bench_codec_specs, BENCH_CODEC_NSPECS, bench_codec_opt, &o,
                                      &first, err);

    if (rc == 0 && first >= argc)
        rc = edged_fail(err, EDGED_E_USAGE, "no image file given");
    if (rc != 0)
        return opts_usage_exit(rc, "bench --codec", err, bench_codec_usage);
    if (o.device_given && (rc = bench_dev_open(&o, err)) < 0) { /* a named device must open */
        fprintf(stderr, "edged bench --codec: --device %d: %s\n", o.device, err);
        return exit_status_for(rc);
    }
    if (!o.json)
        printf("%-40s %-13s %10s %10s %12s\n", "file", "codec", "decode_ms", "encode_ms", "bytes");
    rc = EXIT_OK;
    for (int i = first; i < argc; i++)
        if (bench_codec_file(argv[i], &o) != EXIT_OK)
            rc = EXIT_BAD_INPUT;
    gconv_close(bench_gpu);
    return rc;
}
