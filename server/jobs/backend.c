/* backend.c — the backend handle (GPU context or CPU threads), the choice of `auto`, and the one
 * dispatch of a job to cpu_serial, cpu or a GPU variant. */
#include "jobs/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "canny.h"
#include "clock.h"
#include "cpu.h"
#include "cpu_serial.h"
#include "errors.h"
#include "gconv.h"
#include "jobs/dev_encode.h"
#include "jobs/jpeg_job.h"
#include "jobs/png_job.h"
#include "ops/log.h"

struct backend {
    struct gconv_ctx *gpu; /* NULL on the CPU backend */
    int threads;
    int ordinal;           /* CUDA device number of gpu */
    char device[160];
    /* The opened backend only: its devices' views, dev[0] itself; each view is a backend whose GPU
     * lane is one device (backend_on), sharing threads. */
    int ndev;
    struct backend *dev[CONFIG_MAX_GPUS];
    struct gconv_jpeg_probe *jprobe; /* the opened backend only, once backend_jpeg_probe_open ran */
};

/* The CUDA device numbers to open: ids, or every visible one (at most CONFIG_MAX_GPUS). */
static int device_list(const int *ids, int nids, int *out)
{
    int n = nids > 0 ? nids : gconv_device_count();

    n = n > CONFIG_MAX_GPUS ? CONFIG_MAX_GPUS : n;
    for (int i = 0; i < n; i++)
        out[i] = nids > 0 ? ids[i] : i;
    return n;
}

/* Opens every listed device that works into b's views; a device that fails is left out (and
 * logged once another one works), so that one broken GPU does not take the others down. Returns
 * the views opened, or the first device's error (message in err) when none opened. */
static int open_devices(struct backend *b, const int *ids, int nids, int streams, char *err)
{
    int list[CONFIG_MAX_GPUS], n = device_list(ids, nids, list), first = 0, rc, failed[CONFIG_MAX_GPUS], nfailed = 0;
    char msg[CONFIG_MAX_GPUS][EDGED_ERR_LEN];

    if (n == 0) /* no device visible: gconv_open says why */
        return gconv_open(&b->gpu, 0, streams, err);
    for (int i = 0; i < n; i++) {
        struct backend *v = b->ndev == 0 ? b : calloc(1, sizeof(*v));
        if (!v)
            return b->ndev ? b->ndev : edged_fail(err, EDGED_E_NOMEM, "cannot allocate the backend");
        if ((rc = gconv_open(&v->gpu, list[i], streams, msg[nfailed])) < 0) {
            if (!first)
                first = rc, memcpy(err, msg[nfailed], EDGED_ERR_LEN);
            failed[nfailed++] = list[i];
            if (v != b)
                free(v);
            continue;
        }
        v->ordinal = list[i];
        v->threads = b->threads;
        snprintf(v->device, sizeof(v->device), "%s", gconv_get_info(v->gpu)->name);
        b->dev[b->ndev++] = v;
    }
    for (int i = 0; i < nfailed && b->ndev > 0; i++)
        log_event("error", "gpu_open", "GPU %d left out: %s", failed[i], msg[i]);
    return b->ndev ? b->ndev : first;
}

int backend_open(struct backend **out, enum backend_kind want, const int *devices, int ndevices, int streams,
                 int threads, char *err)
{
    struct backend *b = calloc(1, sizeof(*b));
    char msg[EDGED_ERR_LEN] = "";
    int rc = 0;

    *out = NULL;
    if (!b)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the backend");
    b->threads = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (b->threads < 1)
        b->threads = 1;
    if (want != BACKEND_CPU) {
        rc = open_devices(b, devices, ndevices, streams, msg);
        if (rc < 0 && want == BACKEND_GPU) {
            edged_fail(err, rc, "%s", msg);
            free(b);
            return rc;
        }
        if (rc < 0 && err)
            snprintf(err, EDGED_ERR_LEN, "%s", msg); /* auto: why the CPU serves */
    }
    if (!b->gpu)
        snprintf(b->device, sizeof(b->device), "cpu (%d threads)", b->threads);
    *out = b;
    return 0;
}

void backend_close(struct backend *b)
{
    if (!b)
        return;
    for (int i = 1; i < b->ndev; i++) {
        gconv_close(b->dev[i]->gpu);
        free(b->dev[i]);
    }
    gconv_close(b->gpu);
    gconv_jpeg_probe_close(b->jprobe);
    free(b);
}

int backend_jpeg_probe_open(struct backend *b, char *err)
{
    if (!backend_has_gpu(b) || !gconv_jpeg_available(b->gpu))
        return edged_fail(err, EDGED_E_NO_CUDA, "no GPU lane with nvJPEG");
    if (b->jprobe)
        return 0;
    return gconv_jpeg_probe_open(&b->jprobe, b->ordinal, err);
}

int backend_jpeg_probe(struct backend *b, const uint8_t *data, size_t len, struct gconv_jpeg_head *head,
                       char *err)
{
    int rc;

    if (!b->jprobe)
        return 0;
    return (rc = gconv_jpeg_probe(b->jprobe, data, len, head, err)) < 0 ? rc : 1;
}

int backend_device_count(const struct backend *b) { return b ? b->ndev : 0; }
struct backend *backend_on(struct backend *b, int i) { return i >= 0 && i < b->ndev ? b->dev[i] : NULL; }
int backend_ordinal(const struct backend *b) { return b->ordinal; }

int backend_device_index(const struct backend *b, int ordinal)
{
    for (int i = 0; i < b->ndev; i++)
        if (b->dev[i]->ordinal == ordinal)
            return i;
    return -1;
}

int backend_has_gpu(const struct backend *b) { return b && b->gpu != NULL; }
const char *backend_device(const struct backend *b) { return b->device; }
struct gconv_ctx *backend_gpu(struct backend *b) { return b->gpu; }
int backend_threads(const struct backend *b) { return b->threads; }

/* Full-rank taps of at least this many taps go to fft under auto: from there the FFT's cost per
 * pixel (independent of the taps) undercuts direct correlation's rows*cols FMAs. Set from
 * `edged bench --filter custom --variants fast,fft` at 8192^2 (performance.md): fft's fused tile
 * kernel wins at 13x13, the smallest size timed against it (its time hardly depends on the taps,
 * fast's falls with them). */
#define BACKEND_FFT_MIN_TAPS (13 * 13)

/* Whether plan has a full-rank kernel large enough for fft (BACKEND_FFT_MIN_TAPS). */
static int backend_wants_fft(const struct filter_plan *plan)
{
    for (int i = 0; i < plan->nconv; i++)
        if (!plan->conv[i].separable && plan->conv[i].rows * plan->conv[i].cols >= BACKEND_FFT_MIN_TAPS)
            return 1;
    return 0;
}

/* auto = fft for large full-rank taps when this build has cuFFT; else fast wherever fast can serve
 * the case (its only limit is opt-in shared memory per block), because `edged bench --compare` measured it fastest in every case (notes in docs/perf/journal.md);
 * else the seed variant the bench found fastest: separable passes for rank-1 taps from 7x7 up, else
 * the adaptive tiled kernel; cpu without a GPU. */
enum variant backend_pick(const struct backend *b, const struct filter_plan *plan, int w, int h)
{
    char err[EDGED_ERR_LEN];
    int sep = 1;

    if (!b->gpu)
        return VARIANT_CPU;
    if (!filter_variant_serves(plan->filter, VARIANT_TILED)) /* canny: fast is its only GPU variant */
        return VARIANT_FAST;
    if (backend_wants_fft(plan) && gconv_check(b->gpu, plan, w, h, VARIANT_FFT, VARIANT_DEFAULT_BLOCK, err) == 0)
        return VARIANT_FFT;
    if (gconv_check(b->gpu, plan, w, h, VARIANT_FAST, VARIANT_DEFAULT_BLOCK, err) == 0)
        return VARIANT_FAST;
    for (int i = 0; i < plan->nconv; i++) {
        const struct kernel2d *k = &plan->conv[i];
        sep = sep && k->separable && (k->rows >= 7 || k->cols >= 7);
    }
    if (sep && gconv_check(b->gpu, plan, w, h, VARIANT_SEPARABLE, VARIANT_DEFAULT_BLOCK, err) == 0)
        return VARIANT_SEPARABLE;
    if (gconv_check(b->gpu, plan, w, h, VARIANT_TILED, VARIANT_DEFAULT_BLOCK, err) == 0)
        return VARIANT_TILED;
    return VARIANT_NAIVE;
}

/* ---- one job ---------------------------------------------------------------------------- */

int backend_route(const struct backend *b, struct job *job, char *err)
{
    char who[160];

    if (!filter_variant_serves(job->plan.filter, job->variant))
        return edged_fail(err, EDGED_E_VARIANT_LIMIT, "variant %s does not run filter %s; %s do",
                          variant_name(job->variant), filter_name(job->plan.filter),
                          filter_variants_serving(job->plan.filter, who, sizeof(who)));
    if (variant_is_gpu(job->variant) && !backend_has_gpu(b))
        return edged_fail(err, EDGED_E_NO_CUDA, "variant %s needs a GPU; the CPU backend is in use (%s)",
                          variant_name(job->variant), EDGED_GPU ? "no CUDA device in use" : "built without CUDA");
    job->lane = variant_is_gpu(job->variant) || (job->variant == VARIANT_AUTO && backend_has_gpu(b)) ? LANE_GPU
                                                                                                    : LANE_CPU;
    if (job->lane == LANE_GPU)
        return img_alloc(&job->out, job->in.w, job->in.h, job->plan.out_ch, err);
    return 0;
}

/* Compressed input left for the GPU lane, decoded on the CPU (a CPU job, one submitted by itself). */
static int decode_src(struct job *job)
{
    return job->src_format == JOB_SRC_PNG ? pngjob_decode_src(job) : jpegjob_decode_src(job);
}

int backend_run_cpu(const struct backend *b, struct job *job, int threads, struct cpu_share *share)
{
    double t0 = clock_ms();
    int rc, serial;

    (void)b;
    if ((rc = decode_src(job)) < 0)
        return rc;
    job->used = job->variant == VARIANT_AUTO ? VARIANT_CPU : job->variant;
    serial = job->used == VARIANT_CPU_SERIAL;
    if (job->plan.filter == FILTER_CANNY) { /* canny takes its share once, for the whole job */
        int nt = share ? cpu_share_threads(share) : threads;
        job->threads = serial ? 1 : cpu_threads(nt, job->in.h);
        rc = canny_plan_run_cancel(&job->in, &job->plan, serial, nt, &job->out, &job->cancel, job->err);
    } else if (serial) {
        job->threads = 1;
        rc = cpu_serial_run_cancel(&job->in, &job->plan, &job->out, &job->cancel, job->err);
    } else if (share) {
        rc = cpu_run_shared(&job->in, &job->plan, &job->out, share, &job->cancel, &job->threads, job->err);
    } else {
        job->threads = cpu_threads(threads, job->in.h);
        rc = cpu_run_cancel(&job->in, &job->plan, &job->out, threads, &job->cancel, job->err);
    }
    job->t.kernel = clock_ms() - t0;
    return rc;
}

/* What a CPU job costs, in thread-seconds: its pixels times, for each plane, the taps of the
 * kernels as the variant really runs them at the rate of the loop that runs them, plus a time per
 * pixel for what is not a convolution (loading, combining, storing; Canny's gradients, suppression
 * and hysteresis). Measured in thread-seconds on the 2-core AVX2 VM with images of 1000^2 and
 * 2000^2 (docs/perf/journal.md), and rounded so that each estimate came out above what was
 * measured, or within an eighth of it:
 *   cpu_serial runs every kernel direct (rows x cols taps): 5.5e8 taps a second (5.6e8 for 15 x 15,
 *     up to 9e8 for larger, measured), and 40 ns a pixel of each plane besides (14 to 54 measured);
 *   cpu runs a kernel as two passes (rows + cols taps) where cpu_conv_separable says so, at 8e9 a
 *     second (about 1e10 measured), else direct at 1.6e10 (1.7e10 to 2.1e10 measured), and 30 ns
 *     a pixel of each plane besides (15 to 29 measured);
 *   canny runs its pre-blur direct in both forms (canny.h), the blurred plane's load and store
 *     costing a pixel as above; its own work costs a serial pixel 2 ap^2 + 30 taps' worth, ap its
 *     aperture (53 to 77 ns measured for 3, 95 to 124 for 5, 184 to 195 for 7: a Sobel of 2 ap^2 taps
 *     computed straight), a threaded one 30 ns (19 to 27 measured).
 * A machine without AVX2 runs the threaded loops at about half these rates: the estimate only has
 * to tell a seconds-long job from a minutes-long one. */
#define BACKEND_SERIAL_TAPS_PER_S 5.5e8
#define BACKEND_SERIAL_PIXEL_S 40e-9
#define BACKEND_CPU_PASS_TAPS_PER_S 8.0e9
#define BACKEND_CPU_DIRECT_TAPS_PER_S 1.6e10
#define BACKEND_CPU_PIXEL_S 30e-9
#define BACKEND_CANNY_SERIAL_TAPS 30
#define BACKEND_CANNY_CPU_PIXEL_S 30e-9

/* Seconds one pixel of one plane costs: each kernel as its loop runs it, plus the per-pixel work. */
static double pixel_seconds(const struct filter_plan *plan, int serial)
{
    int canny = plan->filter == FILTER_CANNY, ap = plan->canny.aperture;
    double t = 0.0;

    for (int i = 0; i < plan->nconv; i++) {
        const struct kernel2d *k = &plan->conv[i];
        if (serial)
            t += (double)k->rows * k->cols / BACKEND_SERIAL_TAPS_PER_S;
        else if (!canny && cpu_conv_separable(k))
            t += (double)(k->rows + k->cols) / BACKEND_CPU_PASS_TAPS_PER_S;
        else
            t += (double)k->rows * k->cols / BACKEND_CPU_DIRECT_TAPS_PER_S;
    }
    if (!canny || plan->nconv) /* a plane loaded, filtered and stored; a pipeline's steps each pass over it */
        t += (serial ? BACKEND_SERIAL_PIXEL_S : BACKEND_CPU_PIXEL_S) * (plan->nsteps > 1 ? plan->nsteps : 1);
    if (canny)
        t += serial ? (2.0 * ap * ap + BACKEND_CANNY_SERIAL_TAPS) / BACKEND_SERIAL_TAPS_PER_S : BACKEND_CANNY_CPU_PIXEL_S;
    return t;
}

double backend_cpu_seconds(const struct backend *b, const struct filter_plan *plan, int w, int h, enum variant v)
{
    if (v == VARIANT_AUTO)
        v = backend_has_gpu(b) ? VARIANT_FAST : VARIANT_CPU;
    if (variant_is_gpu(v))
        return 0.0;
    /* a pipeline runs its steps before a gray one on every channel: counted so throughout */
    int planes = filter_plan_stepwise(plan) && plan->in_ch >= 3 && !plan->gray ? 3 : plan->planes;

    return (double)w * h * (planes > 0 ? planes : 1) * pixel_seconds(plan, v == VARIANT_CPU_SERIAL);
}

/* gconv_submit checks the variant's limits against the plan and size. */
int backend_resolve(const struct backend *b, struct job *job)
{
    if (job->variant == VARIANT_AUTO)
        job->variant = backend_pick(b, &job->plan, job->in.w, job->in.h);
    job->used = job->variant;
    return job->block ? job->block : VARIANT_DEFAULT_BLOCK;
}

int backend_batch_rc(struct backend *b, int s, struct job *job, int call_rc, int rc, int refused,
                     int (*fallback)(struct backend *b, int s, struct job *job), const char *err)
{
    if (call_rc == EDGED_E_GPU_FATAL)
        rc = call_rc;
    if (rc == refused)
        return fallback(b, s, job);
    if (rc < 0)
        memcpy(job->err, err, EDGED_ERR_LEN);
    else
        devenc_behind(b->gpu, s, job);
    return rc;
}

/* Pixels the request's thread put in pinned memory (pxjob_pin) are uploaded from there. */
int backend_submit(struct backend *b, int s, struct job *job)
{
    const struct img *in = &job->in;
    struct img pinned;
    int block, rc;

    if ((rc = decode_src(job)) < 0) /* compressed input submitted one at a time: CPU decode */
        return rc;
    block = backend_resolve(b, job);
    if (job->in_pinned && !job->in.px) {
        pinned = (struct img){.w = in->w, .h = in->h, .ch = in->ch, .stride = (size_t)in->w * in->ch,
                              .px = job->in_pinned};
        rc = gconv_submit_pinned(b->gpu, s, &pinned, &job->plan, job->used, block, job->err);
    } else {
        rc = gconv_submit(b->gpu, s, in, &job->plan, job->used, block, job->err);
    }
    if (rc < 0)
        return rc;
    devenc_behind(b->gpu, s, job);
    return 0;
}

int backend_finish(struct backend *b, int s, struct job *job)
{
    struct gconv_times gt = {0};
    int rc = gconv_finish(b->gpu, s, NULL, &gt, job->err);

    job->t.upload = gt.upload_ms;
    job->t.kernel = gt.kernel_ms;
    job->t.download = gt.download_ms;
    if (rc == 0 && job->src_format == JOB_SRC_PNG && job->src && !job->in.px) /* not the CPU's pixels */
        pngjob_count(PNGJOB_GPU_DECODED);
    return rc < 0 ? rc : devenc_result(b->gpu, s, job);
}

int backend_take(struct backend *b, int s, struct job *job) { return gconv_finish_copy(b->gpu, s, &job->out, job->err); }

int backend_run(struct backend *b, struct job *job)
{
    int rc;

    if (job->lane != LANE_GPU)
        return backend_run_cpu(b, job, b->threads, NULL);
    if (!b->gpu)
        return edged_fail(job->err, EDGED_E_NO_CUDA, "a GPU job needs a GPU backend");
    if ((rc = backend_submit(b, 0, job)) < 0 || (rc = backend_finish(b, 0, job)) <= 0)
        return rc;
    return backend_take(b, 0, job);
}
