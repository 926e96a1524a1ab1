/* http_guard.c — what keeps a request or a client from hurting the server: body framing and
 * media-type checks before the body is read, early refusals (with their own raw writer),
 * admission of image requests, connection accounting and reaping, the descriptor cap on
 * connections, and the rate limit on libmicrohttpd's log messages.
 *
 * Why a second writer: libmicrohttpd (0.9.75) can queue a response only before the body or after
 * all of it. A refusal whose body must not be read (over the cap, ambiguous framing, a streamed
 * body that grows past --max-body-mb) is therefore written to the socket here, directly, and the
 * caller returns MHD_NO, which closes the connection. */
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "jobs/budget.h"
#include "http/http_answer.h"
#include "http/http_guard.h"
#include "ops/log.h"

#define HTTP_LINGER_MS 1000              /* after an early 413: read and drop the client's rest */
#define HTTP_LINGER_BYTES (8u << 20)
#define HTTP_LOG_BURST 20          /* libmicrohttpd messages logged per second at most */
#define HTTP_ACCEPT_BACKOFF_MS 20  /* accept failed for lack of descriptors: wait before retrying */
#define HTTP_FD_RESERVE 64         /* descriptors kept for everything but connections */

static struct http_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return ci ? ci->socket_context : NULL;
}

/* ---- the raw writer ------------------------------------------------------------------------ */

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

#define HTTP_RAW_HEADER(name, value) name ": " value "\r\n"

/* The answer is written like add_common_headers would, plus Content-Length and Connection: close;
 * then the write side is shut and the client's rest read for a moment (linger_drain). */
void http_guard_raw_error(struct http_req *r, int code, const char *msg, const char *xh, const char *xv)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    char body[RESULT_ERROR_MAX], head[2048], timing[512], cors[400] = "", extra[300] = "";
    int status = result_error(code, http_public_message(r, code, msg), r->id, body, sizeof(body));
    size_t blen = strlen(body);

    r->t.total = clock_ms() - r->t0;
    result_server_timing(&r->t, timing, sizeof(timing));
    if (r->s->cors[0])
        snprintf(cors, sizeof(cors), "Access-Control-Allow-Origin: %.255s\r\nAccess-Control-Expose-Headers: %s\r\n",
                 r->s->cors, HTTP_CORS_EXPOSE);
    if (!xh && http_retry_after(code)) {
        xh = "Retry-After";
        xv = http_retry_after(code);
    }
    if (xh && xv)
        snprintf(extra, sizeof(extra), "%.40s: %.200s\r\n", xh, xv);
    snprintf(head, sizeof(head),
             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n"
             "X-Request-ID: %s\r\ntraceparent: %s\r\nServer-Timing: %.511s\r\nCache-Control: no-store\r\n"
                 HTTP_SECURITY_HEADERS(HTTP_RAW_HEADER) "%.399s%.299s\r\n",
             status, MHD_get_reason_phrase_for((unsigned)status), blen, r->id, r->traceparent, timing, cors, extra);
    http_answer_note_error(r, code);
    if (!ci || send_all(ci->connect_fd, head, strlen(head)) < 0 || send_all(ci->connect_fd, body, blen) < 0)
        return;
    shutdown(ci->connect_fd, SHUT_WR);
    linger_drain(ci->connect_fd);
    r->answered = 1;
    r->raw = 1;
    r->status = status;
    r->bytes_out = blen;
}

/* ---- checks before the body ---------------------------------------------------------------- */

/* Admission control: at most max_active image requests in the server at once, wherever they are
 * (receiving, waiting for a codec slot, queued, running, encoding). The job queue alone bounds
 * only the jobs waiting for a worker; without this, requests beyond it would pile up in front of
 * the decode slots with ever longer latency instead of being told to retry (429). */
int http_guard_admit_active(struct http_req *r, int count, char *err)
{
    struct http_server *s = r->s;

    if (s->c.max_active <= 0)
        return 0;
    if (count ? atomic_fetch_add(&s->active, 1) >= s->c.max_active : atomic_load(&s->active) >= s->c.max_active) {
        if (count)
            atomic_fetch_sub(&s->active, 1);
        return edged_fail(err, EDGED_E_QUEUE_FULL, "server busy: %d image requests in progress (--queue-depth %d "
                          "plus the processing slots)", s->c.max_active, s->c.queue_depth);
    }
    r->active = count;
    return 0;
}

int http_guard_conn_over(struct http_req *r, char *err)
{
    struct http_conn *c = conn_of(r->conn);
    int over;

    pthread_mutex_lock(&r->s->conns_mu);
    over = c ? c->over : 0;
    pthread_mutex_unlock(&r->s->conns_mu);
    if (!over || r->route->open)
        return 0;
    r->close = 1;
    if (over == EDGED_E_QUEUE_FULL)
        return edged_fail(err, over, "too many connections from your address (--max-conn-per-ip %d)",
                          r->s->c.max_conn_per_ip);
    return edged_fail(err, over, "too many connections (--max-connections %d)", r->s->c.max_connections);
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
int http_guard_body_headers(struct http_req *r, char *err)
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
    upload_body_announce(&r->body, (size_t)n); /* one buffer of n bytes; the budget counts what arrives */
    return 0;
}

/* The media type is Content-Type up to any ';' or blank; parameters (charset, boundary) are not
 * compared. */
int http_guard_media_type(const char *ctype, const char *types, char *err)
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

/* An answer decided on the first callback. A request without a body, or with a body of at most
 * HTTP_DRAIN_MAX bytes, is answered on the final callback, its body read and dropped (never
 * kept): the client reads the answer whole and the connection stays usable, where closing on
 * unread data would reset it and lose the answer. A body over the cap (413), a larger body, or
 * framing that leaves the body's length in doubt is not read: the answer is written to the
 * socket at once, without a 100 Continue, and the connection closed after a short linger.
 * xh/xv: one extra header (Allow, WWW-Authenticate), static strings or NULL. */
enum MHD_Result http_guard_refuse(struct http_req *r, int code, const char *msg, const char *xh, const char *xv)
{
    const char *cl = http_req_header(r, "Content-Length"), *te = http_req_header(r, "Transfer-Encoding");
    int ncl = 0;

    if (cl || te)
        MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_content_length, &ncl);
    if (code == EDGED_E_BODY_TOO_LARGE || ncl > 1 || (cl && te) || (te && strcasecmp(te, "chunked") != 0) ||
        (cl && strtoull(cl, NULL, 10) > HTTP_DRAIN_MAX)) {
        http_guard_raw_error(r, code, msg, xh, xv);
        return MHD_NO;
    }
    r->pending = code;
    r->pending_xh = xh;
    r->pending_xv = xv;
    snprintf(r->pending_msg, sizeof(r->pending_msg), "%s", msg);
    return MHD_YES;
}

/* ---- bodies in the memory budget ----------------------------------------------------------- */

/* What bodies still arriving may hold of the memory budget: all of them together half of it, so
 * that stalled uploads leave the other half to the images being decoded, filtered and encoded;
 * those from one client address a quarter, so that one client cannot take the bodies' half alone.
 * Each is at least one body of --max-body-mb (never more than the budget), so that every body the
 * cap admits can arrive. 0: no cap (an unlimited budget). */
static void body_caps(const struct http_server *s, size_t *all, size_t *one)
{
    size_t limit = budget_limit(s->c.budget), body = s->c.max_body < limit ? s->c.max_body : limit;

    *all = limit / 2 > body ? limit / 2 : body;
    *one = limit / 4 > body ? limit / 4 : body;
}

/* Body bytes still arriving from address ip; called with conns_mu held. */
static size_t arriving_from(const struct http_server *s, uint32_t ip)
{
    size_t n = 0;

    for (const struct http_conn *it = s->conns; it; it = it->next)
        n += it->ip == ip ? it->arriving : 0;
    return n;
}

/* Counts n more bytes (or, negative, fewer) of r's body as arriving; conns_mu held. */
static void count_arriving(struct http_req *r, struct http_conn *c, size_t n, int add)
{
    r->s->arriving = add ? r->s->arriving + n : r->s->arriving - n;
    if (c)
        c->arriving = add ? c->arriving + n : c->arriving - n;
    r->arriving = add ? r->arriving + n : r->arriving - n;
}

/* The caps are checked and the bytes counted under one lock, so that two uploads from one address
 * cannot both pass the last free share; the budget may then wait, without the lock. */
int http_guard_body_take(struct http_req *r, size_t n, char *err)
{
    struct http_server *s = r->s;
    struct http_conn *c = conn_of(r->conn);
    size_t all, one, mine = 0;
    int rc = 0;

    body_caps(s, &all, &one);
    pthread_mutex_lock(&s->conns_mu);
    if (c && c->ip)
        mine = arriving_from(s, c->ip);
    if (all && s->arriving + n > all)
        rc = edged_fail(err, EDGED_E_MEMORY_BUDGET, "uploads still arriving hold %zu of the %zu MiB that are their "
                        "part of the memory budget (--max-memory-mb)", s->arriving >> 20, all >> 20);
    else if (one && c && c->ip && mine + n > one)
        rc = edged_fail(err, EDGED_E_QUEUE_FULL, "uploads from your address still arriving hold %zu of the %zu MiB "
                        "that are its share of the memory budget: send them faster or fewer at once", mine >> 20,
                        one >> 20);
    else
        count_arriving(r, c, n, 1);
    pthread_mutex_unlock(&s->conns_mu);
    if (rc == 0 && (rc = budget_take(s->c.budget, n, HTTP_BUDGET_WAIT_MS, err)) < 0) {
        pthread_mutex_lock(&s->conns_mu);
        count_arriving(r, c, n, 0);
        pthread_mutex_unlock(&s->conns_mu);
    }
    if (rc == 0)
        r->reserved += n;
    return rc;
}

void http_guard_body_arrived(struct http_req *r)
{
    struct http_conn *c = conn_of(r->conn);

    pthread_mutex_lock(&r->s->conns_mu);
    count_arriving(r, c, r->arriving, 0);
    if (c)
        c->body = 0;
    pthread_mutex_unlock(&r->s->conns_mu);
}

void http_guard_body_begin(struct http_req *r)
{
    struct http_conn *c = conn_of(r->conn);

    if (!c)
        return;
    pthread_mutex_lock(&r->s->conns_mu);
    c->body = 1;
    c->got = c->mark = 0;
    c->t_mark = clock_ms();
    pthread_mutex_unlock(&r->s->conns_mu);
}

void http_guard_body_progress(struct http_req *r, size_t n)
{
    struct http_conn *c = conn_of(r->conn);

    if (!c)
        return;
    pthread_mutex_lock(&r->s->conns_mu);
    c->got += n;
    pthread_mutex_unlock(&r->s->conns_mu);
}

/* Whether c's body brought less than --min-body-rate-kb over the window that ends now (the next
 * window starts then); conns_mu held. */
static int body_too_slow(const struct http_server *s, struct http_conn *c, double now)
{
    if (!s->c.min_body_rate || !c->body || now - c->t_mark < HTTP_BODY_WINDOW_MS)
        return 0;
    if (c->got - c->mark < s->c.min_body_rate * (HTTP_BODY_WINDOW_MS / 1000))
        return 1;
    c->mark = c->got;
    c->t_mark = now;
    return 0;
}

void http_guard_conn_phase(struct http_server *s, struct MHD_Connection *conn, int receiving)
{
    struct http_conn *c = conn_of(conn);

    if (!c)
        return;
    pthread_mutex_lock(&s->conns_mu);
    c->receiving = receiving;
    c->t_phase = clock_ms();
    pthread_mutex_unlock(&s->conns_mu);
}

/* IPv4 peer address of conn in network order, 0 when unknown. */
static uint32_t conn_ip(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

    if (!ci || !ci->client_addr || ci->client_addr->sa_family != AF_INET)
        return 0;
    return ((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr.s_addr;
}

/* Marks a new connection over a cap: libmicrohttpd accepts conn_reserve more than
 * --max-connections and has no per-address cap of its own, so that a connection past either cap
 * gets a JSON answer (or health served) instead of a reset. Called with conns_mu held. */
static void conn_mark_over(struct http_server *s, struct http_conn *c)
{
    int total = 0, same = 0;

    for (struct http_conn *it = s->conns; it; it = it->next) {
        total += !it->over;
        same += !it->over && c->ip && it->ip == c->ip;
    }
    if (s->c.max_conn_per_ip > 0 && same > s->c.max_conn_per_ip)
        c->over = EDGED_E_QUEUE_FULL; /* the address's own cap first: it is that client's to fix */
    else if (total > s->c.max_connections)
        c->over = EDGED_E_UNAVAILABLE;
}

/* A reconnect storm (a client that replaces every socket the server closes, sending nothing) keeps
 * the reserve full: the cut after HTTP_OVER_IDLE_MS frees a slot only for the next connect, which
 * is the storm's more often than a probe's, and probes find no room. So at most half the reserve
 * (at least 1) may wait for a request: a newer connection over a cap displaces the one that has
 * waited longest, and the other half stays free for probes, which send their request at once and
 * are answered before they could be the oldest. Called with conns_mu held. */
static void conn_displace_idle(struct http_server *s)
{
    int keep = s->c.conn_reserve / 2 > 1 ? s->c.conn_reserve / 2 : 1, idle;
    struct http_conn *oldest;

    do {
        idle = 0;
        oldest = NULL;
        for (struct http_conn *it = s->conns; it; it = it->next)
            if (it->over && it->receiving) {
                idle++;
                oldest = !oldest || it->t_phase < oldest->t_phase ? it : oldest;
            }
        if (idle <= keep)
            return;
        shutdown(oldest->fd, SHUT_RDWR); /* its thread sees the end and closes it, as http_reap's */
        oldest->receiving = 0;
        s->displaced++;
    } while (idle - 1 > keep);
}

/* libmicrohttpd calls this on accept and right before it closes the socket (in the connection's
 * thread), so an fd in the list is always still open while the lock is held. */
void http_guard_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
    struct http_server *s = cls;
    struct http_conn *c = *socket_context;
    const union MHD_ConnectionInfo *ci;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci || !(c = calloc(1, sizeof(*c))))
            return;
        *c = (struct http_conn){.fd = ci->connect_fd, .receiving = 1, .t_phase = clock_ms(), .ip = conn_ip(conn)};
        pthread_mutex_lock(&s->conns_mu);
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        conn_mark_over(s, c);
        if (c->over)
            conn_displace_idle(s);
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

/* shutdown(2), not close: the connection's thread sees the end of input and closes it itself.
 * Under a storm this runs every tick and cuts a few each time: one line a second says how many. */
int http_reap(struct http_server *s)
{
    double now = clock_ms(), limit = s->c.request_timeout_s * 1000.0;
    int cut = 0, slow = 0, late_total = 0, slow_total = 0, displaced = 0;

    pthread_mutex_lock(&s->conns_mu);
    for (struct http_conn *c = s->conns; c; c = c->next) {
        int late = c->receiving && now - c->t_phase > (c->over ? HTTP_OVER_IDLE_MS : limit);
        int stalled = !late && c->receiving && body_too_slow(s, c, now);
        if (late || stalled) {
            shutdown(c->fd, SHUT_RDWR);
            c->receiving = 0;
            cut += late;
            slow += stalled;
        }
    }
    s->reap_cut += cut;
    s->reap_slow += slow;
    if ((s->reap_cut || s->reap_slow || s->displaced) && now - s->reap_logged >= 1000.0) {
        late_total = s->reap_cut;
        slow_total = s->reap_slow;
        displaced = s->displaced;
        s->reap_cut = s->reap_slow = s->displaced = 0;
        s->reap_logged = now;
    }
    pthread_mutex_unlock(&s->conns_mu);
    if (late_total || displaced)
        log_event("warn", "request_timeout", "%d connection(s) cut: request not complete within %d s (over a cap: "
                  "%d ms); %d idle over a cap displaced by newer ones", late_total, s->c.request_timeout_s,
                  HTTP_OVER_IDLE_MS, displaced);
    if (slow_total)
        log_event("warn", "request_timeout", "%d connection(s) cut: body slower than --min-body-rate-kb %zu over %d s",
                  slow_total, s->c.min_body_rate >> 10, HTTP_BODY_WINDOW_MS / 1000);
    return cut + slow;
}

/* ---- descriptors and libmicrohttpd's log -------------------------------------------------- */

/* The connection cap, lowered so that connections alone cannot exhaust the descriptors: at its
 * own limit libmicrohttpd refuses a connection cleanly; out of descriptors it can only retry. The
 * reserve comes out of what the descriptors allow; when they allow no more, there is none. */
int http_guard_fit_connections(int max_connections, int reserve, int *api)
{
    int want = max_connections + reserve;
    struct rlimit rl;
    long room;

    *api = max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return want;
    room = (long)rl.rlim_cur - HTTP_FD_RESERVE;
    room = room < 1 ? 1 : room;
    if (want <= room)
        return want;
    *api = room > reserve ? (int)room - reserve : (int)room;
    log_event("warn", "config", "--max-connections %d lowered to %d (%ld more kept for probes): only %ld file "
              "descriptors (ulimit -n)", max_connections, *api, room - *api, (long)rl.rlim_cur);
    return (int)room;
}

/* libmicrohttpd's messages, at most HTTP_LOG_BURST a second (the rest counted and reported):
 * a client can make it log once per connection. Out of descriptors, its accept loop (thread per
 * connection, poll) retries at once, forever: a message saying accept failed for lack of
 * resources therefore also pauses that thread for HTTP_ACCEPT_BACKOFF_MS, turning a spin that
 * burns a core and floods the log into a retry every few milliseconds. */
void http_guard_mhd_log(void *cls, const char *fmt, va_list ap)
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
