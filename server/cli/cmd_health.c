/* cmd_health.c — `edged health [--live] [--url URL]`, the probe client: exit 0 iff GET URL/readyz
 * (URL/healthz with --live) answers 200 (container health checks; a plain HTTP/1.0 GET over a
 * socket, no client library). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "errors.h"
#include "ops/config.h"
#include "ops/opts.h"

#define HEALTH_TIMEOUT_S 3

struct url {
    char host[256], port[8], path[512];
};

/* http://host[:port][/base]; the probe goes to base + probe ("/readyz", "/healthz"). */
static int url_parse(const char *s, const char *probe, struct url *u)
{
    const char *host = s + 7, *slash, *colon;
    size_t hn;

    if (strncmp(s, "http://", 7) != 0)
        return -1;
    slash = strchr(host, '/');
    colon = memchr(host, ':', slash ? (size_t)(slash - host) : strlen(host));
    hn = colon ? (size_t)(colon - host) : slash ? (size_t)(slash - host) : strlen(host);
    if (hn == 0 || hn >= sizeof(u->host))
        return -1;
    memcpy(u->host, host, hn);
    u->host[hn] = '\0';
    snprintf(u->port, sizeof(u->port), "%.*s", colon ? (int)((slash ? slash : colon + strlen(colon)) - colon - 1) : 2,
             colon ? colon + 1 : "80");
    snprintf(u->path, sizeof(u->path), "%s", slash ? slash : "");
    while (strlen(u->path) > 0 && u->path[strlen(u->path) - 1] == '/')
        u->path[strlen(u->path) - 1] = '\0';
    strncat(u->path, probe, sizeof(u->path) - strlen(u->path) - 1);
    return 0;
}

/* A connected socket to u (>= 0), or EDGED_E_IO with "cannot connect to HOST:PORT: why" in err
 * (the last address's error when the name has several). */
static int dial(const struct url *u, char *err)
{
    struct addrinfo hints = {0}, *res = NULL, *ai;
    struct timeval tv = {HEALTH_TIMEOUT_S, 0};
    int fd = -1, gai, why = 0;

    hints.ai_socktype = SOCK_STREAM;
    if ((gai = getaddrinfo(u->host, u->port, &hints, &res)) != 0)
        return edged_fail(err, EDGED_E_IO, "cannot resolve %s: %s", u->host, gai_strerror(gai));
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        if ((fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol)) < 0) {
            why = errno;
            continue;
        }
        /* On Linux SO_SNDTIMEO also bounds connect(). */
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            why = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return edged_fail(err, EDGED_E_IO, "cannot connect to %s:%s: %s", u->host, u->port,
                          why == EINPROGRESS || why == EAGAIN ? "timed out" : strerror(why));
    return fd;
}

/* The status code of GET u, or EDGED_E_IO with the reason in err when there is no HTTP answer
 * (no connection, the request not sent, no status line before the close or the timeout). */
static int probe(const struct url *u, char *err)
{
    char req[1024], resp[64] = {0};
    int fd = dial(u, err), n, why = 0;
    size_t got = 0;

    if (fd < 0)
        return fd;
    n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: edged-health\r\n\r\n", u->path,
                 u->host);
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        why = errno ? errno : EIO;
    while (!why && got < sizeof(resp) - 1 && (n = (int)recv(fd, resp + got, sizeof(resp) - 1 - got, 0)) > 0)
        got += (size_t)n;
    if (!why && n < 0)
        why = errno;
    close(fd);
    if (strncmp(resp, "HTTP/1.", 7) == 0 && strlen(resp) >= 12)
        return atoi(resp + 9);
    return edged_fail(err, EDGED_E_IO, "no HTTP answer from %s:%s: %s", u->host, u->port,
                      why == EAGAIN || why == EWOULDBLOCK ? "timed out"
                      : why                               ? strerror(why)
                      : got                               ? "not an HTTP status line"
                                                          : "connection closed");
}

struct health_args {
    const char *url;
    int live;
};

static const struct opts_spec health_opts[] = {
    {"url", "URL", "the service's base URL (default http://127.0.0.1:$EDGED_PORT; port 8080 when\n"
                  "EDGED_PORT is unset; EDGED_METRICS_LISTEN's address when that is set)"},
    {"live", NULL, "liveness: probe /healthz (200 while the process runs) instead of /readyz\n"
                   "(503 while the server cannot serve); what a container health check asks"},
};
#define HEALTH_NOPTS (int)(sizeof(health_opts) / sizeof(health_opts[0]))

static int health_opt(void *app, int i, const char *val, char *err)
{
    struct health_args *a = app;

    (void)err;
    if (i == 0)
        a->url = val;
    else
        a->live = 1;
    return 0;
}

static void health_usage(FILE *f)
{
    fputs("usage: edged health [--live] [--url http://HOST:PORT]\n"
          "  exits 0 when GET URL/readyz (URL/healthz with --live) answers 200, else 1 with the\n"
          "  reason on stderr\n",
          f);
    opts_print(f, health_opts, HEALTH_NOPTS);
}

/* The URL of the server this container runs: the probe listener when EDGED_METRICS_LISTEN names
 * one (so that a health check never competes with API clients for a connection), else the API
 * port; 0.0.0.0 is asked on 127.0.0.1. */
static void default_url(char *out, size_t len)
{
    const char *listen = getenv("EDGED_METRICS_LISTEN"), *port = getenv("EDGED_PORT");
    char host[64], err[EDGED_ERR_LEN];
    int mport;

    if (listen && *listen && config_listen_parse(listen, "EDGED_METRICS_LISTEN", host, sizeof(host), &mport, err) == 0)
        snprintf(out, len, "http://%s:%d", strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host, mport);
    else
        snprintf(out, len, "http://127.0.0.1:%.8s", port && *port ? port : "8080");
}

int health_main(int argc, char **argv)
{
    char dflt[96], err[EDGED_ERR_LEN];
    struct health_args a = {dflt, 0};
    struct url u;
    int status, rc;

    default_url(dflt, sizeof(dflt));
    if ((rc = opts_parse(argc, argv, health_opts, HEALTH_NOPTS, health_opt, &a, NULL, err)) != 0)
        return opts_usage_exit(rc, "health", err, health_usage);
    if (url_parse(a.url, a.live ? "/healthz" : "/readyz", &u) < 0) {
        fprintf(stderr, "edged health: '%s' is not an http://host[:port] URL\n", a.url);
        return EXIT_USAGE;
    }
    status = probe(&u, err);
    if (status < 0)
        fprintf(stderr, "edged health: %s\n", err);
    else if (status != 200)
        fprintf(stderr, "edged health: %s answered %d\n", u.path, status);
    return status == 200 ? EXIT_OK : EXIT_FAIL;
}
