/* result.h — the JSON bodies edged answers with: a filter result, compare rows, and the one
 * function that turns an error into its JSON body and HTTP status. */
#ifndef EDGED_RESULT_H
#define EDGED_RESULT_H

#include <stddef.h>

#include "filter.h"
#include "params.h"

struct cJSON;

#ifdef __cplusplus
extern "C" {
#endif

/* Largest error body result_error writes (message and request id are bounded by their callers). */
#define RESULT_ERROR_MAX 2048

/* THE list of the stages of a request, in the order the access log and the metrics list them:
 * X(ID, field, api). api 0: the stage is logged and in the metrics but not in the API's timings
 * (JSON timings_ms, Server-Timing): receive, headers to the last body byte, mostly the client's
 * upload; codec_wait, the waits for a codec slot before the decode and the encode. total is the
 * whole request, the others its parts. */
#define EDGED_STAGES(X)                                                                                      \
    X(RECEIVE, receive, 0)                                                                                   \
    X(CODEC_WAIT, codec_wait, 0)                                                                             \
    X(QUEUE, queue, 1)                                                                                       \
    X(DECODE, decode, 1)                                                                                     \
    X(UPLOAD, upload, 1)                                                                                     \
    X(KERNEL, kernel, 1)                                                                                     \
    X(DOWNLOAD, download, 1)                                                                                 \
    X(ENCODE, encode, 1)                                                                                     \
    X(TOTAL, total, 1)

enum result_stage {
#define RESULT_STAGE_ENUM(id, field, api) RESULT_STAGE_##id,
    EDGED_STAGES(RESULT_STAGE_ENUM)
#undef RESULT_STAGE_ENUM
    RESULT_STAGE_COUNT
};

/* Stage times of one request in milliseconds, one field per stage; 0 where a stage did not run. */
struct result_times {
#define RESULT_STAGE_FIELD(id, field, api) double field;
    EDGED_STAGES(RESULT_STAGE_FIELD)
#undef RESULT_STAGE_FIELD
};

/* The stage's name ("queue"; "?" out of range), its time in t, and whether the API reports it. */
const char *result_stage_name(enum result_stage s);
double result_stage_ms(const struct result_times *t, enum result_stage s);
int result_stage_in_api(enum result_stage s);

/* Which stages result_times_json writes. API: the API's stages, every one (0 where it did not
 * run), as timings_ms. LOG: every stage that ran, and total always, as the access log has them. */
enum result_times_form { RESULT_TIMES_API, RESULT_TIMES_LOG };

/* ms rounded to the microsecond: what the clock resolves, and what every JSON time shows. */
double result_round_ms(double ms);

/* Adds the stages of t to the JSON object obj as numbers of ms rounded to the microsecond. */
void result_times_json(struct cJSON *obj, const struct result_times *t, enum result_times_form form);

/* What POST /v1/filter reports with output=json. bandwidth_fraction < 0, block 0 and device_number
 * < 0 print null.
 * params and plan (both may be NULL: no "params" object) are the request and the plan that ran;
 * variant is the one that ran. trace_id (NULL: omitted) is the request's W3C trace id. */
struct result_filter {
    const char *request_id, *trace_id, *filter, *variant, *backend, *device;
    int device_number; /* the CUDA device number a GPU job ran on; -1 on the CPU */
    int width, height, channels;
    struct result_times t;
    double gflops, effective_gbps, bandwidth_fraction;
    int block;
    size_t output_bytes;
    enum params_format output_format; /* of the image answer (format or Accept): PNG, JPEG or WEBP */
    const struct params *params;
    const struct filter_plan *plan;
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
    const char *request_id, *trace_id, *filter, *backend, *device;
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

/* How result_escape writes characters a quoted string cannot hold. JSON: control characters as
 * \u00XX. LABEL (a Prometheus label value, whose format has no such escape): as a space. Both
 * put a backslash before " and \, and write '?' for every byte past ASCII, so that the output is
 * valid UTF-8 whatever the input. */
enum result_escape_form { RESULT_ESCAPE_JSON, RESULT_ESCAPE_LABEL };

/* THE string escaper: appends s (NULL = "") to dst at pos as the contents of a double-quoted
 * string; stops early (truncating s) to keep `reserve` bytes of cap free for what follows, plus
 * room for one escape. dst stays NUL-terminated. Returns the new end. */
size_t result_escape(char *dst, size_t cap, size_t pos, const char *s, size_t reserve,
                     enum result_escape_form form);

/* Server-Timing header value with the stages of t ("queue;dur=0.012, decode;dur=3.1, ..."). */
void result_server_timing(const struct result_times *t, char *buf, size_t cap);

/* The names of the knobs filter f takes (filter_takes), in FILTER_KNOBS order, as a new JSON array
 * (GET /v1/filters "params"); NULL when out of memory. */
struct cJSON *result_knobs_json(enum filter_id f);

/* The name a request's results and logs give its filter: the filter's, or "pipeline" for `ops`. */
const char *result_filter_label(const struct params *p);

/* The parameters of a filter request as the server applied them, defaults resolved (the "params"
 * object of a filter result): filter, variant (that ran) and variant_requested, block (null off the
 * GPU), border, color, then the knobs the filter takes (filter_takes) in FILTER_KNOBS order,
 * png_level and output. NULL when out of memory. */
struct cJSON *result_params_json(const struct params *p, const struct filter_plan *plan, const char *variant,
                                 int block, enum params_output output);

/* Kernel rates of plan on a w x h image run in kernel_ms: 2 flops per tap per output sample, and
 * bytes = one float read + one float write per sample per convolution pass (the minimal traffic
 * of the float stages). Both 0 when kernel_ms <= 0. */
void result_kernel_rates(const struct filter_plan *plan, int w, int h, double kernel_ms, double *gflops,
                         double *gbps);

#ifdef __cplusplus
}
#endif
#endif
