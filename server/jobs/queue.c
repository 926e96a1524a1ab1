/* queue.c — bounded FIFO of jobs with lanes, a cap on large CPU jobs, deadlines, drain and
 * fail-all; one mutex. */
#include "jobs/queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gpinned.h"
#include "jobs/budget.h"

/* Jobs are in exactly one of the two lists while the queue holds them: `queued` (FIFO, at most
 * `depth`) or `running` (popped, not yet complete), so that queue_fail can reach both. */
struct queue {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a job was pushed, a large one completed, or the queue closed: workers wake */
    struct job *head, *tail, *running;
    int count, depth, deadline_ms;
    int large_max[LANE_COUNT];     /* large jobs of a lane running at once, at most; 0: no cap */
    int large_running[LANE_COUNT]; /* popped large jobs not yet completed */
    int closed, fail_code;
    char fail_msg[EDGED_ERR_LEN];
    /* the GPU lane's devices (queue_set_devices) */
    int ndev;
    struct qdev {
        long long load;  /* pixels of the jobs it took and has not completed */
        atomic_int open; /* it has a free stream (its worker says) */
        int fenced;
        char msg[EDGED_ERR_LEN]; /* why it was fenced */
    } dev[QUEUE_MAX_DEVICES];
};

static void cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t a;

    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

/* The GPU lane has no cap: its one worker keeps a job per stream in flight and a large job costs
 * it milliseconds, so plain FIFO starves nobody there. */
int queue_new(struct queue **out, int depth, int deadline_ms, int cpu_large_max, char *err)
{
    struct queue *q = calloc(1, sizeof(*q));

    *out = NULL;
    if (!q)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the queue");
    pthread_mutex_init(&q->mu, NULL);
    cond_init_monotonic(&q->work);
    q->depth = depth;
    q->deadline_ms = deadline_ms;
    q->large_max[LANE_CPU] = cpu_large_max > 0 ? cpu_large_max : 0;
    q->ndev = 1;
    *out = q;
    return 0;
}

void queue_free(struct queue *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->work);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

struct job *job_new(void)
{
    struct job *job = calloc(1, sizeof(*job));

    if (!job)
        return NULL;
    job->refs = 1;
    job->state = JOB_NEW;
    job->device = job->ran_on = -1;
    cond_init_monotonic(&job->done);
    return job;
}

/* Takes the result a worker left for job (copy 1: into job->out) once; 0 when there is none. */
static int take_result(struct job *job, int copy)
{
    int (*take)(struct job *, int) = job->take;

    job->take = NULL;
    return take ? take(job, copy) : 0;
}

static void job_free(struct job *job)
{
    take_result(job, 0);
    img_free(&job->in);
    img_free(&job->out);
    free(job->src_block);
    free(job->png_lay);
    free(job->png_join);
    gpinned_put(job->png_pinned, job->png_pinned_cap);
    gpinned_put(job->in_pinned, job->in_pinned_cap);
    free(job->out_enc);
    budget_give(job->budget, job->budget_bytes + job->out_kept); /* after its memory is freed */
    pthread_cond_destroy(&job->done);
    free(job);
}

void job_set_budget(struct job *job, struct budget *b, size_t work, size_t out)
{
    job->budget = b;
    job->work_bytes = work;
    job->out_bytes = out < work ? out : work;
}

void job_take_budget(struct job *job, size_t *bytes)
{
    job->budget_bytes += *bytes;
    *bytes = 0;
}

/* The worker waits longer than a request's admission does: the bytes it waits for are those of
 * jobs running now, given back within their run. */
int job_work_begin(struct job *job) { return budget_take(job->budget, job->work_bytes, JOB_WORK_WAIT_MS, job->err); }

void job_work_end(struct job *job, int rc)
{
    job->out_kept = rc == 0 ? job->out_bytes : 0;
    budget_give(job->budget, job->work_bytes - job->out_kept);
}

/* Drops one reference under q->mu; returns the job when it must be freed (outside the lock). */
static struct job *unref_locked(struct job *job)
{
    return --job->refs == 0 ? job : NULL;
}

void job_release(struct queue *q, struct job *job)
{
    struct job *dead;

    if (!job)
        return;
    if (q) {
        pthread_mutex_lock(&q->mu);
        dead = unref_locked(job);
        pthread_mutex_unlock(&q->mu);
    } else {
        dead = unref_locked(job); /* never queued: no other thread holds it */
    }
    if (dead)
        job_free(dead);
}

static void list_remove(struct job **head, struct job **tail, struct job *job)
{
    struct job *prev = NULL;

    for (struct job *it = *head; it; prev = it, it = it->next) {
        if (it != job)
            continue;
        if (prev)
            prev->next = it->next;
        else
            *head = it->next;
        if (tail && *tail == it)
            *tail = prev;
        it->next = NULL;
        return;
    }
}

/* A running job leaves its device's outstanding work. */
static void unload_locked(struct queue *q, struct job *job)
{
    if (job->cost && job->ran_on >= 0)
        q->dev[job->ran_on].load -= job->cost;
    job->cost = 0;
}

/* A running job leaves the running list (completed, or put back): its lane's count of large jobs
 * and its device's outstanding work drop. 1 when a job passed over may now be taken: a large one
 * (the cap), or any once a device's work fell (the order of several devices may change). */
static int leave_running_locked(struct queue *q, struct job *job)
{
    int wake = job->large || (q->ndev > 1 && job->cost);

    list_remove(&q->running, NULL, job);
    if (job->large)
        q->large_running[job->lane]--;
    unload_locked(q, job);
    return wake;
}

/* Completes a job the queue holds (queued or running) with rc and drops the queue's reference. */
static struct job *finish_locked(struct queue *q, struct job *job, int rc, const char *msg)
{
    unload_locked(q, job);
    job->rc = rc;
    if (rc < 0 && msg)
        snprintf(job->err, sizeof(job->err), "%s", msg);
    job->state = JOB_DONE;
    pthread_cond_broadcast(&job->done);
    return unref_locked(job);
}

int queue_push(struct queue *q, struct job *job, char *err)
{
    int rc = 0;

    pthread_mutex_lock(&q->mu);
    if (q->fail_code)
        rc = edged_fail(err, q->fail_code, "%s", q->fail_msg);
    else if (q->closed)
        rc = edged_fail(err, EDGED_E_UNAVAILABLE, "server is draining (shutting down)");
    else if (job->device >= 0 && (job->device >= q->ndev || q->dev[job->device].fenced))
        rc = edged_fail(err, EDGED_E_GPU_FATAL, "%s", job->device < q->ndev ? q->dev[job->device].msg
                                                                          : "no such device");
    else if (q->count >= q->depth)
        rc = edged_fail(err, EDGED_E_QUEUE_FULL, "queue full: %d jobs waiting (--queue-depth %d)", q->count,
                        q->depth);
    if (rc == 0) {
        job->refs++;
        job->state = JOB_QUEUED;
        job->t_push = clock_ms();
        job->next = NULL;
        if (q->tail)
            q->tail->next = job;
        else
            q->head = job;
        q->tail = job;
        q->count++;
        pthread_cond_broadcast(&q->work);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

static void deadline_msg(const struct queue *q, const struct job *job, char *msg)
{
    edged_fail(msg, EDGED_E_DEADLINE, "job waited %.0f ms in the queue, past its deadline of %d ms",
               clock_ms() - job->t_push, q->deadline_ms);
}

int queue_wait(struct queue *q, struct job *job, char *err) { return queue_wait_watch(q, job, NULL, NULL, err); }

/* Why a job not yet done must stop being waited for: 0 (wait on), or the code with its message.
 * Called with q->mu held; alive is asked without it. */
static int stop_reason_locked(struct queue *q, struct job *job, queue_alive_fn alive, void *cls, char *msg)
{
    int gone;

    if (job->state == JOB_QUEUED && clock_ms() >= job->t_push + q->deadline_ms) {
        deadline_msg(q, job, msg);
        return EDGED_E_DEADLINE;
    }
    if (job->state == JOB_RUNNING && q->fail_code)
        return edged_fail(msg, q->fail_code, "%s", q->fail_msg);
    if (job->state == JOB_RUNNING && job->fenced)
        return edged_fail(msg, EDGED_E_GPU_FATAL, "%s", q->dev[job->ran_on].msg);
    if (job->state == JOB_RUNNING && job->timeout_ms > 0 && clock_ms() - job->t_start >= job->timeout_ms)
        return edged_fail(msg, EDGED_E_DEADLINE, "job ran %.0f ms and was cancelled at its limit of %.0f ms "
                          "(--job-timeout-s)", clock_ms() - job->t_start, job->timeout_ms);
    if (!alive)
        return 0;
    pthread_mutex_unlock(&q->mu);
    gone = !alive(cls);
    pthread_mutex_lock(&q->mu);
    if (gone && job->state != JOB_DONE)
        return edged_fail(msg, EDGED_E_CLIENT_GONE, "client closed the connection; job cancelled");
    return 0;
}

/* The next time to look again: the queue deadline, the run limit or the next alive check. */
static double next_look(const struct queue *q, const struct job *job, int watching)
{
    double t = job->state == JOB_QUEUED ? job->t_push + q->deadline_ms : 0.0;

    if (job->state == JOB_RUNNING && job->timeout_ms > 0)
        t = job->t_start + job->timeout_ms;
    if (watching && (t == 0.0 || t > clock_ms() + QUEUE_WATCH_MS))
        t = clock_ms() + QUEUE_WATCH_MS;
    return t;
}

int queue_wait_watch(struct queue *q, struct job *job, queue_alive_fn alive, void *cls, char *err)
{
    struct job *dead = NULL;
    char msg[EDGED_ERR_LEN];
    int rc = 0;

    pthread_mutex_lock(&q->mu);
    while (job->state != JOB_DONE) {
        double until;
        if ((rc = stop_reason_locked(q, job, alive, cls, msg)) < 0 && job->state == JOB_QUEUED) {
            list_remove(&q->head, &q->tail, job);
            q->count--;
            dead = finish_locked(q, job, rc, msg);
            break;
        }
        if (rc < 0 && job->state == JOB_RUNNING) {
            atomic_store(&job->cancel, 1); /* abandoned: the worker completes and releases it */
            break;
        }
        if (job->state == JOB_DONE)
            break;
        if ((until = next_look(q, job, alive != NULL)) > 0.0) {
            struct timespec ts = clock_abs(until);
            pthread_cond_timedwait(&job->done, &q->mu, &ts);
        } else {
            pthread_cond_wait(&job->done, &q->mu);
        }
    }
    if (job->state == JOB_DONE) {
        rc = job->rc;
        edged_fail(err, rc, "%s", job->err);
    } else {
        edged_fail(err, rc, "%s", msg);
    }
    pthread_mutex_unlock(&q->mu);
    if (dead)
        job_free(dead); /* cannot happen: the caller still holds its reference */
    else if (rc == 0 && (rc = take_result(job, 1)) < 0) /* done: the worker no longer touches it */
        job->rc = rc, edged_fail(err, rc, "%s", job->err);
    return rc;
}

/* Completes queued jobs past their deadline; returns the first one to free, chained via next. */
static struct job *expire_locked(struct queue *q)
{
    struct job *it = q->head, *next, *dead = NULL, *d;
    char msg[EDGED_ERR_LEN];
    double now = clock_ms();

    for (; it; it = next) {
        next = it->next;
        if (now - it->t_push < q->deadline_ms)
            continue;
        list_remove(&q->head, &q->tail, it);
        q->count--;
        deadline_msg(q, it, msg);
        if ((d = finish_locked(q, it, EDGED_E_DEADLINE, msg))) {
            d->next = dead;
            dead = d;
        }
    }
    return dead;
}

/* Whether device dev (-1: the lane's only taker) may take job now: a job pinned to a device goes to
 * that one only; else it waits up to QUEUE_DEFER_MS for an open device with less outstanding work. */
static int device_may_take(const struct queue *q, int dev, const struct job *job, double now)
{
    if (dev < 0)
        return 1;
    if (job->device >= 0)
        return job->device == dev;
    if (now - job->t_push >= QUEUE_DEFER_MS)
        return 1;
    for (int e = 0; e < q->ndev; e++)
        if (e != dev && !q->dev[e].fenced && atomic_load(&q->dev[e].open) && q->dev[e].load < q->dev[dev].load)
            return 0;
    return 1;
}

/* The oldest job of lane that dev may take (device_may_take), passing over large jobs while the
 * lane's cap of them is running: with the cap below the worker count, a worker is always left for
 * small jobs, which then wait behind small ones only. The passed-over job keeps its place and is
 * the next large one taken. *deferred is set when a job was left for another device. */
static struct job *take_locked(struct queue *q, enum job_lane lane, int dev, int *deferred)
{
    int large_full = q->large_max[lane] > 0 && q->large_running[lane] >= q->large_max[lane];
    double now = clock_ms();

    for (struct job *it = q->head; it; it = it->next) {
        if (it->lane != lane || (it->large && large_full))
            continue;
        if (!device_may_take(q, dev, it, now)) {
            *deferred = 1;
            continue;
        }
        if (it->large)
            q->large_running[lane]++;
        list_remove(&q->head, &q->tail, it);
        q->count--;
        it->state = JOB_RUNNING;
        it->t_start = now;
        it->t.queue = it->t_start - it->t_push;
        it->next = q->running;
        q->running = it;
        if (dev >= 0) {
            it->ran_on = dev;
            it->cost = (long long)it->in.w * it->in.h + 1;
            q->dev[dev].load += it->cost;
        }
        if (it->timeout_ms > 0)
            pthread_cond_broadcast(&it->done); /* its waiter now times the run */
        return it;
    }
    return NULL;
}

static int lane_empty_locked(const struct queue *q, enum job_lane lane)
{
    for (const struct job *it = q->head; it; it = it->next)
        if (it->lane == lane)
            return 0;
    return 1;
}

static void free_chain(struct job *dead)
{
    for (struct job *next; dead; dead = next) {
        next = dead->next;
        job_free(dead);
    }
}

/* queue_pop for dev (-1: any taker of lane). A device that left a job for another wakes again
 * within QUEUE_DEFER_MS, when the job becomes anyone's. */
static struct job *pop_locked_wait(struct queue *q, enum job_lane lane, int dev, double wait_ms)
{
    struct job *job = NULL, *dead;
    double until = clock_ms() + wait_ms, now;
    int deferred;

    for (;;) {
        dead = expire_locked(q);
        if (dead) {
            pthread_mutex_unlock(&q->mu);
            free_chain(dead);
            pthread_mutex_lock(&q->mu);
            continue;
        }
        if (dev >= 0 && q->dev[dev].fenced)
            break;
        deferred = 0;
        if ((job = take_locked(q, lane, dev, &deferred)) || ((q->closed || q->fail_code) && lane_empty_locked(q, lane)))
            break;
        now = clock_ms();
        if (wait_ms >= 0 && now >= until)
            break;
        if (wait_ms < 0 && !deferred) {
            pthread_cond_wait(&q->work, &q->mu);
        } else { /* until its time is up, or the deferred job becomes anyone's */
            double t = wait_ms < 0 ? now + QUEUE_DEFER_MS : until;
            struct timespec ts;
            if (deferred && now + QUEUE_DEFER_MS < t)
                t = now + QUEUE_DEFER_MS;
            ts = clock_abs(t);
            pthread_cond_timedwait(&q->work, &q->mu, &ts);
        }
    }
    return job;
}

/* pop_locked_wait under the queue's lock. */
static struct job *pop(struct queue *q, enum job_lane lane, int dev, double wait_ms)
{
    struct job *job;

    pthread_mutex_lock(&q->mu);
    job = pop_locked_wait(q, lane, dev, wait_ms);
    pthread_mutex_unlock(&q->mu);
    return job;
}

struct job *queue_pop(struct queue *q, enum job_lane lane, double wait_ms) { return pop(q, lane, -1, wait_ms); }

struct job *queue_pop_device(struct queue *q, int dev, double wait_ms) { return pop(q, LANE_GPU, dev, wait_ms); }

void queue_set_devices(struct queue *q, int n)
{
    pthread_mutex_lock(&q->mu);
    q->ndev = n < 1 ? 1 : n > QUEUE_MAX_DEVICES ? QUEUE_MAX_DEVICES : n;
    pthread_mutex_unlock(&q->mu);
}

void queue_device_open(struct queue *q, int dev, int open) { atomic_store(&q->dev[dev].open, open); }

long long queue_device_load(struct queue *q, int dev)
{
    long long n;

    pthread_mutex_lock(&q->mu);
    n = q->dev[dev].load;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static int devices_left_locked(const struct queue *q)
{
    int n = 0;

    for (int e = 0; e < q->ndev; e++)
        n += !q->dev[e].fenced;
    return n;
}

int queue_fence_device(struct queue *q, int dev, const char *msg, int abandon)
{
    struct job *it, *next, *dead = NULL, *d;
    int left;

    pthread_mutex_lock(&q->mu);
    if (!q->dev[dev].fenced) {
        q->dev[dev].fenced = 1;
        snprintf(q->dev[dev].msg, sizeof(q->dev[dev].msg), "%s", msg);
    }
    for (it = q->head; it; it = next) { /* jobs only this device could run */
        next = it->next;
        if (it->device != dev)
            continue;
        list_remove(&q->head, &q->tail, it);
        q->count--;
        if ((d = finish_locked(q, it, EDGED_E_GPU_FATAL, q->dev[dev].msg)))
            d->next = dead, dead = d;
    }
    for (it = q->running; it && abandon; it = it->next)
        if (it->ran_on == dev && it->lane == LANE_GPU) {
            it->fenced = 1;
            atomic_store(&it->cancel, 1);
            pthread_cond_broadcast(&it->done);
        }
    left = devices_left_locked(q);
    pthread_cond_broadcast(&q->work); /* its jobs are the others' now */
    pthread_mutex_unlock(&q->mu);
    free_chain(dead);
    return left;
}

int queue_retry(struct queue *q, struct job *job)
{
    int rc = -1;

    pthread_mutex_lock(&q->mu);
    if (job->state == JOB_RUNNING && !job->retried && !job->fenced && !atomic_load(&job->cancel) &&
        !q->fail_code && devices_left_locked(q) > 0 && (job->device < 0 || !q->dev[job->device].fenced)) {
        leave_running_locked(q, job);
        job->retried = 1;
        job->state = JOB_QUEUED;
        job->t_push = clock_ms();
        job->next = q->head; /* first in line: it was admitted long ago */
        q->head = job;
        if (!q->tail)
            q->tail = job;
        q->count++;
        pthread_cond_broadcast(&q->work);
        pthread_cond_broadcast(&job->done); /* its waiter times a queued job again */
        rc = 0;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void queue_complete_many(struct queue *q, struct job *const *jobs, const int *rcs, int n)
{
    struct job *dead = NULL, *d;
    int wake = 0;

    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < n; i++) {
        wake |= leave_running_locked(q, jobs[i]);
        if ((d = finish_locked(q, jobs[i], rcs[i], NULL))) {
            d->next = dead;
            dead = d;
        }
    }
    if (wake)
        pthread_cond_broadcast(&q->work); /* a job passed over may now be taken */
    pthread_mutex_unlock(&q->mu);
    free_chain(dead);
}

void queue_complete(struct queue *q, struct job *job, int rc) { queue_complete_many(q, &job, &rc, 1); }

void queue_close(struct queue *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
}

void queue_fail(struct queue *q, int code, const char *msg)
{
    struct job *it, *dead = NULL, *d;

    pthread_mutex_lock(&q->mu);
    if (!q->fail_code) {
        q->fail_code = code;
        snprintf(q->fail_msg, sizeof(q->fail_msg), "%s", msg);
    }
    while ((it = q->head)) {
        list_remove(&q->head, &q->tail, it);
        q->count--;
        if ((d = finish_locked(q, it, code, msg))) {
            d->next = dead;
            dead = d;
        }
    }
    for (it = q->running; it; it = it->next) {
        atomic_store(&it->cancel, 1);
        pthread_cond_broadcast(&it->done);
    }
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
    free_chain(dead);
}

int queue_closed_empty(struct queue *q, enum job_lane lane)
{
    int r;

    pthread_mutex_lock(&q->mu);
    r = (q->closed || q->fail_code) && lane_empty_locked(q, lane);
    pthread_mutex_unlock(&q->mu);
    return r;
}

int queue_running_large(struct queue *q, enum job_lane lane)
{
    int n;

    pthread_mutex_lock(&q->mu);
    n = q->large_running[lane];
    pthread_mutex_unlock(&q->mu);
    return n;
}

int queue_depth(struct queue *q)
{
    int n;

    pthread_mutex_lock(&q->mu);
    n = q->count;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int queue_capacity(const struct queue *q) { return q->depth; }
