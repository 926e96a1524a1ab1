/* endpoints_info.c — the GET endpoints: health, readiness, metrics, version, the filter and
 * variant catalogues, openapi.yaml and the web page; and POST /v1/info, what an image is from its
 * header. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "gconv.h"
#include "gpinned.h"
#include "result.h"
#include "codec/image_io.h"
#include "http/routes.h"
#include "http/upload.h"
#include "jobs/dev_encode.h"
#include "jobs/jpeg_job.h"
#include "jobs/png_job.h"
#include "jobs/px_job.h"
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

/* The GPU devices of the server (none on the CPU backend), by CUDA device number: the state of
 * each, and why it was fenced. /version and /readyz both carry it. */
static cJSON *devices_json(struct service *s)
{
    cJSON *a = cJSON_CreateArray(), *o;
    struct worker_device d;

    for (int i = 0; a && i < worker_device_count(s->w); i++) {
        if (worker_device_info(s->w, i, &d) < 0 || !(o = cJSON_CreateObject()))
            continue;
        cJSON_AddNumberToObject(o, "device", d.ordinal);
        cJSON_AddStringToObject(o, "name", d.name);
        cJSON_AddStringToObject(o, "state", d.alive ? "up" : "fenced");
        if (!d.alive)
            cJSON_AddStringToObject(o, "fault", d.fault);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* 200 while the service admits work: with several GPUs, while one of them is still up (the
 * devices list says which are fenced). */
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
    cJSON_AddItemToObject(o, "devices", devices_json(s));
    respond_json(r, o);
}

/* The devices' series of /metrics, from their workers: *out is malloc'd (NULL without a device);
 * returns the count, or -1 when out of memory. */
static int metrics_devices(struct service *s, struct metrics_device **out)
{
    int n = worker_device_count(s->w), k = 0;
    struct metrics_device *md;
    struct worker_device d;

    *out = NULL;
    if (n <= 0)
        return 0;
    if (!(md = calloc((size_t)n, sizeof(*md))))
        return -1;
    for (int i = 0; i < n; i++) {
        if (worker_device_info(s->w, i, &d) < 0)
            continue;
        md[k].device = d.ordinal;
        snprintf(md[k].name, sizeof(md[k].name), "%s", d.name);
        md[k].up = d.alive;
        md[k].busy_seconds = d.busy_seconds;
        md[k].jobs = (unsigned long long)d.jobs;
        md[k].retried = (unsigned long long)d.retried;
        md[k].batches[METRICS_BATCH_JPEG] = (unsigned long long)d.batches[JOB_SRC_JPEG];
        md[k].batches[METRICS_BATCH_PNG] = (unsigned long long)d.batches[JOB_SRC_PNG];
        md[k].batch_jobs[METRICS_BATCH_JPEG] = (unsigned long long)d.batch_jobs[JOB_SRC_JPEG];
        md[k].batch_jobs[METRICS_BATCH_PNG] = (unsigned long long)d.batch_jobs[JOB_SRC_PNG];
        md[k].memory_used = d.memory;
        md[k].stream_seconds[METRICS_STREAM_PENDING] = d.hold_seconds[WORKER_HOLD_PENDING];
        md[k].stream_seconds[METRICS_STREAM_DEVICE] = d.hold_seconds[WORKER_HOLD_DEVICE];
        md[k].stream_seconds[METRICS_STREAM_HANDOFF] = d.hold_seconds[WORKER_HOLD_HANDOFF];
        md[k++].outstanding_pixels = d.outstanding;
    }
    *out = md;
    return k;
}

void endpoint_metrics(struct http_req *r, void *app)
{
    struct service *s = app;
    char reason[EDGED_ERR_LEN];
    struct metrics_gauges g = {.queue_depth = queue_depth(s->q),
                               .queue_capacity = queue_capacity(s->q),
                               .ready = service_ready(s, reason),
                               .gpu_memory_used = worker_gpu_memory(s->w),
                               .gpu_busy_seconds = worker_gpu_busy_seconds(s->w),
                               .budget_used = budget_used(s->budget),
                               .budget_limit = budget_limit(s->budget),
                               .gpu_fatal = worker_fatal(s->w, NULL)};
    struct jpegjob_counts jc;
    struct pngjob_counts pc;
    struct pxjob_counts xc;
    struct gpinned_stats ps;
    struct devenc_counts dc;
    struct metrics_device *devices = NULL;
    size_t len = 0;
    char *text = NULL;

    if ((g.ndevices = metrics_devices(s, &devices)) < 0)
        goto out;
    g.devices = devices;
    jpegjob_counts(&jc);
    devenc_counts(&dc);
    g.jpeg_gpu_decoded = jc.gpu_decoded, g.jpeg_gpu_encoded = jc.gpu_encoded;
    g.jpeg_fallback_decode = jc.cpu_fallback_decode, g.jpeg_fallback_encode = jc.cpu_fallback_encode;
    pngjob_counts(&pc);
    g.png_gpu_decoded = pc.gpu_decoded, g.png_cpu_refused = pc.cpu_refused;
    g.png_cpu_declined = pc.cpu_declined, g.png_cpu_busy = pc.cpu_busy;
    g.png_z_pinned = pc.z_pinned, g.png_z_unpinned = pc.z_unpinned;
    pxjob_counts(&xc);
    g.px_pinned = xc.pinned, g.px_staged = xc.staged;
    gpinned_stats(&ps);
    g.pinned_in_use_bytes = ps.in_use_bytes, g.pinned_free_bytes = ps.free_bytes;
    g.pinned_refused = ps.refused;
    g.png_gpu_encoded = dc.png_gpu_encoded, g.png_fallback_encode = dc.png_cpu_fallback;
    text = metrics_render(s->m, &g, &len);
out:
    free(devices);
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
    cJSON_AddItemToObject(o, "devices", devices_json(s));
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
        int avail = variant_is_gpu(v) ? gpu && variant_built(v) : s->backend != NULL;
        cJSON_AddStringToObject(o, "name", variant_name(v));
        cJSON_AddStringToObject(o, "description", variant_description(v));
        cJSON_AddStringToObject(o, "kind", v == VARIANT_AUTO ? "auto" : variant_is_gpu(v) ? "gpu" : "cpu");
        cJSON_AddBoolToObject(o, "available", avail);
        if (!avail)
            cJSON_AddStringToObject(o, "reason", !s->backend           ? "backend unavailable"
                                                 : !EDGED_GPU          ? "built without CUDA"
                                                 : !variant_built(v)   ? variant_missing(v)
                                                                       : "no CUDA device in use");
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

/* ---- POST /v1/info --------------------------------------------------------------------------- */

static int no_query_param(void *cls, const char *key, const char *value)
{
    char q[PARAMS_QUOTE_MAX + 1];

    (void)value;
    return edged_fail(cls, EDGED_E_PARAM, "%s: /v1/info takes no parameters, only the image", params_quote(key, q));
}

/* The image of the body as /v1/filter takes it (raw image/..., or multipart `image` / `file`);
 * any parameter, in the query string or a form field, is refused rather than ignored. */
static int info_upload(struct http_req *r, struct upload *u, char *err)
{
    const uint8_t *body;
    size_t len;
    int rc;

    memset(u, 0, sizeof(*u));
    params_init(&u->p, PARAMS_FILTER);
    if ((rc = http_req_query(r, no_query_param, err)) < 0)
        return rc;
    body = http_req_body(r, &len);
    if ((rc = upload_parse(http_req_header(r, "Content-Type"), body, len, u, err)) < 0)
        return rc;
    for (unsigned bit = 1; bit; bit <<= 1)
        if (u->p.given & bit)
            return edged_fail(err, EDGED_E_PARAM, "%s: /v1/info takes no parameters, only the image",
                              params_field_name(bit));
    return 0;
}

/* The fields only one format has: JPEG's frame, WebP's kind. */
static void info_format_json(cJSON *o, const struct imageio_head *h)
{
    cJSON *f;

    if (h->fmt == IMAGEIO_JPEG && (f = cJSON_AddObjectToObject(o, "jpeg"))) {
        cJSON_AddStringToObject(f, "colorspace", jpegio_colorspace_name(h->jpeg.cs));
        cJSON_AddStringToObject(f, "subsampling", jpegio_subsamp_name(h->jpeg.sub));
        cJSON_AddStringToObject(f, "sampling_factors", h->jpeg.factors);
        cJSON_AddNumberToObject(f, "components", h->jpeg.components);
        cJSON_AddNumberToObject(f, "scans", h->jpeg.scans);
        cJSON_AddBoolToObject(f, "arithmetic", h->jpeg.arithmetic);
    } else if (h->fmt == IMAGEIO_WEBP && (f = cJSON_AddObjectToObject(o, "webp"))) {
        cJSON_AddBoolToObject(f, "lossless", h->webp.lossless);
    }
}

/* What the header says; limit_rc/limit_msg: imageio_check_limits' verdict (what /v1/filter would
 * answer an image over the limits, before decoding it). */
static cJSON *info_json(struct http_req *r, const struct imageio_head *h, size_t bytes, int limit_rc,
                        const char *limit_msg)
{
    enum params_format f = h->fmt == IMAGEIO_JPEG   ? PARAMS_FORMAT_JPEG
                           : h->fmt == IMAGEIO_WEBP ? PARAMS_FORMAT_WEBP
                                                    : PARAMS_FORMAT_PNG;
    cJSON *o = cJSON_CreateObject(), *e;

    cJSON_AddStringToObject(o, "request_id", http_req_id(r));
    cJSON_AddStringToObject(o, "trace_id", http_req_trace_id(r));
    cJSON_AddStringToObject(o, "format", params_format_name(f)); /* the names `format` takes */
    cJSON_AddNumberToObject(o, "width", h->w);
    cJSON_AddNumberToObject(o, "height", h->h);
    cJSON_AddNumberToObject(o, "channels", h->ch);
    cJSON_AddNumberToObject(o, "bit_depth", h->fmt == IMAGEIO_PNG ? h->png.depth : 8);
    cJSON_AddNumberToObject(o, "orientation", h->orientation);
    cJSON_AddBoolToObject(o, "progressive", h->fmt == IMAGEIO_PNG    ? h->png.interlaced
                                            : h->fmt == IMAGEIO_JPEG ? h->jpeg.progressive
                                                                     : 0);
    cJSON_AddBoolToObject(o, "animated", h->fmt == IMAGEIO_PNG && h->png.animated);
    cJSON_AddNumberToObject(o, "bytes", (double)bytes);
    info_format_json(o, h);
    cJSON_AddBoolToObject(o, "within_limits", limit_rc == 0);
    if (limit_rc < 0 && (e = cJSON_AddObjectToObject(o, "limit_error"))) {
        cJSON_AddStringToObject(e, "code", edged_err_name(limit_rc));
        cJSON_AddStringToObject(e, "message", limit_msg);
    }
    return o;
}

/* The header alone is read (imageio_probe): no pixel memory, no codec slot, no job. An image over
 * --max-pixels, --max-side or the scan limit is still described, with within_limits false and the
 * error /v1/filter would give; a format edged does not read is 415 and a damaged header 422, as
 * on /v1/filter. */
void endpoint_info(struct http_req *r, void *app)
{
    struct service *s = app;
    struct upload u;
    struct imageio_head head;
    char err[EDGED_ERR_LEN], limit[EDGED_ERR_LEN] = "";
    int rc;

    if ((rc = info_upload(r, &u, err)) < 0 || (rc = imageio_probe(u.image, u.image_len, &head, err)) < 0) {
        http_respond_error(r, rc, err);
        return;
    }
    http_req_note(r, NULL, NULL, NULL, head.w, head.h);
    respond_json(r, info_json(r, &head, u.image_len, imageio_check_limits(&head, &s->lim, limit), limit));
}
