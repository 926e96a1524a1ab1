/* routes.c — the route table: one row per path, read by http_daemon.c's dispatch. */
#include "http/routes.h"

#define POST_TYPES "multipart/form-data,image/png,image/jpeg,image/webp"

static const struct http_route routes[] = {
    {"/v1/filter", 1, POST_TYPES, endpoint_filter, 0},
    {"/v1/compare", 1, POST_TYPES, endpoint_compare, 0},
    {"/v1/info", 1, POST_TYPES, endpoint_info, 0},
    {"/v1/filters", 0, NULL, endpoint_filters, 0},
    {"/v1/variants", 0, NULL, endpoint_variants, 0},
    {"/healthz", 0, NULL, endpoint_healthz, 1},
    {"/readyz", 0, NULL, endpoint_readyz, 1},
    {"/metrics", 0, NULL, endpoint_metrics, 1},
    {"/version", 0, NULL, endpoint_version, 0},
    {"/openapi.yaml", 0, NULL, endpoint_openapi, 0},
    {"/", 0, NULL, endpoint_web, 1},
    {"/web/*", 0, NULL, endpoint_web, 1},
};

const struct http_route *routes_table(int *n)
{
    *n = (int)(sizeof(routes) / sizeof(routes[0]));
    return routes;
}
