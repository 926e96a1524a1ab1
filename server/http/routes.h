/* routes.h — the API's route table (path, method, media types, open or keyed -> endpoint) and
 * the endpoints it names: the image endpoints in endpoints_image.c, the GET ones and POST /v1/info
 * in endpoints_info.c. Every endpoint takes the struct service as app. */
#ifndef EDGED_ROUTES_H
#define EDGED_ROUTES_H

#include "http/http.h"

/* The routes of the API, for http_start; *n gets their count. Static: never freed. */
const struct http_route *routes_table(int *n);
/* The routes of the probe listener (--metrics-listen): /healthz, /readyz and /metrics, the same
 * rows as the API's. */
const struct http_route *routes_probe_table(int *n);

/* POST /v1/filter: one filter on the uploaded PNG; answers the PNG or the JSON result. */
void endpoint_filter(struct http_req *r, void *app);
/* POST /v1/compare: the listed variants (default: every one that can serve) on the same image;
 * answers JSON rows with kernel time, rates and the largest difference from cpu_serial. */
void endpoint_compare(struct http_req *r, void *app);

/* POST /v1/info: what the uploaded image is (format, size, channels, bit depth, orientation,
 * progressive, animated, the JPEG frame), from its header alone, and whether it is within the
 * limits; answers JSON. */
void endpoint_info(struct http_req *r, void *app);

/* GET /healthz (liveness: always 200) and /readyz (200 or 503 with the reason). */
void endpoint_healthz(struct http_req *r, void *app);
void endpoint_readyz(struct http_req *r, void *app);
/* GET /metrics: the Prometheus text exposition. */
void endpoint_metrics(struct http_req *r, void *app);
/* GET /version: version, backend, device and limits. */
void endpoint_version(struct http_req *r, void *app);
/* GET /v1/filters and /v1/variants: the catalogues. */
void endpoint_filters(struct http_req *r, void *app);
void endpoint_variants(struct http_req *r, void *app);
/* GET /openapi.yaml: the API description (embedded, or the file --openapi names). */
void endpoint_openapi(struct http_req *r, void *app);
/* GET / and /web/NAME: the embedded web page. */
void endpoint_web(struct http_req *r, void *app);

#endif
