/* px_job.h — a GPU job's input pixels, decoded on the CPU by the request's thread, moved into a
 * pinned host buffer (gpu/gpinned.h) there, so that the one GPU worker thread uploads them in place
 * instead of copying them into its stream's staging; and the counters of that path. The endpoint
 * pins; backend.c submits what it pinned; queue.c gives the buffer back. */
#ifndef EDGED_PX_JOB_H
#define EDGED_PX_JOB_H

#include "jobs/queue.h"

/* A routed GPU-lane job whose pixels job->in holds (no compressed input): copies them as packed rows
 * into a buffer of the pinned pool (job->in_pinned, given back when the job is freed) and frees
 * job->in's pixels, keeping its size and channels. Returns 1 when it did; 0 when the job stays as
 * it was: not such a job, or the pool gave no buffer (no device context, its cap reached; counted).
 * Call it on the request's thread, as gpinned_get wants. */
int pxjob_pin(struct job *job);

/* GPU jobs with CPU-decoded pixels since start (/metrics, the GPU worker's profile): pinned by
 * pxjob_pin, and left in ordinary memory for the worker to stage (the pool answered NULL). */
struct pxjob_counts {
    unsigned long long pinned, staged;
};
void pxjob_counts(struct pxjob_counts *c);

#endif
