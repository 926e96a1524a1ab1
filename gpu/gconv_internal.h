/* gconv_internal.h — what the gpu/ files share: the context layout, the launch arguments of the
 * variant launchers, the plan helpers of gconv_plan.cu, the CUDA error helpers and the device-side
 * sample loader. .cu files only. */
#ifndef EDGED_GCONV_INTERNAL_H
#define EDGED_GCONV_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "errors.h"
#include "gconv.h"
#include "pixel.h"
#include "tuning.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCONV_MAX_STREAMS 32
/* __constant__ tap slots in each constant-memory family (conv_global.cu, conv_shared.cu): 4 slots
 * of 63*63 floats are 63,504 bytes, just under the 64 KiB constant bank of a module. */
#define GCONV_CSLOTS 4
#define GCONV_TEX_CACHE 16                      /* texture objects kept per stream */
#define GCONV_TAPS_FLOATS (FILTER_PLAN_MAX_CONVS * FILTER_MAX_TAPS) /* taps area: conv[i] at i * FILTER_MAX_TAPS */

/* What the device allows, read once at open. */
struct gconv_limits {
    int max_threads;   /* threads per block */
    size_t smem_block; /* shared memory per block without opt-in */
    size_t smem_optin; /* with cudaFuncAttributeMaxDynamicSharedMemorySize */
    int sms;
    size_t tex1d_max;       /* elements of a 1-D float texture over linear memory */
    int tex2d_w, tex2d_h;   /* 2-D texture over pitched memory: width, height */
    int tex2d_pitch;        /* and largest pitch in bytes */
    size_t tex_align;       /* texture base address alignment, bytes */
    size_t tex_pitch_align; /* pitched-texture row alignment, bytes */
};

/* Texture objects over device buffers, created on first use and kept while the buffers live
 * (creating one per launch would put a host call into every job). */
struct tex_entry {
    struct cudaResourceDesc res;
    struct cudaTextureDesc td;
    cudaTextureObject_t obj;
};
struct tex_cache {
    int n;
    struct tex_entry e[GCONV_TEX_CACHE];
};

/* One stream: its events, pinned staging, device buffers (grown to fit, then reused) and the
 * state of the job in flight. */
struct gstream {
    cudaStream_t s;
    cudaEvent_t ev_start, ev_up, ev_kern, ev_down;
    uint8_t *h_in, *h_out; /* pinned u8 staging */
    size_t h_in_cap, h_out_cap;
    float *h_taps; /* pinned, GCONV_TAPS_FLOATS */
    uint8_t *d_in8, *d_out8;
    size_t d_in8_cap, d_out8_cap;
    float *d_arena; /* float planes, see gstream_planes */
    size_t d_arena_cap;
    float *d_taps; /* GCONV_TAPS_FLOATS */
    uint8_t *d_png; /* scratch of the PNG encode (gconv_png_encode.cu) */
    uint8_t *h_png;        /* pinned: the encoded stream, written there by the encode's kernels */
    size_t h_png_cap;
    uint64_t *h_png_total; /* pinned: its length, written there by the encode's scan kernel */
    size_t d_png_cap;
    struct tex_cache tc;
    struct gfft *fft; /* the fft variant's plans, spectra and tiles (conv_fft.cu); NULL until used */
    /* the job in flight */
    int busy, rc;
    char err[EDGED_ERR_LEN];
    int w, h, out_ch, planes, pitch;
    int packed; /* h_out holds the map packed, w/8 bytes per row */
    int jpeg_enc; /* an nvJPEG encode of the result runs behind the job (gconv_jpeg_encode.cu) */
    /* a PNG job: its inflate and filter verdicts (pinned, written by the device before ev_down;
     * nonzero: declined, see gconv_png.cu), else NULL */
    const volatile int *png_status;
    /* a PNG encode of the result runs behind the job (gconv_png_encode.cu): its level and depth
     * (its plan follows from them and the result's size) */
    int png_enc, png_level, png_depth;
    size_t plane_stride;
};

struct gconv_ctx {
    int device, nstreams;
    int dead; /* read and written with __atomic builtins */
    size_t mem_used;
    struct gconv_info info;
    struct gconv_limits lim;
    int pitch_align;    /* floats: rows of device planes start this far apart */
    size_t plane_align; /* floats: planes start this far apart */
    pthread_mutex_t slot_mu[GCONV_CSLOTS];
    int slot_mu_ok;
    cudaEvent_t slot_ev[GCONV_CSLOTS];
    struct gstream st[GCONV_MAX_STREAMS];
    /* State of the features made on their first call: nvJPEG (gconv_jpeg.cu) and the PNG decode
     * (gconv_png.cu). Each feature sets, with its state, the functions that free it and count its
     * device bytes: the context, which every feature calls, calls none of them back. */
    struct gjpeg *jpeg;
    void (*jpeg_close)(struct gconv_ctx *ctx);
    struct gpng *png;
    void (*png_close)(struct gconv_ctx *ctx);
    size_t (*png_mem)(const struct gconv_ctx *ctx);
};

/* Arguments of one single-plane correlation, filled by the caller of a family launcher. */
struct conv_args {
    const float *d_in;
    float *d_out;
    float *d_tmp;             /* separable: an intermediate plane of the same geometry */
    int w, h, pitch;          /* pitch in floats */
    const struct kernel2d *k; /* host copy: sizes, separable factors */
    const float *d_taps;      /* the taps in device memory, rows*cols floats */
    enum border border;
    enum variant variant;
    int block;
    cudaStream_t stream;
    int cslot;            /* constant-memory slot the caller holds (gctx_slot_lock) */
    int taps_loaded;      /* 1: that slot already holds these taps (bench repetitions) */
    struct tex_cache *tc; /* texture variants */
    const struct gconv_limits *lim;
    int check_only;     /* 1: only check the limits, launch nothing */
    cudaError_t cuerr;  /* out: the failed CUDA call's error when a launcher returns -1 */
    const char *cuwhat; /* out: which call */
    /* fft only (conv_fft.cu): the context, the stream's FFT state (created on first use), and
     * planes > 1 planes, plane_stride floats apart, correlated in one batch */
    struct gconv_ctx *ctx;
    struct gfft **fft;
    int planes;
    size_t plane_stride;
};

/* Family launchers, one per conv_*.cu file. Each checks the variant's limits for a (returning
 * EDGED_E_VARIANT_LIMIT with a message naming the limit), then, unless a->check_only, enqueues
 * the kernel(s) on a->stream. Returns 0, a negative EDGED_E_* code, or GCONV_CUDA_FAILED with
 * a->cuerr and a->cuwhat set (the caller classifies it with gctx_fail). */
#define GCONV_CUDA_FAILED (-1000)
int conv_global(struct conv_args *a, char *err);    /* naive, constant */
int conv_shared(struct conv_args *a, char *err);    /* shared, shared_constant */
int conv_halo(struct conv_args *a, char *err);      /* shared_halo */
int conv_cached(struct conv_args *a, char *err);    /* cached */
int conv_separable(struct conv_args *a, char *err); /* separable */
int conv_tiled(struct conv_args *a, char *err);     /* tiled */
int conv_texture(struct conv_args *a, char *err);   /* texture, texture2d */
int conv_fast(struct conv_args *a, char *err);      /* fast (fast.cu) */
int conv_fft(struct conv_args *a, char *err);       /* fft (conv_fft.cu; EDGED_E_NO_CUDA without cuFFT) */
int conv_tf32x3(struct conv_args *a, char *err);    /* tf32x3 (conv_tf32x3.cu) */
/* The first member of a feature's state kept on a stream (struct gfft): the function that frees
 * it, set by the feature when it makes the state, so that close_stream calls none of the
 * features, which all call the context. */
struct gctx_owned {
    void (*release)(void *self);
};
struct gfft;
/* fast for kernels with sides 1, 3 or 5, and 7x7 or 9x9 (fast_stream.cu); conv_fast calls it for
 * the sizes it picks. */
int fast_stream_conv(struct conv_args *a, char *err);
/* Whether fast_stream_conv has a kernel for kr x kc taps: sides 1, 3 or 5 each, or 7x7 or 9x9. */
int fast_stream_has(int kr, int kc);
/* Whether fast runs a MAGNITUDE step of k0 and k1 as one pass (fast_stream_magnitude): both 3x3
 * (every magnitude filter of the bank) and each on the streaming kernel when alone (fast.cu). */
int fast_magnitude_can(const struct kernel2d *k0, const struct kernel2d *k1);
/* Enqueues that pass: a->d_in through k0 and k1 (a->k is not read) into a->d_out as
 * plan_magnitude of the two sums, each sum bit for bit fast_stream_conv's; cut_on: plan_threshold
 * of it under cut instead (a threshold step folded in). Returns conv_launched's answer. */
int fast_stream_magnitude(struct conv_args *a, const struct kernel2d *k0, const struct kernel2d *k1, int cut_on,
                          float cut);

/* The fused u8 edge pipeline (fast_edge.cu). can: 1 when plan is the bank's edge filter (any
 * border) on one plane (gray or luma), the case the one-pass kernel serves. packs: 1 when it
 * can write the map of a w-wide image with in_ch channels packed (struct img packed: gray or RGB,
 * w a multiple of 8). launch: enqueues it on s: d_in8 (w x h x in_ch u8, rows dense) -> d_out8
 * (map, then alpha for 2 or 4 channels; with pack, which the caller checked with packs, 1-bit rows
 * of w/8 bytes); when d_L is not NULL it also writes the float L (rows lpitch floats apart) for
 * the tests. */
int fast_edge_can(const struct filter_plan *p);
int fast_edge_packs(int in_ch, int w);
int fast_edge_launch(const uint8_t *d_in8, uint8_t *d_out8, float *d_L, int lpitch, int w, int h, int in_ch,
                     float threshold, enum border border, int pack, cudaStream_t s);

/* ---- gconv_job.cu: the parts of a job that gconv_jpeg_decode.cu shares ---- */

/* Grows stream st's pinned staging and device buffers for a w x h job with plan p; 0 or the CUDA
 * error with *what_out naming the call. */
cudaError_t gjob_buffers(struct gconv_ctx *ctx, struct gstream *st, int w, int h, const struct filter_plan *p,
                         const char **what_out);
/* gjob_enqueue's flags: GJOB_PLANES leaves the float planes in the arena's dst planes (gconv_run's
 * h_planes); GJOB_IN_PINNED: in->px is page-locked with packed rows (stride w * ch), uploaded from
 * where it is rather than staged. */
#define GJOB_PLANES 1u
#define GJOB_IN_PINNED 2u
/* Enqueues a checked job on free stream s and marks it busy. in->px NULL: the input is already in
 * st->d_in8 (a device decode) and the caller recorded st->ev_start before producing it. On failure
 * the stream has drained what was enqueued: a pinned in->px is no longer read. */
int gjob_enqueue(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                 enum variant v, int block, unsigned flags, char *err);


/* ---- png_kernels.cu: the PNG rows on the device ---- */

/* One image of an unfilter launch: h rows of a filter byte and rowbytes bytes at d_raw (16-byte
 * aligned, png_unfilter_bytes(rowbytes, h) bytes: the rows, then the kernel's scratch), undone in
 * place; d_inflated is its ginflate status word, d_status receives {inflate, filter} verdicts
 * (0 OK; filter PNG_UNF_BAD_FILTER for a type over 4, PNG_UNF_LATE when a band gave up waiting for
 * the band above: never expected, the CPU decodes it). */
#define PNG_UNF_BAD_FILTER 1
#define PNG_UNF_LATE 2
struct png_unf_image {
    uint8_t *d_raw;
    size_t rowbytes;
    uint32_t h;
    int bpp;
    const int *d_inflated;
    int *d_status;
};
struct png_unf_batch {
    int n;
    struct png_unf_image im[GCONV_PNG_MAX_BATCH];
};
/* Bytes of an image's unfilter buffer: its h rows of rowbytes + 1 bytes, padding and the scratch
 * behind them; 0 when that overflows or rowbytes is beyond the kernel's reach. */
size_t png_unfilter_bytes(size_t rowbytes, uint32_t h);
/* Enqueues the unfiltering of b's images on s (two launches: the scratch cleared, then the rows);
 * cudaErrorInvalidValue for an image the kernel cannot take, else the launches' error. */
cudaError_t png_unfilter_launch(const struct png_unf_batch *b, cudaStream_t s);
/* Enqueues on s the expansion of lay's unfiltered rows at d_raw (rows rowbytes + 1 apart, filter
 * byte first) into d_dst, w x h x out_ch u8 rows dense; d_rgba: lay->rgba on the device. */
cudaError_t png_expand_launch(const struct png_layout *lay, const uint8_t *d_raw, const uint8_t *d_rgba,
                              uint8_t *d_dst, cudaStream_t s);

/* ---- canny.cu: Canny on the device ---- */

/* One Canny map: d_gray (w x h u8, rows dense) -> d_out (0/255, rows dense); d_parent and d_flag:
 * canny_nodes(w, h) ints each. */
struct canny_dev {
    const uint8_t *d_gray;
    uint8_t *d_out;
    int *d_parent, *d_flag;
    int w, h;
    cudaStream_t stream;
};
/* Ints in each of d_parent, d_flag for a w x h image: per tile its border pixels (the nodes of the
 * hysteresis graph) and its bit masks. */
size_t canny_nodes(int w, int h);
/* Device scratch of a Canny job: the node arrays, and the u8 gray (in_ch != 1 or blur) and float
 * luma (blur) planes. */
size_t canny_scratch_bytes(int w, int h, int in_ch, int blur);
/* Enqueues the Canny kernels on d->stream (no copies, no events); *what names the launch that
 * failed. */
cudaError_t canny_core(const struct canny_dev *d, const struct canny_params *p, const char **what);
/* A plan of filter canny: d_in8 (w x h x plan->in_ch) to its gray (the pre-blur's taps at d_taps),
 * then canny_core into d_out8; scratch holds canny_scratch_bytes. */
cudaError_t canny_plan_launch(const struct filter_plan *plan, const uint8_t *d_in8, const float *d_taps,
                              uint8_t *d_out8, void *scratch, int w, int h, cudaStream_t s, const char **what);

/* ---- canny_tile.cu, canny_seams.cu: the kernels canny_core enqueues ---- */

/* Enqueues the tile kernel for p's aperture and norm on d->stream; ovec: d->d_out's rows take
 * 16-byte stores. Returns the launch's error. */
cudaError_t canny_tile_launch(const struct canny_dev *d, const struct canny_params *p, int ovec);
/* Whether canny_seams_launch may enqueue its kernels as dependent launches (the device runs their
 * code for compute capability 9.0 or later); the driver is asked once a process. */
int canny_seams_pdl(void);
/* Enqueues the seam kernel and the final kernel behind the tile kernel on d->stream, and unless
 * ovec the kernel that writes the whole map (as dependent launches when pdl, from
 * canny_seams_pdl); *what names the launch that failed. */
cudaError_t canny_seams_launch(const struct canny_dev *d, int pdl, int ovec, const char **what);

/* ---- gconv_plan.cu: a filter plan on the device ---- */

/* The float planes of one image in an arena of 2*planes+2 planes of `stride` floats: src[planes],
 * dst[planes], then two scratch planes. A stepwise plan (filter_plan_stepwise) lays the arena out
 * for its loaded planes (gplan_loaded_planes, which may exceed plan->planes); its result is left where
 * gplan_planes_of(arena, plan->planes, stride).dst says when the float planes are wanted
 * (gplan_dev.want_planes), else in whichever set its last pass wrote (the pack reads it there). */
struct gplan_planes {
    float *src, *dst, *tmp_a, *tmp_b;
    size_t stride;
};

static inline int gplan_loaded_planes(const struct filter_plan *plan)
{
    return filter_plan_stepwise(plan) && plan->in_ch >= 3 && !plan->gray ? 3 : plan->planes;
}

static inline struct gplan_planes gplan_planes_of(float *d_arena, int planes, size_t stride)
{
    struct gplan_planes jp = {d_arena, d_arena + planes * stride, d_arena + 2 * planes * stride,
                              d_arena + (2 * planes + 1) * stride, stride};
    return jp;
}

/* Device buffers of one image for gplan_kernels: u8 in and out, the float arena (gplan_planes) and
 * the taps (conv0, then conv1 at FILTER_MAX_TAPS). */
struct gplan_dev {
    cudaStream_t stream;
    struct tex_cache *tc;
    struct gfft **fft; /* the stream's FFT state (variant fft) */
    const uint8_t *d_in8;
    uint8_t *d_out8;
    float *d_arena;
    size_t stride;
    const float *d_taps;
    int w, h;
    int want_planes; /* the result's floats in the dst planes: the fused edge kernel writes its L there,
                      * a pipeline's trailing threshold runs as its own pass (not folded into the pack) */
    int taps_loaded; /* the constant slot already holds these taps (bench repetitions) */
};

/* Enqueues every kernel of plan for one image (unpack, convolutions, combine, pack; or the fused
 * edge kernel for fast): no copies, no events. slot: the constant slot held, or -1. Returns 0, an
 * EDGED_E_* code, or GCONV_CUDA_FAILED with *cuerr and *cuwhat set. Used by jobs and the bench. */
int gplan_kernels(struct gconv_ctx *ctx, const struct gplan_dev *d, const struct filter_plan *plan, enum variant v,
                  int block, int slot, cudaError_t *cuerr, const char **cuwhat, char *err);

/* 0 when ctx can take work and v is a GPU variant, block a valid block side and w x h an image
 * size every layer accepts; else the error (gctx_enter's, EDGED_E_PARAM, img_check_size's). */
int gplan_request_ok(struct gconv_ctx *ctx, int w, int h, enum variant v, int block, char *err);

/* Whether a job of plan with variant v runs as the fused u8 edge kernel (fast_edge.cu) instead of
 * the float pipeline. */
int gplan_fused_edge(const struct filter_plan *plan, enum variant v);

/* Fills a for one correlation of a w x h plane on stream st (NULL: the default stream, no texture
 * cache): no kernel, taps or planes yet, no constant slot (cslot -1). */
void conv_args_init(struct conv_args *a, struct gconv_ctx *ctx, struct gstream *st, int w, int h,
                    enum border b, enum variant v, int block);

/* Runs a's variant through its family launcher. */
int conv_dispatch(struct conv_args *a, char *err);
/* Sets a's kernel k (taps at d_taps) and planes d_in -> d_out, then conv_dispatch. */
int conv_apply(struct conv_args *a, const struct kernel2d *k, const float *d_taps, const float *d_in,
               float *d_out, char *err);

/* Whether v keeps its taps in a __constant__ slot (then the caller holds gctx_slot_lock). */
static inline int variant_uses_cslot(enum variant v)
{
    return v == VARIANT_CONSTANT || v == VARIANT_SHARED_CONSTANT;
}

/* Records the launch result of the kernel just enqueued into a. Returns 0 or GCONV_CUDA_FAILED. */
int conv_launched(struct conv_args *a, const char *what);

/* In a function with ctx, `int rc`, err and a label `out`: a failed CUDA call sets rc (gctx_fail)
 * and jumps to out. */
#define GCTX_CU(call)                                                                                        \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            rc = gctx_fail(ctx, e_, #call, err);                                                             \
            goto out;                                                                                        \
        }                                                                                                    \
    } while (0)

/* Turns CUDA error e of call `what` into an EDGED_E_* code: allocation failures are
 * EDGED_E_GPU_OOM (the context stays usable), sticky errors EDGED_E_GPU_FATAL (ctx marked dead),
 * others EDGED_E_INTERNAL. */
int gctx_fail(struct gconv_ctx *ctx, cudaError_t e, const char *what, char *err);
/* 0, or EDGED_E_GPU_FATAL / EDGED_E_NO_CUDA when ctx cannot take work; makes ctx's device current. */
int gctx_enter(struct gconv_ctx *ctx, char *err);
/* Row pitch (floats) and plane stride (floats) of a w x h device plane. */
int gctx_pitch(const struct gconv_ctx *ctx, int w);
size_t gctx_plane_stride(const struct gconv_ctx *ctx, int w, int h);

/* Queues GCTX_HOLD_NS of GPU time on s (one thread spinning on the global timer) and returns the
 * launch's error. A timed section queued right after it starts when the GPU reaches it, not when
 * the host's launch call does: the bench and the copy probe put it before their start events. */
#define GCTX_HOLD_NS 200000ull
cudaError_t gctx_hold(cudaStream_t s);

/* Blocks of `threads` threads and `smem` dynamic shared bytes of `kernel` that the current device
 * holds at once (blocks per SM x SMs), or 0 where it cannot be told (the error is cleared; it is
 * not sticky, and the launch that follows is checked by its caller). Sizes the grids that want
 * a whole number of rounds of resident blocks. */
long gctx_resident(const void *kernel, int threads, size_t smem);

/* Grids of tall strips then a tail of short ones (the edge kernel's strips, the separable kernel's
 * bands): h rows, `across` blocks per strip row, the tail being the last pct % (clamped to 0..1000)
 * of a round of `resident` blocks in strips of `short_rows` rows. Returns h1, the rows the strips of
 * `tall` rows cover first: a multiple of tall, 0 when the tail covers the image. */
int gctx_tail_split(int h, int across, long resident, long pct, int tall, int short_rows);

/* Constant-memory slots. __constant__ memory is one per module, shared by every stream, so two
 * jobs on two streams writing their taps into one array would race. Stream s uses slot
 * s % GCONV_CSLOTS: lock takes the slot's mutex and makes stream s wait for the event the slot's
 * previous user recorded after its last kernel; unlock records that event on s (when `used`) and
 * releases the mutex. Returns the slot, or GCONV_CUDA_FAILED with *e set. */
int gctx_slot_lock(struct gconv_ctx *ctx, int s, cudaError_t *e);
void gctx_slot_unlock(struct gconv_ctx *ctx, int s, int used);

/* Grows (never shrinks) a device or pinned buffer to `need` bytes; 0 or a CUDA error. Growing a
 * stream's buffers first waits for the stream and drops its texture objects. */
cudaError_t gctx_grow_device(struct gconv_ctx *ctx, struct gstream *st, void **p, size_t *cap, size_t need);
cudaError_t gctx_grow_pinned(struct gconv_ctx *ctx, void **p, size_t *cap, size_t need);
void gctx_free_device(struct gconv_ctx *ctx, void *p, size_t bytes);

/* Texture object for (res, td) from tc, created when missing; when tc is full it waits for
 * `stream` and empties it first. */
cudaError_t texcache_get(struct tex_cache *tc, cudaStream_t stream, const struct cudaResourceDesc *res,
                         const struct cudaTextureDesc *td, cudaTextureObject_t *obj);
/* Destroys every object (the caller made sure no kernel still uses them). */
void texcache_clear(struct tex_cache *tc);

static inline int div_up(int a, int b)
{
    return (a + b - 1) / b;
}

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* Geometry of one correlation as the kernels see it (passed by value). */
struct conv_geom {
    int w, h, pitch, rows, cols, border;
};

static inline conv_geom conv_geom_of(const struct conv_args *a)
{
    conv_geom g = {a->w, a->h, a->pitch, a->k->rows, a->k->cols, (int)a->border};
    return g;
}

/* Sample (x, y) of a plane under the border rule; the in-image test comes first so that the
 * interior pays no border arithmetic. Reads go through the read-only data path (__ldg). */
static __device__ __forceinline__ float conv_load(const float *__restrict__ d_in, int x, int y,
                                                  const conv_geom &g)
{
    if ((unsigned)x < (unsigned)g.w && (unsigned)y < (unsigned)g.h)
        return __ldg(d_in + (size_t)y * g.pitch + x);
    int xi = border_index(x, g.w, g.border), yi = border_index(y, g.h, g.border);
    return (xi < 0 || yi < 0) ? 0.0f : __ldg(d_in + (size_t)yi * g.pitch + xi);
}

/* A MAGNITUDE step's value of its two correlations a and b: sqrt(a² + b²), the products rounded
 * separately as in the host C code (no FMA). Every kernel that ends such a step goes through this. */
static __device__ __forceinline__ float plan_magnitude(float a, float b)
{
    return sqrtf(__fadd_rn(__fmul_rn(a, a), __fmul_rn(b, b)));
}

/* A THRESHOLD step's map of v: 255 where v >= cut, else 0 (planes_steps on the CPU). Every kernel
 * that applies a threshold step (its own pass, or one it was folded into) goes through this. */
static __device__ __forceinline__ float plan_threshold(float v, float cut)
{
    return v >= cut ? 255.0f : 0.0f;
}
#endif

#endif
