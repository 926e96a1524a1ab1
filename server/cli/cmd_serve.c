/* cmd_serve.c — `edged serve`: configuration, start-up in data-path order (queue, backend,
 * workers, metrics, HTTP), then the main loop: signals, the GPU watchdog, drain and exit. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__ /* defined by the headers above */
#include <malloc.h>
#endif

#include "clock.h"
#include "cli/commands.h"
#include "ops/config.h"
#include "errors.h"
#include "http/http.h"
#include "ops/log.h"
#include "ops/opts.h"
#include "http/routes.h"
#include "jobs/service.h"
#include "ops/version.h"

#define SERVE_TICK_MS 100      /* main loop period: signal wait, watchdog, fatal check */
#define SERVE_FATAL_WAIT_MS 3000 /* after a fatal GPU error: most time to let answers go out */
#define SERVE_TRIM_MS 5000     /* how often freed heap memory is handed back to the system */

/* The signals the main loop takes. Blocked in every thread (they inherit the mask) and taken
 * synchronously with sigtimedwait, so no handler runs at an arbitrary point. SIGTERM, SIGINT and
 * SIGQUIT drain; SIGHUP, SIGUSR1 and SIGUSR2 are logged and ignored (there is no configuration to
 * reload and no log file to reopen), so that a stray `kill -HUP` loses no request. */
static const struct {
    int signo;
    const char *name;
    int drains;
} serve_signals[] = {
    {SIGTERM, "SIGTERM", 1}, {SIGINT, "SIGINT", 1},   {SIGQUIT, "SIGQUIT", 1},
    {SIGHUP, "SIGHUP", 0},   {SIGUSR1, "SIGUSR1", 0}, {SIGUSR2, "SIGUSR2", 0},
};
#define SERVE_NSIGNALS (sizeof(serve_signals) / sizeof(serve_signals[0]))

static void signals_block(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < SERVE_NSIGNALS; i++)
        sigaddset(set, serve_signals[i].signo);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-answer is an error on that socket, not an exit */
}

/* Returns 1 when signo drains the service; logs and returns 0 for one the service ignores. */
static int signal_drains(int signo)
{
    for (size_t i = 0; i < SERVE_NSIGNALS; i++)
        if (serve_signals[i].signo == signo) {
            if (!serve_signals[i].drains)
                log_event("info", "signal", "%s received: ignored (SIGTERM, SIGINT or SIGQUIT drain)",
                          serve_signals[i].name);
            return serve_signals[i].drains;
        }
    return 0;
}

static void log_start(const struct serve_config *cfg, const struct service *s)
{
    cJSON *o = log_begin("info");

    cJSON_AddStringToObject(o, "event", "config");
    cJSON_AddStringToObject(o, "version", EDGED_VERSION);
    cJSON_AddStringToObject(o, "backend_in_use", service_backend(s));
    cJSON_AddStringToObject(o, "device", s->backend ? backend_device(s->backend) : "none");
    cJSON_AddItemToObject(o, "config", config_json(cfg));
    log_end(o);
}

/* Waits for the requests in flight to end, up to ms. Returns how many are left. */
static int wait_in_flight(struct http_server *h, int ms)
{
    struct timespec nap = {0, 10 * 1000000L};
    double until = clock_ms() + ms;

    while (http_in_flight(h) > 0 && clock_ms() < until)
        nanosleep(&nap, NULL);
    return http_in_flight(h);
}

/* SIGTERM/SIGINT/SIGQUIT: not ready at once and new requests refused (503), the listener closed after
 * the grace period; every request admitted before keeps its place and is finished, then the
 * queue closes and the workers end. Past --drain-timeout-s what is left is answered 503. */
static void drain(struct service *s, struct http_server *h, int signo)
{
    struct timespec grace = {s->cfg->drain_grace_ms / 1000, (s->cfg->drain_grace_ms % 1000) * 1000000L};
    int left;

    log_event("info", "drain", "signal %d: not ready, finishing %d requests (%d jobs queued)", signo,
              http_in_flight(h), queue_depth(s->q));
    atomic_store(&s->draining, 1);
    http_set_closing(h);
    nanosleep(&grace, NULL);
    http_quiesce(h);
    if ((left = wait_in_flight(h, s->cfg->drain_timeout_s * 1000)) > 0) {
        log_event("warn", "drain", "%d requests still running after %d s: answering them 503", left,
                  s->cfg->drain_timeout_s);
        queue_fail(s->q, EDGED_E_UNAVAILABLE, "server shut down before the job ran");
        wait_in_flight(h, SERVE_FATAL_WAIT_MS);
    }
    queue_close(s->q);
}

static int serve_gpu_left; /* the GPU context was not closed (see serve_run) */

int serve_left_gpu(void) { return serve_gpu_left; }

/* Hands freed heap memory back to the system. Every connection has a thread and glibc gives
 * threads their own arenas, which keep the high-water mark of a burst long after it (the soak test
 * measured it: docs/perf/journal.md). malloc_trim releases the free pages of every arena (a few ms,
 * under each arena's lock), so RSS follows the load down again. */
static void trim_heap(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* Runs until a drain signal (returns EXIT_OK) or a fatal GPU error (EXIT_FAIL). The probe
 * listener (NULL without --metrics-listen) is never quiesced: it answers until the process ends,
 * /readyz 503 while draining. */
static int main_loop(struct service *s, struct http_server *h, struct http_server *probe, const sigset_t *set)
{
    struct timespec tick = {0, SERVE_TICK_MS * 1000000L};
    char msg[EDGED_ERR_LEN];
    double next_trim = clock_ms() + SERVE_TRIM_MS;
    int signo;

    for (;;) {
        signo = sigtimedwait(set, NULL, &tick);
        if (signo > 0 && signal_drains(signo)) {
            drain(s, h, signo);
            return EXIT_OK;
        }
        http_reap(h);
        if (probe)
            http_reap(probe);
        if (clock_ms() >= next_trim) {
            trim_heap();
            next_trim = clock_ms() + SERVE_TRIM_MS;
        }
        worker_watchdog(s->w, s->cfg->gpu_watchdog_ms);
        if (worker_fatal(s->w, msg)) {
            log_event("error", "exit", "fatal GPU error, exiting for a restart: %s", msg);
            http_set_closing(h);
            http_quiesce(h);
            wait_in_flight(h, SERVE_FATAL_WAIT_MS);
            return EXIT_FAIL;
        }
    }
}

static int open_backend(struct service *s, const struct serve_config *cfg)
{
    struct worker_config wc = {cfg->cpu_workers, cfg->threads, 1};
    char err[EDGED_ERR_LEN];
    int rc;

    s->backend_err[0] = '\0';
    rc = backend_open(&s->backend, cfg->backend, cfg->gpu_ids, cfg->ngpus, cfg->streams, cfg->threads, s->backend_err);

    if (rc < 0) {
        /* --backend gpu without a device: stay up, never ready, say why */
        log_event("error", "backend", "backend %s unavailable, /readyz answers 503: %s", config_backend_name(cfg->backend),
                  s->backend_err);
        return 0;
    }
    if (cfg->backend == BACKEND_AUTO && !backend_has_gpu(s->backend))
        log_event("info", "backend", "backend auto: using the CPU backend (%s)",
                  EDGED_GPU ? s->backend_err : "built without CUDA");
    /* the request threads read each JPEG's headers with nvJPEG's parser, not the GPU worker */
    if (cfg->gpu_jpeg && backend_gpu_jpeg(s->backend) && backend_jpeg_probe_open(s->backend, err) < 0)
        log_event("warn", "backend", "the GPU worker reads the JPEG headers itself: %s", err);
    if ((rc = worker_start(&s->w, s->q, s->backend, &wc, err)) < 0)
        log_event("error", "worker", "%s", err);
    return rc;
}

/* The probe listener of --metrics-listen: /healthz, /readyz and /metrics on connections of its
 * own, so that no API client (a reconnect storm, held connections) can make a probe fail and the
 * kubelet restart a healthy replica. None without the flag (*out NULL, 0). */
static int start_probe(struct http_server **out, const struct serve_config *cfg, struct service *s, char *err)
{
    struct http_config pc = {cfg->metrics_host, cfg->metrics_port, 0, HTTP_PROBE_CONNECTIONS, HTTP_PROBE_RESERVE, 0,
                             HTTP_PROBE_TIMEOUT_S, HTTP_PROBE_TIMEOUT_S, 0, 0, NULL, NULL, NULL, 0};
    const struct http_route *routes;
    int nroutes, rc;

    *out = NULL;
    if (!cfg->metrics_port)
        return 0;
    routes = routes_probe_table(&nroutes);
    if ((rc = http_start(out, &pc, routes, nroutes, NULL, s, s->m, err)) < 0)
        return rc;
    log_event("info", "listening", "metrics, health and readiness also on %s:%d (--metrics-listen)", cfg->metrics_host,
              cfg->metrics_port);
    return 0;
}

static int serve_run(const struct serve_config *cfg, const sigset_t *set)
{
    struct service s = {0};
    struct metrics_build mb = {EDGED_VERSION, "", ""};
    struct http_config hc = {cfg->host,
                             cfg->port,
                             (size_t)cfg->max_body_mb << 20,
                             cfg->max_connections,
                             HTTP_CONN_RESERVE,
                             cfg->max_conn_per_ip,
                             cfg->conn_timeout_s,
                             cfg->request_timeout_s,
                             0,
                             cfg->queue_depth,
                             cfg->api_keys,
                             cfg->cors_origin,
                             NULL,
                             0};
    struct http_server *h = NULL, *probe = NULL;
    const struct http_route *routes;
    char err[EDGED_ERR_LEN];
    int nroutes, rc, status = EXIT_FAIL, fatal, left;

    /* large CPU jobs leave one worker to small ones (--large-pixels) */
    if ((rc = service_init(&s, cfg, err)) < 0 ||
        (rc = queue_new(&s.q, cfg->queue_depth, cfg->queue_deadline_ms,
                        service_large_slots(cfg->cpu_workers), err)) < 0)
        goto out;
    if ((rc = open_backend(&s, cfg)) < 0)
        goto out;
    mb.backend = service_backend(&s);
    mb.device = s.backend ? backend_device(s.backend) : "none";
    if ((rc = metrics_new(&s.m, &mb, err)) < 0)
        goto out;
    log_start(cfg, &s);
    /* image requests in the server at once: the queue's bound plus what can be decoding or
     * encoding (codec slots) and running (GPU streams or CPU workers) */
    hc.budget = s.budget;
    hc.min_body_rate = (size_t)cfg->min_body_rate_kb << 10;
    log_event("info", "budget", "memory budget %zu MiB (--max-memory-mb), jobs over %d CPU seconds refused, "
              "cancelled after %d s", budget_limit(s.budget) >> 20, cfg->max_job_cpu_s, cfg->job_timeout_s);
    hc.max_active = cfg->queue_depth + 2 * cfg->threads +
                    (s.backend && backend_has_gpu(s.backend) ? cfg->streams : cfg->cpu_workers);
    routes = routes_table(&nroutes);
    if ((rc = http_start(&h, &hc, routes, nroutes, service_admit, &s, s.m, err)) < 0)
        goto out;
    log_event("info", "listening", "edged %s listening on %s:%d (%s backend)", EDGED_VERSION, cfg->host, cfg->port,
              service_backend(&s));
    if ((rc = start_probe(&probe, cfg, &s, err)) < 0)
        goto out;
    status = main_loop(&s, h, probe, set);
out:
    if (rc < 0)
        log_event("error", "start", "%s", err);
    if (rc == EDGED_E_USAGE)
        status = EXIT_USAGE; /* a configuration error found at start, like a bad flag */
    queue_close(s.q);
    http_stop(h);
    http_stop(probe);
    /* After a fatal GPU error the context is poisoned (or a kernel still spins): closing it could
     * block in the driver, so it is left to the process exit, as is a worker that never returned. */
    fatal = worker_fatal(s.w, NULL);
    left = worker_stop(s.w, SERVE_FATAL_WAIT_MS) != 0;
    if (!left && !fatal)
        backend_close(s.backend);
    else if (s.backend)
        serve_gpu_left = 1;
    metrics_free(s.m);
    if (!left)
        queue_free(s.q); /* a stuck GPU worker still holds a job of it: left to the exit */
    service_destroy(&s);
    log_event("info", "exit", "exit status %d", status);
    return status;
}

int serve_main(int argc, char **argv)
{
    struct serve_config cfg;
    char err[EDGED_ERR_LEN];
    sigset_t set;
    int rc = config_load(&cfg, argc, argv, err);

    if (rc == OPTS_HELP)
        return opts_usage_exit(rc, "serve", err, config_usage);
    log_set_format((enum log_format)cfg.log_format);
    log_set_level((enum log_level)cfg.log_level);
    if (rc != 0) { /* one line in the log's format: what a crash-looping pod's last log line shows */
        log_event("error", "config", "%s (edged serve --help lists every flag and variable)", err);
        return EXIT_USAGE;
    }
    signals_block(&set);
    return serve_run(&cfg, &set);
}
