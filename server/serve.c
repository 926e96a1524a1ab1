/* serve.c — placeholder until its issue lands (being written now). */
#include <stdio.h>

#include "commands.h"

int serve_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "edged serve: not built yet\n");
    return EXIT_FAIL;
}
