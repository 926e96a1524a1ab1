/* gpinned_host_stub.c — the pinned pool's allocator without CUDA (GPU=0 builds): there is no pinned
 * memory, so gpinned_get always answers NULL and callers keep their ordinary memory. */
#include "gpinned.h"

void gpinned_bind(int device)
{
    (void)device;
}

void *gpinned_host_alloc(size_t n)
{
    (void)n;
    return NULL;
}

void gpinned_host_release(void *p)
{
    (void)p;
}
