/* cmd_list.c — `edged variants` and `edged filters`: what exists, one line each; for variants also
 * whether this machine can run it. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "errors.h"
#include "filter.h"
#include "gconv.h"
#include "ops/opts.h"
#include "variant.h"

/* Whether the GPU variants can run here: a CUDA context opens (as `edged serve` would open it).
 * Returns 1, or 0 with the reason in why. */
static int gpu_here(char *why, size_t cap)
{
    struct gconv_ctx *ctx = NULL;
    char err[EDGED_ERR_LEN];

    if (!EDGED_GPU) {
        snprintf(why, cap, "built without CUDA");
        return 0;
    }
    if (gconv_open(&ctx, 0, 1, err) < 0) {
        snprintf(why, cap, "%s", err);
        return 0;
    }
    gconv_close(ctx);
    return 1;
}

static int list_variants(void)
{
    char why[EDGED_ERR_LEN];
    int gpu = gpu_here(why, sizeof(why));

    printf("%-16s %-15s %-4s %s\n", "variant", "runs on", "here", "what it is");
    for (int v = 0; v < VARIANT_COUNT; v++) {
        int built = EDGED_GPU && variant_built(v);
        const char *where = v == VARIANT_AUTO ? "any" : variant_is_gpu(v) ? (built ? "gpu" : "gpu, not built")
                                                                          : "cpu";
        const char *here = !variant_is_gpu(v) || (gpu && built) ? "yes" : "no";
        printf("%-16s %-15s %-4s %s\n", variant_name(v), where, here, variant_description(v));
    }
    for (int v = 0; gpu && v < VARIANT_COUNT; v++)
        if (!variant_built(v))
            printf("here: %s cannot run (%s)\n", variant_name(v), variant_missing(v));
    if (gpu)
        printf("here: every other variant can run (auto picks a GPU variant)\n");
    else
        printf("here: the GPU variants cannot run (%s); auto runs cpu\n", why);
    return EXIT_OK;
}

static int list_filters(void)
{
    for (int f = 0; f < FILTER_COUNT; f++)
        printf("%-11s %s\n", filter_name(f), filter_description(f));
    return EXIT_OK;
}

static int list_variants_cmd;

static void list_usage(FILE *f)
{
    fprintf(f, "usage: edged %s\n  lists the %s with one line each\n", list_variants_cmd ? "variants" : "filters",
            list_variants_cmd ? "convolution variants (name, where it runs, whether it can run here, what it is)"
                              : "filters");
}

int list_main(int argc, char **argv)
{
    char err[EDGED_ERR_LEN];
    int rc;

    list_variants_cmd = strcmp(argv[0], "variants") == 0;
    if ((rc = opts_parse(argc, argv, NULL, 0, NULL, NULL, NULL, err)) != 0)
        return opts_usage_exit(rc, argv[0], err, list_usage);
    return list_variants_cmd ? list_variants() : list_filters();
}
