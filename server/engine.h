/* engine.h — runs a plan with a chosen variant on the CPU or the GPU, synchronously. */
#ifndef EDGED_ENGINE_H
#define EDGED_ENGINE_H

#include "filter.h"
#include "image.h"
#include "variant.h"

struct engine;

enum backend { BACKEND_AUTO, BACKEND_GPU, BACKEND_CPU };

/* Stage times of one run in milliseconds; GPU stages are CUDA-event times, the CPU compute
 * goes into kernel. */
struct engine_times {
    double upload, kernel, download;
};

/* Opens the backend: auto takes the GPU when one works, else the CPU; gpu fails without a device
 * (EDGED_E_NO_CUDA, message says why); cpu never touches CUDA. threads: CPU threads, 0 = cores. */
int engine_open(struct engine **out, enum backend want, int streams, int threads, char *err);
void engine_close(struct engine *e);
/* 1 when a GPU context is open. */
int engine_has_gpu(const struct engine *e);
/* Device name, or "cpu (N threads)". */
const char *engine_device(const struct engine *e);
struct gconv_ctx *engine_gpu(struct engine *e);
int engine_threads(const struct engine *e);

/* The variant `auto` resolves to for this plan and size. */
enum variant engine_pick(const struct engine *e, const struct filter_plan *plan, int w, int h);

/* Runs plan on in with variant v (auto resolved here; *used tells which ran) and block side (GPU
 * variants), allocating out (free with img_free). Returns 0 or a negative EDGED_E_* code. */
int engine_run(struct engine *e, const struct img *in, const struct filter_plan *plan, enum variant v,
               int block, struct img *out, enum variant *used, struct engine_times *t, char *err);

#endif
