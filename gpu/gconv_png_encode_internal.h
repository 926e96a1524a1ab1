/* gconv_png_encode_internal.h — what the PNG encoder's kernels share: the source image, the plan of
 * an encode's scratch, and the run coder's kernels (gconv_png_runs.cu). Device code only. */
#ifndef EDGED_GCONV_PNG_ENCODE_INTERNAL_H
#define EDGED_GCONV_PNG_ENCODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define GPNG_RUNS_THREADS 256
#define GPNG_LEVELS_THREADS 256

/* The u8 image on the device: rows pitch bytes apart; packed: a 1-bit map (w / 8 bytes a row,
 * leftmost pixel in the top bit) read as 0/255 samples. */
struct gpng_src {
    const uint8_t *d_px;
    size_t pitch;
    int w, h, ch, packed;
};

/* Where one encode's arrays live in the stream's scratch buffer. */
struct gpng_plan {
    size_t n, rb, chunk, slot, payload_bound;
    unsigned nchunks, hint;
    size_t raw, slots, hash, tok, work, len, adler, total, bytes; /* offsets */
    size_t multi, taken; /* offsets: the image's levels flag (0: two-level), 1 per chunk coded as runs */
};

/* Sets *multi when a sample of the 8-bit image s is neither 0 nor 255 (*multi is 0 before). */
__global__ void gpng_levels_kernel(struct gpng_src s, uint32_t *multi);

/* One block of GPNG_RUNS_THREADS per chunk: the chunks of a two-level map coded as runs where
 * defl_runs_take; taken[i] says which (gconv_png_runs.cu). */
__global__ void gpng_runs_kernel(uint8_t *d_base, struct gpng_plan p);

#endif
