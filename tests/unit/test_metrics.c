/* test_metrics.c — the exposition of the request counters: by route and status class (declared
 * routes from the start, "other" for the rest), failures split into 4xx and 5xx, the filter
 * requests' backend label only for a side that took a job, the fatal GPU gauge; the per-device
 * series of two fake GPUs (CUDA numbers 1 and 3, one fenced), their device name escaped as a
 * label, and the families declared with no sample without a device. */
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

/* Lines of text that start with prefix. */
static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);

    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += !strncmp(p, prefix, len);
    return n;
}

static const char *const device_families[] = {
    "edged_gpu_device_up",
    "edged_gpu_device_busy_seconds_total",
    "edged_gpu_device_jobs_total",
    "edged_gpu_device_retried_total",
    "edged_gpu_device_memory_used_bytes",
    "edged_gpu_device_outstanding_pixels",
    "edged_gpu_device_batches_total",
    "edged_gpu_device_batch_jobs_total",
    "edged_gpu_device_stream_seconds_total",
};
#define NDEVICE_FAMILIES (sizeof(device_families) / sizeof(device_families[0]))

static void test_no_device(void)
{
    struct metrics_build b = {"0.0-test", "cpu", "cpu (1 thread)"};
    struct metrics *m;
    char err[EDGED_ERR_LEN], *text, line[128];

    if (metrics_new(&m, &b, err) < 0) {
        CHECK(0, "metrics_new: %s", err);
        return;
    }
    text = render(m, 0);
    has(text, "edged_gpu_devices{state=\"up\"} 0");
    has(text, "edged_gpu_devices{state=\"fenced\"} 0");
    for (size_t i = 0; i < NDEVICE_FAMILIES; i++) {
        snprintf(line, sizeof(line), "# TYPE %s ", device_families[i]);
        CHECK(count_lines(text, line) == 1, "%s not declared once", device_families[i]);
        snprintf(line, sizeof(line), "%s{", device_families[i]);
        CHECK(count_lines(text, line) == 0, "%s: a sample without a device", device_families[i]);
    }
    free(text);
    metrics_free(m);
}

static void test_devices(void)
{
    struct metrics_build b = {"0.0-test", "gpu", "NVIDIA H100"};
    struct metrics_device d[2] = {
        {.device = 1,
         .name = "NVIDIA H100 80GB HBM3",
         .up = 1,
         .busy_seconds = 12.5,
         .jobs = 40,
         .batches = {3, 2},
         .batch_jobs = {12, 5},
         .memory_used = 1048576,
         .outstanding_pixels = 2000000,
         .stream_seconds = {1.5, 20.25, 0.125}},
        {.device = 3,
         .name = "odd \"name\" \\ \n",
         .busy_seconds = 0.25,
         .jobs = 7,
         .retried = 2}, /* fenced: up, memory and outstanding 0 */
    };
    struct metrics_gauges g = {.devices = d, .ndevices = 2};
    struct metrics *m;
    char err[EDGED_ERR_LEN], *text;
    size_t len = 0;

    if (metrics_new(&m, &b, err) < 0) {
        CHECK(0, "metrics_new: %s", err);
        return;
    }
    text = metrics_render(m, &g, &len);
    CHECK(text && len == strlen(text), "render");
    has(text, "edged_gpu_devices{state=\"up\"} 1");
    has(text, "edged_gpu_devices{state=\"fenced\"} 1");
    has(text, "edged_gpu_device_up{device=\"1\",name=\"NVIDIA H100 80GB HBM3\"} 1");
    has(text, "edged_gpu_device_up{device=\"3\",name=\"odd \\\"name\\\" \\\\  \"} 0");
    has(text, "edged_gpu_device_busy_seconds_total{device=\"1\"} 12.500000");
    has(text, "edged_gpu_device_busy_seconds_total{device=\"3\"} 0.250000");
    has(text, "edged_gpu_device_jobs_total{device=\"1\"} 40");
    has(text, "edged_gpu_device_jobs_total{device=\"3\"} 7");
    has(text, "edged_gpu_device_retried_total{device=\"1\"} 0");
    has(text, "edged_gpu_device_retried_total{device=\"3\"} 2");
    has(text, "edged_gpu_device_batches_total{device=\"1\",format=\"jpeg\"} 3");
    has(text, "edged_gpu_device_batches_total{device=\"1\",format=\"png\"} 2");
    has(text, "edged_gpu_device_batch_jobs_total{device=\"1\",format=\"jpeg\"} 12");
    has(text, "edged_gpu_device_batch_jobs_total{device=\"1\",format=\"png\"} 5");
    has(text, "edged_gpu_device_batch_jobs_total{device=\"3\",format=\"png\"} 0");
    has(text, "edged_gpu_device_memory_used_bytes{device=\"1\"} 1048576");
    has(text, "edged_gpu_device_outstanding_pixels{device=\"1\"} 2000000");
    has(text, "edged_gpu_device_outstanding_pixels{device=\"3\"} 0");
    has(text, "edged_gpu_device_stream_seconds_total{device=\"1\",phase=\"pending\"} 1.500000");
    has(text, "edged_gpu_device_stream_seconds_total{device=\"1\",phase=\"device\"} 20.250000");
    has(text, "edged_gpu_device_stream_seconds_total{device=\"1\",phase=\"handoff\"} 0.125000");
    has(text, "edged_gpu_device_stream_seconds_total{device=\"3\",phase=\"handoff\"} 0.000000");
    CHECK(text && !strstr(text, "device=\"0\"") && !strstr(text, "device=\"2\""),
          "a series labelled with a device index rather than its CUDA number");
    /* every sample follows its own family's TYPE line (the exposition format's rule) */
    for (size_t i = 0; text && i < NDEVICE_FAMILIES; i++) {
        char type[128], first[128];
        snprintf(type, sizeof(type), "# TYPE %s ", device_families[i]);
        snprintf(first, sizeof(first), "\n%s{", device_families[i]);
        const char *t = strstr(text, type), *s = strstr(text, first),
                   *next = t ? strstr(t + 1, "# TYPE ") : NULL;
        CHECK(t && s && t < s && (!next || s < next), "%s: samples away from its TYPE line",
              device_families[i]);
    }
    free(text);
    metrics_free(m);
}

int main(void)
{
    test_requests();
    test_no_device();
    test_devices();
    return check_summary();
}
