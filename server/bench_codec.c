/* bench_codec.c — `edged bench --codec`: times edged's PNG codec and libpng's on the same files. */
#include "bench_codec.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "commands.h"
#include "errors.h"
#include "image.h"
#include "png_io.h"

#define BENCH_CODEC_REPS 5
#define BENCH_CODEC_MAX_REPS 1000

struct bench_codec_opts {
    int json, reps, level;
};

/* One codec: its decoder and encoder, both with pngio's contract. */
struct bench_codec {
    const char *name;
    int (*decode)(const uint8_t *, size_t, const struct png_limits *, struct img *, char *);
    int (*encode)(const struct img *, int, int, uint8_t **, size_t *, char *);
};

static const struct bench_codec bench_codecs[] = {
    {"edged", pngio_decode, pngio_encode},
    {"libpng", pngio_decode_libpng, pngio_encode_libpng},
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
            rc = c->encode(&im, o->level, 8, &png, &r->bytes, err);
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

static void bench_codec_print(const char *file, const char *codec, const struct bench_codec_result *r, int json)
{
    if (json) {
        cJSON *o = cJSON_CreateObject();
        char *s;

        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "codec", codec);
        cJSON_AddNumberToObject(o, "decode_ms", round(r->decode_ms * 1000) / 1000);
        cJSON_AddNumberToObject(o, "encode_ms", round(r->encode_ms * 1000) / 1000);
        cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
        if ((s = cJSON_PrintUnformatted(o)))
            puts(s);
        cJSON_free(s);
        cJSON_Delete(o);
    } else {
        printf("%-40s %-7s %10.2f %10.2f %12zu\n", file, codec, r->decode_ms, r->encode_ms, r->bytes);
    }
}

static int bench_codec_file(const char *path, const struct bench_codec_opts *o)
{
    char err[EDGED_ERR_LEN];
    size_t len = 0;
    uint8_t *data = NULL;
    FILE *f = fopen(path, "rb");
    long n;
    int rc = 0;

    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
        !(data = malloc((size_t)n + 1)) || (len = fread(data, 1, (size_t)n, f)) != (size_t)n) {
        fprintf(stderr, "edged bench --codec: cannot read %s\n", path);
        rc = EXIT_BAD_INPUT;
    }
    for (size_t i = 0; rc == 0 && i < sizeof(bench_codecs) / sizeof(bench_codecs[0]); i++) {
        struct bench_codec_result r = {0};

        if (bench_codec_one(&bench_codecs[i], data, len, o, &r, err)) {
            fprintf(stderr, "edged bench --codec: %s (%s): %s\n", path, bench_codecs[i].name, err);
            rc = EXIT_BAD_INPUT;
        } else {
            bench_codec_print(path, bench_codecs[i].name, &r, o->json);
        }
    }
    if (f)
        fclose(f);
    free(data);
    return rc;
}

static int bench_codec_usage(FILE *f)
{
    fprintf(f, "usage: edged bench --codec [--json] [--reps N] [--level L] FILE.png...\n"
               "  per file: median decode and encode ms of edged's PNG codec and of libpng (same run,\n"
               "  after a warm-up), and the bytes each encodes the decoded image to at level L\n"
               "  (default %d); --reps 1..%d (default %d); --json: one JSON object per line\n",
            PNGIO_DEFAULT_LEVEL, BENCH_CODEC_MAX_REPS, BENCH_CODEC_REPS);
    return f == stdout ? EXIT_OK : EXIT_USAGE;
}

int bench_codec_main(int argc, char **argv)
{
    struct bench_codec_opts o = {0, BENCH_CODEC_REPS, PNGIO_DEFAULT_LEVEL};
    int i = 1, rc = EXIT_OK;

    if (i < argc && strcmp(argv[i], "--codec") == 0)
        i++;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--json") == 0)
            o.json = 1;
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            o.reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--level") == 0 && i + 1 < argc)
            o.level = atoi(argv[++i]);
        else
            return bench_codec_usage(strcmp(argv[i], "--help") == 0 ? stdout : stderr);
    }
    if (i == argc || o.reps < 1 || o.reps > BENCH_CODEC_MAX_REPS || o.level < 0 || o.level > 9)
        return bench_codec_usage(stderr);
    if (!o.json)
        printf("%-40s %-7s %10s %10s %12s\n", "file", "codec", "decode_ms", "encode_ms", "bytes");
    for (; i < argc; i++)
        if (bench_codec_file(argv[i], &o) != EXIT_OK)
            rc = EXIT_BAD_INPUT;
    return rc;
}
