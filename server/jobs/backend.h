/* backend.h — the compute backend (a GPU context or the CPU) and the one dispatch of a job to it,
 * shared by the service's workers and `edged filter`. */
#ifndef EDGED_BACKEND_H
#define EDGED_BACKEND_H

#include "filter.h"
#include "gconv.h"
#include "image.h"
#include "jobs/queue.h"
#include "ops/config.h"
#include "variant.h"

struct backend;

/* Opens the backend: auto takes the GPUs that work, else the CPU; gpu fails without a device
 * (EDGED_E_NO_CUDA, message says why); cpu never touches CUDA. devices: the CUDA device numbers to
 * open, in order (ndevices 0: every visible device, at most CONFIG_MAX_GPUS); a listed device that
 * fails to open is logged and left out. threads: CPU threads, 0 = cores. With auto and no GPU, err
 * (may be NULL) says why. */
int backend_open(struct backend **out, enum backend_kind want, const int *devices, int ndevices, int streams,
                 int threads, char *err);
/* Closes the GPU contexts, if any, and frees b; accepts NULL. */
void backend_close(struct backend *b);
/* The GPUs open (0 on the CPU backend). backend_on(b, i), i in 0..count-1, is device i's view: a
 * backend whose GPU lane is that device, for its worker (the calls below take a view; b itself is
 * device 0's); NULL for another i. backend_ordinal: a view's CUDA device number;
 * backend_device_index: the index of the view of CUDA device `ordinal`, or -1 when not open. */
int backend_device_count(const struct backend *b);
struct backend *backend_on(struct backend *b, int i);
int backend_ordinal(const struct backend *b);
int backend_device_index(const struct backend *b, int ordinal);
/* 1 when a GPU context is open. */
int backend_has_gpu(const struct backend *b);
/* Device name (device 0's on the opened backend), or "cpu (N threads)". */
const char *backend_device(const struct backend *b);
struct gconv_ctx *backend_gpu(struct backend *b);
int backend_threads(const struct backend *b);

/* The variant `auto` resolves to for this plan and size. */
enum variant backend_pick(const struct backend *b, const struct filter_plan *plan, int w, int h);

/* CPU seconds (thread-seconds) a job of plan on a w x h image would take with variant v, estimated
 * from the pixels, planes and taps of what the variant really runs at its loops' measured rates
 * (backend.c states the rule); 0 for a GPU variant. */
double backend_cpu_seconds(const struct backend *b, const struct filter_plan *plan, int w, int h, enum variant v);

/* ---- one job (struct job, queue.h) ---------------------------------------------------------- */

/* Routes a job whose input, plan, variant and block are set: refuses a GPU variant without a GPU
 * (EDGED_E_NO_CUDA), sets the lane and, for the GPU lane, allocates the output. */
int backend_route(const struct backend *b, struct job *job, char *err);

/* CPU lane: runs the job on this thread (auto is cpu), each stage on its share of `share` (the
 * job counted in it by the caller), or on `threads` threads when share is NULL; sets used, the
 * threads and the kernel time. Returns 0 or a negative EDGED_E_* code with the message in
 * job->err. */
struct cpu_share;
int backend_run_cpu(const struct backend *b, struct job *job, int threads, struct cpu_share *share);

/* GPU lane, asynchronous: submit resolves auto and enqueues the job on stream s (job->in may be
 * freed once this returns 0; pixels in job->in_pinned are uploaded from there, and the job keeps
 * them until it is freed); finish waits for stream s and fills the stage times. It returns 1
 * when the result is left in the stream's staging for backend_take to copy into job->out (stream s
 * must take no other job before), 0 when there is nothing to take (encoded as JPEG on the device),
 * GCONV_E_PNG_DECLINED (see backend_png_declined) or an EDGED_E_* code. */
int backend_submit(struct backend *b, int s, struct job *job);
int backend_finish(struct backend *b, int s, struct job *job);
/* backend_png_declined's answer: the job, decoded on the CPU, was submitted again on the same
 * stream and runs still (poll and finish it as before). */
#define BACKEND_RESUBMITTED 2
int backend_take(struct backend *b, int s, struct job *job);

/* Runs a routed job to the end on this thread, through the same calls as the workers (the CPU
 * with the backend's threads, or the GPU on stream 0). Returns 0 or an EDGED_E_* code. */
int backend_run(struct backend *b, struct job *job);

/* For the batched submits of compressed input: resolve sets job's variant (auto: backend_pick) and
 * used, and returns its block side; batch_rc turns a job's rc from a batched call (call_rc the
 * call's) into backend_submit's: `refused` goes to fallback (a CPU decode, then backend_submit), a
 * fatal call fails every job, another error copies err into job->err, and a job the device took
 * gets its answer's device encode enqueued behind its kernels, as backend_submit does. */
int backend_resolve(const struct backend *b, struct job *job);
int backend_batch_rc(struct backend *b, int s, struct job *job, int call_rc, int rc, int refused,
                     int (*fallback)(struct backend *b, int s, struct job *job), const char *err);

/* ---- the GPU lane's jobs whose input is JPEG bytes (backend_jpeg.c) ------------------------- */

/* 1 when the GPU lane decodes JPEG input on the device (a GPU backend built with nvJPEG). */
int backend_gpu_jpeg(const struct backend *b);
/* GPU lane: submits n (1..GCONV_JPEG_MAX_BATCH) jobs with JPEG input, jobs[i] on free stream
 * streams[i], as one batched device decode; a job nvJPEG refuses is decoded on the CPU and
 * submitted with its pixels (counted). rcs[i]: each job's result, as backend_submit's. */
void backend_submit_jpeg(struct backend *b, struct job *const *jobs, const int *streams, int n, int *rcs);
/* The JPEG header probe (gconv_jpeg_probe) of the opened backend, which it closes: open makes it,
 * for device 0's view (0, or why not: no GPU lane with nvJPEG, nvJPEG's failure); probe reads a
 * JPEG's headers with it from any thread, for the job's head: 1 read, 0 no probe open, or
 * GCONV_E_JPEG_REFUSED (nvJPEG does not decode the file: the CPU path takes it) or EDGED_E_NOMEM
 * with the message in err. */
int backend_jpeg_probe_open(struct backend *b, char *err);
int backend_jpeg_probe(struct backend *b, const uint8_t *data, size_t len, struct gconv_jpeg_head *head,
                       char *err);
/* 1 while the device still decodes the last batch backend_submit_jpeg gave it (gconv_jpeg_decoding). */
int backend_jpeg_decoding(struct backend *b);
/* ms of the nvJPEG stages of the GPU lane since open (gconv_jpeg_profile's): on the host header
 * reads, decode calls, enqueues, bitstream copies, the engine check (part of the header reads); the
 * batched decodes on the device. Call from the GPU worker's thread. */
#define BACKEND_JPEG_STAGES 6
void backend_jpeg_profile(struct backend *b, double ms[BACKEND_JPEG_STAGES]);

/* ---- the GPU lane's jobs whose input is PNG bytes (backend_png.c) --------------------------- */

/* 1 when the GPU lane decodes PNG input on the device (a GPU backend in a CUDA build). */
int backend_gpu_png(const struct backend *b);
/* GPU lane: submits n (1..GCONV_PNG_MAX_BATCH) jobs with PNG input (png_job.h), jobs[i] on free
 * stream streams[i], as one batched device decode; a job the device refuses is decoded on the CPU
 * and submitted with its pixels (counted). rcs[i]: each job's result, as backend_submit's. */
void backend_submit_png(struct backend *b, struct job *const *jobs, const int *streams, int n, int *rcs);
/* A PNG job whose stream the device declined (GCONV_E_PNG_DECLINED from backend_finish): decodes it
 * on the CPU (counted) and submits it again on s. BACKEND_RESUBMITTED, or the decode's or submit's
 * error (the CPU decoder's verdict on a corrupt file). */
int backend_png_declined(struct backend *b, int s, struct job *job);
/* 1 while the device still inflates the last batch backend_submit_png gave it. */
int backend_png_decoding(struct backend *b);

#endif
