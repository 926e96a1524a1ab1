/* cli_filter.c — `edged filter IN.png OUT.png [options]`: one image through the same path the
 * service uses (decode, plan, engine, encode), with optional JSON timing metadata. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "engine.h"
#include "errors.h"
#include "filter.h"
#include "png_io.h"
#include "variant.h"

/* Largest input file the CLI reads; the decode limits apply on top. */
#define CLI_MAX_FILE_BYTES ((size_t)1 << 30)

struct cli_opts {
    const char *in_path, *out_path;
    struct filter_spec spec;
    enum variant variant;
    int block, png_level, bit_depth, json;
};

static const char filter_usage[] =
    "usage: edged filter INPUT.png OUTPUT.png [options]\n"
    "  --filter NAME      edge (default), gaussian5, gaussian, laplacian3, laplacian8, sobel_x,\n"
    "                     sobel_y, sobel, sharpen, emboss, box, custom (edged filters lists them)\n"
    "  --threshold T      edge: |L| > T is an edge (default 5)\n"
    "  --border B         zero (default), replicate, reflect (reflect-101)\n"
    "  --color C          auto (default), gray, rgb\n"
    "  --post P           clamp, abs, offset (default depends on the filter)\n"
    "  --size N           gaussian, box: odd kernel side 3..63\n"
    "  --sigma S          gaussian: sigma (default from size, as OpenCV)\n"
    "  --taps ROWS        custom: rows separated by ';', numbers by ',', e.g. '1,2,1;2,4,2;1,2,1'\n"
    "  --normalize        custom: divide the taps by their sum\n"
    "  --variant NAME     auto (default), cpu_serial, cpu or a GPU variant (edged variants)\n"
    "  --block N          GPU block side 8, 16 (default), 24, 32\n"
    "  --png-level L      zlib level of the output 0..9 (default 1)\n"
    "  --bit-depth D      8 (default) or 1 (1-bit PNG; single-channel results only)\n"
    "  --json             print timing metadata as JSON on stdout\n"
    "exit status: 0 ok, 2 usage error, 3 bad input, 1 other failure\n";

int exit_status_for(int code)
{
    switch (code) {
    case EDGED_OK:
        return EXIT_OK;
    case EDGED_E_USAGE:
    case EDGED_E_PARAM:
    case EDGED_E_VARIANT_LIMIT:
    case EDGED_E_NO_CUDA:
        return EXIT_USAGE;
    case EDGED_E_NOT_PNG:
    case EDGED_E_BAD_PNG:
    case EDGED_E_IMAGE_TOO_LARGE:
    case EDGED_E_IO:
        return EXIT_BAD_INPUT;
    default:
        return EXIT_FAIL;
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Strict number parsing: the whole string must be a number in [lo, hi]. */
static int parse_long(const char *opt, const char *s, long lo, long hi, long *out, char *err)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return edged_fail(err, EDGED_E_PARAM, "--%s '%s' invalid: want an integer %ld..%ld", opt, s, lo, hi);
    *out = v;
    return 0;
}

static int parse_float(const char *opt, const char *s, float *out, char *err)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return edged_fail(err, EDGED_E_PARAM, "--%s '%s' invalid: want a finite number", opt, s);
    *out = v;
    return 0;
}

/* "a,b,c;d,e,f;..." into the spec's custom taps; rows must have equal lengths. */
static int parse_taps(const char *s, struct filter_spec *spec, char *err)
{
    int rows = 1, cols = 0, n = 0, in_row = 0;
    const char *p = s;

    while (*p) {
        char *end;
        errno = 0;
        float v = strtof(p, &end);
        if (end == p || errno || !isfinite(v))
            return edged_fail(err, EDGED_E_PARAM, "--taps: bad number at '%.20s'", p);
        if (n >= FILTER_MAX_TAPS || ++in_row > FILTER_MAX_SIDE)
            return edged_fail(err, EDGED_E_PARAM, "--taps: more than %d per row or %d in all", FILTER_MAX_SIDE,
                              FILTER_MAX_TAPS);
        spec->custom_taps[n++] = v;
        p = end;
        if (*p == ';' || *p == '\0') {
            if (cols && in_row != cols)
                return edged_fail(err, EDGED_E_PARAM, "--taps: row %d has %d numbers, row 1 has %d", rows, in_row,
                                  cols);
            cols = in_row;
            in_row = 0;
            if (*p == ';' && (rows++, *++p == '\0'))
                return edged_fail(err, EDGED_E_PARAM, "--taps: empty last row");
        } else if (*p++ != ',') {
            return edged_fail(err, EDGED_E_PARAM, "--taps: expected ',' or ';' at '%.20s'", p - 1);
        }
    }
    if (n == 0)
        return edged_fail(err, EDGED_E_PARAM, "--taps: no numbers");
    spec->custom_rows = rows;
    spec->custom_cols = cols;
    return 0;
}

/* Looks name up with from_name; an unknown name is a usage error naming the option. */
static int parse_name(const char *opt, const char *s, int (*from_name)(const char *), int *out, char *err)
{
    int v = from_name(s);
    if (v < 0)
        return edged_fail(err, EDGED_E_PARAM, "--%s '%s' unknown (edged %s lists the names)", opt, s,
                          strcmp(opt, "variant") == 0 ? "variants" : strcmp(opt, "filter") == 0 ? "filters"
                                                                                                 : "filter --help");
    *out = v;
    return 0;
}

enum { OPT_THRESHOLD = 256, OPT_BORDER, OPT_COLOR, OPT_POST, OPT_SIZE, OPT_SIGMA, OPT_TAPS, OPT_NORMALIZE,
       OPT_VARIANT, OPT_BLOCK, OPT_LEVEL, OPT_DEPTH, OPT_JSON, OPT_FILTER, OPT_HELP };

static const struct option long_opts[] = {
    {"filter", required_argument, 0, OPT_FILTER},       {"threshold", required_argument, 0, OPT_THRESHOLD},
    {"border", required_argument, 0, OPT_BORDER},       {"color", required_argument, 0, OPT_COLOR},
    {"post", required_argument, 0, OPT_POST},           {"size", required_argument, 0, OPT_SIZE},
    {"sigma", required_argument, 0, OPT_SIGMA},         {"taps", required_argument, 0, OPT_TAPS},
    {"normalize", no_argument, 0, OPT_NORMALIZE},       {"variant", required_argument, 0, OPT_VARIANT},
    {"block", required_argument, 0, OPT_BLOCK},         {"png-level", required_argument, 0, OPT_LEVEL},
    {"bit-depth", required_argument, 0, OPT_DEPTH},     {"json", no_argument, 0, OPT_JSON},
    {"help", no_argument, 0, OPT_HELP},                 {0, 0, 0, 0},
};

/* One option into o; returns 0, 1 for --help, or a negative code with the message in err. */
static int apply_opt(int c, const char *arg, struct cli_opts *o, char *err)
{
    long n;
    int v, rc = 0;

    switch (c) {
    case OPT_FILTER:
        if ((rc = parse_name("filter", arg, filter_from_name, &v, err)) == 0)
            o->spec.filter = v;
        return rc;
    case OPT_THRESHOLD:
        return parse_float("threshold", arg, &o->spec.threshold, err);
    case OPT_BORDER:
        if ((rc = parse_name("border", arg, border_from_name, &v, err)) == 0)
            o->spec.border = v;
        return rc;
    case OPT_COLOR:
        if ((rc = parse_name("color", arg, color_from_name, &v, err)) == 0)
            o->spec.color = v;
        return rc;
    case OPT_POST:
        if ((rc = parse_name("post", arg, post_from_name, &v, err)) == 0)
            o->spec.post = v;
        return rc;
    case OPT_SIZE:
        if ((rc = parse_long("size", arg, 1, FILTER_MAX_SIDE, &n, err)) == 0)
            o->spec.size = (int)n;
        return rc;
    case OPT_SIGMA:
        rc = parse_float("sigma", arg, &o->spec.sigma, err);
        if (rc == 0 && o->spec.sigma <= 0.0f)
            return edged_fail(err, EDGED_E_PARAM, "--sigma %s invalid: must be > 0", arg);
        return rc;
    case OPT_TAPS:
        return parse_taps(arg, &o->spec, err);
    case OPT_NORMALIZE:
        o->spec.custom_normalize = 1;
        return 0;
    case OPT_VARIANT:
        if ((rc = parse_name("variant", arg, variant_from_name, &v, err)) == 0)
            o->variant = v;
        return rc;
    case OPT_BLOCK:
        if ((rc = parse_long("block", arg, 1, 1024, &n, err)) == 0 && !variant_block_ok((int)n))
            return edged_fail(err, EDGED_E_PARAM, "--block %ld invalid: must be 8, 16, 24 or 32", n);
        o->block = (int)n;
        return rc;
    case OPT_LEVEL:
        if ((rc = parse_long("png-level", arg, 0, 9, &n, err)) == 0)
            o->png_level = (int)n;
        return rc;
    case OPT_DEPTH:
        if ((rc = parse_long("bit-depth", arg, 1, 8, &n, err)) == 0 && n != 1 && n != 8)
            return edged_fail(err, EDGED_E_PARAM, "--bit-depth %ld invalid: must be 8 or 1", n);
        o->bit_depth = (int)n;
        return rc;
    case OPT_JSON:
        o->json = 1;
        return 0;
    case OPT_HELP:
        return 1;
    default:
        return edged_fail(err, EDGED_E_USAGE, "unknown option (see edged filter --help)");
    }
}

static int parse_args(int argc, char **argv, struct cli_opts *o, char *err)
{
    int c, rc;

    memset(o, 0, sizeof(*o));
    filter_spec_init(&o->spec, FILTER_EDGE);
    o->variant = VARIANT_AUTO;
    o->block = VARIANT_DEFAULT_BLOCK;
    o->png_level = PNGIO_DEFAULT_LEVEL;
    o->bit_depth = 8;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h')
            c = OPT_HELP;
        if (c == '?')
            return edged_fail(err, EDGED_E_USAGE, "unknown or incomplete option '%s' (see edged filter --help)",
                              argv[optind - 1]);
        if ((rc = apply_opt(c, optarg, o, err)) != 0)
            return rc;
    }
    if (argc - optind != 2)
        return edged_fail(err, EDGED_E_USAGE, "need INPUT.png and OUTPUT.png (got %d paths)", argc - optind);
    o->in_path = argv[optind];
    o->out_path = argv[optind + 1];
    if (o->spec.filter == FILTER_CUSTOM && o->spec.custom_rows == 0)
        return edged_fail(err, EDGED_E_PARAM, "filter custom needs --taps");
    if (o->spec.filter != FILTER_CUSTOM && (o->spec.custom_rows || o->spec.custom_normalize))
        return edged_fail(err, EDGED_E_PARAM, "--taps and --normalize apply to filter custom only");
    return 0;
}

/* Reads a whole file into a malloc'd buffer (caller frees). */
static int read_file(const char *path, uint8_t **out, size_t *len, char *err)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long size;
    int rc = 0;

    *out = NULL;
    if (!f)
        return edged_fail(err, EDGED_E_IO, "cannot open %s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        rc = edged_fail(err, EDGED_E_IO, "cannot read %s: not a regular file", path);
        goto out;
    }
    if ((size_t)size > CLI_MAX_FILE_BYTES) {
        rc = edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "%s is %ld bytes, over the %zu byte limit", path, size,
                        CLI_MAX_FILE_BYTES);
        goto out;
    }
    if (!(buf = malloc(size ? (size_t)size : 1))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate %ld bytes for %s", size, path);
        goto out;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        rc = edged_fail(err, EDGED_E_IO, "cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    *out = buf;
    *len = (size_t)size;
    buf = NULL;
out:
    free(buf);
    fclose(f);
    return rc;
}

static int write_file(const char *path, const uint8_t *data, size_t len, char *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot create %s: %s", path, strerror(errno));
    size_t n = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || n != len)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

struct cli_times {
    double decode, filter, encode, total;
    struct engine_times dev;
};

static void print_json(const struct cli_opts *o, const struct img *in, const struct img *out, enum variant used,
                       const struct engine *e, const struct cli_times *t, size_t out_bytes)
{
    cJSON *root = cJSON_CreateObject(), *ms = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(root, "filter", filter_name(o->spec.filter));
    cJSON_AddStringToObject(root, "variant", variant_name(used));
    cJSON_AddStringToObject(root, "backend", variant_is_gpu(used) ? "gpu" : "cpu");
    cJSON_AddStringToObject(root, "device", engine_device(e));
    cJSON_AddNumberToObject(root, "width", in->w);
    cJSON_AddNumberToObject(root, "height", in->h);
    cJSON_AddNumberToObject(root, "channels", in->ch);
    cJSON_AddNumberToObject(root, "out_channels", out->ch);
    cJSON_AddNumberToObject(root, "output_bytes", (double)out_bytes);
    cJSON_AddNumberToObject(ms, "decode", t->decode);
    cJSON_AddNumberToObject(ms, "filter", t->filter);
    cJSON_AddNumberToObject(ms, "upload", t->dev.upload);
    cJSON_AddNumberToObject(ms, "kernel", t->dev.kernel);
    cJSON_AddNumberToObject(ms, "download", t->dev.download);
    cJSON_AddNumberToObject(ms, "encode", t->encode);
    cJSON_AddNumberToObject(ms, "total", t->total);
    cJSON_AddItemToObject(root, "timings_ms", ms);
    if ((text = cJSON_PrintUnformatted(root))) {
        puts(text);
        cJSON_free(text);
    }
    cJSON_Delete(root);
}

/* decode -> plan -> engine -> encode -> write; every failure reported with its code. */
static int filter_run(const struct cli_opts *o, char *err)
{
    struct img in = {0}, out = {0};
    struct engine *e = NULL;
    struct filter_plan *plan = NULL;
    struct png_limits lim;
    struct cli_times t = {0};
    uint8_t *file = NULL, *png = NULL;
    size_t file_len = 0, png_len = 0;
    enum variant used = o->variant;
    enum backend want = o->variant == VARIANT_AUTO ? BACKEND_AUTO
                        : variant_is_gpu(o->variant) ? BACKEND_GPU : BACKEND_CPU;
    double t0 = now_ms(), t1;
    int rc;

    pngio_default_limits(&lim);
    if ((rc = read_file(o->in_path, &file, &file_len, err)) < 0)
        goto out;
    t1 = now_ms();
    if ((rc = pngio_decode(file, file_len, &lim, &in, err)) < 0)
        goto out;
    t.decode = now_ms() - t1;
    if (!(plan = malloc(sizeof(*plan)))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the plan");
        goto out;
    }
    if ((rc = filter_plan_make(&o->spec, in.ch, plan, err)) < 0 ||
        (rc = engine_open(&e, want, 1, 0, err)) < 0)
        goto out;
    t1 = now_ms();
    if ((rc = engine_run(e, &in, plan, o->variant, o->block, &out, &used, &t.dev, err)) < 0)
        goto out;
    t.filter = now_ms() - t1;
    t1 = now_ms();
    if ((rc = pngio_encode(&out, o->png_level, o->bit_depth, &png, &png_len, err)) < 0 ||
        (rc = write_file(o->out_path, png, png_len, err)) < 0)
        goto out;
    t.encode = now_ms() - t1;
    t.total = now_ms() - t0;
    if (o->json)
        print_json(o, &in, &out, used, e, &t, png_len);
out:
    free(png);
    img_free(&out);
    engine_close(e);
    free(plan);
    img_free(&in);
    free(file);
    return rc;
}

int filter_main(int argc, char **argv)
{
    static struct cli_opts opts; /* holds up to 63x63 custom taps: kept off the stack */
    char err[EDGED_ERR_LEN] = "";
    int rc = parse_args(argc, argv, &opts, err);

    if (rc == 1) {
        fputs(filter_usage, stdout);
        return EXIT_OK;
    }
    if (rc == 0)
        rc = filter_run(&opts, err);
    if (rc < 0) {
        fprintf(stderr, "edged filter: %s: %s\n", edged_err_name(rc), err);
        if (rc == EDGED_E_USAGE)
            fputs(filter_usage, stderr);
        return exit_status_for(rc);
    }
    return EXIT_OK;
}
