/* service.c — shared service state, readiness, the route table and the GET endpoints: health,
 * readiness, metrics, version, the filter and variant catalogues and openapi.yaml. */
#include "service.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filter.h"
#include "gconv.h"
#include "log.h"
#include "pipeline.h"
#include "variant.h"
#include "web_assets.h"

#define OPENAPI_MAX (1u << 20)

/* ---- state ------------------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && n <= (long)OPENAPI_MAX && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        *len = (size_t)n;
    fclose(f);
    return buf;
}

/* --openapi, else api/openapi.yaml of the repo the binary was built in (build/edged ->
 * ../api/openapi.yaml), else ./api/openapi.yaml. */
static void load_openapi(struct service *s)
{
    char exe[PATH_MAX], cand[3][600];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    int ncand = 0;

    if (s->cfg->openapi[0])
        snprintf(cand[ncand++], sizeof(cand[0]), "%.511s", s->cfg->openapi);
    if (!s->cfg->openapi[0] && n > 0) {
        exe[n] = '\0';
        *(strrchr(exe, '/') ? strrchr(exe, '/') : exe) = '\0';
        snprintf(cand[ncand++], sizeof(cand[0]), "%.500s/../api/openapi.yaml", exe);
    }
    if (!s->cfg->openapi[0])
        snprintf(cand[ncand++], sizeof(cand[0]), "api/openapi.yaml");
    for (int i = 0; i < ncand; i++) {
        memcpy(s->openapi_path, cand[i], sizeof(cand[i]));
        if ((s->openapi = read_file(cand[i], &s->openapi_len)))
            return;
    }
    log_event("warn", "openapi", "openapi.yaml not found (last tried %s): GET /openapi.yaml answers 404",
              s->openapi_path);
}

int service_init(struct service *s, const struct serve_config *cfg, char *err)
{
    s->cfg = cfg;
    pngio_default_limits(&s->lim);
    s->lim.max_side = (uint32_t)cfg->max_side;
    s->lim.max_pixels = (uint64_t)cfg->max_pixels;
    if (sem_init(&s->codec, 0, (unsigned)cfg->threads) != 0)
        return edged_fail(err, EDGED_E_INTERNAL, "sem_init: %s", strerror(errno));
    if (sem_init(&s->codec_large, 0, (unsigned)service_large_slots(cfg->threads)) != 0) {
        sem_destroy(&s->codec);
        return edged_fail(err, EDGED_E_INTERNAL, "sem_init: %s", strerror(errno));
    }
    s->codec_ready = 1;
    load_openapi(s);
    return 0;
}

void service_destroy(struct service *s)
{
    if (s->codec_ready) {
        sem_destroy(&s->codec_large);
        sem_destroy(&s->codec);
    }
    s->codec_ready = 0;
    free(s->openapi);
    s->openapi = NULL;
}

static void sem_wait_intr(sem_t *sem)
{
    while (sem_wait(sem) != 0 && errno == EINTR)
        ;
}

int service_is_large(const struct service *s, long long pixels) { return pixels > s->cfg->large_pixels; }

int service_large_slots(int slots) { return slots > 1 ? slots - 1 : 1; }

/* A large image first takes one of the threads - 1 large slots, then a shared one: so one shared
 * slot is always left to images at or under --large-pixels (with threads >= 2), and a small
 * request waits at most behind other small ones, never behind seconds of a 50 MP decode. Both
 * semaphores are taken in the same order by everyone, so there is no deadlock. */
void service_codec_enter(struct service *s, long long pixels)
{
    if (service_is_large(s, pixels))
        sem_wait_intr(&s->codec_large);
    sem_wait_intr(&s->codec);
}

void service_codec_leave(struct service *s, long long pixels)
{
    sem_post(&s->codec);
    if (service_is_large(s, pixels))
        sem_post(&s->codec_large);
}

const char *service_backend(const struct service *s)
{
    return !s->engine ? "unavailable" : engine_has_gpu(s->engine) ? "gpu" : "cpu";
}

int service_admit(void *app, char *err)
{
    struct service *s = app;
    char msg[EDGED_ERR_LEN];

    if (atomic_load(&s->draining))
        return edged_fail(err, EDGED_E_UNAVAILABLE, "server is draining (shutting down)");
    /* the reasons themselves (driver messages) are in the log, not in answers */
    if (!s->engine)
        return edged_fail(err, EDGED_E_UNAVAILABLE, "backend %s unavailable (see the server log)",
                          backend_name(s->cfg->backend));
    if (worker_fatal(s->w, msg))
        return edged_fail(err, EDGED_E_GPU_FATAL, "GPU failed; the service is restarting");
    return 0;
}

int service_ready(struct service *s, char *reason)
{
    int depth;

    if (service_admit(s, reason) < 0)
        return 0;
    if ((depth = queue_depth(s->q)) >= queue_capacity(s->q)) {
        edged_fail(reason, EDGED_E_UNAVAILABLE, "queue full (%d of %d jobs)", depth, queue_capacity(s->q));
        return 0;
    }
    return 1;
}

/* ---- GET endpoints ------------------------------------------------------------------------- */

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

static void get_healthz(struct http_req *r, void *app)
{
    cJSON *o = cJSON_CreateObject();

    (void)app;
    cJSON_AddStringToObject(o, "status", "ok");
    respond_json(r, o);
}

static void get_readyz(struct http_req *r, void *app)
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

static void get_metrics(struct http_req *r, void *app)
{
    struct service *s = app;
    char reason[EDGED_ERR_LEN];
    struct metrics_gauges g = {queue_depth(s->q), queue_capacity(s->q), service_ready(s, reason),
                               worker_gpu_memory(s->w)};
    size_t len = 0;
    char *text = metrics_render(s->m, &g, &len);

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

static void get_version(struct http_req *r, void *app)
{
    struct service *s = app;
    cJSON *o = cJSON_CreateObject();
    const struct gconv_info *gi = s->engine && engine_has_gpu(s->engine) ? gconv_get_info(engine_gpu(s->engine)) : NULL;
    char cc[16];

    cJSON_AddStringToObject(o, "version", EDGED_VERSION);
    cJSON_AddStringToObject(o, "backend", service_backend(s));
    cJSON_AddStringToObject(o, "device", s->engine ? engine_device(s->engine) : "none");
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

static void get_filters(struct http_req *r, void *app)
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
            cJSON_AddNumberToObject(o, "kernel_side", plan->conv[0].rows);
            cJSON_AddBoolToObject(o, "separable", plan->conv[0].separable);
        }
        cJSON_AddItemToArray(arr, o);
    }
    free(plan);
    cJSON_AddStringToObject(root, "default", "edge");
    respond_json(r, root);
}

static void get_variants(struct http_req *r, void *app)
{
    struct service *s = app;
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    int gpu = s->engine && engine_has_gpu(s->engine);

    cJSON_AddStringToObject(root, "backend", service_backend(s));
    cJSON_AddStringToObject(root, "device", s->engine ? engine_device(s->engine) : "none");
    for (int v = 0; v < VARIANT_COUNT; v++) {
        cJSON *o = cJSON_CreateObject();
        int avail = variant_is_gpu(v) ? gpu : s->engine != NULL;
        cJSON_AddStringToObject(o, "name", variant_name(v));
        cJSON_AddStringToObject(o, "description", variant_description(v));
        cJSON_AddStringToObject(o, "kind", v == VARIANT_AUTO ? "auto" : variant_is_gpu(v) ? "gpu" : "cpu");
        cJSON_AddBoolToObject(o, "available", avail);
        if (!avail)
            cJSON_AddStringToObject(o, "reason", !s->engine ? "backend unavailable"
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

static void get_openapi(struct http_req *r, void *app)
{
    struct service *s = app;

    if (!s->openapi) { /* where it was looked for is in the start-up log, not in the answer */
        http_respond_error(r, EDGED_E_NOT_FOUND, "openapi.yaml is not available on this server");
        return;
    }
    http_respond_static(r, 200, "application/yaml", s->openapi, s->openapi_len); /* read once at start */
}

/* The embedded web page: "/" and "/web/NAME" (web_assets.c). */
static void get_web(struct http_req *r, void *app)
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

#define POST_TYPES "multipart/form-data,image/png"
static const struct http_route routes[] = {
    {"/v1/filter", 1, POST_TYPES, pipeline_filter, 0},
    {"/v1/compare", 1, POST_TYPES, pipeline_compare, 0},
    {"/v1/filters", 0, NULL, get_filters, 0},
    {"/v1/variants", 0, NULL, get_variants, 0},
    {"/healthz", 0, NULL, get_healthz, 1},
    {"/readyz", 0, NULL, get_readyz, 1},
    {"/metrics", 0, NULL, get_metrics, 1},
    {"/version", 0, NULL, get_version, 0},
    {"/openapi.yaml", 0, NULL, get_openapi, 0},
    {"/", 0, NULL, get_web, 1},
    {"/web/*", 0, NULL, get_web, 1},
};

const struct http_route *service_routes(int *n)
{
    *n = (int)(sizeof(routes) / sizeof(routes[0]));
    return routes;
}
