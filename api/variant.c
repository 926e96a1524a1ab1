/* variant.c — names and one-line descriptions of the variants. */
#include "variant.h"

#include <string.h>

static const struct {
    const char *name, *desc;
} variant_rows[VARIANT_COUNT] = {
    [VARIANT_AUTO] = {"auto", "fastest available variant for the case (GPU when present, else cpu)"},
    [VARIANT_CPU_SERIAL] = {"cpu_serial", "serial CPU loops (Trento Algorithm 1): the reference"},
    [VARIANT_CPU] = {"cpu", "threaded CPU backend: row bands, separable as two passes"},
    [VARIANT_NAIVE] = {"naive", "one thread per output pixel, image and taps in global memory"},
    [VARIANT_CONSTANT] = {"constant", "as naive, taps in __constant__ memory"},
    [VARIANT_SHARED] = {"shared", "input-tile blocks, tile in shared memory, taps in global memory"},
    [VARIANT_SHARED_CONSTANT] = {"shared_constant", "PMPP ch.7: input-tile blocks, shared tile, constant taps"},
    [VARIANT_SHARED_HALO] = {"shared_halo", "output-tile blocks, each thread loads several pixels incl. halo"},
    [VARIANT_CACHED] = {"cached", "output-tile blocks, interior from shared, halo via L1/L2 (PMPP 7.5)"},
    [VARIANT_SEPARABLE] = {"separable", "row pass then column pass, rank-1 filters only"},
    [VARIANT_TILED] = {"tiled", "adaptive 1xT tiling, T chosen from shared memory and filter size"},
    [VARIANT_TEXTURE] = {"texture", "image read through a 1-D texture object (tex1Dfetch)"},
    [VARIANT_TEXTURE2D] = {"texture2d", "image read through a 2-D texture object with border addressing"},
    [VARIANT_FAST] = {"fast", "production path: rank-1 taps in one fused pass, others register-blocked; "
                              "edge filter in one pass over the u8 image"},
};

const char *variant_name(enum variant v) { return v < VARIANT_COUNT ? variant_rows[v].name : "?"; }
const char *variant_description(enum variant v) { return v < VARIANT_COUNT ? variant_rows[v].desc : "?"; }

int variant_from_name(const char *name)
{
    for (int i = 0; name && i < VARIANT_COUNT; i++)
        if (strcmp(variant_rows[i].name, name) == 0)
            return i;
    return -1;
}
