/* cli_list.c — `edged variants` and `edged filters`: what exists, one line each. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "filter.h"
#include "variant.h"

static int list_variants(void)
{
    for (int v = 0; v < VARIANT_COUNT; v++) {
        const char *where = v == VARIANT_AUTO ? "any" : variant_is_gpu(v) ? (EDGED_GPU ? "gpu" : "gpu, not built")
                                                                          : "cpu";
        printf("%-16s %-15s %s\n", variant_name(v), where, variant_description(v));
    }
    return EXIT_OK;
}

static int list_filters(void)
{
    for (int f = 0; f < FILTER_COUNT; f++)
        printf("%-11s %s\n", filter_name(f), filter_description(f));
    return EXIT_OK;
}

int list_main(int argc, char **argv)
{
    int variants = strcmp(argv[0], "variants") == 0;

    if (argc > 1) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr, "usage: edged %s\n  lists the %s with one line each\n", argv[0],
                variants ? "convolution variants (name, where it runs, what it is)" : "filters");
        return help ? EXIT_OK : EXIT_USAGE;
    }
    return variants ? list_variants() : list_filters();
}
