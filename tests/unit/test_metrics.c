/* test_metrics.c — the exposition of the request counters: by route and status class (declared
 * routes from the start, "other" for the rest), failures split into 4xx and 5xx, the filter
 * requests' backend label only for a side that took a job, the fatal GPU gauge. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/metrics.h"

static char *render(struct metrics *m, int fatal)
{
    struct metrics_gauges g = {0};
    size_t len = 0;
    char *text;

    g.gpu_fatal = fatal;
    text = metrics_render(m, &g, &len);
    CHECK(text && len == strlen(text), "render");
    return text;
}

static void has(const char *text, const char *line)
{
    char want[256];

    snprintf(want, sizeof(want), "\n%s\n", line);
    CHECK(text && strstr(text, want), "missing line: %s", line);
}

static void test_requests(void)
{
    struct metrics_build b = {"0.0-test", "cpu", "cpu (1 thread)"};
    struct metrics *m;
    char err[EDGED_ERR_LEN], *text;
    const int statuses[] = {200, 200, 404, 503, 0, 429};
    const char *routes[] = {"/v1/filter", "/v1/filter", NULL, "/readyz", "/v1/filter", "/nowhere"};

    if (metrics_new(&m, &b, err) < 0) {
        CHECK(0, "metrics_new: %s", err);
        return;
    }
    metrics_add_route(m, "/v1/filter");
    metrics_add_route(m, "/readyz");
    text = render(m, 0);
    has(text, "edged_http_requests_total{route=\"/readyz\",code=\"5xx\"} 0");
    has(text, "edged_requests_failed_total{code=\"4xx\"} 0");
    free(text);
    for (int i = 0; i < 6; i++) {
        metrics_request_begin(m);
        metrics_request_end(m, routes[i], statuses[i]);
    }
    metrics_filter_request(m, "edge", "cpu", 200, 0.01);
    metrics_filter_request(m, "edge", NULL, 422, 0.001);
    metrics_filter_request(m, "sobel", "all", 200, 0.02);
    text = render(m, 1);
    has(text, "edged_http_requests_total{route=\"/v1/filter\",code=\"2xx\"} 2");
    has(text, "edged_http_requests_total{route=\"/v1/filter\",code=\"4xx\"} 1"); /* lost: 499 */
    has(text, "edged_http_requests_total{route=\"/readyz\",code=\"5xx\"} 1");
    has(text, "edged_http_requests_total{route=\"other\",code=\"4xx\"} 2");
    has(text, "edged_requests_total{code=\"499\"} 1");
    has(text, "edged_requests_succeeded_total 2");
    has(text, "edged_requests_failed_total{code=\"4xx\"} 3");
    has(text, "edged_requests_failed_total{code=\"5xx\"} 1");
    has(text, "edged_requests_in_flight 0");
    has(text, "edged_filter_requests_total{filter=\"edge\",backend=\"cpu\",code=\"200\"} 1");
    has(text, "edged_filter_requests_total{filter=\"edge\",backend=\"none\",code=\"422\"} 1");
    has(text, "edged_filter_requests_total{filter=\"sobel\",backend=\"all\",code=\"200\"} 1");
    has(text, "edged_gpu_fatal 1");
    CHECK(text && !strstr(text, "backend=\"gpu\""), "a gpu series on a server whose jobs all ran on the CPU");
    CHECK(text && !strstr(text, "code=\"1xx\"") && !strstr(text, "code=\"3xx\""), "an empty class exported");
    free(text);
    metrics_free(m);
}

int main(void)
{
    test_requests();
    return check_summary();
}
