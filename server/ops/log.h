/* log.h — structured logs on stderr, one event per line written with a single write(2): a JSON
 * object (for collectors), or a readable text line (for a terminal); lines under the log level
 * are dropped. Every line is valid UTF-8 whatever the strings it carries. */
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

/* Severities, lowest first. A line's level is one of their names ("debug", "info", "warn",
 * "error"); an unknown name counts as error. */
enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* "debug", "info", "warn", "error" and back; log_level_parse returns -1 for any other name. */
int log_level_parse(const char *name);
const char *log_level_name(enum log_level l);
/* Lines below l are dropped from now on (default LOG_INFO). Call before other threads log. */
void log_set_level(enum log_level l);
/* 1 when a line of level l is written. */
int log_enabled(enum log_level l);

/* One finished request, as the access log records it. Strings may be NULL (omitted). trace_id,
 * span_id and parent_id are the request's trace context (W3C, lowercase hex): the trace, the
 * server's span, and the caller's span (NULL when the request brought none). */
struct log_request {
    enum log_level level;
    const char *request_id, *method, *path, *filter, *variant, *backend, *error;
    const char *trace_id, *span_id, *parent_id;
    int status;
    size_t bytes_in, bytes_out;
    int width, height; /* 0 when no image was decoded */
    const struct result_times *t;
    int device; /* CUDA device number the job ran on; < 0: none (omitted) */
};

/* A new log object holding "ts" (UTC, ms) and "level"; add fields, then log_end. May be NULL
 * when out of memory (cJSON's adders accept NULL; log_end then writes a fixed line). */
struct cJSON *log_begin(const char *level);
/* Writes obj as one line, unless its level is under the log level, and deletes it. Strings that
 * are not valid UTF-8 are written with U+FFFD for each bad byte. Text lines read
 * `TS LEVEL EVENT [MSG] key=value...` (request events: `TS LEVEL request METHOD PATH STATUS
 * TOTAL ms key=value...`); control characters are escaped, values with spaces, quotes or bytes
 * past ASCII are quoted, those bytes written as '?'. */
void log_end(struct cJSON *obj);

/* {"ts","level","event","msg"} with msg formatted printf-style. */
void log_event(const char *level, const char *event, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The level of a request's access line: error for a server error (status >= 500) that is not a
 * refusal for capacity, else debug for a probe or scrape (so a readiness 503 is no error), warn
 * for a refusal for capacity, info for the rest. status 0: no answer. */
enum log_level log_request_level(int status, int capacity, int probe);

/* The access-log line of one request, at r->level. */
void log_request(const struct log_request *r);

#endif
