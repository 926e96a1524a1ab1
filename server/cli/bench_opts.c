/* bench_opts.c — the options of `edged bench`: defaults, one table of flags, the value parsers and
 * the checks across flags. */
#include "cli/bench_opts.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "image.h"
#include "ops/opts.h"
#include "params.h"

enum {
    OPT_VARIANTS, OPT_SIZES, OPT_KSIZES, OPT_BLOCKS, OPT_FILTER, OPT_BORDER, OPT_REPS, OPT_WARMUP, OPT_CHANNELS,
    OPT_SERIAL_MAX, OPT_CANNY_INPUT, OPT_INPUT, OPT_OPS, OPT_DEVICE, OPT_CSV, OPT_JSON, OPT_COMPARE, OPT_CPU, OPT_U8_EDGE, OPT_PROGRESS,
    OPT_L2GRADIENT,
};
static const struct opts_spec bench_opts_spec[] = {
    [OPT_VARIANTS] = {"variants", "a,b", "GPU variants (default: all of them; `edged variants` lists them)"},
    [OPT_SIZES] = {"sizes", "N,...", "image sides (default 256,512,1024,2048,4096,8192)"},
    [OPT_KSIZES] = {"ksizes", "K,...", "odd kernel sides (default 3,5,7,11,15,21,31; custom allows 1..63)"},
    [OPT_BLOCKS] = {"blocks", "B,...", "block sides 8, 16, 24, 32 (default 16)"},
    [OPT_FILTER] = {"filter", "F", "gaussian (default), box, custom (random non-separable taps), or canny\n"
                                   "(u8 gray in, map out, every stage on the device; --ksizes 3,5,7 are its\n"
                                   "apertures; --compare adds NPP's nppiFilterCannyBorder_8u_C1R)"},
    [OPT_BORDER] = {"border", "B", "zero (default, as in docs/performance.md), replicate, reflect (the\n"
                                   "default of requests); the u8 edge pipeline too"},
    [OPT_REPS] = {"reps", "N", "timed runs per row, the median is reported (default 10)"},
    [OPT_WARMUP] = {"warmup", "N", "untimed runs before them (default 2)"},
    [OPT_CHANNELS] = {"channels", "C", "planes per image (default 1): times are per image, C planes of one\n"
                                       "launch each"},
    [OPT_SERIAL_MAX] = {"serial-max", "N", "largest side timed with cpu_serial (default 2048)"},
    [OPT_CANNY_INPUT] = {"canny-input", "I", "canny's built-in image: synthetic (default; smooth shading, steps,\n"
                                             "noise) or spiral (hysteresis worst case: one weak chain across the\n"
                                             "image, knobs 100/1000, aperture 3, L1)"},
    [OPT_INPUT] = {"input", "FILE", "canny and --u8-edge time this image (PNG, JPEG or WebP) instead of the\n"
                                    "built-in one: gray as the service makes it (BT.601 luma, rounded),\n"
                                    "RGB rows its colour; mirror-tiled or cropped to each --sizes side"},
    [OPT_OPS] = {"ops", "JSON", "instead: a pipeline as a request's ops (api.md), on u8 RGB images of each\n"
                                "size (--input or random bytes): per GPU variant one row for the whole\n"
                                "pipeline in one job and one row for each step alone on the same image,\n"
                                "every kernel of a job on the device, no host copies"},
    [OPT_DEVICE] = {"device", "N", "the CUDA device number to bench (default 0; edged variants lists them);\n"
                                   "given, the GPU is required (no CPU-only fallback)"},
    [OPT_CSV] = {"csv", NULL, "print CSV instead of the table"},
    [OPT_JSON] = {"json", NULL, "print JSON instead of the table"},
    [OPT_COMPARE] = {"compare", NULL, "adds NVIDIA NPP nppiFilterBorder_32f_C1R (replicate border) when built\n"
                                      "with NPP"},
    [OPT_CPU] = {"cpu", NULL, "adds cpu (threaded, median of 3) and cpu_serial (once, sides <=\n"
                              "--serial-max) rows, and speedup columns against them; without a GPU\n"
                              "these are the only rows"},
    [OPT_U8_EDGE] = {"u8-edge", NULL, "instead: the whole edge pipeline (gaussian5 -> laplacian3 -> threshold)\n"
                                      "on u8 images of each size, gray (1 byte in, 1 out) and RGB (3 in, 1 out),\n"
                                      "all kernels of a job on the device; fast_1bit: fast writing the map as\n"
                                      "1-bit rows (1/8 byte out, as for bit_depth 1); --compare adds NPP's u8\n"
                                      "Gauss 5x5 + Laplace 3x3 (gray)"},
    [OPT_PROGRESS] = {"progress", NULL, "report progress on stderr (default: when stderr is a terminal)"},
    [OPT_L2GRADIENT] = {"l2gradient", NULL, "canny: the Euclidean gradient norm (default |gx|+|gy|)"},
};
#define BENCH_NOPTS ((int)(sizeof(bench_opts_spec) / sizeof(bench_opts_spec[0])))

void bench_usage(FILE *f)
{
    fputs("usage: edged bench [options]\n"
          "       edged bench --codec [options] FILE...   (the image codecs: edged bench --codec --help)\n"
          "Times each GPU variant on N x N float planes (random data on the device, input/output pairs\n"
          "rotated past L2, CUDA events, median of --reps after --warmup) for every kernel size and block.\n"
          "Canny and --u8-edge rows name the image they timed in their note: synthetic, spiral, random\n"
          "bytes, or photo FILE (--input).\n",
          f);
    opts_print(f, bench_opts_spec, BENCH_NOPTS);
    fputs("Columns: ms; GPix/s; GFLOP/s counting 2*rows*cols per pixel (the direct method, also for\n"
          "separable, so it can pass the FP32 peak); GB/s counting 8 bytes per pixel (fp32 in + out);\n"
          "%copy and %fp32: fractions of the measured copy bandwidth and of the FP32 peak; floor: the\n"
          "memory floor (bytes per pixel over the measured copy bandwidth; edge rows count their own\n"
          "bytes), x_floor = ms / floor. The table, CSV or JSON goes to stdout, progress to stderr.\n",
          f);
}

static int parse_ints(const char *s, int *out, int max, int lo, int hi, int odd)
{
    int n = 0;
    char *end;

    while (*s) {
        long v = strtol(s, &end, 10);
        if (end == s || v < lo || v > hi || (odd && v % 2 == 0) || n == max || (*end && *end != ','))
            return -1;
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int parse_variants(const char *s, struct bench_opts *o, char *err)
{
    char buf[512], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", s);
    o->nv = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v = variant_from_name(tok);
        if (v < 0 || !variant_is_gpu(v) || o->nv == VARIANT_COUNT)
            return edged_fail(err, EDGED_E_USAGE, "'%s' is not a GPU variant (see `edged variants`)", tok);
        o->variants[o->nv++] = v;
    }
    return o->nv ? 0 : edged_fail(err, EDGED_E_USAGE, "--variants: no variant named");
}

static void opts_default(struct bench_opts *o)
{
    static const int sizes[] = {256, 512, 1024, 2048, 4096, 8192}, ks[] = {3, 5, 7, 11, 15, 21, 31};

    memset(o, 0, sizeof(*o));
    for (int v = VARIANT_FIRST_GPU; v < VARIANT_COUNT; v++)
        if (variant_built(v))
            o->variants[o->nv++] = v;
    memcpy(o->sizes, sizes, sizeof(sizes));
    o->ns = 6;
    memcpy(o->ks, ks, sizeof(ks));
    o->nk = 7;
    o->blocks[0] = VARIANT_DEFAULT_BLOCK;
    o->nb = 1;
    o->filter = FILTER_GAUSSIAN;
    o->border = BORDER_ZERO;
    o->reps = 10;
    o->warmup = 2;
    o->channels = 1;
    o->serial_max = 2048;
}

/* A value option: its count of numbers parsed (> 0), or -1 for a bad value. */
static int value_opt(struct bench_opts *o, int i, const char *val)
{
    int n = -1, f;

    switch (i) {
    case OPT_SIZES:
        return o->ns = parse_ints(val, o->sizes, BENCH_MAX_LIST, 1, IMG_MAX_SIDE, 0);
    case OPT_KSIZES:
        return o->nk = parse_ints(val, o->ks, BENCH_MAX_LIST, 1, FILTER_MAX_SIDE, 1);
    case OPT_BLOCKS:
        n = o->nb = parse_ints(val, o->blocks, 4, 8, 32, 0);
        for (int b = 0; b < o->nb; b++)
            if (!variant_block_ok(o->blocks[b]))
                n = -1;
        return n;
    case OPT_FILTER:
        f = filter_from_name(val);
        o->filter = f;
        return f == FILTER_BOX || f == FILTER_GAUSSIAN || f == FILTER_CUSTOM || f == FILTER_CANNY ? 1 : -1;
    case OPT_CANNY_INPUT:
        o->canny_spiral = strcmp(val, "spiral") == 0;
        return o->canny_spiral || strcmp(val, "synthetic") == 0 ? 1 : -1;
    case OPT_INPUT:
        o->input = val;
        return 1;
    case OPT_OPS:
        o->ops = val;
        return 1;
    case OPT_BORDER:
        return (int)(o->border = border_from_name(val)) < 0 ? -1 : 1;
    case OPT_REPS:
        return parse_ints(val, &o->reps, 1, 1, 10000, 0);
    case OPT_WARMUP:
        return parse_ints(val, &o->warmup, 1, 0, 10000, 0);
    case OPT_CHANNELS:
        return parse_ints(val, &o->channels, 1, 1, 4, 0);
    case OPT_SERIAL_MAX:
        return parse_ints(val, &o->serial_max, 1, 0, IMG_MAX_SIDE, 0);
    case OPT_DEVICE:
        o->device_given = 1;
        return parse_ints(val, &o->device, 1, 0, PARAMS_MAX_DEVICE, 0);
    default:
        return -1;
    }
}

static int bench_opt(void *app, int i, const char *val, char *err)
{
    struct bench_opts *o = app;
    int *flag[] = {[OPT_COMPARE] = &o->compare, [OPT_CPU] = &o->cpu, [OPT_U8_EDGE] = &o->u8_edge,
                   [OPT_PROGRESS] = &o->progress, [OPT_L2GRADIENT] = &o->l2gradient};

    if (i == OPT_CSV || i == OPT_JSON) {
        o->fmt = i == OPT_CSV ? BENCH_CSV : BENCH_JSON;
        return 0;
    }
    if (i >= OPT_COMPARE) {
        *flag[i] = 1;
        return 0;
    }
    if (i == OPT_VARIANTS)
        return parse_variants(val, o, err);
    if (value_opt(o, i, val) <= 0)
        return edged_fail(err, EDGED_E_USAGE, "invalid value '%s' for --%s", val, bench_opts_spec[i].name);
    return 0;
}

int bench_parse_args(int argc, char **argv, struct bench_opts *o, char *err)
{
    int rc;

    opts_default(o);
    if ((rc = opts_parse(argc, argv, bench_opts_spec, BENCH_NOPTS, bench_opt, o, NULL, err)) != 0)
        return rc;
    for (int i = 0; i < o->nk; i++)
        if (o->ks[i] < (o->filter == FILTER_CUSTOM ? 1 : 3))
            return edged_fail(err, EDGED_E_USAGE, "%s needs kernel sides >= 3", filter_name(o->filter));
    if (o->input && !o->u8_edge && o->filter != FILTER_CANNY)
        return edged_fail(err, EDGED_E_USAGE, "--input: only --filter canny and --u8-edge time an image (the "
                                              "float rows' time does not depend on the pixels)");
    if ((o->input || o->l2gradient) && o->canny_spiral && !o->u8_edge)
        return edged_fail(err, EDGED_E_USAGE, "--canny-input spiral has its own image and knobs (no --input, "
                                              "no --l2gradient)");
    return 0;
}
