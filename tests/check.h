/* check.h — the tiny test harness every C test program uses: CHECK, SKIP and the summary line. */
#ifndef EDGED_CHECK_H
#define EDGED_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "errors.h"
#include "tuning.h"

static int check_passed, check_failed, check_skipped;

/* Counts one assertion; on failure prints where and the formatted reason. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_passed++;                                                                        \
        } else {                                                                                   \
            check_failed++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* Counts a case that could not run here (no GPU, no NPP), with the reason. */
#define SKIP(...)                                                                                  \
    do {                                                                                           \
        check_skipped++;                                                                           \
        fprintf(stderr, "SKIP: ");                                                                 \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
    } while (0)

/* Prints "N passed, N failed[, N skipped]" and returns main's exit status. */
static inline int check_summary(void)
{
    fflush(stderr);
    if (check_skipped)
        printf("%d passed, %d failed, %d skipped\n", check_passed, check_failed, check_skipped);
    else
        printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

/* Sets one tuning knob (its EDGED_* name, its text value) for the runs that follow, as the
 * configuration would; check_knobs_reset puts every knob back to its default. */
static inline void check_knob(const char *env, const char *value)
{
    struct edged_tuning t = *tuning();
    char err[EDGED_ERR_LEN];

    CHECK(tuning_parse(&t, env, value, err) == 0, "knob %s=%s: %s", env, value, err);
    tuning_set(&t);
}

static inline void check_knobs_reset(void)
{
    struct edged_tuning t;

    tuning_defaults(&t);
    tuning_set(&t);
}

/* The tests' random numbers: xorshift32, the same sequence for a seed on every libc and every
 * run. check_rng_seed starts a sequence (typically with check_seed()); the state is never 0. */
static inline unsigned *check_rng_state(void)
{
    static unsigned state = 1u;
    return &state;
}

static inline void check_rng_seed(unsigned seed)
{
    *check_rng_state() = seed | 1u;
}

static inline unsigned check_rng(void)
{
    unsigned *s = check_rng_state();

    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Uniform in [lo, hi). */
static inline float check_rng_float(float lo, float hi)
{
    return lo + (hi - lo) * (float)(check_rng() >> 8) / 16777216.0f;
}

/* An odd number in [lo, hi], lo odd. */
static inline int check_rng_odd(int lo, int hi)
{
    return lo + 2 * (int)(check_rng() % (unsigned)((hi - lo) / 2 + 1));
}

/* Seed from EDGED_SEED or the clock, printed so a failing run can be repeated. */
static inline unsigned check_seed(void)
{
    const char *s = getenv("EDGED_SEED");
    unsigned seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL);
    printf("seed %u (repeat with EDGED_SEED=%u)\n", seed, seed);
    return seed;
}

/* Seeds the sequence from check_seed (printed) and returns that seed. */
static inline unsigned check_rng_init(void)
{
    unsigned seed = check_seed();

    check_rng_seed(seed);
    return seed;
}

#endif
