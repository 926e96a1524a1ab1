/* log.c — JSON log lines on stderr; one write(2) per line so that threads never interleave. */
#include "log.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_OOM_LINE "{\"level\":\"error\",\"event\":\"log\",\"msg\":\"out of memory while logging\"}\n"

cJSON *log_begin(const char *level)
{
    struct timespec ts;
    struct tm tm;
    char buf[64];
    cJSON *o = cJSON_CreateObject();

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    cJSON_AddStringToObject(o, "ts", buf);
    cJSON_AddStringToObject(o, "level", level);
    return o;
}

/* Writes len bytes, retrying short writes; errors are dropped (logging never fails a request). */
static void write_all(const char *s, size_t len)
{
    ssize_t n;

    while (len > 0 && (n = write(STDERR_FILENO, s, len)) > 0) {
        s += n;
        len -= (size_t)n;
    }
}

void log_end(cJSON *obj)
{
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    size_t len;

    if (text && (len = strlen(text)) > 0) {
        char *line = realloc(text, len + 2);
        if (line) {
            text = line;
            memcpy(text + len, "\n", 2);
            write_all(text, len + 1);
        }
    } else {
        write_all(LOG_OOM_LINE, strlen(LOG_OOM_LINE));
    }
    free(text);
    cJSON_Delete(obj);
}

void log_event(const char *level, const char *event, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    cJSON *o = log_begin(level);

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON_AddStringToObject(o, "event", event);
    cJSON_AddStringToObject(o, "msg", msg);
    log_end(o);
}

static void add_str(cJSON *o, const char *key, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, key, v);
}

void log_request(const struct log_request *r)
{
    cJSON *o = log_begin(r->status >= 500 ? "error" : "info"), *ms;
    char size[32];

    cJSON_AddStringToObject(o, "event", "request");
    add_str(o, "request_id", r->request_id);
    add_str(o, "method", r->method);
    add_str(o, "path", r->path);
    cJSON_AddNumberToObject(o, "status", r->status);
    cJSON_AddNumberToObject(o, "bytes_in", (double)r->bytes_in);
    cJSON_AddNumberToObject(o, "bytes", (double)r->bytes_out);
    if (r->width > 0) {
        snprintf(size, sizeof(size), "%dx%d", r->width, r->height);
        cJSON_AddStringToObject(o, "size", size);
    }
    add_str(o, "filter", r->filter);
    add_str(o, "variant", r->variant);
    add_str(o, "error", r->error);
    if (r->t && (ms = cJSON_AddObjectToObject(o, "ms")))
        result_times_json(ms, r->t, RESULT_TIMES_LOG);
    log_end(o);
}
