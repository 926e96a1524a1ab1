/* test_budget.c — the memory budget: reservations up to the limit, a brief wait for bytes given
 * back, refusal (memory_budget) when spent and image_too_large past the whole budget, a take that
 * needs room for more than it takes, back to 0 after every give, and the derived default. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "jobs/budget.h"
#include "check.h"
#include "clock.h"
#include "errors.h"

static char err[EDGED_ERR_LEN];

static void test_take_give(void)
{
    struct budget *b;

    CHECK(budget_new(&b, 1000, err) == 0, "new: %s", err);
    CHECK(budget_take(b, 600, 0, err) == 0 && budget_take(b, 400, 0, err) == 0, "fill to the limit");
    CHECK(budget_used(b) == 1000 && budget_limit(b) == 1000, "used %zu", budget_used(b));
    CHECK(budget_take(b, 1, 0, err) == EDGED_E_MEMORY_BUDGET && strstr(err, "--max-memory-mb"), "spent: %s", err);
    CHECK(budget_take(b, 1001, 0, err) == EDGED_E_IMAGE_TOO_LARGE, "larger than the whole budget: %s", err);
    budget_give(b, 600);
    budget_give(b, 400);
    CHECK(budget_used(b) == 0, "not back to 0: %zu", budget_used(b));
    budget_give(b, 5); /* more than held: clamps at 0, never wraps */
    CHECK(budget_used(b) == 0, "wrapped: %zu", budget_used(b));
    budget_free(b);
    CHECK(budget_take(NULL, 1u << 30, 0, err) == 0, "a NULL budget grants");
    budget_give(NULL, 1);
}

struct giver {
    struct budget *b;
    size_t n;
    int after_ms;
};

static void *give_later(void *arg)
{
    struct giver *g = arg;
    struct timespec ts = {0, g->after_ms * 1000000L};

    nanosleep(&ts, NULL);
    budget_give(g->b, g->n);
    return NULL;
}

static void test_wait_for_give(void)
{
    struct budget *b;
    struct giver g;
    pthread_t t;
    double t0;

    budget_new(&b, 100, err);
    budget_take(b, 100, 0, err);
    g = (struct giver){b, 50, 50};
    pthread_create(&t, NULL, give_later, &g);
    t0 = clock_ms();
    CHECK(budget_take(b, 50, 2000, err) == 0, "waiter not granted: %s", err);
    CHECK(clock_ms() - t0 < 1500, "waited %.0f ms", clock_ms() - t0);
    pthread_join(t, NULL);
    t0 = clock_ms();
    CHECK(budget_take(b, 10, 100, err) == EDGED_E_MEMORY_BUDGET, "spent budget granted");
    CHECK(clock_ms() - t0 >= 90 && clock_ms() - t0 < 1000, "wait %.0f ms, not about 100", clock_ms() - t0);
    budget_give(b, 100);
    CHECK(budget_used(b) == 0, "used %zu", budget_used(b));
    budget_free(b);
}

/* A take with room waits for room bytes and takes n; room past the whole budget never fits. */
static void test_room(void)
{
    struct budget *b;

    budget_new(&b, 1000, err);
    CHECK(budget_take_room(b, 100, 600, 0, err) == 0 && budget_used(b) == 100, "room 600 in 1000: %s", err);
    CHECK(budget_take_room(b, 100, 901, 0, err) == EDGED_E_MEMORY_BUDGET && budget_used(b) == 100,
          "room 901 with 900 free granted");
    CHECK(budget_take_room(b, 1, 1001, 0, err) == EDGED_E_IMAGE_TOO_LARGE, "room past the budget: %s", err);
    budget_give(b, 100);
    CHECK(budget_used(b) == 0, "used %zu", budget_used(b));
    budget_free(b);
}

static void test_default(void)
{
    size_t d = budget_default_bytes();

    CHECK(d >= ((size_t)256 << 20), "default %zu below 256 MiB", d);
}

int main(void)
{
    test_take_give();
    test_wait_for_give();
    test_room();
    test_default();
    return check_summary();
}
