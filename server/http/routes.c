/* routes.c — the route table: one row per path, read by http_daemon.c's dispatch. */
#include "http/routes.h"

#define POST_TYPES "multipart/form-data,image/png,image/jpeg,image/webp"

/* path, post, types, handler, open (no API key), probe (access line at debug). The probe routes
 * come first: the probe listener's table is this array's first ROUTES_PROBE rows. */
#define ROUTES_PROBE 3
static const struct http_route routes[] = {
    {"/healthz", 0, NULL, endpoint_healthz, 1, 1},
    {"/readyz", 0, NULL, endpoint_readyz, 1, 1},
    {"/metrics", 0, NULL, endpoint_metrics, 1, 1},
    {"/v1/filter", 1, POST_TYPES, endpoint_filter, 0, 0},
    {"/v1/compare", 1, POST_TYPES, endpoint_compare, 0, 0},
    {"/v1/info", 1, POST_TYPES, endpoint_info, 0, 0},
    {"/v1/filters", 0, NULL, endpoint_filters, 0, 0},
    {"/v1/variants", 0, NULL, endpoint_variants, 0, 0},
    {"/version", 0, NULL, endpoint_version, 0, 0},
    {"/openapi.yaml", 0, NULL, endpoint_openapi, 0, 0},
    {"/", 0, NULL, endpoint_web, 1, 0},
    {"/web/*", 0, NULL, endpoint_web, 1, 0},
};

const struct http_route *routes_table(int *n)
{
    *n = (int)(sizeof(routes) / sizeof(routes[0]));
    return routes;
}

const struct http_route *routes_probe_table(int *n)
{
    *n = ROUTES_PROBE;
    return routes;
}
