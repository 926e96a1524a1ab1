/* engine.c — dispatch of a plan to cpu_serial, cpu or a GPU variant. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu.h"
#include "cpu_serial.h"
#include "clock.h"
#include "errors.h"
#include "gconv.h"

struct engine {
    struct gconv_ctx *gpu; /* NULL on the CPU backend */
    int threads;
    char device[160];
};

int engine_open(struct engine **out, enum backend want, int streams, int threads, char *err)
{
    struct engine *e = calloc(1, sizeof(*e));
    int rc = 0;

    *out = NULL;
    if (!e)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the engine");
    e->threads = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (e->threads < 1)
        e->threads = 1;
    if (want != BACKEND_CPU) {
        rc = gconv_open(&e->gpu, 0, streams, err);
        if (rc < 0 && want == BACKEND_GPU) {
            free(e);
            return rc;
        }
    }
    if (e->gpu)
        snprintf(e->device, sizeof(e->device), "%s", gconv_get_info(e->gpu)->name);
    else
        snprintf(e->device, sizeof(e->device), "cpu (%d threads)", e->threads);
    *out = e;
    return 0;
}

void engine_close(struct engine *e)
{
    if (!e)
        return;
    gconv_close(e->gpu);
    free(e);
}

int engine_has_gpu(const struct engine *e) { return e->gpu != NULL; }
const char *engine_device(const struct engine *e) { return e->device; }
struct gconv_ctx *engine_gpu(struct engine *e) { return e->gpu; }
int engine_threads(const struct engine *e) { return e->threads; }

/* auto = fast wherever fast can serve the case (on the H100 that is every case: fast's only limit
 * is shared memory per block, 166 KiB for a rank-1 63x63 tile of 227). `edged bench --compare` on
 * the GPU host (H100, 8192², kernel times, 2026-11-21) found fast faster than the best seed variant
 * in every case measured: gaussian taps k=3 0.228 ms vs tiled 0.316, k=7 0.255 vs separable 0.628,
 * k=31 0.416 vs separable 1.098, k=63 0.825 vs separable 1.940; full-rank taps k=3 0.239 vs tiled
 * 0.320, k=11 0.462 vs tiled 2.144, k=31 2.54 vs tiled 16.59; the u8 edge job 0.106 ms vs tiled's
 * pipeline 1.30 (gray) and 0.189 vs 1.30 (RGB). Where fast cannot serve (a GPU with less opt-in
 * shared memory): the seed variant the bench measured fastest, separable passes for rank-1 taps
 * from 7x7 up, else the adaptive tiled kernel; cpu without a GPU. */
enum variant engine_pick(const struct engine *e, const struct filter_plan *plan, int w, int h)
{
    char err[EDGED_ERR_LEN];
    int sep = 1;

    if (!e->gpu)
        return VARIANT_CPU;
    if (gconv_check(e->gpu, plan, w, h, VARIANT_FAST, VARIANT_DEFAULT_BLOCK, err) == 0)
        return VARIANT_FAST;
    for (int i = 0; i < plan->nconv; i++) {
        const struct kernel2d *k = &plan->conv[i];
        sep = sep && k->separable && (k->rows >= 7 || k->cols >= 7);
    }
    if (sep && gconv_check(e->gpu, plan, w, h, VARIANT_SEPARABLE, VARIANT_DEFAULT_BLOCK, err) == 0)
        return VARIANT_SEPARABLE;
    if (gconv_check(e->gpu, plan, w, h, VARIANT_TILED, VARIANT_DEFAULT_BLOCK, err) == 0)
        return VARIANT_TILED;
    return VARIANT_NAIVE;
}

static int run_gpu(struct engine *e, const struct img *in, const struct filter_plan *plan, enum variant v,
                   int block, struct img *out, struct engine_times *t, char *err)
{
    struct gconv_times gt = {0};
    int rc;

    if (!e->gpu)
        return edged_fail(err, EDGED_E_NO_CUDA, "variant %s needs a GPU: %s", variant_name(v),
                          EDGED_GPU ? "no CUDA device is in use" : "built without CUDA");
    if ((rc = img_alloc(out, in->w, in->h, plan->out_ch, err)) < 0)
        return rc;
    rc = gconv_run(e->gpu, 0, in, plan, v, block, out, NULL, &gt, err);
    if (rc < 0) {
        img_free(out);
        return rc;
    }
    t->upload = gt.upload_ms;
    t->kernel = gt.kernel_ms;
    t->download = gt.download_ms;
    return 0;
}

int engine_run(struct engine *e, const struct img *in, const struct filter_plan *plan, enum variant v,
               int block, struct img *out, enum variant *used, struct engine_times *t, char *err)
{
    double t0;
    int rc;

    *t = (struct engine_times){0};
    if (v == VARIANT_AUTO)
        v = engine_pick(e, plan, in->w, in->h);
    *used = v;
    if (variant_is_gpu(v))
        return run_gpu(e, in, plan, v, block, out, t, err);
    t0 = clock_ms();
    if (v == VARIANT_CPU_SERIAL)
        rc = cpu_serial_run(in, plan, out, err);
    else
        rc = cpu_run(in, plan, out, e->threads, err);
    t->kernel = clock_ms() - t0;
    return rc;
}
