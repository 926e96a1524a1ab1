/* cmd_filter.c — `edged filter`: the command line (options, the INPUT OUTPUT pairs or --out-dir
 * names, checked before any work starts); batch.c runs the images through the service's path
 * (decode, plan, a job the workers dispatch through backend.c, encode). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/batch.h"
#include "cli/commands.h"
#include "errors.h"
#include "ops/opts.h"
#include "params.h"

/* Largest --threads. */
#define FILTER_MAX_THREADS 1024

struct cli_opts {
    struct params p; /* the same request parameters the HTTP service takes */
    int json, progress, threads, keep_ext;
    const char *out_dir;
    struct batch_item *items; /* malloc'd; with --out-dir the output names are malloc'd too */
    int n;
};

/* The rows from FILTER_OPT_NORMALIZE on are request parameters of the same name ('-' -> '_'),
 * parsed and checked by api/params.c exactly as the HTTP service does; a switch (no value) sets
 * its parameter to true. */
enum {
    FILTER_OPT_JSON,
    FILTER_OPT_OUT_DIR,
    FILTER_OPT_KEEP_EXT,
    FILTER_OPT_THREADS,
    FILTER_OPT_PROGRESS,
    FILTER_OPT_NORMALIZE
};
static const struct opts_spec filter_opts[] = {
    {"json", NULL, "print timing metadata as JSON on stdout, a line per image (not with OUTPUT -)"},
    {"out-dir", "DIR", "every path is an INPUT; each output is DIR/ the input's name as .png (.jpg with\n"
                       "--format jpeg, .webp with --format webp); DIR is made if missing"},
    {"keep-ext", NULL, "with --out-dir: the output name keeps the input's extension before its own\n"
                       "(a.jpg and a.webp give a.jpg.png and a.webp.png, not one a.png)"},
    {"threads", "N", "threads that read, decode, encode and write (default: online cores)"},
    {"progress", NULL, "'N/M images, X img/s, ETA' on stderr (default: for several images on a terminal)"},
    {"normalize", NULL, "custom: divide the taps by their sum"},
    {"l2gradient", NULL, "canny: the Euclidean gradient norm (default |gx|+|gy|)"},
    {"filter", "NAME", "edge (default), gaussian5, gaussian, laplacian3, laplacian8, sobel_x,\n"
                       "sobel_y, sobel, scharr_x, scharr_y, scharr, prewitt_x, prewitt_y, prewitt,\n"
                       "sharpen, emboss, box, custom, canny, threshold (edged filters lists them)"},
    {"threshold", "T", "edge: |L| > T is an edge (default 5)"},
    {"border", "B", "reflect (default, reflect-101), replicate, zero"},
    {"color", "C", "auto (default), gray, rgb"},
    {"post", "P", "clamp, abs, offset (default: the filter's)"},
    {"size", "N", "gaussian, box, canny: odd kernel side 3..63 (canny: of its gaussian pre-blur)"},
    {"sigma", "S", "gaussian, canny: sigma (default: from the size, as OpenCV; canny: of its pre-blur)"},
    {"low", "T", "canny: the low threshold (default 50)"},
    {"high", "T", "canny: the high threshold (default 150)"},
    {"aperture", "N", "canny: Sobel aperture 3 (default), 5 or 7"},
    {"value", "V", "threshold: 255 where the value >= V, else 0 (default 128)"},
    {"ops", "JSON", "a pipeline instead of --filter: a JSON array of 1..8 steps, each the fields one\n"
                    "filter takes, run in float and rounded once, e.g. '[{\"filter\":\"gaussian\",\"size\":7},\n"
                    "{\"filter\":\"sobel\"},{\"filter\":\"threshold\",\"value\":40}]' (docs/api.md#pipelines)"},
    {"taps", "ROWS", "custom: rows separated by ';', numbers by ',', e.g. '1,2,1;2,4,2;1,2,1'\n"
                     "(or JSON rows '[[1,2,1],[2,4,2],[1,2,1]]')"},
    {"variant", "NAME", "auto (default), cpu_serial, cpu or a GPU variant (edged variants)"},
    {"block", "N", "GPU block side 8, 16 (default), 24, 32"},
    {"device", "N", "the CUDA device number the GPU work runs on (default 0; edged variants lists\n"
                    "them); given, the GPU is required (not with a CPU variant)"},
    {"png-level", "L", "zlib level of the output 0..9 (default 1)"},
    {"bit-depth", "D", "edge, canny, threshold: 8 (default) or 1 (1-bit PNG; single-channel results only)"},
    {"format", "F", "png, jpeg (or jpg) or webp: the output format (default: from the OUTPUT name;\n"
                    ".jpg/.jpeg is JPEG, .webp WebP, anything else PNG)"},
    {"quality", "Q", "JPEG or lossy WebP output quality 1..100 (default 90 for JPEG; WebP without it\n"
                     "is lossless); not for PNG"},
    {"orientation", "O", "exif (default, apply a JPEG/WebP input's EXIF orientation) or ignore (the pixels\n"
                         "as stored)"},
};
#define FILTER_NOPTS ((int)(sizeof(filter_opts) / sizeof(filter_opts[0])))

/* Extensions of the formats edged writes, the format's own first: such an OUTPUT name is written
 * in that format. Any other name (none, -) is written as PNG. */
static const struct {
    const char *ext;
    enum params_format f;
} written_exts[] = {{"png", PARAMS_FORMAT_PNG},  {"jpg", PARAMS_FORMAT_JPEG}, {"jpeg", PARAMS_FORMAT_JPEG},
                    {"jpe", PARAMS_FORMAT_JPEG}, {"jfif", PARAMS_FORMAT_JPEG}, {"webp", PARAMS_FORMAT_WEBP}};
#define NWRITTEN (sizeof(written_exts) / sizeof(written_exts[0]))

/* Extensions of image formats edged does not write: such an OUTPUT name is refused rather than
 * given bytes of another format. */
static const char *const foreign_exts[] = {"gif", "bmp", "tif", "tiff", "avif", "heic", "heif", "jxl", "jp2",
                                           "ppm", "pgm", "pbm", "pnm", "tga", "ico", "qoi", "exr", "hdr",
                                           "svg", "pdf"};

static void filter_usage(FILE *f)
{
    fputs("usage: edged filter INPUT OUTPUT [INPUT OUTPUT]... [options]\n"
          "       edged filter --out-dir DIR INPUT... [options]\n"
          "  INPUT is a PNG, JPEG or WebP (told from its bytes). INPUT - reads standard input and\n"
          "  OUTPUT - writes standard output (one pair only). The output format is that of --format,\n"
          "  else of the OUTPUT name: .jpg/.jpeg JPEG, .webp WebP, anything else PNG; a name with\n"
          "  another image format's extension (.gif, .tif, ...) is refused. Images are filtered in one\n"
          "  process; a bad one is reported and the others go on.\n",
          f);
    opts_print(f, filter_opts, FILTER_NOPTS);
    fputs("exit status: 0 ok, 2 usage error, 3 bad input, 1 other failure (several images: the worst)\n", f);
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

static int set_threads(struct cli_opts *o, const char *val, char *err)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < 1 || v > FILTER_MAX_THREADS)
        return edged_fail(err, EDGED_E_USAGE, "--threads: '%s' is not an integer in 1..%d", val, FILTER_MAX_THREADS);
    o->threads = (int)v;
    return 0;
}

static int filter_opt(void *app, int i, const char *val, char *err)
{
    static char taps[PARAMS_MAX_JSON];
    struct cli_opts *o = app;
    char key[32];
    size_t n;
    int rc;

    switch (i) {
    case FILTER_OPT_JSON:
        return o->json = 1, 0;
    case FILTER_OPT_OUT_DIR:
        return o->out_dir = val, 0;
    case FILTER_OPT_KEEP_EXT:
        return o->keep_ext = 1, 0;
    case FILTER_OPT_THREADS:
        return set_threads(o, val, err);
    case FILTER_OPT_PROGRESS:
        return o->progress = 1, 0;
    }
    for (n = 0; filter_opts[i].name[n] && n + 1 < sizeof(key); n++)
        key[n] = filter_opts[i].name[n] == '-' ? '_' : filter_opts[i].name[n];
    key[n] = '\0';
    if (!filter_opts[i].arg)
        val = "true";
    if (strcmp(key, "taps") == 0) {
        if ((rc = taps_to_json(val, taps, sizeof(taps), err)) < 0)
            return rc;
        val = taps;
    }
    params_source_begin(&o->p); /* as with any command-line option, the last one given wins */
    return params_set_text(&o->p, key, val, err);
}

/* The dot of path's extension when it is one of exts (n names), else NULL. */
static const char *ext_in(const char *path, const char *const *exts, size_t n)
{
    const char *base = strrchr(path, '/'), *dot;

    base = base ? base + 1 : path;
    if (!(dot = strrchr(base, '.')) || dot == base)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(dot + 1, exts[i]) == 0)
            return dot;
    return NULL;
}

#define NEXTS(a) (sizeof(a) / sizeof(a[0]))

/* The dot of path's extension when it is that of an image format edged does not write, else NULL. */
static const char *foreign_ext(const char *path) { return ext_in(path, foreign_exts, NEXTS(foreign_exts)); }

/* The format path's extension names (*dot at it), or AUTO (*dot NULL) for none edged writes. */
static enum params_format ext_format(const char *path, const char **dot)
{
    for (size_t i = 0; i < NWRITTEN; i++)
        if ((*dot = ext_in(path, &written_exts[i].ext, 1)))
            return written_exts[i].f;
    return PARAMS_FORMAT_AUTO;
}

/* The extension edged gives format f's files: the first of written_exts. */
static const char *format_ext(enum params_format f)
{
    for (size_t i = 0; i < NWRITTEN; i++)
        if (written_exts[i].f == f)
            return written_exts[i].ext;
    return "png";
}

/* Decides it->format: --format, else the OUTPUT name. EDGED_E_USAGE when the name is that of a
 * format edged does not write, or names another than --format; EDGED_E_PARAM for a quality with
 * a PNG output. */
static int choose_output(struct batch_item *it, const struct params *p, char *err)
{
    const char *dot;
    enum params_format named = ext_format(it->out, &dot);
    char by[EDGED_ERR_LEN / 2];
    int rc;

    if (foreign_ext(it->out))
        return edged_fail(err, EDGED_E_USAGE,
                          "cannot write '%s': edged writes PNG, JPEG and WebP (an OUTPUT name ending in .png, .jpg, "
                          ".jpeg or .webp or without extension, or - for standard output)",
                          it->out);
    if (p->format != PARAMS_FORMAT_AUTO && named != PARAMS_FORMAT_AUTO && named != p->format)
        return edged_fail(err, EDGED_E_USAGE, "OUTPUT '%s' names a %s file but --format is %s", it->out, dot + 1,
                          params_format_name(p->format));
    snprintf(by, sizeof(by), "the OUTPUT name '%.80s' is not .jpg or .webp", it->out);
    if ((rc = params_output_format(p, named == PARAMS_FORMAT_AUTO ? PARAMS_FORMAT_PNG : named, by, err)) < 0)
        return rc;
    it->format = (enum params_format)rc;
    return 0;
}

/* ---- the images: INPUT OUTPUT pairs, or --out-dir ------------------------------------------- */

/* DIR/NAME for the input's last component NAME, an image format's extension turned into the
 * output's (x.jpg -> DIR/x.png; with --format jpeg x.png -> DIR/x.jpg, --format webp DIR/x.webp),
 * into *out (malloc'd). A name with the output's extension already (x.PNG, x.jpeg for JPEG) is
 * kept as it is, and so is one without an image extension for PNG. With keep_ext the extension
 * stays and the output's follows it (x.jpg -> DIR/x.jpg.png). EDGED_E_USAGE when the input names
 * no file. */
static int out_dir_name(const char *dir, const char *in, enum params_format f, int keep_ext, char **out, char *err)
{
    const char *base = strrchr(in, '/'), *ext;
    size_t dl = strlen(dir), keep, cap;
    enum params_format named;
    int add;

    base = base ? base + 1 : in;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(in, "-") == 0)
        return edged_fail(err, EDGED_E_USAGE, "--out-dir: INPUT '%s' names no file to name the output after", in);
    if ((named = ext_format(base, &ext)) == f)
        ext = NULL; /* x.png, x.JPG, x.jpeg: the output's extension already, kept */
    else if (!ext)
        ext = foreign_ext(base);
    if (keep_ext && ext)
        ext = base + strlen(base); /* x.webp -> x.webp.png: the output's extension after the input's */
    add = ext || (named != f && f != PARAMS_FORMAT_PNG);
    keep = ext ? (size_t)(ext - base) : strlen(base);
    cap = dl + keep + strlen(format_ext(f)) + 3;
    if (!(*out = malloc(cap)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate an output name");
    snprintf(*out, cap, "%s%s%.*s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", (int)keep, base, add ? "." : "",
             add ? format_ext(f) : "");
    return 0;
}

/* Fills o->items from the n paths. */
static int build_items(struct cli_opts *o, char **paths, int n, char *err)
{
    int rc = 0;

    if (o->out_dir && n < 1)
        return edged_fail(err, EDGED_E_USAGE, "--out-dir needs at least one INPUT");
    if (!o->out_dir && n < 2)
        return edged_fail(err, EDGED_E_USAGE, "need INPUT and OUTPUT (got %d paths)", n);
    if (!o->out_dir && n % 2)
        return edged_fail(err, EDGED_E_USAGE, "need INPUT OUTPUT pairs, or --out-dir DIR (got %d paths)", n);
    o->n = o->out_dir ? n : n / 2;
    if (!(o->items = calloc((size_t)o->n, sizeof(*o->items))))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %d images", o->n);
    for (int i = 0; i < o->n && rc == 0; i++) {
        char *name = NULL;
        o->items[i].in = o->out_dir ? paths[i] : paths[2 * i];
        if (o->out_dir)
            rc = out_dir_name(o->out_dir, paths[i],
                              o->p.format == PARAMS_FORMAT_AUTO ? PARAMS_FORMAT_PNG : o->p.format, o->keep_ext,
                              &name, err);
        o->items[i].out = o->out_dir ? name : paths[2 * i + 1];
    }
    return rc;
}

static void free_items(struct cli_opts *o)
{
    for (int i = 0; o->out_dir && o->items && i < o->n; i++)
        free((char *)o->items[i].out); /* made by out_dir_name */
    free(o->items);
    o->items = NULL;
}

/* What names a file for the clash checks, malloc'd (NULL when out of memory): "@dev:ino" for an
 * existing file, so that links and other spellings meet; else the real path of its directory
 * and its last component. */
static char *file_key(const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    char dir[PATH_MAX], real[PATH_MAX], *key;
    struct stat st;
    size_t cap;

    if (stat(path, &st) == 0) {
        cap = 48;
        if ((key = malloc(cap)))
            snprintf(key, cap, "@%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        return key;
    }
    snprintf(dir, sizeof(dir), "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1, slash ? path : ".");
    if (!realpath(dir, real))
        snprintf(real, sizeof(real), "%s", dir);
    cap = strlen(real) + strlen(base) + 2;
    if ((key = malloc(cap)))
        snprintf(key, cap, "%s/%s", real, base);
    return key;
}

struct name_key {
    char *key;
    int idx, is_out;
};

/* By key, inputs before outputs. */
static int cmp_key(const void *a, const void *b)
{
    const struct name_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c ? c : x->is_out != y->is_out ? x->is_out - y->is_out : x->idx - y->idx;
}

/* Two neighbours of the sorted keys: an output that meets another output or an input. */
static int clash(const struct batch_item *items, const struct name_key *a, const struct name_key *b, char *err)
{
    if (!b->is_out || strcmp(a->key, b->key) != 0)
        return 0;
    if (a->is_out)
        return edged_fail(err, EDGED_E_USAGE, "'%s' and '%s' would both be written to '%s'; --keep-ext keeps "
                          "them apart", items[a->idx].in, items[b->idx].in, items[b->idx].out);
    if (a->idx == b->idx)
        return edged_fail(err, EDGED_E_USAGE, "the output '%s' is its input '%s'", items[b->idx].out,
                          items[a->idx].in);
    return edged_fail(err, EDGED_E_USAGE, "the output '%s' of '%s' is the input '%s'", items[b->idx].out,
                      items[b->idx].in, items[a->idx].in);
}

/* Refuses two images writing one file, and an output that is an input (its own, or another's,
 * which could be replaced while it is read). */
static int check_clashes(const struct batch_item *items, int n, char *err)
{
    struct name_key *k = calloc(2 * (size_t)n, sizeof(*k));
    int m = 0, rc = 0;

    if (!k)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the name checks");
    for (int i = 0; i < n && rc == 0; i++) {
        k[m++] = (struct name_key){file_key(items[i].in), i, 0};
        k[m++] = (struct name_key){file_key(items[i].out), i, 1};
        if (!k[m - 2].key || !k[m - 1].key)
            rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the name checks");
    }
    if (rc == 0)
        qsort(k, (size_t)m, sizeof(*k), cmp_key);
    for (int i = 0; rc == 0 && i + 1 < m; i++)
        rc = clash(items, &k[i], &k[i + 1], err);
    for (int i = 0; i < m; i++)
        free(k[i].key);
    free(k);
    return rc;
}

/* Makes DIR when it is missing (its parent must exist); refuses a path that is not a directory. */
static int prepare_out_dir(const char *dir, char *err)
{
    struct stat st;

    if (mkdir(dir, 0777) == 0 || (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)))
        return 0;
    return edged_fail(err, EDGED_E_USAGE, "--out-dir %s: %s", dir, errno == EEXIST ? "not a directory" : strerror(errno));
}

/* Returns 0, OPTS_HELP, or a negative code with the message in err; every check of the command
 * line is made here, before any image is read. */
static int parse_args(int argc, char **argv, struct cli_opts *o, char *err)
{
    int first, rc, several;

    params_init(&o->p, PARAMS_FILTER);
    if ((rc = opts_parse(argc, argv, filter_opts, FILTER_NOPTS, filter_opt, o, &first, err)) != 0 ||
        (rc = build_items(o, argv + first, argc - first, err)) < 0)
        return rc;
    several = o->n > 1 || o->out_dir;
    if (o->keep_ext && !o->out_dir)
        return edged_fail(err, EDGED_E_USAGE, "--keep-ext names the outputs of --out-dir; with INPUT OUTPUT pairs "
                          "the names are yours");
    if (o->p.output == PARAMS_OUTPUT_JSON)
        return edged_fail(err, EDGED_E_USAGE, "use --json for the timing metadata");
    for (int i = 0; i < o->n; i++) {
        struct batch_item *it = &o->items[i];
        if (several && (strcmp(it->in, "-") == 0 || strcmp(it->out, "-") == 0))
            return edged_fail(err, EDGED_E_USAGE, "- (standard input or output) takes a single INPUT OUTPUT pair");
        if (o->json && strcmp(it->out, "-") == 0)
            return edged_fail(err, EDGED_E_USAGE, "--json and OUTPUT - would both write standard output");
        if ((rc = choose_output(it, &o->p, err)) < 0)
            return rc;
    }
    if ((rc = params_validate(&o->p, err)) < 0 || (several && (rc = check_clashes(o->items, o->n, err)) < 0))
        return rc;
    return o->out_dir ? prepare_out_dir(o->out_dir, err) : 0;
}

int filter_main(int argc, char **argv)
{
    static struct cli_opts opts; /* holds up to 63x63 custom taps: kept off the stack */
    char err[EDGED_ERR_LEN] = "";
    int rc = parse_args(argc, argv, &opts, err), status = EXIT_OK;

    if (rc == OPTS_HELP) {
        filter_usage(stdout);
    } else if (rc < 0) {
        fprintf(stderr, "edged filter: %s: %s%s\n", edged_err_name(rc), err,
                rc == EDGED_E_USAGE ? " (edged filter --help lists the options)" : "");
        status = exit_status_for(rc);
    } else {
        struct batch_config bc = {.p = &opts.p, .threads = opts.threads, .json = opts.json,
                                  .progress = opts.progress, .several = opts.n > 1 || opts.out_dir};
        status = batch_run(opts.items, opts.n, &bc);
    }
    free_items(&opts);
    return status;
}
