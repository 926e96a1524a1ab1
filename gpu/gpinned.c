/* gpinned.c — the pinned host buffer pool's bookkeeping (size classes, caps, counters); the memory
 * itself comes from the allocator it is given (gpinned_host.cu: cudaHostAlloc; gpinned_host_stub.c:
 * none). */
#include "gpinned.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Four classes an octave, GPINNED_MIN_BYTES << o times 1, 1.25, 1.5 and 1.75 (a buffer at most a
 * quarter over its request, beyond the first MiB), up to 1 GiB. */
#define GPINNED_CLASSES 41

static size_t class_size(int k)
{
    return (GPINNED_MIN_BYTES << (k / 4)) / 4 * (size_t)(4 + k % 4);
}

/* A free buffer's first bytes link it to the next one of its list and say its size: the pool owns
 * it then. */
struct gpinned_free {
    struct gpinned_free *next;
    size_t size;
};

/* Buffers given back past the keep wait in `dying` for the next gpinned_pool_get, which releases
 * them on its own thread: gpinned_pool_put makes no allocator call, because it runs where a job is
 * freed, a GPU worker's thread included, where cudaFreeHost could wait for the device. */
struct gpinned_pool {
    pthread_mutex_t mu;
    const struct gpinned_alloc *a;
    size_t cap, keep;
    struct gpinned_free *free_list[GPINNED_CLASSES], *dying;
    struct gpinned_stats st;
};

/* The class of n bytes (its size in *size), or -1 when n exceeds the largest. */
static int class_of(size_t n, size_t *size)
{
    for (int k = 0; k < GPINNED_CLASSES; k++)
        if (n <= class_size(k)) {
            *size = class_size(k);
            return k;
        }
    return -1;
}

struct gpinned_pool *gpinned_pool_new(const struct gpinned_alloc *a, size_t cap, size_t keep)
{
    struct gpinned_pool *p = calloc(1, sizeof(*p));

    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    p->a = a, p->cap = cap, p->keep = keep;
    return p;
}

static void release_chain(struct gpinned_pool *p, struct gpinned_free *f)
{
    while (f) {
        struct gpinned_free *next = f->next;
        p->a->release(f);
        f = next;
    }
}

void gpinned_pool_free(struct gpinned_pool *p)
{
    if (!p)
        return;
    for (int k = 0; k < GPINNED_CLASSES; k++)
        release_chain(p, p->free_list[k]);
    release_chain(p, p->dying);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Takes the dying buffers out of p and, until need more bytes fit under the cap, free buffers of
 * other classes than k (under p->mu; their bytes no longer held); returns the chain to release
 * outside the lock. */
static struct gpinned_free *evict_locked(struct gpinned_pool *p, int k, size_t need)
{
    struct gpinned_free *out = p->dying;

    p->dying = NULL;
    for (struct gpinned_free *f = out; f; f = f->next)
        p->st.held_bytes -= f->size;
    for (int j = 0; j < GPINNED_CLASSES && p->st.held_bytes + need > p->cap; j++)
        while (j != k && p->free_list[j] && p->st.held_bytes + need > p->cap) {
            struct gpinned_free *f = p->free_list[j];
            p->free_list[j] = f->next;
            p->st.held_bytes -= f->size, p->st.free_bytes -= f->size;
            f->next = out, out = f;
        }
    return out;
}

/* A free buffer of the class is reused; else the bytes are reserved under the lock and allocated
 * outside it (a pinned allocation takes milliseconds), after the dying buffers and, when the cap
 * wants it, free buffers of other classes were released. */
void *gpinned_pool_get(struct gpinned_pool *p, size_t n, size_t *cap)
{
    struct gpinned_free *f, *evicted = NULL;
    size_t size = 0;
    int k = class_of(n ? n : 1, &size);
    void *buf;

    pthread_mutex_lock(&p->mu);
    if (k >= 0 && (f = p->free_list[k])) {
        p->free_list[k] = f->next;
        p->st.free_bytes -= size, p->st.in_use_bytes += size;
        p->st.in_use++, p->st.gets++;
        evicted = evict_locked(p, k, 0); /* the dying ones only */
        pthread_mutex_unlock(&p->mu);
        release_chain(p, evicted);
        *cap = size;
        return f;
    }
    evicted = evict_locked(p, k, k >= 0 && size <= p->cap ? size : 0);
    if (k < 0 || p->st.held_bytes + size > p->cap) {
        p->st.refused++;
        pthread_mutex_unlock(&p->mu);
        release_chain(p, evicted);
        return NULL;
    }
    p->st.held_bytes += size;
    pthread_mutex_unlock(&p->mu);
    release_chain(p, evicted);
    buf = p->a->alloc(size);
    pthread_mutex_lock(&p->mu);
    if (buf)
        p->st.in_use++, p->st.gets++, p->st.allocs++, p->st.in_use_bytes += size;
    else
        p->st.held_bytes -= size, p->st.refused++;
    pthread_mutex_unlock(&p->mu);
    *cap = size;
    return buf;
}

void gpinned_pool_put(struct gpinned_pool *p, void *buf, size_t cap)
{
    struct gpinned_free *f = buf;
    size_t size = 0;
    int k = class_of(cap, &size);

    if (!buf)
        return;
    f->size = cap;
    pthread_mutex_lock(&p->mu);
    p->st.in_use--, p->st.in_use_bytes -= cap;
    if (k >= 0 && size == cap && p->st.free_bytes + cap <= p->keep) {
        f->next = p->free_list[k];
        p->free_list[k] = f;
        p->st.free_bytes += cap;
    } else {
        f->next = p->dying;
        p->dying = f;
    }
    pthread_mutex_unlock(&p->mu);
}

void gpinned_pool_stats(struct gpinned_pool *p, struct gpinned_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    pthread_mutex_unlock(&p->mu);
}

/* ---- the process-wide pool, made on first use over the device allocator ---- */

static const struct gpinned_alloc host_alloc = {gpinned_host_alloc, gpinned_host_release};
static struct gpinned_pool *pool;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

size_t gpinned_cap_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t eighth = pages > 0 && page > 0 ? (size_t)pages / 8 * (size_t)page : GPINNED_CAP_BYTES;

    return eighth < GPINNED_CAP_BYTES ? eighth : GPINNED_CAP_BYTES;
}

static void pool_make(void)
{
    size_t cap = gpinned_cap_bytes();

    pool = gpinned_pool_new(&host_alloc, cap, cap);
}

void *gpinned_get(size_t n, size_t *cap)
{
    pthread_once(&pool_once, pool_make);
    return pool ? gpinned_pool_get(pool, n, cap) : NULL;
}

void gpinned_put(void *p, size_t cap)
{
    if (p && pool)
        gpinned_pool_put(pool, p, cap);
}

void gpinned_stats(struct gpinned_stats *out)
{
    pthread_once(&pool_once, pool_make);
    if (pool)
        gpinned_pool_stats(pool, out);
    else
        memset(out, 0, sizeof(*out));
}
