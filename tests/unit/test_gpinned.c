/* test_gpinned.c — the pinned host buffer pool's bookkeeping (gpu/gpinned.c) over a fake allocator
 * (malloc, counted, failing on demand): size classes, reuse of given-back buffers, the cap on bytes
 * held (free buffers of other classes give way to it), the cap on free bytes kept (a buffer past it
 * is released by the next get, never by the put), refusals, and the counters after threads take
 * and give back at once; then the process-wide pool, which answers NULL in a process that opened no
 * device context (and always in a build without CUDA). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpinned.h"

#define MIB ((size_t)1 << 20)

static atomic_int live, fail_next;

static void *fake_alloc(size_t n)
{
    void *p;

    if (atomic_exchange(&fail_next, 0))
        return NULL;
    if ((p = malloc(n)))
        atomic_fetch_add(&live, 1);
    return p;
}

static void fake_release(void *p)
{
    if (p)
        atomic_fetch_sub(&live, 1);
    free(p);
}

static const struct gpinned_alloc fake = {fake_alloc, fake_release};

static void test_classes_and_reuse(void)
{
    struct gpinned_pool *p = gpinned_pool_new(&fake, 16 * MIB, 8 * MIB);
    struct gpinned_stats st;
    size_t c1 = 0, c2 = 0, c3 = 0;
    void *a, *b, *c;

    CHECK(p != NULL, "pool_new");
    a = gpinned_pool_get(p, 1, &c1);
    b = gpinned_pool_get(p, MIB + 1, &c2);
    CHECK(a && b && c1 == MIB && c2 == 5 * MIB / 4, "classes: %zu for 1 byte, %zu for 1 MiB + 1", c1, c2);
    memset(b, 0xab, MIB + 1); /* the whole request is usable */
    gpinned_pool_put(p, b, c2);
    c = gpinned_pool_get(p, 5 * MIB / 4, &c3);
    CHECK(c == b && c3 == 5 * MIB / 4, "a given-back buffer of the class is reused");
    gpinned_pool_stats(p, &st);
    CHECK(st.held_bytes == 9 * MIB / 4 && st.in_use_bytes == 9 * MIB / 4 && st.free_bytes == 0 &&
              st.in_use == 2 && st.gets == 3 && st.allocs == 2 && st.refused == 0,
          "books: held %zu free %zu in_use %llu gets %llu allocs %llu refused %llu", st.held_bytes,
          st.free_bytes, st.in_use, st.gets, st.allocs, st.refused);
    gpinned_pool_put(p, a, c1);
    gpinned_pool_put(p, c, c3);
    gpinned_pool_put(p, NULL, 0);
    gpinned_pool_stats(p, &st);
    CHECK(st.in_use == 0 && st.in_use_bytes == 0 && st.free_bytes == 9 * MIB / 4 &&
              st.held_bytes == 9 * MIB / 4,
          "all back: in_use %llu free %zu", st.in_use, st.free_bytes);
    c = gpinned_pool_get(p, 9 * MIB, &c3); /* 8 MiB times 1.25 */
    CHECK(c && c3 == 10 * MIB, "9 MiB: class %zu", c3);
    gpinned_pool_put(p, c, c3);
    gpinned_pool_free(p);
    CHECK(atomic_load(&live) == 0, "pool_free left %d buffers allocated", atomic_load(&live));
}

/* Cap 8 MiB, keep 4 MiB: a request over the cap, or one that would pass it while buffers are in use,
 * is refused; a buffer given back past the keep is released by the next get (put makes no
 * allocator call), and so are free buffers of another class when the cap wants room; a failed
 * allocation is refused and its bytes not held. */
static void test_caps(void)
{
    struct gpinned_pool *p = gpinned_pool_new(&fake, 8 * MIB, 4 * MIB);
    struct gpinned_stats st;
    size_t c4 = 0, c2 = 0, cx = 0, c8 = 0, cy = 0;
    void *x4, *x2, *y, *z8;

    CHECK(!gpinned_pool_get(p, 9 * MIB, &cx), "over the cap: given");
    x4 = gpinned_pool_get(p, 4 * MIB, &c4);
    x2 = gpinned_pool_get(p, 2 * MIB, &c2);
    CHECK(x4 && x2, "within the cap: refused");
    CHECK(!gpinned_pool_get(p, 3 * MIB, &cx), "4 + 2 + 3 MiB held under a cap of 8: given");
    gpinned_pool_put(p, x2, c2); /* kept: 2 MiB free */
    gpinned_pool_put(p, x4, c4); /* past the keep of 4 MiB with the 2 free: to be released */
    gpinned_pool_stats(p, &st);
    CHECK(st.held_bytes == 6 * MIB && st.free_bytes == 2 * MIB && st.in_use_bytes == 0 &&
              atomic_load(&live) == 2,
          "put released: held %zu free %zu in use %zu live %d", st.held_bytes, st.free_bytes, st.in_use_bytes,
          atomic_load(&live));
    y = gpinned_pool_get(p, 4 * MIB, &cy); /* releases x4 first */
    gpinned_pool_stats(p, &st);
    CHECK(y && cy == 4 * MIB && st.held_bytes == 6 * MIB && st.free_bytes == 2 * MIB &&
              atomic_load(&live) == 2,
          "keep: held %zu free %zu live %d", st.held_bytes, st.free_bytes, atomic_load(&live));
    gpinned_pool_put(p, y, cy);             /* free would be 2 + 4 > keep 4: to be released */
    z8 = gpinned_pool_get(p, 8 * MIB, &c8); /* y released, then the free 2 MiB to make room */
    gpinned_pool_stats(p, &st);
    CHECK(z8 && st.held_bytes == 8 * MIB && st.free_bytes == 0 && atomic_load(&live) == 1,
          "room made: held %zu free %zu live %d", st.held_bytes, st.free_bytes, atomic_load(&live));
    gpinned_pool_put(p, z8, c8); /* 8 MiB > keep: to be released */
    atomic_store(&fail_next, 1);
    CHECK(!gpinned_pool_get(p, MIB, &cx), "a failed allocation gave a buffer");
    gpinned_pool_stats(p, &st);
    CHECK(st.held_bytes == 0 && st.in_use == 0 && st.refused == 3 && atomic_load(&live) == 0,
          "after the failure: held %zu in_use %llu refused %llu live %d", st.held_bytes, st.in_use,
          st.refused, atomic_load(&live));
    gpinned_pool_free(p);
}

#define THREADS 4
#define ROUNDS 2000

/* Each thread takes and gives back buffers of 1..4 MiB classes, writing its mark into them and
 * checking it survives until it gives the buffer back (no buffer is given out twice). */
static void *churn(void *arg)
{
    struct gpinned_pool *p = arg;
    uintptr_t mark = (uintptr_t)pthread_self();
    int bad = 0;

    for (int i = 0; i < ROUNDS; i++) {
        size_t cap = 0, n = ((size_t)(i % 3) + 1) * MIB;
        uintptr_t *b = gpinned_pool_get(p, n, &cap);
        if (!b)
            continue;
        b[0] = mark, b[n / sizeof(*b) - 1] = mark;
        sched_yield();
        bad += b[0] != mark || b[n / sizeof(*b) - 1] != mark;
        gpinned_pool_put(p, b, cap);
    }
    return (void *)(intptr_t)bad;
}

static void test_threads(void)
{
    struct gpinned_pool *p = gpinned_pool_new(&fake, 16 * MIB, 8 * MIB);
    struct gpinned_stats st;
    pthread_t t[THREADS];
    int bad = 0;

    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, churn, p) == 0, "pthread_create");
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (int)(intptr_t)r;
    }
    gpinned_pool_stats(p, &st);
    CHECK(bad == 0, "%d buffers changed while held: given out twice", bad);
    CHECK(st.in_use == 0 && st.in_use_bytes == 0 && st.held_bytes >= st.free_bytes &&
              st.held_bytes <= 16 * MIB && st.gets + st.refused == THREADS * ROUNDS && st.allocs <= st.gets,
          "books: in_use %llu held %zu free %zu gets %llu refused %llu", st.in_use, st.held_bytes,
          st.free_bytes, st.gets, st.refused);
    printf("threads: %d x %d gets, %llu reused, %llu allocated, %llu refused\n", THREADS, ROUNDS,
           st.gets - st.allocs, st.allocs, st.refused);
    gpinned_pool_free(p);
    CHECK(atomic_load(&live) == 0, "%d buffers left allocated", atomic_load(&live));
}

/* No gconv_open in this program: the process-wide pool has no device to allocate with. */
static void test_process_pool(void)
{
    struct gpinned_stats st;
    size_t cap = 0;
    void *b = gpinned_get(MIB, &cap);

    CHECK(b == NULL, "a pinned buffer without a device context");
    gpinned_put(b, cap);
    gpinned_stats(&st);
    CHECK(st.in_use == 0 && st.held_bytes == 0 && st.refused >= 1, "process pool: in_use %llu held %zu",
          st.in_use, st.held_bytes);
}

int main(void)
{
    test_classes_and_reuse();
    test_caps();
    test_threads();
    test_process_pool();
    return check_summary();
}
