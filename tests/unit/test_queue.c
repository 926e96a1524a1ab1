/* test_queue.c — the job queue: bound, lanes, FIFO, the cap on large CPU jobs, deadlines, close
 * (drain) and fail (GPU fatal), the GPU lane's devices (least outstanding work, pinning, retry,
 * fencing), including a waiter released from a running job that the worker
 * completes later. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "clock.h"
#include "errors.h"
#include "jobs/queue.h"

static char err[EDGED_ERR_LEN];

static struct job *mkjob(enum job_lane lane, int tag)
{
    struct job *j = job_new();

    j->lane = lane;
    j->block = tag; /* a label to check the order */
    return j;
}

static void test_bound_and_lanes(void)
{
    struct queue *q;
    struct job *a = mkjob(LANE_CPU, 1), *b = mkjob(LANE_GPU, 2), *c = mkjob(LANE_CPU, 3), *d = mkjob(LANE_CPU, 4);

    queue_new(&q, 3, 10000, 0, err);
    CHECK(queue_push(q, a, err) == 0 && queue_push(q, b, err) == 0 && queue_push(q, c, err) == 0, "push");
    CHECK(queue_push(q, d, err) == EDGED_E_QUEUE_FULL && strstr(err, "queue-depth 3"), "full: %s", err);
    CHECK(queue_depth(q) == 3, "depth %d", queue_depth(q));
    struct job *g = queue_pop(q, LANE_GPU, 0), *c1 = queue_pop(q, LANE_CPU, 0), *c2 = queue_pop(q, LANE_CPU, 0);
    CHECK(g == b && c1 == a && c2 == c, "lanes or FIFO order wrong");
    CHECK(queue_pop(q, LANE_CPU, 0) == NULL && queue_depth(q) == 0, "empty queue gave a job");
    CHECK(g->state == JOB_RUNNING && g->t.queue >= 0.0, "popped job state");
    queue_complete(q, a, 0);
    queue_complete(q, b, 0);
    queue_complete(q, c, EDGED_E_VARIANT_LIMIT);
    CHECK(queue_wait(q, a, err) == 0 && queue_wait(q, c, err) == EDGED_E_VARIANT_LIMIT, "wait results");
    job_release(q, a);
    job_release(q, b);
    job_release(q, c);
    job_release(q, d);
    queue_free(q);
}

static void test_deadline(void)
{
    struct queue *q;
    struct job *a = mkjob(LANE_CPU, 1), *b = mkjob(LANE_CPU, 2);
    double t0;
    int rc;

    queue_new(&q, 4, 60, 0, err);
    queue_push(q, a, err);
    t0 = clock_ms();
    rc = queue_wait(q, a, err);
    CHECK(rc == EDGED_E_DEADLINE && strstr(err, "60 ms"), "deadline: rc %d %s", rc, err);
    CHECK(clock_ms() - t0 >= 55 && clock_ms() - t0 < 1000, "answered after %.0f ms", clock_ms() - t0);
    CHECK(queue_depth(q) == 0, "expired job still queued");
    /* the worker side expires it too: a job past its deadline is never handed out */
    queue_push(q, b, err);
    struct timespec nap = {0, 80 * 1000000L};
    nanosleep(&nap, NULL);
    CHECK(queue_pop(q, LANE_CPU, 0) == NULL, "expired job handed to a worker");
    CHECK(queue_wait(q, b, err) == EDGED_E_DEADLINE, "expired job not answered 504");
    job_release(q, a);
    job_release(q, b);
    queue_free(q);
}

struct worker_arg {
    struct queue *q;
    int delay_ms, done;
};

static void *slow_worker(void *p)
{
    struct worker_arg *w = p;
    struct job *j;
    struct timespec nap = {0, 0};

    while ((j = queue_pop(w->q, LANE_CPU, -1))) {
        nap.tv_nsec = w->delay_ms * 1000000L;
        nanosleep(&nap, NULL);
        queue_complete(w->q, j, 0);
        w->done++;
    }
    return NULL;
}

/* Close refuses new jobs but the queued ones still run; the worker ends when it is empty. */
static void test_close_drains(void)
{
    struct queue *q;
    struct worker_arg w = {NULL, 20, 0};
    struct job *jobs[3];
    pthread_t t;

    queue_new(&q, 8, 10000, 0, err);
    w.q = q;
    for (int i = 0; i < 3; i++)
        queue_push(q, jobs[i] = mkjob(LANE_CPU, i), err);
    pthread_create(&t, NULL, slow_worker, &w);
    queue_close(q);
    struct job *late = mkjob(LANE_CPU, 9);
    CHECK(queue_push(q, late, err) == EDGED_E_UNAVAILABLE && strstr(err, "draining"), "push after close: %s", err);
    for (int i = 0; i < 3; i++)
        CHECK(queue_wait(q, jobs[i], err) == 0, "queued job %d not finished after close", i);
    pthread_join(t, NULL);
    CHECK(w.done == 3 && queue_closed_empty(q, LANE_CPU), "worker ran %d", w.done);
    for (int i = 0; i < 3; i++)
        job_release(q, jobs[i]);
    job_release(q, late);
    queue_free(q);
}

/* Fail answers queued jobs at once and releases the waiter of a running job; the worker's late
 * completion of that job then frees it (ASan/valgrind see no leak and no use after free). */
static void test_fail(void)
{
    struct queue *q;
    struct job *running = mkjob(LANE_GPU, 1), *queued = mkjob(LANE_GPU, 2), *late = mkjob(LANE_CPU, 3);

    queue_new(&q, 8, 10000, 0, err);
    queue_push(q, running, err);
    queue_push(q, queued, err);
    CHECK(queue_pop(q, LANE_GPU, 0) == running, "pop");
    queue_fail(q, EDGED_E_GPU_FATAL, "sticky CUDA error");
    CHECK(queue_wait(q, queued, err) == EDGED_E_GPU_FATAL && strstr(err, "sticky"), "queued: %s", err);
    CHECK(queue_wait(q, running, err) == EDGED_E_GPU_FATAL, "running job's waiter not released");
    CHECK(queue_push(q, late, err) == EDGED_E_GPU_FATAL, "push after fail");
    CHECK(queue_pop(q, LANE_GPU, -1) == NULL, "pop after fail blocks or returns a job");
    job_release(q, running); /* the submitter lets go first... */
    queue_complete(q, running, EDGED_E_GPU_FATAL); /* ...the worker's completion frees it */
    job_release(q, queued);
    job_release(q, late);
    queue_free(q);
}

static struct job *mklarge(enum job_lane lane, int tag, int large)
{
    struct job *j = mkjob(lane, tag);

    j->large = large;
    return j;
}

struct pop_arg {
    struct queue *q;
    struct job *got;
};

static void *pop_waiting(void *p)
{
    struct pop_arg *a = p;

    a->got = queue_pop(a->q, LANE_CPU, 5000);
    return NULL;
}

/* Cap 1: large, large, small pops as large #1, small (large #2 passed over while #1 runs); once #1
 * completes, a worker already waiting is woken and gets large #2. */
static void test_large_cap(void)
{
    struct queue *q;
    struct job *l1 = mklarge(LANE_CPU, 1, 1), *l2 = mklarge(LANE_CPU, 2, 1), *sm = mklarge(LANE_CPU, 3, 0);
    struct pop_arg a = {NULL, NULL};
    pthread_t t;
    struct timespec nap = {0, 50 * 1000000L};
    double t0;

    queue_new(&q, 8, 10000, 1, err);
    queue_push(q, l1, err);
    queue_push(q, l2, err);
    queue_push(q, sm, err);
    struct job *p1 = queue_pop(q, LANE_CPU, 0), *p2 = queue_pop(q, LANE_CPU, 0);
    CHECK(p1 == l1 && p2 == sm, "cap 1: popped tags %d, %d (want 1, 3)", p1 ? p1->block : -1, p2 ? p2->block : -1);
    CHECK(queue_running_large(q, LANE_CPU) == 1, "running large %d", queue_running_large(q, LANE_CPU));
    CHECK(queue_pop(q, LANE_CPU, 0) == NULL && queue_depth(q) == 1, "large #2 handed out over the cap");
    a.q = q;
    pthread_create(&t, NULL, pop_waiting, &a);
    nanosleep(&nap, NULL); /* the thread now waits: only the passed-over large job is queued */
    t0 = clock_ms();
    queue_complete(q, l1, 0);
    pthread_join(t, NULL);
    CHECK(a.got == l2 && clock_ms() - t0 < 1000, "after #1 completed: got tag %d after %.0f ms",
          a.got ? a.got->block : -1, clock_ms() - t0);
    CHECK(queue_running_large(q, LANE_CPU) == 1, "running large %d", queue_running_large(q, LANE_CPU));
    queue_complete(q, l2, 0);
    queue_complete(q, sm, 0);
    CHECK(queue_running_large(q, LANE_CPU) == 0, "running large %d at the end", queue_running_large(q, LANE_CPU));
    job_release(q, l1);
    job_release(q, l2);
    job_release(q, sm);
    queue_free(q);
}

/* Below the cap, and with small jobs only, the order stays FIFO; the GPU lane is never capped. */
static void test_large_fifo(void)
{
    struct queue *q;
    struct job *j[4], *g[2], *got;
    int order = 1;

    queue_new(&q, 8, 10000, 1, err);
    for (int i = 0; i < 4; i++)
        queue_push(q, j[i] = mklarge(LANE_CPU, i, 0), err);
    for (int i = 0; i < 4; i++) {
        got = queue_pop(q, LANE_CPU, 0);
        order = order && got == j[i];
    }
    CHECK(order, "small jobs not FIFO under a cap of 1");
    for (int i = 0; i < 2; i++)
        queue_push(q, g[i] = mklarge(LANE_GPU, 10 + i, 1), err);
    CHECK(queue_pop(q, LANE_GPU, 0) == g[0] && queue_pop(q, LANE_GPU, 0) == g[1], "GPU lane capped");
    for (int i = 0; i < 4; i++)
        queue_complete(q, j[i], 0);
    for (int i = 0; i < 2; i++)
        queue_complete(q, g[i], 0);
    CHECK(queue_running_large(q, LANE_GPU) == 0, "GPU running large %d", queue_running_large(q, LANE_GPU));
    for (int i = 0; i < 4; i++)
        job_release(q, j[i]);
    for (int i = 0; i < 2; i++)
        job_release(q, g[i]);
    queue_free(q);
}

/* queue_fail answers the passed-over large job; the running one's late completion balances the count. */
static void test_large_fail_balance(void)
{
    struct queue *q;
    struct job *l1 = mklarge(LANE_CPU, 1, 1), *l2 = mklarge(LANE_CPU, 2, 1), *sm = mklarge(LANE_CPU, 3, 0);

    queue_new(&q, 8, 10000, 1, err);
    queue_push(q, l1, err);
    queue_push(q, l2, err);
    queue_push(q, sm, err);
    CHECK(queue_pop(q, LANE_CPU, 0) == l1, "pop");
    queue_fail(q, EDGED_E_GPU_FATAL, "sticky CUDA error");
    CHECK(queue_wait(q, l2, err) == EDGED_E_GPU_FATAL && queue_wait(q, sm, err) == EDGED_E_GPU_FATAL,
          "queued jobs not failed");
    CHECK(queue_running_large(q, LANE_CPU) == 1 && queue_depth(q) == 0, "after fail: running large %d, depth %d",
          queue_running_large(q, LANE_CPU), queue_depth(q));
    CHECK(queue_pop(q, LANE_CPU, -1) == NULL, "pop after fail");
    queue_complete(q, l1, EDGED_E_GPU_FATAL);
    CHECK(queue_running_large(q, LANE_CPU) == 0, "running large %d after the late completion",
          queue_running_large(q, LANE_CPU));
    job_release(q, l1);
    job_release(q, l2);
    job_release(q, sm);
    queue_free(q);
}

/* Two devices, single-threaded: a device with less outstanding work is preferred while it has a
 * free stream (an equal one takes at once; a more loaded one is passed over until QUEUE_DEFER_MS),
 * a pinned job goes only to its device, queue_retry puts a job back at the head once, and a
 * fenced device fails the jobs pinned to it, takes nothing, and abandons its running jobs' waiters
 * when asked to. */
static void test_devices(void)
{
    struct queue *q;
    struct job *a = mkjob(LANE_GPU, 1), *b = mkjob(LANE_GPU, 2), *c = mkjob(LANE_GPU, 3), *p = mkjob(LANE_GPU, 4);
    struct job *got;
    struct timespec nap = {0, (long)(QUEUE_DEFER_MS * 1.5e6)};

    queue_new(&q, 16, 10000, 0, err);
    queue_set_devices(q, 2);
    queue_device_open(q, 0, 1), queue_device_open(q, 1, 1);
    a->in.w = b->in.w = c->in.w = p->in.w = 10;
    a->in.h = b->in.h = c->in.h = p->in.h = 10;
    CHECK(queue_push(q, a, err) == 0 && queue_pop_device(q, 0, 0) == a && a->ran_on == 0, "equal loads: device 0 takes");
    CHECK(queue_device_load(q, 0) > 0 && queue_device_load(q, 1) == 0, "loads %lld %lld", queue_device_load(q, 0),
          queue_device_load(q, 1));
    CHECK(queue_push(q, b, err) == 0 && queue_pop_device(q, 0, 0) == NULL, "the more loaded device took b");
    CHECK(queue_pop_device(q, 1, 0) == b && b->ran_on == 1, "the less loaded device did not take b");
    queue_device_open(q, 1, 0); /* device 1 busy: device 0 takes c at once though it holds more */
    queue_complete(q, b, 0);
    CHECK(queue_push(q, c, err) == 0 && queue_pop_device(q, 0, 0) == c, "device 1 was not open");
    queue_device_open(q, 1, 1);
    queue_complete(q, c, 0);
    p->device = 1; /* pinned to device 1: device 0 may never take it, even past the deferral */
    CHECK(queue_push(q, p, err) == 0, "push pinned: %s", err);
    nanosleep(&nap, NULL);
    CHECK(queue_pop_device(q, 0, 0) == NULL && queue_pop_device(q, 1, 0) == p, "pinned job");
    CHECK(queue_retry(q, p) == 0 && p->retried && p->state == JOB_QUEUED && queue_device_load(q, 1) == 0,
          "retry once");
    got = queue_pop_device(q, 1, 0);
    CHECK(got == p && queue_retry(q, p) == -1, "a second retry was allowed");
    queue_complete(q, p, 0);
    /* device 1 fails: a job pinned to it fails at once, later pushes of one too; device 0 serves */
    struct job *d = mkjob(LANE_GPU, 5), *e = mkjob(LANE_GPU, 6), *f = mkjob(LANE_GPU, 7);
    d->device = 1;
    CHECK(queue_push(q, d, err) == 0 && queue_push(q, e, err) == 0, "push");
    CHECK(queue_fence_device(q, 1, "GPU 1: poisoned", 0) == 1, "devices left");
    CHECK(queue_wait(q, d, err) == EDGED_E_GPU_FATAL && strstr(err, "GPU 1"), "pinned to the fenced: %s", err);
    f->device = 1;
    CHECK(queue_push(q, f, err) == EDGED_E_GPU_FATAL, "push pinned to the fenced: %s", err);
    CHECK(queue_pop_device(q, 1, 0) == NULL, "the fenced device took a job");
    CHECK(queue_pop_device(q, 0, 0) == e, "device 0 serves on");
    /* device 0 stuck: fenced with abandon, e's waiter gives up with gpu_fatal, the job is left */
    CHECK(queue_fence_device(q, 0, "GPU 0: stuck", 1) == 0, "no device left");
    CHECK(queue_wait(q, e, err) == EDGED_E_GPU_FATAL && strstr(err, "GPU 0: stuck") && queue_retry(q, e) == -1,
          "abandoned: %s", err);
    queue_complete(q, e, EDGED_E_GPU_FATAL); /* the stuck thread, later */
    job_release(q, a), job_release(q, b), job_release(q, c), job_release(q, p);
    job_release(q, d), job_release(q, e), job_release(q, f);
    queue_complete(q, a, 0);
    queue_free(q);
}

int main(void)
{
    test_bound_and_lanes();
    test_deadline();
    test_close_drains();
    test_fail();
    test_large_cap();
    test_large_fifo();
    test_large_fail_balance();
    test_devices();
    return check_summary();
}
