/* config.c — one table of options drives defaults, environment, flags, usage and the start line. */
#include "ops/config.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/auth.h"
#include "errors.h"
#include "ops/log.h"
#include "ops/opts.h"
#include "tuning.h"

/* OPT_SECRET: a string read from the environment only (no flag: argv is visible in ps) and
 * logged as a count, never as its value. */
enum opt_kind { OPT_INT, OPT_LL, OPT_STR, OPT_BACKEND, OPT_SECRET, OPT_LOG_FORMAT, OPT_LOG_LEVEL };

struct opt {
    const char *flag, *env;
    enum opt_kind kind;
    size_t off, size;
    long long lo, hi;
    const char *dflt, *help;
};

#define O(field) offsetof(struct serve_config, field), sizeof(((struct serve_config *)0)->field)
static const struct opt opts[] = {
    {"host", "EDGED_HOST", OPT_STR, O(host), 0, 0, "0.0.0.0", "bind address (IPv4)"},
    {"port", "EDGED_PORT", OPT_INT, O(port), 1, 65535, "8080", "TCP port"},
    {"metrics-listen", "EDGED_METRICS_LISTEN", OPT_STR, O(metrics_listen), 0, 0, "",
     "ADDR:PORT of a second listener that serves only /metrics, /healthz and /readyz (GET, HEAD) for "
     "probes and scrapes, with connections of its own that no API client can take (empty = off)"},
    {"backend", "EDGED_BACKEND", OPT_BACKEND, O(backend), 0, 0, "auto",
     "auto (GPU when one works, else CPU), gpu (not ready without one) or cpu"},
    {"max-body-mb", "EDGED_MAX_BODY_MB", OPT_INT, O(max_body_mb), 1, 4096, "64",
     "request body cap in MiB (413 above; decided from Content-Length, or while streaming chunked)"},
    {"max-pixels", "EDGED_MAX_PIXELS", OPT_LL, O(max_pixels), 1, 2147483648LL, "50000000",
     "image width*height cap (422 above, decided from the image header before decoding)"},
    {"large-pixels", "EDGED_LARGE_PIXELS", OPT_LL, O(large_pixels), 1, 2147483648LL, "4000000",
     "an image with more pixels is large: large ones hold at most max(1, threads-1) codec slots and "
     "max(1, cpu-workers-1) CPU workers at once, so small requests are not starved"},
    {"max-side", "EDGED_MAX_SIDE", OPT_INT, O(max_side), 1, 65535, "32768", "image width and height cap (422)"},
    {"queue-depth", "EDGED_QUEUE_DEPTH", OPT_INT, O(queue_depth), 1, 100000, "64",
     "jobs waiting for a worker (429 with Retry-After when full)"},
    {"queue-deadline-ms", "EDGED_QUEUE_DEADLINE_MS", OPT_INT, O(queue_deadline_ms), 1, 3600000, "30000",
     "a job still queued after this is answered 504"},
    {"streams", "EDGED_STREAMS", OPT_INT, O(streams), 1, 32, "16",
     "CUDA streams of each GPU worker: jobs on its device at once, and the largest batch of JPEG decodes"},
    {"gpus", "EDGED_GPUS", OPT_STR, O(gpus), 0, 0, "all",
     "the GPUs to serve from: all (every device the process sees) or CUDA device numbers such as 0,2; one "
     "worker per device, one queue feeding the device with the least outstanding work"},
    {"threads", "EDGED_THREADS", OPT_INT, O(threads), 0, 1024, "0",
     "codec slots (image decodes and encodes at once) and the CPU compute threads, which the running "
     "CPU jobs share (0 = online cores)"},
    {"cpu-workers", "EDGED_CPU_WORKERS", OPT_INT, O(cpu_workers), 0, 64, "0",
     "CPU-backend jobs run at once; they share --threads: each stage of a job takes --threads divided by "
     "the CPU jobs running, at least 1 (0 = a quarter of the cores, at least 2)"},
    {"max-connections", "EDGED_MAX_CONNECTIONS", OPT_INT, O(max_connections), 1, 65536, "256",
     "concurrent connections (one thread each); 32 more are accepted for health, readiness and metrics, "
     "anything else on them is 503"},
    {"conn-timeout-s", "EDGED_CONN_TIMEOUT_S", OPT_INT, O(conn_timeout_s), 1, 3600, "30",
     "idle connection timeout (slow clients are cut)"},
    {"request-timeout-s", "EDGED_REQUEST_TIMEOUT_S", OPT_INT, O(request_timeout_s), 1, 3600, "60",
     "a request's headers and body must arrive within this (counted from the connection's start or its "
     "previous answer; slowloris and slow bodies are cut)"},
    {"drain-grace-ms", "EDGED_DRAIN_GRACE_MS", OPT_INT, O(drain_grace_ms), 0, 600000, "0",
     "after SIGTERM, keep accepting (answering 503) this long before closing the listener"},
    {"drain-timeout-s", "EDGED_DRAIN_TIMEOUT_S", OPT_INT, O(drain_timeout_s), 1, 3600, "60",
     "at shutdown, longest wait for requests in flight"},
    {"gpu-watchdog-ms", "EDGED_GPU_WATCHDOG_MS", OPT_INT, O(gpu_watchdog_ms), 100, 3600000, "60000",
     "a GPU job running longer means a stuck device: not ready, exit non-zero"},
    {"gpu-jpeg", "EDGED_GPU_JPEG", OPT_INT, O(gpu_jpeg), 0, 1, "1",
     "1: the GPU lane decodes JPEG input and encodes JPEG output with nvJPEG when built with it; 0: the "
     "CPU codec (libjpeg-turbo, bit-exact with it)"},
    {"gpu-png", "EDGED_GPU_PNG", OPT_INT, O(gpu_png), 0, 1, "1",
     "1: the GPU lane decodes the common PNG kinds and encodes PNG answers on the device (the same "
     "pixels as the CPU codec; answers close to the CPU encoder's fastest level in size), leaving input "
     "to the CPU decoder while the device's PNG backlog is long and the codec slots are free; 0: the "
     "CPU codec always"},
    {"gpu-png-backlog-mb", "EDGED_GPU_PNG_BACKLOG_MB", OPT_INT, O(gpu_png_backlog_mb), 1, 65536, "256",
     "MiB of compressed PNG input waiting for the device decoder past which a new PNG is decoded on the "
     "CPU while no request waits for a codec slot"},
    {"openapi", "EDGED_OPENAPI", OPT_STR, O(openapi), 0, 0, "",
     "serve this openapi.yaml file at /openapi.yaml instead of the copy built into the binary (empty = the "
     "built-in copy; a file that cannot be read makes /openapi.yaml answer 404)"},
    {"max-conn-per-ip", "EDGED_MAX_CONN_PER_IP", OPT_INT, O(max_conn_per_ip), 0, 65536, "64",
     "connections from one IP address at once (0 = no cap); past it only health, readiness and metrics "
     "are served, anything else is 429"},
    {"cors-origin", "EDGED_CORS_ORIGIN", OPT_STR, O(cors_origin), 0, 0, "",
     "CORS: the origin allowed (Access-Control-Allow-Origin, OPTIONS preflight); empty = CORS off"},
    {"api-keys", "EDGED_API_KEYS", OPT_SECRET, O(api_keys), 0, 0, "",
     "environment only: comma-separated API keys; requests need Authorization: Bearer KEY "
     "(health, readiness, metrics and the web page exempt); empty = no authentication"},
    {"log-format", "EDGED_LOG_FORMAT", OPT_LOG_FORMAT, O(log_format), 0, 0, "auto",
     "log lines on stderr: json (one object per line), text (readable, one line per event) or auto "
     "(text when stderr is a terminal, else json)"},
    {"log-level", "EDGED_LOG_LEVEL", OPT_LOG_LEVEL, O(log_level), 0, 0, "info",
     "lines under this level are dropped: debug (also probes and scrapes), info (requests), warn "
     "(refusals for capacity) or error (server errors)"},
    {"max-memory-mb", "EDGED_MAX_MEMORY_MB", OPT_INT, O(max_memory_mb), 0, 16777216, "0",
     "memory budget of requests in MiB: bodies as they arrive, decoded images, float planes and output are "
     "reserved before they are allocated; past it 503 memory_budget with Retry-After (0 = half of the "
     "cgroup memory limit, else of the machine's memory)"},
    {"max-job-cpu-s", "EDGED_MAX_JOB_CPU_S", OPT_INT, O(max_job_cpu_s), 1, 86400, "10",
     "a CPU job estimated (pixels x taps x variant) over this many CPU seconds is refused: 422 job_too_costly "
     "naming a cheaper variant"},
    {"job-timeout-s", "EDGED_JOB_TIMEOUT_S", OPT_INT, O(job_timeout_s), 1, 3600, "30",
     "a job running longer is cancelled (CPU loops stop, a GPU result is dropped): 504 deadline_exceeded"},
    {"min-body-rate-kb", "EDGED_MIN_BODY_RATE_KB", OPT_INT, O(min_body_rate_kb), 0, 1048576, "16",
     "a body still arriving must bring at least this many KiB a second over every 5 s from its headers on; a "
     "slower upload (a stalled one) is cut, giving back its memory budget (0 = no floor)"},
};
#undef O
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static const char *const backend_names[] = {"auto", "gpu", "cpu"};

const char *config_backend_name(enum backend_kind k) { return (unsigned)k < 3 ? backend_names[k] : "?"; }

int config_backend_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, backend_names[i]) == 0)
            return i;
    return -1;
}

/* Stores text into the field of o; `src` ("--port", "EDGED_PORT") names it in the message. */
static int opt_set(struct serve_config *cfg, const struct opt *o, const char *src, const char *text, char *err)
{
    char *field = (char *)cfg + o->off, *end;
    long long v;

    if (o->kind == OPT_STR || o->kind == OPT_SECRET) {
        if (strlen(text) >= o->size)
            return edged_fail(err, EDGED_E_USAGE, "%s: value longer than %zu bytes", src, o->size - 1);
        memcpy(field, text, strlen(text) + 1);
        return 0;
    }
    if (o->kind == OPT_BACKEND) {
        int k = config_backend_parse(text);
        if (k < 0)
            return edged_fail(err, EDGED_E_USAGE, "%s: '%s' is not auto, gpu or cpu", src, text);
        *(enum backend_kind *)(void *)field = (enum backend_kind)k;
        return 0;
    }
    if (o->kind == OPT_LOG_FORMAT || o->kind == OPT_LOG_LEVEL) {
        int f = o->kind == OPT_LOG_FORMAT ? log_format_parse(text) : log_level_parse(text);
        if (f < 0)
            return edged_fail(err, EDGED_E_USAGE, "%s: '%s' is not %s", src, text,
                              o->kind == OPT_LOG_FORMAT ? "auto, text or json" : "debug, info, warn or error");
        *(int *)(void *)field = f;
        return 0;
    }
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < o->lo || v > o->hi)
        return edged_fail(err, EDGED_E_USAGE, "%s: '%s' is not an integer in %lld..%lld", src, text, o->lo, o->hi);
    if (o->kind == OPT_LL)
        *(long long *)(void *)field = v;
    else
        *(int *)(void *)field = (int)v;
    return 0;
}

static int arg_set(void *app, int i, const char *val, char *err)
{
    char src[48];

    snprintf(src, sizeof(src), "--%s", opts[i].flag);
    return opt_set(app, &opts[i], src, val, err);
}

/* The flags are the table's rows, but for OPT_SECRET (environment only: argv is visible in ps). */
static int load_args(struct serve_config *cfg, int argc, char **argv, char *err)
{
    struct opts_spec specs[NOPTS];

    for (size_t i = 0; i < NOPTS; i++)
        specs[i] = (struct opts_spec){opts[i].kind == OPT_SECRET ? NULL : opts[i].flag, "V", opts[i].help};
    return opts_parse(argc, argv, specs, (int)NOPTS, arg_set, cfg, NULL, err);
}

/* Every EDGED_* variable is read even after a bad one, so that the log format a bad setting is
 * reported in is the one asked for; the first error is returned. */
static int load_env(struct serve_config *cfg, char *err)
{
    char msg[EDGED_ERR_LEN];
    const char *env;
    int rc, first = 0;

    for (size_t i = 0; i < NOPTS; i++)
        if ((env = getenv(opts[i].env)) && (rc = opt_set(cfg, &opts[i], opts[i].env, env, msg)) < 0 && !first) {
            first = rc;
            memcpy(err, msg, EDGED_ERR_LEN);
        }
    return first;
}

int config_listen_parse(const char *s, const char *what, char *host, size_t hostlen, int *port, char *err)
{
    const char *colon = strrchr(s, ':');
    struct in_addr addr;
    char *end;
    long p;

    if (!colon || (size_t)(colon - s) >= hostlen || colon[1] < '0' || colon[1] > '9')
        return edged_fail(err, EDGED_E_USAGE, "%s: '%.64s' is not ADDR:PORT (an IPv4 address and a port)", what, s);
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (inet_pton(AF_INET, host, &addr) != 1 || errno || end == colon + 1 || *end || p < 1 || p > 65535)
        return edged_fail(err, EDGED_E_USAGE, "%s: '%.64s' is not ADDR:PORT (an IPv4 address and a port)", what, s);
    *port = (int)p;
    return 0;
}

int config_gpus_parse(const char *s, const char *what, int *ids, int *n, char *err)
{
    const char *p = s;
    char *end;
    long v;

    *n = 0;
    if (strcmp(s, "all") == 0)
        return 0;
    for (;;) {
        errno = 0;
        v = strtol(p, &end, 10);
        if (end == p || *p == '-' || *p == '+' || errno || v > 63 || (*end && *end != ','))
            return edged_fail(err, EDGED_E_USAGE, "%s: '%.64s' is not 'all' or a list of CUDA device numbers "
                              "0..63 such as 0,2", what, s);
        for (int i = 0; i < *n; i++)
            if (ids[i] == (int)v)
                return edged_fail(err, EDGED_E_USAGE, "%s: device %ld is listed twice in '%.64s'", what, v, s);
        if (*n == CONFIG_MAX_GPUS)
            return edged_fail(err, EDGED_E_USAGE, "%s: more than %d devices in '%.64s'", what, CONFIG_MAX_GPUS, s);
        ids[(*n)++] = (int)v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* --metrics-listen: split, and not the API's own address. */
static int check_metrics_listen(struct serve_config *cfg, char *err)
{
    int rc;

    cfg->metrics_port = 0;
    if (!cfg->metrics_listen[0])
        return 0;
    if ((rc = config_listen_parse(cfg->metrics_listen, "--metrics-listen (EDGED_METRICS_LISTEN)", cfg->metrics_host, sizeof(cfg->metrics_host),
                                  &cfg->metrics_port, err)) < 0)
        return rc;
    if (cfg->metrics_port == cfg->port && (strcmp(cfg->metrics_host, cfg->host) == 0 ||
                                           strcmp(cfg->metrics_host, "0.0.0.0") == 0 || strcmp(cfg->host, "0.0.0.0") == 0))
        return edged_fail(err, EDGED_E_USAGE, "--metrics-listen (EDGED_METRICS_LISTEN): '%s' is the API's own "
                          "address (--host, --port): give another port", cfg->metrics_listen);
    return 0;
}

int config_load(struct serve_config *cfg, int argc, char **argv, char *err)
{
    struct in_addr addr;
    long cores;
    int rc;

    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < NOPTS; i++)
        if ((rc = opt_set(cfg, &opts[i], opts[i].flag, opts[i].dflt, err)) < 0)
            return rc;
    if ((rc = load_env(cfg, err)) < 0)
        return rc;
    if ((rc = load_args(cfg, argc, argv, err)) != 0)
        return rc;
    if (inet_pton(AF_INET, cfg->host, &addr) != 1)
        return edged_fail(err, EDGED_E_USAGE, "--host (EDGED_HOST): '%.64s' is not an IPv4 address in dotted form "
                          "(such as 0.0.0.0 or 127.0.0.1; names and IPv6 are not taken)", cfg->host);
    if ((rc = auth_keys_check(cfg->api_keys, NULL, err)) < 0 || (rc = check_metrics_listen(cfg, err)) < 0 ||
        (rc = config_gpus_parse(cfg->gpus, "--gpus (EDGED_GPUS)", cfg->gpu_ids, &cfg->ngpus, err)) < 0)
        return rc;
    for (const char *p = cfg->cors_origin; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return edged_fail(err, EDGED_E_USAGE, "--cors-origin (EDGED_CORS_ORIGIN): '%.64s' is not one origin "
                              "(visible ASCII, no spaces, such as https://app.example)", cfg->cors_origin);
    cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cfg->threads == 0)
        cfg->threads = cores > 0 ? (int)cores : 1;
    /* One job on every core scales badly on large images (a 2048x2048 edge job keeps about 8 of 16
     * cores busy): a few jobs at once keep the cores full; two at least, so a small job always finds
     * a worker beside a large one. */
    if (cfg->cpu_workers == 0)
        cfg->cpu_workers = cores >= 8 ? (int)(cores / 4) : 2;
    return 0;
}

int config_tuning_load(char *err)
{
    struct edged_tuning t;
    const char *env;

    tuning_defaults(&t);
    for (int i = 0; i < tuning_knob_count; i++)
        if ((env = getenv(tuning_knobs[i].env)) && *env && tuning_parse(&t, tuning_knobs[i].env, env, err) < 0)
            return EDGED_E_USAGE; /* a configuration error: exit 2 like a bad flag */
    tuning_set(&t);
    return 0;
}

struct cJSON *config_json(const struct serve_config *cfg)
{
    cJSON *o = cJSON_CreateObject();

    for (size_t i = 0; i < NOPTS; i++) {
        const char *field = (const char *)cfg + opts[i].off;
        switch (opts[i].kind) {
        case OPT_STR:
            cJSON_AddStringToObject(o, opts[i].flag, field);
            break;
        case OPT_SECRET: {
            int n = 0;
            auth_keys_check(field, &n, NULL);
            cJSON_AddNumberToObject(o, opts[i].flag, n); /* how many keys, never the keys */
            break;
        }
        case OPT_BACKEND:
            cJSON_AddStringToObject(o, opts[i].flag, config_backend_name(*(const enum backend_kind *)(const void *)field));
            break;
        case OPT_LOG_FORMAT:
            cJSON_AddStringToObject(o, opts[i].flag, log_format_name((enum log_format)*(const int *)(const void *)field));
            break;
        case OPT_LOG_LEVEL:
            cJSON_AddStringToObject(o, opts[i].flag, log_level_name((enum log_level)*(const int *)(const void *)field));
            break;
        case OPT_LL:
            cJSON_AddNumberToObject(o, opts[i].flag, (double)*(const long long *)(const void *)field);
            break;
        default:
            cJSON_AddNumberToObject(o, opts[i].flag, *(const int *)(const void *)field);
        }
    }
    return o;
}

void config_usage(FILE *f)
{
    fprintf(f, "usage: edged serve [--FLAG VALUE]...\n\nEvery flag also reads EDGED_<NAME>; flags win.\n\n");
    for (size_t i = 0; i < NOPTS; i++)
        fprintf(f, "  %s%-18s %-24s default %-9s %s\n", opts[i].kind == OPT_SECRET ? "  " : "--",
                opts[i].kind == OPT_SECRET ? "(no flag)" : opts[i].flag, opts[i].env,
                opts[i].dflt[0] ? opts[i].dflt : "\"\"", opts[i].help);
}
