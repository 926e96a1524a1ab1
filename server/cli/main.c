/* main.c — build/edged: dispatches to the subcommands (commands.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "ops/config.h"
#include "errors.h"

static const struct {
    const char *name, *help;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"serve", "run the HTTP service (POST /v1/filter ...)", serve_main},
    {"filter", "filter PNG, JPEG or WebP images to PNG or JPEG: IN OUT pairs or --out-dir DIR", filter_main},
    {"bench", "time the variants on the GPU and CPU and print a table (--codec: the image codecs)",
     bench_main},
    {"health", "probe a running service: exit 0 when /readyz (--live: /healthz) answers 200", health_main},
    {"variants", "list the convolution variants and whether they can run here", list_main},
    {"filters", "list the filters", list_main},
    {"version", "print the version and the build (also edged --version)", version_main},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: edged COMMAND [ARGS]   (edged COMMAND --help for each)\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
}

/* Runs command i after the tuning knobs of the environment (a bad one is a usage error). */
static int run(size_t i, int argc, char **argv)
{
    char err[EDGED_ERR_LEN];
    int rc;

    if (config_tuning_load(err) < 0) {
        fprintf(stderr, "edged: %s\n", err);
        return EXIT_USAGE;
    }
    rc = commands[i].run(argc, argv);
    if (serve_left_gpu()) {
        fflush(NULL);
        _exit(rc); /* skip exit handlers that could wait on a stuck GPU */
    }
    return rc;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";

    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        cmd = "version";
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return run(i, argc - 1, argv + 1);
    fprintf(stderr, "edged: unknown command '%s' (edged --help lists the commands)\n", cmd);
    return EXIT_USAGE;
}
