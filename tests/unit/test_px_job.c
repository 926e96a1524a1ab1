/* test_px_job.c — a GPU job's decoded pixels and the pinned pool (server/jobs/px_job.c) on the host:
 * this program opens no device context, so the pool (gpu/gpinned.h) answers NULL, as it does without
 * a device or at its cap, and a GPU job's pixels then stay exactly where they were, counted as
 * staged; a CPU-lane job, a job without pixels and one with compressed input are left alone and not
 * counted. The pinned path itself runs in the worker mock (pinned submits, buffers given back once
 * the jobs are freed) and on a device in test_gpu (pinned and staged submits give the same output). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpinned.h"
#include "jobs/px_job.h"
#include "jobs/queue.h"

/* A routed job of lane with a w x h x ch image of its own bytes. */
static struct job *pixel_job(enum job_lane lane, int w, int h, int ch)
{
    struct job *job = job_new();
    char err[EDGED_ERR_LEN];

    CHECK(job && img_alloc(&job->in, w, h, ch, err) == 0, "job: %s", job ? err : "out of memory");
    if (job) {
        job->lane = lane;
        for (size_t i = 0; job->in.px && i < job->in.stride * (size_t)h; i++)
            job->in.px[i] = (uint8_t)(i * 7 + 3);
    }
    return job;
}

/* Without a pool buffer the GPU job keeps its pixels (same pointer, same bytes) and is counted
 * staged; the pool counts the refusal. */
static void test_fallback(void)
{
    struct job *job = pixel_job(LANE_GPU, 37, 11, 3);
    struct pxjob_counts c0, c1;
    struct gpinned_stats s0, s1;
    uint8_t *px = job->in.px, first = px[0], last = px[37 * 3 * 11 - 1];

    pxjob_counts(&c0);
    gpinned_stats(&s0);
    CHECK(pxjob_pin(job) == 0, "pinned in a process without a device context");
    CHECK(job->in.px == px && !job->in_pinned && job->in.w == 37 && job->in.h == 11 && job->in.ch == 3 &&
              px[0] == first && px[37 * 3 * 11 - 1] == last,
          "the job changed without a pool buffer");
    pxjob_counts(&c1);
    gpinned_stats(&s1);
    CHECK(c1.staged == c0.staged + 1 && c1.pinned == c0.pinned,
          "counts: staged %llu -> %llu, pinned %llu -> %llu", c0.staged, c1.staged, c0.pinned, c1.pinned);
    CHECK(s1.in_use == 0 && s1.held_bytes == 0, "pool: %llu in use, %zu bytes held", s1.in_use,
          s1.held_bytes);
    job_release(NULL, job);
}

/* Jobs pxjob_pin is not for: the CPU lane, no pixels (compressed input left for the device), pixels
 * beside compressed input (a declined PNG decoded on the CPU): untouched and uncounted. */
static void test_not_for_it(void)
{
    struct job *cpu = pixel_job(LANE_CPU, 8, 8, 1), *src = job_new(), *both = pixel_job(LANE_GPU, 8, 8, 4);
    struct pxjob_counts c0, c1;
    uint8_t *px = cpu->in.px, *bpx = both->in.px;

    src->lane = LANE_GPU;
    src->in = (struct img){.w = 8, .h = 8, .ch = 3};
    src->src = src->src_block = malloc(1), src->src_len = 1;
    both->src = both->src_block = malloc(1), both->src_len = 1;
    pxjob_counts(&c0);
    CHECK(pxjob_pin(cpu) == 0 && cpu->in.px == px, "a CPU-lane job was touched");
    CHECK(pxjob_pin(src) == 0 && !src->in.px && !src->in_pinned, "a job without pixels was touched");
    CHECK(pxjob_pin(both) == 0 && both->in.px == bpx && !both->in_pinned,
          "a job with compressed input was touched");
    pxjob_counts(&c1);
    CHECK(c1.staged == c0.staged && c1.pinned == c0.pinned, "counted: staged %llu -> %llu", c0.staged,
          c1.staged);
    job_release(NULL, cpu);
    job_release(NULL, src);
    job_release(NULL, both);
}

int main(void)
{
    test_fallback();
    test_not_for_it();
    return check_summary();
}
