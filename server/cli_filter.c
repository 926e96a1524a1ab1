/* cli_filter.c — `edged filter IN.png OUT.png [options]`: one image through the same path the
 * service uses (decode, plan, engine, encode), with optional JSON timing metadata. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "engine.h"
#include "clock.h"
#include "errors.h"
#include "filter.h"
#include "params.h"
#include "png_io.h"
#include "variant.h"

/* Largest input file the CLI reads; the decode limits apply on top. */
#define CLI_MAX_FILE_BYTES ((size_t)1 << 30)

struct cli_opts {
    const char *in_path, *out_path;
    struct params p; /* the same request parameters the HTTP service takes */
    int json;
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
    "                     (or JSON rows '[[1,2,1],[2,4,2],[1,2,1]]')\n"
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

/* "a,b,c;d,e,f" (rows by ';', numbers by ',') into the JSON rows "[[a,b,c],[d,e,f]]" that the
 * request parser takes; a JSON array is passed through. Numbers are checked by the parser. */
static int taps_to_json(const char *s, char *out, size_t cap, char *err)
{
    size_t n = 0;

    if (*s == '[')
        return snprintf(out, cap, "%s", s) < (int)cap ? 0
               : edged_fail(err, EDGED_E_PARAM, "taps: longer than %zu characters", cap - 1);
    out[n++] = '[';
    out[n++] = '[';
    for (; *s && n + 4 < cap; s++)
        if (*s == ';') {
            out[n++] = ']';
            out[n++] = ',';
            out[n++] = '[';
        } else {
            out[n++] = *s;
        }
    if (*s)
        return edged_fail(err, EDGED_E_PARAM, "taps: longer than %zu characters", cap - 4);
    out[n++] = ']';
    out[n++] = ']';
    out[n] = '\0';
    return 0;
}

static const struct option long_opts[] = {
    {"filter", required_argument, 0, 0},    {"threshold", required_argument, 0, 0},
    {"border", required_argument, 0, 0},    {"color", required_argument, 0, 0},
    {"post", required_argument, 0, 0},      {"size", required_argument, 0, 0},
    {"sigma", required_argument, 0, 0},     {"taps", required_argument, 0, 0},
    {"normalize", no_argument, 0, 0},       {"variant", required_argument, 0, 0},
    {"block", required_argument, 0, 0},     {"png-level", required_argument, 0, 0},
    {"bit-depth", required_argument, 0, 0}, {"json", no_argument, 0, 'j'},
    {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
};

/* Every option but --json and --help is a request parameter of the same name ('-' -> '_'),
 * parsed and checked by api/params.c exactly as the HTTP service does. */
static int apply_param(struct params *p, const char *opt, const char *arg, char *err)
{
    static char taps[PARAMS_MAX_JSON];
    char key[32];
    size_t i;

    for (i = 0; opt[i] && i + 1 < sizeof(key); i++)
        key[i] = opt[i] == '-' ? '_' : opt[i];
    key[i] = '\0';
    if (strcmp(key, "normalize") == 0)
        arg = "true";
    if (strcmp(key, "taps") == 0) {
        int rc = taps_to_json(arg, taps, sizeof(taps), err);
        if (rc < 0)
            return rc;
        arg = taps;
    }
    return params_set_text(p, key, arg, err);
}

/* Returns 0, 1 for --help, or a negative code with the message in err. */
static int parse_args(int argc, char **argv, struct cli_opts *o, char *err)
{
    int c, idx, rc;

    memset(o, 0, sizeof(*o));
    params_init(&o->p, PARAMS_FILTER);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", long_opts, &idx)) != -1) {
        if (c == 'h')
            return 1;
        if (c == 'j')
            o->json = 1;
        else if (c == '?')
            return edged_fail(err, EDGED_E_USAGE, "unknown or incomplete option '%s' (see edged filter --help)",
                              argv[optind - 1]);
        else if ((rc = apply_param(&o->p, long_opts[idx].name, optarg, err)) < 0)
            return rc;
    }
    if (argc - optind != 2)
        return edged_fail(err, EDGED_E_USAGE, "need INPUT.png and OUTPUT.png (got %d paths)", argc - optind);
    o->in_path = argv[optind];
    o->out_path = argv[optind + 1];
    if (o->p.output == PARAMS_OUTPUT_JSON)
        return edged_fail(err, EDGED_E_USAGE, "use --json for the timing metadata");
    return params_validate(&o->p, err);
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

    cJSON_AddStringToObject(root, "filter", filter_name(o->p.spec.filter));
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
    enum variant used = o->p.variant;
    enum backend want = o->p.variant == VARIANT_AUTO ? BACKEND_AUTO
                        : variant_is_gpu(o->p.variant) ? BACKEND_GPU : BACKEND_CPU;
    double t0 = clock_ms(), t1;
    int rc;

    pngio_default_limits(&lim);
    if ((rc = read_file(o->in_path, &file, &file_len, err)) < 0)
        goto out;
    t1 = clock_ms();
    if ((rc = pngio_decode(file, file_len, &lim, &in, err)) < 0)
        goto out;
    t.decode = clock_ms() - t1;
    if (!(plan = malloc(sizeof(*plan)))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the plan");
        goto out;
    }
    if ((rc = params_plan(&o->p, in.ch, plan, err)) < 0 ||
        (rc = engine_open(&e, want, 1, 0, err)) < 0)
        goto out;
    t1 = clock_ms();
    if ((rc = engine_run(e, &in, plan, o->p.variant, o->p.block ? o->p.block : VARIANT_DEFAULT_BLOCK, &out, &used, &t.dev, err)) < 0)
        goto out;
    t.filter = clock_ms() - t1;
    t1 = clock_ms();
    if ((rc = pngio_encode(&out, o->p.png_level, o->p.bit_depth, &png, &png_len, err)) < 0 ||
        (rc = write_file(o->out_path, png, png_len, err)) < 0)
        goto out;
    t.encode = clock_ms() - t1;
    t.total = clock_ms() - t0;
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
