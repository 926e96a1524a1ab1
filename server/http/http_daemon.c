/* http_daemon.c — the libmicrohttpd daemon: start and stop, per-request state in *con_cls, routing and
 * dispatch to the handlers, and the body as it arrives. The state and the request accessors
 * handlers use are in http_state.c, answers in http_answer.c, refusals and connection accounting
 * in http_guard.c.
 *
 * Threading: thread per connection (MHD_USE_THREAD_PER_CONNECTION), bounded by
 * --max-connections. A request's connection thread blocks on its job (decode, wait for the
 * worker, encode); with a thread pool sized to the cores every blocked request would stall the
 * other connections of its pool thread, including /healthz and /readyz, which must answer fast
 * under overload. With a thread each, blocking is harmless and the CPU-heavy stages are bounded
 * separately by the codec slots (--threads, service.c), so they still scale with the cores
 * without oversubscribing them. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jobs/budget.h"
#include "clock.h"
#include "http/http_answer.h"
#include "http/http_guard.h"
#include "http/http_state.h"
#include "ops/log.h"

/* MHD's per-connection pool: the read buffer and a record per header and query argument. It must
 * hold a request line with the largest query edged answers itself (HTTP_QUERY_MAX_BYTES, which may
 * split into ~4096 argument records of ~64 bytes) plus the headers; past the pool MHD closes the
 * connection after its own 431. The pool is mapped, so untouched pages cost no memory. */
#define HTTP_CONN_MEMORY (512 * 1024)

/* ---- request ids and trace context ---------------------------------------------------------- */

static int id_is_sane(const char *id)
{
    size_t n = 0;

    for (; id && id[n]; n++)
        if (!((id[n] >= 'a' && id[n] <= 'z') || (id[n] >= 'A' && id[n] <= 'Z') || (id[n] >= '0' && id[n] <= '9') ||
              id[n] == '-' || id[n] == '_' || id[n] == '.' || id[n] == ':'))
            return 0;
    return n >= 1 && n <= HTTP_ID_MAX;
}

/* splitmix64 of a random per-process seed plus a counter: unique within the process, not
 * guessable cheaply, and (the seed from getrandom) different across replicas. */
static unsigned long long id_next(struct http_server *s)
{
    unsigned long long z = s->id_seed + 0x9e3779b97f4a7c15ULL * (atomic_fetch_add(&s->next_id, 1) + 1);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static unsigned long long id_seed(void)
{
    unsigned long long seed;

    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
        return seed;
    return ((unsigned long long)getpid() << 32) ^ (unsigned long long)(clock_ms() * 1e3);
}

/* The request id: the client's X-Request-ID when sane, else 16 hex digits. The server span:
 * under the caller's traceparent when valid, else in a new trace. */
static void ids_begin(struct http_server *s, struct http_req *r)
{
    const char *cid = http_req_header(r, "X-Request-ID");
    uint64_t rnd[3];

    if (id_is_sane(cid))
        snprintf(r->id, sizeof(r->id), "%s", cid);
    else
        snprintf(r->id, sizeof(r->id), "%016llx", id_next(s));
    rnd[0] = id_next(s), rnd[1] = id_next(s), rnd[2] = id_next(s);
    trace_begin(&r->trace, http_req_header(r, "traceparent"), rnd);
    trace_format(&r->trace, r->traceparent, sizeof(r->traceparent));
}

/* ---- routing, dispatch and the body ------------------------------------------------------- */

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

static int method_is(const char *m, const char *want) { return strcmp(m, want) == 0; }

static enum MHD_Result query_size(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    *(size_t *)cls += strlen(key) + (value ? strlen(value) + 1 : 0) + 1;
    return MHD_YES;
}

/* The documented bounds of a query string: HTTP_QUERY_MAX_ARGS arguments and HTTP_QUERY_MAX_BYTES
 * of decoded keys and values (with their '=' and '&'). Past them, EDGED_E_URI_TOO_LONG. */
static int query_check(struct MHD_Connection *conn, char *err)
{
    int n = MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    size_t bytes = 0;

    if (n > HTTP_QUERY_MAX_ARGS)
        return edged_fail(err, EDGED_E_URI_TOO_LONG, "query string has %d arguments; at most %d", n,
                          HTTP_QUERY_MAX_ARGS);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, query_size, &bytes);
    if (bytes > HTTP_QUERY_MAX_BYTES)
        return edged_fail(err, EDGED_E_URI_TOO_LONG, "query string of %zu bytes; at most %d", bytes,
                          HTTP_QUERY_MAX_BYTES);
    return 0;
}

static enum MHD_Result receive(struct http_req *r, const char *data, size_t *size)
{
    char msg[EDGED_ERR_LEN];
    size_t need;
    int rc;

    if (clock_ms() - r->t0 > r->s->c.request_timeout_s * 1000.0) {
        log_event("warn", "request_timeout", "request %s: body not complete after %d s, connection closed", r->id,
                  r->s->c.request_timeout_s);
        r->error = "request_timeout";
        return MHD_NO;
    }
    /* what has arrived, rounded up to a step (or to the announced length), is reserved before it is
     * kept: the buffer of an announced length has its whole capacity from the first piece, but its
     * pages are touched only as bytes arrive, and the budget counts those (upload_body_next_cap) */
    need = (r->body.len + *size + HTTP_BODY_STEP - 1) / HTTP_BODY_STEP * HTTP_BODY_STEP;
    if (need > r->body.max && r->body.len + *size <= r->body.max)
        need = r->body.max;
    if (need > r->reserved && (rc = http_guard_body_take(r, need - r->reserved, msg)) < 0) {
        http_guard_raw_error(r, rc == EDGED_E_IMAGE_TOO_LARGE ? EDGED_E_MEMORY_BUDGET : rc, msg, NULL, NULL);
        return MHD_NO;
    }
    if ((rc = upload_body_append(&r->body, data, *size, msg)) < 0) {
        if (rc == EDGED_E_BODY_TOO_LARGE)
            snprintf(msg, sizeof(msg), "body exceeds --max-body-mb %zu MiB (streamed)", r->s->c.max_body >> 20);
        http_guard_raw_error(r, rc, msg, NULL, NULL);
        return MHD_NO;
    }
    r->received = r->body.len;
    *size = 0;
    return MHD_YES;
}

/* With API keys on: 1 when the request carries none of them (it is then answered 401). */
static int lacks_key(struct http_req *r)
{
    return r->s->keys.n && !auth_bearer_ok(&r->s->keys, http_req_header(r, "Authorization"));
}

static enum MHD_Result refuse_unauthorized(struct http_req *r, char *err)
{
    snprintf(err, EDGED_ERR_LEN, "%s: send Authorization: Bearer <key>",
             http_req_header(r, "Authorization") ? "invalid API key" : "missing API key");
    return http_guard_refuse(r, EDGED_E_UNAUTHORIZED, err, "WWW-Authenticate", "Bearer realm=\"edged\"");
}

/* First callback: id, counters, route, method, and for POST the admission and body framing. An
 * unknown path is 401 without a key, like a known one: which paths exist is told to callers
 * with a key only. */
static enum MHD_Result begin(struct http_server *s, struct MHD_Connection *conn, const char *url, const char *method,
                             void **con_cls)
{
    struct http_req *r = calloc(1, sizeof(*r));
    const char *allow;
    char err[EDGED_ERR_LEN];
    int rc;

    if (!r)
        return MHD_NO;
    *con_cls = r;
    upload_body_init(&r->body, s->c.max_body);
    r->s = s;
    r->conn = conn;
    r->t0 = clock_ms();
    r->device = -1;
    snprintf(r->method, sizeof(r->method), "%s", method);
    snprintf(r->path, sizeof(r->path), "%s", url);
    ids_begin(s, r);
    atomic_fetch_add(&s->in_flight, 1);
    metrics_request_begin(s->m);
    http_guard_body_begin(r);
    if (!(r->route = route_find(s, url)) && lacks_key(r))
        return refuse_unauthorized(r, err);
    if (!r->route) {
        snprintf(err, sizeof(err), "no resource at %.100s", url);
        return http_guard_refuse(r, EDGED_E_NOT_FOUND, err, NULL, NULL);
    }
    if ((rc = query_check(conn, err)) < 0 || (rc = http_guard_conn_over(r, err)) < 0)
        return http_guard_refuse(r, rc, err, NULL, NULL);
    if (s->cors[0] && method_is(method, "OPTIONS")) { /* preflight: browsers send no credentials */
        r->preflight = 1;
        return MHD_YES;
    }
    if (!r->route->open && lacks_key(r))
        return refuse_unauthorized(r, err);
    allow = r->route->post ? "POST" : "GET, HEAD";
    if (r->route->post ? !method_is(method, "POST") : !(method_is(method, "GET") || method_is(method, "HEAD"))) {
        snprintf(err, sizeof(err), "%.15s not allowed on %.100s (allowed: %s)", method, url, allow);
        return http_guard_refuse(r, EDGED_E_METHOD, err, "Allow", allow);
    }
    if (r->route->post &&
        ((s->admit && (rc = s->admit(s->app, err)) < 0) || (rc = http_guard_admit_active(r, 0, err)) < 0 ||
         (rc = http_guard_media_type(http_req_header(r, "Content-Type"), r->route->types, err)) < 0 ||
         (rc = http_guard_body_headers(r, err)) < 0))
        return http_guard_refuse(r, rc, err, NULL, NULL);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    struct http_req *r = *con_cls;
    int rc;

    (void)version;
    if (!r)
        return begin(cls, conn, url, method, con_cls);
    if (*upload_size)
        http_guard_body_progress(r, *upload_size);
    if (r->answered) { /* refused before the body: drop whatever still arrives */
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->pending && *upload_size) { /* answered on the last callback: read and drop the body */
        r->drained += *upload_size;
        *upload_size = 0;
        if (r->drained <= HTTP_DRAIN_MAX)
            return MHD_YES;
        http_guard_raw_error(r, r->pending, r->pending_msg, r->pending_xh, r->pending_xv);
        return MHD_NO;
    }
    if (*upload_size)
        return receive(r, upload, upload_size);
    http_guard_conn_phase(r->s, conn, 0);
    http_guard_body_arrived(r);
    if (r->route && r->route->post)
        r->t.receive = clock_ms() - r->t0;
    if (!r->pending && !r->preflight && r->route->post && (rc = http_guard_admit_active(r, 1, r->pending_msg)) < 0)
        r->pending = rc; /* counted once the body is here: a stalled upload holds no place */
    if (r->pending)
        http_respond_error_with(r, r->pending, r->pending_msg, r->pending_xh, r->pending_xv);
    else if (r->preflight)
        http_respond_preflight(r);
    else
        r->route->handle(r, r->s->app);
    if (!r->answered)
        http_respond_error(r, EDGED_E_INTERNAL, "handler gave no answer");
    return MHD_YES;
}

/* The access line's level (log_request_level): the refusals for capacity are the queue's and
 * admission's 429, the memory budget's 503 and the 503 of a server not ready or draining. */
static enum log_level access_level(const struct http_req *r)
{
    int capacity = r->code == EDGED_E_QUEUE_FULL || r->code == EDGED_E_MEMORY_BUDGET || r->code == EDGED_E_UNAVAILABLE;

    return log_request_level(r->answered ? r->status : 0, capacity, r->route && r->route->probe);
}

static void log_access(const struct http_req *r)
{
    struct log_request lr = {access_level(r), r->id, r->method, r->path, r->filter, r->variant, r->backend,
                             r->error, r->trace.trace_id, r->trace.span_id,
                             r->trace.parent_id[0] ? r->trace.parent_id : NULL, r->answered ? r->status : 0,
                             r->received, r->bytes_out, r->w, r->h, &r->t, r->device};

    log_request(&lr);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    struct http_server *s = cls;
    struct http_req *r = *con_cls;

    http_guard_conn_phase(s, conn, 1); /* a keep-alive connection now waits for its next request */
    if (!r)
        return;
    if (!r->answered && !r->error)
        r->error = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "connection_timeout" : "connection_lost";
    if (r->answered && !r->raw && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) { /* never delivered */
        if (r->status != edged_err_status(EDGED_E_CLIENT_GONE))
            metrics_reject(s->m, EDGED_E_CLIENT_GONE);
        r->status = edged_err_status(EDGED_E_CLIENT_GONE);
        r->error = edged_err_name(EDGED_E_CLIENT_GONE);
        r->code = EDGED_E_CLIENT_GONE;
    }
    if (r->t.total <= 0.0)
        r->t.total = clock_ms() - r->t0;
    log_access(r);
    metrics_request_end(s->m, r->route ? r->route->path : NULL, r->answered ? r->status : 0);
    if (r->filter)
        metrics_filter_request(s->m, r->filter, r->backend, r->answered ? r->status : 0, r->t.total / 1e3);
    if (r->active)
        atomic_fetch_sub(&s->active, 1);
    atomic_fetch_sub(&s->in_flight, 1);
    upload_body_free(&r->body);
    http_guard_body_arrived(r);
    budget_give(s->c.budget, r->reserved);
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

/* ---- lifecycle ----------------------------------------------------------------------------- */

/* Why the daemon could not listen on sa, for the message: libmicrohttpd says only that it failed,
 * so the bind is tried once more here, as it binds (SO_REUSEADDR), and its errno named. */
static const char *listen_failure(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, e;

    if (fd < 0)
        return strerror(errno);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    e = bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 && listen(fd, 1) == 0 ? 0 : errno;
    close(fd);
    return e ? strerror(e) : "libmicrohttpd could not start the daemon (see the log line before)";
}

int http_start(struct http_server **out, const struct http_config *c, const struct http_route *routes,
               int nroutes, http_admit admit, void *app, struct metrics *m, char *err)
{
    struct http_server *s = calloc(1, sizeof(*s));
    struct sockaddr_in sa = {0};
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;
    int conn_limit;

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
    conn_limit = http_guard_fit_connections(c->max_connections, c->conn_reserve, &s->c.max_connections);
    s->id_seed = id_seed();
    for (int i = 0; i < nroutes; i++)
        metrics_add_route(m, routes[i].path);
    s->d = MHD_start_daemon(flags, (uint16_t)c->port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
                            http_guard_mhd_log, s, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)conn_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->conn_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
                            http_guard_on_connection, s, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
    if (!s->d) {
        pthread_mutex_destroy(&s->conns_mu);
        pthread_mutex_destroy(&s->log_mu);
        free(s);
        return edged_fail(err, EDGED_E_IO, "cannot listen on %s:%d: %s", c->host, c->port, listen_failure(&sa));
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
