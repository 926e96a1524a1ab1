/* worker.c — runs queued jobs: one GPU worker per device keeps one job per CUDA stream in flight,
 * the CPU pool runs one job per thread; both dispatch through backend.c and complete jobs through
 * the queue, which wakes the connection. A device that fails is fenced: the jobs it held go to the
 * other devices once, and the GPU lane is lost only with the last device. */
#include "jobs/worker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cpu.h"
#include "ops/fault.h"
#include "gconv.h"
#include "ops/log.h"
#include "jobs/png_job.h"
#include "jobs/px_job.h"

#define GPU_MAX_STREAMS 32
/* While streams are busy a GPU worker waits this long for a new job before polling them again:
 * short enough to add < 0.1 ms to a job, long enough not to spin a core. */
#define GPU_POLL_MS 0.05

struct gpu_slot {
    struct job *job;
    double t_submit; /* when it went to the device; while pending, when it took the stream */
    int pending;     /* job waits in a pending batch of compressed input, not yet on the device */
};

/* Host time of a GPU worker's thread by what it did, logged when the thread ends: where a lane
 * bound by that one thread spends it. Only that thread touches it. */
enum gpu_stage { GS_WAIT, GS_SUBMIT_SRC, GS_SUBMIT, GS_FINISH, GS_COMPLETE, GS_N };
struct gpu_prof {
    double ms[GS_N];
};

/* One device's GPU worker. Its thread alone touches prof; the metrics and the watchdog read the
 * rest: atomics, or under the worker's mu. */
struct gpu_dev {
    struct worker *w;
    struct backend *b; /* the device's view (backend_on) */
    int index;         /* in the queue and the backend */
    pthread_t thread;
    int started;
    atomic_int ended;
    atomic_int fenced; /* after a fatal error: takes no more jobs */
    atomic_size_t mem;
    atomic_llong jobs, retried;
    atomic_llong batches[JOB_SRC_COUNT], batch_jobs[JOB_SRC_COUNT]; /* batches of JPEG, PNG input, their jobs */
    char fault[EDGED_ERR_LEN]; /* why it was fenced */
    double oldest_submit;      /* 0 when no job is running */
    double busy_since;         /* clock_ms when the device last went from idle to busy; 0 when idle */
    double busy_ms;            /* busy time up to busy_since */
    struct gpu_prof prof;
    /* 1 while stream s holds a finished job's result for its waiter to copy (gpu_take): the
     * stream takes no job until then. Here, not on the worker's stack: a job may be freed after
     * the worker thread ended. reaped_ms[s]: when the worker saw that job finished (written
     * before the job completes, read by its waiter). */
    atomic_int held[GPU_MAX_STREAMS];
    double reaped_ms[GPU_MAX_STREAMS];
    /* microseconds jobs held the streams, by phase (worker.h, enum worker_hold): where a lane
     * whose streams are all busy loses its time */
    atomic_llong hold_us[WORKER_HOLD_PHASES];
};

struct worker {
    struct queue *q;
    struct backend *b;
    struct worker_config c;
    pthread_t *cpu;
    int ncpu;
    struct cpu_share cpu_share; /* the CPU pool's threads, shared by its running jobs */
    struct gpu_dev *dev;        /* ndev GPU workers (none on the CPU backend) */
    int ndev;
    atomic_int fatal; /* every device fenced: the GPU lane is lost */
    pthread_mutex_t mu; /* guards fatal_msg and each device's fault, oldest start and busy time */
    char fatal_msg[EDGED_ERR_LEN];
};

/* Fences device d once after a fatal error (msg): it takes no more jobs, and when abandon (its
 * thread is stuck) the waiters of its running jobs give up at once. With the last device the GPU
 * lane is lost: readiness drops, every queued job and every later push fails. */
static void dev_fence(struct gpu_dev *d, const char *msg, int abandon)
{
    struct worker *w = d->w;
    char full[EDGED_ERR_LEN];

    if (atomic_exchange(&d->fenced, 1))
        return;
    if (w->ndev > 1)
        snprintf(full, sizeof(full), "GPU %d: %s", backend_ordinal(d->b), msg);
    else
        snprintf(full, sizeof(full), "%s", msg);
    pthread_mutex_lock(&w->mu);
    snprintf(d->fault, sizeof(d->fault), "%s", full);
    pthread_mutex_unlock(&w->mu);
    log_event("error", "gpu_fatal", "%s", full);
    if (queue_fence_device(w->q, d->index, full, abandon) > 0) {
        log_event("warn", "gpu_fenced", "GPU %d fenced; the other devices serve on", backend_ordinal(d->b));
        return;
    }
    pthread_mutex_lock(&w->mu);
    snprintf(w->fatal_msg, sizeof(w->fatal_msg), "%s", full);
    atomic_store(&w->fatal, 1);
    pthread_mutex_unlock(&w->mu);
    queue_fail(w->q, EDGED_E_GPU_FATAL, full);
}

/* ---- CPU pool ---------------------------------------------------------------------------- */

/* Each stage of a CPU job takes its share of the pool's threads (cpu_share): a busy pool runs
 * about as many threads as cores, not cpu_workers times as many. Each stage of a job ends when its
 * slowest thread does, and threads queued for a core held every stage up (the pool served about
 * 1.3x the requests once it stopped oversubscribing; docs/perf/journal.md). */
static void cpu_job(struct worker *w, struct job *job)
{
    int rc = fault_cpu_job(job->err); /* debug builds only; 0 otherwise */

    if (rc == 0 && (rc = job_work_begin(job)) == 0) { /* its working set, while it runs */
        cpu_share_enter(&w->cpu_share);
        rc = backend_run_cpu(w->b, job, w->c.cpu_threads, &w->cpu_share);
        cpu_share_leave(&w->cpu_share);
        job_work_end(job, rc);
    }
    queue_complete(w->q, job, rc);
}

static void *cpu_main(void *arg)
{
    struct worker *w = arg;
    struct job *job;

    while ((job = queue_pop(w->q, LANE_CPU, -1)))
        cpu_job(w, job);
    return NULL;
}

/* ---- GPU workers, one per device ------------------------------------------------------------ */

/* Enqueues the job on stream s. The input has been copied to pinned staging when this returns 0
 * (or the request's thread put it in pinned memory, job->in_pinned, which the job keeps until it is
 * freed): with one device it is freed at once; with several it is kept for a retry on another
 * device. */
static int gpu_submit(struct gpu_dev *d, int s, struct job *job)
{
    void *hog = fault_before_submit(backend_ordinal(d->b)); /* debug builds only */
    int rc;

    if ((rc = backend_submit(d->b, s, job)) == 0 && d->w->ndev == 1)
        img_free(&job->in);
    fault_release(hog);
    return rc;
}

static int gpu_is_fatal(struct gconv_ctx *ctx, int rc) { return rc == EDGED_E_GPU_FATAL || gconv_is_dead(ctx); }

/* A job of fenced device d goes to another device once (queue_retry, counted); 0 when it did, else
 * -1 and the caller completes it. */
static int dev_retry(struct gpu_dev *d, struct job *job)
{
    if (queue_retry(d->w->q, job) < 0)
        return -1;
    atomic_fetch_add(&d->retried, 1);
    return 0;
}

/* A job that could not be started fails with rc; a fatal rc fences the device first, and the job
 * goes to another device once. */
static void gpu_start_failed(struct gpu_dev *d, struct gconv_ctx *ctx, struct job *job, int rc)
{
    if (gpu_is_fatal(ctx, rc)) {
        dev_fence(d, job->err, 0);
        if (dev_retry(d, job) == 0)
            return;
    }
    queue_complete(d->w->q, job, rc);
}

/* Adds the time from `since` to now to phase ph of d's stream hold. */
static void hold_add(struct gpu_dev *d, enum worker_hold ph, double since)
{
    double ms = clock_ms() - since;

    if (ms > 0.0)
        atomic_fetch_add(&d->hold_us[ph], (long long)(ms * 1e3 + 0.5));
}

/* job->take of a GPU job: its waiter's thread copies the result out of the stream's staging, so
 * that the worker thread spends no time on copies. */
static int gpu_take(struct job *job, int copy)
{
    struct gpu_dev *d = job->take_cls;
    int rc = copy ? backend_take(d->b, job->take_slot, job) : 0;

    hold_add(d, WORKER_HOLD_HANDOFF, d->reaped_ms[job->take_slot]);
    atomic_store(&d->held[job->take_slot], 0);
    return rc;
}

/* Leaves the result of job, finished on stream s, for its waiter (gpu_take). */
static void gpu_hold(struct gpu_dev *d, int s, struct job *job)
{
    d->reaped_ms[s] = clock_ms();
    atomic_store(&d->held[s], 1);
    job->take = gpu_take, job->take_cls = d, job->take_slot = s;
}

/* Publishes the oldest submit time of the busy slots for the watchdog, and adds up the time the
 * device had any job (edged_gpu_busy_seconds_total). */
static void publish_oldest(struct gpu_dev *d, const struct gpu_slot *slots, int ns)
{
    double oldest = 0.0, now = clock_ms();

    for (int s = 0; s < ns; s++)
        if (slots[s].job && (oldest == 0.0 || slots[s].t_submit < oldest))
            oldest = slots[s].t_submit;
    pthread_mutex_lock(&d->w->mu);
    d->oldest_submit = oldest;
    if (d->busy_since > 0.0)
        d->busy_ms += now - d->busy_since;
    d->busy_since = oldest > 0.0 ? now : 0.0;
    pthread_mutex_unlock(&d->w->mu);
}

/* Completes every finished stream; returns the number still busy, or -1 after a fatal error (its
 * message in fatal_msg): the job that met it and those not yet reaped stay in their slots for
 * gpu_abandon, which sends them to another device. */
static int gpu_reap(struct gpu_dev *d, struct gconv_ctx *ctx, struct gpu_slot *slots, int ns, char *fatal_msg)
{
    struct job *done_jobs[GPU_MAX_STREAMS];
    int busy = 0, rc, fatal = 0, done = 0, rcs[GPU_MAX_STREAMS];
    double t0, t1;

    for (int s = 0; s < ns && !fatal; s++) {
        struct job *job = slots[s].job;
        if (!job || slots[s].pending || gconv_poll(ctx, s) == 0) {
            busy += job != NULL;
            continue;
        }
        t0 = clock_ms();
        hold_add(d, WORKER_HOLD_DEVICE, slots[s].t_submit);
        rc = backend_finish(d->b, s, job);
        if (rc == GCONV_E_PNG_DECLINED) /* the CPU decodes it and it runs again on s */
            rc = backend_png_declined(d->b, s, job);
        d->prof.ms[GS_FINISH] += clock_ms() - t0;
        if (gpu_is_fatal(ctx, rc)) {
            snprintf(fatal_msg, EDGED_ERR_LEN, "%s", rc < 0 ? job->err : "sticky CUDA error: GPU context lost");
            fatal = 1;
            break;
        }
        if (rc == BACKEND_RESUBMITTED) { /* declined on the device: runs again, CPU-decoded */
            slots[s].t_submit = clock_ms();
            busy++;
            continue;
        }
        if (rc == 1)
            gpu_hold(d, s, job), rc = 0;
        done_jobs[done] = job, rcs[done++] = rc;
        slots[s].job = NULL;
    }
    atomic_fetch_add(&d->jobs, done); /* before the answers: a client never sees its job uncounted */
    if (done) {
        t1 = clock_ms();
        queue_complete_many(d->w->q, done_jobs, rcs, done);
        d->prof.ms[GS_COMPLETE] += clock_ms() - t1;
    }
    if (done && !fatal)
        atomic_store(&d->mem, gconv_mem_used(ctx));
    return fatal ? -1 : busy;
}

/* After a fatal error nothing more is asked of the device: each job it held goes to another device
 * once (queue_retry), or fails with the device's message. */
static void gpu_abandon(struct gpu_dev *d, struct gpu_slot *slots, int ns)
{
    char msg[EDGED_ERR_LEN];

    pthread_mutex_lock(&d->w->mu);
    snprintf(msg, sizeof(msg), "%s", d->fault);
    pthread_mutex_unlock(&d->w->mu);
    for (int s = 0; s < ns; s++) {
        struct job *job = slots[s].job;
        if (!job)
            continue;
        slots[s].job = NULL;
        if (dev_retry(d, job) == 0)
            continue;
        snprintf(job->err, sizeof(job->err), "%s", msg);
        queue_complete(d->w->q, job, EDGED_E_GPU_FATAL);
    }
}

static int free_slot(struct gpu_dev *d, const struct gpu_slot *slots, int ns)
{
    for (int s = 0; s < ns; s++)
        if (!slots[s].job && !atomic_load(&d->held[s]))
            return s;
    return -1;
}

/* Jobs with compressed input gathered for the next batched device decode, one batch per format
 * (JPEG, PNG): each holds its stream's slot (pending) until its batch goes to the device. A batch
 * waits while the device still decodes the previous one of its format (it would queue behind it
 * anyway) and grows meanwhile, up to SRC_BATCH_FULL: the JPEG engines decode a large batch faster
 * per image than several small ones, and a PNG batch shares one inflate and one unfilter launch. */
struct src_pend {
    struct job *jobs[GCONV_JPEG_MAX_BATCH];
    int streams[GCONV_JPEG_MAX_BATCH];
    int n;
};
#define SRC_BATCH_FULL 8
_Static_assert(GCONV_PNG_MAX_BATCH == GCONV_JPEG_MAX_BATCH, "one batch size for every format");

static int is_src_job(const struct job *job) { return job->src && !job->in.px; }

static int pend_full(const struct src_pend *p)
{
    for (int f = 0; f < JOB_SRC_COUNT; f++)
        if (p[f].n >= GCONV_JPEG_MAX_BATCH)
            return 1;
    return 0;
}

/* Adds first and the jobs queued behind it, one per free stream, to the pending batch of its
 * format; a job without compressed input among them is submitted by itself. */
static void src_gather(struct gpu_dev *d, struct gconv_ctx *ctx, struct gpu_slot *slots, int ns,
                       struct src_pend *pend, struct job *first)
{
    struct job *job = first;
    int s, rc;

    do {
        s = free_slot(d, slots, ns);
        slots[s] = (struct gpu_slot){job, clock_ms(), 0};
        if (is_src_job(job)) {
            struct src_pend *p = &pend[job->src_format];
            slots[s].pending = 1;
            p->jobs[p->n] = job, p->streams[p->n++] = s;
        } else if ((rc = gpu_submit(d, s, job)) < 0) {
            slots[s].job = NULL;
            gpu_start_failed(d, ctx, job, rc);
        }
    } while (!pend_full(pend) && !atomic_load(&d->fenced) && free_slot(d, slots, ns) >= 0 &&
             (job = queue_pop_device(d->w->q, d->index, 0)));
}

/* Sends the pending batch of format fmt to the device as one batched decode. */
static void src_flush(struct gpu_dev *d, struct gconv_ctx *ctx, struct gpu_slot *slots, enum job_src fmt,
                      struct src_pend *p)
{
    int rcs[GCONV_JPEG_MAX_BATCH];
    void *hog = NULL, *h;

    for (int i = 0; i < p->n; i++) /* debug builds only: the fault switch counts batched jobs too */
        if ((h = fault_before_submit(backend_ordinal(d->b))))
            hog = h;
    if (fmt == JOB_SRC_PNG)
        backend_submit_png(d->b, p->jobs, p->streams, p->n, rcs);
    else
        backend_submit_jpeg(d->b, p->jobs, p->streams, p->n, rcs);
    fault_release(hog);
    atomic_fetch_add(&d->batches[fmt], 1), atomic_fetch_add(&d->batch_jobs[fmt], p->n);
    for (int i = 0; i < p->n; i++) {
        struct gpu_slot *slot = &slots[p->streams[i]];
        hold_add(d, WORKER_HOLD_PENDING, slot->t_submit);
        slot->pending = 0;
        if (rcs[i] < 0) {
            slot->job = NULL;
            gpu_start_failed(d, ctx, p->jobs[i], rcs[i]);
        } else {
            slot->t_submit = clock_ms();
        }
    }
    p->n = 0;
    fault_job_started(); /* debug builds only */
}

/* 1 when the pending batch of fmt should go now: it is full, or the device has finished decoding
 * the previous one of its format. */
static int src_due(struct gpu_dev *d, enum job_src fmt, const struct src_pend *p)
{
    if (p->n == 0)
        return 0;
    if (p->n >= SRC_BATCH_FULL)
        return 1;
    return !(fmt == JOB_SRC_PNG ? backend_png_decoding(d->b) : backend_jpeg_decoding(d->b));
}

/* Sends every batch that is due; 1 when one went. */
static int src_flush_due(struct gpu_dev *d, struct gconv_ctx *ctx, struct gpu_slot *slots, struct src_pend *pend)
{
    int sent = 0;

    for (int f = 0; f < JOB_SRC_COUNT && !atomic_load(&d->fenced); f++)
        if (src_due(d, (enum job_src)f, &pend[f])) {
            src_flush(d, ctx, slots, (enum job_src)f, &pend[f]);
            sent = 1;
        }
    return sent;
}

/* A GPU worker's profile (struct gpu_prof), with the nvJPEG stages inside its JPEG submits and
 * finishes and its streams' hold by phase (a result its waiter takes later adds no handoff here),
 * as one log line. */
static void gpu_prof_log(struct gpu_dev *d)
{
    const struct gpu_prof *p = &d->prof;
    double nj[BACKEND_JPEG_STAGES];
    /* the process's: PNG streams and decoded pixels pinned by the request threads, or not */
    struct pngjob_counts pc;
    struct pxjob_counts xc;

    if (atomic_load(&d->jobs) == 0 || !d->w->c.log_profile)
        return;
    backend_jpeg_profile(d->b, nj);
    pngjob_counts(&pc);
    pxjob_counts(&xc);
    log_event(
        "info", "gpu_worker_profile",
        "device=%d jobs=%lld jpeg_batches=%lld jpeg_jobs=%lld png_batches=%lld png_jobs=%lld wait_ms=%.1f "
        "submit_src_ms=%.1f submit_ms=%.1f finish_ms=%.1f complete_ms=%.1f "
        "nvjpeg_header_ms=%.1f nvjpeg_decode_ms=%.1f nvjpeg_enqueue_ms=%.1f nvjpeg_retrieve_ms=%.1f "
        "nvjpeg_check_ms=%.1f nvjpeg_device_ms=%.1f "
        "png_streams_pinned=%llu png_streams_staged=%llu px_pinned=%llu px_staged=%llu "
        "hold_pending_ms=%.1f hold_device_ms=%.1f hold_handoff_ms=%.1f",
        backend_ordinal(d->b), (long long)atomic_load(&d->jobs),
        (long long)atomic_load(&d->batches[JOB_SRC_JPEG]),
        (long long)atomic_load(&d->batch_jobs[JOB_SRC_JPEG]),
        (long long)atomic_load(&d->batches[JOB_SRC_PNG]), (long long)atomic_load(&d->batch_jobs[JOB_SRC_PNG]),
        p->ms[GS_WAIT], p->ms[GS_SUBMIT_SRC], p->ms[GS_SUBMIT], p->ms[GS_FINISH], p->ms[GS_COMPLETE], nj[0],
        nj[1], nj[2], nj[3], nj[4], nj[5], pc.z_pinned, pc.z_unpinned, xc.pinned, xc.staged,
        (double)atomic_load(&d->hold_us[WORKER_HOLD_PENDING]) / 1e3,
        (double)atomic_load(&d->hold_us[WORKER_HOLD_DEVICE]) / 1e3,
        (double)atomic_load(&d->hold_us[WORKER_HOLD_HANDOFF]) / 1e3);
}

/* Fills free streams from the queue (blocking only when none is busy), sends the pending batches
 * when they are due, then reaps finished streams. Ends when the queue is closed and drained, or
 * once the device is fenced. */
static void *gpu_main(void *arg)
{
    struct gpu_dev *d = arg;
    struct worker *w = d->w;
    struct gconv_ctx *ctx = backend_gpu(d->b);
    struct gpu_slot slots[GPU_MAX_STREAMS] = {{0}};
    struct src_pend pend[JOB_SRC_COUNT];
    int ns = gconv_stream_count(ctx), busy = 0, s, rc;
    struct job *job;
    struct timespec nap = {0, (long)(GPU_POLL_MS * 1e6)};
    char msg[EDGED_ERR_LEN];
    double t0, t1;

    memset(pend, 0, sizeof(pend));
    ns = ns < 1 ? 1 : ns > GPU_MAX_STREAMS ? GPU_MAX_STREAMS : ns;
    while (!atomic_load(&d->fenced)) {
        int idle = 1; /* nothing to do this turn but wait */
        t0 = clock_ms();
        s = free_slot(d, slots, ns);
        queue_device_open(w->q, d->index, s >= 0);
        if (s >= 0) {
            job = queue_pop_device(w->q, d->index, busy ? GPU_POLL_MS : -1);
            if (!job && !busy)
                break; /* closed and drained, or fenced */
            idle = !job && queue_closed_empty(w->q, LANE_GPU); /* draining: pop no longer waits */
            t1 = clock_ms();
            d->prof.ms[GS_WAIT] += t1 - t0;
            if (job && is_src_job(job)) { /* compressed input: decoded on the device, batched */
                src_gather(d, ctx, slots, ns, pend, job); /* reaped below: pending counts as busy */
                d->prof.ms[GS_SUBMIT_SRC] += clock_ms() - t1;
            } else if (job) {
                rc = gpu_submit(d, s, job);
                d->prof.ms[GS_SUBMIT] += clock_ms() - t1;
                if (rc < 0) {
                    gpu_start_failed(d, ctx, job, rc);
                    continue;
                }
                slots[s] = (struct gpu_slot){job, clock_ms(), 0};
                busy++;
                publish_oldest(d, slots, ns);
                fault_job_started(); /* debug builds only: may poison the context, or block (spin) */
                continue;            /* fill the other free streams first */
            }
        }
        t1 = clock_ms();
        if (src_flush_due(d, ctx, slots, pend)) {
            d->prof.ms[GS_SUBMIT_SRC] += clock_ms() - t1;
        } else if (idle) { /* do not spin */
            nanosleep(&nap, NULL);
            d->prof.ms[GS_WAIT] += clock_ms() - t1;
        }
        if ((busy = gpu_reap(d, ctx, slots, ns, msg)) < 0)
            dev_fence(d, msg, 0);
        publish_oldest(d, slots, ns);
    }
    queue_device_open(w->q, d->index, 0);
    gpu_abandon(d, slots, ns);
    publish_oldest(d, slots, ns);
    gpu_prof_log(d);
    atomic_store(&d->ended, 1);
    return NULL;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

/* One GPU worker per device of b. */
static int start_devices(struct worker *w, char *err)
{
    int n = backend_device_count(w->b);

    if (n == 0)
        return 0;
    if (!(w->dev = calloc((size_t)n, sizeof(*w->dev))))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the GPU workers");
    w->ndev = n;
    queue_set_devices(w->q, n);
    for (int i = 0; i < n; i++) {
        struct gpu_dev *d = &w->dev[i];
        d->w = w, d->b = backend_on(w->b, i), d->index = i;
        if (pthread_create(&d->thread, NULL, gpu_main, d) != 0)
            return edged_fail(err, EDGED_E_INTERNAL, "cannot start the GPU worker of device %d", backend_ordinal(d->b));
        d->started = 1;
    }
    return 0;
}

int worker_start(struct worker **out, struct queue *q, struct backend *b, const struct worker_config *c,
                 char *err)
{
    struct worker *w = calloc(1, sizeof(*w));
    int rc = 0;

    *out = NULL;
    if (!w || !(w->cpu = calloc((size_t)c->cpu_workers, sizeof(pthread_t)))) {
        free(w);
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the workers");
    }
    w->q = q;
    w->b = b;
    w->c = *c;
    cpu_share_init(&w->cpu_share, c->cpu_threads);
    pthread_mutex_init(&w->mu, NULL);
    fault_init(); /* debug builds only */
    for (int i = 0; i < c->cpu_workers && rc == 0; i++) {
        if (pthread_create(&w->cpu[w->ncpu], NULL, cpu_main, w) != 0)
            rc = edged_fail(err, EDGED_E_INTERNAL, "cannot start CPU worker %d", i);
        else
            w->ncpu++;
    }
    if (rc == 0)
        rc = start_devices(w, err);
    if (rc < 0) {
        queue_close(q);
        worker_stop(w, 1000);
        return rc;
    }
    *out = w;
    return 0;
}

/* Joins the device's thread unless it has not ended by `until` (stuck in the driver): -1 then. */
static int join_device(struct gpu_dev *d, double until)
{
    struct timespec nap = {0, 10 * 1000000L};

    if (!d->started)
        return 0;
    while (!atomic_load(&d->ended) && clock_ms() < until)
        nanosleep(&nap, NULL);
    if (!atomic_load(&d->ended))
        return -1;
    pthread_join(d->thread, NULL);
    return 0;
}

int worker_stop(struct worker *w, int wait_ms)
{
    double until;
    int left = 0;

    if (!w)
        return 0;
    for (int i = 0; i < w->ncpu; i++)
        pthread_join(w->cpu[i], NULL);
    until = clock_ms() + wait_ms;
    for (int i = 0; i < w->ndev; i++)
        left |= join_device(&w->dev[i], until);
    if (left == 0) {
        pthread_mutex_destroy(&w->mu);
        free(w->dev);
        free(w->cpu);
        free(w);
    } /* else a stuck thread still reads w: leave it to the process exit */
    return left;
}

int worker_fatal(struct worker *w, char *msg)
{
    int f;

    if (!w)
        return 0;
    pthread_mutex_lock(&w->mu);
    f = atomic_load(&w->fatal);
    if (msg)
        snprintf(msg, EDGED_ERR_LEN, "%s", f ? w->fatal_msg : "");
    pthread_mutex_unlock(&w->mu);
    return f;
}

void worker_watchdog(struct worker *w, int limit_ms)
{
    char msg[EDGED_ERR_LEN];
    double oldest;

    for (int i = 0; w && i < w->ndev; i++) {
        struct gpu_dev *d = &w->dev[i];
        if (atomic_load(&d->fenced))
            continue;
        pthread_mutex_lock(&w->mu);
        oldest = d->oldest_submit;
        pthread_mutex_unlock(&w->mu);
        if (oldest > 0.0 && clock_ms() - oldest > limit_ms) {
            snprintf(msg, sizeof(msg), "GPU job running for %.0f ms, over the %d ms watchdog: device stuck",
                     clock_ms() - oldest, limit_ms);
            dev_fence(d, msg, 1); /* its thread is stuck: its jobs' waiters give up now */
        }
    }
}

int worker_device_count(const struct worker *w) { return w ? w->ndev : 0; }

/* Busy ms of d up to now; call with w->mu held. */
static double busy_ms_locked(const struct gpu_dev *d)
{
    return d->busy_ms + (d->busy_since > 0.0 ? clock_ms() - d->busy_since : 0.0);
}

int worker_device_info(struct worker *w, int i, struct worker_device *out)
{
    const struct gpu_dev *d;

    if (!w || i < 0 || i >= w->ndev)
        return -1;
    d = &w->dev[i];
    memset(out, 0, sizeof(*out));
    out->ordinal = backend_ordinal(d->b);
    snprintf(out->name, sizeof(out->name), "%s", backend_device(d->b));
    out->alive = !atomic_load(&d->fenced);
    out->memory = atomic_load(&d->mem);
    out->jobs = atomic_load(&d->jobs);
    out->retried = atomic_load(&d->retried);
    for (int f = 0; f < JOB_SRC_COUNT; f++)
        out->batches[f] = atomic_load(&d->batches[f]), out->batch_jobs[f] = atomic_load(&d->batch_jobs[f]);
    out->outstanding = queue_device_load(w->q, i);
    for (int h = 0; h < WORKER_HOLD_PHASES; h++)
        out->hold_seconds[h] = (double)atomic_load(&d->hold_us[h]) / 1e6;
    pthread_mutex_lock(&w->mu);
    out->busy_seconds = busy_ms_locked(d) / 1e3;
    snprintf(out->fault, sizeof(out->fault), "%s", d->fault);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

size_t worker_gpu_memory(struct worker *w)
{
    size_t n = 0;

    for (int i = 0; w && i < w->ndev; i++)
        n += atomic_load(&w->dev[i].mem);
    return n;
}

double worker_gpu_busy_seconds(struct worker *w)
{
    double ms = 0.0;

    if (!w)
        return 0.0;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->ndev; i++)
        ms += busy_ms_locked(&w->dev[i]);
    pthread_mutex_unlock(&w->mu);
    return ms / 1e3;
}
