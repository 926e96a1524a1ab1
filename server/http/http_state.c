/* http_state.c — the request accessors handlers use (http.h), over the per-request state of
 * http_state.h. */
#include <errno.h>
#include <sys/socket.h>

#include "http/http_state.h"

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

/* The body's part of r->reserved is all but what the handler kept: the body is reserved while it
 * arrives, before the handler runs (receive() in http_daemon.c). The length stays in
 * r->received for the access log. */
uint8_t *http_req_take_body(struct http_req *r, size_t *reserved)
{
    uint8_t *p = r->body.p;

    if (!p)
        return NULL;
    *reserved += r->reserved - r->kept;
    r->reserved = r->kept;
    r->body.p = NULL;
    r->body.len = r->body.cap = 0;
    return p;
}

double http_req_start(const struct http_req *r) { return r->t0; }

/* The connection thread is blocked in the handler, so nothing else reads the socket: a peek that
 * sees end of input or an error means the client closed (or half-closed) its side. Bytes waiting
 * (a pipelined request) mean it is still there. */
int http_req_alive(void *cls)
{
    struct http_req *r = cls;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    char c;
    ssize_t k;

    if (!ci)
        return 1;
    k = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return k > 0 || (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

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

const char *http_req_trace_id(const struct http_req *r) { return r->trace.trace_id; }

void http_req_keep_budget(struct http_req *r, size_t n)
{
    r->reserved += n;
    r->kept += n;
}

void http_req_note_device(struct http_req *r, int device) { r->device = device; }

void http_req_note(struct http_req *r, const char *filter, const char *variant, const char *backend, int w, int h)
{
    r->filter = filter;
    r->variant = variant;
    r->backend = backend;
    r->w = w;
    r->h = h;
}
