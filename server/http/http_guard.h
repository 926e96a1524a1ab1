/* http_guard.h — what keeps a request or a client from hurting the server: refusals before the
 * body, admission, connection accounting and caps, the descriptor limit, the log limiter. */
#ifndef EDGED_HTTP_GUARD_H
#define EDGED_HTTP_GUARD_H

#include <microhttpd.h>
#include <stdarg.h>

#include "http/http_state.h"

/* POST admission: at most c.max_active image requests in the server. With count 0 (first
 * callback) it only looks; with count 1 (body complete) the request counts in s->active until it
 * completes. 0, or EDGED_E_QUEUE_FULL with a message. */
int http_guard_admit_active(struct http_req *r, int count, char *err);
/* A request on a connection over a cap (http_conn.over): 0 for an open route (health, readiness,
 * metrics), else the refusal code with a message; the answer then closes the connection. */
int http_guard_conn_over(struct http_req *r, char *err);
/* Content-Type's media type against the route's comma-separated list: 0 or EDGED_E_NOT_PNG. */
int http_guard_media_type(const char *ctype, const char *types, char *err);
/* Framing and size of the announced body (Content-Length, Transfer-Encoding): 0 (and the body
 * buffer reserved), EDGED_E_USAGE, EDGED_E_BODY_TOO_LARGE or EDGED_E_NOMEM. */
int http_guard_body_headers(struct http_req *r, char *err);
/* Refuses the request on its first callback: answered now on the raw socket (MHD_NO: close) when
 * the body cannot or should not be read, else kept pending for the last callback (MHD_YES). */
enum MHD_Result http_guard_refuse(struct http_req *r, int code, const char *msg, const char *xh, const char *xv);
/* Writes the error answer straight to the socket and lingers; the caller then returns MHD_NO. */
void http_guard_raw_error(struct http_req *r, int code, const char *msg, const char *xh, const char *xv);
/* The body in the memory budget: take reserves n more bytes for r's body as they arrive (0, or
 * EDGED_E_MEMORY_BUDGET when the budget or the bodies' part of it is spent, EDGED_E_QUEUE_FULL
 * when the uploads from r's address hold its share; with a message), counted as arriving until
 * arrived (idempotent), which every request calls once its body is complete or it ends. begin
 * starts the request's body on its connection (the minimum rate's clock) and progress counts n
 * bytes of it. */
int http_guard_body_take(struct http_req *r, size_t n, char *err);
void http_guard_body_arrived(struct http_req *r);
void http_guard_body_begin(struct http_req *r);
void http_guard_body_progress(struct http_req *r, size_t n);
/* Marks the request's connection as receiving (1) or not (0) for http_reap. */
void http_guard_conn_phase(struct http_server *s, struct MHD_Connection *conn, int receiving);
/* MHD_OPTION_NOTIFY_CONNECTION: adds and removes connections of the reap list. */
void http_guard_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code);
/* The connection limit of the daemon for max_connections plus reserve, lowered to fit the
 * descriptor limit (logged when lowered); *api receives what is left for the API. */
int http_guard_fit_connections(int max_connections, int reserve, int *api);
/* MHD_OPTION_EXTERNAL_LOGGER: libmicrohttpd's messages, rate-limited. */
void http_guard_mhd_log(void *cls, const char *fmt, va_list ap);

#endif
