/* pipeline.h — the image endpoints: upload + params -> decode -> job -> worker -> encode -> answer. */
#ifndef EDGED_PIPELINE_H
#define EDGED_PIPELINE_H

#include "http.h"

/* POST /v1/filter: one filter on the uploaded PNG; answers the PNG or the JSON result. app is the
 * struct service. */
void pipeline_filter(struct http_req *r, void *app);

/* POST /v1/compare: the listed variants (default: every one that can serve) on the same image;
 * answers JSON rows with kernel time, rates and the largest difference from cpu_serial. */
void pipeline_compare(struct http_req *r, void *app);

#endif
