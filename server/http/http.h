/* http.h — the HTTP transport (libmicrohttpd): routing, body limits, request ids, one answer per
 * request, access log and request counters. The face of the layer for the endpoints and `edged
 * serve`: the daemon is http_daemon.c, the accessors http_state.c, the answers http_answer.c. The
 * route table is routes.c; the endpoints are endpoints_image.c and endpoints_info.c. */
#ifndef EDGED_HTTP_H
#define EDGED_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "ops/metrics.h"
#include "result.h"

#define HTTP_ID_MAX 64 /* longest request id echoed; longer or odder ones are replaced */
#define HTTP_QUERY_MAX_ARGS 64    /* query arguments a request may carry (else 414 uri_too_long) */
#define HTTP_QUERY_MAX_BYTES 8192 /* decoded query keys and values with separators (else 414) */
/* Connections past --max-connections (or an address's --max-conn-per-ip) that are still accepted
 * on the API listener (http_config.conn_reserve): they are answered /healthz, /readyz and
 * /metrics, every other request 503 (429 past the per-address cap) in JSON, and cut after
 * HTTP_OVER_IDLE_MS without a request, or at once when a newer one needs the room (at most half
 * the reserve waits for a first request: http_guard.c). */
#define HTTP_CONN_RESERVE 32
#define HTTP_OVER_IDLE_MS 1000
/* The probe listener (--metrics-listen): connections of its own, never the API's, and short
 * timeouts (a probe or a scrape asks at once). Every route there is open, so its reserve serves
 * whatever it is asked. */
#define HTTP_PROBE_CONNECTIONS 8
#define HTTP_PROBE_RESERVE 8
#define HTTP_PROBE_TIMEOUT_S 5
#define HTTP_BUDGET_WAIT_MS 500 /* a body chunk waits this long for the memory budget, then 503 */
/* A body is reserved in the memory budget as it arrives, in steps of this many bytes: what has
 * arrived rounded up (the buffer's capacity beyond it is address space, not memory). */
#define HTTP_BODY_STEP (256u << 10)
/* With --min-body-rate-kb, a body still arriving must bring that rate over every window of this
 * length, counted from the request's headers; a slower one is cut. */
#define HTTP_BODY_WINDOW_MS 5000

struct budget;

struct http_server;
struct http_req;

typedef void (*http_handler)(struct http_req *r, void *app);

/* One endpoint. GET routes also answer HEAD; POST routes read a body first, of one of the media
 * types in `types` (comma-separated, "multipart/form-data,image/png"; else 415). A path ending in
 * '*' matches every path that starts with the part before the '*' (e.g. "/web/" + '*'). `open`
 * routes need no API key (health, readiness, metrics, the static web page). `probe` routes
 * (health, readiness, metrics) are polled by machines: their access lines are at debug level. The
 * path is the route label of edged_http_requests_total. */
struct http_route {
    const char *path;
    int post;
    const char *types;
    http_handler handle;
    int open;
    int probe;
};

struct http_config {
    const char *host;
    int port;
    size_t max_body;          /* bytes; 413 above */
    int max_connections;
    int conn_reserve;         /* accepted past max_connections, for the open routes only */
    int max_conn_per_ip;      /* connections from one IP address at once; 0 = no cap */
    int conn_timeout_s;       /* idle connection timeout */
    int request_timeout_s;    /* headers and body must arrive within this */
    int max_active;           /* POST requests admitted and not yet answered; more get 429 at once */
    int queue_depth;          /* the job queue's bound, named in that 429's message */
    const char *api_keys;     /* comma-separated (auth.h); NULL or "" = no authentication */
    const char *cors_origin;  /* Access-Control-Allow-Origin value; NULL or "" = CORS off */
    struct budget *budget;    /* bodies reserve here as they arrive; NULL = not counted */
    size_t min_body_rate;     /* bytes a second a body must bring over each HTTP_BODY_WINDOW_MS; 0 = none */
};

/* Called on the first callback of a POST to a known route, before its body is read: 0 to go on,
 * or an EDGED_E_* code (with a message) to refuse at once (503 while draining). */
typedef int (*http_admit)(void *app, char *err);

/* Starts the daemon: thread per connection (see http_daemon.c for why). Returns 0 or EDGED_E_IO with
 * a message (port in use, bad host). routes and app must outlive the server; each route's path is
 * declared to m (metrics_add_route). */
int http_start(struct http_server **out, const struct http_config *c, const struct http_route *routes,
               int nroutes, http_admit admit, void *app, struct metrics *m, char *err);
/* Closes the listening socket: new connections are refused, open ones are served. */
void http_quiesce(struct http_server *s);
/* Requests read but not yet answered and completed. */
int http_in_flight(struct http_server *s);
/* From now on every answer carries `Connection: close` (draining). */
void http_set_closing(struct http_server *s);
/* Cuts connections whose request (headers and body) has not fully arrived request_timeout_s
 * after the connection opened or its previous answer (slowloris, slow bodies), whose body brought
 * less than min_body_rate over the last HTTP_BODY_WINDOW_MS (stalled uploads), and connections
 * over a cap idle for HTTP_OVER_IDLE_MS; logs those cut and those displaced since the last log
 * (at most once a second). Called periodically by the main loop. Returns how many were cut. */
int http_reap(struct http_server *s);
/* Stops the daemon (joins the connection threads) and frees s; accepts NULL. */
void http_stop(struct http_server *s);

/* Request accessors for handlers. */
const char *http_req_id(const struct http_req *r);
const char *http_req_path(const struct http_req *r); /* the URL path, without the query */
const char *http_req_header(struct http_req *r, const char *name); /* NULL when absent */
const uint8_t *http_req_body(const struct http_req *r, size_t *len);
/* Hands the complete body's buffer to the caller (who frees it) with the memory budget the request
 * reserved for it, added to *reserved (the caller gives it back once the buffer is freed). The
 * request's body is empty then: pointers into it (http_req_body, upload_parse) stay valid only as
 * long as the caller keeps the buffer. NULL, nothing moved, when there is no body. */
uint8_t *http_req_take_body(struct http_req *r, size_t *reserved);
double http_req_start(const struct http_req *r); /* clock_ms() at the first callback */
/* 1 while the client can still read the answer; 0 once it has closed or reset the connection.
 * Takes a void * so that it serves as a queue_alive_fn. */
int http_req_alive(void *r);
/* Calls cb for each query-string argument (decoded); stops at and returns the first non-zero. */
int http_req_query(struct http_req *r, int (*cb)(void *cls, const char *key, const char *value), void *cls);
/* The stage times of this request, filled by the handler; sent as Server-Timing and logged. */
struct result_times *http_req_times(struct http_req *r);
/* Access-log fields: filter and variant names (the variant asked for, or the one that ran), the
 * backend the job was given to ("cpu", "gpu", "all" for compare; NULL before a job is), all
 * static strings, and the image size. Filter and backend also label the filter metrics. */
void http_req_note(struct http_req *r, const char *filter, const char *variant, const char *backend, int w,
                   int h);
/* Access-log field `device`: the CUDA device number the request's job ran on (GPU lane), or -1
 * (the default: no field). */
void http_req_note_device(struct http_req *r, int device);
/* The W3C trace id of the request: the caller's (traceparent) or a new one; 32 lowercase hex. */
const char *http_req_trace_id(const struct http_req *r);
/* n bytes of the memory budget (http_config.budget), taken by the handler, that the request gives
 * back when it completes: after its answer is sent, or its connection is gone. */
void http_req_keep_budget(struct http_req *r, size_t n);
/* 1 when the Accept header ranks media type `type` strictly above `other` (the q of the most
 * specific matching entry each); 0 without an Accept header. */
int http_req_prefers(struct http_req *r, const char *type, const char *other);

/* Answers (http_answer.c): exactly one per request. http_respond takes a malloc'd body (freed by the library;
 * may be NULL when len is 0); extra_header/value (may be NULL) adds one header. */
void http_respond(struct http_req *r, int status, const char *content_type, void *body, size_t len,
                  const char *extra_header, const char *extra_value);
/* As http_respond for a body that outlives the request (static data): not copied, not freed. */
void http_respond_static(struct http_req *r, int status, const char *content_type, const void *body, size_t len);
/* The error answer for code through result_error (JSON, status from the error table), with
 * Retry-After on 429 and 503. msg NULL: the table's default message. */
void http_respond_error(struct http_req *r, int code, const char *msg);

#endif
