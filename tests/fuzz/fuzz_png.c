/* fuzz_png.c — libFuzzer target: pngio_decode (the server's PNG decode wrapper) on arbitrary bytes,
 * once as given and once with every chunk CRC recomputed (so that mutations reach the inflate,
 * filter and transform code instead of stopping at a CRC error). Oracles beyond "no crash, no
 * leak, no UB": only documented errors and never a partial image; a decode that succeeds agrees
 * with pngio_peek on the size and survives an encode + decode round trip bit for bit. The device
 * path's chunk walk (pngdec_layout, pngdec_layout_into) reads every file whose header pngio_peek
 * accepts within the limits: the two agree on the verdict, the layout and the stream's bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "fuzz_png_util.h"
#include "image.h"
#include "png_layout.h"
#include "codec/png_decode.h"
#include "codec/png_io.h"

/* Small limits keep each run fast and far below libFuzzer's RSS cap; the size checks are the
 * same code whatever the numbers. */
#define FUZZ_MAX_SIDE 4096u
#define FUZZ_MAX_PIXELS (2u << 20)

static void roundtrip(const struct img *im)
{
    struct img back = {0};
    uint8_t *png = NULL;
    size_t len = 0;
    char err[EDGED_ERR_LEN];

    if (pngio_encode(im, 1, 8, &png, &len, err) != 0)
        abort(); /* any decoded image must encode */
    if (pngio_decode(png, len, NULL, &back, err) != 0 || back.w != im->w || back.h != im->h || back.ch != im->ch)
        abort();
    for (int y = 0; y < im->h; y++)
        if (memcmp(back.px + (size_t)y * back.stride, im->px + (size_t)y * im->stride, (size_t)im->w * im->ch))
            abort();
    img_free(&back);
    free(png);
}

static void one(const uint8_t *data, size_t size);

/* The two layout readers on data (its header accepted): the same answer, layout and stream. */
static void layouts(const uint8_t *data, size_t size)
{
    struct png_layout a, b;
    const uint8_t *z = NULL;
    uint8_t *join = NULL, *dst = malloc(size ? size : 1);
    size_t za = 0, zb = 0;
    char err[EDGED_ERR_LEN];
    int ra, rb;

    if (!dst)
        return;
    ra = pngdec_layout(data, size, &a, &z, &za, &join, err);
    rb = pngdec_layout_into(data, size, &b, dst, &zb);
    if ((ra != 0 && ra != PNGDEC_DECLINED && ra != EDGED_E_NOMEM) || (ra == 0) != (rb == 0))
        abort();
    if (ra == 0 && (za != zb || za > size || memcmp(z, dst, za) != 0 || memcmp(&a, &b, sizeof(a)) != 0))
        abort();
    free(join);
    free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_png_both(data, size, one);
    return 0;
}

static void one(const uint8_t *data, size_t size)
{
    struct png_limits lim = {FUZZ_MAX_SIDE, FUZZ_MAX_PIXELS, (size_t)1 << 20};
    struct img im = {0};
    char err[EDGED_ERR_LEN];
    struct pngio_info pi;
    int rc, prc;

    prc = pngio_peek(data, size, &pi, err);
    if (prc == 0 && (uint32_t)pi.w <= FUZZ_MAX_SIDE && (uint32_t)pi.h <= FUZZ_MAX_SIDE &&
        (uint64_t)pi.w * pi.h <= FUZZ_MAX_PIXELS)
        layouts(data, size);
    rc = pngio_decode(data, size, &lim, &im, err);
    if (rc != 0) {
        if (rc != EDGED_E_NOT_PNG && rc != EDGED_E_BAD_PNG && rc != EDGED_E_IMAGE_TOO_LARGE && rc != EDGED_E_NOMEM)
            abort(); /* no other outcome is documented */
        if (im.px)
            abort(); /* never a partial image */
        return;
    }
    if (prc != 0 || pi.w != im.w || pi.h != im.h || im.ch < 1 || im.ch > 4 || (uint64_t)im.w * im.h > FUZZ_MAX_PIXELS)
        abort();
    if ((size_t)im.w * (size_t)im.h <= 65536)
        roundtrip(&im);
    img_free(&im);
}
