/* log.h — structured logs on stderr, one event per line written with a single write(2): a JSON
 * object (for collectors), or a readable text line (for a terminal). */
#ifndef EDGED_LOG_H
#define EDGED_LOG_H

#include <stddef.h>

#include "result.h"

struct cJSON;

/* How lines are written. LOG_AUTO: text when stderr is a terminal, else JSON. */
enum log_format { LOG_AUTO, LOG_TEXT, LOG_JSON };

/* "auto", "text", "json" and back; log_format_parse returns -1 for any other name. */
int log_format_parse(const char *name);
const char *log_format_name(enum log_format f);
/* Sets the format of every later line (LOG_AUTO is resolved now). Until called, lines are JSON
 * unless stderr is a terminal. Call before other threads log. */
void log_set_format(enum log_format f);

/* One finished request, as the access log records it. Strings may be NULL (omitted). */
struct log_request {
    const char *request_id, *method, *path, *filter, *variant, *error;
    int status;
    size_t bytes_in, bytes_out;
    int width, height; /* 0 when no image was decoded */
    const struct result_times *t;
};

/* A new log object holding "ts" (UTC, ms) and "level"; add fields, then log_end. May be NULL
 * when out of memory (cJSON's adders accept NULL; log_end then writes a fixed line). */
struct cJSON *log_begin(const char *level);
/* Writes obj as one line and deletes it. Text lines read `TS LEVEL EVENT [MSG] key=value...`
 * (request events: `TS LEVEL request METHOD PATH STATUS TOTAL ms key=value...`); control
 * characters are escaped, values with spaces or quotes are quoted. */
void log_end(struct cJSON *obj);

/* {"ts","level","event","msg"} with msg formatted printf-style. */
void log_event(const char *level, const char *event, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The access-log line of one request. */
void log_request(const struct log_request *r);

#endif
