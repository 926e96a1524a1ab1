/* bench_opts.h — the options of `edged bench` (not --codec: bench_codec.h): their defaults, the
 * flags and their checks. */
#ifndef EDGED_BENCH_OPTS_H
#define EDGED_BENCH_OPTS_H

#include <stdio.h>

#include "cli/bench_report.h"
#include "filter.h"
#include "variant.h"

#define BENCH_MAX_LIST 32

struct bench_opts {
    int variants[VARIANT_COUNT], nv;
    int sizes[BENCH_MAX_LIST], ns;
    int ks[BENCH_MAX_LIST], nk;
    int blocks[4], nb;
    enum filter_id filter;
    enum border border;
    int reps, warmup, channels, serial_max, compare, cpu, u8_edge, progress;
    int canny_spiral, l2gradient; /* --canny-input spiral, --l2gradient */
    int device, device_given;     /* --device: the CUDA device number (default 0), and whether given */
    const char *input;            /* --input FILE, or NULL */
    const char *ops;              /* --ops JSON (a request's pipeline), or NULL */
    enum bench_fmt fmt;
};

/* The usage text, with every flag (opts_usage_exit's). */
void bench_usage(FILE *f);
/* Fills o from the defaults and argv. Returns 0 to run, OPTS_HELP, or EDGED_E_USAGE with the
 * message in err (a bad value names its flag). */
int bench_parse_args(int argc, char **argv, struct bench_opts *o, char *err);

#endif
