/* variant.h — the convolution implementations a request can pick, CPU and GPU. */
#ifndef EDGED_VARIANT_H
#define EDGED_VARIANT_H

#ifdef __cplusplus
extern "C" {
#endif

/* THE list of variants, in enum order: X(ID, name, description). The description is what the
 * variant does, in one plain sentence (GET /v1/variants, `edged variants`). The CPU ones come
 * first, then every GPU one from VARIANT_FIRST_GPU on. */
#define EDGED_VARIANTS(X)                                                                                    \
    X(AUTO, "auto", "picks the fastest variant available for the case: the GPU when present, else cpu")      \
    X(CPU_SERIAL, "cpu_serial",                                                                              \
      "serial CPU loops over every output pixel and tap: the reference the others are compared with")        \
    X(CPU, "cpu",                                                                                            \
      "threaded CPU backend: bands of rows on every core, rank-1 kernels as a row pass "                     \
      "then a column pass")                                                                                  \
    X(NAIVE, "naive",                                                                                        \
      "one GPU thread per output pixel, reading the image and the taps from global "                         \
      "memory")                                                                                              \
    X(CONSTANT, "constant", "as naive, with the taps in constant memory")                                    \
    X(SHARED, "shared",                                                                                      \
      "each block copies its input tile (outputs plus halo) into shared memory, one "                        \
      "pixel per thread; taps in global memory")                                                             \
    X(SHARED_CONSTANT, "shared_constant", "as shared, with the taps in constant memory")                     \
    X(SHARED_HALO, "shared_halo",                                                                            \
      "one thread per output pixel; each thread also loads some of the "                                     \
      "halo, so the whole input tile reaches shared memory")                                                 \
    X(CACHED, "cached",                                                                                      \
      "only the output tile goes to shared memory; halo pixels are read from global "                        \
      "memory through the L1/L2 caches")                                                                     \
    X(SEPARABLE, "separable", "rank-1 kernels only: a row pass, then a column pass")                         \
    X(TILED, "tiled",                                                                                        \
      "each block computes T output tiles side by side, T (1 to 8) chosen from the "                         \
      "shared memory and the kernel size")                                                                   \
    X(TEXTURE, "texture", "reads the image through a 1-D texture object (tex1Dfetch)")                       \
    X(TEXTURE2D, "texture2d",                                                                                \
      "reads the image through a 2-D texture object whose addressing mode "                                  \
      "applies the border")                                                                                  \
    X(FAST, "fast",                                                                                          \
      "the production path: rank-1 kernels in one fused pass, others with several outputs "                  \
      "per thread in registers; the edge filter in one pass over the 8-bit image")                         \
    X(FFT, "fft",                                                                                            \
      "cuFFT overlap-save: tiles of the image times the spectrum of the taps, for large full-rank kernels; " \
      "float error grows with the kernel (docs/semantics.md)")                                                \
    X(TF32X3, "tf32x3",                                                                                      \
      "tensor cores: each tap row as a Toeplitz matrix, TF32 products split in three (3xTF32) for "          \
      "float32 accuracy; taps up to 33 columns wide, for mid-size full-rank kernels")

enum variant {
#define VARIANT_ENUM(id, name, desc) VARIANT_##id,
    EDGED_VARIANTS(VARIANT_ENUM)
#undef VARIANT_ENUM
    VARIANT_COUNT
};

#define VARIANT_FIRST_GPU VARIANT_NAIVE
#define VARIANT_DEFAULT_BLOCK 16

const char *variant_name(enum variant v);
const char *variant_description(enum variant v);
/* Returns the variant or -1 when the name is unknown. */
int variant_from_name(const char *name);
static inline int variant_is_gpu(enum variant v) { return v >= VARIANT_FIRST_GPU && v < VARIANT_COUNT; }
/* 1 when this build has variant v: every one but fft, which needs cuFFT (EDGED_FFT). Why not when
 * 0, for listings: "built without cuFFT". */
int variant_built(enum variant v);
const char *variant_missing(enum variant v);
/* Block sides the GPU variants accept: 8, 16, 24, 32. */
static inline int variant_block_ok(int b) { return b == 8 || b == 16 || b == 24 || b == 32; }

#ifdef __cplusplus
}
#endif
#endif
