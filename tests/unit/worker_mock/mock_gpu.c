/* mock_gpu.c — fake gconv contexts and async API under the real backend.c and backend_png.c, so
 * that worker.c's GPU loops (streams, poll, finish, OOM, fatal, watchdog, PNG batches, several
 * devices) run without a device: mock_devices fake devices. Jobs "run" for mock_dur_ms per stream
 * (mock_dev_dur_ms[d] on device d when set). A PNG job whose layout is MOCK_PNG_DECLINE_W wide is
 * declined when it finishes, one MOCK_PNG_REFUSE_W wide refused at submit. A pinned submit
 * (gconv_submit_pinned) is counted, and its input bytes are checked again when the job finishes: a
 * buffer given back (or reused) while the device still reads it is counted torn. */
#include <stdatomic.h>
#include <string.h>

#include "clock.h"
#include "jobs/backend.h"
#include "errors.h"
#include "gconv.h"
#include "png_layout.h"

/* Up to MOCK_DEVS fake devices (mock_devices of them open), each with its streams' state. */
#define MOCK_DEVS 4
struct gconv_ctx {
    int ord;
    double start[16];
    int busy[16], failrc[16], declined[16];
    /* a stream's submits and the submit its last finish ended: a result is copied only before the
     * stream takes another job */
    int submits_on[16], finished_on[16];
    /* a pinned submit's input on each stream, and the sum of its bytes then */
    const uint8_t *pin[16];
    size_t pin_len[16];
    uint32_t pin_sum[16];
};
static struct gconv_ctx ctxs[MOCK_DEVS];

int mock_streams = 4, mock_devices = 1;
_Atomic double mock_dur_ms = 20; /* a test changes it while a worker polls */
double mock_dev_dur_ms[MOCK_DEVS]; /* a device's own duration when > 0 */
/* mock_dead, mock_hang_mask: bit d for device d (dead: poisoned; hang: its jobs never finish) */
atomic_int mock_busy, mock_max_busy, mock_dead, mock_fatal_at = -1, mock_oom_at = -1, mock_submits, mock_hang,
    mock_hang_mask;
atomic_int mock_dev_jobs[MOCK_DEVS]; /* jobs each device finished */
#define MOCK_PNG_DECLINE_W 9
#define MOCK_PNG_REFUSE_W 10
atomic_int mock_png_busy, mock_png_nbatches;
int mock_png_batch[64];
atomic_int mock_pinned_submits, mock_pinned_torn;

/* The real backend over mock_devices fake devices; opened again when that count changes. */
struct backend *mock_backend(void)
{
    static struct backend *b;
    static int open_devs;

    if (b && open_devs != mock_devices) {
        backend_close(b);
        b = NULL;
    }
    if (!b) {
        backend_open(&b, BACKEND_GPU, NULL, 0, mock_streams, 1, NULL);
        open_devs = mock_devices;
    }
    return b;
}
void mock_reset(void)
{
    for (int d = 0; d < MOCK_DEVS; d++) {
        ctxs[d] = (struct gconv_ctx){.ord = d};
        mock_dev_dur_ms[d] = 0;
        atomic_store(&mock_dev_jobs[d], 0);
    }
    atomic_store(&mock_hang_mask, 0);
}

int gconv_device_count(void) { return mock_devices; }

int gconv_open(struct gconv_ctx **out, int device, int streams, char *err)
{
    (void)streams, (void)err;
    if (device < 0 || device >= mock_devices || device >= MOCK_DEVS)
        return EDGED_E_NO_CUDA;
    *out = &ctxs[device];
    ctxs[device].ord = device;
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
int gconv_is_dead(const struct gconv_ctx *c) { return c && (atomic_load(&mock_dead) >> c->ord & 1); }
size_t gconv_mem_used(const struct gconv_ctx *c) { return c ? 12345 : 0; }

int gconv_submit(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan, enum variant v,
                 int block, char *err)
{
    int n = atomic_fetch_add(&mock_submits, 1), b;

    int *busy = ctx->busy;

    (void)in, (void)plan, (void)v, (void)block;
    if (busy[s])
        return edged_fail(err, EDGED_E_PARAM, "stream %d already has a job in flight", s);
    if (n == mock_oom_at)
        return edged_fail(err, EDGED_E_GPU_OOM, "mock: out of device memory");
    busy[s] = 1;
    ctx->submits_on[s]++;
    ctx->failrc[s] = n == mock_fatal_at ? EDGED_E_GPU_FATAL : 0;
    ctx->start[s] = clock_ms();
    b = atomic_fetch_add(&mock_busy, 1) + 1;
    if (b > mock_max_busy)
        mock_max_busy = b;
    return 0;
}

static uint32_t bytes_sum(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

int gconv_submit_pinned(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                        enum variant v, int block, char *err)
{
    int rc;

    if (!in || !in->px || in->stride != (size_t)in->w * in->ch)
        return edged_fail(err, EDGED_E_PARAM, "mock: a pinned input must be packed rows");
    if ((rc = gconv_submit(ctx, s, in, plan, v, block, err)) == 0) {
        ctx->pin[s] = in->px, ctx->pin_len[s] = in->stride * (size_t)in->h;
        ctx->pin_sum[s] = bytes_sum(in->px, ctx->pin_len[s]);
        atomic_fetch_add(&mock_pinned_submits, 1);
    }
    return rc;
}

int gconv_poll(struct gconv_ctx *ctx, int s)
{
    double dur = mock_dev_dur_ms[ctx->ord] > 0 ? mock_dev_dur_ms[ctx->ord] : mock_dur_ms;

    if (!ctx->busy[s])
        return EDGED_E_PARAM;
    if (mock_hang || (atomic_load(&mock_hang_mask) >> ctx->ord & 1) || clock_ms() - ctx->start[s] < dur)
        return 0;
    if (ctx->failrc[s])
        atomic_fetch_or(&mock_dead, 1 << ctx->ord);
    return ctx->failrc[s] ? ctx->failrc[s] : 1;
}

int gconv_finish(struct gconv_ctx *ctx, int s, struct img *out, struct gconv_times *t, char *err)
{
    if (ctx->pin[s] && bytes_sum(ctx->pin[s], ctx->pin_len[s]) != ctx->pin_sum[s])
        atomic_fetch_add(&mock_pinned_torn, 1);
    ctx->pin[s] = NULL;
    ctx->busy[s] = 0;
    atomic_fetch_sub(&mock_busy, 1);
    if (ctx->declined[s]) {
        ctx->declined[s] = 0;
        return edged_fail(err, GCONV_E_PNG_DECLINED, "mock: the device declined the PNG");
    }
    if (ctx->failrc[s])
        return edged_fail(err, ctx->failrc[s], "mock: sticky CUDA error");
    ctx->finished_on[s] = ctx->submits_on[s];
    atomic_fetch_add(&mock_dev_jobs[ctx->ord], 1);
    *t = (struct gconv_times){1, 2, 1};
    return out ? gconv_finish_copy(ctx, s, out, err) : 0;
}

int gconv_finish_copy(struct gconv_ctx *ctx, int s, struct img *out, char *err)
{
    if (ctx->busy[s] || ctx->finished_on[s] != ctx->submits_on[s])
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
            ctx->declined[j->s] = j->lay->w == MOCK_PNG_DECLINE_W;
            done++;
        }
    }
    return done;
}
