/* health.c — placeholder until its issue lands (being written now). */
#include <stdio.h>

#include "commands.h"

int health_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "edged health: not built yet\n");
    return EXIT_FAIL;
}
