/* mock_pinned.c — the pinned pool's allocator for the worker mock (in place of
 * gpu/gpinned_host_stub.c): plain malloc while mock_pinned_on is set, so that gpu/gpinned.c's
 * process-wide pool gives buffers as it does with a device; NULL otherwise, as without one. */
#include <stdatomic.h>
#include <stdlib.h>

#include "gpinned.h"

atomic_int mock_pinned_on;

void gpinned_bind(int device)
{
    (void)device;
}

void *gpinned_host_alloc(size_t n)
{
    return atomic_load(&mock_pinned_on) ? malloc(n) : NULL;
}

void gpinned_host_release(void *p)
{
    free(p);
}
