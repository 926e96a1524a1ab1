/* service.c — the state every endpoint shares: admission and readiness, the codec slots and the
 * large-image rule, and the --openapi file read at start. */
#include "jobs/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "codec/image_io.h"
#include "ops/file_io.h"
#include "ops/log.h"

#define OPENAPI_MAX (1u << 20)

/* --openapi FILE replaces the embedded copy (endpoint_openapi); a file that cannot be read is
 * logged with its path (never put in an answer) and /openapi.yaml then answers 404. */
static void load_openapi(struct service *s)
{
    char err[EDGED_ERR_LEN] = "";
    uint8_t *text;

    if (!s->cfg->openapi[0])
        return;
    if (fileio_read(s->cfg->openapi, OPENAPI_MAX, &text, &s->openapi_len, err) == 0 && s->openapi_len > 0) {
        s->openapi = (char *)text;
        return;
    }
    free(text);
    s->openapi_len = 0;
    log_event("warn", "openapi", "--openapi: %s: GET /openapi.yaml answers 404", err[0] ? err : "empty file");
}

int service_init(struct service *s, const struct serve_config *cfg, char *err)
{
    size_t limit = cfg->max_memory_mb ? (size_t)cfg->max_memory_mb << 20 : budget_default_bytes();
    int rc;

    s->cfg = cfg;
    if ((rc = budget_new(&s->budget, limit, err)) < 0)
        return rc;
    pngio_default_limits(&s->lim);
    s->lim.max_side = (uint32_t)cfg->max_side;
    s->lim.max_pixels = (uint64_t)cfg->max_pixels;
    if (fair_slots_init(&s->codec, cfg->threads) != 0)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot make the codec slots");
    if (fair_slots_init(&s->codec_large, service_large_slots(cfg->threads)) != 0) {
        fair_slots_destroy(&s->codec);
        return edged_fail(err, EDGED_E_INTERNAL, "cannot make the codec slots");
    }
    s->codec_ready = 1;
    load_openapi(s);
    return 0;
}

void service_destroy(struct service *s)
{
    if (s->codec_ready) {
        fair_slots_destroy(&s->codec_large);
        fair_slots_destroy(&s->codec);
    }
    s->codec_ready = 0;
    free(s->openapi);
    s->openapi = NULL;
    budget_free(s->budget);
    s->budget = NULL;
}

int service_is_large(const struct service *s, long long pixels) { return pixels > s->cfg->large_pixels; }

int service_large_slots(int slots) { return slots > 1 ? slots - 1 : 1; }

/* A large image first takes one of the threads - 1 large slots, then a shared one: so one shared
 * slot is always left to images at or under --large-pixels (with threads >= 2), and a small
 * request waits at most behind other small ones, never behind seconds of a 50 MP decode. Both
 * slot sets are taken in the same order by everyone, so there is no deadlock; each hands its slots
 * out first come, first served (fair_slots.h). */
double service_codec_enter(struct service *s, long long pixels)
{
    double t0 = clock_ms();

    if (service_is_large(s, pixels))
        fair_slots_enter(&s->codec_large);
    fair_slots_enter(&s->codec);
    return clock_ms() - t0;
}

void service_codec_leave(struct service *s, long long pixels)
{
    fair_slots_leave(&s->codec);
    if (service_is_large(s, pixels))
        fair_slots_leave(&s->codec_large);
}

const char *service_backend(const struct service *s)
{
    return !s->backend ? "unavailable" : backend_has_gpu(s->backend) ? "gpu" : "cpu";
}

int service_admit(void *app, char *err)
{
    struct service *s = app;
    char msg[EDGED_ERR_LEN];

    if (atomic_load(&s->draining))
        return edged_fail(err, EDGED_E_UNAVAILABLE, "server is draining (shutting down)");
    /* the reasons themselves (driver messages) are in the log, not in answers */
    if (!s->backend)
        return edged_fail(err, EDGED_E_UNAVAILABLE, "backend %s unavailable (see the server log)",
                          config_backend_name(s->cfg->backend));
    if (worker_fatal(s->w, msg))
        return edged_fail(err, EDGED_E_GPU_FATAL, "GPU failed; the service is restarting");
    return 0;
}

/* Readiness is admission: a replica that would admit a request is ready, whatever its load.
 * Overload is answered per request (429 with Retry-After, 503 memory_budget); were it answered by
 * unreadiness too, every replica of a loaded Service would leave the endpoints in turn and clients
 * would get connection errors or the ingress's 503 instead of edged's 429. */
int service_ready(struct service *s, char *reason) { return service_admit(s, reason) == 0; }

/* An image request's memory, stage by stage, in bytes a pixel (n = w x h pixels, ch the decoded
 * channels, out_ch the result's), as measured: the peak RSS of one request over the server's idle
 * RSS, less its body, came within 0.7 bytes a pixel above the largest stage's sum for 1000 x 1000
 * and within 0.4 for 3000 x 3000, every filter, variant and channel count tried, and below it for
 * Canny (docs/perf/journal.md).
 *   hold, decode to answer: the decoded image (ch); on the GPU lane also the output the worker
 *     fills (out_ch), allocated when the job is routed;
 *   decode, while decoding: a second buffer of four bytes a pixel at most (a copy turned by the
 *     EXIF orientation, a CMYK JPEG's samples, a PNG's joined IDAT stream);
 *   work, while a CPU job runs, its output included:
 *     convolutions: the float result planes (4 each), the source plane (4) and for a plan of two
 *       kernels the second buffer (4); the output (out_ch) comes once the last two are freed;
 *     canny: its gray (1; none for 1-channel input without a blur), then the blur's two float
 *       planes (8) or, threaded, the map, output and band stacks (3), serial the gradients and
 *       magnitudes (12), map, output and hysteresis stack (at most one pixel in two: 4), 18 in all;
 *   out, from the run to the answer: the CPU job's output (out_ch);
 *   encode, while encoding: the filtered rows and the PNG (2 out_ch), the PNG kept until sent.
 * Each part is counted a sixteenth larger (the allocator's rounding), and the hold SERVICE_IMAGE_SLACK
 * more: the codecs' state and the thread's stack. The body is reserved apart (http_daemon.c). */
#define SERVICE_IMAGE_SLACK ((size_t)2 << 20)

static size_t max_z(size_t a, size_t b) { return a > b ? a : b; }

/* px pixels of per bytes, with the sixteenth. */
static size_t part(size_t px, size_t per) { return px * per + px * per / 16; }

/* Bytes a pixel of a CPU job's working set (the image itself not counted). */
static size_t work_per_pixel(const struct filter_plan *plan, enum variant v, int ch)
{
    size_t gray = ch > 1 || plan->nconv ? 1 : 0, blur = plan->nconv ? 8 : 0;

    if (plan->filter == FILTER_CANNY)
        return gray + max_z(blur, v == VARIANT_CPU_SERIAL ? 18 : 3);
    if (filter_plan_stepwise(plan)) /* planes_steps: two sets of the loaded planes and a spare, then the result */
        return 4 * (2 * (size_t)(plan->in_ch >= 3 && !plan->gray ? 3 : 1) + 1) + 4 * (size_t)plan->planes;
    return 4 * (size_t)plan->planes + 4 * (size_t)plan->nconv;
}

static void set_peak(struct service_bytes *b)
{
    b->peak = b->hold + max_z(b->decode, max_z(b->work, b->out + b->encode));
}

void service_image_bytes(const struct service *s, const struct filter_plan *plan, enum variant v, int w, int h,
                         int ch, struct service_bytes *b)
{
    size_t px = (size_t)w * (size_t)h, out = (size_t)plan->out_ch;
    int gpu = variant_is_gpu(v) || (v == VARIANT_AUTO && backend_has_gpu(s->backend));

    b->hold = part(px, (size_t)ch + (gpu ? out : 0)) + SERVICE_IMAGE_SLACK;
    b->decode = part(px, 4);
    b->work = gpu ? 0 : part(px, work_per_pixel(plan, v, ch));
    b->out = gpu ? 0 : part(px, out);
    b->encode = part(px, 2 * out);
    set_peak(b);
}

/* /v1/compare holds its decoded image, the reference map and the copy of the image the running
 * row's job filters (2 ch + out_ch); that job works as one of filter; nothing is encoded. */
void service_compare_bytes(const struct service *s, const struct filter_plan *plan, int w, int h, int ch,
                           struct service_bytes *b)
{
    size_t px = (size_t)w * (size_t)h;

    service_image_bytes(s, plan, VARIANT_CPU_SERIAL, w, h, ch, b); /* the largest job (canny) or as large */
    b->hold = part(px, 2 * (size_t)ch + (size_t)plan->out_ch) + SERVICE_IMAGE_SLACK;
    b->encode = 0;
    set_peak(b);
}

/* Pixel-scans a second of a progressive JPEG's decode (libjpeg-turbo): a 50 MP image of 500
 * scans took 12.9-14.3 CPU seconds on the 2-core VM, 1.8e9 a second; rounded down, so that a
 * slower machine is not underestimated. Baseline JPEGs, PNG and WebP decode in about one pass,
 * far under any limit. */
#define SERVICE_JPEG_SCAN_PX_PER_S 1.5e9

int service_check_decode(struct service *s, const struct imageio_head *head, char *err)
{
    double est;

    if (head->fmt != IMAGEIO_JPEG || !head->jpeg.progressive)
        return 0;
    est = (double)head->w * head->h * head->jpeg.scans / SERVICE_JPEG_SCAN_PX_PER_S;
    if (est <= s->cfg->max_job_cpu_s)
        return 0;
    return edged_fail(err, EDGED_E_TOO_COSTLY, "decoding this progressive JPEG of %dx%d and %d scans is estimated at "
                      "%.0f CPU seconds, over --max-job-cpu-s %d: send it with fewer scans (or as a baseline JPEG)",
                      head->w, head->h, head->jpeg.scans, est, s->cfg->max_job_cpu_s);
}

int service_check_cost(struct service *s, const struct filter_plan *plan, int w, int h, enum variant v, char *err)
{
    double est = backend_cpu_seconds(s->backend, plan, w, h, v), cheaper;

    if (est <= s->cfg->max_job_cpu_s)
        return 0;
    cheaper = backend_cpu_seconds(s->backend, plan, w, h, VARIANT_CPU);
    if (v == VARIANT_CPU_SERIAL && cheaper <= s->cfg->max_job_cpu_s)
        return edged_fail(err, EDGED_E_TOO_COSTLY, "%s on %dx%d is estimated at %.0f CPU seconds, over "
                          "--max-job-cpu-s %d: ask for variant=cpu (about %.1f s)%s", variant_name(v), w, h, est,
                          s->cfg->max_job_cpu_s, cheaper, backend_has_gpu(s->backend) ? " or a GPU variant" : "");
    return edged_fail(err, EDGED_E_TOO_COSTLY, "%s on %dx%d is estimated at %.0f CPU seconds, over --max-job-cpu-s "
                      "%d: use a smaller image or kernel%s", variant_name(v == VARIANT_AUTO ? VARIANT_CPU : v), w, h,
                      est, s->cfg->max_job_cpu_s, backend_has_gpu(s->backend) ? ", or a GPU variant" : "");
}
