/* main.c — build/edged: dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_codec.h"
#include "commands.h"
#include "config.h"
#include "errors.h"

static const struct {
    const char *name, *help;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"serve", "run the HTTP service (POST /v1/filter ...)", serve_main},
    {"filter", "filter one PNG file into another", filter_main},
    {"bench", "time the variants on the GPU (and CPU) and print a table", bench_main},
    {"bench-codec", "time edged's PNG codec against libpng on PNG files", bench_codec_main},
    {"health", "exit 0 when a running service answers /readyz with 200", health_main},
    {"variants", "list the convolution variants", list_main},
    {"filters", "list the filters", list_main},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: edged COMMAND [ARGS]   (edged COMMAND --help for each)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            char err[EDGED_ERR_LEN];
            if (config_tuning_load(err) < 0) {
                fprintf(stderr, "edged: %s\n", err);
                return EXIT_USAGE;
            }
            int rc = commands[i].run(argc - 1, argv + 1);
            if (serve_left_gpu()) {
                fflush(NULL);
                _exit(rc); /* skip exit handlers that could wait on a stuck GPU */
            }
            return rc;
        }
    fprintf(stderr, "edged: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
