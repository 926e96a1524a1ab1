/* fuzz_image.c — libFuzzer target: the input path for JPEG and WebP (imageio_sniff, the header
 * probe of every format as POST /v1/info runs it, the JPEG marker walk and scan count, the limits,
 * the libjpeg and libwebp decoders, orientation) on arbitrary bytes. Oracles beyond "no crash, no
 * leak, no UB": only documented errors and never a partial image; the probe and the peek agree (the
 * peek is the probe and the limits); a decode that succeeds has the size and channels the peek
 * announced (sides swapped for orientations 5..8), and jpegio_orientation agrees with the peek. */
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
    struct imageio_head head, probe;
    struct img im = {0};
    char err[EDGED_ERR_LEN];
    int rc, prc, o = jpegio_orientation(data, size);

    (void)jpegio_complete(data, size); /* reads at most size bytes (ASan checks) */
    if (o < 1 || o > 8)
        abort();
    prc = imageio_probe(data, size, &probe, err);
    if ((rc = imageio_peek(data, size, &lim, &head, err)) != 0) {
        if (!documented(rc) || (prc != 0 && prc != rc))
            abort();
        return 0;
    }
    if (prc != 0 || probe.w != head.w || probe.h != head.h || probe.ch != head.ch ||
        (head.fmt == IMAGEIO_JPEG && (head.jpeg.scans < 1 || head.jpeg.scans > JPEGIO_MAX_SCANS)))
        abort();
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
