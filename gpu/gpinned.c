/* gpinned.c — the pinned host buffer pool's bookkeeping (size classes, caps, counters); the memory
 * itself comes from the allocator it is given (gpinned_host.cu: cudaHostAlloc; gpinned_host_stub.c:
 * none). */
#include "gpinned.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Classes GPINNED_MIN_BYTES << k, k < GPINNED_CLASSES: up to 1 GiB, over any cap set. */
#define GPINNED_CLASSES 11

/* A free buffer's first bytes link it to the next free one of its class: the pool owns it then. */
struct gpinned_free {
    struct gpinned_free *next;
};

struct gpinned_pool {
    pthread_mutex_t mu;
    const struct gpinned_alloc *a;
    size_t cap, keep;
    struct gpinned_free *free_list[GPINNED_CLASSES];
    struct gpinned_stats st;
};

/* The class of n bytes (its size in *size), or -1 when n exceeds the largest. */
static int class_of(size_t n, size_t *size)
{
    size_t c = GPINNED_MIN_BYTES;

    for (int k = 0; k < GPINNED_CLASSES; k++, c <<= 1)
        if (n <= c) {
            *size = c;
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

void gpinned_pool_free(struct gpinned_pool *p)
{
    if (!p)
        return;
    for (int k = 0; k < GPINNED_CLASSES; k++)
        while (p->free_list[k]) {
            struct gpinned_free *f = p->free_list[k];
            p->free_list[k] = f->next;
            p->a->release(f);
        }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Takes free buffers of other classes than k out of p (under p->mu) until need more bytes fit
 * under the cap; returns the chain to release outside the lock. */
static struct gpinned_free *evict_locked(struct gpinned_pool *p, int k, size_t need)
{
    struct gpinned_free *out = NULL;
    size_t c = GPINNED_MIN_BYTES;

    for (int j = 0; j < GPINNED_CLASSES && p->st.held_bytes + need > p->cap; j++, c <<= 1)
        while (j != k && p->free_list[j] && p->st.held_bytes + need > p->cap) {
            struct gpinned_free *f = p->free_list[j];
            p->free_list[j] = f->next;
            p->st.held_bytes -= c, p->st.free_bytes -= c;
            f->next = out, out = f;
        }
    return out;
}

static void release_chain(struct gpinned_pool *p, struct gpinned_free *f)
{
    while (f) {
        struct gpinned_free *next = f->next;
        p->a->release(f);
        f = next;
    }
}

/* A free buffer of the class is reused; else the bytes are reserved under the lock and allocated
 * outside it (a pinned allocation takes milliseconds), after free buffers of other classes made
 * room under the cap. */
void *gpinned_pool_get(struct gpinned_pool *p, size_t n, size_t *cap)
{
    struct gpinned_free *f, *evicted = NULL;
    size_t size = 0;
    int k = class_of(n ? n : 1, &size);
    void *buf;

    pthread_mutex_lock(&p->mu);
    if (k >= 0 && (f = p->free_list[k])) {
        p->free_list[k] = f->next;
        p->st.free_bytes -= size;
        p->st.in_use++, p->st.gets++;
        pthread_mutex_unlock(&p->mu);
        *cap = size;
        return f;
    }
    if (k >= 0 && size <= p->cap && p->st.held_bytes + size > p->cap)
        evicted = evict_locked(p, k, size);
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
        p->st.in_use++, p->st.gets++, p->st.allocs++;
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
    int k = class_of(cap, &size), keep;

    if (!buf)
        return;
    pthread_mutex_lock(&p->mu);
    p->st.in_use--;
    keep = k >= 0 && size == cap && p->st.free_bytes + cap <= p->keep;
    if (keep) {
        f->next = p->free_list[k];
        p->free_list[k] = f;
        p->st.free_bytes += cap;
    } else {
        p->st.held_bytes -= cap;
    }
    pthread_mutex_unlock(&p->mu);
    if (!keep)
        p->a->release(buf);
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

static void pool_make(void)
{
    pool = gpinned_pool_new(&host_alloc, GPINNED_CAP_BYTES, GPINNED_KEEP_BYTES);
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
