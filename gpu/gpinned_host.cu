/* gpinned_host.cu — the pinned pool's allocator (gpinned.c keeps the books): cudaHostAlloc,
 * portable to every device, in the context of the device gconv_open bound first. */
#include <cuda_runtime.h>

#include "gpinned.h"

static int bound = -1; /* the device whose context allocates, -1 before any gconv_open */

void gpinned_bind(int device)
{
    int none = -1;

    __atomic_compare_exchange_n(&bound, &none, device, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* Makes the bound device the calling thread's current one, so that its calls use that device's
 * context rather than make one of device 0's (the default of a thread that never chose). The pool
 * calls the allocator only from gpinned_get's threads, which run no other device's work. -1 when
 * nothing is bound or CUDA refuses (its error cleared: not sticky, not the thread's next report). */
static int use_bound(void)
{
    int dev = __atomic_load_n(&bound, __ATOMIC_SEQ_CST), cur = -1;

    if (dev < 0)
        return -1;
    if (cudaGetDevice(&cur) != cudaSuccess || (cur != dev && cudaSetDevice(dev) != cudaSuccess)) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}

void *gpinned_host_alloc(size_t n)
{
    void *p = NULL;

    if (use_bound() < 0)
        return NULL;
    if (cudaHostAlloc(&p, n, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

void gpinned_host_release(void *p)
{
    if (p && use_bound() == 0 && cudaFreeHost(p) != cudaSuccess)
        cudaGetLastError();
}
