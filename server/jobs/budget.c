/* budget.c — the memory budget: one counter under a mutex, waiters woken by every give. */
#include "jobs/budget.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "errors.h"

#define BUDGET_MIN_DEFAULT ((size_t)256 << 20)

struct budget {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    size_t limit, used;
};

int budget_new(struct budget **out, size_t limit, char *err)
{
    struct budget *b = calloc(1, sizeof(*b));
    pthread_condattr_t a;

    *out = NULL;
    if (!b)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the memory budget");
    pthread_mutex_init(&b->mu, NULL);
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&b->freed, &a);
    pthread_condattr_destroy(&a);
    b->limit = limit;
    *out = b;
    return 0;
}

void budget_free(struct budget *b)
{
    if (!b)
        return;
    pthread_cond_destroy(&b->freed);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* Waiting is for the bytes of requests finishing now (a few hundred ms at most); a longer wait
 * would only hold the connection while the client could be retrying elsewhere. Takes n once room
 * bytes are free. */
static int take(struct budget *b, size_t n, size_t room, int wait_ms, char *err)
{
    double until = clock_ms() + wait_ms;
    int rc = 0;

    room = room > n ? room : n;
    if (!b || n == 0)
        return 0;
    if (b->limit && room > b->limit)
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "request needs %zu MiB, more than the whole memory budget "
                          "(--max-memory-mb %zu)", room >> 20, b->limit >> 20);
    pthread_mutex_lock(&b->mu);
    while (b->limit && b->used + room > b->limit) {
        struct timespec ts = clock_abs(until);
        if (clock_ms() >= until || pthread_cond_timedwait(&b->freed, &b->mu, &ts) != 0) {
            if (b->used + room <= b->limit)
                break;
            rc = edged_fail(err, EDGED_E_MEMORY_BUDGET, "memory budget spent: %zu of %zu MiB reserved, %zu MiB "
                            "more needed (--max-memory-mb)", b->used >> 20, b->limit >> 20, (room + (1 << 20) - 1) >> 20);
            break;
        }
    }
    if (rc == 0)
        b->used += n;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int budget_take(struct budget *b, size_t n, int wait_ms, char *err) { return take(b, n, n, wait_ms, err); }

int budget_take_room(struct budget *b, size_t n, size_t room, int wait_ms, char *err)
{
    return take(b, n, room, wait_ms, err);
}

void budget_give(struct budget *b, size_t n)
{
    if (!b || n == 0)
        return;
    pthread_mutex_lock(&b->mu);
    b->used = n > b->used ? 0 : b->used - n;
    pthread_cond_broadcast(&b->freed);
    pthread_mutex_unlock(&b->mu);
}

size_t budget_used(struct budget *b)
{
    size_t n;

    if (!b)
        return 0;
    pthread_mutex_lock(&b->mu);
    n = b->used;
    pthread_mutex_unlock(&b->mu);
    return n;
}

size_t budget_limit(const struct budget *b) { return b ? b->limit : 0; }

/* A number of bytes from the first line of path; 0 when absent, "max" or unreadable. */
static size_t read_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;

    if (!f)
        return 0;
    if (fscanf(f, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    return (size_t)v;
}

/* Half: the rest is for what the budget does not count (code, thread stacks, the allocator's
 * slack, libmicrohttpd's pools), so that the kernel's OOM killer is never what refuses work. */
size_t budget_default_bytes(void)
{
    size_t cg = read_limit("/sys/fs/cgroup/memory.max"), mem;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

    if (!cg)
        cg = read_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    mem = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : 0;
    if (cg && (!mem || cg < mem)) /* v1 reports "no limit" as a huge number */
        mem = cg;
    mem /= 2;
    return mem > BUDGET_MIN_DEFAULT ? mem : BUDGET_MIN_DEFAULT;
}
