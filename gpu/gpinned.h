/* gpinned.h — a process-wide pool of pinned (page-locked) host buffers that any device's stream
 * copies from directly: the request threads put a job's input there (a PNG's zlib stream, or the
 * pixels they decoded), so that the GPU worker thread uploads it without staging it first.
 *
 * Buffers come in size classes, four an octave from GPINNED_MIN_BYTES (1, 1.25, 1.5, 1.75, 2,
 * 2.5 MiB, ...), and a given-back buffer is kept for the next request of its class. The pool holds
 * at most gpinned_cap_bytes() of pinned memory, in use and free together: GPINNED_CAP_BYTES, room
 * for the inputs of the admission limit's default 70 image requests at up to about 28 MiB each (a
 * 2048 x 2048 RGB photograph's stream is about 8 MB, its pixels 12 MiB), or an eighth of the
 * machine's memory when that is less. Pinned memory cannot be paged out, and it counts toward the
 * process's memory beside the budget of --max-memory-mb (docs/reliability.md). It keeps every
 * buffer given back, up to the cap: allocating and freeing page-locked memory under load costs
 * more than holding it (freeing can wait for the device). Thread-safe. Without CUDA
 * (gpinned_host_stub.c), or before any device context was opened, gpinned_get answers NULL: the
 * caller keeps its ordinary memory. */
#ifndef EDGED_GPINNED_H
#define EDGED_GPINNED_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPINNED_MIN_BYTES ((size_t)1 << 20)
#define GPINNED_CAP_BYTES ((size_t)2 << 30)

/* The process-wide pool's cap: GPINNED_CAP_BYTES, at most an eighth of the machine's memory. */
size_t gpinned_cap_bytes(void);

/* A pinned buffer of at least n bytes (its size class in *cap), or NULL: no device, n over the
 * cap, the cap reached, or the allocation failed. Give it back with gpinned_put(p, *cap). Its
 * CUDA calls make the pool's device the calling thread's current one: call it from threads that
 * run no CUDA work of another device (the request threads). */
void *gpinned_get(size_t n, size_t *cap);
/* Gives back p of class cap (as gpinned_get set it) once nothing reads it any more, a device copy
 * in flight included. Makes no CUDA call (a buffer past the keep is released by a later
 * gpinned_get), so any thread may. Accepts NULL. */
void gpinned_put(void *p, size_t cap);

/* What the process-wide pool did since start (/metrics). */
struct gpinned_stats {
    size_t held_bytes;          /* pinned bytes the pool holds now: in use, free, and given back
                                 * past the keep, not yet released */
    size_t in_use_bytes;        /* of them, given out and not yet back */
    size_t free_bytes;          /* kept for reuse */
    unsigned long long in_use;  /* buffers given out and not yet back */
    unsigned long long gets;    /* buffers given out */
    unsigned long long allocs;  /* of them, newly allocated (the rest were reused) */
    unsigned long long refused; /* requests answered NULL (cap reached, too large, allocation failed) */
};
void gpinned_stats(struct gpinned_stats *out);

/* ---- the pool itself, with its allocator given (the process-wide one uses cudaHostAlloc; the
 * unit test a fake) ---- */

/* alloc answers NULL when it cannot; release accepts what alloc gave. */
struct gpinned_alloc {
    void *(*alloc)(size_t n);
    void (*release)(void *p);
};
struct gpinned_pool;
/* A pool over a (not copied: must outlive the pool) of at most cap bytes, keeping at most keep
 * bytes of free buffers; NULL when out of memory. */
struct gpinned_pool *gpinned_pool_new(const struct gpinned_alloc *a, size_t cap, size_t keep);
/* Releases every free buffer and the pool; every buffer must have been given back. Accepts NULL. */
void gpinned_pool_free(struct gpinned_pool *p);
void *gpinned_pool_get(struct gpinned_pool *p, size_t n, size_t *cap);
void gpinned_pool_put(struct gpinned_pool *p, void *buf, size_t cap);
void gpinned_pool_stats(struct gpinned_pool *p, struct gpinned_stats *out);

/* gpu/ internal: gconv_open names the device whose context allocates the pool's buffers (the first
 * one opened; cudaHostAllocPortable makes them every device's). The process-wide pool's allocator
 * (gpinned_host.cu; gpinned_host_stub.c always NULL): NULL before any bind or when CUDA refuses. */
void gpinned_bind(int device);
void *gpinned_host_alloc(size_t n);
void gpinned_host_release(void *p);

#ifdef __cplusplus
}
#endif
#endif
