/* batch.h — many images through one backend in one process: codec threads read and decode inputs
 * ahead, the service's queue and workers run the jobs, the codec threads encode and write. */
#ifndef EDGED_BATCH_H
#define EDGED_BATCH_H

#include "params.h"

/* One image: the input file and the output file ("-": standard input / output), and the output's
 * format (PNG, JPEG or WEBP: resolved from --format or the name, never AUTO). */
struct batch_item {
    const char *in, *out;
    enum params_format format;
};

struct batch_config {
    const struct params *p; /* filter, variant, block, device, png level and bit depth of every image */
    int threads;            /* codec threads (each keeps BATCH_AHEAD images in flight); 0 = cores */
    int json;               /* one JSON line per image on stdout */
    int progress;           /* "N/M images, X img/s, ETA" on stderr: 1 always, 0 when it is a terminal */
    int several;            /* several images (or --out-dir): messages name the input file, and the
                               backend opens before any image is read; else as for one image */
};

/* Images each codec thread holds at once (decoded and waiting, or filtered and encoding). */
#define BATCH_AHEAD 2

/* Filters the n items. The backend is opened once: first thing for several images, after the
 * decode for one (so that a bad input is reported as such). An image that fails is reported on
 * stderr and the others go on; a failure of the backend itself (it cannot open, the GPU is lost)
 * stops the run. Each output is written whole or not at all.
 * Returns the exit status (commands.h): the worst of the images' (1 over 2 over 3 over 0). */
int batch_run(const struct batch_item *items, int n, const struct batch_config *c);

#endif
