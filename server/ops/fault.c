/* fault.c — debug-only fault injection into the GPU worker (see fault.h); empty in other builds. */
#include "ops/fault.h"

#if defined(EDGED_DEBUG) && EDGED_DEBUG

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "ops/log.h"
#if EDGED_GPU
#include "gconv_fault.h"
#endif

#define FAULT_SPIN_MS_DEFAULT 60000
#define FAULT_OOM 5 /* GFAULT_OOM: the one fault that is not a kernel */
#define FAULT_OOM_LEAVE ((size_t)4 << 20) /* device bytes the hog leaves: less than any real job */

#define FAULT_INTERNAL 6 /* host side only: a CPU job fails with an internal error */

static const char *const fault_names[] = {"", "illegal", "trap", "assert", "spin", "oom", "internal"};

static struct {
    int kind; /* enum gfault_kind, or FAULT_INTERNAL */
    int device; /* CUDA device number that faults; -1 each device (at its own job number `after`) */
    long after;
    atomic_long count[64], cpu_count; /* GPU jobs by CUDA device number */
    int spin_ms;
} fault;
/* Set on a GPU worker's thread when fault_before_submit counted the chosen job (alone or in a
 * batch), until fault_job_started fires the fault. */
static _Thread_local int fault_armed;

static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if (!v || !*v)
        return dflt;
    n = strtol(v, &end, 10);
    return *end || n < lo || n > hi ? dflt : n;
}

void fault_init(void)
{
    const char *v = getenv("EDGED_FAULT");

    fault.kind = 0;
    for (int k = 1; v && k < (int)(sizeof(fault_names) / sizeof(fault_names[0])); k++)
        if (strcmp(v, fault_names[k]) == 0)
            fault.kind = k;
    fault.after = env_long("EDGED_FAULT_AFTER", 1, 1, 1000000);
    fault.device = (int)env_long("EDGED_FAULT_DEVICE", -1, -1, 63);
    fault.spin_ms = (int)env_long("EDGED_FAULT_SPIN_MS", FAULT_SPIN_MS_DEFAULT, 1, 3600000);
    for (int d = 0; d < 64; d++)
        atomic_store(&fault.count[d], 0);
    atomic_store(&fault.cpu_count, 0);
    if (v && *v && !fault.kind)
        log_event("warn", "fault", "EDGED_FAULT=%.32s unknown (illegal, trap, assert, spin, oom, internal): "
                                   "nothing armed", v);
    else if (fault.kind)
        log_event("warn", "fault", "DEBUG BUILD: fault '%s' armed for %s job %ld (GPU: of device %d; -1: of each)%s",
                  fault_names[fault.kind], fault.kind == FAULT_INTERNAL ? "CPU" : "GPU", fault.after, fault.device,
                  EDGED_GPU || fault.kind == FAULT_INTERNAL ? "" : " (but this build has no CUDA: it never fires)");
}

void *fault_before_submit(int device)
{
    void *hog = NULL;
    size_t taken = 0;

    long job;

    if (fault.kind == 0 || device < 0 || device >= 64 || (fault.device >= 0 && device != fault.device))
        return NULL;
    job = atomic_fetch_add(&fault.count[device], 1) + 1;
    if (job != fault.after)
        return NULL;
    if (fault.kind != FAULT_OOM) {
        fault_armed = 1;
        return NULL;
    }
#if EDGED_GPU
    hog = gfault_hog(FAULT_OOM_LEAVE, &taken);
#else
    (void)FAULT_OOM_LEAVE;
#endif
    log_event("warn", "fault", "injecting oom at GPU job %ld of device %d: %zu MiB of device memory taken",
              job, device, taken >> 20);
    return hog;
}

void fault_release(void *hog)
{
#if EDGED_GPU
    gfault_release(hog);
#else
    (void)hog;
#endif
}

void fault_job_started(void)
{
    char msg[EDGED_ERR_LEN] = "no CUDA in this build";
    int e = 0;

    if (!fault_armed)
        return;
    fault_armed = 0;
    log_event("warn", "fault", "injecting %s after GPU job %ld", fault_names[fault.kind], fault.after);
#if EDGED_GPU
    e = gfault_kernel((enum gfault_kind)fault.kind, fault.spin_ms, msg);
#endif
    log_event("warn", "fault", "injected %s: CUDA reported %d (%s)", fault_names[fault.kind], e, msg);
}

int fault_cpu_job(char *err)
{
    static const char detail[] = "secret";

    if (fault.kind != FAULT_INTERNAL || atomic_fetch_add(&fault.cpu_count, 1) + 1 != fault.after)
        return 0;
    return edged_fail(err, EDGED_E_INTERNAL, "injected internal error at %s:%d, buffer %p", __FILE__, __LINE__,
                      (const void *)detail);
}

#else
typedef int fault_release_build_is_empty;
#endif
