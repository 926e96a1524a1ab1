/* gconv_ctx.cu — the device context: device facts and limits, measured copy bandwidth, streams,
 * constant-memory slots, growing buffer pools, texture caches and CUDA error classification. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gconv_internal.h"
#include "gpinned.h"

#define BW_BYTES ((size_t)256 << 20) /* copy-bandwidth probe: 256 MiB read + 256 MiB written */
#define BW_REPS 5

/* Errors after which the CUDA context cannot be used again (the runtime keeps returning them). */
static int cuda_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorUnknown:
        return 1;
    default:
        return 0;
    }
}

/* Other errors are sticky too when the device keeps failing after the error was cleared. */
int gctx_fail(struct gconv_ctx *ctx, cudaError_t e, const char *what, char *err)
{
    const char *msg = cudaGetErrorString(e);

    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return edged_fail(err, EDGED_E_GPU_OOM, "%s: %s", what, msg);
    }
    if (!cuda_sticky(e)) {
        cudaGetLastError();
        if (cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess)
            return edged_fail(err, EDGED_E_INTERNAL, "%s: %s", what, msg);
    }
    __atomic_store_n(&ctx->dead, 1, __ATOMIC_SEQ_CST);
    return edged_fail(err, EDGED_E_GPU_FATAL, "%s: %s (sticky CUDA error: this GPU context is unusable)",
                      what, msg);
}

int gctx_enter(struct gconv_ctx *ctx, char *err)
{
    if (!ctx)
        return edged_fail(err, EDGED_E_NO_CUDA, "no GPU context");
    if (__atomic_load_n(&ctx->dead, __ATOMIC_SEQ_CST))
        return edged_fail(err, EDGED_E_GPU_FATAL, "the GPU context failed earlier and is unusable");
    cudaError_t e = cudaSetDevice(ctx->device);
    return e == cudaSuccess ? 0 : gctx_fail(ctx, e, "cudaSetDevice", err);
}

int conv_launched(struct conv_args *a, const char *what)
{
    a->cuerr = cudaGetLastError();
    if (a->cuerr == cudaSuccess)
        return 0;
    a->cuwhat = what;
    return GCONV_CUDA_FAILED;
}

int gctx_pitch(const struct gconv_ctx *ctx, int w)
{
    return div_up(w, ctx->pitch_align) * ctx->pitch_align;
}

size_t gctx_plane_stride(const struct gconv_ctx *ctx, int w, int h)
{
    size_t n = (size_t)gctx_pitch(ctx, w) * h;
    return (n + ctx->plane_align - 1) / ctx->plane_align * ctx->plane_align;
}

int gctx_slot_lock(struct gconv_ctx *ctx, int s, cudaError_t *e)
{
    int k = s % GCONV_CSLOTS;

    pthread_mutex_lock(&ctx->slot_mu[k]);
    if ((*e = cudaStreamWaitEvent(ctx->st[s].s, ctx->slot_ev[k], 0)) != cudaSuccess) {
        pthread_mutex_unlock(&ctx->slot_mu[k]);
        return GCONV_CUDA_FAILED;
    }
    return k;
}

void gctx_slot_unlock(struct gconv_ctx *ctx, int s, int used)
{
    int k = s % GCONV_CSLOTS;

    if (used)
        cudaEventRecord(ctx->slot_ev[k], ctx->st[s].s); /* a failure here surfaces at the next sync */
    pthread_mutex_unlock(&ctx->slot_mu[k]);
}

cudaError_t texcache_get(struct tex_cache *tc, cudaStream_t stream, const struct cudaResourceDesc *res,
                         const struct cudaTextureDesc *td, cudaTextureObject_t *obj)
{
    cudaError_t e;

    for (int i = 0; i < tc->n; i++)
        if (!memcmp(&tc->e[i].res, res, sizeof(*res)) && !memcmp(&tc->e[i].td, td, sizeof(*td))) {
            *obj = tc->e[i].obj;
            return cudaSuccess;
        }
    if (tc->n == GCONV_TEX_CACHE) {
        if ((e = cudaStreamSynchronize(stream)) != cudaSuccess)
            return e;
        texcache_clear(tc);
    }
    if ((e = cudaCreateTextureObject(obj, res, td, NULL)) != cudaSuccess)
        return e;
    tc->e[tc->n].res = *res;
    tc->e[tc->n].td = *td;
    tc->e[tc->n++].obj = *obj;
    return cudaSuccess;
}

void texcache_clear(struct tex_cache *tc)
{
    for (int i = 0; i < tc->n; i++)
        cudaDestroyTextureObject(tc->e[i].obj);
    tc->n = 0;
}

void gctx_free_device(struct gconv_ctx *ctx, void *p, size_t bytes)
{
    if (!p)
        return;
    cudaFree(p);
    __atomic_fetch_sub(&ctx->mem_used, bytes, __ATOMIC_SEQ_CST);
}

/* Capacity for a request of need bytes: at least 1.5x the old one, in whole MiB, so that slowly
 * growing images do not reallocate on every job. */
static size_t grow_cap(size_t cap, size_t need)
{
    size_t c = cap + cap / 2 > need ? cap + cap / 2 : need;
    return (c + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
}

cudaError_t gctx_grow_device(struct gconv_ctx *ctx, struct gstream *st, void **p, size_t *cap, size_t need)
{
    cudaError_t e;
    size_t c = grow_cap(*cap, need);

    if (need <= *cap)
        return cudaSuccess;
    if (st) { /* kernels or textures of the last job may still refer to the old buffer */
        if ((e = cudaStreamSynchronize(st->s)) != cudaSuccess)
            return e;
        texcache_clear(&st->tc);
    }
    gctx_free_device(ctx, *p, *cap);
    *p = NULL;
    *cap = 0;
    if ((e = cudaMalloc(p, c)) != cudaSuccess && c > need) /* retry without the head room */
        e = cudaMalloc(p, c = need);
    if (e != cudaSuccess) {
        *p = NULL;
        return e;
    }
    *cap = c;
    __atomic_fetch_add(&ctx->mem_used, c, __ATOMIC_SEQ_CST);
    return cudaSuccess;
}

cudaError_t gctx_grow_pinned(struct gconv_ctx *ctx, void **p, size_t *cap, size_t need)
{
    cudaError_t e;
    size_t c = grow_cap(*cap, need);

    (void)ctx;
    if (need <= *cap)
        return cudaSuccess;
    if (*p)
        cudaFreeHost(*p);
    *p = NULL;
    *cap = 0;
    if ((e = cudaHostAlloc(p, c, cudaHostAllocDefault)) != cudaSuccess) {
        *p = NULL;
        return e;
    }
    *cap = c;
    return cudaSuccess;
}

/* FP32 lanes per SM: 64 on sm_60, sm_70/75 and sm_80 (A100), 128 on sm_61, sm_86/87/89, sm_90
 * (H100) and later. */
static int fp32_lanes(int major, int minor)
{
    if (major == 6)
        return minor == 0 ? 64 : 128;
    if (major == 7 || (major == 8 && minor == 0))
        return 64;
    return 128;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static __global__ void k_hold(unsigned long long ns)
{
    unsigned long long t0, t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

cudaError_t gctx_hold(cudaStream_t s)
{
    k_hold<<<1, 1, 0, s>>>(GCTX_HOLD_NS);
    return cudaGetLastError();
}

long gctx_resident(const void *kernel, int threads, size_t smem)
{
    int dev = 0, sms = 0, nb = 0;

    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, threads, smem) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return (long)sms * nb;
}

int gctx_tail_split(int h, int across, long resident, long pct, int tall, int short_rows)
{
    long tail_rows;

    pct = pct < 0 ? 0 : pct > 1000 ? 1000 : pct;
    tail_rows = (resident * pct / 100 + across - 1) / across * short_rows;
    return h > tail_rows ? (int)((h - tail_rows) / tall * tall) : 0;
}

/* Median of BW_REPS device-to-device copies timed with events, counting bytes read + written.
 * Falls back to 64 MiB when 512 MiB cannot be had. Each copy waits behind gctx_hold, so that its
 * events time the copy and not the host's call before it (timing the call too read about 3 % low,
 * and so the memory floors derived from it 3 % high; figures in docs/perf/journal.md). */
static cudaError_t measure_copy(struct gconv_ctx *ctx, double *gbps)
{
    size_t n = BW_BYTES;
    char *d_buf = NULL;
    float ms[BW_REPS];
    cudaStream_t s = ctx->st[0].s;
    cudaError_t e;

    if (cudaMalloc((void **)&d_buf, 2 * n) != cudaSuccess) {
        cudaGetLastError();
        n = (size_t)64 << 20;
        if ((e = cudaMalloc((void **)&d_buf, 2 * n)) != cudaSuccess)
            return e;
    }
    if ((e = cudaMemsetAsync(d_buf, 1, 2 * n, s)) != cudaSuccess)
        goto out;
    for (int r = -1; r < BW_REPS; r++) {
        if ((e = gctx_hold(s)) != cudaSuccess || (e = cudaEventRecord(ctx->st[0].ev_start, s)) != cudaSuccess ||
            (e = cudaMemcpyAsync(d_buf + n, d_buf, n, cudaMemcpyDeviceToDevice, s)) != cudaSuccess ||
            (e = cudaEventRecord(ctx->st[0].ev_down, s)) != cudaSuccess ||
            (e = cudaEventSynchronize(ctx->st[0].ev_down)) != cudaSuccess)
            goto out;
        if (r >= 0 &&
            (e = cudaEventElapsedTime(&ms[r], ctx->st[0].ev_start, ctx->st[0].ev_down)) != cudaSuccess)
            goto out;
    }
    qsort(ms, BW_REPS, sizeof(ms[0]), cmp_float);
    *gbps = 2.0 * n / (ms[BW_REPS / 2] * 1e-3) / 1e9;
out:
    cudaFree(d_buf);
    return e;
}

static int attr(int *v, enum cudaDeviceAttr a, int dev)
{
    return cudaDeviceGetAttribute(v, a, dev) == cudaSuccess ? 0 : -1;
}

/* The facts of device dev that need no context, into *p and *info (copy_gbps stays 0: gconv_open
 * measures it). */
static cudaError_t read_info(int dev, struct cudaDeviceProp *p, struct gconv_info *info)
{
    int khz = 0;
    cudaError_t e;

    memset(info, 0, sizeof(*info));
    if ((e = cudaGetDeviceProperties(p, dev)) != cudaSuccess)
        return e;
    size_t len = strnlen(p->name, sizeof(p->name));
    len = len < sizeof(info->name) ? len : sizeof(info->name) - 1;
    memcpy(info->name, p->name, len);
    info->name[len] = '\0';
    info->cc_major = p->major;
    info->cc_minor = p->minor;
    info->sms = p->multiProcessorCount;
    info->global_mem = p->totalGlobalMem;
    info->l2_bytes = p->l2CacheSize;
    info->smem_per_block_optin = p->sharedMemPerBlockOptin;
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    /* cudaDeviceProp::clockRate is gone in CUDA 13: the attribute gives the peak clock in kHz. */
    if (attr(&khz, cudaDevAttrClockRate, dev) < 0)
        return cudaGetLastError();
    info->fp32_gflops = 2.0 * p->multiProcessorCount * fp32_lanes(p->major, p->minor) * (khz * 1e3) / 1e9;
    return cudaSuccess;
}

/* Device facts into ctx->info and ctx->lim. */
static cudaError_t read_device(struct gconv_ctx *ctx)
{
    struct cudaDeviceProp p;
    struct cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    int dev = ctx->device, tex_align = 0, tex_pitch = 0;
    cudaError_t e;

    if ((e = read_info(dev, &p, &ctx->info)) != cudaSuccess)
        return e;
    if (attr(&tex_align, cudaDevAttrTextureAlignment, dev) < 0 ||
        attr(&tex_pitch, cudaDevAttrTexturePitchAlignment, dev) < 0 ||
        attr(&ctx->lim.tex2d_w, cudaDevAttrMaxTexture2DLinearWidth, dev) < 0 ||
        attr(&ctx->lim.tex2d_h, cudaDevAttrMaxTexture2DLinearHeight, dev) < 0 ||
        attr(&ctx->lim.tex2d_pitch, cudaDevAttrMaxTexture2DLinearPitch, dev) < 0)
        return cudaGetLastError();
    if ((e = cudaDeviceGetTexture1DLinearMaxWidth(&ctx->lim.tex1d_max, &fd, dev)) != cudaSuccess)
        return e;
    ctx->lim.max_threads = p.maxThreadsPerBlock;
    ctx->lim.smem_block = p.sharedMemPerBlock;
    ctx->lim.smem_optin = p.sharedMemPerBlockOptin;
    ctx->lim.sms = p.multiProcessorCount;
    ctx->lim.tex_align = tex_align > 0 ? tex_align : 512;
    ctx->lim.tex_pitch_align = tex_pitch > 0 ? tex_pitch : 32;
    /* Rows 128 bytes apart (coalescing) or the texture pitch alignment if larger; planes 1 KiB
     * apart or the texture base alignment if larger, so every plane can back a texture. */
    ctx->pitch_align = (int)(ctx->lim.tex_pitch_align > 128 ? ctx->lim.tex_pitch_align : 128) / 4;
    ctx->plane_align = (ctx->lim.tex_align > 1024 ? ctx->lim.tex_align : 1024) / 4;
    return cudaSuccess;
}

/* Streams, events, the pinned and device taps areas. */
static cudaError_t open_streams(struct gconv_ctx *ctx)
{
    cudaError_t e;

    for (int i = 0; i < ctx->nstreams; i++) {
        struct gstream *st = &ctx->st[i];
        size_t cap = 0;
        if ((e = cudaStreamCreateWithFlags(&st->s, cudaStreamNonBlocking)) != cudaSuccess ||
            (e = cudaEventCreate(&st->ev_start)) != cudaSuccess ||
            (e = cudaEventCreate(&st->ev_up)) != cudaSuccess ||
            (e = cudaEventCreate(&st->ev_kern)) != cudaSuccess ||
            (e = cudaEventCreate(&st->ev_down)) != cudaSuccess ||
            (e = gctx_grow_pinned(ctx, (void **)&st->h_taps, &cap, sizeof(float) * GCONV_TAPS_FLOATS)) !=
                cudaSuccess)
            return e;
        cap = 0;
        if ((e = gctx_grow_pinned(ctx, (void **)&st->h_png_total, &cap, sizeof(uint64_t))) != cudaSuccess)
            return e;
        cap = 0;
        if ((e = gctx_grow_device(ctx, NULL, (void **)&st->d_taps, &cap,
                                  sizeof(float) * GCONV_TAPS_FLOATS)) != cudaSuccess)
            return e;
    }
    for (int k = 0; k < GCONV_CSLOTS; k++)
        if ((e = cudaEventCreateWithFlags(&ctx->slot_ev[k], cudaEventDisableTiming)) != cudaSuccess)
            return e;
    return cudaSuccess;
}

/* Why no device can be used, from cudaGetDeviceCount's error e (cudaSuccess: it counted none).
 * The runtime answers cudaErrorInsufficientDriver both when the driver is older than the runtime
 * and when there is no driver at all; cudaDriverGetVersion tells the two apart: it reports 0 when
 * no driver library could be loaded. Versions read as major * 1000 + minor * 10. */
static int open_no_device(cudaError_t e, char *err)
{
    int drv = 0, rt = 0;

    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cudaGetLastError();
    if (drv == 0 && (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice))
        return edged_fail(err, EDGED_E_NO_CUDA, "no usable CUDA device: no NVIDIA driver found");
    if (e == cudaErrorInsufficientDriver)
        return edged_fail(err, EDGED_E_NO_CUDA,
                          "no usable CUDA device: the NVIDIA driver supports CUDA %d.%d, this build needs %d.%d",
                          drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    if (e == cudaSuccess || e == cudaErrorNoDevice)
        return edged_fail(err, EDGED_E_NO_CUDA, "no usable CUDA device: none present");
    return edged_fail(err, EDGED_E_NO_CUDA, "no usable CUDA device: %s", cudaGetErrorString(e));
}

int gconv_device_count(void)
{
    int n = 0;

    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

/* 0 when CUDA device `device` exists, else EDGED_E_NO_CUDA saying why (no device usable, or how
 * many there are). */
static int device_exists(int device, char *err)
{
    int n = 0;
    cudaError_t e;

    if ((e = cudaGetDeviceCount(&n)) != cudaSuccess || n == 0)
        return open_no_device(e, err);
    if (device < 0 || device >= n)
        return edged_fail(err, EDGED_E_NO_CUDA, "CUDA device %d does not exist (%d present)", device, n);
    return 0;
}

int gconv_device_query(int device, struct gconv_info *out, char *err)
{
    struct cudaDeviceProp p;
    cudaError_t e;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = device_exists(device, err)) < 0)
        return rc;
    if ((e = read_info(device, &p, out)) != cudaSuccess) {
        cudaGetLastError();
        return edged_fail(err, EDGED_E_NO_CUDA, "querying CUDA device %d: %s", device, cudaGetErrorString(e));
    }
    return 0;
}

int gconv_open(struct gconv_ctx **out, int device, int streams, char *err)
{
    struct gconv_ctx *ctx = NULL;
    int rc;
    cudaError_t e;

    *out = NULL;
    if (streams < 1 || streams > GCONV_MAX_STREAMS)
        return edged_fail(err, EDGED_E_PARAM, "streams %d invalid: must be 1..%d", streams,
                          GCONV_MAX_STREAMS);
    if ((rc = device_exists(device, err)) < 0)
        return rc;
    if (!(ctx = (struct gconv_ctx *)calloc(1, sizeof(*ctx))))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory for the GPU context");
    ctx->device = device;
    ctx->nstreams = streams;
    for (int k = 0; k < GCONV_CSLOTS; k++)
        pthread_mutex_init(&ctx->slot_mu[k], NULL);
    ctx->slot_mu_ok = 1;
    if ((e = cudaSetDevice(device)) != cudaSuccess || (e = read_device(ctx)) != cudaSuccess ||
        (e = open_streams(ctx)) != cudaSuccess ||
        (e = measure_copy(ctx, &ctx->info.copy_gbps)) != cudaSuccess) {
        rc = e == cudaErrorMemoryAllocation ? EDGED_E_GPU_OOM : EDGED_E_NO_CUDA;
        edged_fail(err, rc, "opening CUDA device %d: %s", device, cudaGetErrorString(e));
        cudaGetLastError();
        gconv_close(ctx);
        return rc;
    }
    gpinned_bind(device); /* the pinned pool allocates in the first device's context */
    *out = ctx;
    return 0;
}

static void close_stream(struct gconv_ctx *ctx, struct gstream *st)
{
    if (st->s)
        cudaStreamSynchronize(st->s);
    texcache_clear(&st->tc);
    if (st->fft)
        ((struct gctx_owned *)st->fft)->release(st->fft);
    gctx_free_device(ctx, st->d_in8, st->d_in8_cap);
    gctx_free_device(ctx, st->d_out8, st->d_out8_cap);
    gctx_free_device(ctx, st->d_arena, st->d_arena_cap);
    gctx_free_device(ctx, st->d_png, st->d_png_cap);
    gctx_free_device(ctx, st->d_taps, sizeof(float) * GCONV_TAPS_FLOATS);
    if (st->h_in)
        cudaFreeHost(st->h_in);
    if (st->h_out)
        cudaFreeHost(st->h_out);
    if (st->h_taps)
        cudaFreeHost(st->h_taps);
    if (st->h_png)
        cudaFreeHost(st->h_png);
    if (st->h_png_total)
        cudaFreeHost(st->h_png_total);
    if (st->ev_start)
        cudaEventDestroy(st->ev_start);
    if (st->ev_up)
        cudaEventDestroy(st->ev_up);
    if (st->ev_kern)
        cudaEventDestroy(st->ev_kern);
    if (st->ev_down)
        cudaEventDestroy(st->ev_down);
    if (st->s)
        cudaStreamDestroy(st->s);
}

void gconv_close(struct gconv_ctx *ctx)
{
    if (!ctx)
        return;
    cudaSetDevice(ctx->device);
    if (ctx->jpeg_close)
        ctx->jpeg_close(ctx);
    if (ctx->png_close)
        ctx->png_close(ctx);
    for (int i = 0; i < ctx->nstreams; i++)
        close_stream(ctx, &ctx->st[i]);
    for (int k = 0; k < GCONV_CSLOTS; k++) {
        if (ctx->slot_ev[k])
            cudaEventDestroy(ctx->slot_ev[k]);
        if (ctx->slot_mu_ok)
            pthread_mutex_destroy(&ctx->slot_mu[k]);
    }
    free(ctx);
}

const struct gconv_info *gconv_get_info(const struct gconv_ctx *ctx)
{
    return ctx ? &ctx->info : NULL;
}
int gconv_stream_count(const struct gconv_ctx *ctx)
{
    return ctx ? ctx->nstreams : 0;
}

int gconv_is_dead(const struct gconv_ctx *ctx)
{
    return ctx ? __atomic_load_n(&ctx->dead, __ATOMIC_SEQ_CST) : 0;
}

size_t gconv_mem_used(const struct gconv_ctx *ctx)
{
    return ctx ? __atomic_load_n(&ctx->mem_used, __ATOMIC_SEQ_CST) + (ctx->png_mem ? ctx->png_mem(ctx) : 0) : 0;
}
