/* cmd_bench.c — `edged bench`: times the convolution variants (GPU, NPP, CPU) over image, kernel
 * and block sizes; bench_report.c prints the rows. Without a GPU it times the CPU rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench_codec.h"
#include "cli/bench_opts.h"
#include "cli/bench_report.h"
#include "clock.h"
#include "cli/commands.h"
#include "codec/image_io.h"
#include "cpu.h"
#include "cpu_serial.h"
#include "errors.h"
#include "filter.h"
#include "gconv.h"
#include "ops/file_io.h"
#include "ops/opts.h"
#include "params.h"
#include "cli/progress.h"
#include "variant.h"

#define BENCH_STREAMS 1
#define BENCH_FP32_BYTES_PX 8.0 /* fp32 in + out: the memory floor of a correlation */
#define BENCH_MAX_FILE ((size_t)1 << 30) /* --input */

struct bench_env {
    struct gconv_ctx *ctx; /* NULL without a GPU: CPU rows only */
    struct bench_report rep;
    int step, steps; /* progress: (size, kernel) steps done and in all */
    struct progress line; /* on a terminal one line, rewritten */
    struct img photo;     /* --input as decoded; px NULL without one */
    char photo_name[128]; /* its file name, for the notes */
    struct img at;        /* photo at the size and channels last asked for (bench_input) */
};

/* The bench kernel: the filter bank's taps, or random full-rank taps for custom. */
static int bench_kernel(const struct bench_opts *o, int size, struct kernel2d *k, char *err)
{
    struct filter_spec spec;

    filter_spec_init(&spec, o->filter);
    if (o->filter != FILTER_CUSTOM) {
        spec.size = size;
        return filter_kernel(&spec, k, err);
    }
    spec.custom_rows = spec.custom_cols = size;
    srand(12345 + size);
    for (int i = 0; i < size * size; i++)
        spec.custom_taps[i] = (float)rand() / RAND_MAX - 0.5f;
    return filter_kernel(&spec, k, err);
}

/* ---- the --input image ----------------------------------------------------------------------- */

/* Reads and decodes path into env->photo as the service would (EXIF orientation applied), with
 * only the absolute size limits. 0 or an EDGED_E_* code with the message in err. */
static int bench_load_input(struct bench_env *env, const char *path, char *err)
{
    const struct png_limits lim = {IMG_MAX_SIDE, IMG_MAX_PIXELS, (size_t)8 << 20};
    const char *slash = strrchr(path, '/');
    uint8_t *data = NULL;
    size_t len = 0;
    int rc;

    if ((rc = fileio_read(path, BENCH_MAX_FILE, &data, &len, err)) == 0)
        rc = imageio_load(data, len, &lim, 1, &env->photo, err);
    free(data);
    snprintf(env->photo_name, sizeof(env->photo_name), "%s", slash ? slash + 1 : path);
    return rc;
}

/* One pixel of an image of sch channels as ch channels: 1 the service's gray (the sample, or
 * pixel_clamp_u8 of pixel_luma, as Canny's gray on the CPU and the GPU), 3 RGB (a gray sample in
 * all three); alpha is dropped. */
static void bench_pixel(const uint8_t *s, int sch, uint8_t *d, int ch)
{
    if (sch < 3)
        memset(d, s[0], (size_t)ch);
    else if (ch == 1)
        d[0] = pixel_clamp_u8(pixel_luma(s[0], s[1], s[2]));
    else
        memcpy(d, s, 3);
}

/* The --input image as an n x n image of ch channels (1 or 3), rows n * ch apart, into *px (NULL
 * without --input: the rows use the built-in image): cropped, or mirror-tiled (reflect-101, so the
 * seams add no edges) where the photo is smaller. Made once per (n, ch). 0 or EDGED_E_NOMEM. */
static int bench_input(struct bench_env *env, int n, int ch, const uint8_t **px, char *err)
{
    const struct img *src = &env->photo;
    int rc;

    *px = NULL;
    if (!src->px)
        return 0;
    if (!env->at.px || env->at.w != n || env->at.ch != ch) {
        img_free(&env->at);
        if ((rc = img_alloc(&env->at, n, n, ch, err)) < 0)
            return rc;
        for (int y = 0; y < n; y++) {
            const uint8_t *row = src->px + (size_t)border_index(y, src->h, BORDER_REFLECT) * src->stride;
            uint8_t *d = env->at.px + (size_t)y * env->at.stride;
            for (int x = 0; x < n; x++)
                bench_pixel(row + (size_t)border_index(x, src->w, BORDER_REFLECT) * src->ch, src->ch,
                            d + (size_t)x * ch, ch);
        }
    }
    *px = env->at.px;
    return 0;
}

/* What a row timed: "photo FILE" (--input), else the built-in image's name. */
static const char *bench_input_name(const struct bench_env *env, const char *builtin, char *buf, size_t len)
{
    if (!env->photo.px)
        return builtin;
    snprintf(buf, len, "photo %s", env->photo_name);
    return buf;
}

/* ---- progress (stderr) --------------------------------------------------------------------- */

/* Says which (size, kernel) step starts. On a terminal one line is rewritten in place; with
 * --progress elsewhere each step is a line. Never touches stdout, where the rows go. */
static void progress(struct bench_env *env, const struct bench_opts *o, int n, const char *what)
{
    if (!env->line.tty && !o->progress)
        return;
    env->step++;
    progress_show(&env->line, 0, "bench: step %d/%d: %dx%d %s", env->step, env->steps, n, n, what);
}

/* ---- measurements ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* cpu (median of 3 after one warm-up) and, up to serial_max, cpu_serial (once) on host planes. */
static void bench_cpu_rows(struct bench_env *env, const struct bench_opts *o, int n, const struct kernel2d *k)
{
    size_t px = (size_t)n * n;
    float *in = malloc(px * sizeof(float)), *out = malloc(px * sizeof(float));
    struct bench_row r = {"cpu_serial", 0, n, n, k->rows, -1.0, border_name(o->border), "",
                          o->channels, o->channels, BENCH_FP32_BYTES_PX, 2.0 * k->rows * k->cols};
    double t[3], t0;

    env->rep.serial_ms = env->rep.cpu_ms = -1.0;
    if (!in || !out) {
        fprintf(stderr, "edged bench: no memory for %dx%d CPU planes\n", n, n);
        goto out;
    }
    for (size_t i = 0; i < px; i++)
        in[i] = (float)(i * 2654435761u % 255u);
    if (n <= o->serial_max) {
        t0 = clock_ms();
        cpu_serial_conv(in, out, n, n, (size_t)n, k, o->border);
        r.ms = (clock_ms() - t0) * o->channels;
        bench_report_row(&env->rep, &r);
        env->rep.serial_ms = r.ms;
    }
    r.impl = "cpu";
    r.ms = -1.0;
    for (int i = -1; i < 3; i++) {
        t0 = clock_ms();
        if (cpu_conv(in, out, n, n, (size_t)n, k, o->border, 0, r.note) < 0)
            break;
        if (i >= 0)
            t[i] = clock_ms() - t0;
        if (i == 2) {
            qsort(t, 3, sizeof(double), cmp_double);
            r.ms = t[1] * o->channels;
        }
    }
    bench_report_row(&env->rep, &r);
    env->rep.cpu_ms = r.ms;
out:
    free(in);
    free(out);
}

/* Returns -1 when the context died (nothing further can run), else 0. */
static int bench_gpu_row(struct bench_env *env, const struct bench_opts *o, int n, const struct kernel2d *k,
                         enum variant v, int block)
{
    struct bench_row r = {variant_name(v), block, n, n, k->rows, -1.0, border_name(o->border), "",
                          o->channels, o->channels, BENCH_FP32_BYTES_PX, 2.0 * k->rows * k->cols};
    double ms = -1.0;
    int rc = gconv_bench_conv(env->ctx, n, n, k, o->border, v, block, o->warmup, o->reps, &ms, r.note);

    if (rc == 0)
        r.ms = ms * o->channels;
    bench_report_row(&env->rep, &r);
    return rc == EDGED_E_GPU_FATAL ? -1 : 0;
}

static void bench_npp_row(struct bench_env *env, const struct bench_opts *o, int n, const struct kernel2d *k)
{
    struct bench_row r = {"npp", 0, n, n, k->rows, -1.0, "replicate", "", o->channels, o->channels,
                          BENCH_FP32_BYTES_PX, 2.0 * k->rows * k->cols};
    double ms = -1.0;

    if (gconv_bench_npp(env->ctx, n, n, k, o->warmup, o->reps, &ms, r.note) == 0) {
        r.ms = ms * o->channels;
        snprintf(r.note, sizeof(r.note), "nppiFilterBorder_32f_C1R; replicate border");
    }
    bench_report_row(&env->rep, &r);
}

/* One u8 edge row: variant v on an n x n image of ch channels (h_in, NULL: random bytes), the map as
 * bytes or (packed) as 1-bit rows, which move ch + 1/8 bytes per pixel. Returns the gconv code. */
static int bench_edge_row(struct bench_env *env, const struct bench_opts *o, int n, int ch, const uint8_t *h_in,
                          enum variant v, int packed)
{
    struct bench_row r = {packed ? "fast_1bit" : variant_name(v), o->blocks[0], n, n, 5, -1.0, border_name(o->border),
                          "", ch, 1, ch + (packed ? 0.125 : 1.0), 0.0}; /* no flop model: see struct bench_row */
    char name[sizeof(env->photo_name) + 8];
    double ms = -1.0;
    int rc = gconv_bench_edge(env->ctx, n, n, ch, h_in, packed, o->border, v, o->blocks[0], o->warmup, o->reps,
                              &ms, r.note);

    if (rc == 0) {
        r.ms = ms;
        snprintf(r.note, sizeof(r.note), "u8 edge %s, %s map (%g B/px); %s", ch == 1 ? "gray" : "rgb",
                 packed ? "1-bit" : "u8", r.bytes_px, bench_input_name(env, "random bytes", name, sizeof(name)));
    }
    bench_report_row(&env->rep, &r);
    return rc;
}

/* The u8 edge pipeline of an n x n image with ch input channels (1 gray, 3 RGB): one row per GPU
 * variant, for fast also the map packed (bit_depth 1 responses; n a multiple of 8) and, with
 * --compare, NPP's gray pipeline. Returns -1 when the context died. */
static int bench_edge_rows(struct bench_env *env, const struct bench_opts *o, int n, int ch)
{
    char err[EDGED_ERR_LEN], name[sizeof(env->photo_name) + 8];
    const uint8_t *h_in;

    if (bench_input(env, n, ch, &h_in, err) < 0) { /* no rows of this size: said on stderr */
        fprintf(stderr, "edged bench: %dx%d: %s\n", n, n, err);
        return 0;
    }
    for (int vi = 0; vi < o->nv; vi++) {
        enum variant v = o->variants[vi];
        if (bench_edge_row(env, o, n, ch, h_in, v, 0) == EDGED_E_GPU_FATAL ||
            (v == VARIANT_FAST && n % 8 == 0 && bench_edge_row(env, o, n, ch, h_in, v, 1) == EDGED_E_GPU_FATAL))
            return -1;
    }
    if (o->compare && ch == 1) {
        struct bench_row r = {"npp", 0, n, n, 5, -1.0, "replicate", "", ch, 1, ch + 1.0, 0.0};
        double ms = -1.0;
        if (gconv_bench_edge_npp(env->ctx, n, n, h_in, o->warmup, o->reps, &ms, r.note) == 0) {
            r.ms = ms;
            snprintf(r.note, sizeof(r.note), "u8 edge gray, u8 map (2 B/px): nppiFilterGaussBorder 5x5 + "
                     "nppiFilterLaplaceBorder 3x3 u8; %s", bench_input_name(env, "random bytes", name, sizeof(name)));
        }
        bench_report_row(&env->rep, &r);
    }
    return 0;
}

/* Canny of an n x n u8 gray image (--input, else the synthetic one) with aperture ap (fast;
 * --compare: NPP), or the spiral: one row each, 2 bytes per pixel (1 in, 1 out). Returns -1 when
 * the context died. */
static int bench_canny_rows(struct bench_env *env, const struct bench_opts *o, int n, int ap)
{
    struct canny_params p = {FILTER_CANNY_LOW, FILTER_CANNY_HIGH, ap, o->l2gradient};
    struct bench_row r = {"fast", 0, n, n, ap, -1.0, "replicate", "", 1, 1, 2.0, 0.0};
    char name[sizeof(env->photo_name) + 8];
    const char *img = o->canny_spiral ? "spiral" : bench_input_name(env, "synthetic", name, sizeof(name));
    const char *norm = p.l2gradient ? "L2" : "L1";
    const uint8_t *h_gray;
    double ms = -1.0;
    int rc;

    if (bench_input(env, n, 1, &h_gray, r.note) < 0) { /* no rows of this size: said on stderr */
        fprintf(stderr, "edged bench: %dx%d: %s\n", n, n, r.note);
        return 0;
    }
    rc = o->canny_spiral ? gconv_bench_canny_spiral(env->ctx, n, n, o->warmup, o->reps, &ms, r.note)
                         : gconv_bench_canny(env->ctx, n, n, h_gray, &p, o->warmup, o->reps, &ms, r.note);
    if (rc == 0) {
        r.ms = ms;
        snprintf(r.note, sizeof(r.note), "canny %s, thresholds %g/%g, %s", img,
                 o->canny_spiral ? 100.0 : (double)p.low, o->canny_spiral ? 1000.0 : (double)p.high, norm);
    }
    bench_report_row(&env->rep, &r);
    if (rc == EDGED_E_GPU_FATAL)
        return -1;
    if (o->compare && !o->canny_spiral) {
        struct bench_row q = {"npp", 0, n, n, ap, -1.0, "replicate", "", 1, 1, 2.0, 0.0};
        if (gconv_bench_canny_npp(env->ctx, n, n, h_gray, &p, o->warmup, o->reps, &ms, q.note) == 0) {
            q.ms = ms;
            snprintf(q.note, sizeof(q.note), "canny %s: nppiFilterCannyBorder_8u_C1R, NPP_FILTER_SOBEL, %s", img,
                     norm);
        }
        bench_report_row(&env->rep, &q);
    }
    return 0;
}

/* The u8 RGB rows of --ops for an n x n image: per variant the pipeline, then each step alone.
 * Returns -1 when the context died. */
static int bench_ops_rows(struct bench_env *env, const struct bench_opts *o, const struct params *p, int n)
{
    struct filter_plan *plan = malloc(sizeof(*plan));
    char err[EDGED_ERR_LEN], name[sizeof(env->photo_name) + 8];
    const uint8_t *h_in;
    int rc = 0;

    if (!plan || bench_input(env, n, 3, &h_in, err) < 0) { /* no rows of this size: said on stderr */
        fprintf(stderr, "edged bench: %dx%d: %s\n", n, n, plan ? err : "out of memory");
        free(plan);
        return 0;
    }
    for (int vi = 0; vi < o->nv && rc != EDGED_E_GPU_FATAL; vi++)
        for (int i = -1; i < p->nops && rc != EDGED_E_GPU_FATAL; i++) {
            struct bench_row r = {variant_name(o->variants[vi]), o->blocks[0], n, n, 0, -1.0, "", "", 3, 0, 0.0, 0.0};
            double ms = -1.0;
            if ((rc = filter_pipeline_make(i < 0 ? p->ops : p->ops + i, i < 0 ? p->nops : 1, 3, plan, r.note)) == 0 &&
                (rc = gconv_bench_plan(env->ctx, n, n, h_in, plan, o->variants[vi], o->blocks[0], o->warmup, o->reps,
                                       &ms, r.note)) == 0) {
                r.ms = ms;
                if (i < 0)
                    snprintf(r.note, sizeof(r.note), "pipeline of %d steps, u8 rgb; %s", p->nops,
                             bench_input_name(env, "random bytes", name, sizeof(name)));
                else
                    snprintf(r.note, sizeof(r.note), "step %d alone: %s, u8 rgb", i, filter_name(p->ops[i].filter));
            }
            r.border = border_name(plan->border);
            r.planes = plan->planes;
            r.bytes_px = 3.0 + plan->out_ch;
            bench_report_row(&env->rep, &r);
        }
    free(plan);
    return rc == EDGED_E_GPU_FATAL ? -1 : 0;
}

/* --ops JSON as a request's `ops`, checked as the service checks it; *out is the caller's to free. */
static int bench_ops_params(const char *json, struct params **out, char *err)
{
    struct params *p = malloc(sizeof(*p));
    int rc;

    *out = NULL;
    if (!p)
        return edged_fail(err, EDGED_E_NOMEM, "--ops: out of memory");
    params_init(p, PARAMS_FILTER);
    if ((rc = params_set_text(p, "ops", json, err)) < 0 || (rc = params_validate(p, err)) < 0) {
        free(p);
        return edged_fail(err, EDGED_E_USAGE, "--ops: %s", err);
    }
    *out = p;
    return 0;
}

static int bench_all(struct bench_env *env, const struct bench_opts *o)
{
    struct kernel2d k;
    char err[EDGED_ERR_LEN], what[32];

    if (o->ops) {
        struct params *p;
        if (bench_ops_params(o->ops, &p, err) < 0) {
            fprintf(stderr, "edged bench: %s\n", err);
            return EXIT_USAGE;
        }
        for (int si = 0; env->ctx && si < o->ns; si++) {
            progress(env, o, o->sizes[si], "pipeline");
            if (bench_ops_rows(env, o, p, o->sizes[si]) < 0) {
                fprintf(stderr, "edged bench: the GPU failed; stopping\n");
                free(p);
                return EXIT_FAIL;
            }
        }
        free(p);
        return EXIT_OK;
    }
    if (o->u8_edge) {
        for (int si = 0; env->ctx && si < o->ns; si++)
            for (int ch = 1; ch <= 3; ch += 2) {
                progress(env, o, o->sizes[si], ch == 1 ? "u8 edge, gray" : "u8 edge, rgb");
                if (bench_edge_rows(env, o, o->sizes[si], ch) < 0) {
                    fprintf(stderr, "edged bench: the GPU failed; stopping\n");
                    return EXIT_FAIL;
                }
            }
        return EXIT_OK;
    }
    if (o->filter == FILTER_CANNY) {
        for (int si = 0; env->ctx && si < o->ns; si++)
            for (int ki = 0; ki < o->nk; ki++) {
                if (o->ks[ki] != 3 && o->ks[ki] != 5 && o->ks[ki] != 7)
                    continue;
                progress(env, o, o->sizes[si], "canny");
                if (bench_canny_rows(env, o, o->sizes[si], o->ks[ki]) < 0) {
                    fprintf(stderr, "edged bench: the GPU failed; stopping\n");
                    return EXIT_FAIL;
                }
            }
        return EXIT_OK;
    }
    for (int si = 0; si < o->ns; si++)
        for (int ki = 0; ki < o->nk; ki++) {
            int n = o->sizes[si];
            if (bench_kernel(o, o->ks[ki], &k, err) < 0) {
                fprintf(stderr, "edged bench: %s\n", err);
                return EXIT_USAGE;
            }
            snprintf(what, sizeof(what), "k=%d", o->ks[ki]);
            progress(env, o, n, what);
            env->rep.serial_ms = env->rep.cpu_ms = -1.0;
            if (o->cpu)
                bench_cpu_rows(env, o, n, &k);
            for (int vi = 0; env->ctx && vi < o->nv; vi++)
                for (int bi = 0; bi < o->nb; bi++)
                    if (bench_gpu_row(env, o, n, &k, o->variants[vi], o->blocks[bi]) < 0) {
                        fprintf(stderr, "edged bench: the GPU failed; stopping\n");
                        return EXIT_FAIL;
                    }
            if (env->ctx && o->compare)
                bench_npp_row(env, o, n, &k);
        }
    return EXIT_OK;
}

/* Opens the GPU --device names; without one the CPU rows are the bench, unless --device was given
 * (then the GPU is required) or the rows are GPU kernels only. */
static int open_gpu(struct bench_env *env, struct bench_opts *o, char *err)
{
    char why[EDGED_ERR_LEN];
    int rc;

    if ((rc = gconv_open(&env->ctx, o->device, BENCH_STREAMS, why)) == 0)
        return 0;
    env->ctx = NULL;
    if (o->device_given)
        return edged_fail(err, rc, "--device %d: %s", o->device, why);
    if (o->u8_edge || o->ops || o->filter == FILTER_CANNY)
        return edged_fail(err, rc, "--u8-edge, --ops and --filter canny time GPU kernels only, and there is no GPU "
                          "(%s)", why);
    fprintf(stderr, "edged bench: no GPU (%s); timing the CPU rows (cpu_serial, cpu)\n", why);
    o->cpu = 1;
    return 0;
}

/* --codec anywhere selects the codec bench (bench_codec.c), which has options of its own. */
static int wants_codec(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--codec") == 0)
            return 1;
    return 0;
}

int bench_main(int argc, char **argv)
{
    struct bench_opts o;
    struct bench_env env = {0};
    char err[EDGED_ERR_LEN] = "";
    int rc;

    if (wants_codec(argc, argv))
        return bench_codec_main(argc, argv);
    rc = bench_parse_args(argc, argv, &o, err);

    if (rc != 0)
        return opts_usage_exit(rc, "bench", err, bench_usage);
    if (o.input && (rc = bench_load_input(&env, o.input, err)) < 0) {
        fprintf(stderr, "edged bench: --input: %s\n", err);
        return exit_status_for(rc);
    }
    if ((rc = open_gpu(&env, &o, err)) < 0) {
        fprintf(stderr, "edged bench: %s\n", err);
        img_free(&env.photo);
        return exit_status_for(rc);
    }
    if (o.compare && !EDGED_NPP) {
        fprintf(stderr,
                "edged bench: --compare: NVIDIA NPP unavailable (this build has no NPP: libnppif was not "
                "found in CUDA_HOME at build time)\n");
        o.compare = 0;
    }
    env.rep = (struct bench_report){o.fmt, gconv_get_info(env.ctx), env.ctx ? o.device : -1, filter_name(o.filter),
                                    border_name(o.border), o.reps, o.warmup, o.channels, o.ops ? 2 : o.u8_edge,
                                    -1.0, -1.0, 0};
    env.steps = o.u8_edge ? o.ns * 2 : o.ns * o.nk;
    progress_init(&env.line);
    bench_report_begin(&env.rep);
    rc = bench_all(&env, &o);
    progress_end(&env.line);
    bench_report_end(&env.rep);
    gconv_close(env.ctx);
    img_free(&env.at);
    img_free(&env.photo);
    return rc;
}
