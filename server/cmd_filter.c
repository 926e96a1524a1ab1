/* cmd_filter.c — `edged filter IN.png OUT.png [options]`: one image through the service's path
 * (decode, plan, a job dispatched by backend.c as the workers do, encode), files or - for
 * stdin/stdout, with optional JSON timing metadata. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "backend.h"
#include "clock.h"
#include "commands.h"
#include "errors.h"
#include "filter.h"
#include "opts.h"
#include "params.h"
#include "png_io.h"
#include "result.h"
#include "queue.h"
#include "variant.h"

/* Largest input the CLI reads; the decode limits apply on top. */
#define CLI_MAX_FILE_BYTES ((size_t)1 << 30)
#define CLI_READ_CHUNK ((size_t)1 << 20)

struct cli_opts {
    const char *in_path, *out_path; /* "-": standard input / output */
    struct params p;                /* the same request parameters the HTTP service takes */
    int json;
};

/* The rows after FILTER_OPT_NORMALIZE are request parameters of the same name ('-' -> '_'),
 * parsed and checked by api/params.c exactly as the HTTP service does. */
enum { FILTER_OPT_JSON, FILTER_OPT_NORMALIZE };
static const struct opts_spec filter_opts[] = {
    {"json", NULL, "print timing metadata as JSON on stdout (not with OUTPUT -)"},
    {"normalize", NULL, "custom: divide the taps by their sum"},
    {"filter", "NAME", "edge (default), gaussian5, gaussian, laplacian3, laplacian8, sobel_x,\n"
                       "sobel_y, sobel, sharpen, emboss, box, custom (edged filters lists them)"},
    {"threshold", "T", "edge: |L| > T is an edge (default 5)"},
    {"border", "B", "zero (default), replicate, reflect (reflect-101)"},
    {"color", "C", "auto (default), gray, rgb"},
    {"post", "P", "clamp, abs, offset (default depends on the filter)"},
    {"size", "N", "gaussian, box: odd kernel side 3..63"},
    {"sigma", "S", "gaussian: sigma (default from size, as OpenCV)"},
    {"taps", "ROWS", "custom: rows separated by ';', numbers by ',', e.g. '1,2,1;2,4,2;1,2,1'\n"
                     "(or JSON rows '[[1,2,1],[2,4,2],[1,2,1]]')"},
    {"variant", "NAME", "auto (default), cpu_serial, cpu or a GPU variant (edged variants)"},
    {"block", "N", "GPU block side 8, 16 (default), 24, 32"},
    {"png-level", "L", "zlib level of the output 0..9 (default 1)"},
    {"bit-depth", "D", "8 (default) or 1 (1-bit PNG; single-channel results only)"},
};
#define FILTER_NOPTS ((int)(sizeof(filter_opts) / sizeof(filter_opts[0])))

/* Extensions of image formats edged does not write: such an OUTPUT name is refused rather than
 * given PNG bytes. Any other name (.png, none, -) is written as PNG. */
static const char *const foreign_exts[] = {"jpg", "jpeg", "jpe", "jfif", "webp", "gif", "bmp", "tif", "tiff",
                                           "avif", "heic", "heif", "jxl", "jp2", "ppm", "pgm", "pbm", "pnm",
                                           "tga", "ico", "qoi", "exr", "hdr", "svg", "pdf"};

static void filter_usage(FILE *f)
{
    fputs("usage: edged filter INPUT.png OUTPUT.png [options]\n"
          "  INPUT - reads standard input and OUTPUT - writes standard output. The output is a PNG:\n"
          "  a name with another image format's extension (.jpg, .webp, ...) is refused.\n",
          f);
    opts_print(f, filter_opts, FILTER_NOPTS);
    fputs("exit status: 0 ok, 2 usage error, 3 bad input, 1 other failure\n", f);
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

static int filter_opt(void *app, int i, const char *val, char *err)
{
    static char taps[PARAMS_MAX_JSON];
    struct cli_opts *o = app;
    char key[32];
    size_t n;
    int rc;

    if (i == FILTER_OPT_JSON) {
        o->json = 1;
        return 0;
    }
    for (n = 0; filter_opts[i].name[n] && n + 1 < sizeof(key); n++)
        key[n] = filter_opts[i].name[n] == '-' ? '_' : filter_opts[i].name[n];
    key[n] = '\0';
    if (i == FILTER_OPT_NORMALIZE)
        val = "true";
    if (strcmp(key, "taps") == 0) {
        if ((rc = taps_to_json(val, taps, sizeof(taps), err)) < 0)
            return rc;
        val = taps;
    }
    return params_set_text(&o->p, key, val, err);
}

/* 0, or EDGED_E_USAGE when path names an image format edged does not write. */
static int check_output_name(const char *path, char *err)
{
    const char *base = strrchr(path, '/'), *dot;

    base = base ? base + 1 : path;
    if (!(dot = strrchr(base, '.')) || dot == base)
        return 0;
    for (size_t i = 0; i < sizeof(foreign_exts) / sizeof(foreign_exts[0]); i++)
        if (strcasecmp(dot + 1, foreign_exts[i]) == 0)
            return edged_fail(err, EDGED_E_USAGE,
                              "cannot write '%s': edged writes PNG only (an OUTPUT name ending in .png or "
                              "without extension, or - for standard output)",
                              path);
    return 0;
}

/* Returns 0, OPTS_HELP, or a negative code with the message in err. */
static int parse_args(int argc, char **argv, struct cli_opts *o, char *err)
{
    int first, rc;

    memset(o, 0, sizeof(*o));
    params_init(&o->p, PARAMS_FILTER);
    if ((rc = opts_parse(argc, argv, filter_opts, FILTER_NOPTS, filter_opt, o, &first, err)) != 0)
        return rc;
    if (argc - first != 2)
        return edged_fail(err, EDGED_E_USAGE, "need INPUT.png and OUTPUT.png (got %d paths)", argc - first);
    o->in_path = argv[first];
    o->out_path = argv[first + 1];
    if (o->p.output == PARAMS_OUTPUT_JSON)
        return edged_fail(err, EDGED_E_USAGE, "use --json for the timing metadata");
    if (o->json && strcmp(o->out_path, "-") == 0)
        return edged_fail(err, EDGED_E_USAGE, "--json and OUTPUT - would both write standard output");
    if ((rc = check_output_name(o->out_path, err)) < 0)
        return rc;
    return params_validate(&o->p, err);
}

/* Reads all of f (at most CLI_MAX_FILE_BYTES) into a malloc'd buffer (caller frees); name is
 * for messages. Works on pipes as on files. */
static int read_all(FILE *f, const char *name, uint8_t **out, size_t *len, char *err)
{
    uint8_t *buf = NULL, *bigger;
    size_t cap = 0, n = 0, got;

    *out = NULL;
    do {
        if (n == cap) {
            if (cap >= CLI_MAX_FILE_BYTES) {
                free(buf);
                return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "%s is over the %zu byte limit", name,
                                  CLI_MAX_FILE_BYTES);
            }
            cap += CLI_READ_CHUNK;
            if (!(bigger = realloc(buf, cap))) {
                free(buf);
                return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for %s", cap, name);
            }
            buf = bigger;
        }
        n += got = fread(buf + n, 1, cap - n, f);
    } while (got > 0);
    if (ferror(f)) {
        free(buf);
        return edged_fail(err, EDGED_E_IO, "cannot read %s: %s", name, strerror(errno));
    }
    *out = buf;
    *len = n;
    return 0;
}

/* The input file, or standard input for "-". */
static int read_input(const char *path, uint8_t **out, size_t *len, char *err)
{
    FILE *f;
    int rc;

    if (strcmp(path, "-") == 0)
        return read_all(stdin, "standard input", out, len, err);
    if (!(f = fopen(path, "rb")))
        return edged_fail(err, EDGED_E_IO, "cannot open %s: %s", path, strerror(errno));
    rc = read_all(f, path, out, len, err);
    fclose(f);
    return rc;
}

/* The output file, or standard output for "-". */
static int write_output(const char *path, const uint8_t *data, size_t len, char *err)
{
    int to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "wb");
    size_t n;

    if (!f)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot create %s: %s", path, strerror(errno));
    n = fwrite(data, 1, len, f);
    if ((to_stdout ? fflush(f) : fclose(f)) != 0 || n != len)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot write %s: %s", to_stdout ? "standard output" : path,
                          strerror(errno));
    return 0;
}

struct cli_times {
    double decode, filter, encode, total;
};

static void print_json(const struct cli_opts *o, const struct job *job, const struct backend *b,
                       const struct cli_times *t, size_t out_bytes)
{
    cJSON *root = cJSON_CreateObject(), *ms = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(root, "filter", filter_name(o->p.spec.filter));
    cJSON_AddStringToObject(root, "variant", variant_name(job->used));
    cJSON_AddStringToObject(root, "backend", variant_is_gpu(job->used) ? "gpu" : "cpu");
    cJSON_AddStringToObject(root, "device", backend_device(b));
    cJSON_AddNumberToObject(root, "width", job->in.w);
    cJSON_AddNumberToObject(root, "height", job->in.h);
    cJSON_AddNumberToObject(root, "channels", job->in.ch);
    cJSON_AddNumberToObject(root, "out_channels", job->out.ch);
    cJSON_AddNumberToObject(root, "output_bytes", (double)out_bytes);
    /* the service's stages through the service's writer (microseconds), plus the whole filter step */
    struct result_times rt = {.decode = t->decode, .upload = job->t.upload, .kernel = job->t.kernel,
                              .download = job->t.download, .encode = t->encode, .total = t->total};

    result_times_json(ms, &rt, RESULT_TIMES_API);
    cJSON_AddNumberToObject(ms, "filter", result_round_ms(t->filter));
    cJSON_AddItemToObject(root, "timings_ms", ms);
    if ((text = cJSON_PrintUnformatted(root))) {
        puts(text);
        cJSON_free(text);
    }
    cJSON_Delete(root);
}

/* The backend the variant needs: auto may take either, a GPU variant needs the GPU. */
static enum backend_kind backend_for(enum variant v)
{
    return v == VARIANT_AUTO ? BACKEND_AUTO : variant_is_gpu(v) ? BACKEND_GPU : BACKEND_CPU;
}

/* Decodes the input into job and sets the plan, variant and block of the request. */
static int job_from_input(const struct cli_opts *o, const uint8_t *file, size_t len, struct job *job, char *err)
{
    struct png_limits lim;
    int rc;

    pngio_default_limits(&lim);
    if ((rc = pngio_decode(file, len, &lim, &job->in, err)) < 0)
        return rc;
    job->variant = o->p.variant;
    job->block = o->p.block;
    return params_plan(&o->p, job->in.ch, &job->plan, err);
}

/* read -> decode -> job, routed and run by backend.c as the workers run it -> encode -> write. */
static int filter_run(const struct cli_opts *o, char *err)
{
    struct backend *b = NULL;
    struct job *job = NULL;
    struct cli_times t = {0};
    uint8_t *file = NULL, *png = NULL;
    size_t file_len = 0, png_len = 0;
    double t0 = clock_ms(), t1;
    int rc;

    if ((rc = read_input(o->in_path, &file, &file_len, err)) < 0)
        goto out;
    if (!(job = job_new())) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the job");
        goto out;
    }
    t1 = clock_ms();
    if ((rc = job_from_input(o, file, file_len, job, err)) < 0)
        goto out;
    t.decode = clock_ms() - t1;
    if ((rc = backend_open(&b, backend_for(o->p.variant), 1, 0, err)) < 0 || (rc = backend_route(b, job, err)) < 0)
        goto out;
    t1 = clock_ms();
    if ((rc = backend_run(b, job)) < 0) {
        snprintf(err, EDGED_ERR_LEN, "%s", job->err);
        goto out;
    }
    t.filter = clock_ms() - t1;
    t1 = clock_ms();
    if ((rc = pngio_encode(&job->out, o->p.png_level, o->p.bit_depth, &png, &png_len, err)) < 0 ||
        (rc = write_output(o->out_path, png, png_len, err)) < 0)
        goto out;
    t.encode = clock_ms() - t1;
    t.total = clock_ms() - t0;
    if (o->json)
        print_json(o, job, b, &t, png_len);
out:
    free(png);
    job_release(NULL, job);
    backend_close(b);
    free(file);
    return rc;
}

int filter_main(int argc, char **argv)
{
    static struct cli_opts opts; /* holds up to 63x63 custom taps: kept off the stack */
    char err[EDGED_ERR_LEN] = "";
    int rc = parse_args(argc, argv, &opts, err);

    if (rc == OPTS_HELP) {
        filter_usage(stdout);
        return EXIT_OK;
    }
    if (rc == 0)
        rc = filter_run(&opts, err);
    if (rc < 0) {
        fprintf(stderr, "edged filter: %s: %s\n", edged_err_name(rc), err);
        if (rc == EDGED_E_USAGE)
            filter_usage(stderr);
        return exit_status_for(rc);
    }
    return EXIT_OK;
}
