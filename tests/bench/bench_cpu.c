/* bench_cpu.c — times cpu_conv on a float plane for box/gaussian/custom kernels; prints CSV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cpu.h"
#include "errors.h"
#include "filter.h"

#define BENCH_MAX_K 16

struct bench_opts {
    int size, threads, reps, warmup, nk, k[BENCH_MAX_K];
    unsigned seed;
    enum border border;
    const char *filters;
    const char *input; /* raw float32 plane of size x size, or NULL: random samples */
};

static const char bench_usage[] =
    "usage: bench_cpu [--size N] [--threads N] [--reps N] [--warmup N] [--k 3,5,11,25]\n"
    "                 [--filters box,gaussian,custom] [--border zero|replicate|reflect] [--seed N]\n"
    "                 [--input RAW]\n"
    "Times cpu_conv on an N x N float plane (default 4096, threads 0 = all cores, 5 reps after 1\n"
    "warm-up) and prints CSV: filter,k,separable,threads,w,h,median_ms,min_ms,mpix_s. The plane is\n"
    "RAW (N*N float32, native order), else random samples 0..255 from --seed.\n";

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_k(const char *s, struct bench_opts *o)
{
    char *end;

    o->nk = 0;
    while (*s && o->nk < BENCH_MAX_K) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > FILTER_MAX_SIDE || v % 2 == 0)
            return -1;
        o->k[o->nk++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return o->nk > 0 ? 0 : -1;
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
    *o = (struct bench_opts){.size = 4096, .reps = 5, .warmup = 1, .nk = 4, .k = {3, 5, 11, 25},
                             .seed = (unsigned)time(NULL), .filters = "box,gaussian,custom"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int b;
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--size") && (o->size = atoi(v)) >= 1 && o->size <= 32768)
            continue;
        if (!strcmp(a, "--threads") && (o->threads = atoi(v)) >= 0)
            continue;
        if (!strcmp(a, "--reps") && (o->reps = atoi(v)) >= 1 && o->reps <= 1000)
            continue;
        if (!strcmp(a, "--warmup") && (o->warmup = atoi(v)) >= 0)
            continue;
        if (!strcmp(a, "--seed")) {
            o->seed = (unsigned)strtoul(v, NULL, 10);
            continue;
        }
        if (!strcmp(a, "--k") && parse_k(v, o) == 0)
            continue;
        if (!strcmp(a, "--filters")) {
            o->filters = v;
            continue;
        }
        if (!strcmp(a, "--input")) {
            o->input = v;
            continue;
        }
        if (!strcmp(a, "--border") && (b = border_from_name(v)) >= 0) {
            o->border = (enum border)b;
            continue;
        }
        return -1;
    }
    return 0;
}

/* Builds the k x k kernel of filter name: box and gaussian from the bank, custom random taps in
 * [-1, 1) (rank > 1, so the direct 2-D path). */
static int make_kernel(const char *name, int k, struct kernel2d *kern, char *err)
{
    struct filter_spec spec;

    if (!strcmp(name, "box") || !strcmp(name, "gaussian")) {
        filter_spec_init(&spec, !strcmp(name, "box") ? FILTER_BOX : FILTER_GAUSSIAN);
        spec.size = k;
        if (k < 3)
            return edged_fail(err, EDGED_E_PARAM, "%s needs k >= 3", name);
        return filter_kernel(&spec, kern, err);
    }
    if (strcmp(name, "custom") != 0)
        return edged_fail(err, EDGED_E_PARAM, "unknown filter %s (box, gaussian, custom)", name);
    filter_spec_init(&spec, FILTER_CUSTOM);
    spec.custom_rows = spec.custom_cols = k;
    for (int i = 0; i < k * k; i++)
        spec.custom_taps[i] = (float)rand() / ((float)RAND_MAX + 1.0f) * 2.0f - 1.0f;
    return filter_kernel(&spec, kern, err);
}

static int bench_one(const struct bench_opts *o, const char *name, int k, const float *in, float *out)
{
    static struct kernel2d kern;
    double t[1000], t0;
    char err[EDGED_ERR_LEN];
    int rc;

    if ((rc = make_kernel(name, k, &kern, err)) < 0) {
        fprintf(stderr, "bench_cpu: %s\n", err);
        return rc;
    }
    for (int r = 0; r < o->warmup + o->reps; r++) {
        t0 = clock_ms();
        if ((rc = cpu_conv(in, out, o->size, o->size, (size_t)o->size, &kern, o->border, o->threads, err)) < 0) {
            fprintf(stderr, "bench_cpu: cpu_conv: %s\n", err);
            return rc;
        }
        if (r >= o->warmup)
            t[r - o->warmup] = clock_ms() - t0;
    }
    qsort(t, (size_t)o->reps, sizeof(double), cmp_double);
    printf("%s,%d,%d,%d,%d,%d,%.3f,%.3f,%.1f\n", name, k, kern.separable, o->threads, o->size, o->size,
           t[o->reps / 2], t[0], (double)o->size * o->size / (t[o->reps / 2] * 1e3));
    fflush(stdout);
    return 0;
}

/* Reads n floats from path into in; -1 (said on stderr) when the file is missing or short. */
static int read_plane(const char *path, float *in, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(in, sizeof(float), n, f) : 0;

    if (f)
        fclose(f);
    if (got == n)
        return 0;
    fprintf(stderr, "bench_cpu: cannot read %zu floats from %s\n", n, path);
    return -1;
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    float *in = NULL, *out = NULL;
    char names[256], *name, *save = NULL;
    size_t n;
    int rc = 1;

    if (parse_args(argc, argv, &o) < 0) {
        fputs(bench_usage, stderr);
        return 2;
    }
    n = (size_t)o.size * (size_t)o.size;
    in = malloc(n * sizeof(float));
    out = malloc(n * sizeof(float));
    if (!in || !out) {
        fprintf(stderr, "bench_cpu: out of memory for %d x %d\n", o.size, o.size);
        goto out;
    }
    srand(o.seed);
    if (o.input && read_plane(o.input, in, n) < 0)
        goto out;
    for (size_t i = 0; !o.input && i < n; i++)
        in[i] = (float)(rand() & 255);
    fprintf(stderr, "bench_cpu: %dx%d fp32 %s, border %s, seed %u, median of %d after %d warm-up\n", o.size,
            o.size, o.input ? o.input : "random", border_name(o.border), o.seed, o.reps, o.warmup);
    printf("filter,k,separable,threads,w,h,median_ms,min_ms,mpix_s\n");
    snprintf(names, sizeof(names), "%s", o.filters);
    for (name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save))
        for (int i = 0; i < o.nk; i++)
            if (bench_one(&o, name, o.k[i], in, out) < 0)
                goto out;
    rc = 0;
out:
    free(out);
    free(in);
    return rc;
}
