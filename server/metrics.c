/* metrics.c — the counters behind GET /metrics; one mutex, rendered on demand. */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

#define NBUCKETS 17
static const double bucket_le[NBUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                           0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0, 30.0};

#define MAX_STATUS 600
#define NREASONS 9
static const int reason_codes[NREASONS] = {EDGED_E_BODY_TOO_LARGE, EDGED_E_IMAGE_TOO_LARGE, EDGED_E_QUEUE_FULL,
                                           EDGED_E_DEADLINE,       EDGED_E_UNAVAILABLE,     EDGED_E_NOMEM,
                                           EDGED_E_GPU_OOM,        EDGED_E_GPU_FATAL,       EDGED_E_UNAUTHORIZED};

struct histogram {
    uint64_t bucket[NBUCKETS]; /* non-cumulative; summed when rendered */
    uint64_t count;
    double sum;
};

struct metrics {
    pthread_mutex_t mu;
    struct metrics_build build;
    uint64_t accepted, succeeded, failed, in_flight;
    uint64_t by_status[MAX_STATUS];
    uint64_t rejections[NREASONS];
    struct histogram queue_wait, stage[RESULT_STAGE_COUNT]; /* EDGED_STAGES order */
};

int metrics_new(struct metrics **out, const struct metrics_build *b, char *err)
{
    struct metrics *m = calloc(1, sizeof(*m));

    *out = NULL;
    if (!m)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate metrics");
    pthread_mutex_init(&m->mu, NULL);
    m->build = *b;
    *out = m;
    return 0;
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void metrics_request_begin(struct metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->accepted++;
    m->in_flight++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_request_end(struct metrics *m, int status)
{
    if (status <= 0)
        status = 499;
    if (status >= MAX_STATUS)
        status = 500;
    pthread_mutex_lock(&m->mu);
    m->by_status[status]++;
    if (status >= 200 && status < 300)
        m->succeeded++;
    else
        m->failed++;
    m->in_flight--;
    pthread_mutex_unlock(&m->mu);
}

void metrics_reject(struct metrics *m, int code)
{
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < NREASONS; i++)
        if (reason_codes[i] == code)
            m->rejections[i]++;
    pthread_mutex_unlock(&m->mu);
}

static void observe(struct histogram *h, double seconds)
{
    int i = 0;

    while (i < NBUCKETS && seconds > bucket_le[i])
        i++;
    if (i < NBUCKETS)
        h->bucket[i]++;
    h->count++;
    h->sum += seconds;
}

void metrics_stages(struct metrics *m, const struct result_times *t)
{
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < RESULT_STAGE_COUNT; i++)
        if (result_stage_ms(t, i) > 0.0)
            observe(&m->stage[i], result_stage_ms(t, i) / 1e3);
    pthread_mutex_unlock(&m->mu);
}

void metrics_queue_wait(struct metrics *m, double ms)
{
    pthread_mutex_lock(&m->mu);
    observe(&m->queue_wait, ms / 1e3);
    pthread_mutex_unlock(&m->mu);
}

/* A growing text buffer; on allocation failure it stops growing and remembers the failure. */
struct text {
    char *s;
    size_t len, cap;
    int oom;
};

static void emit(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        if (t->oom)
            return;
        va_start(ap, fmt);
        n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        char *grown = realloc(t->s, t->cap * 2);
        if (!grown) {
            t->oom = 1;
            return;
        }
        t->s = grown;
        t->cap *= 2;
    }
}

/* label is "" or `stage="decode",` (with the trailing comma, inside the braces). */
static void emit_histogram(struct text *t, const char *name, const char *label, const struct histogram *h)
{
    uint64_t cum = 0;

    for (int i = 0; i < NBUCKETS; i++) {
        cum += h->bucket[i];
        emit(t, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, bucket_le[i], (unsigned long long)cum);
    }
    emit(t, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)h->count);
    if (*label) {
        char plain[64];
        snprintf(plain, sizeof(plain), "%.*s", (int)strlen(label) - 1, label); /* drop the comma */
        emit(t, "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", name, plain, h->sum, name, plain,
             (unsigned long long)h->count);
    } else {
        emit(t, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
    }
}

static void emit_counters(struct text *t, const struct metrics *m)
{
    emit(t, "# HELP edged_requests_total Requests answered, by HTTP status (499: connection lost first).\n"
            "# TYPE edged_requests_total counter\n");
    for (int s = 0; s < MAX_STATUS; s++)
        if (m->by_status[s])
            emit(t, "edged_requests_total{code=\"%d\"} %llu\n", s, (unsigned long long)m->by_status[s]);
    emit(t, "# HELP edged_requests_accepted_total Requests read (headers complete).\n"
            "# TYPE edged_requests_accepted_total counter\nedged_requests_accepted_total %llu\n"
            "# HELP edged_requests_succeeded_total Requests answered 2xx.\n"
            "# TYPE edged_requests_succeeded_total counter\nedged_requests_succeeded_total %llu\n"
            "# HELP edged_requests_failed_total Requests answered otherwise (or lost).\n"
            "# TYPE edged_requests_failed_total counter\nedged_requests_failed_total %llu\n"
            "# HELP edged_requests_in_flight Requests read but not answered yet.\n"
            "# TYPE edged_requests_in_flight gauge\nedged_requests_in_flight %llu\n",
         (unsigned long long)m->accepted, (unsigned long long)m->succeeded, (unsigned long long)m->failed,
         (unsigned long long)m->in_flight);
    emit(t, "# HELP edged_rejections_total Work refused by a limit, by reason.\n"
            "# TYPE edged_rejections_total counter\n");
    for (int i = 0; i < NREASONS; i++)
        emit(t, "edged_rejections_total{reason=\"%s\"} %llu\n", edged_err_name(reason_codes[i]),
             (unsigned long long)m->rejections[i]);
}

static void emit_histograms(struct text *t, const struct metrics *m)
{
    char label[64];

    emit(t, "# HELP edged_queue_wait_seconds Time jobs waited for a worker.\n"
            "# TYPE edged_queue_wait_seconds histogram\n");
    emit_histogram(t, "edged_queue_wait_seconds", "", &m->queue_wait);
    emit(t, "# HELP edged_stage_seconds Time of each stage of served requests.\n"
            "# TYPE edged_stage_seconds histogram\n");
    for (int i = 0; i < RESULT_STAGE_COUNT; i++) {
        snprintf(label, sizeof(label), "stage=\"%s\",", result_stage_name(i));
        emit_histogram(t, "edged_stage_seconds", label, &m->stage[i]);
    }
}

char *metrics_render(struct metrics *m, const struct metrics_gauges *g, size_t *len)
{
    struct text t = {malloc(16384), 0, 16384, 0};
    char dev[256];

    if (!t.s)
        return NULL;
    pthread_mutex_lock(&m->mu);
    emit_counters(&t, m);
    emit_histograms(&t, m);
    pthread_mutex_unlock(&m->mu);
    emit(&t, "# HELP edged_queue_depth Jobs waiting for a worker.\n# TYPE edged_queue_depth gauge\n"
             "edged_queue_depth %d\n"
             "# HELP edged_queue_capacity The queue bound (--queue-depth).\n# TYPE edged_queue_capacity gauge\n"
             "edged_queue_capacity %d\n"
             "# HELP edged_ready 1 when /readyz answers 200.\n# TYPE edged_ready gauge\nedged_ready %d\n"
             "# HELP edged_gpu_memory_used_bytes Device memory held by the GPU context.\n"
             "# TYPE edged_gpu_memory_used_bytes gauge\nedged_gpu_memory_used_bytes %zu\n",
         g->queue_depth, g->queue_capacity, g->ready, g->gpu_memory_used);
    dev[0] = '\0'; /* from config and the device name: escaped as the label format wants */
    result_escape(dev, sizeof(dev), 0, m->build.device, 0, RESULT_ESCAPE_LABEL);
    emit(&t, "# HELP edged_build_info Build and runtime identity.\n# TYPE edged_build_info gauge\n"
             "edged_build_info{version=\"%s\",backend=\"%s\",device=\"%s\"} 1\n",
         m->build.version, m->build.backend, dev);
    if (t.oom) {
        free(t.s);
        return NULL;
    }
    *len = t.len;
    return t.s;
}
