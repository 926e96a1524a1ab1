/* gconv_png_encode.cu — PNG encode on the device: row filters, chunked deflate, compaction. */
#include <stdlib.h>
#include <string.h>

#include "deflate_chunks.h"
#include "gconv_internal.h"
#include "gconv_png_encode_internal.h"
#include "png_frame.h"

/* The path, one kernel per stage on the job's stream:
 *   levels   for an 8-bit gray image: whether every sample is 0 or 255 (a two-level map), one flag;
 *   filter   one block per row: the filter byte and the filtered row into d_raw, the filter chosen
 *            by the smallest sum of absolute residuals among the level's candidates (None for a
 *            two-level map);
 *   runs     one block per chunk of a two-level map: the chunk coded as runs (deflate_runs.h) by
 *            all its threads, where its runs are long enough;
 *   chunks   one thread per chunk the runs kernel left: defl_chunk into its slot (stored size
 *            bound); each chunk's Adler-32 from whichever kernel wrote it;
 *   scan     one thread: the chunks' offsets, the combined Adler-32, zlib header and trailer;
 *   compact  one block per chunk: its bytes to their offset in the zlib stream.
 * The host downloads the stream's length, then the stream into the PNG's IDAT, and frames it. */

/* Chunks of 8 KiB keep a 2048x2048 map's 513 chunks busy on as many threads (their sizes stay
 * within a few per cent of 16 KiB chunks': each uses the 32 KiB before it as its dictionary);
 * larger images grow the chunk so that there are at most GPNG_MAX_CHUNKS (the scan is serial).
 * One chunk per block: the lanes of a warp would each follow their own matches, and the warp would
 * run their branches one after another. */
#define GPNG_CHUNK 8192u
#define GPNG_MAX_CHUNKS 8192u
#define GPNG_FILTER_THREADS 256
#define GPNG_CHUNK_THREADS 1
/* an SM holds at most 32 blocks: the chunk kernel's registers are capped so that as many of its
 * one-thread blocks fit */
#define GPNG_CHUNK_BLOCKS_PER_SM 32
#define GPNG_COMPACT_THREADS 256
#define GPNG_ALIGN 256u
/* png_level at or above which every row tries all five filters (as the CPU encoder) */
#define GPNG_ADAPTIVE_LEVEL 4

enum { GPNG_NONE, GPNG_SUB, GPNG_UP, GPNG_AVG, GPNG_PAETH, GPNG_NFILTERS };

__device__ static inline int gpng_sample(const struct gpng_src &s, const uint8_t *row, size_t i)
{
    return s.packed ? ((row[i >> 3] >> (7 - (i & 7))) & 1 ? 255 : 0) : row[i];
}

__device__ static inline int gpng_paeth(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Byte i of row cur filtered with f (prev: the row above, NULL above the first). */
__device__ static inline uint8_t gpng_residual(int f, const struct gpng_src &s, const uint8_t *cur,
                                               const uint8_t *prev, size_t i)
{
    size_t bpp = (size_t)s.ch;
    int x = gpng_sample(s, cur, i), a = i >= bpp ? gpng_sample(s, cur, i - bpp) : 0;
    int b = prev ? gpng_sample(s, prev, i) : 0, c = prev && i >= bpp ? gpng_sample(s, prev, i - bpp) : 0;

    switch (f) {
    case GPNG_NONE:
        return (uint8_t)x;
    case GPNG_SUB:
        return (uint8_t)(x - a);
    case GPNG_UP:
        return (uint8_t)(x - b);
    case GPNG_AVG:
        return (uint8_t)(x - ((a + b) >> 1));
    default:
        return (uint8_t)(x - gpng_paeth(a, b, c));
    }
}

/* One block per row y: candidates (bit f for filter f) are costed by the sum of the residuals as
 * signed bytes in absolute value, the smallest (lowest filter on ties, as png_encode.c) is written
 * as filter byte + row at d_raw + y * (rb + 1). */
__global__ void gpng_filter_kernel(struct gpng_src s, size_t rb, unsigned candidates, const uint32_t *multi,
                                   uint8_t *d_raw)
{
    __shared__ uint32_t s_cost[GPNG_NFILTERS][GPNG_FILTER_THREADS / 32];
    __shared__ int s_best;
    int y = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, best = GPNG_NONE;
    const uint8_t *cur = s.d_px + (size_t)y * s.pitch, *prev = y ? cur - s.pitch : NULL;
    uint8_t *dst = d_raw + (size_t)y * (rb + 1);

    if ((!prev && candidates == 1u << GPNG_UP) || !*multi)
        candidates = 1u << GPNG_NONE; /* the first row's Up is None: say so, as the CPU encoder; a
                                         two-level map goes unfiltered to the run coder */
    if (candidates & (candidates - 1)) {
        for (int f = 0; f < GPNG_NFILTERS; f++) {
            uint32_t sum = 0;

            if (candidates & 1u << f)
                for (size_t i = threadIdx.x; i < rb; i += blockDim.x) {
                    uint8_t r = gpng_residual(f, s, cur, prev, i);

                    sum += r < 128 ? r : 256u - r;
                }
            for (int o = 16; o; o >>= 1)
                sum += __shfl_down_sync(0xffffffffu, sum, o);
            if (!lane)
                s_cost[f][warp] = sum;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            uint32_t best_cost = 0xffffffffu;

            for (int f = 0; f < GPNG_NFILTERS; f++) {
                uint32_t c = 0;

                for (int k = 0; k < (int)(blockDim.x >> 5); k++)
                    c += s_cost[f][k];
                if (candidates & 1u << f && c < best_cost)
                    best_cost = c, best = f;
            }
            s_best = best;
        }
        __syncthreads();
        best = s_best;
    } else {
        best = __ffs(candidates) - 1;
    }
    if (threadIdx.x == 0)
        dst[0] = (uint8_t)best;
    for (size_t i = threadIdx.x; i < rb; i += blockDim.x)
        dst[1 + i] = gpng_residual(best, s, cur, prev, i);
}

/* 1-bit rows, never filtered: byte j of each row packs samples 8j..8j+7 (>= 128 is white, as
 * pngenc_pack_row1), or is copied from a packed map. One thread per byte of d_raw. */
__global__ void gpng_pack_kernel(struct gpng_src s, size_t rb, uint8_t *d_raw)
{
    size_t n = (rb + 1) * (size_t)s.h;

    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x) {
        size_t y = k / (rb + 1), j = k % (rb + 1);
        const uint8_t *row = s.d_px + y * s.pitch;
        unsigned v = 0;

        if (j == 0) {
            d_raw[k] = GPNG_NONE;
            continue;
        }
        j--;
        if (s.packed) {
            d_raw[k] = row[j];
            continue;
        }
        for (int b = 0; b < 8 && 8 * j + b < (size_t)s.w; b++)
            v |= (row[8 * j + b] >= 128 ? 0x80u : 0u) >> b;
        d_raw[k] = (uint8_t)v;
    }
}

/* One thread per chunk: the core's defl_chunk into the chunk's slot, and the chunk's Adler-32. */
__global__ void __launch_bounds__(GPNG_CHUNK_THREADS, GPNG_CHUNK_BLOCKS_PER_SM)
    gpng_chunk_kernel(uint8_t *d_base, struct gpng_plan p, int level)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const uint8_t *d_raw = d_base + p.raw;
    size_t start, len;
    struct defl_scratch sc;

    if (i >= p.nchunks || d_base[p.taken + i]) /* past the end, or coded as runs */
        return;
    start = (size_t)i * p.chunk;
    len = p.n - start < p.chunk ? p.n - start : p.chunk;
    sc.hash = (uint32_t *)(d_base + p.hash) + (size_t)i * DEFL_HASH_SIZE;
    sc.tok = (uint32_t *)(d_base + p.tok) + (size_t)i * p.chunk;
    sc.work = (struct defl_work *)(d_base + p.work) + i;
    ((uint64_t *)(d_base + p.len))[i] = defl_chunk(d_raw, start, len, i == p.nchunks - 1, level, p.hint, sc,
                                                   d_base + p.slots + (size_t)i * p.slot);
    ((uint32_t *)(d_base + p.adler))[i] = defl_adler32(1, d_raw + start, len);
}

/* The stream and its length go straight into pinned host memory, which the kernels write
 * directly (one address space): they reach the host with the kernels, and the thread that finishes
 * the job makes no copy. A copy made there, after the job, took milliseconds under load on the one
 * thread that finishes every job. Writes past p.payload_bound are dropped: a length over it is
 * refused on the host. */

/* One thread: turns the chunk lengths into offsets (in place), writes the zlib header and the
 * combined Adler-32 after the last chunk into z, and the stream's length into d_base + p.total and
 * h_total. */
__global__ void gpng_scan_kernel(uint8_t *d_base, struct gpng_plan p, uint8_t *z, uint64_t *h_total)
{
    uint64_t *len = (uint64_t *)(d_base + p.len), off = 2;
    const uint32_t *adl = (const uint32_t *)(d_base + p.adler);
    uint32_t adler = 1;

    z[0] = 0x78, z[1] = 0x01; /* as deflchunks_zlib_header */
    for (unsigned i = 0; i < p.nchunks; i++) {
        uint64_t l = len[i];
        size_t clen = p.n - (size_t)i * p.chunk < p.chunk ? p.n - (size_t)i * p.chunk : p.chunk;

        len[i] = off;
        off += l;
        adler = defl_adler32_combine(adler, adl[i], clen);
    }
    for (int k = 0; k < 4; k++)
        if (off + k < p.payload_bound)
            z[off + k] = (uint8_t)(adler >> (24 - 8 * k));
    *(uint64_t *)(d_base + p.total) = off + 4;
    *(volatile uint64_t *)h_total = off + 4;
}

/* One block per chunk: its slot's bytes to their offset in the stream z. */
__global__ void gpng_compact_kernel(uint8_t *d_base, struct gpng_plan p, uint8_t *z)
{
    unsigned i = blockIdx.x;
    const uint64_t *off = (const uint64_t *)(d_base + p.len);
    uint64_t end = i + 1 < p.nchunks ? off[i + 1] : *(const uint64_t *)(d_base + p.total) - 4;
    const uint8_t *src = d_base + p.slots + (size_t)i * p.slot;

    end = end < p.payload_bound ? end : p.payload_bound;
    for (uint64_t k = off[i] + threadIdx.x; k < end; k += blockDim.x)
        z[k] = src[k - off[i]];
}

static size_t gpng_take(size_t *at, size_t bytes)
{
    size_t o = *at;

    *at += (bytes + GPNG_ALIGN - 1) / GPNG_ALIGN * GPNG_ALIGN;
    return o;
}

/* Sizes the arrays of a w x h image of ch channels at bit_depth; EDGED_E_IMAGE_TOO_LARGE when they
 * overflow. */
static int gpng_plan_make(struct gpng_plan *p, int w, int h, int ch, int bit_depth, char *err)
{
    size_t at = 0, tok;

    memset(p, 0, sizeof(*p));
    p->rb = bit_depth == 1 ? ((size_t)w + 7) / 8 : (size_t)w * (size_t)ch;
    if (size_mul(p->rb + 1, (size_t)h, &p->n))
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "PNG encode: %dx%d too large", w, h);
    p->chunk = GPNG_CHUNK;
    while ((p->n + p->chunk - 1) / p->chunk > GPNG_MAX_CHUNKS)
        p->chunk *= 2;
    p->nchunks = (unsigned)((p->n + p->chunk - 1) / p->chunk);
    p->slot = (defl_chunk_bound(p->chunk) + 15) / 16 * 16;
    p->hint = p->rb + 1 <= DEFL_WINDOW ? (unsigned)(p->rb + 1) : 0;
    p->payload_bound = deflchunks_bound(p->n, p->chunk);
    if (!p->payload_bound || size_mul(p->chunk, (size_t)p->nchunks * sizeof(uint32_t), &tok))
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "PNG encode: %dx%d too large", w, h);
    p->raw = gpng_take(&at, p->n);
    p->slots = gpng_take(&at, p->slot * p->nchunks);
    p->hash = gpng_take(&at, (size_t)p->nchunks * DEFL_HASH_SIZE * sizeof(uint32_t));
    p->tok = gpng_take(&at, tok);
    p->work = gpng_take(&at, (size_t)p->nchunks * sizeof(struct defl_work));
    p->len = gpng_take(&at, (size_t)p->nchunks * sizeof(uint64_t));
    p->adler = gpng_take(&at, (size_t)p->nchunks * sizeof(uint32_t));
    p->total = gpng_take(&at, sizeof(uint64_t));
    p->multi = gpng_take(&at, sizeof(uint32_t));
    p->taken = gpng_take(&at, p->nchunks);
    p->bytes = at;
    return 0;
}

/* The filter candidates of a level: none at 0, all five from GPNG_ADAPTIVE_LEVEL, else Up, or
 * for one channel (edge maps) the better of None and Up. */
static unsigned gpng_candidates(int level, int ch)
{
    if (level == 0)
        return 1u << GPNG_NONE;
    if (level >= GPNG_ADAPTIVE_LEVEL)
        return (1u << GPNG_NFILTERS) - 1;
    return ch == 1 ? 1u << GPNG_NONE | 1u << GPNG_UP : 1u << GPNG_UP;
}

#define GPNG_LAUNCHED(what)                                                                                  \
    do {                                                                                                     \
        cudaError_t e_ = cudaGetLastError();                                                                 \
        if (e_ != cudaSuccess)                                                                               \
            return gctx_fail(ctx, e_, what, err);                                                            \
    } while (0)

/* Enqueues the kernels on st's stream for src into st's scratch buffer (grown to fit). */
static int gpng_enqueue(struct gconv_ctx *ctx, struct gstream *st, const struct gpng_src *src, int level,
                        int bit_depth, struct gpng_plan *p, char *err)
{
    uint32_t *multi;
    cudaError_t e;
    int rc, two_level;

    if ((rc = gpng_plan_make(p, src->w, src->h, src->ch, bit_depth, err)) < 0)
        return rc;
    if ((e = gctx_grow_device(ctx, st, (void **)&st->d_png, &st->d_png_cap, p->bytes)) != cudaSuccess)
        return gctx_fail(ctx, e, "cudaMalloc (PNG encode scratch)", err);
    if ((e = gctx_grow_pinned(ctx, (void **)&st->h_png, &st->h_png_cap, p->payload_bound)) != cudaSuccess)
        return gctx_fail(ctx, e, "cudaHostAlloc (PNG encode stream)", err);
    /* a map of 0 and 255 in 8-bit gray goes unfiltered to the run coder: the levels kernel says
       whether the image is one (a packed map always is) */
    multi = (uint32_t *)(st->d_png + p->multi);
    two_level = bit_depth == 8 && src->ch == 1 && level > 0;
    if ((e = cudaMemsetAsync(multi, two_level ? 0 : 0xff, sizeof(*multi), st->s)) != cudaSuccess)
        return gctx_fail(ctx, e, "PNG encode: levels flag", err);
    if (two_level && !src->packed) {
        unsigned rows = src->h < 1024 ? (unsigned)src->h : 1024u;

        gpng_levels_kernel<<<rows, GPNG_LEVELS_THREADS, 0, st->s>>>(*src, multi);
        GPNG_LAUNCHED("gpng_levels_kernel");
    }
    if (bit_depth == 1) {
        gpng_pack_kernel<<<(unsigned)((p->n + 255) / 256 < 4096 ? (p->n + 255) / 256 : 4096), 256, 0,
                           st->s>>>(*src, p->rb, st->d_png + p->raw);
        GPNG_LAUNCHED("gpng_pack_kernel");
    } else {
        gpng_filter_kernel<<<src->h, GPNG_FILTER_THREADS, 0, st->s>>>(
            *src, p->rb, gpng_candidates(level, src->ch), multi, st->d_png + p->raw);
        GPNG_LAUNCHED("gpng_filter_kernel");
    }
    gpng_runs_kernel<<<p->nchunks, GPNG_RUNS_THREADS, 0, st->s>>>(st->d_png, *p);
    GPNG_LAUNCHED("gpng_runs_kernel");
    gpng_chunk_kernel<<<(p->nchunks + GPNG_CHUNK_THREADS - 1) / GPNG_CHUNK_THREADS, GPNG_CHUNK_THREADS, 0,
                        st->s>>>(st->d_png, *p, level);
    GPNG_LAUNCHED("gpng_chunk_kernel");
    gpng_scan_kernel<<<1, 1, 0, st->s>>>(st->d_png, *p, st->h_png, st->h_png_total);
    GPNG_LAUNCHED("gpng_scan_kernel");
    gpng_compact_kernel<<<p->nchunks, GPNG_COMPACT_THREADS, 0, st->s>>>(st->d_png, *p, st->h_png);
    GPNG_LAUNCHED("gpng_compact_kernel");
    return 0;
}

/* Waits for the stream (for an encode behind a job that has ended: not at all), reads the length and
 * the stream the kernels wrote into pinned memory, copies the stream into a new PNG and frames it. */
static int gpng_collect(struct gconv_ctx *ctx, struct gstream *st, const struct gpng_plan *p, int w, int h,
                        int ch, int bit_depth, uint8_t **out, size_t *out_len, char *err)
{
    uint64_t total = 0;
    uint8_t *png;
    cudaError_t e;

    if ((e = cudaStreamSynchronize(st->s)) != cudaSuccess)
        return gctx_fail(ctx, e, "PNG encode: wait", err);
    total = *st->h_png_total;
    if (total > p->payload_bound || total > PNGFRAME_MAX_IDAT)
        return edged_fail(err, total > p->payload_bound ? EDGED_E_INTERNAL : GCONV_E_PNG_REFUSED,
                          "PNG encode: %llu compressed bytes (bound %zu, one IDAT at most %u)",
                          (unsigned long long)total, p->payload_bound, PNGFRAME_MAX_IDAT);
    if (!(png = (uint8_t *)malloc(PNGFRAME_HEAD + total + PNGFRAME_TAIL)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %llu bytes for a PNG",
                          (unsigned long long)total);
    memcpy(png + PNGFRAME_HEAD, st->h_png, total);
    *out_len = pngframe_write(png, total, w, h, ch, bit_depth);
    *out = png;
    return 0;
}

/* Checks the level and depth as pngio_encode does. */
static int gpng_check(int level, int bit_depth, int ch, char *err)
{
    if (level < 0 || level > 9)
        return edged_fail(err, EDGED_E_PARAM, "png_level %d invalid: 0..9", level);
    if (bit_depth != 8 && bit_depth != 1)
        return edged_fail(err, EDGED_E_PARAM, "PNG bit depth %d invalid: 8 or 1", bit_depth);
    if (bit_depth == 1 && ch != 1)
        return edged_fail(err, EDGED_E_PARAM, "1-bit PNG needs one channel, not %d", ch);
    if (ch < 1 || ch > 4)
        return edged_fail(err, EDGED_E_PARAM, "PNG of %d channels", ch);
    return 0;
}

/* Encodes src on st's stream and waits for the PNG. */
static int gpng_encode(struct gconv_ctx *ctx, struct gstream *st, const struct gpng_src *src, int level,
                       int bit_depth, uint8_t **out, size_t *out_len, char *err)
{
    struct gpng_plan p;
    int rc;

    if ((rc = gpng_check(level, bit_depth, src->ch, err)) < 0 || (rc = gctx_enter(ctx, err)) < 0)
        return rc;
    if ((rc = gpng_enqueue(ctx, st, src, level, bit_depth, &p, err)) < 0)
        return rc;
    return gpng_collect(ctx, st, &p, src->w, src->h, src->ch, bit_depth, out, out_len, err);
}

/* The result of the job on st as the encoder reads it. */
static struct gpng_src gpng_result_src(const struct gstream *st)
{
    struct gpng_src src;

    src.d_px = st->d_out8;
    src.w = st->w, src.h = st->h, src.ch = st->packed ? 1 : st->out_ch, src.packed = st->packed;
    src.pitch = st->packed ? (size_t)st->w / 8 : (size_t)st->w * st->out_ch;
    return src;
}

int gconv_png_encode_behind(struct gconv_ctx *ctx, int s, int level, int bit_depth)
{
    char err[EDGED_ERR_LEN];
    struct gstream *st;
    struct gpng_src src;
    struct gpng_plan p;
    cudaError_t e;
    int rc;

    if (!ctx || s < 0 || s >= ctx->nstreams || !ctx->st[s].busy)
        return EDGED_E_PARAM;
    st = &ctx->st[s];
    src = gpng_result_src(st);
    if ((rc = gpng_check(level, bit_depth, src.ch, err)) < 0 || (rc = gctx_enter(ctx, err)) < 0 ||
        (rc = gpng_enqueue(ctx, st, &src, level, bit_depth, &p, err)) < 0)
        return rc;
    if ((e = cudaEventRecord(st->ev_down, st->s)) != cudaSuccess)
        return gctx_fail(ctx, e, "cudaEventRecord (PNG encode)", err);
    st->png_enc = 1, st->png_level = level, st->png_depth = bit_depth;
    return 0;
}

int gconv_png_encode_result(struct gconv_ctx *ctx, int s, int level, int bit_depth, uint8_t **out,
                            size_t *out_len, char *err)
{
    struct gstream *st;
    struct gpng_src src;

    *out = NULL, *out_len = 0;
    if (!ctx || s < 0 || s >= ctx->nstreams)
        return edged_fail(err, EDGED_E_PARAM, "stream %d invalid", s);
    st = &ctx->st[s];
    if (st->busy || !st->d_out8 || st->w < 1)
        return edged_fail(err, EDGED_E_PARAM, "stream %d has no finished job", s);
    src = gpng_result_src(st);
    if (st->png_enc && st->png_level == level && st->png_depth == bit_depth) {
        struct gpng_plan p; /* encoded behind the job, which has ended: its plan again, then the copy */
        int rc;

        st->png_enc = 0;
        if ((rc = gpng_plan_make(&p, src.w, src.h, src.ch, bit_depth, err)) < 0)
            return rc;
        return gpng_collect(ctx, st, &p, src.w, src.h, src.ch, bit_depth, out, out_len, err);
    }
    return gpng_encode(ctx, st, &src, level, bit_depth, out, out_len, err);
}

int gconv_png_encode_host(struct gconv_ctx *ctx, const struct img *im, int level, int bit_depth,
                          uint8_t **out, size_t *out_len, char *err)
{
    struct gstream *st;
    struct gpng_src src;
    uint8_t *d_px = NULL;
    size_t row;
    cudaError_t e;
    int rc;

    *out = NULL, *out_len = 0;
    if (!ctx || !im || !im->px || im->w < 1 || im->h < 1 || (im->packed && im->ch != 1))
        return edged_fail(err, EDGED_E_PARAM, "no image to encode");
    if ((rc = gctx_enter(ctx, err)) < 0)
        return rc;
    st = &ctx->st[0];
    row = im->packed ? ((size_t)im->w + 7) / 8 : (size_t)im->w * im->ch;
    if ((e = cudaMalloc((void **)&d_px, row * im->h)) != cudaSuccess ||
        (e = cudaMemcpy2DAsync(d_px, row, im->px, im->stride, row, im->h, cudaMemcpyHostToDevice, st->s)) !=
            cudaSuccess) {
        rc = gctx_fail(ctx, e, "PNG encode: upload", err);
        goto out;
    }
    src.d_px = d_px, src.pitch = row;
    src.w = im->w, src.h = im->h, src.ch = im->ch, src.packed = im->packed;
    rc = gpng_encode(ctx, st, &src, level, bit_depth, out, out_len, err);
out:
    if (d_px) {
        cudaStreamSynchronize(st->s);
        cudaFree(d_px);
    }
    return rc;
}
