/* log.c — log lines on stderr, JSON or text; one write(2) per line so that threads never interleave. */
#include "ops/log.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "utf8.h"

#define LOG_OOM_LINE "{\"level\":\"error\",\"event\":\"log\",\"msg\":\"out of memory while logging\"}\n"
/* A text line longer than this is cut (the JSON form has no limit). */
#define LOG_TEXT_MAX 8192

static const char *const format_names[] = {"auto", "text", "json"};
static atomic_int format = -1; /* -1: not set yet, resolved as auto on the first line */
static const char *const level_names[] = {"debug", "info", "warn", "error"};
static atomic_int threshold = LOG_INFO;

/* The index of name in names[n], or -1. */
static int name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

int log_level_parse(const char *name) { return name_index(level_names, 4, name); }

const char *log_level_name(enum log_level l) { return (unsigned)l < 4 ? level_names[l] : "?"; }
void log_set_level(enum log_level l) { atomic_store(&threshold, l); }
int log_enabled(enum log_level l) { return (int)l >= atomic_load(&threshold); }

/* The level of a line by its name; an unknown or missing one is written (error). */
static int line_enabled(const char *level)
{
    int l = level ? log_level_parse(level) : -1;

    return log_enabled(l < 0 ? LOG_ERROR : (enum log_level)l);
}

int log_format_parse(const char *name) { return name_index(format_names, 3, name); }

const char *log_format_name(enum log_format f) { return (unsigned)f < 3 ? format_names[f] : "?"; }

void log_set_format(enum log_format f)
{
    if (f == LOG_AUTO)
        f = isatty(STDERR_FILENO) ? LOG_TEXT : LOG_JSON;
    atomic_store(&format, f);
}

static enum log_format current_format(void)
{
    int f = atomic_load(&format);

    if (f < 0) {
        log_set_format(LOG_AUTO);
        f = atomic_load(&format);
    }
    return (enum log_format)f;
}

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

/* ---- text lines ---------------------------------------------------------------------------- */

struct line {
    char s[LOG_TEXT_MAX];
    size_t len;
};

static void put(struct line *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(struct line *l, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(l->s + l->len, sizeof(l->s) - l->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->len = l->len + (size_t)n < sizeof(l->s) ? l->len + (size_t)n : sizeof(l->s) - 1;
}

/* A string value: as it is when it is one plain word, else quoted with JSON's escapes (control
 * characters as \u00XX), so one event is always one line and a value cannot fake another field. */
static void put_str(struct line *l, const char *v)
{
    int plain = *v != '\0';

    for (const unsigned char *p = (const unsigned char *)v; *p && plain; p++)
        plain = *p > 0x20 && *p < 0x7f && *p != '"' && *p != '\\' && *p != '=';
    if (plain) {
        put(l, "%s", v);
        return;
    }
    put(l, "\"");
    l->len = result_escape(l->s, sizeof(l->s), l->len, v, 2, RESULT_ESCAPE_JSON);
    put(l, "\"");
}

static void put_number(struct line *l, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        put(l, "%.0f", v);
    else
        put(l, "%.4g", v);
}

/* key=value; objects and arrays as compact JSON (already escaped, no spaces). */
static void put_field(struct line *l, const cJSON *item)
{
    char *json;

    put(l, " %s=", !strcmp(item->string, "request_id") ? "id" : item->string);
    if (cJSON_IsString(item)) {
        put_str(l, item->valuestring);
    } else if (cJSON_IsNumber(item)) {
        put_number(l, item->valuedouble);
    } else if ((json = cJSON_PrintUnformatted(item))) {
        put(l, "%s", json);
        free(json);
    }
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* `TS LEVEL EVENT`, then for a request `METHOD PATH STATUS TOTAL ms`, else the message. */
static void put_head(struct line *l, const cJSON *o)
{
    const char *event = str_of(o, "event"), *msg = str_of(o, "msg");
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "ms"), "total");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(o, "status");

    put(l, "%s %s %s", str_of(o, "ts") ? str_of(o, "ts") : "-", str_of(o, "level") ? str_of(o, "level") : "-",
        event ? event : "-");
    if (event && !strcmp(event, "request")) {
        put(l, " ");
        put_str(l, str_of(o, "method") ? str_of(o, "method") : "-");
        put(l, " ");
        put_str(l, str_of(o, "path") ? str_of(o, "path") : "-");
        put(l, " %d ", status ? status->valueint : 0);
        put_number(l, cJSON_IsNumber(total) ? round(total->valuedouble * 1000.0) / 1000.0 : 0.0);
        put(l, " ms");
    } else if (msg) {
        put(l, " ");
        l->len = result_escape(l->s, sizeof(l->s), l->len, msg, 2, RESULT_ESCAPE_JSON);
    }
}

/* The fields put_head already wrote. */
static int in_head(const char *key, int request)
{
    static const char *const head[] = {"ts", "level", "event", "msg", "method", "path", "status"};

    for (size_t i = 0; i < (request ? 7u : 4u); i++)
        if (!strcmp(key, head[i]))
            return 1;
    return 0;
}

static void write_text(const cJSON *o)
{
    struct line l;
    const cJSON *item;
    int request = str_of(o, "event") && !strcmp(str_of(o, "event"), "request");

    l.len = 0;
    l.s[0] = '\0';
    put_head(&l, o);
    cJSON_ArrayForEach(item, o)
        if (item->string && !in_head(item->string, request))
            put_field(&l, item);
    if (l.len >= sizeof(l.s) - 1)
        l.len = sizeof(l.s) - 2; /* cut: the newline still ends the line */
    l.s[l.len++] = '\n';
    write_all(l.s, l.len);
}

/* ---- JSON lines ---------------------------------------------------------------------------- */

/* Every string of the tree as valid UTF-8 (U+FFFD for each bad byte), so that a strict collector
 * takes the line whatever a client sent. A string whose repair finds no memory is emptied. */
static void repair_strings(cJSON *o)
{
    cJSON *item;
    char *fixed;
    int oom;

    cJSON_ArrayForEach(item, o)
    {
        if (cJSON_IsString(item) && item->valuestring) {
            if ((fixed = utf8_repair(item->valuestring, &oom)) || oom)
                cJSON_SetValuestring(item, fixed ? fixed : "");
            free(fixed);
        } else if (cJSON_IsObject(item) || cJSON_IsArray(item)) {
            repair_strings(item);
        }
    }
}

void log_end(cJSON *obj)
{
    char *text;
    size_t len;

    if (obj && !line_enabled(str_of(obj, "level"))) {
        cJSON_Delete(obj);
        return;
    }
    repair_strings(obj);
    if (obj && current_format() == LOG_TEXT) {
        write_text(obj);
        cJSON_Delete(obj);
        return;
    }
    text = obj ? cJSON_PrintUnformatted(obj) : NULL;
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
    cJSON *o;

    if (!line_enabled(level))
        return;
    o = log_begin(level);
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

enum log_level log_request_level(int status, int capacity, int probe)
{
    if (status >= 500 && !capacity)
        return LOG_ERROR;
    if (probe)
        return LOG_DEBUG;
    return capacity ? LOG_WARN : LOG_INFO;
}

void log_request(const struct log_request *r)
{
    cJSON *o, *ms;
    char size[32];

    if (!log_enabled(r->level))
        return;
    o = log_begin(log_level_name(r->level));
    cJSON_AddStringToObject(o, "event", "request");
    add_str(o, "request_id", r->request_id);
    add_str(o, "trace_id", r->trace_id);
    add_str(o, "span_id", r->span_id);
    add_str(o, "parent_id", r->parent_id);
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
    add_str(o, "backend", r->backend);
    if (r->device >= 0)
        cJSON_AddNumberToObject(o, "device", r->device);
    add_str(o, "error", r->error);
    if (r->t && (ms = cJSON_AddObjectToObject(o, "ms")))
        result_times_json(ms, r->t, RESULT_TIMES_LOG);
    log_end(o);
}
