/* test_gpu_png_encode.c — the device PNG encoder (gpu/gconv_png_encode.cu) against libpng.
 * Random images of 1..4 channels and edge maps (8-bit, 1-bit, packed) at every kind of level,
 * decoded by libpng bit-exact; edge maps at most TEST_MAX_RATIO times libdeflate level 1's bytes on
 * the same filtered rows (the device's own, inflated back), and the 8-bit ones the same stream as the
 * host driver's run coder; job results (a packed edge map, an RGB
 * filter result) encoded with gconv_png_encode_result, after the job or enqueued behind it. Skips
 * visibly without a GPU; EDGED_REQUIRE_GPU=1 fails instead; EDGED_GPU_QUICK=1 keeps to images up
 * to 640x480 (the sanitizer runs). */
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "check.h"
#include "clock.h"
#include "deflate_chunks.h"
#include "deflate_host.h"
#include "edgemap.h"
#include "filter.h"
#include "gconv.h"
#include "image.h"
#include "codec/png_io.h"

#define TEST_MAX_RATIO 1.15
#define NSTREAMS 4

static uint32_t seed;
static int quick; /* EDGED_GPU_QUICK set (the sanitizer runs): images up to 640x480, no timing */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The expected decode of im: its samples, or for 1-bit output and packed maps 0/255. */
static uint8_t want_sample(const struct img *im, int bit_depth, int x, int y, int c)
{
    const uint8_t *row = im->px + (size_t)y * im->stride;
    int v = im->packed ? ((row[x >> 3] >> (7 - (x & 7))) & 1) * 255 : row[(size_t)x * im->ch + c];

    return (uint8_t)(bit_depth == 1 ? (v >= 128 ? 255 : 0) : v);
}

/* Decodes png with libpng alone and compares every sample with im's. */
static int decodes_to(const uint8_t *png, size_t len, const struct img *im, int bit_depth, const char *what)
{
    struct png_limits lim;
    struct img got = {0};
    char err[EDGED_ERR_LEN];
    int same = 1;

    pngio_default_limits(&lim);
    if (pngio_decode_libpng(png, len, &lim, &got, err) < 0) {
        CHECK(0, "%s: libpng refused the device's PNG: %s", what, err);
        return 0;
    }
    CHECK(got.w == im->w && got.h == im->h && got.ch == im->ch, "%s: decoded %dx%dx%d", what, got.w, got.h,
          got.ch);
    for (int y = 0; same && y < im->h && got.w == im->w && got.h == im->h && got.ch == im->ch; y++)
        for (int x = 0; x < im->w; x++)
            for (int c = 0; c < im->ch; c++)
                same &= got.px[(size_t)y * got.stride + (size_t)x * got.ch + c] ==
                        want_sample(im, bit_depth, x, y, c);
    CHECK(same, "%s: pixels differ after libpng (seed %u)", what, seed);
    img_free(&got);
    return same;
}

/* libdeflate level 1's zlib bytes on the filtered rows inside png (its IDAT inflated back). */
static size_t level1_bytes(const uint8_t *png, size_t raw_len)
{
    uLongf n = (uLongf)raw_len;
    uint8_t *raw = malloc(raw_len), *z = malloc(raw_len + raw_len / 8 + 1024);
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);
    size_t zlen = 0;

    if (raw && z && c && uncompress(raw, &n, png + 41, be32(png + 33)) == Z_OK && n == raw_len)
        zlen = libdeflate_zlib_compress(c, raw, raw_len, z, raw_len + raw_len / 8 + 1024);
    libdeflate_free_compressor(c);
    free(raw);
    free(z);
    return zlen;
}

/* The device's zlib stream of a two-level 8-bit map equals the host driver's with runs on the
 * unfiltered rows (the device's chunk for images of fewer than 8192 of them, its hint a row): the
 * run coder's blocks and the parser's, byte for byte. */
static void same_as_host(const uint8_t *png, const struct img *im, const char *what)
{
    size_t rb = (size_t)im->w + 1, n = rb * im->h, zlen = 0;
    uint8_t *raw = malloc(n), *z = NULL;
    char err[EDGED_ERR_LEN];

    if (!raw)
        return;
    for (int y = 0; y < im->h; y++) {
        raw[y * rb] = 0;
        memcpy(raw + y * rb + 1, im->px + (size_t)y * im->stride, (size_t)im->w);
    }
    if (deflhost_compress(raw, n, 8192, 1, (unsigned)rb, 1, &z, &zlen, err) == 0)
        CHECK(zlen == be32(png + 33) && memcmp(z, png + 41, zlen) == 0,
              "%s: the device's %u zlib bytes differ from the host driver's %zu", what, be32(png + 33), zlen);
    else
        CHECK(0, "%s: %s", what, err);
    free(z);
    free(raw);
}

static void test_random_images(struct gconv_ctx *ctx)
{
    static const int sizes[][2] = {{1, 1}, {7, 5}, {33, 17}, {333, 257}, {1001, 3}, {640, 480}, {2048, 1024}};
    static const int levels[] = {0, 1, 3, 4, 9};
    uint32_t rng = seed;
    char err[EDGED_ERR_LEN], what[96];

    for (int ch = 1; ch <= 4; ch++)
        for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
            struct img im;

            if (quick && sizes[si][0] * sizes[si][1] > 640 * 480)
                continue;
            if (img_alloc(&im, sizes[si][0], sizes[si][1], ch, err) < 0) {
                CHECK(0, "%s", err);
                continue;
            }
            /* noise in the low bits over a gradient: every filter has something to win */
            for (int y = 0; y < im.h; y++)
                for (size_t i = 0; i < (size_t)im.w * ch; i++)
                    im.px[(size_t)y * im.stride + i] = (uint8_t)(i / 7 + y + (edgemap_rng(&rng) & 15));
            for (size_t li = 0; li < sizeof(levels) / sizeof(*levels); li++) {
                uint8_t *png = NULL;
                size_t len = 0;
                int rc = gconv_png_encode_host(ctx, &im, levels[li], 8, &png, &len, err);

                snprintf(what, sizeof(what), "%dx%dx%d level %d", im.w, im.h, ch, levels[li]);
                CHECK(rc == 0, "%s: %s", what, err);
                if (rc == 0)
                    decodes_to(png, len, &im, 8, what);
                free(png);
            }
            img_free(&im);
        }
}

/* 8-bit and 1-bit maps, the 1-bit ones also handed over packed; sizes against libdeflate level 1. */
static void test_edge_maps(struct gconv_ctx *ctx)
{
    static const double densities[] = {0.01, 0.05, 0.10, 0.20};
    static const int sizes[][2] = {{1, 1}, {13, 9}, {640, 480}, {2048, 2048}};
    uint32_t rng = seed;
    char err[EDGED_ERR_LEN], what[96];

    for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++)
        for (size_t di = 0; di < sizeof(densities) / sizeof(*densities); di++) {
            int w = sizes[si][0], h = sizes[si][1];
            struct img im, pk = {0};

            if (quick && w * h > 640 * 480)
                continue;
            if (img_alloc(&im, w, h, 1, err) < 0) {
                CHECK(0, "%s", err);
                continue;
            }
            edgemap_draw(im.px, w, h, im.stride, densities[di], &rng);
            for (int depth = 8; depth >= 1; depth -= 7) {
                uint8_t *png = NULL;
                size_t len = 0, raw_len = ((depth == 1 ? ((size_t)w + 7) / 8 : (size_t)w) + 1) * h, ref;
                int rc = gconv_png_encode_host(ctx, &im, 1, depth, &png, &len, err);

                snprintf(what, sizeof(what), "edge map %dx%d density %.2f depth %d", w, h, densities[di],
                         depth);
                CHECK(rc == 0, "%s: %s", what, err);
                if (rc != 0)
                    continue;
                decodes_to(png, len, &im, depth, what);
                if (depth == 8)
                    same_as_host(png, &im, what);
                ref = level1_bytes(png, raw_len);
                if (w * h >= 640 * 480) {
                    printf("%s: %zu bytes, libdeflate level 1 on the same rows %zu (%.3fx)\n", what, len, ref,
                           (double)len / ref);
                    CHECK(len - 57 <= TEST_MAX_RATIO * ref, "%s: %zu zlib bytes > %.2f x %zu", what, len - 57,
                          TEST_MAX_RATIO, ref);
                }
                free(png);
            }
            /* the same map packed, as a 1-bit job answers it */
            if (img_alloc(&pk, w, h, 1, err) == 0) {
                uint8_t *png = NULL;
                size_t len = 0;

                pk.packed = 1, pk.stride = ((size_t)w + 7) / 8;
                memset(pk.px, 0, pk.stride * h);
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++)
                        pk.px[(size_t)y * pk.stride + x / 8] |=
                            (uint8_t)(im.px[(size_t)y * im.stride + x] ? 0x80u >> (x & 7) : 0);
                for (int depth = 8; depth >= 1; depth -= 7) {
                    snprintf(what, sizeof(what), "packed map %dx%d depth %d", w, h, depth);
                    CHECK(gconv_png_encode_host(ctx, &pk, 1, depth, &png, &len, err) == 0, "%s: %s", what,
                          err);
                    if (png)
                        decodes_to(png, len, &pk, depth, what);
                    free(png);
                    png = NULL;
                }
                img_free(&pk);
            }
            img_free(&im);
        }
}

/* The same job submitted again with its encode enqueued behind it (gconv_png_encode_behind): the
 * finish leaves the PNG ready, equal in pixels to want (the first run's result). */
static void behind(struct gconv_ctx *ctx, const struct img *in, const struct filter_plan *plan,
                   const struct img *want, const char *name)
{
    char err[EDGED_ERR_LEN], what[96];
    uint8_t *png = NULL;
    size_t len = 0;
    int rc;

    snprintf(what, sizeof(what), "job %s, encode behind it", name);
    if ((rc = gconv_submit(ctx, 1, in, plan, VARIANT_FAST, 16, err)) < 0) {
        CHECK(0, "%s: submit: %s", what, err);
        return;
    }
    CHECK(gconv_png_encode_behind(ctx, 1, 1, 8) == 0, "%s: not enqueued", what);
    CHECK((rc = gconv_finish(ctx, 1, NULL, NULL, err)) == 0, "%s: finish: %s", what, err);
    if (rc == 0 && (rc = gconv_png_encode_result(ctx, 1, 1, 8, &png, &len, err)) == 0)
        decodes_to(png, len, want, 8, what);
    CHECK(rc == 0, "%s: %s", what, err);
    free(png);
}

/* A job's result encoded where it lies: a packed edge map and an RGB Gaussian. */
static void test_job_results(struct gconv_ctx *ctx)
{
    static const enum filter_id ids[] = {FILTER_EDGE, FILTER_GAUSSIAN};
    uint32_t rng = seed;
    char err[EDGED_ERR_LEN], what[96];

    for (size_t f = 0; f < sizeof(ids) / sizeof(*ids); f++) {
        int ch = ids[f] == FILTER_EDGE ? 1 : 3, w = 512, h = 300;
        struct filter_spec spec;
        struct filter_plan plan;
        struct img in, out;

        filter_spec_init(&spec, ids[f]);
        if (filter_plan_make(&spec, ch, &plan, err) < 0 || img_alloc(&in, w, h, ch, err) < 0) {
            CHECK(0, "plan: %s", err);
            continue;
        }
        plan.accept_packed = ids[f] == FILTER_EDGE;
        img_alloc(&out, w, h, plan.out_ch, err);
        for (size_t i = 0; i < (size_t)w * h * ch; i++)
            in.px[i] = (uint8_t)(edgemap_rng(&rng) % 3 ? 40 : 220);
        if (gconv_run(ctx, 2, &in, &plan, VARIANT_FAST, 16, &out, NULL, NULL, err) != 0) {
            CHECK(0, "gconv_run: %s", err);
        } else {
            for (int depth = 8; depth >= (out.ch == 1 ? 1 : 8); depth -= 7) {
                uint8_t *png = NULL;
                size_t len = 0;
                int rc = gconv_png_encode_result(ctx, 2, 6, depth, &png, &len, err);

                snprintf(what, sizeof(what), "job %s%s depth %d", filter_name(ids[f]),
                         out.packed ? " packed" : "", depth);
                CHECK(rc == 0, "%s: %s", what, err);
                if (rc == 0)
                    decodes_to(png, len, &out, depth, what);
                free(png);
            }
            behind(ctx, &in, &plan, &out, filter_name(ids[f]));
        }
        img_free(&in);
        img_free(&out);
    }
}

/* One 2048x2048 edge map at level 1: device encode against the CPU encoder (informative). */
static void time_one(struct gconv_ctx *ctx)
{
    uint32_t rng = seed;
    struct img im;
    char err[EDGED_ERR_LEN];
    double t_gpu = 1e30, t_cpu = 1e30;
    size_t len_gpu = 0, len_cpu = 0;

    if (img_alloc(&im, 2048, 2048, 1, err) < 0)
        return;
    edgemap_draw(im.px, im.w, im.h, im.stride, 0.08, &rng);
    for (int r = 0; r < 5; r++) {
        uint8_t *png = NULL;
        double t0 = clock_ms();

        if (gconv_png_encode_host(ctx, &im, 1, 8, &png, &len_gpu, err) == 0)
            t_gpu = clock_ms() - t0 < t_gpu ? clock_ms() - t0 : t_gpu;
        free(png);
        t0 = clock_ms();
        if (pngio_encode(&im, 1, 8, &png, &len_cpu, err) == 0)
            t_cpu = clock_ms() - t0 < t_cpu ? clock_ms() - t0 : t_cpu;
        free(png);
    }
    printf("2048x2048 edge map (8%%), level 1: device %.2f ms (upload included) %zu bytes, CPU %.2f ms %zu "
           "bytes\n",
           t_gpu, len_gpu, t_cpu, len_cpu);
    img_free(&im);
}

int main(void)
{
    struct gconv_ctx *ctx = NULL;
    char err[EDGED_ERR_LEN];
    const char *req = getenv("EDGED_REQUIRE_GPU");
    int rc;

    seed = getenv("SEED") ? (uint32_t)strtoul(getenv("SEED"), NULL, 0) : (uint32_t)time(NULL) | 1u;
    printf("seed %u (SEED=... repeats it)\n", seed);
    quick = getenv("EDGED_GPU_QUICK") && atoi(getenv("EDGED_GPU_QUICK")) > 0;
    if ((rc = gconv_open(&ctx, 0, NSTREAMS, err)) < 0) {
        if (req && *req == '1')
            CHECK(rc == 0, "EDGED_REQUIRE_GPU=1 but no GPU: %s", err);
        else
            SKIP("device PNG encode tests: %s", err);
        return check_summary();
    }
    test_random_images(ctx);
    test_edge_maps(ctx);
    test_job_results(ctx);
    if (!quick)
        time_one(ctx);
    gconv_close(ctx);
    return check_summary();
}
