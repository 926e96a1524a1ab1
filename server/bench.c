/* bench.c — `edged bench`: times the convolution variants (GPU, NPP, CPU) over image, kernel and
 * block sizes and prints a table, CSV or JSON with throughput, roofline fractions and speedups. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "commands.h"
#include "cpu.h"
#include "cpu_serial.h"
#include "errors.h"
#include "filter.h"
#include "gconv.h"
#include "variant.h"

#define BENCH_MAX_LIST 32
#define BENCH_STREAMS 1
#define BENCH_FP32_BYTES_PX 8.0 /* fp32 in + out: the memory floor of a correlation */

enum bench_fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

struct bench_opts {
    int variants[VARIANT_COUNT], nv;
    int sizes[BENCH_MAX_LIST], ns;
    int ks[BENCH_MAX_LIST], nk;
    int blocks[4], nb;
    enum filter_id filter;
    enum border border;
    int reps, warmup, channels, serial_max, compare, cpu, u8_edge;
    enum bench_fmt fmt;
};

/* One measured implementation at one (size, kernel): what a printed row holds. ch (the channels
 * column), planes, bytes_px and flops_px are the traffic model of the row: fp32 rows run `planes`
 * = ch planes, each moving 8 bytes per pixel and doing 2*k*k flops; u8 edge rows run one pass over
 * an image of ch channels, moving ch + 1 bytes per pixel (ch + 1/8 with a 1-bit map), with no flop
 * count (flops_px 0: the GFLOP/s and % FP32 cells stay empty): the fused kernel does its gray sums
 * in integers and shares partial sums, so 2*(25+9) nominal flops per pixel would report more than
 * the FP32 peak. */
struct bench_row {
    const char *impl;
    int block; /* 0: not a GPU block size */
    int w, h, k;
    double ms; /* < 0: not measured, see note */
    const char *border;
    char note[EDGED_ERR_LEN];
    int ch, planes;
    double bytes_px, flops_px;
};

struct bench_env {
    struct gconv_ctx *ctx;
    const struct gconv_info *gi;
    double serial_ms, cpu_ms; /* of the current (size, kernel); < 0 when not timed */
    int rows;
};

static const char bench_usage[] =
    "usage: edged bench [--variants a,b] [--sizes 256,...,8192] [--ksizes 3,5,...] [--blocks 16,32]\n"
    "                   [--filter box|gaussian|custom] [--border zero|replicate|reflect] [--reps N]\n"
    "                   [--warmup N] [--csv|--json] [--compare] [--cpu] [--serial-max N] [--channels C]\n"
    "                   [--u8-edge]\n"
    "Times each GPU variant on N x N float planes (random data on the device, input/output pairs\n"
    "rotated past L2, CUDA events, median of --reps after --warmup) for every kernel size and block.\n"
    "  --variants   GPU variants (default all; `edged variants` lists them)\n"
    "  --sizes      image sides (default 256,512,1024,2048,4096,8192)\n"
    "  --ksizes     odd kernel sides (default 3,5,7,11,15,21,31; custom allows 1..63)\n"
    "  --blocks     block sides 8, 16, 24, 32 (default 16)\n"
    "  --filter     gaussian (default), box, or custom (random non-separable taps)\n"
    "  --compare    adds NVIDIA NPP nppiFilterBorder_32f_C1R (replicate border) when built with NPP\n"
    "  --cpu        adds cpu (threaded, median of 3) and cpu_serial (once, sides <= --serial-max,\n"
    "               default 2048) rows, and speedup columns against them\n"
    "  --channels   planes per image (default 1): times are per image, C planes of one launch each\n"
    "  --u8-edge    instead: the whole edge pipeline (gaussian5 -> laplacian3 -> threshold) on u8\n"
    "               images of each size, gray (1 byte in, 1 out) and RGB (3 in, 1 out), all kernels\n"
    "               of a job on the device; fast_1bit: fast writing the map as 1-bit rows (1/8 byte\n"
    "               out, as for bit_depth 1); --compare adds NPP's u8 Gauss 5x5 + Laplace 3x3 (gray)\n"
    "Columns: ms; GPix/s; GFLOP/s counting 2*rows*cols per pixel (the direct method, also for\n"
    "separable, so it can pass the FP32 peak); GB/s counting 8 bytes per pixel (fp32 in + out);\n"
    "%copy and %fp32: fractions of the measured copy bandwidth and of the FP32 peak; floor: the\n"
    "memory floor (bytes per pixel over the measured copy bandwidth; edge rows count their own\n"
    "bytes), x_floor = ms / floor.\n";

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

static int parse_variants(const char *s, struct bench_opts *o)
{
    char buf[512], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", s);
    o->nv = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v = variant_from_name(tok);
        if (v < 0 || !variant_is_gpu(v) || o->nv == VARIANT_COUNT) {
            fprintf(stderr, "edged bench: '%s' is not a GPU variant (see `edged variants`)\n", tok);
            return -1;
        }
        o->variants[o->nv++] = v;
    }
    return o->nv ? 0 : -1;
}

static void opts_default(struct bench_opts *o)
{
    static const int sizes[] = {256, 512, 1024, 2048, 4096, 8192}, ks[] = {3, 5, 7, 11, 15, 21, 31};

    memset(o, 0, sizeof(*o));
    for (int v = VARIANT_FIRST_GPU; v < VARIANT_COUNT; v++)
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

/* One option with its value; returns 0, or -1 (message printed). */
static int parse_opt(struct bench_opts *o, const char *name, const char *val)
{
    int n = 0;

    if (!strcmp(name, "--variants"))
        return parse_variants(val, o);
    if (!strcmp(name, "--sizes"))
        n = o->ns = parse_ints(val, o->sizes, BENCH_MAX_LIST, 1, IMG_MAX_SIDE, 0);
    else if (!strcmp(name, "--ksizes"))
        n = o->nk = parse_ints(val, o->ks, BENCH_MAX_LIST, 1, FILTER_MAX_SIDE, 1);
    else if (!strcmp(name, "--blocks")) {
        n = o->nb = parse_ints(val, o->blocks, 4, 8, 32, 0);
        for (int i = 0; i < o->nb; i++)
            if (!variant_block_ok(o->blocks[i]))
                n = -1;
    } else if (!strcmp(name, "--filter")) {
        int f = filter_from_name(val);
        if (f != FILTER_BOX && f != FILTER_GAUSSIAN && f != FILTER_CUSTOM)
            n = -1;
        o->filter = f;
    } else if (!strcmp(name, "--border"))
        n = (int)(o->border = border_from_name(val));
    else if (!strcmp(name, "--reps"))
        n = parse_ints(val, &o->reps, 1, 1, 10000, 0);
    else if (!strcmp(name, "--warmup"))
        n = parse_ints(val, &o->warmup, 1, 0, 10000, 0);
    else if (!strcmp(name, "--channels"))
        n = parse_ints(val, &o->channels, 1, 1, 4, 0);
    else if (!strcmp(name, "--serial-max"))
        n = parse_ints(val, &o->serial_max, 1, 0, IMG_MAX_SIDE, 0);
    else {
        fprintf(stderr, "edged bench: unknown option %s\n%s", name, bench_usage);
        return -1;
    }
    if (n < 0 || (n == 0 && strcmp(name, "--border") && strcmp(name, "--filter"))) {
        fprintf(stderr, "edged bench: invalid value '%s' for %s\n", val, name);
        return -1;
    }
    return 0;
}

/* Returns EXIT_OK to run, EXIT_USAGE on errors, -1 after --help. */
static int parse_args(int argc, char **argv, struct bench_opts *o)
{
    opts_default(o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(bench_usage, stdout);
            return -1;
        } else if (!strcmp(a, "--csv"))
            o->fmt = FMT_CSV;
        else if (!strcmp(a, "--json"))
            o->fmt = FMT_JSON;
        else if (!strcmp(a, "--compare"))
            o->compare = 1;
        else if (!strcmp(a, "--cpu"))
            o->cpu = 1;
        else if (!strcmp(a, "--u8-edge"))
            o->u8_edge = 1;
        else if (i + 1 < argc && !strncmp(a, "--", 2)) {
            if (parse_opt(o, a, argv[++i]) < 0)
                return EXIT_USAGE;
        } else {
            fprintf(stderr, "edged bench: unexpected argument '%s'\n%s", a, bench_usage);
            return EXIT_USAGE;
        }
    }
    for (int i = 0; i < o->nk; i++)
        if (o->ks[i] < (o->filter == FILTER_CUSTOM ? 1 : 3)) {
            fprintf(stderr, "edged bench: %s needs kernel sides >= 3\n", filter_name(o->filter));
            return EXIT_USAGE;
        }
    return EXIT_OK;
}

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

/* ---- output ------------------------------------------------------------------------------ */

struct row_stats {
    double gpix, gflop, gbps, pct_copy, pct_fp32, x_serial, x_cpu, floor_ms, x_floor;
};

static struct row_stats row_stats(const struct bench_env *env, const struct bench_opts *o,
                                  const struct bench_row *r)
{
    struct row_stats s = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    double px = (double)r->w * r->h * r->planes;

    (void)o;
    if (env->gi)
        s.floor_ms = r->bytes_px * px / (env->gi->copy_gbps * 1e6);
    if (r->ms <= 0.0)
        return s;
    s.gpix = px / (r->ms * 1e6);
    if (r->flops_px > 0.0)
        s.gflop = r->flops_px * px / (r->ms * 1e6);
    s.gbps = r->bytes_px * px / (r->ms * 1e6);
    if (env->gi) {
        s.pct_copy = 100.0 * s.gbps / env->gi->copy_gbps;
        if (r->flops_px > 0.0)
            s.pct_fp32 = 100.0 * s.gflop / env->gi->fp32_gflops;
        s.x_floor = r->ms / s.floor_ms;
    }
    if (env->serial_ms > 0.0)
        s.x_serial = env->serial_ms / r->ms;
    if (env->cpu_ms > 0.0)
        s.x_cpu = env->cpu_ms / r->ms;
    return s;
}

/* A number for a table or CSV cell, or "-" / empty when not measured. */
static const char *cell(char *buf, size_t n, double v, const char *fmt, const char *none)
{
    if (isnan(v))
        return none;
    snprintf(buf, n, fmt, v);
    return buf;
}

static const char *today(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;

    strftime(buf, n, "%Y-%m-%d", gmtime_r(&t, &tm));
    return buf;
}

static void print_header(const struct bench_env *env, const struct bench_opts *o)
{
    const struct gconv_info *gi = env->gi;
    char date[16];

    today(date, sizeof(date));
    if (o->fmt == FMT_CSV) {
        printf("date,device,variant,block,width,height,ksize,taps,channels,border,ms,gpix_s,gflop_s,gb_s,"
               "pct_copy_bw,pct_fp32_peak,speedup_vs_cpu_serial,speedup_vs_cpu,copy_gbps,fp32_gflops,floor_ms,"
               "x_floor,note\n");
        return;
    }
    if (o->fmt == FMT_JSON) {
        printf("{\"date\": \"%s\", \"device\": {\"name\": \"%s\", \"cc\": \"%d.%d\", \"sms\": %d, "
               "\"l2_bytes\": %zu, "
               "\"copy_gbps\": %.1f, \"fp32_gflops\": %.1f},\n \"filter\": \"%s\", \"border\": \"%s\", "
               "\"reps\": %d, "
               "\"warmup\": %d, \"channels\": %d,\n \"rows\": [",
               date, gi ? gi->name : "none", gi ? gi->cc_major : 0, gi ? gi->cc_minor : 0, gi ? gi->sms : 0,
               gi ? gi->l2_bytes : 0, gi ? gi->copy_gbps : 0.0, gi ? gi->fp32_gflops : 0.0,
               filter_name(o->filter), border_name(o->border), o->reps, o->warmup, o->channels);
        return;
    }
    if (gi)
        printf(
            "# %s: %s (cc %d.%d, %d SMs, L2 %zu MiB), measured copy %.0f GB/s (read+write), FP32 peak %.1f "
            "TFLOP/s\n",
            date, gi->name, gi->cc_major, gi->cc_minor, gi->sms, gi->l2_bytes >> 20, gi->copy_gbps,
            gi->fp32_gflops / 1e3);
    if (o->u8_edge)
        printf("# u8 edge pipeline (gaussian5 -> laplacian3 -> |L| > 5, zero border; NPP: replicate, no "
               "threshold), median of %d after %d warm-up; GB/s and floor count in_ch + out_ch bytes per pixel\n",
               o->reps, o->warmup);
    else
        printf("# filter %s, border %s, %d channel(s), median of %d after %d warm-up; GFLOP/s = 2*k*k per "
               "pixel, GB/s = 8 B per pixel\n",
               filter_name(o->filter), border_name(o->border), o->channels, o->reps, o->warmup);
    printf("%-16s %5s %11s %4s %10s %8s %9s %8s %6s %6s %8s %7s %8s %7s  %s\n", "variant", "block", "size", "k",
           "ms", "GPix/s", "GFLOP/s", "GB/s", "%copy", "%fp32", "x_serial", "x_cpu", "floor", "x_floor", "note");
}

static void print_row_text(const struct bench_row *r, const struct row_stats *s)
{
    char b[10][32], size[24], blk[8];

    snprintf(size, sizeof(size), "%dx%d", r->w, r->h);
    snprintf(blk, sizeof(blk), "%d", r->block);
    printf("%-16s %5s %11s %4d %10s %8s %9s %8s %6s %6s %8s %7s %8s %7s  %s\n", r->impl, r->block ? blk : "-",
           size, r->k, cell(b[0], 32, r->ms > 0 ? r->ms : NAN, "%.4f", "-"), cell(b[1], 32, s->gpix, "%.2f", "-"),
           cell(b[2], 32, s->gflop, "%.0f", "-"), cell(b[3], 32, s->gbps, "%.0f", "-"),
           cell(b[4], 32, s->pct_copy, "%.1f", "-"), cell(b[5], 32, s->pct_fp32, "%.1f", "-"),
           cell(b[6], 32, s->x_serial, "%.0f", "-"), cell(b[7], 32, s->x_cpu, "%.1f", "-"),
           cell(b[8], 32, s->floor_ms, "%.4f", "-"), cell(b[9], 32, s->x_floor, "%.2f", "-"), r->note);
}

/* CSV and JSON cells never contain quotes or commas from us; notes are sanitised. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == ',' || *s == '\\' || *s == '\n')
            *s = ';';
}

static void print_row_csv(const struct bench_env *env, const struct bench_opts *o, struct bench_row *r,
                          const struct row_stats *s)
{
    char b[10][32], date[16];
    const struct gconv_info *gi = env->gi;

    (void)o;
    sanitize(r->note);
    printf("%s,%s,%s,%d,%d,%d,%d,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.1f,%.1f,%s,%s,%s\n", today(date, sizeof(date)),
           gi ? gi->name : "none", r->impl, r->block, r->w, r->h, r->k, r->k * r->k, r->ch, r->border,
           cell(b[0], 32, r->ms > 0 ? r->ms : NAN, "%.5f", ""), cell(b[1], 32, s->gpix, "%.4f", ""),
           cell(b[2], 32, s->gflop, "%.2f", ""), cell(b[3], 32, s->gbps, "%.2f", ""),
           cell(b[4], 32, s->pct_copy, "%.2f", ""), cell(b[5], 32, s->pct_fp32, "%.2f", ""),
           cell(b[6], 32, s->x_serial, "%.2f", ""), cell(b[7], 32, s->x_cpu, "%.3f", ""),
           gi ? gi->copy_gbps : 0.0, gi ? gi->fp32_gflops : 0.0, cell(b[8], 32, s->floor_ms, "%.5f", ""),
           cell(b[9], 32, s->x_floor, "%.3f", ""), r->note);
}

static void print_row_json(struct bench_env *env, const struct bench_opts *o, struct bench_row *r,
                           const struct row_stats *s)
{
    char b[10][32];

    (void)o;
    sanitize(r->note);
    printf(
        "%s\n  {\"variant\": \"%s\", \"block\": %d, \"width\": %d, \"height\": %d, \"ksize\": %d, "
        "\"channels\": %d, "
        "\"border\": \"%s\", \"ms\": %s, \"gpix_s\": %s, \"gflop_s\": %s, \"gb_s\": %s, \"pct_copy_bw\": %s, "
        "\"pct_fp32_peak\": %s, \"speedup_vs_cpu_serial\": %s, \"speedup_vs_cpu\": %s, \"floor_ms\": %s, "
        "\"x_floor\": %s, \"note\": \"%s\"}",
        env->rows ? "," : "", r->impl, r->block, r->w, r->h, r->k, r->ch, r->border,
        cell(b[0], 32, r->ms > 0 ? r->ms : NAN, "%.5f", "null"), cell(b[1], 32, s->gpix, "%.4f", "null"),
        cell(b[2], 32, s->gflop, "%.2f", "null"), cell(b[3], 32, s->gbps, "%.2f", "null"),
        cell(b[4], 32, s->pct_copy, "%.2f", "null"), cell(b[5], 32, s->pct_fp32, "%.2f", "null"),
        cell(b[6], 32, s->x_serial, "%.2f", "null"), cell(b[7], 32, s->x_cpu, "%.3f", "null"),
        cell(b[8], 32, s->floor_ms, "%.5f", "null"), cell(b[9], 32, s->x_floor, "%.3f", "null"), r->note);
}

static void print_row(struct bench_env *env, const struct bench_opts *o, struct bench_row *r)
{
    struct row_stats s = row_stats(env, o, r);

    if (o->fmt == FMT_CSV)
        print_row_csv(env, o, r, &s);
    else if (o->fmt == FMT_JSON)
        print_row_json(env, o, r, &s);
    else
        print_row_text(r, &s);
    env->rows++;
    fflush(stdout);
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

    env->serial_ms = env->cpu_ms = -1.0;
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
        print_row(env, o, &r);
        env->serial_ms = r.ms;
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
    print_row(env, o, &r);
    env->cpu_ms = r.ms;
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
    print_row(env, o, &r);
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
    print_row(env, o, &r);
}

/* One u8 edge row: variant v on an n x n image of ch channels, the map as bytes or (packed) as
 * 1-bit rows, which move ch + 1/8 bytes per pixel. Returns the gconv code. */
static int bench_edge_row(struct bench_env *env, const struct bench_opts *o, int n, int ch, enum variant v,
                          int packed)
{
    struct bench_row r = {packed ? "fast_1bit" : variant_name(v), o->blocks[0], n, n, 5, -1.0, "zero", "", ch, 1,
                          ch + (packed ? 0.125 : 1.0), 0.0}; /* no flop model: see struct bench_row */
    double ms = -1.0;
    int rc = gconv_bench_edge(env->ctx, n, n, ch, packed, v, o->blocks[0], o->warmup, o->reps, &ms, r.note);

    if (rc == 0) {
        r.ms = ms;
        snprintf(r.note, sizeof(r.note), "u8 edge %s, %s map (%g B/px)", ch == 1 ? "gray" : "rgb",
                 packed ? "1-bit" : "u8", r.bytes_px);
    }
    print_row(env, o, &r);
    return rc;
}

/* The u8 edge pipeline of an n x n image with ch input channels (1 gray, 3 RGB): one row per GPU
 * variant, for fast also the map packed (bit_depth 1 responses; n a multiple of 8) and, with
 * --compare, NPP's gray pipeline. Returns -1 when the context died. */
static int bench_edge_rows(struct bench_env *env, const struct bench_opts *o, int n, int ch)
{
    for (int vi = 0; vi < o->nv; vi++) {
        enum variant v = o->variants[vi];
        if (bench_edge_row(env, o, n, ch, v, 0) == EDGED_E_GPU_FATAL ||
            (v == VARIANT_FAST && n % 8 == 0 && bench_edge_row(env, o, n, ch, v, 1) == EDGED_E_GPU_FATAL))
            return -1;
    }
    if (o->compare && ch == 1) {
        struct bench_row r = {"npp", 0, n, n, 5, -1.0, "replicate", "", ch, 1, ch + 1.0, 0.0};
        double ms = -1.0;
        if (gconv_bench_edge_npp(env->ctx, n, n, o->warmup, o->reps, &ms, r.note) == 0) {
            r.ms = ms;
            snprintf(r.note, sizeof(r.note), "u8 edge gray, u8 map (2 B/px): nppiFilterGaussBorder 5x5 + "
                                             "nppiFilterLaplaceBorder 3x3 u8");
        }
        print_row(env, o, &r);
    }
    return 0;
}

static int bench_all(struct bench_env *env, const struct bench_opts *o)
{
    struct kernel2d k;
    char err[EDGED_ERR_LEN];

    if (o->u8_edge) {
        for (int si = 0; env->ctx && si < o->ns; si++)
            for (int ch = 1; ch <= 3; ch += 2)
                if (bench_edge_rows(env, o, o->sizes[si], ch) < 0) {
                    fprintf(stderr, "edged bench: the GPU failed; stopping\n");
                    return EXIT_FAIL;
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
            env->serial_ms = env->cpu_ms = -1.0;
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

int bench_main(int argc, char **argv)
{
    struct bench_opts o;
    struct bench_env env = {NULL, NULL, -1.0, -1.0, 0};
    char err[EDGED_ERR_LEN] = "";
    int rc = parse_args(argc, argv, &o);

    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    if ((rc = gconv_open(&env.ctx, 0, BENCH_STREAMS, err)) < 0) {
        fprintf(stderr, "edged bench: no GPU (%s)%s\n", err, o.cpu ? "; CPU rows only" : "");
        if (!o.cpu)
            return exit_status_for(rc);
        env.ctx = NULL;
    }
    env.gi = gconv_get_info(env.ctx);
    if (o.compare && !EDGED_NPP) {
        fprintf(stderr,
                "edged bench: --compare: NVIDIA NPP unavailable (this build has no NPP: libnppif was not "
                "found in CUDA_HOME at build time)\n");
        o.compare = 0;
    }
    print_header(&env, &o);
    rc = bench_all(&env, &o);
    if (o.fmt == FMT_JSON)
        printf("\n]}\n");
    gconv_close(env.ctx);
    return rc;
}
