/* commands.h — the subcommands of build/edged, one cli/cmd_<command>.c each; each returns
 * main's exit status. */
#ifndef EDGED_COMMANDS_H
#define EDGED_COMMANDS_H

/* Exit statuses shared by every subcommand. */
enum exit_code { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_BAD_INPUT = 3 };

int serve_main(int argc, char **argv);   /* cmd_serve.c */
/* 1 when serve_main returned after a fatal GPU error without closing the context: the CUDA
 * runtime's exit handlers could then block on a stuck kernel, so main leaves with _exit. */
int serve_left_gpu(void);
int filter_main(int argc, char **argv);  /* cmd_filter.c */
int bench_main(int argc, char **argv);   /* cmd_bench.c */
int health_main(int argc, char **argv);  /* cmd_health.c: the probe client of a running service */
int list_main(int argc, char **argv);    /* cmd_list.c: variants, filters */
int version_main(int argc, char **argv); /* cmd_version.c */

/* Maps an EDGED_E_* code to the CLI exit status: usage 2, bad input 3, other failures 1. */
int exit_status_for(int code);

#endif
