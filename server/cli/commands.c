/* commands.c — what the subcommands share: the exit status of an error code. */
#include "cli/commands.h"

#include "errors.h"

int exit_status_for(int code)
{
    switch (code) {
    case EDGED_OK:
        return EXIT_OK;
    case EDGED_E_USAGE:
    case EDGED_E_PARAM:
    case EDGED_E_VARIANT_LIMIT:
    case EDGED_E_NO_CUDA:
        return EXIT_USAGE;
    case EDGED_E_NOT_PNG:
    case EDGED_E_BAD_PNG:
    case EDGED_E_BAD_IMAGE:
    case EDGED_E_IMAGE_TOO_LARGE:
    case EDGED_E_IO:
        return EXIT_BAD_INPUT;
    default:
        return EXIT_FAIL;
    }
}
