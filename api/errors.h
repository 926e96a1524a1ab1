/* errors.h — the one error table: code, HTTP status, machine name and default message. */
#ifndef EDGED_ERRORS_H
#define EDGED_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Size of every caller-provided error message buffer. */
#define EDGED_ERR_LEN 256

/* X(enum, value, http status, name, default message). Functions return 0 or one of these
 * negative values and write a message naming the problem into a caller buffer. */
#define EDGED_ERRORS(X)                                                                            \
    X(EDGED_OK, 0, 200, "ok", "ok")                                                               \
    X(EDGED_E_USAGE, -1, 400, "bad_request", "malformed request")                                 \
    X(EDGED_E_PARAM, -2, 400, "invalid_parameter", "invalid parameter")                           \
    X(EDGED_E_MULTIPART, -3, 400, "bad_multipart", "malformed multipart body")                    \
    X(EDGED_E_NOT_FOUND, -4, 404, "not_found", "no such resource")                                \
    X(EDGED_E_METHOD, -5, 405, "method_not_allowed", "method not allowed")                        \
    X(EDGED_E_BODY_TOO_LARGE, -6, 413, "body_too_large", "request body too large")                \
    X(EDGED_E_NOT_PNG, -7, 415, "unsupported_media_type", "image is not a PNG, JPEG or WebP")      \
    X(EDGED_E_BAD_PNG, -8, 422, "bad_png", "corrupt or unsupported PNG")                          \
    X(EDGED_E_IMAGE_TOO_LARGE, -9, 422, "image_too_large", "image exceeds the size limits")       \
    X(EDGED_E_VARIANT_LIMIT, -10, 422, "variant_cannot_serve", "variant cannot serve this case")  \
    X(EDGED_E_NO_CUDA, -11, 422, "variant_unavailable", "variant unavailable on this server")     \
    X(EDGED_E_QUEUE_FULL, -12, 429, "queue_full", "queue full, retry later")                      \
    X(EDGED_E_UNAVAILABLE, -13, 503, "unavailable", "service unavailable")                        \
    X(EDGED_E_NOMEM, -14, 503, "out_of_memory", "out of memory, retry later")                     \
    X(EDGED_E_GPU_OOM, -15, 503, "gpu_out_of_memory", "GPU out of memory, retry later")           \
    X(EDGED_E_GPU_FATAL, -16, 503, "gpu_fatal", "a GPU failed; retry after Retry-After seconds")   \
    X(EDGED_E_DEADLINE, -17, 504, "deadline_exceeded", "job waited past its queue deadline")      \
    X(EDGED_E_IO, -18, 500, "io_error", "I/O error")                                              \
    X(EDGED_E_INTERNAL, -19, 500, "internal", "internal error")                                   \
    X(EDGED_E_UNAUTHORIZED, -20, 401, "unauthorized", "missing or invalid API key")               \
    X(EDGED_E_URI_TOO_LONG, -21, 414, "uri_too_long", "query string too long")                   \
    X(EDGED_E_CLIENT_GONE, -22, 499, "client_closed", "client closed the connection")          \
    X(EDGED_E_TOO_COSTLY, -23, 422, "job_too_costly", "job over the per-request CPU limit")      \
    X(EDGED_E_MEMORY_BUDGET, -24, 503, "memory_budget", "memory budget spent, retry later")      \
    X(EDGED_E_CANCELLED, -25, 503, "cancelled", "job cancelled")                                      \
    X(EDGED_E_BAD_IMAGE, -26, 422, "bad_image", "corrupt or unsupported JPEG or WebP")

#define EDGED_ERR_ENUM(sym, val, status, name, msg) sym = val,
enum edged_err { EDGED_ERRORS(EDGED_ERR_ENUM) };
#undef EDGED_ERR_ENUM

/* HTTP status, machine name ("bad_png") and default message of code; unknown codes map to
 * EDGED_E_INTERNAL. */
int edged_err_status(int code);
const char *edged_err_name(int code);
const char *edged_err_message(int code);

/* Formats the message into err (EDGED_ERR_LEN bytes, may be NULL) and returns code, so that
 * `return edged_fail(err, EDGED_E_PARAM, "size %d is even", n);` reports and returns at once. */
int edged_fail(char *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
