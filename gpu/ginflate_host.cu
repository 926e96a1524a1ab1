/* ginflate_host.cu — the host side of the speculative inflate of zlib streams on the device
 * (gpu/ginflate.h): the state and its scratch, each batch's layout, and the launches of the phases
 * (ginflate_internal.h names their files), each a kernel over every stream of a batch. */
#include "ginflate.h"

#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "gconv_internal.h"
#include "ginflate_internal.h"
#include "tuning.h"

#define GI_ALIGN 256

struct ginflate {
    void *d_scratch;
    size_t cap;
    int seg; /* phases 2 and 4 in segments (1) or one thread a block (0): the knob inflate_seg at creation */
    unsigned jump_grid; /* gi_jump's blocks per stream: as many as the device holds at once (0: unknown) */
};

static size_t gi_up(size_t v)
{
    return (v + GI_ALIGN - 1) / GI_ALIGN * GI_ALIGN;
}

/* Carves one stream's part of the scratch from base (0: only counts) and fills its lengths, map
 * size, caps and arrays; returns the bytes it takes. The kernels know a stream only by these: one
 * whose lengths are out of range gets in_len and out_len 0 and the arrays of an empty one, and
 * gi_init declines it (gi_sane refuses in_len 0) before any kernel reads its input. The list of
 * plausible offsets, 8 bytes an entry, is as large as the input; with segments (seg) the area of
 * phase 2's saves, inflspec_save_words (its comment gives the bound), half as large. */
static size_t gi_carve(struct gi_stream *s, uintptr_t base, uint64_t in_len, uint64_t out_len, int seg)
{
    size_t at = 0;

    if (!gi_sane(in_len, out_len))
        in_len = out_len = 0;
    s->in_len = in_len;
    s->out_len = out_len;
    s->cap = (uint32_t)inflspec_max_candidates(in_len);
    s->hsize = (uint32_t)inflspec_map_size(in_len);
    s->pcap = (uint32_t)inflspec_max_plausible(in_len);
    s->nwords = inflspec_cand_words(in_len ? in_len - 4 : 0);
    s->segsave_cap = seg ? (uint32_t)inflspec_save_words(in_len) : 0;
#define GI_CARVE(field, count)                                                   \
    do {                                                                         \
        s->field = (decltype(s->field))(base ? base + at : 0);                   \
        at += gi_up((size_t)(count) * sizeof(*s->field));                        \
    } while (0)
    GI_CARVE(st, 1);
    GI_CARVE(keys, s->hsize);
    GI_CARVE(res, s->hsize);
    GI_CARVE(blocks, s->cap);
    GI_CARVE(sym, out_len ? out_len : 1);
    GI_CARVE(clist, s->cap);
    GI_CARVE(flist, s->cap);
    GI_CARVE(plist, s->pcap);
    GI_CARVE(cbits, s->nwords);
    GI_CARVE(segsave, s->segsave_cap);
#undef GI_CARVE
    return at;
}

static dim3 gi_grid(uint64_t work, int n)
{
    uint64_t b = (work + GI_THREADS - 1) / GI_THREADS;

    return dim3((unsigned)(b < 1 ? 1 : b > GI_MAX_GRID ? GI_MAX_GRID : b), (unsigned)n);
}

int ginflate_create(struct ginflate **out, char *err)
{
    struct ginflate *g = NULL;
    cudaError_t e;
    int seg = tuning()->inflate_seg;

    *out = NULL;
    /* the segments' state is dynamic shared memory past the 48 KiB a launch gets unasked */
    if (seg && (e = cudaFuncSetAttribute(gi_seg, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)GI_SEG_SHARED)) != cudaSuccess) {
        cudaGetLastError();
        return edged_fail(err, EDGED_E_GPU_FATAL, "inflate segment kernel: %s", cudaGetErrorString(e));
    }
    if (!(g = (struct ginflate *)calloc(1, sizeof(*g))))
        return edged_fail(err, EDGED_E_GPU_OOM, "cannot allocate the inflate state");
    g->seg = seg;
    g->jump_grid = (unsigned)gctx_resident((const void *)gi_jump, GI_THREADS, 0);
    *out = g;
    return 0;
}

void ginflate_destroy(struct ginflate *g)
{
    if (!g)
        return;
    /* stream-ordered memory goes back the same way; no work of g is in flight (the contract) */
    if (g->d_scratch)
        cudaFreeAsync(g->d_scratch, 0);
    free(g);
}

size_t ginflate_mem(const struct ginflate *g)
{
    return g ? g->cap : 0;
}

/* Grows the scratch to need bytes in stream order (no host wait): the old buffer is freed behind
 * the work already queued on the stream. */
static int gi_grow(struct ginflate *g, cudaStream_t stream, size_t need, char *err)
{
    cudaError_t e;
    void *p = NULL;

    if (need <= g->cap)
        return 0;
    if ((e = cudaMallocAsync(&p, need, stream)) != cudaSuccess) {
        cudaGetLastError();
        return edged_fail(err, e == cudaErrorMemoryAllocation ? EDGED_E_GPU_OOM : EDGED_E_GPU_FATAL,
                          "inflate scratch of %zu bytes: %s", need, cudaGetErrorString(e));
    }
    if (g->d_scratch && (e = cudaFreeAsync(g->d_scratch, stream)) != cudaSuccess) {
        cudaFreeAsync(p, stream);
        return edged_fail(err, EDGED_E_GPU_FATAL, "inflate scratch free: %s", cudaGetErrorString(e));
    }
    g->d_scratch = p;
    g->cap = need;
    return 0;
}

/* Lays the scratch out for the batch and fills the kernels' argument; returns the bytes it takes. */
static size_t gi_layout(struct gi_batch *bt, uintptr_t base, int n, int seg, const uint8_t *const *d_in,
                        const size_t *in_len, uint8_t *const *d_out, const size_t *out_len, int *d_status)
{
    size_t at = 0;

    bt->n = n;
    for (int i = 0; i < n; i++) {
        struct gi_stream *s = &bt->s[i];
        at += gi_carve(s, base ? base + at : 0, in_len[i], out_len[i], seg);
        s->in = d_in ? d_in[i] : NULL;
        s->out = d_out ? d_out[i] : NULL;
        s->status = d_status ? d_status + i : NULL;
    }
    return at;
}

#define GI_LAUNCH_SHARED(name, grid, threads, shared, ...)                                                     \
    do {                                                                                                       \
        name<<<(grid), (threads), (shared), stream>>>(__VA_ARGS__);                                            \
        if ((e = cudaGetLastError()) != cudaSuccess)                                                           \
            return edged_fail(err, EDGED_E_GPU_FATAL, "inflate kernel %s: %s", #name, cudaGetErrorString(e)); \
    } while (0)
#define GI_LAUNCH(name, grid, threads, ...) GI_LAUNCH_SHARED(name, grid, threads, 0, __VA_ARGS__)

int ginflate_enqueue(struct ginflate *g, cudaStream_t stream, int n, const uint8_t *const *d_in,
                     const size_t *in_len, uint8_t *const *d_out, const size_t *out_len, int *d_status,
                     char *err)
{
    struct gi_batch bt;
    uint64_t max_h = 1, max_init = 1, max_bits = 1, max_out = 1, max_cap = 1, max_pcap = 1;
    cudaError_t e;
    int rc;

    if (n < 1 || n > GINFLATE_MAX_BATCH)
        return edged_fail(err, EDGED_E_INTERNAL, "inflate batch of %d streams (1..%d)", n, GINFLATE_MAX_BATCH);
    if ((rc = gi_grow(g, stream, gi_layout(&bt, 0, n, g->seg, NULL, in_len, NULL, out_len, NULL), err)))
        return rc;
    gi_layout(&bt, (uintptr_t)g->d_scratch, n, g->seg, d_in, in_len, d_out, out_len, d_status);
    bt.seg = g->seg;
    for (int i = 0; i < n; i++) {
        uint64_t bits = bt.s[i].in_len ? (bt.s[i].in_len - 4) * 8 : 0;
        max_h = bt.s[i].hsize > max_h ? bt.s[i].hsize : max_h;
        max_init = bt.s[i].hsize > max_init ? bt.s[i].hsize : max_init;
        max_init = g->seg && bt.s[i].nwords > max_init ? bt.s[i].nwords : max_init; /* and the bitmap */
        max_cap = bt.s[i].cap > max_cap ? bt.s[i].cap : max_cap;
        max_pcap = bt.s[i].pcap > max_pcap ? bt.s[i].pcap : max_pcap;
        max_bits = bits > max_bits ? bits : max_bits;
        max_out = bt.s[i].out_len > max_out ? bt.s[i].out_len : max_out;
    }
    GI_LAUNCH(gi_init, gi_grid(max_init, n), GI_THREADS, bt);
    GI_LAUNCH(gi_scan, gi_grid(max_bits / 32, n), GI_THREADS, bt);
    GI_LAUNCH(gi_check, gi_grid(max_pcap, n), GI_THREADS, bt);
    dim3 seg_grid((unsigned)(max_cap < GI_SEG_GRID ? max_cap : GI_SEG_GRID), (unsigned)n);
    if (g->seg) {
        GI_LAUNCH_SHARED(gi_seg, seg_grid, GI_SEG_THREADS, GI_SEG_SHARED, bt, 1);
        GI_LAUNCH(gi_pass1_fall, dim3((unsigned)(max_cap < GI_FALL_GRID ? max_cap : GI_FALL_GRID), (unsigned)n),
                  GI_PLACE_THREADS, bt);
    } else {
        uint64_t warps = (max_h + GI_WARP_SLOTS - 1) / GI_WARP_SLOTS;
        GI_LAUNCH(gi_pass1, dim3((unsigned)(warps < GI_MAX_GRID ? warps : GI_MAX_GRID), (unsigned)n), GI_WARP_SLOTS,
                  bt);
    }
    GI_LAUNCH(gi_chain, dim3(1, (unsigned)n), 1, bt);
    if (g->seg)
        GI_LAUNCH_SHARED(gi_seg, seg_grid, GI_SEG_THREADS, GI_SEG_SHARED, bt, 0);
    else
        GI_LAUNCH(gi_place, dim3((unsigned)(max_cap < GI_MAX_GRID ? max_cap : GI_MAX_GRID), (unsigned)n),
                  GI_PLACE_THREADS, bt);
    /* a chain of markers runs through at most max_cap blocks: 2^rounds >= max_cap resolves it */
    dim3 jump = gi_grid(max_out, n);
    if (g->jump_grid && jump.x > g->jump_grid)
        jump.x = g->jump_grid;
    for (int r = 0; r < INFL_JUMP_ROUNDS && (r < 2 || (1ull << (r - 1)) < max_cap); r++)
        GI_LAUNCH(gi_jump, jump, GI_THREADS, bt, r);
    GI_LAUNCH(gi_write, gi_grid(max_out, n), GI_THREADS, bt);
    GI_LAUNCH(gi_adler, gi_grid((max_out + INFL_ADLER_CHUNK - 1) / INFL_ADLER_CHUNK * 32, n), GI_THREADS, bt);
    GI_LAUNCH(gi_final, dim3(1, (unsigned)n), 1, bt);
    return 0;
}

/* The test entry (gconv.h): copies the streams up, runs one batch, copies the bytes and statuses
 * back; *ms is the device time of the batch's kernels (events around ginflate_enqueue). */
int gconv_inflate_host(struct gconv_ctx *ctx, int n, const uint8_t *const *zlib, const size_t *len,
                       uint8_t *const *out, const size_t *out_len, int *status, double *ms, char *err)
{
    const uint8_t *d_in[GINFLATE_MAX_BATCH];
    uint8_t *d_out[GINFLATE_MAX_BATCH], *d_buf = NULL;
    struct ginflate *g = NULL;
    cudaStream_t s = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    size_t in_at[GINFLATE_MAX_BATCH], out_at[GINFLATE_MAX_BATCH], total = 0;
    int *d_status = NULL, rc;
    float f = 0;
    cudaError_t e = cudaSuccess;
    const char *what = "";

    if (n < 1 || n > GINFLATE_MAX_BATCH)
        return edged_fail(err, EDGED_E_INTERNAL, "inflate batch of %d streams (1..%d)", n, GINFLATE_MAX_BATCH);
    if ((rc = gctx_enter(ctx, err)) || (rc = ginflate_create(&g, err)))
        goto out;
    for (int i = 0; i < n; i++) {
        in_at[i] = total;
        total += gi_up(len[i] ? len[i] : 1);
        out_at[i] = total;
        total += gi_up(out_len[i] ? out_len[i] : 1);
    }
#define GI_TRY(call)          \
    do {                      \
        what = #call;         \
        if ((e = (call)))     \
            goto cuda_failed; \
    } while (0)
    GI_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    GI_TRY(cudaEventCreate(&ev0));
    GI_TRY(cudaEventCreate(&ev1));
    GI_TRY(cudaMalloc((void **)&d_buf, total));
    GI_TRY(cudaMalloc((void **)&d_status, (size_t)n * sizeof(int)));
    for (int i = 0; i < n; i++) {
        d_in[i] = d_buf + in_at[i];
        d_out[i] = d_buf + out_at[i];
        if (len[i])
            GI_TRY(cudaMemcpyAsync(d_buf + in_at[i], zlib[i], len[i], cudaMemcpyHostToDevice, s));
    }
    /* A first run grows the scratch, so that the timed one measures the kernels alone. */
    if ((rc = ginflate_enqueue(g, s, n, d_in, len, d_out, out_len, d_status, err)))
        goto out;
    GI_TRY(cudaEventRecord(ev0, s));
    if ((rc = ginflate_enqueue(g, s, n, d_in, len, d_out, out_len, d_status, err)))
        goto out;
    GI_TRY(cudaEventRecord(ev1, s));
    GI_TRY(cudaStreamSynchronize(s));
    GI_TRY(cudaEventElapsedTime(&f, ev0, ev1));
    *ms = f;
    GI_TRY(cudaMemcpy(status, d_status, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (status[i] == GINFLATE_OK && out_len[i])
            GI_TRY(cudaMemcpy(out[i], d_out[i], out_len[i], cudaMemcpyDeviceToHost));
    rc = 0;
    goto out;
cuda_failed:
    rc = gctx_fail(ctx, e, what, err);
out:
    if (s)
        cudaStreamSynchronize(s);
    ginflate_destroy(g);
    cudaFree(d_status);
    cudaFree(d_buf);
    if (ev1)
        cudaEventDestroy(ev1);
    if (ev0)
        cudaEventDestroy(ev0);
    if (s)
        cudaStreamDestroy(s);
    return rc;
}
