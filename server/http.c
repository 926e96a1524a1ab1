/* http.c — libmicrohttpd glue: per-request state in *con_cls, body limits, one answer per request.
 *
 * Threading: thread per connection (MHD_USE_THREAD_PER_CONNECTION), bounded by
 * --max-connections. A request's connection thread blocks on its job (decode, wait for the
 * worker, encode); with a thread pool sized to the cores every blocked request would stall the
 * other connections of its pool thread, including /healthz and /readyz, which must answer fast
 * under overload. With a thread each, blocking is harmless and the CPU-heavy stages are bounded
 * separately by the codec slots (--threads, service.c), so they still scale with the cores
 * without oversubscribing them. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "errors.h"
#include "log.h"
#include "upload.h"

#define HTTP_CONN_MEMORY (128 * 1024)    /* MHD's per-connection pool: headers + read buffer */
#define HTTP_LINGER_MS 1000              /* after an early 413: read and drop the client's rest */
#define HTTP_LINGER_BYTES (8u << 20)
#define HTTP_CORS_MAX_AGE "600"
#define HTTP_LOG_BURST 20          /* libmicrohttpd messages logged per second at most */
#define HTTP_ACCEPT_BACKOFF_MS 20  /* accept failed for lack of descriptors: wait before retrying */
#define HTTP_FD_RESERVE 64         /* descriptors kept for everything but connections */
#define HTTP_DRAIN_MAX (4u << 20)  /* a refused request's body up to this is read and dropped */
#define HTTP_CORS_HEADERS "Authorization, Content-Type, Accept, X-Request-ID"
#define HTTP_CORS_EXPOSE "X-Request-ID, Server-Timing, X-Edged-Variant, Retry-After"

/* One TCP connection, tracked so that http_reap can cut those whose request never completes:
 * `receiving` from accept (or the previous answer) until the request's last body byte. */
struct http_conn {
    int fd;
    int receiving;
    double t_phase;
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

/* ---- request ids ------------------------------------------------------------------------- */

static int id_is_sane(const char *id)
{
    size_t n = 0;

    for (; id && id[n]; n++)
        if (!((id[n] >= 'a' && id[n] <= 'z') || (id[n] >= 'A' && id[n] <= 'Z') || (id[n] >= '0' && id[n] <= '9') ||
              id[n] == '-' || id[n] == '_' || id[n] == '.' || id[n] == ':'))
            return 0;
    return n >= 1 && n <= HTTP_ID_MAX;
}

/* 16 hex digits: splitmix64 of a per-process seed plus a counter (unique, not guessable cheaply). */
static void id_make(struct http_server *s, char *out)
{
    unsigned long long z = s->id_seed + 0x9e3779b97f4a7c15ULL * (atomic_fetch_add(&s->next_id, 1) + 1);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    snprintf(out, HTTP_ID_MAX + 1, "%016llx", z);
}

/* ---- answers ----------------------------------------------------------------------------- */

static void add_common_headers(struct http_req *r, struct MHD_Response *resp)
{
    char timing[512];

    if (r->t.total <= 0.0)
        r->t.total = clock_ms() - r->t0;
    result_server_timing(&r->t, timing, sizeof(timing));
    MHD_add_response_header(resp, "X-Request-ID", r->id);
    MHD_add_response_header(resp, "Server-Timing", timing);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (r->s->cors[0]) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", r->s->cors);
        MHD_add_response_header(resp, "Access-Control-Expose-Headers", HTTP_CORS_EXPOSE);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
    if (atomic_load(&r->s->closing))
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

static const char *retry_after(int code)
{
    if (code == EDGED_E_QUEUE_FULL || code == EDGED_E_NOMEM || code == EDGED_E_GPU_OOM)
        return "1";
    return edged_err_status(code) == 503 ? "5" : NULL;
}

/* Messages that describe the server rather than the request (500s, a lost GPU) stay in the log;
 * the client gets the table's generic message and the request id to quote. */
static const char *public_message(struct http_req *r, int code, const char *msg)
{
    if (edged_err_status(code) != 500 && code != EDGED_E_GPU_FATAL)
        return msg;
    if (msg && *msg)
        log_event("error", "internal", "request %s: %s: %s", r->id, edged_err_name(code), msg);
    return NULL;
}

static void respond_error_with(struct http_req *r, int code, const char *msg, const char *xh, const char *xv)
{
    char body[RESULT_ERROR_MAX];
    int status = result_error(code, public_message(r, code, msg), r->id, body, sizeof(body));

    if (!xh && retry_after(code)) {
        xh = "Retry-After";
        xv = retry_after(code);
    }
    r->error = edged_err_name(code);
    metrics_reject(r->s->m, code);
    respond_mem(r, status, "application/json", body, strlen(body), MHD_RESPMEM_MUST_COPY, xh, xv);
}

void http_respond_error(struct http_req *r, int code, const char *msg) { respond_error_with(r, code, msg, NULL, NULL); }

/* ---- the raw answer used mid-body --------------------------------------------------------- */

static int send_all(int fd, const char *p, size_t n)
{
    struct pollfd pfd = {fd, POLLOUT, 0};
    ssize_t k;

    while (n > 0) {
        k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (poll(&pfd, 1, HTTP_LINGER_MS) <= 0)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Reads and drops what the client still sends (bounded), so that closing does not reset the
 * connection before the client has read the answer. */
static void linger_drain(int fd)
{
    char scratch[16384];
    struct pollfd pfd = {fd, POLLIN, 0};
    size_t total = 0;
    double until = clock_ms() + HTTP_LINGER_MS;
    ssize_t k;

    while (total < HTTP_LINGER_BYTES && clock_ms() < until) {
        if (poll(&pfd, 1, (int)(until - clock_ms()) + 1) <= 0)
            return;
        k = recv(fd, scratch, sizeof(scratch), 0);
        if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR)))
            return;
        total += k > 0 ? (size_t)k : 0;
    }
}

/* libmicrohttpd (0.9.75) can queue a response only before the body or after all of it. A body
 * that grows past the cap while streaming (chunked) is answered here by writing the 413 to the
 * socket directly; the caller then returns MHD_NO, which closes the connection. */
static void raw_error(struct http_req *r, int code, const char *msg, const char *xh, const char *xv)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    char body[RESULT_ERROR_MAX], head[2048], timing[512], cors[400] = "", extra[300] = "";
    int status = result_error(code, public_message(r, code, msg), r->id, body, sizeof(body));
    size_t blen = strlen(body);

    r->t.total = clock_ms() - r->t0;
    result_server_timing(&r->t, timing, sizeof(timing));
    if (r->s->cors[0])
        snprintf(cors, sizeof(cors), "Access-Control-Allow-Origin: %.255s\r\nAccess-Control-Expose-Headers: %s\r\n",
                 r->s->cors, HTTP_CORS_EXPOSE);
    if (!xh && retry_after(code)) {
        xh = "Retry-After";
        xv = retry_after(code);
    }
    if (xh && xv)
        snprintf(extra, sizeof(extra), "%.40s: %.200s\r\n", xh, xv);
    snprintf(head, sizeof(head),
             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n"
             "X-Request-ID: %s\r\nServer-Timing: %.511s\r\nCache-Control: no-store\r\n%.399s%.299s\r\n",
             status, MHD_get_reason_phrase_for((unsigned)status), blen, r->id, timing, cors, extra);
    r->error = edged_err_name(code);
    metrics_reject(r->s->m, code);
    if (!ci || send_all(ci->connect_fd, head, strlen(head)) < 0 || send_all(ci->connect_fd, body, blen) < 0)
        return;
    shutdown(ci->connect_fd, SHUT_WR);
    linger_drain(ci->connect_fd);
    r->answered = 1;
    r->status = status;
    r->bytes_out = blen;
}

/* ---- routing and body ---------------------------------------------------------------------- */

static const struct http_route *route_find(struct http_server *s, const char *url)
{
    for (int i = 0; i < s->nroutes; i++) {
        const char *p = s->routes[i].path;
        size_t n = strlen(p);
        if (n && p[n - 1] == '*' ? strncmp(p, url, n - 1) == 0 : strcmp(p, url) == 0)
            return &s->routes[i];
    }
    return NULL;
}

static enum MHD_Result count_content_length(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    (void)value;
    if (strcasecmp(key, "Content-Length") == 0)
        (*(int *)cls)++;
    return MHD_YES;
}

/* Framing and size, decided before the body is read (so no 100 Continue is sent for a refusal). */
static int check_body_headers(struct http_req *r, char *err)
{
    const char *cl = http_req_header(r, "Content-Length"), *te = http_req_header(r, "Transfer-Encoding");
    unsigned long long n;
    char *end;
    int ncl = 0;

    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_content_length, &ncl);
    if (ncl > 1)
        return edged_fail(err, EDGED_E_USAGE, "%d Content-Length headers", ncl);
    if (cl && te)
        return edged_fail(err, EDGED_E_USAGE, "Content-Length together with Transfer-Encoding");
    if (te && strcasecmp(te, "chunked") != 0) /* else libmicrohttpd would read the body until EOF */
        return edged_fail(err, EDGED_E_USAGE, "Transfer-Encoding '%.32s' not supported (only chunked)", te);
    if (!cl)
        return 0;
    errno = 0;
    n = strtoull(cl, &end, 10);
    if (errno || end == cl || *end || cl[0] == '-')
        return edged_fail(err, EDGED_E_USAGE, "malformed Content-Length '%.32s'", cl);
    if (n > r->s->c.max_body)
        return edged_fail(err, EDGED_E_BODY_TOO_LARGE, "body of %llu bytes exceeds --max-body-mb %zu MiB", n,
                          r->s->c.max_body >> 20);
    return upload_body_reserve(&r->body, (size_t)n, err);
}

/* Whether the media type of Content-Type (before any ';') is one of the comma-separated types. */
static int media_type_ok(const char *ctype, const char *types, char *err)
{
    size_t n = 0;

    while (ctype && ctype[n] && ctype[n] != ';' && ctype[n] != ' ' && ctype[n] != '\t')
        n++;
    for (const char *t = types; n && t && *t;) {
        const char *comma = strchr(t, ',');
        size_t tn = comma ? (size_t)(comma - t) : strlen(t);
        if (tn == n && strncasecmp(t, ctype, n) == 0)
            return 0;
        t = comma ? comma + 1 : NULL;
    }
    return edged_fail(err, EDGED_E_NOT_PNG, "Content-Type '%.64s' not accepted; send %s", ctype ? ctype : "(none)",
                      types);
}

static enum MHD_Result receive(struct http_req *r, const char *data, size_t *size)
{
    char msg[EDGED_ERR_LEN];
    int rc;

    if (clock_ms() - r->t0 > r->s->c.request_timeout_s * 1000.0) {
        log_event("warn", "request_timeout", "request %s: body not complete after %d s, connection closed", r->id,
                  r->s->c.request_timeout_s);
        r->error = "request_timeout";
        return MHD_NO;
    }
    if ((rc = upload_body_append(&r->body, data, *size, msg)) < 0) {
        if (rc == EDGED_E_BODY_TOO_LARGE)
            snprintf(msg, sizeof(msg), "body exceeds --max-body-mb %zu MiB (streamed)", r->s->c.max_body >> 20);
        raw_error(r, rc, msg, NULL, NULL);
        return MHD_NO;
    }
    *size = 0;
    return MHD_YES;
}

static int method_is(const char *m, const char *want) { return strcmp(m, want) == 0; }

/* An answer decided on the first callback. A request without a body, or with a body of at most
 * HTTP_DRAIN_MAX bytes, is answered on the final callback, its body read and dropped (never
 * kept): the client reads the answer whole and the connection stays usable, where closing on
 * unread data would reset it and lose the answer. A body over the cap (413), a larger body, or
 * framing that leaves the body's length in doubt is not read: the answer is written to the
 * socket at once, without a 100 Continue, and the connection closed after a short linger.
 * xh/xv: one extra header (Allow, WWW-Authenticate), static strings or NULL. */
static enum MHD_Result refuse(struct http_req *r, int code, const char *msg, const char *xh, const char *xv)
{
    const char *cl = http_req_header(r, "Content-Length"), *te = http_req_header(r, "Transfer-Encoding");
    int ncl = 0;

    if (cl || te)
        MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_content_length, &ncl);
    if (code == EDGED_E_BODY_TOO_LARGE || ncl > 1 || (cl && te) || (te && strcasecmp(te, "chunked") != 0) ||
        (cl && strtoull(cl, NULL, 10) > HTTP_DRAIN_MAX)) {
        raw_error(r, code, msg, xh, xv);
        return MHD_NO;
    }
    r->pending = code;
    r->pending_xh = xh;
    r->pending_xv = xv;
    snprintf(r->pending_msg, sizeof(r->pending_msg), "%s", msg);
    return MHD_YES;
}

/* ---- CORS preflight ------------------------------------------------------------------------ */

static void respond_preflight(struct http_req *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);

    if (!resp)
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", r->route->post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", HTTP_CORS_HEADERS);
    MHD_add_response_header(resp, "Access-Control-Max-Age", HTTP_CORS_MAX_AGE);
    add_common_headers(r, resp);
    if (MHD_queue_response(r->conn, 204, resp) == MHD_YES) {
        r->answered = 1;
        r->status = 204;
    }
    MHD_destroy_response(resp);
}

/* ---- connection tracking ------------------------------------------------------------------- */

static struct http_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return ci ? ci->socket_context : NULL;
}

static void conn_phase(struct http_server *s, struct MHD_Connection *conn, int receiving)
{
    struct http_conn *c = conn_of(conn);

    if (!c)
        return;
    pthread_mutex_lock(&s->conns_mu);
    c->receiving = receiving;
    c->t_phase = clock_ms();
    pthread_mutex_unlock(&s->conns_mu);
}

/* libmicrohttpd calls this on accept and right before it closes the socket (in the connection's
 * thread), so an fd in the list is always still open while the lock is held. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_server *s = cls;
    struct http_conn *c = *socket_context;
    const union MHD_ConnectionInfo *ci;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci || !(c = calloc(1, sizeof(*c))))
            return;
        *c = (struct http_conn){ci->connect_fd, 1, clock_ms(), NULL, NULL};
        pthread_mutex_lock(&s->conns_mu);
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        pthread_mutex_unlock(&s->conns_mu);
        *socket_context = c;
        return;
    }
    if (!c)
        return;
    pthread_mutex_lock(&s->conns_mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&s->conns_mu);
    free(c);
    *socket_context = NULL;
}

/* shutdown(2), not close: the connection's thread sees the end of input and closes it itself. */
int http_reap(struct http_server *s)
{
    double now = clock_ms(), limit = s->c.request_timeout_s * 1000.0;
    int cut = 0;

    pthread_mutex_lock(&s->conns_mu);
    for (struct http_conn *c = s->conns; c; c = c->next)
        if (c->receiving && now - c->t_phase > limit) {
            shutdown(c->fd, SHUT_RDWR);
            c->receiving = 0;
            cut++;
        }
    pthread_mutex_unlock(&s->conns_mu);
    if (cut)
        log_event("warn", "request_timeout", "%d connection(s) cut: request not complete within %d s", cut,
                  s->c.request_timeout_s);
    return cut;
}

/* Admission control: at most max_active image requests in the server at once, wherever they are
 * (receiving, waiting for a codec slot, queued, running, encoding). The job queue alone bounds
 * only the jobs waiting for a worker; without this, requests beyond it would pile up in front of
 * the decode slots with ever longer latency instead of being told to retry (429). */
static int admit_active(struct http_req *r, char *err)
{
    struct http_server *s = r->s;

    if (s->c.max_active <= 0)
        return 0;
    if (atomic_fetch_add(&s->active, 1) >= s->c.max_active) {
        atomic_fetch_sub(&s->active, 1);
        return edged_fail(err, EDGED_E_QUEUE_FULL, "server busy: %d image requests in progress (--queue-depth %d "
                          "plus the processing slots)", s->c.max_active, s->c.queue_depth);
    }
    r->active = 1;
    return 0;
}

/* First callback: id, counters, route, method, and for POST the admission and body framing. */
static enum MHD_Result begin(struct http_server *s, struct MHD_Connection *conn, const char *url, const char *method,
                             void **con_cls)
{
    struct http_req *r = calloc(1, sizeof(*r));
    const char *cid, *allow;
    char err[EDGED_ERR_LEN];
    int rc;

    if (!r)
        return MHD_NO;
    *con_cls = r;
    upload_body_init(&r->body, s->c.max_body);
    r->s = s;
    r->conn = conn;
    r->t0 = clock_ms();
    snprintf(r->method, sizeof(r->method), "%s", method);
    snprintf(r->path, sizeof(r->path), "%s", url);
    cid = http_req_header(r, "X-Request-ID");
    if (id_is_sane(cid))
        snprintf(r->id, sizeof(r->id), "%s", cid);
    else
        id_make(s, r->id);
    atomic_fetch_add(&s->in_flight, 1);
    metrics_request_begin(s->m);
    if (!(r->route = route_find(s, url))) {
        snprintf(err, sizeof(err), "no resource at %.100s", url);
        return refuse(r, EDGED_E_NOT_FOUND, err, NULL, NULL);
    }
    if (s->cors[0] && method_is(method, "OPTIONS")) { /* preflight: browsers send no credentials */
        r->preflight = 1;
        return MHD_YES;
    }
    if (s->keys.n && !r->route->open && !auth_bearer_ok(&s->keys, http_req_header(r, "Authorization"))) {
        snprintf(err, sizeof(err), "%s: send Authorization: Bearer <key>",
                 http_req_header(r, "Authorization") ? "invalid API key" : "missing API key");
        return refuse(r, EDGED_E_UNAUTHORIZED, err, "WWW-Authenticate", "Bearer realm=\"edged\"");
    }
    allow = r->route->post ? "POST" : "GET, HEAD";
    if (r->route->post ? !method_is(method, "POST") : !(method_is(method, "GET") || method_is(method, "HEAD"))) {
        snprintf(err, sizeof(err), "%.15s not allowed on %.100s (allowed: %s)", method, url, allow);
        return refuse(r, EDGED_E_METHOD, err, "Allow", allow);
    }
    if (r->route->post &&
        ((s->admit && (rc = s->admit(s->app, err)) < 0) || (rc = admit_active(r, err)) < 0 ||
         (rc = media_type_ok(http_req_header(r, "Content-Type"), r->route->types, err)) < 0 ||
         (rc = check_body_headers(r, err)) < 0))
        return refuse(r, rc, err, NULL, NULL);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    struct http_req *r = *con_cls;

    (void)version;
    if (!r)
        return begin(cls, conn, url, method, con_cls);
    if (r->answered) { /* refused before the body: drop whatever still arrives */
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->pending && *upload_size) { /* answered on the last callback: read and drop the body */
        r->drained += *upload_size;
        *upload_size = 0;
        if (r->drained <= HTTP_DRAIN_MAX)
            return MHD_YES;
        raw_error(r, r->pending, r->pending_msg, r->pending_xh, r->pending_xv);
        return MHD_NO;
    }
    if (*upload_size)
        return receive(r, upload, upload_size);
    conn_phase(r->s, conn, 0);
    if (r->route && r->route->post)
        r->t.receive = clock_ms() - r->t0;
    if (r->pending)
        respond_error_with(r, r->pending, r->pending_msg, r->pending_xh, r->pending_xv);
    else if (r->preflight)
        respond_preflight(r);
    else
        r->route->handle(r, r->s->app);
    if (!r->answered)
        http_respond_error(r, EDGED_E_INTERNAL, "handler gave no answer");
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    struct http_server *s = cls;
    struct http_req *r = *con_cls;
    struct log_request lr;

    conn_phase(s, conn, 1); /* a keep-alive connection now waits for its next request */
    if (!r)
        return;
    if (!r->answered && !r->error)
        r->error = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "connection_timeout" : "connection_lost";
    if (r->t.total <= 0.0)
        r->t.total = clock_ms() - r->t0;
    lr = (struct log_request){r->id, r->method, r->path, r->filter, r->variant, r->error, r->answered ? r->status : 0,
                              r->body.len, r->bytes_out, r->w, r->h, &r->t};
    log_request(&lr);
    metrics_request_end(s->m, r->answered ? r->status : 0);
    if (r->active)
        atomic_fetch_sub(&s->active, 1);
    atomic_fetch_sub(&s->in_flight, 1);
    upload_body_free(&r->body);
    free(r);
    *con_cls = NULL;
}

static int hex_val(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decodes %HH in the URL path and query arguments, except %00: a NUL would cut the C string, so
 * that "/v1/filter%00junk" would route as "/v1/filter" and "/%00" as "/". Kept literally, such a
 * path matches no route (404) and such a value is no valid parameter (400). */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    char *w = s;
    int hi, lo;

    (void)cls;
    (void)conn;
    for (const char *r = s; *r; r++) {
        if (r[0] == '%' && (hi = hex_val(r[1])) >= 0 && (lo = hex_val(r[2])) >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi << 4 | lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* libmicrohttpd's messages, at most HTTP_LOG_BURST a second (the rest counted and reported):
 * a client can make it log once per connection. Out of descriptors, its accept loop (thread per
 * connection, poll) retries at once, forever: a message saying accept failed for lack of
 * resources therefore also pauses that thread for HTTP_ACCEPT_BACKOFF_MS, turning a spin that
 * burns a core and floods the log into a retry every few milliseconds. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct http_server *s = cls;
    struct timespec nap = {0, HTTP_ACCEPT_BACKOFF_MS * 1000000L};
    char msg[512];
    size_t n;
    long dropped = 0;
    int emit;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    pthread_mutex_lock(&s->log_mu);
    if (clock_ms() - s->log_window > 1000.0) {
        dropped = s->log_dropped;
        s->log_window = clock_ms();
        s->log_count = s->log_dropped = 0;
    }
    emit = s->log_count++ < HTTP_LOG_BURST;
    s->log_dropped += !emit;
    pthread_mutex_unlock(&s->log_mu);
    if (dropped)
        log_event("warn", "http", "%ld libmicrohttpd messages suppressed in the last second", dropped);
    if (emit)
        log_event("warn", "http", "%s", msg);
    if (strncmp(msg, "Error accepting connection", 26) == 0 || strncmp(msg, "Hit process or system resource", 30) == 0)
        nanosleep(&nap, NULL);
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

/* The connection cap, lowered so that connections alone cannot exhaust the descriptors: at its
 * own limit libmicrohttpd refuses a connection cleanly; out of descriptors it can only retry. */
static int fit_connections(int want)
{
    struct rlimit rl;
    long room;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return want;
    room = (long)rl.rlim_cur - HTTP_FD_RESERVE;
    room = room < 1 ? 1 : room;
    if (want <= room)
        return want;
    log_event("warn", "config", "--max-connections %d lowered to %ld: only %ld file descriptors (ulimit -n)", want,
              room, (long)rl.rlim_cur);
    return (int)room;
}

int http_start(struct http_server **out, const struct http_config *c, const struct http_route *routes,
               int nroutes, http_admit admit, void *app, struct metrics *m, char *err)
{
    struct http_server *s = calloc(1, sizeof(*s));
    struct sockaddr_in sa = {0};
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;

    *out = NULL;
    if (!s)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the HTTP server");
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)c->port);
    if (inet_pton(AF_INET, c->host, &sa.sin_addr) != 1) {
        free(s);
        return edged_fail(err, EDGED_E_USAGE, "--host '%s' is not an IPv4 address", c->host);
    }
    if (auth_keys_check(c->api_keys, NULL, err) < 0) {
        free(s);
        return EDGED_E_USAGE;
    }
    *s = (struct http_server){.c = *c, .routes = routes, .nroutes = nroutes, .admit = admit, .app = app, .m = m};
    s->c.api_keys = s->c.cors_origin = NULL; /* the caller's strings are copied below, not kept */
    auth_keys_load(&s->keys, c->api_keys);
    snprintf(s->cors, sizeof(s->cors), "%s", c->cors_origin ? c->cors_origin : "");
    pthread_mutex_init(&s->conns_mu, NULL);
    pthread_mutex_init(&s->log_mu, NULL);
    s->c.max_connections = fit_connections(c->max_connections);
    s->id_seed = ((unsigned long long)getpid() << 32) ^ (unsigned long long)(clock_ms() * 1e3);
    s->d = MHD_start_daemon(flags, (uint16_t)c->port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                            s, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->c.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)c->max_conn_per_ip,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->conn_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
                            on_connection, s, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
    if (!s->d) {
        pthread_mutex_destroy(&s->conns_mu);
        pthread_mutex_destroy(&s->log_mu);
        free(s);
        return edged_fail(err, EDGED_E_IO, "cannot listen on %s:%d (in use, or not permitted)", c->host, c->port);
    }
    *out = s;
    return 0;
}

void http_quiesce(struct http_server *s)
{
    MHD_socket fd = MHD_quiesce_daemon(s->d);

    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

int http_in_flight(struct http_server *s) { return atomic_load(&s->in_flight); }
void http_set_closing(struct http_server *s) { atomic_store(&s->closing, 1); }

void http_stop(struct http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    pthread_mutex_destroy(&s->conns_mu);
    pthread_mutex_destroy(&s->log_mu);
    free(s);
}

/* ---- accessors ----------------------------------------------------------------------------- */

const char *http_req_id(const struct http_req *r) { return r->id; }
const char *http_req_path(const struct http_req *r) { return r->path; }

const char *http_req_header(struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const uint8_t *http_req_body(const struct http_req *r, size_t *len)
{
    *len = r->body.len;
    return r->body.p;
}

double http_req_start(const struct http_req *r) { return r->t0; }

struct query_walk {
    int (*cb)(void *cls, const char *key, const char *value);
    void *cls;
    int rc;
};

static enum MHD_Result query_step(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct query_walk *q = cls;

    (void)kind;
    q->rc = q->cb(q->cls, key, value ? value : "");
    return q->rc ? MHD_NO : MHD_YES;
}

int http_req_query(struct http_req *r, int (*cb)(void *cls, const char *key, const char *value), void *cls)
{
    struct query_walk q = {cb, cls, 0};

    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, query_step, &q);
    return q.rc;
}

struct result_times *http_req_times(struct http_req *r) { return &r->t; }

void http_req_note(struct http_req *r, const char *filter, const char *variant, int w, int h)
{
    r->filter = filter;
    r->variant = variant;
    r->w = w;
    r->h = h;
}
