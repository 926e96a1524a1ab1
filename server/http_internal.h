/* http_internal.h — the server and per-request state shared by http.c, http_answer.c and
 * http_guard.c; nothing outside those three includes it. */
#ifndef EDGED_HTTP_INTERNAL_H
#define EDGED_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "auth.h"
#include "errors.h"
#include "http.h"
#include "upload.h"

#define HTTP_CORS_EXPOSE "X-Request-ID, Server-Timing, X-Edged-Variant, Retry-After"
/* Headers on every answer, both writers: no MIME sniffing, never framed (the web page is served
 * top-level from the same origin). X(name, value) for each. */
#define HTTP_SECURITY_HEADERS(X)                                                                   \
    X("X-Content-Type-Options", "nosniff")                                                        \
    X("X-Frame-Options", "DENY")                                                                   \
    X("Content-Security-Policy", "frame-ancestors 'none'")
#define HTTP_DRAIN_MAX (4u << 20) /* a refused request's body up to this is read and dropped */

/* One TCP connection, tracked so that http_reap can cut those whose request never completes:
 * `receiving` from accept (or the previous answer) until the request's last body byte. */
struct http_conn {
    int fd;
    int receiving;
    double t_phase;
    uint32_t ip;   /* IPv4 peer address, network order (0: unknown) */
    int over;      /* 0, or the refusal for its requests: EDGED_E_QUEUE_FULL (address cap) or
                    * EDGED_E_UNAVAILABLE (connection cap) */
    struct http_conn *prev, *next;
};

struct http_server {
    struct MHD_Daemon *d;
    struct http_config c;
    const struct http_route *routes;
    int nroutes;
    http_admit admit;
    void *app;
    struct metrics *m;
    atomic_int in_flight, closing;
    atomic_int active; /* admitted POST requests not yet completed (admission control) */
    atomic_ullong next_id;
    unsigned long long id_seed;
    struct auth_keys keys;
    char cors[256];
    pthread_mutex_t conns_mu; /* guards the conns list and each entry (fd use included) */
    struct http_conn *conns;
    pthread_mutex_t log_mu;   /* guards the rate limit of libmicrohttpd's messages */
    double log_window;
    long log_count, log_dropped;
};

struct http_req {
    struct http_server *s;
    struct MHD_Connection *conn;
    const struct http_route *route;
    char id[HTTP_ID_MAX + 1];
    char method[16], path[128];
    double t0;
    int answered, status;
    int active;                 /* counted in s->active */
    int pending;                /* an error decided on the first callback, answered on the last */
    int raw;                    /* answered by http_guard_raw_error */
    int close;                  /* this answer carries Connection: close */
    size_t reserved;            /* memory budget held for the body buffer */
    int preflight;              /* a CORS preflight (OPTIONS), answered on the last callback */
    size_t drained;             /* body bytes read and dropped for a pending answer */
    const char *pending_xh, *pending_xv;
    char pending_msg[EDGED_ERR_LEN];
    size_t bytes_out;
    const char *error;
    struct upload_body body;
    struct result_times t;
    const char *filter, *variant;
    int w, h;
};

/* ---- http_answer.c: answers through libmicrohttpd ---- */

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

/* ---- http_guard.c: refusals before the body, connection accounting, fd cap, log limiter ---- */

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
/* Marks the request's connection as receiving (1) or not (0) for http_reap. */
void http_guard_conn_phase(struct http_server *s, struct MHD_Connection *conn, int receiving);
/* MHD_OPTION_NOTIFY_CONNECTION: adds and removes connections of the reap list. */
void http_guard_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code);
/* The connection cap, lowered to fit the descriptor limit (logged when lowered). */
int http_guard_fit_connections(int want);
/* MHD_OPTION_EXTERNAL_LOGGER: libmicrohttpd's messages, rate-limited. */
void http_guard_mhd_log(void *cls, const char *fmt, va_list ap);

#endif
