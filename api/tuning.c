/* tuning.c — the table of advanced knobs and the process-wide values in force. */
#include "tuning.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

static const char *const simd_names[] = {"best", "sse", "avx2", NULL};

#define KNOB(env, field, dflt, min, max, names, help)                                                     \
    {env, offsetof(struct edged_tuning, field), dflt, min, max, names, help}

const struct tuning_knob tuning_knobs[] = {
    KNOB("EDGED_EDGE_PREFETCH", edge_prefetch, 1, 0, 1, NULL, "fused edge kernel with the prefetch ring (1) or without (0)"),
    KNOB("EDGED_EDGE_PX", edge_px, 8, 4, 8, NULL, "fused edge kernel, gray: pixels per lane, 8 or 4"),
    KNOB("EDGED_EDGE_SY", edge_sy, 48, 8, 65536, NULL, "fused edge kernel: rows per warp of the tall strips (rounded up to 8)"),
    KNOB("EDGED_EDGE_SY_TAIL", edge_sy_tail, 16, 8, 65536, NULL, "fused edge kernel: rows per warp of the tail strips (rounded up to 8)"),
    KNOB("EDGED_EDGE_TAIL", edge_tail, 100, 0, 10000, NULL, "fused edge kernel: tail strips as a percentage of one wave (0: none)"),
    KNOB("EDGED_SEP_BAND", sep_band, 0, 0, 65536, NULL, "fused separable kernel: band rows (0: from the SM count)"),
    KNOB("EDGED_SEP_TAIL", sep_tail, 128, 0, 65536, NULL, "fused separable kernel: tail band rows (0: no tail)"),
    KNOB("EDGED_SEP_TAIL_PCT", sep_tail_pct, 100, 0, 10000, NULL, "fused separable kernel: tail blocks as a percentage of one round"),
    KNOB("EDGED_SEP_BULK", sep_bulk, 1, 0, 1, NULL, "fused separable kernel: bulk copies stage rows on sm_90 (1) or not (0)"),
    KNOB("EDGED_FAST_STREAM", fast_stream, 1, 0, 1, NULL, "fast: streaming kernel for small taps (1) or tiles only (0)"),
    KNOB("EDGED_FAST_STREAM_BIG", fast_stream_big, 1, 0, 1, NULL, "fast: streaming kernel also for full-rank 7x7 and 9x9 (1) or not (0)"),
    KNOB("EDGED_FFT_TILE", fft_tile, 0, 0, 2048, NULL, "fft: tile side, a power of two 32..2048 (0: the cost model picks)"),
    KNOB("EDGED_FFT_CHUNK_MB", fft_chunk_mb, 256, 1, 1024, NULL, "fft: MiB of tile spectra per cuFFT call"),
    KNOB("EDGED_FFT_FUSED", fft_fused, 1, 0, 2, NULL, "fft: the fused 128x128 tile kernel where it applies (1; 2: its one-block-per-SM build) or cuFFT only (0)"),
    KNOB("EDGED_CPU_SIMD", cpu_simd, TUNING_SIMD_BEST, 0, 2, simd_names, "CPU backend: widest inner loop, best, avx2 or sse"),
    KNOB("EDGED_GPU_INFLATE_SEG", inflate_seg, 1, 0, 1, NULL, "device inflate: each candidate and block decoded in segments by a thread block (1) or by one thread (0)"),
};
const int tuning_knob_count = (int)(sizeof tuning_knobs / sizeof tuning_knobs[0]);

static struct edged_tuning current;
static pthread_once_t current_once = PTHREAD_ONCE_INIT;

static void current_init(void) { tuning_defaults(&current); }

static int *knob_field(struct edged_tuning *t, const struct tuning_knob *k)
{
    return (int *)((char *)t + k->offset);
}

void tuning_defaults(struct edged_tuning *t)
{
    for (int i = 0; i < tuning_knob_count; i++)
        *knob_field(t, &tuning_knobs[i]) = tuning_knobs[i].dflt;
}

static int parse_name(const struct tuning_knob *k, const char *value, int *out)
{
    for (int i = 0; k->names[i]; i++)
        if (strcmp(k->names[i], value) == 0)
            return *out = i, 0;
    return -1;
}

static int parse_int(const struct tuning_knob *k, const char *value, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < k->min || v > k->max)
        return -1;
    return *out = (int)v, 0;
}

int tuning_parse(struct edged_tuning *t, const char *env, const char *value, char *err)
{
    for (int i = 0; i < tuning_knob_count; i++) {
        const struct tuning_knob *k = &tuning_knobs[i];
        int v;

        if (strcmp(k->env, env) != 0)
            continue;
        if ((k->names ? parse_name(k, value, &v) : parse_int(k, value, &v)) == 0)
            return *knob_field(t, k) = v, 0;
        if (k->names)
            return edged_fail(err, EDGED_E_PARAM, "%s=%s: expected one of %s, %s, %s", env, value, k->names[0],
                              k->names[1], k->names[2]);
        return edged_fail(err, EDGED_E_PARAM, "%s=%s: expected an integer %d..%d", env, value, k->min, k->max);
    }
    return edged_fail(err, EDGED_E_PARAM, "%s is not a tuning knob", env);
}

const struct edged_tuning *tuning(void)
{
    pthread_once(&current_once, current_init);
    return &current;
}

void tuning_set(const struct edged_tuning *t)
{
    pthread_once(&current_once, current_init);
    current = *t;
}
