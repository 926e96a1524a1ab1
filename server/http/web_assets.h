/* web_assets.h — the files the binary serves from itself (the web page of server/http/web and
 * api/openapi.yaml), looked up by URL path. */
#ifndef EDGED_WEB_ASSETS_H
#define EDGED_WEB_ASSETS_H

#include <stddef.h>

/* The file served at path: "/" is index.html, "/web/NAME" the page's file NAME (exact name, no
 * directories), "/openapi.yaml" the API description. Sets *body (static, never freed), *len and
 * *content_type and returns 0; EDGED_E_NOT_FOUND for any other path. */
int web_asset_find(const char *path, const unsigned char **body, size_t *len, const char **content_type);

/* How many files are embedded; 0 when the build did not generate web_data.inc. */
int web_asset_count(void);

#endif
