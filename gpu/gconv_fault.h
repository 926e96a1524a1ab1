/* gconv_fault.h — debug-only GPU faults for the fault tests (gconv_fault.cu; compiled to nothing
 * unless EDGED_DEBUG): kernels that touch an illegal address, trap, fail a device assert or spin,
 * and a hog that takes the device's free memory. They run on the calling thread's current device,
 * in its primary context, i.e. the context the service's GPU worker uses. */
#ifndef EDGED_GCONV_FAULT_H
#define EDGED_GCONV_FAULT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gfault_kind { GFAULT_NONE, GFAULT_ILLEGAL, GFAULT_TRAP, GFAULT_ASSERT, GFAULT_SPIN, GFAULT_OOM };

/* Launches the faulting kernel of kind (ILLEGAL, TRAP, ASSERT, SPIN) on a stream of its own and
 * waits for it: SPIN busy-waits spin_ms on the device (a stuck kernel; the caller is blocked as a
 * thread stuck in the driver would be). Returns the CUDA error code the wait reported (0 when
 * none) and its text in msg (EDGED_ERR_LEN bytes). Leaves the context poisoned on purpose. */
int gfault_kernel(enum gfault_kind kind, int spin_ms, char *msg);

/* Allocates all the free device memory but `leave` bytes (in pieces, so fragmentation does not
 * stop it); returns a handle for gfault_release (NULL when nothing could be taken) and the bytes
 * taken in *taken. */
void *gfault_hog(size_t leave, size_t *taken);
void gfault_release(void *hog);

#ifdef __cplusplus
}
#endif
#endif
