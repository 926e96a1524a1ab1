/* bench_canny.c — times canny_cpu on a raw 8-bit gray file; prints the median milliseconds. */
#include <stdio.h>
#include <stdlib.h>

#include "canny.h"
#include "clock.h"
#include "errors.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* usage: bench_canny RAW W H THREADS APERTURE L2 LOW HIGH REPS [OUT.raw] */
int main(int argc, char **argv)
{
    struct img g = {0}, o = {0};
    struct canny_params p;
    char err[EDGED_ERR_LEN];
    double t[1000];
    int w, h, threads, reps, rc = 1;
    FILE *f = NULL;

    if (argc < 10) {
        fputs("usage: bench_canny RAW W H THREADS APERTURE L2 LOW HIGH REPS [OUT.raw]\n", stderr);
        return 2;
    }
    w = atoi(argv[2]);
    h = atoi(argv[3]);
    threads = atoi(argv[4]);
    p = (struct canny_params){(float)atof(argv[7]), (float)atof(argv[8]), atoi(argv[5]), atoi(argv[6])};
    reps = atoi(argv[9]);
    reps = reps < 1 ? 1 : reps > 1000 ? 1000 : reps;
    if (img_alloc(&g, w, h, 1, err) < 0 || img_alloc(&o, w, h, 1, err) < 0 || !(f = fopen(argv[1], "rb")) ||
        fread(g.px, 1, (size_t)w * h, f) != (size_t)w * h) {
        fprintf(stderr, "bench_canny: cannot read %s as %dx%d\n", argv[1], w, h);
        goto out;
    }
    for (int r = 0; r < reps; r++) {
        double t0 = clock_ms();
        if (canny_cpu(&g, &p, threads, &o, err) < 0) {
            fprintf(stderr, "bench_canny: %s\n", err);
            goto out;
        }
        t[r] = clock_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    printf("%.3f\n", t[reps / 2]);
    if (argc > 10) {
        FILE *fo = fopen(argv[10], "wb");
        if (!fo || fwrite(o.px, 1, (size_t)w * h, fo) != (size_t)w * h)
            fprintf(stderr, "bench_canny: cannot write %s\n", argv[10]);
        if (fo)
            fclose(fo);
    }
    rc = 0;
out:
    if (f)
        fclose(f);
    img_free(&g);
    img_free(&o);
    return rc;
}
