/* worker.c — runs queued jobs: the GPU worker keeps one job per CUDA stream in flight, the CPU pool
 * runs one job per thread; both dispatch through backend.c and complete jobs through the queue,
 * which wakes the connection. */
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

#define GPU_MAX_STREAMS 32
/* While streams are busy the GPU worker waits this long for a new job before polling them again:
 * short enough to add < 0.1 ms to a job, long enough not to spin a core. */
#define GPU_POLL_MS 0.05

struct gpu_slot {
    struct job *job;
    double t_submit;
    int pending; /* job waits in a pending batch of compressed input, not yet on the device */
};

/* Host time of the GPU worker's thread by what it did, logged when the thread ends: where a lane
 * bound by that one thread spends it. Only that thread touches it. */
enum gpu_stage { GS_WAIT, GS_SUBMIT_SRC, GS_SUBMIT, GS_FINISH, GS_COMPLETE, GS_N };
struct gpu_prof {
    double ms[GS_N];
    long long jobs; /* completed */
    long long src_batches[JOB_SRC_COUNT], src_jobs[JOB_SRC_COUNT]; /* batches of JPEG, PNG input and their jobs */
};

struct worker {
    struct queue *q;
    struct backend *b;
    struct worker_config c;
    pthread_t *cpu;
    int ncpu;
    struct cpu_share cpu_share; /* the CPU pool's threads, shared by its running jobs */
    pthread_t gpu;
    int has_gpu;
    atomic_int gpu_ended;
    atomic_int fatal;
    atomic_size_t gpu_mem;
    pthread_mutex_t mu; /* guards fatal_msg, the oldest start time (watchdog) and the busy time */
    char fatal_msg[EDGED_ERR_LEN];
    double oldest_submit; /* 0 when no GPU job is running */
    double busy_since;    /* clock_ms when the device last went from idle to busy; 0 when idle */
    double busy_ms;       /* busy time up to busy_since */
    struct gpu_prof prof; /* the GPU worker's own */
    /* 1 while stream s holds a finished job's result for its waiter to copy (gpu_take): the
     * stream takes no job until then. Here, not on the worker's stack: a job may be freed after
     * the worker thread ended. */
    atomic_int held[GPU_MAX_STREAMS];
};

/* Marks the GPU dead once: readiness drops, every queued job and every later push fails. */
static void set_fatal(struct worker *w, const char *msg)
{
    int first;

    pthread_mutex_lock(&w->mu);
    first = !atomic_load(&w->fatal);
    if (first) {
        snprintf(w->fatal_msg, sizeof(w->fatal_msg), "%s", msg);
        atomic_store(&w->fatal, 1);
    }
    pthread_mutex_unlock(&w->mu);
    if (!first)
        return;
    log_event("error", "gpu_fatal", "%s", msg);
    queue_fail(w->q, EDGED_E_GPU_FATAL, msg);
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

/* ---- GPU worker -------------------------------------------------------------------------- */

/* Enqueues the job on stream s. The input has been copied to pinned staging when this returns 0,
 * so it is freed at once. */
static int gpu_submit(struct worker *w, int s, struct job *job)
{
    void *hog = fault_before_submit(); /* debug builds only */
    int rc;

    if ((rc = backend_submit(w->b, s, job)) == 0)
        img_free(&job->in);
    fault_release(hog);
    return rc;
}

static int gpu_is_fatal(struct gconv_ctx *ctx, int rc) { return rc == EDGED_E_GPU_FATAL || gconv_is_dead(ctx); }

/* A job that could not be started fails with rc; a fatal rc marks the GPU dead first. */
static void gpu_start_failed(struct worker *w, struct gconv_ctx *ctx, struct job *job, int rc)
{
    if (gpu_is_fatal(ctx, rc))
        set_fatal(w, job->err);
    queue_complete(w->q, job, rc);
}

/* job->take of a GPU job: its waiter's thread copies the result out of the stream's staging, so
 * that the one worker thread spends no time on copies. */
static int gpu_take(struct job *job, int copy)
{
    struct worker *w = job->take_cls;
    int rc = copy ? backend_take(w->b, job->take_slot, job) : 0;

    atomic_store(&w->held[job->take_slot], 0);
    return rc;
}

/* Leaves the result of job, finished on stream s, for its waiter (gpu_take). */
static void gpu_hold(struct worker *w, int s, struct job *job)
{
    atomic_store(&w->held[s], 1);
    job->take = gpu_take, job->take_cls = w, job->take_slot = s;
}

/* Publishes the oldest submit time of the busy slots for the watchdog, and adds up the time the
 * device had any job (edged_gpu_busy_seconds_total). */
static void publish_oldest(struct worker *w, const struct gpu_slot *slots, int ns)
{
    double oldest = 0.0, now = clock_ms();

    for (int s = 0; s < ns; s++)
        if (slots[s].job && (oldest == 0.0 || slots[s].t_submit < oldest))
            oldest = slots[s].t_submit;
    pthread_mutex_lock(&w->mu);
    w->oldest_submit = oldest;
    if (w->busy_since > 0.0)
        w->busy_ms += now - w->busy_since;
    w->busy_since = oldest > 0.0 ? now : 0.0;
    pthread_mutex_unlock(&w->mu);
}

/* Completes every finished stream; returns the number still busy, or -1 after a fatal error
 * (its message in fatal_msg). */
static int gpu_reap(struct worker *w, struct gconv_ctx *ctx, struct gpu_slot *slots, int ns, char *fatal_msg)
{
    struct job *done_jobs[GPU_MAX_STREAMS];
    int busy = 0, rc, fatal = 0, done = 0, rcs[GPU_MAX_STREAMS];
    double t0, t1;

    for (int s = 0; s < ns; s++) {
        struct job *job = slots[s].job;
        if (!job || slots[s].pending || gconv_poll(ctx, s) == 0) {
            busy += job != NULL;
            continue;
        }
        t0 = clock_ms();
        rc = backend_finish(w->b, s, job);
        if (rc == GCONV_E_PNG_DECLINED) /* the CPU decodes it and it runs again on s */
            rc = backend_png_declined(w->b, s, job);
        w->prof.ms[GS_FINISH] += clock_ms() - t0;
        if (!fatal && gpu_is_fatal(ctx, rc))
            snprintf(fatal_msg, EDGED_ERR_LEN, "%s", rc < 0 ? job->err : "sticky CUDA error: GPU context lost");
        fatal = fatal || gpu_is_fatal(ctx, rc);
        if (rc == BACKEND_RESUBMITTED && !fatal) { /* declined on the device: runs again, CPU-decoded */
            slots[s].t_submit = clock_ms();
            busy++;
            continue;
        }
        if (fatal && rc >= 0)
            rc = edged_fail(job->err, EDGED_E_GPU_FATAL, "GPU context lost");
        if (rc == 1)
            gpu_hold(w, s, job), rc = 0;
        done_jobs[done] = job, rcs[done++] = rc;
        slots[s].job = NULL;
    }
    if (done) {
        t1 = clock_ms();
        queue_complete_many(w->q, done_jobs, rcs, done);
        w->prof.ms[GS_COMPLETE] += clock_ms() - t1;
    }
    w->prof.jobs += done;
    if (done && !fatal)
        atomic_store(&w->gpu_mem, gconv_mem_used(ctx));
    return fatal ? -1 : busy;
}

/* After a fatal error nothing more is asked of the device: running jobs are failed as they are. */
static void gpu_abandon(struct worker *w, struct gpu_slot *slots, int ns)
{
    char msg[EDGED_ERR_LEN];

    worker_fatal(w, msg);
    for (int s = 0; s < ns; s++) {
        if (!slots[s].job)
            continue;
        snprintf(slots[s].job->err, sizeof(slots[s].job->err), "%s", msg);
        queue_complete(w->q, slots[s].job, EDGED_E_GPU_FATAL);
        slots[s].job = NULL;
    }
}

static int free_slot(struct worker *w, const struct gpu_slot *slots, int ns)
{
    for (int s = 0; s < ns; s++)
        if (!slots[s].job && !atomic_load(&w->held[s]))
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
static void src_gather(struct worker *w, struct gconv_ctx *ctx, struct gpu_slot *slots, int ns,
                       struct src_pend *pend, struct job *first)
{
    struct job *job = first;
    int s, rc;

    do {
        s = free_slot(w, slots, ns);
        slots[s] = (struct gpu_slot){job, clock_ms(), 0};
        if (is_src_job(job)) {
            struct src_pend *p = &pend[job->src_format];
            slots[s].pending = 1;
            p->jobs[p->n] = job, p->streams[p->n++] = s;
        } else if ((rc = gpu_submit(w, s, job)) < 0) {
            slots[s].job = NULL;
            gpu_start_failed(w, ctx, job, rc);
        }
    } while (!pend_full(pend) && free_slot(w, slots, ns) >= 0 && (job = queue_pop(w->q, LANE_GPU, 0)));
}

/* Sends the pending batch of format fmt to the device as one batched decode. */
static void src_flush(struct worker *w, struct gconv_ctx *ctx, struct gpu_slot *slots, enum job_src fmt,
                      struct src_pend *p)
{
    int rcs[GCONV_JPEG_MAX_BATCH];

    if (fmt == JOB_SRC_PNG)
        backend_submit_png(w->b, p->jobs, p->streams, p->n, rcs);
    else
        backend_submit_jpeg(w->b, p->jobs, p->streams, p->n, rcs);
    w->prof.src_batches[fmt]++, w->prof.src_jobs[fmt] += p->n;
    for (int i = 0; i < p->n; i++) {
        struct gpu_slot *slot = &slots[p->streams[i]];
        slot->pending = 0;
        if (rcs[i] < 0) {
            slot->job = NULL;
            gpu_start_failed(w, ctx, p->jobs[i], rcs[i]);
        } else {
            slot->t_submit = clock_ms();
        }
    }
    p->n = 0;
}

/* 1 when the pending batch of fmt should go now: it is full, or the device has finished decoding
 * the previous one of its format. */
static int src_due(struct worker *w, enum job_src fmt, const struct src_pend *p)
{
    if (p->n == 0)
        return 0;
    if (p->n >= SRC_BATCH_FULL)
        return 1;
    return !(fmt == JOB_SRC_PNG ? backend_png_decoding(w->b) : backend_jpeg_decoding(w->b));
}

/* Sends every batch that is due; 1 when one went. */
static int src_flush_due(struct worker *w, struct gconv_ctx *ctx, struct gpu_slot *slots, struct src_pend *pend)
{
    int sent = 0;

    for (int f = 0; f < JOB_SRC_COUNT; f++)
        if (src_due(w, (enum job_src)f, &pend[f])) {
            src_flush(w, ctx, slots, (enum job_src)f, &pend[f]);
            sent = 1;
        }
    return sent;
}

/* The GPU worker's profile (struct gpu_prof), with the nvJPEG stages inside its JPEG submits and
 * finishes, as one log line. */
static void gpu_prof_log(struct worker *w)
{
    const struct gpu_prof *p = &w->prof;
    double nj[BACKEND_JPEG_STAGES];

    if (p->jobs == 0 || !w->c.log_profile)
        return;
    backend_jpeg_profile(w->b, nj);
    log_event("info", "gpu_worker_profile",
              "jobs=%lld jpeg_batches=%lld jpeg_jobs=%lld png_batches=%lld png_jobs=%lld wait_ms=%.1f submit_src_ms=%.1f "
              "submit_ms=%.1f finish_ms=%.1f complete_ms=%.1f "
              "nvjpeg_header_ms=%.1f nvjpeg_decode_ms=%.1f nvjpeg_enqueue_ms=%.1f nvjpeg_retrieve_ms=%.1f",
              p->jobs, p->src_batches[JOB_SRC_JPEG], p->src_jobs[JOB_SRC_JPEG], p->src_batches[JOB_SRC_PNG],
              p->src_jobs[JOB_SRC_PNG], p->ms[GS_WAIT], p->ms[GS_SUBMIT_SRC], p->ms[GS_SUBMIT], p->ms[GS_FINISH],
              p->ms[GS_COMPLETE], nj[0], nj[1], nj[2], nj[3]);
}

/* Fills free streams from the queue (blocking only when none is busy), sends the pending batches
 * when they are due, then reaps finished streams. Ends when the queue is closed and drained, or on a
 * fatal error. */
static void *gpu_main(void *arg)
{
    struct worker *w = arg;
    struct gconv_ctx *ctx = backend_gpu(w->b);
    struct gpu_slot slots[GPU_MAX_STREAMS] = {{0}};
    struct src_pend pend[JOB_SRC_COUNT];
    int ns = gconv_stream_count(ctx), busy = 0, s, rc;
    struct job *job;
    struct timespec nap = {0, (long)(GPU_POLL_MS * 1e6)};
    char msg[EDGED_ERR_LEN];
    double t0, t1;

    memset(pend, 0, sizeof(pend));
    ns = ns < 1 ? 1 : ns > GPU_MAX_STREAMS ? GPU_MAX_STREAMS : ns;
    while (!atomic_load(&w->fatal)) {
        int idle = 1; /* nothing to do this turn but wait */
        t0 = clock_ms();
        if ((s = free_slot(w, slots, ns)) >= 0) {
            job = queue_pop(w->q, LANE_GPU, busy ? GPU_POLL_MS : -1);
            if (!job && !busy)
                break; /* closed and drained */
            idle = !job && queue_closed_empty(w->q, LANE_GPU); /* draining: pop no longer waits */
            t1 = clock_ms();
            w->prof.ms[GS_WAIT] += t1 - t0;
            if (job && is_src_job(job)) { /* compressed input: decoded on the device, batched */
                src_gather(w, ctx, slots, ns, pend, job); /* reaped below: pending counts as busy */
                w->prof.ms[GS_SUBMIT_SRC] += clock_ms() - t1;
            } else if (job) {
                rc = gpu_submit(w, s, job);
                w->prof.ms[GS_SUBMIT] += clock_ms() - t1;
                if (rc < 0) {
                    gpu_start_failed(w, ctx, job, rc);
                    continue;
                }
                slots[s] = (struct gpu_slot){job, clock_ms(), 0};
                busy++;
                publish_oldest(w, slots, ns);
                fault_job_started(); /* debug builds only: may poison the context, or block (spin) */
                continue;            /* fill the other free streams first */
            }
        }
        t1 = clock_ms();
        if (src_flush_due(w, ctx, slots, pend)) {
            w->prof.ms[GS_SUBMIT_SRC] += clock_ms() - t1;
        } else if (idle) { /* do not spin */
            nanosleep(&nap, NULL);
            w->prof.ms[GS_WAIT] += clock_ms() - t1;
        }
        if ((busy = gpu_reap(w, ctx, slots, ns, msg)) < 0)
            set_fatal(w, msg);
        publish_oldest(w, slots, ns);
    }
    gpu_abandon(w, slots, ns);
    publish_oldest(w, slots, ns);
    gpu_prof_log(w);
    atomic_store(&w->gpu_ended, 1);
    return NULL;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

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
    if (rc == 0 && backend_has_gpu(b)) {
        if (pthread_create(&w->gpu, NULL, gpu_main, w) != 0)
            rc = edged_fail(err, EDGED_E_INTERNAL, "cannot start the GPU worker");
        else
            w->has_gpu = 1;
    }
    if (rc < 0) {
        queue_close(q);
        worker_stop(w, 1000);
        return rc;
    }
    *out = w;
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
    if (w->has_gpu) {
        struct timespec nap = {0, 10 * 1000000L};
        for (until = clock_ms() + wait_ms; !atomic_load(&w->gpu_ended) && clock_ms() < until;)
            nanosleep(&nap, NULL);
        if (atomic_load(&w->gpu_ended))
            pthread_join(w->gpu, NULL);
        else
            left = -1;
    }
    if (left == 0) {
        pthread_mutex_destroy(&w->mu);
        free(w->cpu);
        free(w);
    } /* else the stuck thread still reads w: leave it to the process exit */
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

    if (!w || !w->has_gpu)
        return;
    pthread_mutex_lock(&w->mu);
    oldest = w->oldest_submit;
    pthread_mutex_unlock(&w->mu);
    if (oldest > 0.0 && clock_ms() - oldest > limit_ms) {
        snprintf(msg, sizeof(msg), "GPU job running for %.0f ms, over the %d ms watchdog: device stuck",
                 clock_ms() - oldest, limit_ms);
        set_fatal(w, msg);
    }
}

size_t worker_gpu_memory(struct worker *w) { return w ? atomic_load(&w->gpu_mem) : 0; }

double worker_gpu_busy_seconds(struct worker *w)
{
    double ms;

    if (!w)
        return 0.0;
    pthread_mutex_lock(&w->mu);
    ms = w->busy_ms + (w->busy_since > 0.0 ? clock_ms() - w->busy_since : 0.0);
    pthread_mutex_unlock(&w->mu);
    return ms / 1e3;
}
