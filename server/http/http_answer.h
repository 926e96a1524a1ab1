/* http_answer.h — the answers of the HTTP layer beside http.h's: Retry-After, the public message
 * of an error, errors with one extra header, the CORS preflight; and the headers both writers
 * (this and http_guard.c's raw answer) put on every answer. */
#ifndef EDGED_HTTP_ANSWER_H
#define EDGED_HTTP_ANSWER_H

#include "http/http_state.h"

#define HTTP_CORS_EXPOSE "X-Request-ID, Server-Timing, X-Edged-Variant, Retry-After, traceparent"
/* Headers on every answer, both writers: no MIME sniffing, never framed (the web page is served
 * top-level from the same origin). X(name, value) for each. */
#define HTTP_SECURITY_HEADERS(X)                                                                   \
    X("X-Content-Type-Options", "nosniff")                                                        \
    X("X-Frame-Options", "DENY")                                                                   \
    X("Content-Security-Policy", "frame-ancestors 'none'")

/* Records that r is answered with error code: its name for the access log, its code for the
 * log level, and the rejection metric. Both writers call it. */
void http_answer_note_error(struct http_req *r, int code);
/* The Retry-After value for code ("1" or "5"), or NULL when the error gets none. */
const char *http_retry_after(int code);
/* msg, or NULL (the table's generic message) for errors that describe the server rather than the
 * request; those are logged with the request id instead. */
const char *http_public_message(struct http_req *r, int code, const char *msg);
/* The error answer with one extra header (Allow, WWW-Authenticate; NULL for none, which lets a
 * 429/503 carry Retry-After). */
void http_respond_error_with(struct http_req *r, int code, const char *msg, const char *xh, const char *xv);
/* 204 to a CORS preflight (OPTIONS) for the request's route. */
void http_respond_preflight(struct http_req *r);

#endif
