/* test_cancel.c — cooperative cancellation: cpu_serial, cpu and both forms of Canny (its pre-blur,
 * gradients, suppression and flood) stop within rows of the flag (EDGED_E_CANCELLED, no output)
 * and give the same result as before without it; the queue cancels a running job past its run
 * limit (504) or when its client is gone (499), and queue_fail cancels running jobs; a job's
 * memory budget is given back when its memory is freed, not when its waiter stops waiting. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "canny.h"
#include "check.h"
#include "clock.h"
#include "cpu.h"
#include "cpu_serial.h"
#include "errors.h"
#include "filter.h"
#include "jobs/budget.h"
#include "jobs/queue.h"

static char err[EDGED_ERR_LEN];

static struct filter_plan big_plan(void)
{
    struct filter_spec spec;
    struct filter_plan plan;

    filter_spec_init(&spec, FILTER_GAUSSIAN);
    spec.size = 63;
    filter_plan_make(&spec, 1, &plan, err);
    return plan;
}

struct setter {
    atomic_int *flag;
    int after_ms;
    double t_set; /* clock_ms() when the flag was set */
};

static void *set_later(void *arg)
{
    struct setter *s = arg;
    struct timespec ts = {0, s->after_ms * 1000000L};

    nanosleep(&ts, NULL);
    s->t_set = clock_ms();
    atomic_store(s->flag, 1);
    return NULL;
}

/* A gray canny plan, with a 63x63 pre-blur or none. */
static struct filter_plan canny_plan(int blur, int aperture)
{
    struct filter_spec spec;
    struct filter_plan plan;

    filter_spec_init(&spec, FILTER_CANNY);
    spec.size = blur ? 63 : 0;
    spec.canny.aperture = aperture;
    filter_plan_make(&spec, 1, &plan, err);
    return plan;
}

/* The plan on in under the flag: cpu_serial or cpu, or a canny plan's serial or threaded form. */
static int run_plan(const struct img *in, const struct filter_plan *plan, int serial, struct img *out,
                    const atomic_int *flag)
{
    if (plan->filter == FILTER_CANNY)
        return canny_plan_run_cancel(in, plan, serial, 2, out, flag, err);
    return serial ? cpu_serial_run_cancel(in, plan, out, flag, err) : cpu_run_cancel(in, plan, out, 2, flag, err);
}

/* A job of seconds stops within a bound of the flag (set 100 ms after its start), with no output;
 * with the flag set before, nothing runs. The bound is generous for a loaded machine. */
static void check_cancel(const char *what, const struct img *in, const struct filter_plan *plan, int serial)
{
    struct img out = {0};
    atomic_int flag = 0;
    struct setter st = {&flag, 100, 0.0};
    pthread_t t;
    double t1;
    int rc;

    pthread_create(&t, NULL, set_later, &st);
    rc = run_plan(in, plan, serial, &out, &flag);
    t1 = clock_ms();
    pthread_join(t, NULL);
    CHECK(rc == EDGED_E_CANCELLED && out.px == NULL, "%s: rc %d, output %p", what, rc, (void *)out.px);
    CHECK(t1 - st.t_set < 1000, "%s: stopped %.0f ms after the flag", what, t1 - st.t_set);
    rc = run_plan(in, plan, serial, &out, &flag);
    CHECK(rc == EDGED_E_CANCELLED && out.px == NULL, "%s, flag set before: rc %d", what, rc);
}

/* 63x63 taps, direct, on 1500x1500 serial or 3000x3000 threaded. */
static void test_cpu_cancel(int serial)
{
    struct filter_plan plan = big_plan();
    int side = serial ? 1500 : 3000;
    struct img in = {0};

    plan.conv[0].separable = 0; /* the direct loop: cpu's two passes would be done at once */
    img_alloc(&in, side, side, 1, err);
    memset(in.px, 77, in.stride * (size_t)in.h);
    check_cancel(serial ? "serial" : "cpu", &in, &plan, serial);
    img_free(&in);
}

/* Canny: the pre-blur (63x63 direct; 700x700 serial, 2500x2500 threaded) and the serial gradients
 * (2500x2500, aperture 7), on noise: many edges to follow. */
static void test_canny_cancel(int serial, int blur)
{
    struct filter_plan plan = canny_plan(blur, 7);
    int side = serial && blur ? 700 : 2500;
    struct img in = {0};
    char what[64];

    img_alloc(&in, side, side, 1, err);
    for (size_t i = 0; i < in.stride * (size_t)in.h; i++)
        in.px[i] = (uint8_t)(i * 2654435761u >> 24);
    snprintf(what, sizeof(what), "canny %s blur %d", serial ? "serial" : "cpu", blur);
    check_cancel(what, &in, &plan, serial);
    img_free(&in);
}

/* With the flag clear Canny's map is the uncancellable call's, byte for byte. */
static void test_canny_same_result(void)
{
    struct img in = {0}, a = {0}, b = {0};
    atomic_int flag = 0;

    img_alloc(&in, 131, 77, 1, err);
    for (size_t i = 0; i < in.stride * (size_t)in.h; i++)
        in.px[i] = (uint8_t)((i % 131) / 9 * 50 + (i * 7) % 23);
    for (int serial = 0; serial <= 1; serial++)
        for (int blur = 0; blur <= 1; blur++) {
            struct filter_plan plan = canny_plan(blur, 3);
            CHECK(canny_plan_run(&in, &plan, serial, 2, &a, err) == 0 &&
                      canny_plan_run_cancel(&in, &plan, serial, 2, &b, &flag, err) == 0 &&
                      memcmp(a.px, b.px, a.stride * (size_t)a.h) == 0,
                  "canny %s blur %d: map differs with a clear flag", serial ? "serial" : "cpu", blur);
            img_free(&a);
            img_free(&b);
        }
    img_free(&in);
}

/* With the flag clear the result is the uncancellable call's, byte for byte. */
static void test_same_result(void)
{
    struct filter_spec spec;
    struct filter_plan plan;
    struct img in = {0}, a = {0}, b = {0};
    atomic_int flag = 0;

    filter_spec_init(&spec, FILTER_EDGE);
    filter_plan_make(&spec, 3, &plan, err);
    img_alloc(&in, 97, 61, 3, err);
    for (size_t i = 0; i < in.stride * (size_t)in.h; i++)
        in.px[i] = (uint8_t)(i * 31 + 7);
    CHECK(cpu_serial_run(&in, &plan, &a, err) == 0 && cpu_serial_run_cancel(&in, &plan, &b, &flag, err) == 0 &&
              memcmp(a.px, b.px, a.stride * (size_t)a.h) == 0, "serial output differs with a clear flag");
    img_free(&a);
    img_free(&b);
    CHECK(cpu_run(&in, &plan, &a, 2, err) == 0 && cpu_run_cancel(&in, &plan, &b, 2, &flag, err) == 0 &&
              memcmp(a.px, b.px, a.stride * (size_t)a.h) == 0, "cpu output differs with a clear flag");
    img_free(&a);
    img_free(&b);
    img_free(&in);
}

static int alive_flag = 1;
static int alive(void *cls)
{
    (void)cls;
    return alive_flag;
}

/* The queue: run limit, gone client, queue_fail; the worker side completes later and frees. */
static void test_queue_cancel(void)
{
    struct queue *q;
    struct job *j;
    double t0;

    queue_new(&q, 4, 60000, 0, err);
    j = job_new();
    j->lane = LANE_CPU;
    j->timeout_ms = 100;
    queue_push(q, j, err);
    CHECK(queue_pop(q, LANE_CPU, 0) == j, "pop");
    t0 = clock_ms();
    CHECK(queue_wait_watch(q, j, NULL, NULL, err) == EDGED_E_DEADLINE && strstr(err, "job-timeout-s"), "limit: %s",
          err);
    CHECK(clock_ms() - t0 < 1000 && atomic_load(&j->cancel), "not cancelled at its limit (%.0f ms)", clock_ms() - t0);
    queue_complete(q, j, EDGED_E_CANCELLED); /* the worker notices later */
    job_release(q, j);

    j = job_new();
    j->lane = LANE_CPU;
    queue_push(q, j, err);
    alive_flag = 0; /* gone while queued: taken out of the queue */
    CHECK(queue_wait_watch(q, j, alive, NULL, err) == EDGED_E_CLIENT_GONE && queue_depth(q) == 0, "queued: %s", err);
    job_release(q, j);

    j = job_new();
    j->lane = LANE_CPU;
    queue_push(q, j, err);
    queue_pop(q, LANE_CPU, 0);
    CHECK(queue_wait_watch(q, j, alive, NULL, err) == EDGED_E_CLIENT_GONE && atomic_load(&j->cancel),
          "running: %s", err);
    job_release(q, j); /* the submitter lets go first: the worker's completion frees it */
    queue_complete(q, j, EDGED_E_CANCELLED);
    alive_flag = 1;

    j = job_new();
    j->lane = LANE_CPU;
    queue_push(q, j, err);
    queue_pop(q, LANE_CPU, 0);
    queue_fail(q, EDGED_E_UNAVAILABLE, "shut down");
    CHECK(atomic_load(&j->cancel) && queue_wait_watch(q, j, alive, NULL, err) == EDGED_E_UNAVAILABLE,
          "queue_fail: %s", err);
    queue_complete(q, j, EDGED_E_CANCELLED);
    job_release(q, j);
    queue_free(q);
}

/* A job abandoned by its waiter (run limit) keeps its reservation until the worker completes and
 * frees it: the bytes follow the job's memory, not the answer. Its worker's working set is
 * reserved while it runs; of it, the output's part stays until the job is freed. */
static void test_budget_follows_the_job(void)
{
    struct budget *b;
    struct queue *q;
    struct job *j;
    size_t bytes = 1000;

    budget_new(&b, 4096, err);
    queue_new(&q, 4, 60000, 0, err);
    CHECK(budget_take(b, bytes, 0, err) == 0, "take: %s", err);
    j = job_new();
    job_set_budget(j, b, 2000, 300);
    job_take_budget(j, &bytes);
    CHECK(bytes == 0 && j->budget_bytes == 1000, "the job did not take the reservation");
    j->lane = LANE_CPU;
    j->timeout_ms = 50;
    queue_push(q, j, err);
    queue_pop(q, LANE_CPU, 0);
    CHECK(job_work_begin(j) == 0 && budget_used(b) == 3000, "work not reserved: %zu", budget_used(b));
    CHECK(queue_wait_watch(q, j, NULL, NULL, err) == EDGED_E_DEADLINE, "limit: %s", err);
    job_release(q, j); /* the waiter answers 504 and lets go */
    CHECK(budget_used(b) == 3000, "given back at the 504 while the job still runs: %zu", budget_used(b));
    job_work_end(j, EDGED_E_CANCELLED); /* the worker stops: no output kept */
    CHECK(budget_used(b) == 1000, "work not given back: %zu", budget_used(b));
    queue_complete(q, j, EDGED_E_CANCELLED); /* and frees it */
    CHECK(budget_used(b) == 0, "not given back when the job was freed: %zu", budget_used(b));

    j = job_new(); /* a job that runs to the end keeps its output's part until it is freed */
    job_set_budget(j, b, 2000, 300);
    CHECK(job_work_begin(j) == 0, "work: %s", err);
    job_work_end(j, 0);
    CHECK(budget_used(b) == 300, "output's part: %zu", budget_used(b));
    job_release(NULL, j);
    CHECK(budget_used(b) == 0, "output's part not given back: %zu", budget_used(b));
    j = job_new(); /* a working set the budget cannot hold: refused, nothing taken */
    job_set_budget(j, b, 5000, 0);
    CHECK(job_work_begin(j) == EDGED_E_IMAGE_TOO_LARGE && budget_used(b) == 0, "work over the whole budget");
    job_release(NULL, j);
    queue_free(q);
    budget_free(b);
}

int main(void)
{
    test_cpu_cancel(1);
    test_cpu_cancel(0);
    test_same_result();
    test_canny_cancel(1, 0);
    test_canny_cancel(1, 1);
    test_canny_cancel(0, 1);
    test_canny_same_result();
    test_queue_cancel();
    test_budget_follows_the_job();
    return check_summary();
}
