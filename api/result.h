/* result.h — the JSON bodies edged answers with: a filter result, compare rows, and the one
 * function that turns an error into its JSON body and HTTP status. */
#ifndef EDGED_RESULT_H
#define EDGED_RESULT_H

#include <stddef.h>

#include "filter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest error body result_error writes (message and request id are bounded by their callers). */
#define RESULT_ERROR_MAX 2048

/* Stage times of one request in milliseconds; 0 where a stage did not run. receive (headers to
 * the last body byte: mostly the client's upload) is logged and in the metrics, but not part of
 * the JSON result or Server-Timing, whose stages are the API's. */
struct result_times {
    double queue, decode, upload, kernel, download, encode, total;
    double receive;
};

/* What POST /v1/filter reports with output=json. bandwidth_fraction < 0 and block 0 print null. */
struct result_filter {
    const char *request_id, *filter, *variant, *backend, *device;
    int width, height, channels;
    struct result_times t;
    double gflops, effective_gbps, bandwidth_fraction;
    int block;
    size_t output_bytes;
};

/* One variant of POST /v1/compare; code != 0 marks a variant that could not serve (message). */
struct result_compare_row {
    const char *variant;
    double kernel_ms, gflops, effective_gbps;
    int max_abs_diff;
    int code;
    const char *message;
};

struct result_compare {
    const char *request_id, *filter, *backend, *device;
    int width, height, channels;
    const struct result_compare_row *rows;
    int nrows;
};

/* JSON texts, malloc'd (caller frees); NULL when out of memory. */
char *result_filter_json(const struct result_filter *r);
char *result_compare_json(const struct result_compare *c);

/* THE error answer: writes {"error":{"code","message","request_id"}} for code (an EDGED_E_*
 * value; message NULL = the table's default) into body (cap bytes, at least RESULT_ERROR_MAX
 * recommended; never fails, truncates the message if it must) and returns the HTTP status from
 * the error table in errors.h. */
int result_error(int code, const char *message, const char *request_id, char *body, size_t cap);

/* Server-Timing header value with the stages of t ("queue;dur=0.012, decode;dur=3.1, ..."). */
void result_server_timing(const struct result_times *t, char *buf, size_t cap);

/* Kernel rates of plan on a w x h image run in kernel_ms: 2 flops per tap per output sample, and
 * bytes = one float read + one float write per sample per convolution pass (the minimal traffic
 * of the float stages). Both 0 when kernel_ms <= 0. */
void result_kernel_rates(const struct filter_plan *plan, int w, int h, double kernel_ms, double *gflops,
                         double *gbps);

#ifdef __cplusplus
}
#endif
#endif
