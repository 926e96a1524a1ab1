/* test_body_handover.c — a request's body handed to its job (http_req_take_body, job->src_block):
 * the buffer changes owner without a copy and is freed once, with the job; the body's budget moves
 * with it, exactly, and comes back only when the job is freed, also when the request left first
 * (a 504 while the worker still holds the job). Under `make asan` a double free or a leak fails. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "http/http_state.h"
#include "jobs/budget.h"
#include "jobs/queue.h"

static char err[EDGED_ERR_LEN];

/* A request whose body of n bytes arrived (announced, reserved in b as receive() does) and whose
 * handler kept `kept` bytes besides (http_req_keep_budget). */
static struct http_req *arrived(struct budget *b, size_t n, size_t kept)
{
    struct http_req *r = calloc(1, sizeof(*r));
    uint8_t *data = malloc(n);

    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 7);
    upload_body_init(&r->body, 1u << 20);
    upload_body_announce(&r->body, n);
    CHECK(upload_body_append(&r->body, data, n, err) == 0, "body: %s", err);
    r->received = r->body.len;
    CHECK(budget_take(b, n + kept, 0, err) == 0, "budget: %s", err);
    r->reserved = n;
    http_req_keep_budget(r, kept);
    free(data);
    return r;
}

/* What on_completed does with a request: its body freed, its reservation given back. */
static void completed(struct budget *b, struct http_req *r)
{
    upload_body_free(&r->body);
    budget_give(b, r->reserved);
    free(r);
}

static void test_handover(void)
{
    struct budget *b;
    struct http_req *r;
    struct job *job;
    const uint8_t *body;
    uint8_t *block;
    size_t len, reserved = 0, n = 5000;

    budget_new(&b, 1u << 20, err);
    r = arrived(b, n, 300);
    body = http_req_body(r, &len);
    job = job_new();
    job_set_budget(job, b, 0, 0);
    block = http_req_take_body(r, &reserved);
    CHECK(block == body && len == n, "the buffer itself is handed over, not a copy");
    CHECK(reserved == n && r->reserved == 300, "the body's part moved: %zu, kept %zu", reserved, r->reserved);
    CHECK(!r->body.p && r->body.len == 0 && r->received == n, "the request's body is empty, its length logged");
    CHECK(http_req_take_body(r, &reserved) == NULL && reserved == n, "a second take moves nothing");
    job->src_block = block;
    job->src = block + 100, job->src_len = n - 100;
    job_take_budget(job, &reserved);
    CHECK(reserved == 0 && job->budget_bytes == n, "the job took the body's budget: %zu", job->budget_bytes);
    completed(b, r); /* frees nothing of the body */
    CHECK(budget_used(b) == n, "the request gave back the body's part: %zu held", budget_used(b));
    CHECK(job->src[0] == (uint8_t)(100 * 7) && job->src[n - 101] == (uint8_t)((n - 1) * 7),
          "the image in the block outlives the request");
    job_release(NULL, job);
    CHECK(budget_used(b) == 0, "not given back with the job: %zu", budget_used(b));
    budget_free(b);
}

/* The request answered 504 and left; the worker still holds the job: block and budget stay until
 * the worker completes it. */
static void test_abandoned(void)
{
    struct budget *b;
    struct queue *q;
    struct http_req *r;
    struct job *job;
    size_t reserved = 0, n = 3000;

    budget_new(&b, 1u << 20, err);
    queue_new(&q, 4, 60000, 0, err);
    r = arrived(b, n, 0);
    job = job_new();
    job_set_budget(job, b, 0, 0);
    job->src = job->src_block = http_req_take_body(r, &reserved);
    job->src_len = n;
    job_take_budget(job, &reserved);
    job->lane = LANE_GPU;
    job->timeout_ms = 50;
    CHECK(queue_push(q, job, err) == 0 && queue_pop(q, LANE_GPU, 0) == job, "queued: %s", err);
    CHECK(queue_wait_watch(q, job, NULL, NULL, err) == EDGED_E_DEADLINE, "deadline: %s", err);
    job_release(q, job);
    completed(b, r);
    CHECK(budget_used(b) == n, "given back while the worker still holds the job: %zu", budget_used(b));
    CHECK(job->src[n - 1] == (uint8_t)((n - 1) * 7), "the worker's bytes are gone");
    queue_complete(q, job, EDGED_E_CANCELLED);
    CHECK(budget_used(b) == 0, "not given back when the job was freed: %zu", budget_used(b));
    queue_free(q);
    budget_free(b);
}

int main(void)
{
    test_handover();
    test_abandoned();
    return check_summary();
}
