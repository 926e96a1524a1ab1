/* gconv.h — GPU convolution: an opaque device context and the GPU variants (api/variant.h).
 * Plain C interface (no CUDA types) so that host code builds with or without CUDA; when built
 * without CUDA (gconv_stub.c) every entry point answers EDGED_E_NO_CUDA. */
#ifndef EDGED_GCONV_H
#define EDGED_GCONV_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "filter.h"
#include "image.h"
#include "variant.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gconv_ctx;

struct gconv_info {
    char name[128];
    int cc_major, cc_minor, sms;
    size_t global_mem, l2_bytes, smem_per_block_optin;
    int driver_version, runtime_version;
    double copy_gbps;    /* measured device-to-device copy, bytes read + written per second / 1e9 */
    double fp32_gflops;  /* peak FMA rate from SM count and clock: 2 * cores * clock */
};

/* Per-job device timings from CUDA events, milliseconds. */
struct gconv_times {
    float upload_ms, kernel_ms, download_ms;
};

/* The CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies), numbered 0..n-1 as gconv_open
 * takes them; 0 without CUDA, without a driver or without a device. */
int gconv_device_count(void);

/* The facts of CUDA device `device` (0..gconv_device_count()-1) into *out without opening a
 * context: name, compute capability, SMs, memory, L2, versions, FP32 peak; copy_gbps 0 (only
 * gconv_open measures it). Returns 0 or EDGED_E_NO_CUDA (built without CUDA, no usable device, or
 * no such device: the message says which, as gconv_open's). */
int gconv_device_query(int device, struct gconv_info *out, char *err);

/* Opens device `device` with `streams` CUDA streams (1..16), measures copy bandwidth. Returns 0,
 * EDGED_E_NO_CUDA (built without CUDA, or no usable device: message says which) or another code. */
int gconv_open(struct gconv_ctx **out, int device, int streams, char *err);
/* Frees every device and pinned buffer and destroys the streams; accepts NULL. */
void gconv_close(struct gconv_ctx *ctx);
const struct gconv_info *gconv_get_info(const struct gconv_ctx *ctx);
int gconv_stream_count(const struct gconv_ctx *ctx);
/* 1 once a sticky CUDA error poisoned the context: every later call fails with EDGED_E_GPU_FATAL. */
int gconv_is_dead(const struct gconv_ctx *ctx);
/* Device memory in use by this process's context (bytes), for metrics. */
size_t gconv_mem_used(const struct gconv_ctx *ctx);

/* 0 when variant v (a GPU variant) can serve plan on a w x h image with block side `block`, else
 * EDGED_E_VARIANT_LIMIT with a message naming the limit (threads per block, shared memory,
 * non-separable taps) or EDGED_E_PARAM for a bad block. */
int gconv_check(const struct gconv_ctx *ctx, const struct filter_plan *plan, int w, int h, enum variant v,
                int block, char *err);

/* Synchronous run on stream s: uploads in, runs plan with variant v (every stage on the device),
 * downloads into out, which the caller allocated (unpacked) as in->w x in->h x plan->out_ch. With
 * plan->accept_packed, a job of the fused edge kernel (fast on the edge plan, gray or RGB input, w
 * a multiple of 8) downloads its map packed and returns out packed in the same buffer
 * (out->packed = 1, out->stride = w/8): 8 times fewer bytes over PCIe. When h_planes is
 * not NULL it also receives the float result before post (plan->planes planes of w*h). Errors:
 * EDGED_E_VARIANT_LIMIT, EDGED_E_GPU_OOM (this job only), EDGED_E_GPU_FATAL (context dead). */
int gconv_run(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
              enum variant v, int block, struct img *out, float *h_planes, struct gconv_times *t, char *err);

/* 1 when a job of plan with variant v on a w-wide image returns its map packed (see gconv_run),
 * else 0. */
int gconv_packs(const struct filter_plan *plan, enum variant v, int w);

/* Asynchronous form for the service worker. submit copies in into the stream's pinned staging
 * and enqueues upload, kernels and download on stream s, then returns; poll says whether s is
 * done (1), running (0) or failed (<0); finish waits for s, copies the result into out (allocated
 * by the caller as for gconv_run) and reports the timings or the error. One job per stream at a
 * time. Staging and device buffers come from per-stream pools that grow to fit and are reused. */
int gconv_submit(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                 enum variant v, int block, char *err);
int gconv_poll(struct gconv_ctx *ctx, int s);
int gconv_finish(struct gconv_ctx *ctx, int s, struct img *out, struct gconv_times *t, char *err);
/* As gconv_submit for an input whose pixels are already page-locked (gpinned.h, or any
 * cudaHostAlloc memory) as packed rows (in->stride w * in_ch, else EDGED_E_PARAM): the stream uploads
 * them from where they are, without copying them into its staging on this thread. in->px stays the
 * caller's and must not change or be freed until the job is finished (gconv_finish), or until this
 * returns when it failed (the stream then drained what it had enqueued). */
int gconv_submit_pinned(struct gconv_ctx *ctx, int s, const struct img *in, const struct filter_plan *plan,
                        enum variant v, int block, char *err);
/* out NULL in gconv_finish leaves the result in the stream's staging: gconv_finish_copy copies it
 * into out later, before the next submit on s, on any thread (the GPU lane's connection threads
 * do, so that the worker thread does not). */
int gconv_finish_copy(struct gconv_ctx *ctx, int s, struct img *out, char *err);

/* Float-plane correlation of host data with one kernel (tests and bench): h_in and h_out are
 * w*h floats, rows w apart. kernel_ms receives the kernel time (may be NULL). */
int gconv_conv_host(struct gconv_ctx *ctx, const float *h_in, float *h_out, int w, int h,
                    const struct kernel2d *k, enum border b, enum variant v, int block, float *kernel_ms,
                    char *err);

/* Bench timing of one kernel on device-resident random data: `rotate` input/output buffer pairs
 * (enough to exceed L2) cycled, `warmup` runs, then `reps` timed with CUDA events; *median_ms
 * receives the median. Returns 0 or an error (limits as gconv_check). */
int gconv_bench_conv(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, enum border b,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err);

/* As gconv_bench_conv for NVIDIA NPP's nppiFilterBorder_32f_C1R (replicate border). Returns
 * EDGED_E_NO_CUDA when built without NPP. */
int gconv_bench_npp(struct gconv_ctx *ctx, int w, int h, const struct kernel2d *k, int warmup, int reps,
                    double *median_ms, char *err);

/* Bench timing of the u8 edge pipeline alone (upload done, kernels only) on a w x h image of ch
 * channels with variant v and border b; median of reps after warmup. h_in: the image (w*h*ch bytes,
 * rows w*ch apart), copied to the device before timing; NULL: random bytes. packed: the map as
 * 1-bit rows (gconv_packs must hold, else EDGED_E_PARAM). The _npp form times NPP's gray u8 Gauss
 * 5x5 + Laplace 3x3 on h_in (w*h gray bytes, or NULL) (EDGED_E_NO_CUDA without NPP). */
int gconv_bench_edge(struct gconv_ctx *ctx, int w, int h, int ch, const uint8_t *h_in, int packed, enum border b,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err);
int gconv_bench_edge_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, int warmup, int reps,
                         double *median_ms, char *err);

/* Times every kernel of a u8 job of plan (unpack, each step, pack; no copies to or from the host)
 * on w x h images of plan->in_ch channels with variant v: median of reps after warmup. h_in: the
 * image (w*h*in_ch bytes), NULL: random bytes. Canny is refused (gconv_bench_canny). */
int gconv_bench_plan(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_in, const struct filter_plan *plan,
                     enum variant v, int block, int warmup, int reps, double *median_ms, char *err);

/* Canny on the device (every stage, hysteresis included) for tests: gray and out as for
 * canny_serial (cpu_ref/canny.h), the same map. kernel_ms receives the device time of the stages
 * (may be NULL). A plan of filter canny also runs through gconv_run and gconv_submit. */
int gconv_canny_host(struct gconv_ctx *ctx, const struct img *gray, const struct canny_params *p, struct img *out,
                     float *kernel_ms, char *err);

/* Bench timing of Canny on a device-resident w x h gray image (median of reps after warmup): h_gray
 * (w*h bytes, rows w apart) copied to the device before timing, or NULL for a built-in synthetic
 * image made on the device (smooth shading, steps, noise); the _npp form times NPP's
 * nppiFilterCannyBorder_8u_C1R with the same knobs on the same image (EDGED_E_NO_CUDA without NPP). */
int gconv_bench_canny(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                      int warmup, int reps, double *median_ms, char *err);
int gconv_bench_canny_npp(struct gconv_ctx *ctx, int w, int h, const uint8_t *h_gray, const struct canny_params *p,
                          int warmup, int reps, double *median_ms, char *err);
/* As gconv_bench_canny on the hysteresis worst case of canny_spiral.h (one chain of weak pixels
 * across the image) with its knobs {100, 1000, 3, L1}; p is not read. */
int gconv_bench_canny_spiral(struct gconv_ctx *ctx, int w, int h, int warmup, int reps, double *median_ms,
                             char *err);

/* ---- PNG encode on the device (gconv_png_encode.cu) ---- */

/* A gconv PNG call's answer for an image whose compressed stream would not fit one IDAT chunk:
 * the caller encodes on the CPU. Never an HTTP answer, so it is not in api/errors.h. */
#define GCONV_E_PNG_REFUSED (-1002)

/* Encodes the u8 result of the job last finished on stream s (after gconv_finish, before the next
 * submit on s) as PNG on the device: level 0..9 as png_level (0 stores; 1-3 filter Up, or for one
 * channel the better of None and Up per row; 4-9 choose among all five filters per row; every
 * level above 0 deflates with the same greedy chunked coder, cpu_ref/deflate_chunks.h), bit_depth
 * 8 or 1 (1: one channel, samples >= 128 white). A packed map is read as its 0/255 samples. Waits
 * for the device; *out is malloc'd (caller frees). Returns 0, GCONV_E_PNG_REFUSED, EDGED_E_PARAM,
 * EDGED_E_GPU_OOM, EDGED_E_GPU_FATAL or EDGED_E_NOMEM with a message in err. */
int gconv_png_encode_result(struct gconv_ctx *ctx, int s, int level, int bit_depth, uint8_t **out,
                            size_t *out_len, char *err);
/* Enqueues that encode on stream s right behind the job just submitted there (gconv_submit) and
 * moves the job's end behind it: gconv_png_encode_result with the same level and depth then only
 * copies the bytes out. Returns 0, or why not (the finish then encodes as without this; a CUDA
 * error that killed the context shows in gconv_is_dead). */
int gconv_png_encode_behind(struct gconv_ctx *ctx, int s, int level, int bit_depth);
/* The same for a host image (tests, bench): uploads it and encodes on stream 0, which must be
 * idle. */
int gconv_png_encode_host(struct gconv_ctx *ctx, const struct img *im, int level, int bit_depth,
                          uint8_t **out, size_t *out_len, char *err);

/* ---- JPEG on the device with nvJPEG (gconv_jpeg*.cu) ---- */

/* A gconv JPEG call's answer for a JPEG that nvJPEG cannot decode (CMYK or YCCK, a kind the
 * backend refuses, a stream it finds corrupt) or an image its encoder cannot take (alpha, a
 * packed map): the caller does that image on the CPU instead. Never an HTTP answer, so it is not
 * in api/errors.h. */
#define GCONV_E_JPEG_REFUSED (-1001)
/* Images one batched decode takes at most. */
#define GCONV_JPEG_MAX_BATCH 32

/* 1 when built with nvJPEG (EDGED_NVJPEG=1) and ctx is open, else 0. */
int gconv_jpeg_available(const struct gconv_ctx *ctx);
/* The decode backend in use: "hardware" (the JPEG engines of A100/H100-class GPUs), "default"
 * (nvJPEG's CPU/GPU hybrid) or "none" before the first JPEG call or without nvJPEG. */
const char *gconv_jpeg_backend(const struct gconv_ctx *ctx);

/* What nvJPEG's parser reads in a JPEG's headers: the size before orientation, the channels the
 * decode gives (1 gray, 3 colour), and engine 1 when the hardware engine decodes it (baseline, one
 * scan, a subsampling it takes). */
struct gconv_jpeg_head {
    int w, h, ch;
    int engine;
};

/* A reader of JPEG headers with nvJPEG's own parser that any number of threads may call at once:
 * the request threads read a JPEG's headers before its job is queued (gconv_jpeg_job.head), so
 * that the GPU worker's one thread does not. Opened for CUDA device `device`, whose engine (if
 * any) answers `engine`; the calling thread's current device is left as it was. open returns 0,
 * EDGED_E_NOMEM, EDGED_E_NO_CUDA or GCONV_E_JPEG_REFUSED (nvJPEG unavailable; without nvJPEG
 * EDGED_E_NO_CUDA); close accepts NULL. */
struct gconv_jpeg_probe;
int gconv_jpeg_probe_open(struct gconv_jpeg_probe **out, int device, char *err);
void gconv_jpeg_probe_close(struct gconv_jpeg_probe *p);
/* Reads data's headers into *head: 0, GCONV_E_JPEG_REFUSED (headers nvJPEG cannot parse, a kind
 * it does not decode: the CPU decoder then judges the file) or EDGED_E_NOMEM, message in err. */
int gconv_jpeg_probe(struct gconv_jpeg_probe *p, const uint8_t *data, size_t len,
                     struct gconv_jpeg_head *head, char *err);

/* One job whose input is JPEG bytes (gconv_submit_jpeg). The caller fills the first half; data
 * stays the caller's and must live until the job is finished. */
struct gconv_jpeg_job {
    int s; /* the stream, free as for gconv_submit */
    const uint8_t *data;
    size_t len;
    int orientation; /* EXIF 1..8, applied on the device */
    const struct gconv_jpeg_head *head; /* what a probe read in data's headers, or NULL: read here */
    const struct filter_plan *plan; /* in_ch must be the JPEG's channels: 1 gray, 3 colour */
    enum variant v;
    int block;
    int quality; /* > 0: the result is also encoded as JPEG of this quality on the job's stream,
                  * behind the download (gconv_jpeg_encode_result then only collects the bytes) */
    int w, h; /* the size after orientation: in, what the caller expects (0: any; another size is
               * refused); out, the JPEG's */
    int rc;              /* out: 0 submitted, GCONV_E_JPEG_REFUSED, or another EDGED_E_* */
    char err[EDGED_ERR_LEN];
};

/* Submits n (1..GCONV_JPEG_MAX_BATCH) jobs whose input is JPEG bytes: decodes them on the device
 * (one batched call for the images that share a backend and a channel count) straight into each
 * stream's input buffer as interleaved u8 (gray or RGB), applies the orientation there, then
 * enqueues the plan as gconv_submit does; gconv_poll and gconv_finish complete each job. Each
 * job's rc says how it went (a GCONV_E_JPEG_REFUSED job: decode on the CPU, then gconv_submit).
 * Returns the number submitted, or EDGED_E_GPU_FATAL / EDGED_E_NO_CUDA for the whole call. */
int gconv_submit_jpeg(struct gconv_ctx *ctx, struct gconv_jpeg_job *jobs, int n);
/* 1 while the device still decodes the last batch gconv_submit_jpeg gave it, else 0. A batch
 * submitted now would wait behind it: the caller may gather more jobs into it meanwhile. */
int gconv_jpeg_decoding(const struct gconv_ctx *ctx);

/* Decodes n JPEGs (tests, bench) on the device, orientation orient[i] applied (NULL: none), and
 * downloads each into out[i] (allocated here, img_free). batched: 1 one batched decode, 0 one
 * call per image. rc[i]: 0, GCONV_E_JPEG_REFUSED or another code. *ms (may be NULL) receives the
 * wall time of the decodes, download excluded. Returns 0 when the call ran, else its error. */
int gconv_jpeg_decode_host(struct gconv_ctx *ctx, int n, const uint8_t *const *data, const size_t *len,
                           const int *orient, int batched, struct img *out, int *rc, double *ms, char *err);

/* Encodes the u8 result of the job last finished on stream s (after gconv_finish, before the next
 * submit on s) with nvJPEG: quality 1..100, 4:2:0 for RGB, gray for 1 channel. *out is malloc'd
 * (caller frees). GCONV_E_JPEG_REFUSED for a packed map or 2 or 4 channels. When the job was
 * submitted with a quality (gconv_jpeg_job) its encode already ran on the stream: this only copies
 * the bitstream out, without waiting for the device. */
int gconv_jpeg_encode_result(struct gconv_ctx *ctx, int s, int quality, uint8_t **out, size_t *out_len,
                             char *err);
/* Milliseconds the nvJPEG job path has spent since open, by stage (GPU worker profile): on the
 * host [0] header reads and the engine check, [1] the decode calls, [2] orientation, plan and
 * encode enqueues, [3] bitstream copies of finished encodes, [4] the engine check alone (part of
 * [0]); [5] on the device, from each batch's first decode to its last on the decode stream (a
 * batch still running when the profile is read is not in it). Zeros without nvJPEG. */
#define GCONV_JPEG_STAGES 6
void gconv_jpeg_profile(const struct gconv_ctx *ctx, double ms[GCONV_JPEG_STAGES]);
/* The same for a host image of 1 or 3 channels (tests, bench): uploads it, then encodes. */
int gconv_jpeg_encode_host(struct gconv_ctx *ctx, const struct img *im, int quality, uint8_t **out,
                           size_t *out_len, char *err);

/* ---- PNG on the device (gconv_png.cu, png_kernels.cu; the inflate is ginflate.h's) ---- */

struct png_layout;

/* gconv_submit_png's answer for a job the device path does not take (a layout it does not serve,
 * channels or size other than the job expects, inflate scratch it could not grow): the caller
 * decodes that image on the CPU, then gconv_submit. Never an HTTP answer. */
#define GCONV_E_PNG_REFUSED (-1002)
/* gconv_poll's and gconv_finish's answer for a PNG job whose stream the device inflate declined
 * (malformed, or a stretch it cannot place) or whose rows have a filter type over 4: the caller
 * decodes the PNG on the CPU (pngio_decode, whose verdict stands) and submits it again. */
#define GCONV_E_PNG_DECLINED (-1003)
/* Images one batched decode takes at most (ginflate.h's GINFLATE_MAX_BATCH). */
#define GCONV_PNG_MAX_BATCH 32

/* 1 when ctx is open and alive in a CUDA build (the device PNG path exists), else 0. */
int gconv_png_available(const struct gconv_ctx *ctx);

/* One job whose input is a PNG's zlib stream (gconv_submit_png). The caller fills the first half
 * from pngdec_layout (server/codec/png_decode.h); lay, z and plan stay the caller's and must live
 * until the job is finished (gconv_finish), or until gconv_submit_png returns when it failed. */
struct gconv_png_job {
    int s; /* the stream, free as for gconv_submit */
    const struct png_layout *lay;
    const uint8_t *z; /* the IDAT payloads joined, CRCs checked */
    size_t z_len;
    int z_pinned; /* 1: z is page-locked (gpinned.h, or any cudaHostAlloc memory) and is uploaded
                   * from where it is; 0: it is first copied into the stream's pinned staging */
    const struct filter_plan *plan; /* in_ch must be lay->out_ch */
    enum variant v;
    int block;
    int w, h; /* the size the caller expects (0: any; another size is refused) */
    int rc;   /* out: 0 submitted, GCONV_E_PNG_REFUSED, or another EDGED_E_* */
    char err[EDGED_ERR_LEN];
};

/* Submits n (1..GCONV_PNG_MAX_BATCH) PNG jobs: uploads each stream, inflates them all in one
 * ginflate_enqueue call on the context's PNG decode stream, undoes the row filters there, then on
 * each job's stream expands the rows (palette, tRNS) straight into its input buffer as interleaved
 * u8 and enqueues the plan as gconv_submit does. No host wait. gconv_poll and gconv_finish complete
 * each job, answering GCONV_E_PNG_DECLINED when the device declined its stream. Each job's rc says
 * how its submit went. Returns the number submitted, or EDGED_E_GPU_FATAL / EDGED_E_NO_CUDA for the
 * whole call. */
int gconv_submit_png(struct gconv_ctx *ctx, struct gconv_png_job *jobs, int n);
/* 1 while the device still inflates the last batch gconv_submit_png gave it, else 0. */
int gconv_png_decoding(const struct gconv_ctx *ctx);

/* Decodes n (1..GCONV_PNG_MAX_BATCH) PNGs (tests, bench; not while jobs are in flight): layout
 * lay[i] and zlib stream z[i] of z_len[i] bytes (pngdec_layout) into out[i] (allocated here,
 * img_free). batched: 1 one batched inflate, 0 one call per image. rc[i]: 0, GCONV_E_PNG_REFUSED,
 * GCONV_E_PNG_DECLINED or another code. *ms (may be NULL) receives the wall time from the first
 * upload to the last pixel on the device, download excluded, the streams copied into pinned memory
 * before it starts (as a job's are). Returns 0 when the call ran. */
int gconv_png_decode_host(struct gconv_ctx *ctx, int n, const struct png_layout *const *lay,
                          const uint8_t *const *z, const size_t *z_len, int batched, struct img *out, int *rc,
                          double *ms, char *err);

/* Inflates n (1..32) zlib streams (zlib[i], len[i] bytes, host memory) on the device in one batch
 * of gpu/ginflate.h (tests, bench): status[i] receives 0 (out[i] holds exactly out_len[i] bytes) or
 * 1 (declined: out[i] untouched); *ms the device time of the batch. Returns 0 or a negative
 * EDGED_E_* (EDGED_E_NO_CUDA without CUDA) with a message in err. */
int gconv_inflate_host(struct gconv_ctx *ctx, int n, const uint8_t *const *zlib, const size_t *len,
                       uint8_t *const *out, const size_t *out_len, int *status, double *ms, char *err);

#ifdef __cplusplus
}
#endif
#endif
