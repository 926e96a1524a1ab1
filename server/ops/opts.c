/* opts.c — getopt_long over a table of long options, and the usage lines of that table. */
#include "ops/opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

/* getopt_long's value for row i; below it the short options ('h'). */
#define OPTS_BASE 256
#define OPTS_HELP_COLUMN 22

/* The struct option array of specs plus --help; caller frees. */
static struct option *long_options(const struct opts_spec *specs, int n)
{
    struct option *lo = calloc((size_t)n + 2, sizeof(*lo));
    int k = 0;

    if (!lo)
        return NULL;
    for (int i = 0; i < n; i++)
        if (specs[i].name)
            lo[k++] = (struct option){specs[i].name, specs[i].arg ? required_argument : no_argument, NULL,
                                      OPTS_BASE + i};
    lo[k] = (struct option){"help", no_argument, NULL, 'h'};
    return lo;
}

/* The message of a refused option; getopt has already stepped past it. */
static int refuse(char **argv, const struct opts_spec *specs, int c, char *err)
{
    const char *arg = argv[optind - 1];

    if (c == ':')
        return edged_fail(err, EDGED_E_USAGE, "option '%s' needs a value", arg);
    if (optopt >= OPTS_BASE)
        return edged_fail(err, EDGED_E_USAGE, "option '--%s' takes no value", specs[optopt - OPTS_BASE].name);
    if (optopt > 0 && optopt < OPTS_BASE && arg[1] != '-')
        return edged_fail(err, EDGED_E_USAGE, "unknown option '-%c'", optopt);
    return edged_fail(err, EDGED_E_USAGE, "unknown or ambiguous option '%s'", arg);
}

int opts_parse(int argc, char **argv, const struct opts_spec *specs, int n, opts_handler fn, void *app,
               int *first, char *err)
{
    struct option *lo = long_options(specs, n);
    int c, rc = 0;

    if (!lo)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the option table");
    optind = 0; /* 0: a full restart of GNU getopt */
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        if (c == 'h')
            rc = OPTS_HELP;
        else if (c == '?' || c == ':')
            rc = refuse(argv, specs, c, err);
        else
            rc = fn(app, c - OPTS_BASE, specs[c - OPTS_BASE].arg ? optarg : NULL, err);
    }
    if (rc == 0 && !first && optind < argc)
        rc = edged_fail(err, EDGED_E_USAGE, "unexpected argument '%s'", argv[optind]);
    if (first)
        *first = optind;
    free(lo);
    return rc;
}

int opts_usage_exit(int rc, const char *cmd, const char *err, void (*usage)(FILE *f))
{
    if (rc == OPTS_HELP) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "edged %s: %s (edged %s --help lists the options)\n", cmd, err, cmd);
    return 2; /* EXIT_USAGE (commands.h) */
}

void opts_print(FILE *f, const struct opts_spec *specs, int n)
{
    for (int i = 0; i < n; i++) {
        const char *h = specs[i].help;
        int w;

        if (!specs[i].name)
            continue;
        w = fprintf(f, "  --%s%s%s", specs[i].name, specs[i].arg ? " " : "", specs[i].arg ? specs[i].arg : "");
        for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1) {
            fprintf(f, "%*s%.*s\n", w < OPTS_HELP_COLUMN ? OPTS_HELP_COLUMN - w : 1, "", (int)(nl - h), h);
            w = 0;
        }
        fprintf(f, "%*s%s\n", w < OPTS_HELP_COLUMN ? OPTS_HELP_COLUMN - w : 1, "", h);
    }
}
