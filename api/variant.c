/* variant.c — names and one-line descriptions of the variants. */
#include "variant.h"

#include <string.h>

#ifndef EDGED_FFT
#define EDGED_FFT 0
#endif

static const struct {
    const char *name, *desc;
} variant_rows[VARIANT_COUNT] = {
#define VARIANT_ROW(id, name, desc) {name, desc},
    EDGED_VARIANTS(VARIANT_ROW)
#undef VARIANT_ROW
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

int variant_built(enum variant v) { return v != VARIANT_FFT || EDGED_FFT; }

const char *variant_missing(enum variant v)
{
    return variant_built(v) ? NULL : "built without cuFFT";
}
