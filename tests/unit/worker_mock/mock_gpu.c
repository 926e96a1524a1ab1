/* mock_gpu.c — a fake gconv context and async API under the real backend.c and backend_png.c, so
 * that worker.c's GPU loop (streams, poll, finish, OOM, fatal, watchdog, PNG batches) runs without a
 * device. Jobs "run" for mock_dur_ms per stream. A PNG job whose layout is MOCK_PNG_DECLINE_W wide
 * is declined when it finishes, one MOCK_PNG_REFUSE_W wide refused at submit. */
#include <stdatomic.h>
#include <string.h>

#include "clock.h"
#include "jobs/backend.h"
#include "errors.h"
#include "gconv.h"
#include "png_layout.h"

struct gconv_ctx {
    int unused;
};
static struct gconv_ctx the_ctx;

int mock_streams = 4;
double mock_dur_ms = 20;
atomic_int mock_busy, mock_max_busy, mock_dead, mock_fatal_at = -1, mock_oom_at = -1, mock_submits, mock_hang;
static double start[16];
static int busy[16], failrc[16], declined[16];
#define MOCK_PNG_DECLINE_W 9
#define MOCK_PNG_REFUSE_W 10
atomic_int mock_png_busy, mock_png_nbatches;
int mock_png_batch[64];
/* a stream's submits and the submit its last finish ended: a result is copied only before the
 * stream takes another job */
static int submits_on[16], finished_on[16];

/* The real backend over the fake context; opened once. */
struct backend *mock_backend(void)
{
    static struct backend *b;

    if (!b)
        backend_open(&b, BACKEND_GPU, NULL, 0, mock_streams, 1, NULL);
    return b;
}
void mock_reset(void)
{
    memset(busy, 0, sizeof(busy));
    memset(declined, 0, sizeof(declined));
    memset(submits_on, 0, sizeof(submits_on));
    memset(finished_on, 0, sizeof(finished_on));
}

int gconv_device_count(void) { return 1; }

int gconv_open(struct gconv_ctx **out, int device, int streams, char *err)
{
    (void)device, (void)streams, (void)err;
    *out = &the_ctx;
    return 0;
}
void gconv_close(struct gconv_ctx *c) { (void)c; }
const struct gconv_info *gconv_get_info(const struct gconv_ctx *c)
{
    static const struct gconv_info info = {.name = "mock GPU"};
    return c ? &info : NULL;
}
/* Only naive serves: auto resolves to it (backend_pick), which the client checks. */
int gconv_check(const struct gconv_ctx *c, const struct filter_plan *plan, int w, int h, enum variant v, int block,
                char *err)
{
    (void)c, (void)plan, (void)w, (void)h, (void)block;
    return v == VARIANT_NAIVE ? 0 : edged_fail(err, EDGED_E_VARIANT_LIMIT, "mock: only naive");
}

int gconv_stream_count(const struct gconv_ctx *c) { return c ? mock_streams : 0; }
int gconv_is_dead(const struct gconv_ctx *c) { return c && mock_dead; }
size_t gconv_mem_used(const struct gconv_ctx *c) { return c ? 12345 : 0; }

int gconv_submit(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan, enum variant v,
                 int block, char *err)
{
    int n = atomic_fetch_add(&mock_submits, 1), b;

    (void)ctx, (void)in, (void)plan, (void)v, (void)block;
    if (busy[s])
        return edged_fail(err, EDGED_E_PARAM, "stream %d already has a job in flight", s);
    if (n == mock_oom_at)
        return edged_fail(err, EDGED_E_GPU_OOM, "mock: out of device memory");
    busy[s] = 1;
    submits_on[s]++;
    failrc[s] = n == mock_fatal_at ? EDGED_E_GPU_FATAL : 0;
    start[s] = clock_ms();
    b = atomic_fetch_add(&mock_busy, 1) + 1;
    if (b > mock_max_busy)
        mock_max_busy = b;
    return 0;
}

int gconv_poll(struct gconv_ctx *ctx, int s)
{
    (void)ctx;
    if (!busy[s])
        return EDGED_E_PARAM;
    if (mock_hang || clock_ms() - start[s] < mock_dur_ms)
        return 0;
    if (failrc[s])
        mock_dead = 1;
    return failrc[s] ? failrc[s] : 1;
}

int gconv_finish(struct gconv_ctx *ctx, int s, struct img *out, struct gconv_times *t, char *err)
{
    (void)ctx;
    busy[s] = 0;
    atomic_fetch_sub(&mock_busy, 1);
    if (declined[s]) {
        declined[s] = 0;
        return edged_fail(err, GCONV_E_PNG_DECLINED, "mock: the device declined the PNG");
    }
    if (failrc[s])
        return edged_fail(err, failrc[s], "mock: sticky CUDA error");
    finished_on[s] = submits_on[s];
    *t = (struct gconv_times){1, 2, 1};
    return out ? gconv_finish_copy(ctx, s, out, err) : 0;
}

int gconv_finish_copy(struct gconv_ctx *ctx, int s, struct img *out, char *err)
{
    (void)ctx;
    if (busy[s] || finished_on[s] != submits_on[s])
        return edged_fail(err, EDGED_E_INTERNAL, "mock: stream %d took another job before its result was copied", s);
    memset(out->px, 7, out->stride * (size_t)out->h);
    return 0;
}

int gconv_png_available(const struct gconv_ctx *c) { return c != NULL; }

int gconv_png_decoding(const struct gconv_ctx *c) { return c && atomic_load(&mock_png_busy); }

int gconv_submit_png(struct gconv_ctx *ctx, struct gconv_png_job *jobs, int n)
{
    int k = atomic_load(&mock_png_nbatches), done = 0; /* one writer: the worker's thread */

    if (k < 64)
        mock_png_batch[k] = n;
    atomic_store(&mock_png_nbatches, k + 1);
    for (int i = 0; i < n; i++) {
        struct gconv_png_job *j = &jobs[i];
        if (j->lay->w == MOCK_PNG_REFUSE_W) {
            j->rc = edged_fail(j->err, GCONV_E_PNG_REFUSED, "mock: a kind the device does not take");
            continue;
        }
        if ((j->rc = gconv_submit(ctx, j->s, NULL, j->plan, j->v, j->block, j->err)) == 0) {
            declined[j->s] = j->lay->w == MOCK_PNG_DECLINE_W;
            done++;
        }
    }
    return done;
}
