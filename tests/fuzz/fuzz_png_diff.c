/* fuzz_png_diff.c — libFuzzer target: pngio_decode (the fast decoder, libpng for what it declines)
 * against pngio_decode_libpng (libpng alone) on the same bytes, once as given and once with every
 * chunk CRC recomputed (so that mutations reach the inflate and unfilter code). Aborts unless both
 * give the same image (w, h, ch, every sample) or both refuse with the same code and message.
 * One class is exempt: deflate streams that break RFC 1951 in ways libdeflate (1.14) reads and
 * zlib refuses (pngdec_deflate_lenient); no encoder writes them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "fuzz_png_util.h"
#include "image.h"
#include "codec/png_decode.h"
#include "codec/png_io.h"
#include "codec/png_unfilter.h"

/* Small limits keep each run fast; the decoders see the same ones. */
#define FUZZ_MAX_SIDE 4096u
#define FUZZ_MAX_PIXELS (2u << 20)

static void one(const uint8_t *data, size_t size)
{
    struct png_limits lim = {FUZZ_MAX_SIDE, FUZZ_MAX_PIXELS, (size_t)1 << 20};
    struct img fast = {0}, ref = {0};
    char err_fast[EDGED_ERR_LEN] = "", err_ref[EDGED_ERR_LEN] = "";
    int rc_fast = pngio_decode(data, size, &lim, &fast, err_fast);
    int rc_ref = pngio_decode_libpng(data, size, &lim, &ref, err_ref);

    if (rc_fast == 0 && rc_ref == EDGED_E_BAD_PNG && pngdec_deflate_lenient(err_ref)) {
        img_free(&fast);
        return;
    }
    if (rc_fast != rc_ref)
        abort();
    if (rc_fast == 0 ? !img_same(&fast, &ref) : strcmp(err_fast, err_ref) != 0 || fast.px || ref.px)
        abort();
    img_free(&fast);
    img_free(&ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pngunf_set_baseline((int)(size & 1)); /* half the inputs through the SSE2 row code */
    fuzz_png_both(data, size, one);
    return 0;
}
