/* metrics.c — the counters behind GET /metrics; one mutex, rendered on demand. */
#include "ops/metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "errors.h"
#include "filter.h"

#define NBUCKETS 17
static const double bucket_le[NBUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                           0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0, 30.0};

#define MAX_STATUS 600
#define NREASONS 12
static const int reason_codes[NREASONS] = {EDGED_E_BODY_TOO_LARGE, EDGED_E_IMAGE_TOO_LARGE, EDGED_E_QUEUE_FULL,
                                           EDGED_E_DEADLINE,       EDGED_E_UNAVAILABLE,     EDGED_E_NOMEM,
                                           EDGED_E_GPU_OOM,        EDGED_E_GPU_FATAL,       EDGED_E_UNAUTHORIZED,
                                           EDGED_E_CLIENT_GONE,    EDGED_E_TOO_COSTLY,      EDGED_E_MEMORY_BUDGET};

struct histogram {
    uint64_t bucket[NBUCKETS]; /* non-cumulative; summed when rendered */
    uint64_t count;
    double sum;
};

/* The backend label of a filter request: the side its job was given to. */
enum req_backend { RB_CPU, RB_GPU, RB_ALL, RB_NONE, RB_COUNT };
static const char *const backend_label[RB_COUNT] = {"cpu", "gpu", "all", "none"};
#define NFILTER_LABELS (FILTER_COUNT + 1) /* the last one is "other" */
/* (filter, backend, code) triples seen; a few dozen in practice, the bound keeps memory fixed
 * (a triple beyond it is still observed by the duration histogram). */
#define MAX_FILTER_CODES 1024
/* Status classes 1xx..5xx by status / 100; 2xx, 4xx and 5xx are exported from the start. */
#define NCLASSES 6
#define CLASS_SHOWN(c) ((c) == 2 || (c) == 4 || (c) == 5)

struct filter_code {
    uint16_t filter, backend, code;
    uint64_t n;
};

struct metrics {
    pthread_mutex_t mu;
    struct metrics_build build;
    uint64_t accepted, succeeded, in_flight;
    uint64_t failed[NCLASSES];
    uint64_t by_status[MAX_STATUS];
    const char *routes[METRICS_MAX_ROUTES];
    int nroutes;
    uint64_t by_route[METRICS_MAX_ROUTES + 1][NCLASSES]; /* the last row: "other" */
    uint64_t rejections[NREASONS];
    struct histogram queue_wait, stage[RESULT_STAGE_COUNT]; /* EDGED_STAGES order */
    struct histogram duration[NFILTER_LABELS][RB_COUNT];
    struct filter_code by_code[MAX_FILTER_CODES];
    int ncodes;
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

void metrics_add_route(struct metrics *m, const char *path)
{
    pthread_mutex_lock(&m->mu);
    if (m->nroutes < METRICS_MAX_ROUTES)
        m->routes[m->nroutes++] = path;
    pthread_mutex_unlock(&m->mu);
}

/* The row of route in by_route: its declared index, else the "other" row. */
static int route_row(const struct metrics *m, const char *route)
{
    for (int i = 0; route && i < m->nroutes; i++)
        if (!strcmp(m->routes[i], route))
            return i;
    return METRICS_MAX_ROUTES;
}

/* A status as counted: 0 (lost, or no HTTP status) is 499, past the table 500. */
static int status_counted(int status) { return status < 100 ? 499 : status >= MAX_STATUS ? 500 : status; }

void metrics_request_begin(struct metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->accepted++;
    m->in_flight++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_request_end(struct metrics *m, const char *route, int status)
{
    int c;

    status = status_counted(status);
    c = status / 100;
    pthread_mutex_lock(&m->mu);
    m->by_status[status]++;
    m->by_route[route_row(m, route)][c]++;
    if (c == 2)
        m->succeeded++;
    else
        m->failed[c]++;
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

static int backend_of(const char *backend)
{
    for (int b = 0; backend && b < RB_NONE; b++)
        if (!strcmp(backend, backend_label[b]))
            return b;
    return RB_NONE;
}

void metrics_filter_request(struct metrics *m, const char *filter, const char *backend, int status, double seconds)
{
    int f = filter ? filter_from_name(filter) : -1, b = backend_of(backend), i;

    f = f < 0 ? FILTER_COUNT : f;
    status = status_counted(status);
    pthread_mutex_lock(&m->mu);
    observe(&m->duration[f][b], seconds);
    for (i = 0; i < m->ncodes; i++)
        if (m->by_code[i].filter == f && m->by_code[i].backend == b && m->by_code[i].code == status)
            break;
    if (i == m->ncodes && i < MAX_FILTER_CODES)
        m->by_code[m->ncodes++] = (struct filter_code){(uint16_t)f, (uint16_t)b, (uint16_t)status, 0};
    if (i < m->ncodes)
        m->by_code[i].n++;
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
        char plain[96];
        snprintf(plain, sizeof(plain), "%.*s", (int)strlen(label) - 1, label); /* drop the comma */
        emit(t, "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", name, plain, h->sum, name, plain,
             (unsigned long long)h->count);
    } else {
        emit(t, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
    }
}

static const char *const class_label[NCLASSES] = {"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"};

static void emit_routes(struct text *t, const struct metrics *m)
{
    emit(t, "# HELP edged_http_requests_total Requests answered, by route (the route table's path; other: no "
            "route) and status class (code: 2xx, 4xx, 5xx; a connection lost before the answer counts as 4xx).\n"
            "# TYPE edged_http_requests_total counter\n");
    for (int i = 0; i <= METRICS_MAX_ROUTES; i++) {
        if (i < METRICS_MAX_ROUTES && i >= m->nroutes)
            continue;
        for (int c = 1; c < NCLASSES; c++)
            if (CLASS_SHOWN(c) || m->by_route[i][c])
                emit(t, "edged_http_requests_total{route=\"%s\",code=\"%s\"} %llu\n",
                     i < METRICS_MAX_ROUTES ? m->routes[i] : "other", class_label[c],
                     (unsigned long long)m->by_route[i][c]);
    }
}

static void emit_counters(struct text *t, const struct metrics *m)
{
    emit(t, "# HELP edged_requests_total Requests answered, by HTTP status (499: connection lost first).\n"
            "# TYPE edged_requests_total counter\n");
    for (int s = 0; s < MAX_STATUS; s++)
        if (m->by_status[s])
            emit(t, "edged_requests_total{code=\"%d\"} %llu\n", s, (unsigned long long)m->by_status[s]);
    emit_routes(t, m);
    emit(t, "# HELP edged_requests_accepted_total Requests read (headers complete).\n"
            "# TYPE edged_requests_accepted_total counter\nedged_requests_accepted_total %llu\n"
            "# HELP edged_requests_succeeded_total Requests answered 2xx.\n"
            "# TYPE edged_requests_succeeded_total counter\nedged_requests_succeeded_total %llu\n"
            "# HELP edged_requests_failed_total Requests answered otherwise, by status class: 4xx the client's "
            "errors (and connections lost first), 5xx the server's.\n"
            "# TYPE edged_requests_failed_total counter\n",
         (unsigned long long)m->accepted, (unsigned long long)m->succeeded);
    for (int c = 1; c < NCLASSES; c++)
        if (c != 2 && (CLASS_SHOWN(c) || m->failed[c]))
            emit(t, "edged_requests_failed_total{code=\"%s\"} %llu\n", class_label[c], (unsigned long long)m->failed[c]);
    emit(t, "# HELP edged_requests_in_flight Requests read but not answered yet.\n"
            "# TYPE edged_requests_in_flight gauge\nedged_requests_in_flight %llu\n",
         (unsigned long long)m->in_flight);
    emit(t, "# HELP edged_rejections_total Work refused by a limit, by reason.\n"
            "# TYPE edged_rejections_total counter\n");
    for (int i = 0; i < NREASONS; i++)
        emit(t, "edged_rejections_total{reason=\"%s\"} %llu\n", edged_err_name(reason_codes[i]),
             (unsigned long long)m->rejections[i]);
}

static const char *filter_label(int f) { return f < FILTER_COUNT ? filter_name((enum filter_id)f) : "other"; }

static void emit_filter_requests(struct text *t, const struct metrics *m)
{
    char label[96];

    emit(t, "# HELP edged_filter_requests_total Requests that named a filter, by filter, the backend their job "
            "was given to (cpu, gpu; all: compare; none: refused before a job was) and HTTP status.\n"
            "# TYPE edged_filter_requests_total counter\n");
    for (int i = 0; i < m->ncodes; i++) {
        const struct filter_code *c = &m->by_code[i];
        emit(t, "edged_filter_requests_total{filter=\"%s\",backend=\"%s\",code=\"%d\"} %llu\n",
             filter_label(c->filter), backend_label[c->backend], c->code, (unsigned long long)c->n);
    }
    emit(t, "# HELP edged_request_duration_seconds Server time of requests that named a filter, from the "
            "first byte to the answer, by filter and backend.\n"
            "# TYPE edged_request_duration_seconds histogram\n");
    for (int f = 0; f < NFILTER_LABELS; f++)
        for (int b = 0; b < RB_COUNT; b++) {
            if (!m->duration[f][b].count)
                continue;
            snprintf(label, sizeof(label), "filter=\"%s\",backend=\"%s\",", filter_label(f), backend_label[b]);
            emit_histogram(t, "edged_request_duration_seconds", label, &m->duration[f][b]);
        }
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

/* Seconds since the epoch at which the system booted (btime of /proc/stat); 0 if unknown. */
static double boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    double bt = 0.0;

    if (!f)
        return 0.0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "btime %lf", &bt) == 1)
            break;
    fclose(f);
    return bt;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* The process_* metrics that Prometheus client libraries export, from /proc/self (Linux). Nothing
 * is written when /proc cannot be read. */
static void emit_process(struct text *t)
{
    FILE *f = fopen("/proc/self/stat", "r");
    char buf[1024], *p;
    unsigned long utime, stime, vsize;
    unsigned long long start;
    long threads, rss, tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    struct rlimit rl;
    size_t n;

    if (!f)
        return;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name (field 2) may hold spaces and parentheses: parse from the last ')' */
    if (!(p = strrchr(buf, ')')) || tick <= 0 ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %ld %*d %llu %lu %ld",
               &utime, &stime, &threads, &start, &vsize, &rss) != 6)
        return;
    emit(t, "# HELP process_cpu_seconds_total User and system CPU time of the process.\n"
            "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
            "# HELP process_resident_memory_bytes Resident memory size.\n"
            "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %lld\n"
            "# HELP process_virtual_memory_bytes Virtual memory size.\n"
            "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %lu\n"
            "# HELP process_threads Threads of the process.\n# TYPE process_threads gauge\nprocess_threads %ld\n"
            "# HELP process_start_time_seconds Start time of the process since the epoch.\n"
            "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n",
         (double)(utime + stime) / (double)tick, (long long)rss * page, vsize, threads,
         boot_time() + (double)start / (double)tick);
    if ((n = (size_t)open_fds()) != (size_t)-1)
        emit(t, "# HELP process_open_fds Open file descriptors.\n# TYPE process_open_fds gauge\nprocess_open_fds %zu\n",
             n);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        emit(t, "# HELP process_max_fds The file descriptor limit (ulimit -n).\n# TYPE process_max_fds gauge\n"
                "process_max_fds %llu\n",
             (unsigned long long)rl.rlim_cur);
}

/* The per-device families of one sample per device (labelled device only). */
enum dev_series { DEV_BUSY, DEV_JOBS, DEV_RETRIED, DEV_MEMORY, DEV_OUTSTANDING, DEV_SERIES };
static const struct {
    const char *name, *type, *help;
    int decimals;
} dev_family[DEV_SERIES] = {
    {"edged_gpu_device_busy_seconds_total", "counter",
     "Time the device had at least one job (rate() of it: the share of time it was busy).", 6},
    {"edged_gpu_device_jobs_total", "counter", "Jobs completed on the device.", 0},
    {"edged_gpu_device_retried_total", "counter",
     "Jobs the device held when it failed, put back for another device.", 0},
    {"edged_gpu_device_memory_used_bytes", "gauge", "Device memory held by the device's context.", 0},
    {"edged_gpu_device_outstanding_pixels", "gauge",
     "Pixels of the jobs the device holds now (the queue gives a job to the device with the fewest).", 0},
};

static double dev_value(const struct metrics_device *d, enum dev_series s)
{
    switch (s) {
    case DEV_BUSY:
        return d->busy_seconds;
    case DEV_JOBS:
        return (double)d->jobs;
    case DEV_RETRIED:
        return (double)d->retried;
    case DEV_MEMORY:
        return (double)d->memory_used;
    case DEV_OUTSTANDING:
        return (double)d->outstanding_pixels;
    default:
        return 0.0;
    }
}

/* edged_gpu_device_stream_seconds_total{device,phase}: the time jobs held each device's streams.
 * Over edged_gpu_device_jobs_total, a job's hold by phase; when every stream is busy, the phase
 * that grows is the one that bounds the device's rate (jobs a second = streams over the hold). */
static void emit_stream_hold(struct text *t, const struct metrics_gauges *g)
{
    static const char *const phase_label[METRICS_STREAM_PHASES] = {"pending", "device", "handoff"};

    emit(t,
         "# HELP edged_gpu_device_stream_seconds_total Time GPU jobs held the device's streams, summed over "
         "jobs, by phase: pending (in a batch waiting for the batched decode of its compressed input), "
         "device (from the submit until the worker saw the job finished), handoff (from then until the "
         "waiter copied the result out and freed the stream).\n"
         "# TYPE edged_gpu_device_stream_seconds_total counter\n");
    for (int i = 0; i < g->ndevices; i++)
        for (int p = 0; p < METRICS_STREAM_PHASES; p++)
            emit(t, "edged_gpu_device_stream_seconds_total{device=\"%d\",phase=\"%s\"} %.6f\n",
                 g->devices[i].device, phase_label[p], g->devices[i].stream_seconds[p]);
}

/* The devices' series, labelled with the CUDA device number. Every family is declared even
 * without a device (the CPU backend), so that its name and type are the same on every server. */
static void emit_devices(struct text *t, const struct metrics_gauges *g)
{
    static const char *const format_label[METRICS_BATCH_FORMATS] = {"jpeg", "png"};
    static const struct {
        const char *name, *help;
    } batch_family[2] = {
        {"edged_gpu_device_batches_total", "Batched decodes of compressed input on the device, by format."},
        {"edged_gpu_device_batch_jobs_total", "Jobs in the device's batched decodes, by format (over "
                                              "edged_gpu_device_batches_total: the mean batch size)."},
    };
    char name[2 * METRICS_DEVICE_NAME_LEN];
    int up = 0;

    for (int i = 0; i < g->ndevices; i++)
        up += g->devices[i].up != 0;
    emit(t, "# HELP edged_gpu_devices GPU devices by state: up (serving) or fenced (failed; the others serve on).\n"
            "# TYPE edged_gpu_devices gauge\nedged_gpu_devices{state=\"up\"} %d\n"
            "edged_gpu_devices{state=\"fenced\"} %d\n"
            "# HELP edged_gpu_device_up 1 while the device serves, 0 once it is fenced, by device and name.\n"
            "# TYPE edged_gpu_device_up gauge\n",
         up, g->ndevices - up);
    for (int i = 0; i < g->ndevices; i++) {
        name[0] = '\0'; /* the driver's: escaped as the label format wants */
        result_escape(name, sizeof(name), 0, g->devices[i].name, 0, RESULT_ESCAPE_LABEL);
        emit(t, "edged_gpu_device_up{device=\"%d\",name=\"%s\"} %d\n", g->devices[i].device, name,
             g->devices[i].up != 0);
    }
    for (int s = 0; s < DEV_SERIES; s++) {
        emit(t, "# HELP %s %s\n# TYPE %s %s\n", dev_family[s].name, dev_family[s].help, dev_family[s].name,
             dev_family[s].type);
        for (int i = 0; i < g->ndevices; i++)
            emit(t, "%s{device=\"%d\"} %.*f\n", dev_family[s].name, g->devices[i].device,
                 dev_family[s].decimals, dev_value(&g->devices[i], (enum dev_series)s));
    }
    for (int k = 0; k < 2; k++) {
        emit(t, "# HELP %s %s\n# TYPE %s counter\n", batch_family[k].name, batch_family[k].help,
             batch_family[k].name);
        for (int i = 0; i < g->ndevices; i++)
            for (int f = 0; f < METRICS_BATCH_FORMATS; f++)
                emit(t, "%s{device=\"%d\",format=\"%s\"} %llu\n", batch_family[k].name, g->devices[i].device,
                     format_label[f], k ? g->devices[i].batch_jobs[f] : g->devices[i].batches[f]);
    }
    emit_stream_hold(t, g);
}

char *metrics_render(struct metrics *m, const struct metrics_gauges *g, size_t *len)
{
    struct text t = {malloc(16384), 0, 16384, 0};
    char dev[256];

    if (!t.s)
        return NULL;
    pthread_mutex_lock(&m->mu);
    emit_counters(&t, m);
    emit_filter_requests(&t, m);
    emit_histograms(&t, m);
    pthread_mutex_unlock(&m->mu);
    emit(&t, "# HELP edged_queue_depth Jobs waiting for a worker.\n# TYPE edged_queue_depth gauge\n"
             "edged_queue_depth %d\n"
             "# HELP edged_queue_capacity The queue bound (--queue-depth).\n# TYPE edged_queue_capacity gauge\n"
             "edged_queue_capacity %d\n"
             "# HELP edged_ready 1 when /readyz answers 200.\n# TYPE edged_ready gauge\nedged_ready %d\n"
             "# HELP edged_gpu_fatal 1 after a fatal GPU error on the last device serving (the process exits for a "
             "restart within seconds).\n"
             "# TYPE edged_gpu_fatal gauge\nedged_gpu_fatal %d\n"
             "# HELP edged_gpu_memory_used_bytes Device memory held by the GPU contexts, summed over the devices.\n"
             "# TYPE edged_gpu_memory_used_bytes gauge\nedged_gpu_memory_used_bytes %zu\n"
             "# HELP edged_gpu_busy_seconds_total Time the GPU workers had at least one job on their device, "
             "summed over the devices (rate() of it: the share of time one GPU was busy, up to the number of "
             "GPUs; 0 on the CPU backend).\n"
             "# TYPE edged_gpu_busy_seconds_total counter\nedged_gpu_busy_seconds_total %.6f\n",
         g->queue_depth, g->queue_capacity, g->ready, g->gpu_fatal, g->gpu_memory_used, g->gpu_busy_seconds);
    emit_devices(&t, g);
    emit(&t, "# HELP edged_memory_budget_bytes Bytes reserved by requests (bodies, images, planes, output).\n"
             "# TYPE edged_memory_budget_bytes gauge\nedged_memory_budget_bytes %zu\n"
             "# HELP edged_memory_budget_limit_bytes The memory budget (--max-memory-mb).\n"
             "# TYPE edged_memory_budget_limit_bytes gauge\nedged_memory_budget_limit_bytes %zu\n",
         g->budget_used, g->budget_limit);
    emit(&t, "# HELP edged_jpeg_gpu_total JPEGs decoded or encoded on the device with nvJPEG.\n"
             "# TYPE edged_jpeg_gpu_total counter\nedged_jpeg_gpu_total{op=\"decode\"} %llu\n"
             "edged_jpeg_gpu_total{op=\"encode\"} %llu\n"
             "# HELP edged_jpeg_cpu_fallback_total JPEGs of the GPU lane that nvJPEG refused, done on the CPU.\n"
             "# TYPE edged_jpeg_cpu_fallback_total counter\n"
             "edged_jpeg_cpu_fallback_total{reason=\"decode_refused\"} %llu\n"
             "edged_jpeg_cpu_fallback_total{reason=\"encode_refused\"} %llu\n",
         g->jpeg_gpu_decoded, g->jpeg_gpu_encoded, g->jpeg_fallback_decode, g->jpeg_fallback_encode);
    emit(&t, "# HELP edged_png_gpu_total PNGs decoded, and PNG answers encoded, on the device.\n"
             "# TYPE edged_png_gpu_total counter\nedged_png_gpu_total{op=\"decode\"} %llu\n"
             "edged_png_gpu_total{op=\"encode\"} %llu\n"
             "# HELP edged_png_cpu_fallback_total PNGs of the GPU lane done on the CPU instead: input the device "
             "refused at submit, declined when it ran or left while it was busy, answers it refused to encode.\n"
             "# TYPE edged_png_cpu_fallback_total counter\n"
             "edged_png_cpu_fallback_total{reason=\"decode_refused\"} %llu\n"
             "edged_png_cpu_fallback_total{reason=\"decode_declined\"} %llu\n"
             "edged_png_cpu_fallback_total{reason=\"decode_busy\"} %llu\n"
             "edged_png_cpu_fallback_total{reason=\"encode_refused\"} %llu\n",
         g->png_gpu_decoded, g->png_gpu_encoded, g->png_cpu_refused, g->png_cpu_declined, g->png_cpu_busy,
         g->png_fallback_encode);
    emit(&t, "# HELP edged_png_stream_total PNGs taken for the device decode, by where their zlib stream "
             "waits: pinned host memory (uploaded as it is) or pageable (staged by the GPU worker).\n"
             "# TYPE edged_png_stream_total counter\nedged_png_stream_total{memory=\"pinned\"} %llu\n"
             "edged_png_stream_total{memory=\"pageable\"} %llu\n"
             "# HELP edged_pinned_host_bytes Pinned host memory of the upload pool, given out and kept free.\n"
             "# TYPE edged_pinned_host_bytes gauge\nedged_pinned_host_bytes{state=\"in_use\"} %zu\n"
             "edged_pinned_host_bytes{state=\"free\"} %zu\n"
             "# HELP edged_pinned_host_refused_total Requests the pinned upload pool answered without a "
             "buffer (its cap reached, or the allocation failed).\n"
             "# TYPE edged_pinned_host_refused_total counter\nedged_pinned_host_refused_total %llu\n",
         g->png_z_pinned, g->png_z_unpinned, g->pinned_in_use_bytes, g->pinned_free_bytes, g->pinned_refused);
    emit(&t, "# HELP edged_pixel_input_total GPU jobs whose input the CPU decoded on the request's "
             "thread, by where their pixels wait: pinned host memory (uploaded as they are) or pageable "
             "(staged by the GPU worker).\n"
             "# TYPE edged_pixel_input_total counter\nedged_pixel_input_total{memory=\"pinned\"} %llu\n"
             "edged_pixel_input_total{memory=\"pageable\"} %llu\n",
         g->px_pinned, g->px_staged);
    dev[0] = '\0'; /* from config and the device name: escaped as the label format wants */
    result_escape(dev, sizeof(dev), 0, m->build.device, 0, RESULT_ESCAPE_LABEL);
    emit(&t, "# HELP edged_build_info Build and runtime identity.\n# TYPE edged_build_info gauge\n"
             "edged_build_info{version=\"%s\",backend=\"%s\",device=\"%s\"} 1\n",
         m->build.version, m->build.backend, dev);
    emit_process(&t);
    if (t.oom) {
        free(t.s);
        return NULL;
    }
    *len = t.len;
    return t.s;
}
