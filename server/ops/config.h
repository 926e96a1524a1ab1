/* config.h — the service configuration: defaults, EDGED_* environment, flags (flags win). */
#ifndef EDGED_CONFIG_H
#define EDGED_CONFIG_H

#include <stddef.h>
#include <stdio.h>

struct cJSON;

/* What the configuration asks for: auto (the GPU when one works, else the CPU), gpu or cpu. */
enum backend_kind { BACKEND_AUTO, BACKEND_GPU, BACKEND_CPU };

/* "auto", "gpu", "cpu"; config_backend_parse returns the kind or -1 for another name. */
const char *config_backend_name(enum backend_kind k);
int config_backend_parse(const char *name);

#define CONFIG_MAX_GPUS 16 /* devices one server drives, at most */

struct serve_config {
    char host[64];          /* bind address */
    int port;
    char metrics_listen[80]; /* ADDR:PORT of the probe listener (/metrics, /healthz, /readyz); "" = off */
    char metrics_host[64];  /* metrics_listen split by config_load; metrics_port 0 when off */
    int metrics_port;
    enum backend_kind backend; /* auto | gpu | cpu */
    int max_body_mb;        /* request body cap, MiB */
    long long max_pixels;   /* image width*height cap */
    long long large_pixels; /* an image with more pixels is large: capped codec slots and CPU workers */
    int max_side;           /* image width and height cap */
    int queue_depth;        /* jobs waiting for a worker, at most */
    int queue_deadline_ms;  /* a job still queued after this is answered 504 */
    int streams;            /* CUDA streams of each GPU worker */
    char gpus[96];          /* --gpus as given: "all" or a list such as "0,2" */
    int gpu_ids[CONFIG_MAX_GPUS]; /* gpus parsed by config_load: the CUDA device numbers to drive, */
    int ngpus;              /* in order; 0 = every device the process sees */
    int threads;            /* codec slots and CPU compute threads; 0 = online cores */
    int cpu_workers;        /* CPU-backend jobs run at once */
    int max_connections;    /* concurrent connections (one thread each) */
    int conn_timeout_s;     /* idle connection timeout */
    int request_timeout_s;  /* a request's headers and body must arrive within this */
    int drain_grace_ms;     /* after SIGTERM: readiness 503 but still accepting, before closing */
    int drain_timeout_s;    /* at shutdown, longest wait for requests in flight */
    int gpu_watchdog_ms;    /* a GPU job running longer is a stuck device: fatal */
    int gpu_jpeg;           /* 1: nvJPEG decodes and encodes JPEGs of the GPU lane (when built with it) */
    int gpu_png;            /* 1: the GPU lane decodes the PNGs it takes (png_job.h) and encodes PNG
                             * answers on the device */
    int gpu_png_backlog_mb; /* MiB of PNG input waiting for the device past which free cores decode */
    int max_conn_per_ip;    /* connections from one IP address at once; 0 = no cap */
    char cors_origin[256];  /* Access-Control-Allow-Origin; "" = CORS off */
    char api_keys[8448];    /* EDGED_API_KEYS (environment only, never logged); "" = no auth */
    char openapi[512];      /* openapi.yaml served instead of the built-in copy; "" = the built-in one */
    int log_format;         /* enum log_format: auto (text on a terminal, else JSON), text, json */
    int log_level;          /* enum log_level: lines under it are dropped */
    int max_memory_mb;      /* memory budget of requests, MiB; 0 = half the cgroup or machine memory */
    int max_job_cpu_s;      /* a job estimated over this many CPU seconds is refused (422) */
    int job_timeout_s;      /* a running job is cancelled after this (504) */
    int min_body_rate_kb;   /* KiB a second a body still arriving must bring over each 5 s; 0 = none */
};

/* Fills cfg from defaults, then EDGED_<NAME> variables, then argv flags (`--name V` or
 * `--name=V`, opts.h). Returns 0, OPTS_HELP when --help was given, or EDGED_E_USAGE with a
 * message naming the flag or variable and its value. threads 0 is resolved to the online cores. */
int config_load(struct serve_config *cfg, int argc, char **argv, char *err);

/* Parses --gpus: "all" (ids untouched, *n 0) or a comma-separated list of distinct CUDA device
 * numbers 0..63, at most CONFIG_MAX_GPUS. Returns 0, or EDGED_E_USAGE naming `what`. */
int config_gpus_parse(const char *s, const char *what, int *ids, int *n, char *err);

/* Splits "ADDR:PORT" (an IPv4 address in dotted form, a port 1..65535) into host (hostlen bytes)
 * and *port. Returns 0, or EDGED_E_USAGE with a message naming `what` (the flag or variable). */
int config_listen_parse(const char *s, const char *what, char *host, size_t hostlen, int *port, char *err);

/* The advanced tuning knobs (api/tuning.h) from their EDGED_* environment variables, set for the
 * process; every subcommand reads them at start. Returns 0 or EDGED_E_USAGE naming the bad one. */
int config_tuning_load(char *err);

/* The configuration as a JSON object keyed by flag name ({"port":8080,...}); caller deletes it. */
struct cJSON *config_json(const struct serve_config *cfg);

/* Prints the flag table (flag, variable, default, meaning) to f. */
void config_usage(FILE *f);

#endif
