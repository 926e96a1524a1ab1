/* gpinned_host.cu — the pinned pool's allocator (gpinned.c keeps the books): cudaHostAlloc, portable to
 * every device, in the context of the device gconv_open bound first. */
#include <cuda_runtime.h>

#include "gpinned.h"

static int bound = -1; /* the device whose context allocates, -1 before any gconv_open */

void gpinned_bind(int device)
{
    int none = -1;

    __atomic_compare_exchange_n(&bound, &none, device, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* Called from request threads: the allocation goes to the bound device's context, and the calling
 * thread's current device is left as it was. A failure answers NULL (the caller keeps its ordinary
 * memory); it is not sticky, and its error is cleared so that the thread's next CUDA call does not
 * report it. */
void *gpinned_host_alloc(size_t n)
{
    int dev = __atomic_load_n(&bound, __ATOMIC_SEQ_CST), old = 0;
    void *p = NULL;

    if (dev < 0 || cudaGetDevice(&old) != cudaSuccess)
        return NULL;
    if (old != dev && cudaSetDevice(dev) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    if (cudaHostAlloc(&p, n, cudaHostAllocPortable) != cudaSuccess)
        p = NULL;
    if (old != dev)
        cudaSetDevice(old); /* was current a moment ago; the buffer stays valid either way */
    cudaGetLastError();
    return p;
}

void gpinned_host_release(void *p)
{
    if (p && cudaFreeHost(p) != cudaSuccess)
        cudaGetLastError();
}
