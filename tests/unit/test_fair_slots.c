/* test_fair_slots.c — fair_slots hands slots out first come, first served: waiters enter in the
 * order they queued, a thread that gives a slot back and asks again waits behind the queue, and
 * no more than n threads ever hold a slot. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "jobs/fair_slots.h"

static struct fair_slots fs;
static atomic_int next_entry, holders, most;
static int order[8];

static void nap_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static void *one_entry(void *arg)
{
    fair_slots_enter(&fs);
    order[atomic_fetch_add(&next_entry, 1)] = (int)(long)arg;
    fair_slots_leave(&fs);
    return NULL;
}

static void test_fifo_order(void)
{
    pthread_t t[8];
    int in_order = 1;

    fair_slots_init(&fs, 1);
    atomic_store(&next_entry, 0);
    fair_slots_enter(&fs); /* held here while the others queue, one after another */
    for (long i = 0; i < 8; i++) {
        pthread_create(&t[i], NULL, one_entry, (void *)i);
        for (int k = 0; k < 2000 && fair_slots_waiting(&fs) < i + 1; k++)
            nap_ms(1);
    }
    CHECK(fair_slots_waiting(&fs) == 8, "%d waiters queued", fair_slots_waiting(&fs));
    fair_slots_leave(&fs);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 8; i++)
        in_order &= order[i] == i;
    CHECK(in_order, "entry order %d %d %d %d %d %d %d %d", order[0], order[1], order[2], order[3], order[4], order[5],
          order[6], order[7]);
    fair_slots_destroy(&fs);
}

static void test_no_barging(void)
{
    pthread_t t;

    fair_slots_init(&fs, 1);
    atomic_store(&next_entry, 0);
    fair_slots_enter(&fs);
    pthread_create(&t, NULL, one_entry, (void *)7L);
    for (int k = 0; k < 2000 && fair_slots_waiting(&fs) < 1; k++)
        nap_ms(1);
    fair_slots_leave(&fs);
    fair_slots_enter(&fs); /* asks again at once: the queued thread goes first */
    CHECK(atomic_load(&next_entry) == 1 && order[0] == 7, "the returning holder took the slot before the waiter");
    fair_slots_leave(&fs);
    pthread_join(t, NULL);
    fair_slots_destroy(&fs);
}

static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++) {
        fair_slots_enter(&fs);
        int h = atomic_fetch_add(&holders, 1) + 1, m;
        while (h > (m = atomic_load(&most)) && !atomic_compare_exchange_weak(&most, &m, h))
            ;
        atomic_fetch_sub(&holders, 1);
        fair_slots_leave(&fs);
    }
    return NULL;
}

static void test_bound(void)
{
    pthread_t t[16];

    fair_slots_init(&fs, 2);
    atomic_store(&most, 0);
    for (int i = 0; i < 16; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    for (int i = 0; i < 16; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&most) <= 2 && atomic_load(&most) >= 1, "%d threads held one of 2 slots at once",
          atomic_load(&most));
    CHECK(fs.free == 2 && fair_slots_waiting(&fs) == 0, "after the churn: %d free, %d waiting", fs.free,
          fair_slots_waiting(&fs));
    fair_slots_destroy(&fs);
}

int main(void)
{
    test_fifo_order();
    test_no_barging();
    test_bound();
    return check_summary();
}
