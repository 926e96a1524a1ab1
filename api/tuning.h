/* tuning.h — advanced knobs that choose between equivalent implementations (kernel shapes, strip
 * heights, SIMD width). Results never depend on them; the bench compares them in one run. */
#ifndef EDGED_TUNING_H
#define EDGED_TUNING_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CPU inner-loop width caps (cpu_simd). */
enum tuning_simd { TUNING_SIMD_BEST, TUNING_SIMD_SSE, TUNING_SIMD_AVX2 };

struct edged_tuning {
    int edge_prefetch;   /* fused edge kernel: 1 = prefetch ring, 0 = without */
    int edge_px;         /* fused edge kernel, gray: pixels per lane (8, or 4) */
    int edge_sy;         /* fused edge kernel: output rows per warp of the tall strips */
    int edge_sy_tail;    /* fused edge kernel: output rows per warp of the tail strips */
    int edge_tail;       /* fused edge kernel: tail strips as % of one wave (0: no tail) */
    int sep_band;        /* fused separable kernel: band rows (0: derived from the SM count) */
    int sep_tail;        /* fused separable kernel: tail band rows (0: no tail) */
    int sep_tail_pct;    /* fused separable kernel: tail blocks as % of one round */
    int sep_bulk;        /* fused separable kernel: 1 = bulk copies stage rows on sm_90 */
    int fast_stream;     /* fast: 1 = streaming kernel for small taps, 0 = tiles only */
    int fast_stream_big; /* fast: 1 = streaming kernel also for full-rank 7x7 and 9x9 */
    int fft_tile;        /* fft: tile side (0: the cost model picks) */
    int fft_chunk_mb;    /* fft: MiB of tile spectra per cuFFT call */
    int fft_fused;       /* fft: 1 = the fused tile kernel where it applies (2: one block per SM), 0 = cuFFT only */
    int cpu_simd;        /* CPU backend: enum tuning_simd */
    int inflate_seg;     /* device inflate: 1 = candidates and chain blocks decoded in segments, 0 = one thread each */
};

/* One knob: its environment name, field, default, accepted range and meaning. An enumerated knob
 * (names != NULL) takes one of the names, stored as its index. */
struct tuning_knob {
    const char *env;
    size_t offset;
    int dflt, min, max;
    const char *const *names;
    const char *help;
};

extern const struct tuning_knob tuning_knobs[];
extern const int tuning_knob_count;

/* The defaults of every knob. */
void tuning_defaults(struct edged_tuning *t);
/* Sets the knob named env (e.g. "EDGED_SEP_BAND") in t from its text value. Returns 0, or
 * EDGED_E_PARAM with err naming the knob and its accepted values (err: EDGED_ERR_LEN bytes). */
int tuning_parse(struct edged_tuning *t, const char *env, const char *value, char *err);
/* The knobs in force for this process: the defaults until tuning_set. Set before any work starts
 * (configuration, or a test between runs); readers never see a half-written struct because
 * nothing runs while it is set. */
const struct edged_tuning *tuning(void);
void tuning_set(const struct edged_tuning *t);

#ifdef __cplusplus
}
#endif
#endif
