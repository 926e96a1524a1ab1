/* worker.h — the threads that run queued jobs: one GPU worker per device, each owning its CUDA
 * context (N streams, async submit/poll/finish), and a small CPU pool for the CPU variants. */
#ifndef EDGED_WORKER_H
#define EDGED_WORKER_H

#include <stddef.h>

#include "jobs/backend.h"
#include "jobs/queue.h"

struct worker;

struct worker_config {
    int cpu_workers; /* CPU-lane threads */
    int cpu_threads; /* threads each cpu_run uses */
    int log_profile; /* 1: the GPU worker logs its profile when it ends (the server's log; the CLI
                      * keeps stderr for its own lines) */
};

/* Starts the CPU pool, and one GPU worker per device of b (backend_device_count). Returns 0 or a
 * negative EDGED_E_*. */
int worker_start(struct worker **out, struct queue *q, struct backend *b, const struct worker_config *c,
                 char *err);

/* Joins the threads once the queue is closed and drained (call queue_close first). A GPU worker
 * that has not ended wait_ms after the CPU pool (stuck in the driver) is left behind; returns 0,
 * or -1 when one was left (then the backend must not be closed). Frees w either way. */
int worker_stop(struct worker *w, int wait_ms);

/* 1 once every device is fenced (a fatal GPU error on each: a sticky CUDA error or the watchdog),
 * with the last reason in msg (EDGED_ERR_LEN bytes, may be NULL). Every queued job has then been
 * failed with EDGED_E_GPU_FATAL and the queue refuses new ones. A device fenced while others work
 * costs only its share: the jobs it held are put back once for the others (queue_retry). */
int worker_fatal(struct worker *w, char *msg);

/* Fences a device whose GPU job has been running longer than limit_ms (a stuck kernel): the
 * waiters of its jobs are answered at once. Called periodically by the main loop. */
void worker_watchdog(struct worker *w, int limit_ms);

/* Device memory of the GPU contexts, as last sampled by their workers (0 on the CPU backend). */
size_t worker_gpu_memory(struct worker *w);

/* Seconds the devices have had at least one job each, summed (0 without a GPU). */
double worker_gpu_busy_seconds(struct worker *w);

/* What a GPU job holds its stream for, from taking it to giving it back: pending, waiting in a
 * batch for the batched decode of its compressed input (JPEG, PNG; 0 for other jobs); device, from
 * the submit until the worker sees it finished (the device's work and its wait behind other work);
 * handoff, from then until its waiter has copied the result out and freed the stream. */
enum worker_hold { WORKER_HOLD_PENDING, WORKER_HOLD_DEVICE, WORKER_HOLD_HANDOFF, WORKER_HOLD_PHASES };

/* One device's worker, for /metrics, /version and /readyz. */
struct worker_device {
    int ordinal; /* CUDA device number */
    char name[128];
    int alive;                               /* 0 once fenced */
    char fault[EDGED_ERR_LEN];               /* why it was fenced ("" while alive) */
    size_t memory;                           /* device memory in use, last sampled */
    double busy_seconds;                     /* time with at least one job on it */
    long long jobs;                          /* completed on it */
    long long retried;                       /* put back for another device when it failed */
    long long batches[JOB_SRC_COUNT];        /* batched decodes of JPEG, PNG input */
    long long batch_jobs[JOB_SRC_COUNT];     /* and the jobs in them */
    long long outstanding;                   /* pixels of the jobs it holds now */
    double hold_seconds[WORKER_HOLD_PHASES]; /* its streams' time held by jobs, summed, by phase */
};
/* GPU workers (devices) of w: 0 on the CPU backend. */
int worker_device_count(const struct worker *w);
/* Fills *d for device i (0..count-1); 0, or -1 for another i. */
int worker_device_info(struct worker *w, int i, struct worker_device *d);

#endif
