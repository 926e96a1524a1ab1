/* variant.h — the convolution implementations a request can pick, CPU and GPU. */
#ifndef EDGED_VARIANT_H
#define EDGED_VARIANT_H

#ifdef __cplusplus
extern "C" {
#endif

enum variant {
    VARIANT_AUTO,           /* the fastest available for the case */
    VARIANT_CPU_SERIAL,     /* the serial reference loops: the oracle */
    VARIANT_CPU,            /* threaded CPU backend */
    VARIANT_NAIVE,          /* GPU from here on */
    VARIANT_CONSTANT,
    VARIANT_SHARED,
    VARIANT_SHARED_CONSTANT,
    VARIANT_SHARED_HALO,
    VARIANT_CACHED,
    VARIANT_SEPARABLE,
    VARIANT_TILED,
    VARIANT_TEXTURE,
    VARIANT_TEXTURE2D,
    VARIANT_FAST, /* production path: fused separable / register-blocked direct, fused u8 edge */
    VARIANT_COUNT
};

#define VARIANT_FIRST_GPU VARIANT_NAIVE
#define VARIANT_DEFAULT_BLOCK 16

const char *variant_name(enum variant v);
const char *variant_description(enum variant v);
/* Returns the variant or -1 when the name is unknown. */
int variant_from_name(const char *name);
static inline int variant_is_gpu(enum variant v) { return v >= VARIANT_FIRST_GPU && v < VARIANT_COUNT; }
/* Block sides the GPU variants accept: 8, 16, 24, 32. */
static inline int variant_block_ok(int b) { return b == 8 || b == 16 || b == 24 || b == 32; }

#ifdef __cplusplus
}
#endif
#endif
