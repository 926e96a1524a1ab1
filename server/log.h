/* log.h — structured logs: one JSON object per line on stderr, written with a single write(2). */
#ifndef EDGED_LOG_H
#define EDGED_LOG_H

#include <stddef.h>

#include "result.h"

struct cJSON;

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
/* Writes obj as one line and deletes it. */
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
