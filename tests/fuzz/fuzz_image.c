/* fuzz_image.c — libFuzzer target: the input path for JPEG and WebP (imageio_sniff, the JPEG and
 * WebP header peeks, the size limits, the TurboJPEG and libwebp decoders, orientation) on arbitrary
 * bytes. Oracles beyond "no crash, no leak, no UB": only documented errors and never a partial
 * image; a decode that succeeds has the size and channels the peek announced (sides swapped for
 * orientations 5..8), and jpegio_orientation agrees with the peek. */
#include <stdint.h>
#include <stdlib.h>

#include "errors.h"
#include "codec/image_io.h"

/* Small limits keep each run fast and far below libFuzzer's RSS cap. */
#define FUZZ_MAX_SIDE 4096u
#define FUZZ_MAX_PIXELS (1u << 20)

static int documented(int rc)
{
    return rc == EDGED_E_NOT_PNG || rc == EDGED_E_BAD_PNG || rc == EDGED_E_BAD_IMAGE ||
           rc == EDGED_E_IMAGE_TOO_LARGE || rc == EDGED_E_NOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct png_limits lim = {FUZZ_MAX_SIDE, FUZZ_MAX_PIXELS, (size_t)1 << 20};
    struct imageio_head head;
    struct img im = {0};
    char err[EDGED_ERR_LEN];
    int rc, o = jpegio_orientation(data, size);

    (void)jpegio_complete(data, size); /* reads at most size bytes (ASan checks) */
    if (o < 1 || o > 8)
        abort();
    if ((rc = imageio_peek(data, size, &lim, &head, err)) != 0) {
        if (!documented(rc))
            abort();
        return 0;
    }
    if (head.fmt == IMAGEIO_PNG)
        return 0; /* fuzz_png's ground */
    if (head.fmt == IMAGEIO_JPEG && head.orientation != o)
        abort();
    rc = imageio_decode(data, size, &lim, &head, size & 1, &im, err);
    if (rc != 0) {
        if (!documented(rc) || im.px)
            abort();
        return 0;
    }
    int swap = (size & 1) && head.orientation >= 5;
    if (im.ch != head.ch || im.w != (swap ? head.h : head.w) || im.h != (swap ? head.w : head.h))
        abort();
    img_free(&im);
    return 0;
}
