/* gconv_jpeg_head.cu — what nvJPEG reads in a JPEG's headers (size, channels, whether the hardware
 * engine takes it), for the GPU worker's decodes and for the probe that the request threads call
 * before a JPEG job is queued, so that the worker's one thread need not read them. NVJPEG=1 builds
 * only. */
#include <pthread.h>
#include <string.h>

#include "clock.h"
#include "gconv_jpeg_internal.h"

/* Parse streams the probe keeps between calls (more are made while more threads read at once). */
#define PROBE_KEEP 64

struct gconv_jpeg_probe {
    nvjpegHandle_t sw, hw;
    pthread_mutex_t mu;
    nvjpegJpegStream_t idle[PROBE_KEEP]; /* streams of hw */
    int nidle;
};

int gjpeg_read_head(nvjpegHandle_t sw, nvjpegHandle_t hw, nvjpegJpegStream_t parse, const uint8_t *data,
                    size_t len, struct gconv_jpeg_head *head, double *check_ms, char *err)
{
    int ncomp = 0, ws[NVJPEG_MAX_COMPONENT], hs[NVJPEG_MAX_COMPONENT], unsupported = 1;
    nvjpegChromaSubsampling_t css;
    nvjpegStatus_t st = nvjpegGetImageInfo(sw, data, len, &ncomp, &css, ws, hs);
    double t0;

    memset(head, 0, sizeof(*head));
    if (st != NVJPEG_STATUS_SUCCESS)
        return edged_fail(err, GCONV_E_JPEG_REFUSED, "nvjpegGetImageInfo: %s", gjpeg_status_name(st));
    if (!(ncomp == 1 || (ncomp == 3 && css != NVJPEG_CSS_UNKNOWN)) || ws[0] < 1 || hs[0] < 1)
        return edged_fail(err, GCONV_E_JPEG_REFUSED, "nvJPEG takes 1 or 3 components, not %d", ncomp);
    head->w = ws[0], head->h = hs[0], head->ch = ncomp == 1 || css == NVJPEG_CSS_GRAY ? 1 : 3;
    /* the engine's own check: baseline, one scan, no 4:1:0 or 4:1:1 (0 means supported); it needs
     * the headers only, not a walk of the whole scan */
    t0 = clock_ms();
    head->engine =
        hw && parse && nvjpegJpegStreamParseHeader(hw, data, len, parse) == NVJPEG_STATUS_SUCCESS &&
        nvjpegDecodeBatchedSupported(hw, parse, &unsupported) == NVJPEG_STATUS_SUCCESS && unsupported == 0;
    if (check_ms)
        *check_ms += clock_ms() - t0;
    return 0;
}

/* ---- the probe ---- */

void gconv_jpeg_probe_close(struct gconv_jpeg_probe *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nidle; i++)
        nvjpegJpegStreamDestroy(p->idle[i]);
    if (p->hw)
        nvjpegDestroy(p->hw);
    if (p->sw)
        nvjpegDestroy(p->sw);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int gconv_jpeg_probe_open(struct gconv_jpeg_probe **out, int device, char *err)
{
    struct gconv_jpeg_probe *p = (struct gconv_jpeg_probe *)calloc(1, sizeof(*p));
    nvjpegStatus_t st;
    int prev = 0;

    *out = NULL;
    if (!p)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate the JPEG header probe");
    pthread_mutex_init(&p->mu, NULL);
    /* the engine's handle answers for this device's engine; the caller's device stays current */
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
        cudaGetLastError();
        gconv_jpeg_probe_close(p);
        return edged_fail(err, EDGED_E_NO_CUDA, "the JPEG header probe cannot use CUDA device %d", device);
    }
    if ((st = nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &p->sw)) != NVJPEG_STATUS_SUCCESS) {
        p->sw = NULL;
        cudaSetDevice(prev);
        gconv_jpeg_probe_close(p);
        return edged_fail(err, GCONV_E_JPEG_REFUSED, "nvjpegCreateEx: %s", gjpeg_status_name(st));
    }
    if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &p->hw) != NVJPEG_STATUS_SUCCESS)
        p->hw = NULL; /* no engine: every probe answers engine 0 */
    cudaSetDevice(prev);
    *out = p;
    return 0;
}

/* A parse stream of the engine's handle for one call: an idle one, or a new one. */
static nvjpegJpegStream_t probe_take(struct gconv_jpeg_probe *p)
{
    nvjpegJpegStream_t s = NULL;

    pthread_mutex_lock(&p->mu);
    if (p->nidle > 0)
        s = p->idle[--p->nidle];
    pthread_mutex_unlock(&p->mu);
    if (!s && nvjpegJpegStreamCreate(p->hw, &s) != NVJPEG_STATUS_SUCCESS)
        s = NULL;
    return s;
}

static void probe_give(struct gconv_jpeg_probe *p, nvjpegJpegStream_t s)
{
    pthread_mutex_lock(&p->mu);
    if (p->nidle < PROBE_KEEP) {
        p->idle[p->nidle++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    if (s)
        nvjpegJpegStreamDestroy(s);
}

int gconv_jpeg_probe(struct gconv_jpeg_probe *p, const uint8_t *data, size_t len,
                     struct gconv_jpeg_head *head, char *err)
{
    nvjpegJpegStream_t s = NULL;
    int rc;

    if (!p || !data)
        return edged_fail(err, EDGED_E_PARAM, "no JPEG header probe or no data");
    if (p->hw && !(s = probe_take(p)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot make an nvJPEG parse stream");
    rc = gjpeg_read_head(p->sw, p->hw, s, data, len, head, NULL, err);
    if (s)
        probe_give(p, s);
    return rc;
}
