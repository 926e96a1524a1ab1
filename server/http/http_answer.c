/* http_answer.c — every answer that goes through libmicrohttpd: common headers, error bodies
 * with Retry-After, the CORS preflight, and the Accept ranking handlers choose a format by. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "http/http_answer.h"
#include "ops/log.h"

#define HTTP_CORS_MAX_AGE "600"
#define HTTP_CORS_HEADERS "Authorization, Content-Type, Accept, X-Request-ID, traceparent"

static void add_common_headers(struct http_req *r, struct MHD_Response *resp)
{
    char timing[512];

    if (r->t.total <= 0.0)
        r->t.total = clock_ms() - r->t0;
    result_server_timing(&r->t, timing, sizeof(timing));
    MHD_add_response_header(resp, "X-Request-ID", r->id);
    MHD_add_response_header(resp, "traceparent", r->traceparent);
    MHD_add_response_header(resp, "Server-Timing", timing);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
#define HTTP_ADD_HEADER(name, value) MHD_add_response_header(resp, name, value);
    HTTP_SECURITY_HEADERS(HTTP_ADD_HEADER)
#undef HTTP_ADD_HEADER
    if (r->s->cors[0]) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", r->s->cors);
        MHD_add_response_header(resp, "Access-Control-Expose-Headers", HTTP_CORS_EXPOSE);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
    if (atomic_load(&r->s->closing) || r->close)
        MHD_add_response_header(resp, "Connection", "close");
}

static void respond_mem(struct http_req *r, int status, const char *ctype, void *body, size_t len,
                        enum MHD_ResponseMemoryMode mode, const char *xh, const char *xv)
{
    struct MHD_Response *resp;

    if (r->answered) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return;
    }
    resp = MHD_create_response_from_buffer(len, body, mode);
    if (!resp) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return;
    }
    MHD_add_response_header(resp, "Content-Type", ctype);
    if (xh && xv)
        MHD_add_response_header(resp, xh, xv);
    add_common_headers(r, resp);
    if (MHD_queue_response(r->conn, (unsigned)status, resp) == MHD_YES) {
        r->answered = 1;
        r->status = status;
        r->bytes_out = len;
    }
    MHD_destroy_response(resp);
}

void http_respond(struct http_req *r, int status, const char *content_type, void *body, size_t len,
                  const char *extra_header, const char *extra_value)
{
    respond_mem(r, status, content_type, body, len, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT,
                extra_header, extra_value);
}

void http_respond_static(struct http_req *r, int status, const char *content_type, const void *body, size_t len)
{
    respond_mem(r, status, content_type, (void *)body, len, MHD_RESPMEM_PERSISTENT, NULL, NULL);
}

const char *http_retry_after(int code)
{
    if (code == EDGED_E_QUEUE_FULL || code == EDGED_E_NOMEM || code == EDGED_E_GPU_OOM || code == EDGED_E_MEMORY_BUDGET)
        return "1";
    return edged_err_status(code) == 503 ? "5" : NULL;
}

/* Messages that describe the server rather than the request (500s, a lost GPU) stay in the log;
 * the client gets the table's generic message and the request id to quote. */
const char *http_public_message(struct http_req *r, int code, const char *msg)
{
    if (edged_err_status(code) != 500 && code != EDGED_E_GPU_FATAL)
        return msg;
    if (msg && *msg)
        log_event("error", "internal", "request %s: %s: %s", r->id, edged_err_name(code), msg);
    return NULL;
}

void http_answer_note_error(struct http_req *r, int code)
{
    r->error = edged_err_name(code);
    r->code = code;
    metrics_reject(r->s->m, code);
}

void http_respond_error_with(struct http_req *r, int code, const char *msg, const char *xh, const char *xv)
{
    char body[RESULT_ERROR_MAX];
    int status = result_error(code, http_public_message(r, code, msg), r->id, body, sizeof(body));

    if (!xh && http_retry_after(code)) {
        xh = "Retry-After";
        xv = http_retry_after(code);
    }
    http_answer_note_error(r, code);
    respond_mem(r, status, "application/json", body, strlen(body), MHD_RESPMEM_MUST_COPY, xh, xv);
}

void http_respond_error(struct http_req *r, int code, const char *msg)
{
    http_respond_error_with(r, code, msg, NULL, NULL);
}

void http_respond_preflight(struct http_req *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);

    if (!resp)
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                            r->route->post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", HTTP_CORS_HEADERS);
    MHD_add_response_header(resp, "Access-Control-Max-Age", HTTP_CORS_MAX_AGE);
    add_common_headers(r, resp);
    if (MHD_queue_response(r->conn, 204, resp) == MHD_YES) {
        r->answered = 1;
        r->status = 204;
    }
    MHD_destroy_response(resp);
}

/* q of the most specific Accept entry matching type ("image/png"), 0 when none matches. */
static double accept_q(const char *accept, const char *type)
{
    const char *slash = strchr(type, '/');
    double best = 0.0;
    int best_spec = -1;

    for (const char *e = accept; e && *e;) {
        const char *end = strchr(e, ','), *semi, *q;
        size_t n = end ? (size_t)(end - e) : strlen(e), tn;
        int spec;
        while (n && (*e == ' ' || *e == '\t'))
            e++, n--;
        semi = memchr(e, ';', n);
        tn = semi ? (size_t)(semi - e) : n;
        while (tn && (e[tn - 1] == ' ' || e[tn - 1] == '\t'))
            tn--;
        spec = tn == strlen(type) && strncasecmp(e, type, tn) == 0                                        ? 2
               : tn == (size_t)(slash - type) + 2 && strncasecmp(e, type, tn - 1) == 0 && e[tn - 1] == '*' ? 1
               : tn == 3 && strncmp(e, "*/*", 3) == 0                                                     ? 0
                                                                                                          : -1;
        if (spec > best_spec) {
            q = semi ? strstr(semi, "q=") : NULL;
            best = q && q < e + n ? atof(q + 2) : 1.0;
            best_spec = spec;
        }
        e = end ? end + 1 : NULL;
    }
    return best;
}

int http_req_prefers(struct http_req *r, const char *type, const char *other)
{
    const char *accept = http_req_header(r, "Accept");

    return accept && accept_q(accept, type) > accept_q(accept, other);
}
