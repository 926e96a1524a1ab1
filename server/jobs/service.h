/* service.h — the state every endpoint shares: backend, queue and worker, admission and
 * readiness, the PNG limits and codec slots. The endpoints are in endpoints_*.c (routes.h). */
#ifndef EDGED_SERVICE_H
#define EDGED_SERVICE_H

#include <stdatomic.h>
#include <stddef.h>

#include "ops/config.h"
#include "jobs/backend.h"
#include "jobs/budget.h"
#include "errors.h"
#include "jobs/fair_slots.h"
#include "ops/metrics.h"
#include "codec/png_io.h"
#include "jobs/queue.h"
#include "jobs/worker.h"

struct service {
    const struct serve_config *cfg;
    struct backend *backend;            /* NULL when the backend could not open: never ready */
    char backend_err[EDGED_ERR_LEN];    /* why, when backend is NULL */
    struct queue *q;
    struct worker *w;
    struct metrics *m;
    struct png_limits lim;
    struct fair_slots codec;            /* PNG decode/encode slots: cfg->threads */
    struct fair_slots codec_large;      /* of which large images may hold: max(1, threads - 1) */
    int codec_ready;                    /* both initialised (service_destroy undoes only that) */
    char *openapi;                      /* the bytes of --openapi's file; NULL without --openapi or */
    size_t openapi_len;                 /* when it could not be read (then /openapi.yaml is 404) */
    atomic_int draining;
    struct budget *budget;              /* --max-memory-mb */
};

/* Sets limits and codec slots and reads the file --openapi names, if any (a failure is logged,
 * not fatal). The other members are set by the caller. Returns 0 or a negative EDGED_E_* code. */
int service_init(struct service *s, const struct serve_config *cfg, char *err);
void service_destroy(struct service *s);

/* http_admit: refuses new POSTs while draining, without a backend or after a fatal GPU error. */
int service_admit(void *app, char *err);

/* 1 when /readyz answers 200: the service can serve (service_admit admits: a backend, no fatal
 * GPU error, not draining); else 0 with the reason in reason (EDGED_ERR_LEN bytes). Load never
 * makes it 0: overload is answered 429 or 503 per request. */
int service_ready(struct service *s, char *reason);

#define SERVICE_BUDGET_WAIT_MS 500 /* an image waits this long for the memory budget, then 503 */

/* "gpu", "cpu" or "unavailable". */
const char *service_backend(const struct service *s);

/* A PNG codec slot for an image of pixels pixels: at most cfg->threads decodes and encodes run at
 * once, of which images over cfg->large_pixels hold at most max(1, threads - 1). Leave with the
 * same pixel count. Returns the ms it waited (the request's codec_wait stage). */
double service_codec_enter(struct service *s, long long pixels);
void service_codec_leave(struct service *s, long long pixels);
/* 1 when an image of pixels pixels is large (over cfg->large_pixels): capped codec slots and CPU
 * workers. The one rule for both. */
int service_is_large(const struct service *s, long long pixels);
/* Of `slots` codec slots or CPU workers, how many large images may hold at once: all but one, so
 * one is always left to small ones (at least 1). The one share for both. */
int service_large_slots(int slots);

/* What an image request reserves in the memory budget, stage by stage, so that the reservation
 * follows what the request holds (service.c says what each part counts). Admission waits for
 * `peak` free and takes hold + decode (image_reserve); the decoder's part is given back once the
 * image is decoded, and the job holds `hold` until it is freed (job_take_budget). A CPU job's
 * worker takes `work` while the job runs, and `out` of it stays with the job for its output
 * (job_work_begin, job_work_end). The handler takes `encode` while it encodes; the encoded bytes
 * stay with the request until they are sent (http_req_keep_budget). The body is reserved apart,
 * as it arrives (http_daemon.c). */
struct service_bytes {
    size_t hold, decode, work, out, encode;
    size_t peak; /* the most held at once: hold + the largest of decode, work and out + encode */
};
/* For plan with variant v on an image of w x h x ch. */
void service_image_bytes(const struct service *s, const struct filter_plan *plan, enum variant v, int w, int h,
                         int ch, struct service_bytes *b);
/* For /v1/compare of plan: its image, the reference map and one variant's job at once. */
void service_compare_bytes(const struct service *s, const struct filter_plan *plan, int w, int h, int ch,
                           struct service_bytes *b);
/* Refuses a job over --max-job-cpu-s: EDGED_E_TOO_COSTLY naming the estimate, the limit and the
 * cheaper variant to ask for; else 0. */
int service_check_cost(struct service *s, const struct filter_plan *plan, int w, int h, enum variant v, char *err);
/* Refuses an image whose decode alone is estimated over --max-job-cpu-s (a progressive JPEG of
 * many scans: pixels x scans): EDGED_E_TOO_COSTLY naming the scans, the estimate and the limit;
 * else 0. */
struct imageio_head;
int service_check_decode(struct service *s, const struct imageio_head *head, char *err);

#endif
