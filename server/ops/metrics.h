/* metrics.h — Prometheus counters, gauges and histograms of the service, and their text format. */
#ifndef EDGED_METRICS_H
#define EDGED_METRICS_H

#include <stddef.h>

#include "result.h"

struct metrics;

/* Gauges owned by other modules, read when /metrics is rendered. */
struct metrics_gauges {
    int queue_depth, queue_capacity, ready;
    size_t gpu_memory_used;
    double gpu_busy_seconds; /* time the GPU worker had a job on the device, since start */
    size_t budget_used, budget_limit; /* the memory budget (budget.h): bytes reserved, and its size */
    /* the nvJPEG path (jpegjob_counts): JPEGs decoded and encoded on the device, and those
     * nvJPEG refused, done on the CPU instead */
    unsigned long long jpeg_gpu_decoded, jpeg_gpu_encoded, jpeg_fallback_decode, jpeg_fallback_encode;
};

/* Labels of edged_build_info. */
struct metrics_build {
    const char *version, *backend, *device;
};

int metrics_new(struct metrics **out, const struct metrics_build *b, char *err);
void metrics_free(struct metrics *m);

/* A request was read (headers complete): accepted += 1, in flight += 1. */
void metrics_request_begin(struct metrics *m);
/* It was answered with HTTP status (0: connection lost before any answer, counted as code 499):
 * requests_total{code} += 1, succeeded (2xx) or failed += 1, in flight -= 1. */
void metrics_request_end(struct metrics *m, int status);
/* A request that named a filter (POST /v1/filter, /v1/compare) ended with HTTP status (0: lost)
 * after seconds: edged_filter_requests_total{filter,backend,code} += 1 and
 * edged_request_duration_seconds{filter,backend} observes it. variant is the one that ran (its
 * backend: gpu or cpu), "auto" when none was chosen yet (backend none), "compare" for /v1/compare
 * (backend all).
 * Names outside the filter and variant tables are counted as filter or backend "other". */
void metrics_filter_request(struct metrics *m, const char *filter, const char *variant, int status,
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
