/* opts.h — the one command-line parser of every subcommand: a table of long options read with
 * getopt_long (`--name value` and `--name=value` alike), and usage lines from the same table. */
#ifndef EDGED_OPTS_H
#define EDGED_OPTS_H

#include <stdio.h>

/* One long option. A row with name NULL is skipped (a setting with no flag). */
struct opts_spec {
    const char *name; /* without the leading "--" */
    const char *arg;  /* the value's placeholder ("N", "NAME"); NULL for a switch without a value */
    const char *help; /* what it does; '\n' continues on an indented line */
};

/* Called once per option in command-line order: i indexes the table, val is its value (NULL for a
 * switch). Returns 0 or a negative EDGED_E_* code with the message in err. */
typedef int (*opts_handler)(void *app, int i, const char *val, char *err);

/* opts_parse's answer when --help or -h was given. */
#define OPTS_HELP 1

/* Parses argv[1..argc-1] against the n rows of specs plus --help/-h. Arguments that are not
 * options (and "-") are moved after the options; *first receives the index of the first of them,
 * or, with first NULL, any such argument is refused. Returns 0, OPTS_HELP, EDGED_E_USAGE (unknown
 * option, missing value, value given to a switch, unexpected argument; the message names it) or
 * the handler's code. */
int opts_parse(int argc, char **argv, const struct opts_spec *specs, int n, opts_handler fn, void *app,
               int *first, char *err);

/* What a subcommand does when opts_parse did not return 0: for OPTS_HELP prints usage to stdout
 * and returns exit status 0; for an error prints the one line "edged CMD: err (edged CMD --help
 * lists the options)" to stderr, no usage dump, and returns exit status 2. */
int opts_usage_exit(int rc, const char *cmd, const char *err, void (*usage)(FILE *f));

/* Prints one "  --name ARG  help" entry per row of specs to f, aligned. */
void opts_print(FILE *f, const struct opts_spec *specs, int n);

#endif
