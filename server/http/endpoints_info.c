/* endpoints_info.c — the GET endpoints: health, readiness, metrics, version, the filter and
 * variant catalogues, openapi.yaml and the web page. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "gconv.h"
#include "result.h"
#include "http/routes.h"
#include "jobs/jpeg_job.h"
#include "jobs/service.h"
#include "variant.h"
#include "ops/version.h"
#include "http/web_assets.h"

static void respond_json(struct http_req *r, cJSON *root)
{
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;

    cJSON_Delete(root);
    if (!text) {
        http_respond_error(r, EDGED_E_NOMEM, "out of memory rendering the answer");
        return;
    }
    http_respond(r, 200, "application/json", text, strlen(text), NULL, NULL);
}

void endpoint_healthz(struct http_req *r, void *app)
{
    cJSON *o = cJSON_CreateObject();

    (void)app;
    cJSON_AddStringToObject(o, "status", "ok");
    respond_json(r, o);
}

void endpoint_readyz(struct http_req *r, void *app)
{
    struct service *s = app;
    char reason[EDGED_ERR_LEN];
    cJSON *o;

    if (!service_ready(s, reason)) {
        http_respond_error(r, EDGED_E_UNAVAILABLE, reason);
        return;
    }
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ready");
    cJSON_AddStringToObject(o, "backend", service_backend(s));
    respond_json(r, o);
}

void endpoint_metrics(struct http_req *r, void *app)
{
    struct service *s = app;
    char reason[EDGED_ERR_LEN];
    struct metrics_gauges g = {queue_depth(s->q), queue_capacity(s->q), service_ready(s, reason),
                               worker_gpu_memory(s->w), worker_gpu_busy_seconds(s->w), budget_used(s->budget),
                               budget_limit(s->budget), 0, 0, 0, 0, worker_fatal(s->w, NULL)};
    struct jpegjob_counts jc;
    size_t len = 0;
    char *text;

    jpegjob_counts(&jc);
    g.jpeg_gpu_decoded = jc.gpu_decoded, g.jpeg_gpu_encoded = jc.gpu_encoded;
    g.jpeg_fallback_decode = jc.cpu_fallback_decode, g.jpeg_fallback_encode = jc.cpu_fallback_encode;
    text = metrics_render(s->m, &g, &len);

    if (!text) {
        http_respond_error(r, EDGED_E_NOMEM, "out of memory rendering metrics");
        return;
    }
    http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL, NULL);
}

static cJSON *limits_json(const struct service *s)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddNumberToObject(o, "max_body_bytes", (double)s->cfg->max_body_mb * 1048576.0);
    cJSON_AddNumberToObject(o, "max_pixels", (double)s->cfg->max_pixels);
    cJSON_AddNumberToObject(o, "max_side", s->cfg->max_side);
    cJSON_AddNumberToObject(o, "max_kernel_side", FILTER_MAX_SIDE);
    cJSON_AddNumberToObject(o, "queue_depth", s->cfg->queue_depth);
    cJSON_AddNumberToObject(o, "queue_deadline_ms", s->cfg->queue_deadline_ms);
    return o;
}

void endpoint_version(struct http_req *r, void *app)
{
    struct service *s = app;
    cJSON *o = cJSON_CreateObject();
    const struct gconv_info *gi = s->backend && backend_has_gpu(s->backend) ? gconv_get_info(backend_gpu(s->backend)) : NULL;
    char cc[16];

    cJSON_AddStringToObject(o, "version", EDGED_VERSION);
    cJSON_AddStringToObject(o, "backend", service_backend(s));
    cJSON_AddStringToObject(o, "device", s->backend ? backend_device(s->backend) : "none");
    cJSON_AddBoolToObject(o, "built_with_cuda", EDGED_GPU);
    if (gi) {
        snprintf(cc, sizeof(cc), "%d.%d", gi->cc_major, gi->cc_minor);
        cJSON_AddStringToObject(o, "compute_capability", cc);
        cJSON_AddNumberToObject(o, "driver_version", gi->driver_version);
        cJSON_AddNumberToObject(o, "runtime_version", gi->runtime_version);
        cJSON_AddNumberToObject(o, "gpu_memory_bytes", (double)gi->global_mem);
        cJSON_AddNumberToObject(o, "streams", s->cfg->streams);
    } else {
        cJSON_AddNullToObject(o, "compute_capability");
        cJSON_AddNullToObject(o, "driver_version");
        cJSON_AddNullToObject(o, "runtime_version");
    }
    cJSON_AddNumberToObject(o, "threads", s->cfg->threads);
    cJSON_AddItemToObject(o, "limits", limits_json(s));
    respond_json(r, o);
}

/* The variants that run filter f (filter_variant_serves). */
static cJSON *variants_json(enum filter_id f)
{
    cJSON *a = cJSON_CreateArray();

    for (int v = 0; a && v < VARIANT_COUNT; v++)
        if (filter_variant_serves(f, v))
            cJSON_AddItemToArray(a, cJSON_CreateString(variant_name((enum variant)v)));
    return a;
}

void endpoint_filters(struct http_req *r, void *app)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "filters");
    struct filter_spec spec;
    struct filter_plan *plan = malloc(sizeof(*plan));

    (void)app;
    for (int f = 0; plan && f < FILTER_COUNT; f++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", filter_name(f));
        cJSON_AddStringToObject(o, "description", filter_description(f));
        cJSON_AddItemToObject(o, "params", result_knobs_json(f));
        filter_spec_init(&spec, f);
        if (f != FILTER_CUSTOM && filter_plan_make(&spec, 3, plan, NULL) == 0) {
            cJSON_AddStringToObject(o, "color", plan->gray ? "gray" : "rgb");
            cJSON_AddStringToObject(o, "post", post_name(plan->post));
            if (plan->nconv > 0) { /* canny has no kernel by default */
                cJSON_AddNumberToObject(o, "kernel_side", plan->conv[0].rows);
                cJSON_AddBoolToObject(o, "separable", plan->conv[0].separable);
            }
        }
        cJSON_AddItemToObject(o, "variants", variants_json((enum filter_id)f));
        cJSON_AddItemToArray(arr, o);
    }
    free(plan);
    cJSON_AddStringToObject(root, "default", "edge");
    respond_json(r, root);
}

void endpoint_variants(struct http_req *r, void *app)
{
    struct service *s = app;
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    int gpu = s->backend && backend_has_gpu(s->backend);

    cJSON_AddStringToObject(root, "backend", service_backend(s));
    cJSON_AddStringToObject(root, "device", s->backend ? backend_device(s->backend) : "none");
    for (int v = 0; v < VARIANT_COUNT; v++) {
        cJSON *o = cJSON_CreateObject();
        int avail = variant_is_gpu(v) ? gpu : s->backend != NULL;
        cJSON_AddStringToObject(o, "name", variant_name(v));
        cJSON_AddStringToObject(o, "description", variant_description(v));
        cJSON_AddStringToObject(o, "kind", v == VARIANT_AUTO ? "auto" : variant_is_gpu(v) ? "gpu" : "cpu");
        cJSON_AddBoolToObject(o, "available", avail);
        if (!avail)
            cJSON_AddStringToObject(o, "reason", !s->backend ? "backend unavailable"
                                                 : EDGED_GPU ? "no CUDA device in use"
                                                             : "built without CUDA");
        if (variant_is_gpu(v)) {
            cJSON *b = cJSON_AddArrayToObject(o, "block_sides");
            for (int side = 8; side <= 32; side += 8)
                cJSON_AddItemToArray(b, cJSON_CreateNumber(side));
            cJSON_AddNumberToObject(o, "default_block", VARIANT_DEFAULT_BLOCK);
        }
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddItemToObject(root, "variants", arr);
    cJSON_AddItemToObject(root, "limits", limits_json(s));
    respond_json(r, root);
}

/* The file --openapi named (read at start), else the copy embedded with the web page. */
void endpoint_openapi(struct http_req *r, void *app)
{
    struct service *s = app;

    if (!s->cfg->openapi[0]) {
        endpoint_web(r, app);
        return;
    }
    if (!s->openapi) { /* where it was looked for is in the start-up log, not in the answer */
        http_respond_error(r, EDGED_E_NOT_FOUND, "openapi.yaml is not available on this server");
        return;
    }
    http_respond_static(r, 200, "application/yaml", s->openapi, s->openapi_len); /* read once at start */
}

/* The embedded files: "/", "/web/NAME" and "/openapi.yaml" (web_assets.c). */
void endpoint_web(struct http_req *r, void *app)
{
    const unsigned char *body;
    const char *ctype;
    char msg[EDGED_ERR_LEN];
    size_t len;

    (void)app;
    if (web_asset_find(http_req_path(r), &body, &len, &ctype) < 0) {
        snprintf(msg, sizeof(msg), "no resource at %.100s%s", http_req_path(r),
                 web_asset_count() ? "" : " (this build embeds no web page)");
        http_respond_error(r, EDGED_E_NOT_FOUND, msg);
        return;
    }
    http_respond_static(r, 200, ctype, body, len);
}
