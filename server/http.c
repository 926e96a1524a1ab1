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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "errors.h"
#include "log.h"

#define HTTP_BODY_CHUNK (256 * 1024)     /* first body buffer when the length is unknown */
#define HTTP_CONN_MEMORY (128 * 1024)    /* MHD's per-connection pool: headers + read buffer */
#define HTTP_LINGER_MS 1000              /* after an early 413: read and drop the client's rest */
#define HTTP_LINGER_BYTES (8u << 20)

struct http_server {
    struct MHD_Daemon *d;
    struct http_config c;
    const struct http_route *routes;
    int nroutes;
    http_admit admit;
    void *app;
    struct metrics *m;
    atomic_int in_flight, closing;
    atomic_ullong next_id;
    unsigned long long id_seed;
};

struct http_req {
    struct http_server *s;
    struct MHD_Connection *conn;
    const struct http_route *route;
    char id[HTTP_ID_MAX + 1];
    char method[16], path[128];
    double t0;
    int answered, status;
    int pending;                /* an error decided on the first callback, answered on the last */
    const char *pending_allow;
    char pending_msg[EDGED_ERR_LEN];
    size_t bytes_out;
    const char *error;
    uint8_t *body;
    size_t len, cap;
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

static void respond_error_with(struct http_req *r, int code, const char *msg, const char *xh, const char *xv)
{
    char body[RESULT_ERROR_MAX];
    int status = result_error(code, msg, r->id, body, sizeof(body));

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
static void raw_error(struct http_req *r, int code, const char *msg)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    char body[RESULT_ERROR_MAX], head[1024], timing[512];
    int status = result_error(code, msg, r->id, body, sizeof(body));
    size_t blen = strlen(body);

    r->t.total = clock_ms() - r->t0;
    result_server_timing(&r->t, timing, sizeof(timing));
    snprintf(head, sizeof(head),
             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n"
             "X-Request-ID: %s\r\nServer-Timing: %s\r\nCache-Control: no-store\r\n\r\n",
             status, MHD_get_reason_phrase_for((unsigned)status), blen, r->id, timing);
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
    if (!cl)
        return 0;
    errno = 0;
    n = strtoull(cl, &end, 10);
    if (errno || end == cl || *end || cl[0] == '-')
        return edged_fail(err, EDGED_E_USAGE, "malformed Content-Length '%.32s'", cl);
    if (n > r->s->c.max_body)
        return edged_fail(err, EDGED_E_BODY_TOO_LARGE, "body of %llu bytes exceeds --max-body-mb %zu MiB", n,
                          r->s->c.max_body >> 20);
    r->cap = (size_t)n;
    if (n > 0 && !(r->body = malloc((size_t)n)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot buffer a body of %llu bytes", n);
    return 0;
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
    size_t n = *size, cap;
    uint8_t *grown;

    if (clock_ms() - r->t0 > r->s->c.request_timeout_s * 1000.0) {
        log_event("warn", "request_timeout", "request %s: body not complete after %d s, connection closed", r->id,
                  r->s->c.request_timeout_s);
        r->error = "request_timeout";
        return MHD_NO;
    }
    if (n > r->s->c.max_body - r->len) {
        char msg[EDGED_ERR_LEN];
        snprintf(msg, sizeof(msg), "body exceeds --max-body-mb %zu MiB (streamed)", r->s->c.max_body >> 20);
        raw_error(r, EDGED_E_BODY_TOO_LARGE, msg);
        return MHD_NO;
    }
    if (r->len + n > r->cap) {
        cap = r->cap ? r->cap * 2 : HTTP_BODY_CHUNK;
        cap = cap < r->len + n ? r->len + n : cap;
        cap = cap > r->s->c.max_body ? r->s->c.max_body : cap;
        if (!(grown = realloc(r->body, cap))) {
            raw_error(r, EDGED_E_NOMEM, "cannot buffer the request body");
            return MHD_NO;
        }
        r->body = grown;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    *size = 0;
    return MHD_YES;
}

static int method_is(const char *m, const char *want) { return strcmp(m, want) == 0; }

/* An answer decided on the first callback. Queued at once it makes libmicrohttpd close the
 * connection (it will not read a body after an early answer), which is right for a request
 * with a body and wasteful for one without: those are answered on the final callback instead. */
static void refuse(struct http_req *r, int code, const char *msg, const char *allow)
{
    const char *cl = http_req_header(r, "Content-Length");

    if (http_req_header(r, "Transfer-Encoding") || (cl && strcmp(cl, "0") != 0)) {
        respond_error_with(r, code, msg, allow ? "Allow" : NULL, allow);
        return;
    }
    r->pending = code;
    r->pending_allow = allow;
    snprintf(r->pending_msg, sizeof(r->pending_msg), "%s", msg);
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
        refuse(r, EDGED_E_NOT_FOUND, err, NULL);
        return MHD_YES;
    }
    allow = r->route->post ? "POST" : "GET, HEAD";
    if (r->route->post ? !method_is(method, "POST") : !(method_is(method, "GET") || method_is(method, "HEAD"))) {
        snprintf(err, sizeof(err), "%.15s not allowed on %.100s (allowed: %s)", method, url, allow);
        refuse(r, EDGED_E_METHOD, err, allow);
        return MHD_YES;
    }
    if (r->route->post &&
        ((s->admit && (rc = s->admit(s->app, err)) < 0) ||
         (rc = media_type_ok(http_req_header(r, "Content-Type"), r->route->types, err)) < 0 ||
         (rc = check_body_headers(r, err)) < 0))
        refuse(r, rc, err, NULL);
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
    if (*upload_size)
        return receive(r, upload, upload_size);
    if (r->route && r->route->post)
        r->t.receive = clock_ms() - r->t0;
    if (r->pending)
        respond_error_with(r, r->pending, r->pending_msg, r->pending_allow ? "Allow" : NULL, r->pending_allow);
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

    (void)conn;
    if (!r)
        return;
    if (!r->answered && !r->error)
        r->error = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "connection_timeout" : "connection_lost";
    if (r->t.total <= 0.0)
        r->t.total = clock_ms() - r->t0;
    lr = (struct log_request){r->id, r->method, r->path, r->filter, r->variant, r->error, r->answered ? r->status : 0,
                              r->len, r->bytes_out, r->w, r->h, &r->t};
    log_request(&lr);
    metrics_request_end(s->m, r->answered ? r->status : 0);
    atomic_fetch_sub(&s->in_flight, 1);
    free(r->body);
    free(r);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;

    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_event("warn", "http", "%s", msg);
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

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
    *s = (struct http_server){.c = *c, .routes = routes, .nroutes = nroutes, .admit = admit, .app = app, .m = m};
    s->id_seed = ((unsigned long long)getpid() << 32) ^ (unsigned long long)(clock_ms() * 1e3);
    s->d = MHD_start_daemon(flags, (uint16_t)c->port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                            NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_LIMIT, (unsigned)c->max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->conn_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    if (!s->d) {
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
    *len = r->len;
    return r->body;
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
