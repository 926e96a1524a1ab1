/* progress.c — the progress line of edged filter and edged bench. */
#include "cli/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#define PROGRESS_CLEAR "\r\033[K" /* to the line's start, erase it */

void progress_init(struct progress *p)
{
    p->tty = isatty(STDERR_FILENO);
    p->open = 0;
}

void progress_show(struct progress *p, int final, const char *fmt, ...)
{
    va_list ap;

    if (p->tty)
        fputs(PROGRESS_CLEAR, stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (final || !p->tty)
        fputc('\n', stderr);
    p->open = p->tty && !final;
    fflush(stderr);
}

void progress_end(struct progress *p)
{
    if (p->open)
        fputs(PROGRESS_CLEAR, stderr);
    p->open = 0;
}
