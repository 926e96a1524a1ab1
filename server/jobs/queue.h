/* queue.h — the bounded job queue between connection threads and the workers, with deadlines. */
#ifndef EDGED_QUEUE_H
#define EDGED_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "errors.h"
#include "filter.h"
#include "gconv.h"
#include "image.h"
#include "variant.h"

/* The answer's encoding the GPU lane also does on the device (jobs/dev_encode.c). */
enum job_enc { JOB_ENC_NONE, JOB_ENC_JPEG, JOB_ENC_PNG };

/* Which workers take a job: the GPU workers (one per device) or the CPU pool. */
enum job_lane { LANE_CPU, LANE_GPU, LANE_COUNT };

enum job_state { JOB_NEW, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* The format of input left compressed (job->src), each batched apart on the GPU lane. */
enum job_src { JOB_SRC_JPEG, JOB_SRC_PNG, JOB_SRC_COUNT };

struct png_layout;

/* Stage times a worker measured, milliseconds. */
struct job_times {
    double queue, upload, kernel, download;
};

/* One image to filter. The submitter fills the input half, the worker the output half; the
 * queue owns the bookkeeping. Reference-counted: the submitter and (while queued or running) the
 * queue each hold one, so an abandoned job is freed by whoever lets go last. */
struct job {
    /* input */
    struct img in; /* owned by the job; its pixels may have moved to in_pinned */
    struct filter_plan plan;
    enum variant variant; /* may be VARIANT_AUTO: the worker resolves it */
    int block;
    enum job_lane lane;
    int large; /* over --large-pixels: the CPU lane runs a bounded number of these at once */
    double timeout_ms; /* longest run once started (0: none); past it the job is cancelled */
    /* JPEG or PNG input left compressed for the GPU lane (backend_jpeg.c, backend_png.c): while src
     * is set and in.px is NULL, in holds only the size after orientation and the channels. src points
     * into src_block, the request's body that the job owns (freed with the job; its budget bytes
     * are the job's, job_take_budget). */
    const uint8_t *src;
    size_t src_len;
    uint8_t *src_block;
    enum job_src src_format;
    struct png_layout *png_lay; /* PNG: its layout (owned), and its zlib stream: in src, in png_join
                                 * or in png_pinned */
    const uint8_t *png_z;
    size_t png_z_len;
    uint8_t *png_join; /* owned, or NULL */
    /* owned (gpu/gpinned.h, of class png_pinned_cap), or NULL; given back when the job is freed, which
     * is after its device upload ended: the queue holds the job until its worker completes it */
    uint8_t *png_pinned;
    size_t png_pinned_cap;
    /* GPU lane: the CPU-decoded input as packed rows (stride in.w * in.ch) in a pinned buffer of
     * gpu/gpinned.h of class in_pinned_cap (pxjob_pin, px_job.h), in place of in's pixels: in.px
     * is NULL then, in keeps the size and channels. Owned, or NULL; given back when the job is
     * freed, as png_pinned */
    uint8_t *in_pinned;
    size_t in_pinned_cap;
    int orientation;  /* EXIF 1..8 to apply to src */
    /* JPEG src: its headers as nvJPEG read them on the request's thread (backend_jpeg_probe) when
     * jpeg_head_read is 1; else the GPU worker reads them */
    struct gconv_jpeg_head jpeg_head;
    int jpeg_head_read;
    /* the GPU lane also encodes out on the device, into out_enc: JPEG at quality enc_quality
     * (1..100), or PNG at png_level enc_quality (0..9) and bit depth enc_depth (8 or 1) */
    enum job_enc enc;
    int enc_quality, enc_depth;
    /* output */
    struct img out; /* GPU lane: allocated by the submitter; CPU lane: by the worker */
    uint8_t *out_enc; /* with enc: the answer's bytes encoded on the device (owned), or NULL */
    size_t out_enc_len;
    /* GPU lane: a result its worker left in the stream's staging rather than copy it on the one
     * worker thread. take(job, 1) copies it into out and frees the stream, take(job, 0) only frees
     * it; queue_wait calls the first on success, the job's last release the second if still set. */
    int (*take)(struct job *job, int copy);
    void *take_cls;
    int take_slot;
    /* GPU lane with several devices (device indices 0..n-1, queue_set_devices): device is the one
     * that must run it, or -1 for any (set by the submitter; job_new sets -1); ran_on the one that
     * took it last, -1 before (the access log's); retried 1 once it was put back after its device
     * failed (queue_retry: once only). */
    int device, ran_on, retried;
    enum variant used;
    int threads; /* CPU lane: the threads the filter ran on (1 for cpu_serial); 0 on the GPU lane */
    struct job_times t;
    int rc;
    char err[EDGED_ERR_LEN];
    /* set (never cleared) when nobody waits for the result any more: the CPU loops stop at the
     * next row, a GPU job's result is dropped when its stream finishes */
    atomic_int cancel;
    /* the memory budget (budget.h) the job holds for its request, given back when the job is freed
     * by whoever lets go last: a job abandoned at a 504 or 499 keeps its bytes reserved until its
     * worker has stopped and freed its memory. budget_bytes: taken over from the submitter
     * (job_take_budget; the submitter's alone); work_bytes, out_bytes: set before the job is
     * queued (job_set_budget); out_kept: the worker's (job_work_end). */
    struct budget *budget;
    size_t budget_bytes, work_bytes, out_bytes, out_kept;
    /* bookkeeping (queue.c) */
    enum job_state state;
    int refs;
    long long cost; /* counted in its device's outstanding work while it runs there */
    int fenced;     /* its device was fenced while it ran: its waiter gives up with the fence's message */
    double t_push, t_start;
    struct job *next;
    pthread_cond_t done;
};

struct queue;

/* depth: queued jobs at most; deadline_ms: a job not started by then is answered 504;
 * cpu_large_max: large jobs of the CPU lane running at once, at most (< 1: no cap). */
int queue_new(struct queue **out, int depth, int deadline_ms, int cpu_large_max, char *err);
/* Frees the queue; every job must be released. Accepts NULL. */
void queue_free(struct queue *q);

/* A new job holding one reference (the caller's), or NULL when out of memory. */
struct job *job_new(void);
/* Drops the caller's reference; frees the job, its images included, with the last one. q may be
 * NULL for a job that was never queued (run directly by backend_run). Accepts a NULL job. */
void job_release(struct queue *q, struct job *job);

/* Before the job is queued: its memory budget b, the bytes its worker reserves while it runs (CPU
 * lane: job_work_begin) and, of them, those its output keeps until the job is freed. */
struct budget;
void job_set_budget(struct job *job, struct budget *b, size_t work, size_t out);
/* The job takes over *bytes of its budget (then *bytes is 0), given back when it is freed. Its
 * submitter's call, holding a reference: before the job is queued, or once it is done or
 * abandoned. */
void job_take_budget(struct job *job, size_t *bytes);
/* CPU lane, around a job's run on its worker: begin reserves job->work_bytes, waiting up to
 * JOB_WORK_WAIT_MS for other jobs to give theirs back (0, or EDGED_E_MEMORY_BUDGET with the
 * message in job->err); end gives them back but, when rc is 0, job->out_bytes that the output
 * keeps until the job is freed. */
#define JOB_WORK_WAIT_MS 2000
int job_work_begin(struct job *job);
void job_work_end(struct job *job, int rc);

/* Queues job. Errors: EDGED_E_QUEUE_FULL (at its bound), EDGED_E_UNAVAILABLE (closed: draining)
 * or the code queue_fail set (GPU fatal), with a message. */
int queue_push(struct queue *q, struct job *job, char *err);

/* Waits until job is done, takes its result (job->take); returns job->rc and copies its message
 * into err. A job still queued at its deadline is taken out and fails with EDGED_E_DEADLINE; a
 * running job after queue_fail is abandoned with that code: then its output must not be read, only
 * released. */
int queue_wait(struct queue *q, struct job *job, char *err);

/* Tells queue_wait_watch whether the client that waits for a job is still there (1) or gone (0). */
typedef int (*queue_alive_fn)(void *cls);

/* As queue_wait, and while the job waits or runs: alive(cls) is asked every QUEUE_WATCH_MS (alive
 * may be NULL); a gone client takes a queued job out, or cancels a running one, with
 * EDGED_E_CLIENT_GONE; a job running past job->timeout_ms is cancelled with EDGED_E_DEADLINE.
 * A cancelled job is abandoned: its worker completes and releases it later. */
int queue_wait_watch(struct queue *q, struct job *job, queue_alive_fn alive, void *cls, char *err);
#define QUEUE_WATCH_MS 100

/* Worker side. Takes the oldest job of lane, waiting up to wait_ms (< 0: until one comes or the
 * queue is closed and empty); a large job is passed over while the lane's cap of large jobs is
 * running. Jobs past their deadline are completed with EDGED_E_DEADLINE on the way. NULL on
 * timeout, or when closed and empty (queue_closed_empty then says 1). */
struct job *queue_pop(struct queue *q, enum job_lane lane, double wait_ms);
/* ---- the GPU lane's devices ---------------------------------------------------------------- */

#define QUEUE_MAX_DEVICES 16
/* A job the least loaded device has not taken after this long goes to any device that asks. */
#define QUEUE_DEFER_MS 3.0

/* The GPU lane is served by n devices (1..QUEUE_MAX_DEVICES; 1 before this is called), each
 * popping with queue_pop_device. A job goes to the device with the least outstanding work: the
 * pixels of the jobs it has taken and not completed. A device asking for a job while another
 * open one (queue_device_open) has less outstanding work is passed over for QUEUE_DEFER_MS, so
 * that the work follows the device that will finish first, not the one that asks first. */
void queue_set_devices(struct queue *q, int n);
/* queue_pop of the GPU lane for device dev: also the jobs pinned to dev (job->device), never those
 * pinned to another, and none after dev was fenced (then NULL at once). */
struct job *queue_pop_device(struct queue *q, int dev, double wait_ms);
/* Whether device dev could take a job now (a free stream). Lock-free; the device's worker says. */
void queue_device_open(struct queue *q, int dev, int open);
/* Outstanding work of dev (pixels), for metrics. */
long long queue_device_load(struct queue *q, int dev);
/* Fences device dev after a fatal error (msg says which): it takes no more jobs; queued jobs pinned
 * to it fail with EDGED_E_GPU_FATAL and so does a later push of one. abandon 1 (its worker's thread
 * is stuck in the driver): the waiters of the jobs it runs give up at once with EDGED_E_GPU_FATAL
 * and msg, the jobs left for the stuck thread to release. Returns the devices left unfenced. */
int queue_fence_device(struct queue *q, int dev, const char *msg, int abandon);
/* Puts a running GPU job of a fenced device back at the head of the queue, for another device:
 * once per job (job->retried), and only while a device is left, the job is not cancelled and its
 * waiter has not given up. 0 when it was put back (the caller drops it), else -1 (complete it). */
int queue_retry(struct queue *q, struct job *job);

/* Marks a popped job done with rc (message in job->err when rc < 0) and wakes its submitter. */
void queue_complete(struct queue *q, struct job *job, int rc);
/* queue_complete of n jobs, jobs[i] with rcs[i], under one lock: a worker that finds several done
 * at once takes the queue's lock once, not once per job. */
void queue_complete_many(struct queue *q, struct job *const *jobs, const int *rcs, int n);

/* Refuses new jobs (EDGED_E_UNAVAILABLE, "draining"); queued ones still run. Wakes the workers. */
void queue_close(struct queue *q);
/* Fails every queued job and every later push with code (EDGED_E_GPU_FATAL, or
 * EDGED_E_UNAVAILABLE past the drain timeout) and message, cancels running jobs and releases
 * their waiters. */
void queue_fail(struct queue *q, int code, const char *msg);
/* 1 once closed (or failed) and no job of lane is queued. */
int queue_closed_empty(struct queue *q, enum job_lane lane);

/* Large jobs of lane popped and not yet completed. */
int queue_running_large(struct queue *q, enum job_lane lane);

/* Jobs queued now (not running) and the bound. */
int queue_depth(struct queue *q);
int queue_capacity(const struct queue *q);

#endif
