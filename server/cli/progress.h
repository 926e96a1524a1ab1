/* progress.h — one progress line on stderr for long CLI runs: rewritten in place on a terminal,
 * a line per update elsewhere; never on stdout, where results go. */
#ifndef EDGED_PROGRESS_H
#define EDGED_PROGRESS_H

struct progress {
    int tty;  /* stderr is a terminal */
    int open; /* a line is on the terminal without its newline */
};

/* Looks at stderr once. */
void progress_init(struct progress *p);
/* Shows one update (printf format, no newline): on a terminal it replaces the open line, and stays
 * open unless final; elsewhere it is a line of its own. */
void progress_show(struct progress *p, int final, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Clears an open terminal line, so that a message starts on a line of its own. */
void progress_end(struct progress *p);

#endif
