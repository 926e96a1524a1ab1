/* clock.h — the monotonic millisecond clock every module times stages with (service, bench, tests). */
#ifndef EDGED_CLOCK_H
#define EDGED_CLOCK_H

#include <time.h>

static inline double clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The absolute CLOCK_MONOTONIC time `ms` from the clock_ms() epoch, for pthread_cond_timedwait
 * on a condition variable created with CLOCK_MONOTONIC. */
static inline struct timespec clock_abs(double ms)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ms / 1e3);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1e3) * 1e6);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (ts.tv_nsec < 0)
        ts.tv_nsec = 0;
    return ts;
}

#endif
