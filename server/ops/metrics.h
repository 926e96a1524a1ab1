/* metrics.h — Prometheus counters, gauges and histograms of the service, and their text format. */
#ifndef EDGED_METRICS_H
#define EDGED_METRICS_H

#include <stddef.h>

#include "result.h"

struct metrics;

/* The formats whose GPU-lane input is decoded in batches on the device, as the format label. */
enum metrics_batch_format { METRICS_BATCH_JPEG, METRICS_BATCH_PNG, METRICS_BATCH_FORMATS };

/* The phases of a GPU job's hold on its stream, as the phase label: waiting in a batch for the
 * batched decode, on the device, and handed to its waiter until the result is copied out. */
enum metrics_stream_phase {
    METRICS_STREAM_PENDING,
    METRICS_STREAM_DEVICE,
    METRICS_STREAM_HANDOFF,
    METRICS_STREAM_PHASES
};

/* One GPU device of the server, as its worker last saw it; the caller fills it (ops/ knows no
 * worker) and owns it. Rendered as the edged_gpu_device_* series, labelled device="<number>". */
#define METRICS_DEVICE_NAME_LEN 128
struct metrics_device {
    int device;                                        /* CUDA device number (what users see) */
    char name[METRICS_DEVICE_NAME_LEN];                /* escaped when rendered */
    int up;                                            /* 1 serving, 0 fenced after a fatal error */
    double busy_seconds;                               /* time with at least one job on it, since start */
    unsigned long long jobs;                           /* jobs completed on it */
    unsigned long long retried;                        /* jobs put back for another device when it failed */
    unsigned long long batches[METRICS_BATCH_FORMATS]; /* batched device decodes, by format */
    unsigned long long batch_jobs[METRICS_BATCH_FORMATS]; /* and the jobs in them */
    size_t memory_used;                                   /* device memory of its context, last sampled */
    long long outstanding_pixels;                         /* pixels of the jobs it holds now */
    double stream_seconds[METRICS_STREAM_PHASES];         /* its streams' time held by jobs, by phase */
};

/* Gauges owned by other modules, read when /metrics is rendered. */
struct metrics_gauges {
    int queue_depth, queue_capacity, ready;
    size_t gpu_memory_used;
    double gpu_busy_seconds; /* time the GPU workers had a job on their device, since start, summed */
    size_t budget_used, budget_limit; /* the memory budget (budget.h): bytes reserved, and its size */
    /* the nvJPEG path (jpegjob_counts): JPEGs decoded and encoded on the device, and those
     * nvJPEG refused, done on the CPU instead */
    unsigned long long jpeg_gpu_decoded, jpeg_gpu_encoded, jpeg_fallback_decode, jpeg_fallback_encode;
    /* the device PNG path (pngjob_counts): PNGs decoded on the device, and those the CPU decoded
     * instead: refused at submit, declined by the device, or sent by the backlog rule */
    unsigned long long png_gpu_decoded, png_cpu_refused, png_cpu_declined, png_cpu_busy;
    /* PNGs taken for the device with their zlib stream in pinned memory, and without
     * (pngjob_counts); the pinned host pool (gpu/gpinned.h): bytes held in use and free, requests
     * it answered NULL */
    unsigned long long png_z_pinned, png_z_unpinned;
    /* GPU jobs whose input the request's thread decoded, with those pixels pinned and without
     * (pxjob_counts) */
    unsigned long long px_pinned, px_staged;
    size_t pinned_in_use_bytes, pinned_free_bytes;
    unsigned long long pinned_refused;
    int gpu_fatal; /* 1 after a fatal GPU error (worker_fatal): the process is about to exit */
    /* PNG answers of the GPU lane (devenc_counts): encoded on the device, or on the CPU after the
     * device refused */
    unsigned long long png_gpu_encoded, png_fallback_encode;
    /* the GPU devices (ndevices of them, none on the CPU backend): their per-device series; the
     * families are declared (HELP, TYPE) with no sample when there is none */
    const struct metrics_device *devices;
    int ndevices;
};

/* Labels of edged_build_info. */
struct metrics_build {
    const char *version, *backend, *device;
};

int metrics_new(struct metrics **out, const struct metrics_build *b, char *err);
void metrics_free(struct metrics *m);

/* Declares a route (its path, a static string) so that its request counts are exported, zero
 * until it is requested; past METRICS_MAX_ROUTES routes a path counts as "other". */
#define METRICS_MAX_ROUTES 32
void metrics_add_route(struct metrics *m, const char *path);
/* A request was read (headers complete): accepted += 1, in flight += 1. */
void metrics_request_begin(struct metrics *m);
/* It was answered with HTTP status (0: connection lost before any answer, counted as code 499)
 * on route (a path given to metrics_add_route; NULL or another: "other"):
 * edged_requests_total{code} and edged_http_requests_total{route,code=class} += 1, succeeded
 * (2xx) or failed{code=class} += 1, in flight -= 1. */
void metrics_request_end(struct metrics *m, const char *route, int status);
/* A request that named a filter (POST /v1/filter, /v1/compare) ended with HTTP status (0: lost)
 * after seconds: edged_filter_requests_total{filter,backend,code} += 1 and
 * edged_request_duration_seconds{filter,backend} observes it. backend is the side its job was
 * given to ("cpu", "gpu"), "all" for /v1/compare, NULL when no job was (refused before: "none").
 * A filter name outside the filter table is counted as "other". */
void metrics_filter_request(struct metrics *m, const char *filter, const char *backend, int status,
                            double seconds);
/* A limit refused work: edged_rejections_total{reason=<error name>} += 1 (body_too_large,
 * image_too_large, queue_full, deadline_exceeded, unavailable, client_closed, job_too_costly,
 * memory_budget, ...). */
void metrics_reject(struct metrics *m, int code);
/* Stage times of a served request (ms); zero stages are not observed. */
void metrics_stages(struct metrics *m, const struct result_times *t);
/* Time a job waited in the queue (ms). */
void metrics_queue_wait(struct metrics *m, double ms);

/* Renders the exposition text (version 0.0.4) into a malloc'd buffer; NULL when out of memory.
 * Includes the process_* metrics of this process, read from /proc/self. */
char *metrics_render(struct metrics *m, const struct metrics_gauges *g, size_t *len);

#endif
