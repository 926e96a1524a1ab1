/* fault.h — debug-only fault injection into the GPU worker (built with -DEDGED_DEBUG=1, `make
 * debug`; in other builds these are empty inline functions). EDGED_FAULT=illegal|trap|assert|spin
 * |oom makes GPU job number EDGED_FAULT_AFTER (default 1) fault: illegal/trap/assert poison the
 * CUDA context right after that job was submitted, spin runs a kernel for EDGED_FAULT_SPIN_MS
 * (default 60000) that holds the worker as a stuck driver call would, oom takes the device's free
 * memory while that one job is submitted. EDGED_FAULT=internal fails CPU job number
 * EDGED_FAULT_AFTER with an internal error whose message holds internal details (a source
 * location and an address), to show that answers carry only the generic message. */
#ifndef EDGED_FAULT_H
#define EDGED_FAULT_H

#if defined(EDGED_DEBUG) && EDGED_DEBUG

/* Reads the environment once and logs what is armed. */
void fault_init(void);
/* Before a GPU worker submits a job on CUDA device `device`, by itself or in a batch: counts it;
 * for oom at the chosen job, returns the memory hog to release with fault_release right after the
 * submit (else NULL); for a kernel fault at the chosen job, arms fault_job_started. */
void *fault_before_submit(int device);
void fault_release(void *hog);
/* After the job (or its batch) is submitted and its stream slot is visible to the watchdog, on the
 * same thread: when armed, runs the faulting kernel on the thread's device (blocking, for spin)
 * and logs what CUDA said. */
void fault_job_started(void);
/* Before a CPU worker runs a job: EDGED_E_INTERNAL with a message at the chosen job, else 0. */
int fault_cpu_job(char *err);

#else

static inline void fault_init(void) {}
static inline void *fault_before_submit(int device)
{
    (void)device;
    return 0;
}
static inline void fault_release(void *hog) { (void)hog; }
static inline void fault_job_started(void) {}
static inline int fault_cpu_job(char *err)
{
    (void)err;
    return 0;
}

#endif
#endif
