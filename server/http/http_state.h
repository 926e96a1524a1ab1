/* http_state.h — the server and per-request state of the HTTP layer, shared by http_daemon.c,
 * http_answer.c and http_guard.c; nothing outside server/http/ includes it. The accessors
 * handlers use (http.h) are in http_state.c. */
#ifndef EDGED_HTTP_STATE_H
#define EDGED_HTTP_STATE_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "ops/auth.h"
#include "errors.h"
#include "http/http.h"
#include "http/trace.h"
#include "http/upload.h"

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
    size_t arriving; /* memory budget its request's body holds while it still arrives */
    int body;        /* 1 from a request's first callback until its body has all arrived */
    size_t got, mark; /* body bytes arrived, and at t_mark (the minimum body rate) */
    double t_mark;
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
    pthread_mutex_t conns_mu; /* guards the conns list and each entry (fd use included), and arriving */
    struct http_conn *conns;
    int displaced;            /* idle over-cap connections displaced by newer ones, not yet logged */
    double reap_logged;       /* clock_ms() of http_reap's last log line */
    int reap_cut;             /* cut by http_reap since that line: late */
    int reap_slow;            /* ... and with a body under --min-body-rate-kb */
    size_t arriving;          /* memory budget held by bodies still arriving, all connections */
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
    size_t reserved;            /* memory budget given back at completion: the body as it arrived, and
                                 * what the handler kept (http_req_keep_budget) */
    size_t kept;                /* of reserved: what the handler kept; the rest is the body's */
    size_t arriving;            /* of reserved: counted as a body still arriving (http_guard_body_take) */
    int preflight;              /* a CORS preflight (OPTIONS), answered on the last callback */
    size_t drained;             /* body bytes read and dropped for a pending answer */
    const char *pending_xh, *pending_xv;
    char pending_msg[EDGED_ERR_LEN];
    size_t bytes_out;
    const char *error;
    int code;                   /* the EDGED_E_* of an error answer, 0 otherwise */
    struct trace_ctx trace;
    char traceparent[TRACE_HEADER_LEN + 1]; /* of the server span, sent on the answer */
    struct upload_body body;    /* may have been handed to a job (http_req_take_body) */
    size_t received;            /* the body's bytes, for the access log */
    struct result_times t;
    const char *filter, *variant, *backend;
    int w, h;
    int device; /* CUDA device number its job ran on, -1 for none (http_req_note_device) */
};

#endif
