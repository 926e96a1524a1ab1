/* gconv_fault.cu — debug-only GPU faults (illegal address, trap, assert, spin, memory hog) for
 * the fault tests; an empty unit unless built with -DEDGED_DEBUG=1 (`make debug`). */
#include "gconv_fault.h"

#if defined(EDGED_DEBUG) && EDGED_DEBUG

#undef NDEBUG
#include <assert.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "errors.h"

#define GFAULT_HOG_PIECES 4096
#define GFAULT_HOG_MIN ((size_t)1 << 20)

/* Writes through a pointer no allocation owns: cudaErrorIllegalAddress. */
__global__ void gfault_illegal_kernel(int *d_bad)
{
    d_bad[threadIdx.x] = 1;
}

/* Aborts the kernel: cudaErrorLaunchFailure. */
__global__ void gfault_trap_kernel(void)
{
    __trap();
}

/* A failed device-side assert: cudaErrorAssert. */
__global__ void gfault_assert_kernel(int v)
{
    assert(v == 0);
}

/* Busy-waits ns nanoseconds of the device's global timer: a kernel that does not come back. */
__global__ void gfault_spin_kernel(unsigned long long ns, int *d_sink)
{
    unsigned long long t0, t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
    if (d_sink)
        *d_sink = (int)(t - t0);
}

extern "C" int gfault_kernel(enum gfault_kind kind, int spin_ms, char *msg)
{
    cudaStream_t st = NULL;
    cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);

    if (e == cudaSuccess) {
        switch (kind) {
        case GFAULT_ILLEGAL:
            gfault_illegal_kernel<<<1, 32, 0, st>>>(reinterpret_cast<int *>(static_cast<uintptr_t>(0x10)));
            break;
        case GFAULT_TRAP:
            gfault_trap_kernel<<<1, 1, 0, st>>>();
            break;
        case GFAULT_ASSERT:
            gfault_assert_kernel<<<1, 1, 0, st>>>(1);
            break;
        case GFAULT_SPIN:
            gfault_spin_kernel<<<1, 1, 0, st>>>((unsigned long long)spin_ms * 1000000ull, NULL);
            break;
        default:
            break;
        }
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(st);
        cudaStreamDestroy(st);
    }
    edged_fail(msg, 0, "%s", e == cudaSuccess ? "no error" : cudaGetErrorString(e));
    return (int)e;
}

struct gfault_hog {
    void *d_piece[GFAULT_HOG_PIECES];
    int n;
};

extern "C" void *gfault_hog(size_t leave, size_t *taken)
{
    struct gfault_hog *h = (struct gfault_hog *)calloc(1, sizeof(*h));
    size_t free_b = 0, total_b = 0, piece;

    *taken = 0;
    if (!h || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        free(h);
        return NULL;
    }
    /* Halve the request on each failure: ends with every piece of at least 1 MiB taken. */
    for (piece = free_b; piece >= GFAULT_HOG_MIN && h->n < GFAULT_HOG_PIECES;) {
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || free_b <= leave + GFAULT_HOG_MIN)
            break;
        piece = piece > free_b - leave ? free_b - leave : piece;
        if (cudaMalloc(&h->d_piece[h->n], piece) == cudaSuccess) {
            h->n++;
            *taken += piece;
        } else {
            cudaGetLastError();
            piece /= 2;
        }
    }
    return h;
}

extern "C" void gfault_release(void *hog)
{
    struct gfault_hog *h = (struct gfault_hog *)hog;

    if (!h)
        return;
    for (int i = 0; i < h->n; i++)
        cudaFree(h->d_piece[i]);
    free(h);
}

#else
typedef int gfault_release_build_is_empty;
#endif
