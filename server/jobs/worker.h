/* worker.h — the threads that run queued jobs: one GPU worker owning the CUDA context (N streams,
 * async submit/poll/finish) and a small CPU pool for the CPU variants. */
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

/* Starts the CPU pool, and the GPU worker when b has a GPU. Returns 0 or a negative EDGED_E_*. */
int worker_start(struct worker **out, struct queue *q, struct backend *b, const struct worker_config *c,
                 char *err);

/* Joins the threads once the queue is closed and drained (call queue_close first). A GPU worker
 * that has not ended wait_ms after the CPU pool (stuck in the driver) is left behind; returns 0,
 * or -1 when it was left (then the backend must not be closed). Frees w either way. */
int worker_stop(struct worker *w, int wait_ms);

/* 1 after a fatal GPU error (sticky CUDA error or the watchdog), with the reason in msg
 * (EDGED_ERR_LEN bytes, may be NULL). Every queued job has then been failed with
 * EDGED_E_GPU_FATAL and the queue refuses new ones. */
int worker_fatal(struct worker *w, char *msg);

/* Declares the GPU fatal when a GPU job has been running longer than limit_ms (a stuck kernel).
 * Called periodically by the main loop. */
void worker_watchdog(struct worker *w, int limit_ms);

/* Device memory of the GPU context, as last sampled by the GPU worker (0 on the CPU backend). */
size_t worker_gpu_memory(struct worker *w);

/* Seconds the GPU worker has had at least one job on the device since start (0 without a GPU). */
double worker_gpu_busy_seconds(struct worker *w);

#endif
