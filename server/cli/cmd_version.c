/* cmd_version.c — `edged version` and `edged --version`: the version and how the GPU part was built. */
#include <stdio.h>

#include "cli/commands.h"
#include "errors.h"
#include "ops/opts.h"
#include "ops/version.h"

#ifndef EDGED_NVJPEG
#define EDGED_NVJPEG 0
#endif

static void version_usage(FILE *f)
{
    fputs("usage: edged version (or edged --version)\n  prints the version and whether this build has CUDA "
          "and NPP, and its JPEG codecs\n",
          f);
}

int version_main(int argc, char **argv)
{
    char err[EDGED_ERR_LEN];
    int rc = opts_parse(argc, argv, NULL, 0, NULL, NULL, NULL, err);

    if (rc != 0)
        return opts_usage_exit(rc, "version", err, version_usage);
    printf("edged %s\n", EDGED_VERSION);
    printf("gpu: %s\n", EDGED_GPU ? (EDGED_NPP ? "built with CUDA and NPP" : "built with CUDA, without NPP")
                                  : "built without CUDA (CPU variants only)");
    printf("jpeg: %s\n", EDGED_NVJPEG ? "nvJPEG on the GPU backend, libjpeg-turbo on the CPU" : "libjpeg-turbo");
    return EXIT_OK;
}
