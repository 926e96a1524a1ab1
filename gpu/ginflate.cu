/* ginflate.cu — the speculative inflate of zlib streams on the device (gpu/ginflate.h): the phases of
 * cpu_ref/inflate_spec.c, each a kernel over every stream of a batch, through the same core. */
#include "ginflate.h"

#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "gconv_internal.h"
#include "inflate_seg_core.h"
#include "inflate_spec.h"
#include "tuning.h"

#define GI_THREADS 256
#define GI_MAX_GRID (1u << 20) /* grid-stride loops past this many blocks */
#define GI_ALIGN 256

/* Per-stream words the kernels share. */
struct gi_state {
    unsigned long long nplaus; /* plausible offsets the scan listed (may pass pcap: then declined) */
    unsigned int ncand;   /* candidates found (may pass cap: then declined) */
    unsigned int nblocks; /* blocks of the chain */
    int declined;         /* set to 1 by any phase that gives up */
    unsigned int nfall;   /* candidates phase 2 in segments left to the serial decode */
    unsigned long long trailer; /* byte offset of the Adler-32 */
    unsigned long long end_bit; /* just past the final block */
    unsigned long long sum_a, sum_b;
    int left[INFL_JUMP_ROUNDS]; /* round r of pointer jumping left a marker */
};

/* One stream's inputs and its part of the scratch. */
struct gi_stream {
    const uint8_t *in;
    uint8_t *out;
    int *status;
    uint64_t in_len, out_len;
    uint64_t *keys;       /* candidate map: hsize start bits */
    struct infl_res *res; /* hsize results */
    struct infl_blk *blocks;
    uint32_t *sym; /* out_len u32 symbols */
    struct gi_state *st;
    uint32_t *cbits; /* candidate bitmap: one bit per bit offset of the deflate data (segments) */
    uint32_t *clist; /* the candidates' map slots in the order found (cap) */
    uint32_t *flist; /* the slots phase 2 in segments left to the serial decode (cap) */
    uint64_t *plist; /* the bit offsets whose header is plausible, for gi_check (pcap) */
    uint64_t nwords; /* u32 words of cbits */
    uint32_t hsize, cap; /* map size (a power of two), candidates and blocks at most */
    uint32_t pcap;       /* plausible offsets at most (inflspec_max_plausible) */
};

/* A batch, passed by value to every kernel (blockIdx.y picks the stream); __grid_constant__ lets
 * a thread index it in the parameter space instead of copying it to local memory. */
struct gi_batch {
    int n;
    int seg; /* phases 2 and 4 in segments: phase 1 (gi_check) fills the bitmap */
    struct gi_stream s[GINFLATE_MAX_BATCH];
};

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

/* Whether a stream's lengths are in range (else it is declined without work). */
static __host__ __device__ int gi_sane(uint64_t in_len, uint64_t out_len)
{
    return in_len >= 7 && in_len <= INFL_MAX_IN && out_len <= INFL_MAX_OUT;
}

/* Carves one stream's part of the scratch from base (0: only counts) and fills its lengths, map
 * size, caps and arrays; returns the bytes it takes. The kernels know a stream only by these: one
 * whose lengths are out of range gets in_len and out_len 0 and the arrays of an empty one, and
 * gi_init declines it (gi_sane refuses in_len 0) before any kernel reads its input. The list of
 * plausible offsets, 8 bytes an entry, is as large as the input. */
static size_t gi_carve(struct gi_stream *s, uintptr_t base, uint64_t in_len, uint64_t out_len)
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
#undef GI_CARVE
    return at;
}

static dim3 gi_grid(uint64_t work, int n)
{
    uint64_t b = (work + GI_THREADS - 1) / GI_THREADS;

    return dim3((unsigned)(b < 1 ? 1 : b > GI_MAX_GRID ? GI_MAX_GRID : b), (unsigned)n);
}

#define GI_STREAM(b) const struct gi_stream *s = &(b).s[blockIdx.y]
#define GI_FOR(i, count) \
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (count); i += (uint64_t)gridDim.x * blockDim.x)

/* Phase 0: the map empty, the state cleared, the zlib header checked; status DECLINED until the
 * last kernel says otherwise. */
__global__ void gi_init(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        s->st->ncand = s->st->nblocks = s->st->nfall = 0;
        s->st->nplaus = 0;
        s->st->trailer = s->st->end_bit = s->st->sum_a = s->st->sum_b = 0;
        s->st->declined = !gi_sane(s->in_len, s->out_len) || infl_zlib_header(s->in, s->in_len) != 0;
        for (int r = 0; r < INFL_JUMP_ROUNDS; r++)
            s->st->left[r] = 0;
        *s->status = GINFLATE_DECLINED;
    }
    GI_FOR(i, s->hsize)
    s->keys[i] = INFL_EMPTY;
    if (b.seg)
        GI_FOR(i, s->nwords)
        s->cbits[i] = 0;
}

/* Phase 1: every bit offset of the deflate data where a dynamic block header could start goes into
 * the map (more than cap: declined), its slot into the list in the order found, and for the segments
 * its bit into the bitmap. Two kernels, so that the loop over every offset holds no arrays: gi_scan
 * lists the offsets whose header fields and code-length code pass infl_head_plausible (the one in
 * about a thousand), gi_check gives each listed offset infl_is_candidate's full reading and records
 * the candidates. A thread block of gi_scan stages GI_SCAN_BYTES of the data (and the 24 bytes after)
 * in shared memory; each thread tests 32 consecutive offsets on 64-bit windows cut from three words
 * in registers (a thread per offset reading its bytes through infl_br took the whole scan's time). */
#define GI_SCAN_BYTES (GI_THREADS * 4) /* data bytes of a step: 32 offsets a thread */
#define GI_SCAN_WORDS (GI_SCAN_BYTES / 8 + 3)
#define GI_FULL_WARP 0xffffffffu

/* The 64 bits from bit p (0..127) of the 192 bits w0 ++ w1 ++ w2, first bit lowest. */
static __device__ __forceinline__ uint64_t gi_bits(uint64_t w0, uint64_t w1, uint64_t w2, unsigned p)
{
    uint64_t lo = p < 64 ? w0 : w1, hi = p < 64 ? w1 : w2;
    unsigned sh = p & 63;

    return sh ? lo >> sh | hi << (64 - sh) : lo;
}

/* The whole warp: appends bit0 + k to the stream's list for every bit k of the lane's pass mask,
 * one atomic per warp a round (a round takes each lane's lowest bit; nearly always one round).
 * Returns 1 when the list is full (the stream is then declined). */
static __device__ int gi_scan_append(const struct gi_stream *s, uint64_t bit0, uint32_t pass)
{
    const unsigned lane = threadIdx.x & 31;
    int over = 0;

    for (unsigned m; (m = __ballot_sync(GI_FULL_WARP, pass != 0)) != 0;) {
        const unsigned leader = (unsigned)__ffs((int)m) - 1;
        unsigned long long at = 0;
        if (lane == leader)
            at = atomicAdd(&s->st->nplaus, (unsigned long long)__popc(m));
        at = __shfl_sync(GI_FULL_WARP, at, leader) + (unsigned)__popc(m & ((1u << lane) - 1));
        if (pass) {
            if (at < s->pcap)
                s->plist[at] = bit0 + (unsigned)__ffs((int)pass) - 1;
            else
                over = 1;
            pass &= pass - 1;
        }
    }
    if (over)
        atomicExch(&s->st->declined, 1);
    return over;
}

/* Every thread of a block takes the same steps, so that the barriers and the warp-wide append see
 * whole warps: the declined flag is read by one thread and OR-ed across the block (another block may
 * decline the stream while this one starts), and a full list in any warp ends the block at the next
 * step's barrier. */
__global__ void gi_scan(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    __shared__ uint64_t w[GI_SCAN_WORDS];
    const uint64_t nbytes = s->in_len - 4;
    int over = 0;

    if (__syncthreads_or(threadIdx.x == 0 && s->st->declined))
        return;
    for (uint64_t base = blockIdx.x * (uint64_t)GI_SCAN_BYTES; base < nbytes;
         base += (uint64_t)gridDim.x * GI_SCAN_BYTES) {
        if (__syncthreads_or(over)) /* also: the step before has read w */
            return;
        uint8_t *wb = (uint8_t *)w;
        for (unsigned k = threadIdx.x; k < GI_SCAN_WORDS * 8; k += blockDim.x)
            wb[k] = base + k < nbytes ? s->in[base + k] : 0;
        __syncthreads();
        const unsigned q = threadIdx.x / 2, p0 = 32 * (threadIdx.x & 1);
        const uint64_t w0 = w[q], w1 = w[q + 1], w2 = w[q + 2], bit0 = (base + 4 * threadIdx.x) * 8;
        uint32_t pass = 0;
        for (unsigned k = 0; k < 32; k++) {
            uint64_t bit = bit0 + k;
            if (bit >= 16 && bit < nbytes * 8 &&
                infl_head_plausible(gi_bits(w0, w1, w2, p0 + k), gi_bits(w0, w1, w2, p0 + k + 17)))
                pass |= 1u << k;
        }
        over = gi_scan_append(s, bit0, pass);
    }
}

/* One thread per listed offset: the full header reading, and for a candidate the map slot (more
 * than cap: declined), its place in the list and its bit in the bitmap. */
__global__ void gi_check(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    const uint64_t nbytes = s->in_len - 4, hmask = s->hsize - 1;

    /* one answer for the whole block, as in gi_scan; a full list has declined the stream (nplaus is
     * then past pcap), and the list is read no further than pcap in any case */
    if (__syncthreads_or(threadIdx.x == 0 && s->st->declined))
        return;
    const uint64_t n = s->st->nplaus < s->pcap ? s->st->nplaus : s->pcap;
    GI_FOR(i, n)
    {
        const uint64_t bit = s->plist[i];
        if (!infl_is_candidate(s->in, nbytes, bit))
            continue;
        unsigned idx = atomicAdd(&s->st->ncand, 1u), slot = UINT32_MAX;
        if (idx >= s->cap) {
            atomicExch(&s->st->declined, 1);
            return;
        }
        uint32_t h = infl_hash(bit, (uint32_t)hmask);
        for (uint64_t j = 0; j <= hmask; j++, h = (h + 1) & (uint32_t)hmask)
            if (atomicCAS((unsigned long long *)&s->keys[h], (unsigned long long)INFL_EMPTY,
                          (unsigned long long)bit) == (unsigned long long)INFL_EMPTY) {
                slot = h;
                break;
            }
        s->clist[idx] = slot;
        if (b.seg)
            atomicOr(&s->cbits[bit >> 5], 1u << (bit & 31));
    }
}

/* Phase 2: each candidate of the map decoded without writing output: end bit, length. A block is
 * one warp over 32 slots of the map; the lanes whose slot holds a candidate take turns to decode it
 * with the block's tables in shared memory (a thread's own tables would live in local memory, whose
 * lookups miss L1 once thousands of threads hold 6 KiB each: the decode is a chain of such lookups).
 * Candidates are sparse in the map, so a warp rarely has two. */
#define GI_WARP_SLOTS 32

/* The serial decode of the candidate in map slot `slot` into res[slot]. */
static __device__ void gi_pass1_one(const struct gi_stream *s, uint32_t slot, struct infl_tabs *t)
{
    struct infl_res r;

    infl_block(s->in, s->in_len - 4, s->keys[slot], t, NULL, 0, s->out_len, INFL_MAX_SYMS, &r);
    s->res[slot] = r;
}

__global__ void gi_pass1(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    __shared__ struct infl_tabs t;

    if (s->st->declined)
        return;
    for (uint64_t base = blockIdx.x * (uint64_t)GI_WARP_SLOTS; base < s->hsize;
         base += (uint64_t)gridDim.x * GI_WARP_SLOTS) {
        uint64_t i = base + threadIdx.x, bit = i < s->hsize ? s->keys[i] : INFL_EMPTY;
        unsigned todo = __ballot_sync(0xffffffffu, bit != INFL_EMPTY);
        while (todo) {
            unsigned lane = (unsigned)__ffs((int)todo) - 1;
            todo &= todo - 1;
            if (threadIdx.x == lane)
                gi_pass1_one(s, (uint32_t)i, &t);
            __syncwarp();
        }
    }
}

/* Phase 3: one thread per stream walks the chain of blocks (infl_chain). */
__global__ void gi_chain(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    struct infl_tabs t;
    struct infl_chain_stats cs;
    uint32_t nb = 0;
    uint64_t trailer = 0;

    if (threadIdx.x || s->st->declined)
        return;
    if (infl_chain(s->in, s->in_len - 4, s->out_len, s->keys, s->res, s->hsize - 1, &t, s->blocks, s->cap, &nb,
                   &trailer, &cs)) {
        s->st->declined = 1;
        return;
    }
    s->st->nblocks = nb;
    s->st->trailer = trailer;
    s->st->end_bit = cs.end_bit;
}

/* Phase 4: one thread per block of the chain writes its symbols at its output offset. Blocks of
 * GI_PLACE_THREADS threads of which only the first works: the decodes' branches differ from
 * block to block, and a few hundred blocks spread over that many SMs instead of a few warps. Its
 * tables are the block's, in shared memory (as gi_pass1's). */
#define GI_PLACE_THREADS 32
__global__ void gi_place(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    __shared__ struct infl_tabs t;

    if (threadIdx.x || s->st->declined)
        return;
    for (uint64_t i = blockIdx.x; i < s->st->nblocks; i += gridDim.x) {
        struct infl_res r;
        const struct infl_blk *bk = &s->blocks[i];
        if (infl_block(s->in, s->in_len - 4, bk->start_bit, &t, s->sym + bk->out_off, bk->out_off, bk->len,
                       bk->len + 1, &r) ||
            r.len != bk->len)
            atomicExch(&s->st->declined, 1);
    }
}

/* Phases 2 and 4 with segments (the knob's other side; docs/gpu.md, "One block in segments"): one
 * driver, gi_seg, one thread block per item, one thread per segment of its data bits, through
 * cpu_ref/inflate_seg_core.h as the host drivers (inflseg_pass1, inflseg_block) run it. Phase 4's
 * items are the blocks of the chain, whose ends the chain gives; phase 2's are the candidates
 * (gi_check's list), whose ends are guessed: the next candidate in bit order, which the thread block
 * finds in the bitmap. Thread 0 reads the header and builds the tables in shared memory (phase 4:
 * a stored block it copies itself, as gi_place does); the segments sync in rounds, each round a
 * barrier to read the predecessors' bounds and one to learn whether anyone decoded (at most
 * nseg + 1 rounds with round 0, the core's bound). Phase 4: thread 0 gives the verdict, a
 * block-wide exclusive prefix sum of the counts (which must add up to the block's length) places
 * the segments, each writes its symbols, and any failure declines the stream. Phase 2 writes
 * nothing: thread 0 finds the first end-of-block code of the right-started segments and fills the
 * candidate's result as the serial decode would (infl_seg_res), or leaves the candidate to
 * gi_pass1_fall, the serial decode of only those.
 *
 * Segments are about INFL_SEG_BITS long, at most GI_SEG_THREADS of them, longer ones for longer
 * blocks (infl_seg_count, the cut the host tests run as inflseg_block's nseg 0). Their states (168
 * bytes each) live in dynamic shared memory, 42 KiB for 256: shared because every round reads the
 * predecessor's bound and each decode walks its own marks; 256 because 1024 would take 168 KiB,
 * one thread block per SM, where 256 leave room for several. The blocks of the tests'
 * photograph-like stream at zlib level 6 are about 200 kbit: they get the full 256. */
#define GI_SEG_THREADS INFL_SEG_DEV_MAX
#define GI_SEG_SHARED ((size_t)GI_SEG_THREADS * sizeof(struct infl_seg))
#define GI_SEG_GRID 1024  /* blocks per stream; each takes items i, i + 1024, ... */
#define GI_NEXT_WORDS 4   /* bitmap words a thread reads per step of the search: 32 kbit a step */
#define GI_FALL_GRID 4096 /* blocks of gi_pass1_fall per stream (about all an H200 holds at once) */

/* What thread 0 tells the others about the current item (nseg 0: nothing more to do). */
struct gi_seg_plan {
    uint64_t data_start, end_bit, seg_bits;
    uint64_t from, lim; /* phase 2: where the next candidate is looked for */
    uint32_t nseg;
    uint32_t guess; /* phase 2: 1 when the end is to be guessed (from, lim set) */
    uint32_t slot;  /* phase 2: the candidate's map slot */
    uint32_t final; /* phase 2: its BFINAL */
    unsigned int next; /* phase 2: the search's first set bit after from (atomicMin) */
};

/* Cuts [p->data_start, end) into the plan's segments. */
static __device__ void gi_seg_cut(struct gi_seg_plan *p, uint64_t end)
{
    uint64_t bits = end - p->data_start;

    p->nseg = infl_seg_cut(bits, infl_seg_count(bits, GI_SEG_THREADS), &p->seg_bits);
    p->end_bit = end;
}

/* Thread 0, phase 4: block i's header into *t and the plan; a stored block copied here. Returns 0
 * or -1. */
static __device__ int gi_seg_head(const struct gi_stream *s, uint64_t i, struct infl_tabs *t,
                                  struct gi_seg_plan *p)
{
    const struct infl_blk *bk = &s->blocks[i];
    uint64_t nbytes = s->in_len - 4, end = i + 1 < s->st->nblocks ? s->blocks[i + 1].start_bit : s->st->end_bit;
    struct infl_res r;
    struct infl_br br;
    int type;

    p->nseg = p->guess = 0;
    infl_br_init(&br, s->in, nbytes, bk->start_bit);
    type = infl_block_head(&br, t, &r);
    if (type == 0)
        return infl_block(s->in, nbytes, bk->start_bit, t, s->sym + bk->out_off, bk->out_off, bk->len, bk->len + 1,
                          &r) || r.len != bk->len
                   ? -1
                   : 0;
    p->data_start = infl_br_pos(&br);
    if (type < 0 || p->data_start >= end || end > nbytes * 8 || end - p->data_start > INFL_SEG_MAX_BITS)
        return -1;
    gi_seg_cut(p, end);
    return 0;
}

/* Leaves the candidate in map slot `slot` to gi_pass1_fall. */
static __device__ void gi_fall(const struct gi_stream *s, uint32_t slot)
{
    unsigned k = atomicAdd(&s->st->nfall, 1u);

    if (k < s->cap)
        s->flist[k] = slot;
    else
        atomicExch(&s->st->declined, 1);
}

/* Thread 0, phase 2: candidate i of the list, its header into *t and the plan (guess set when the
 * search is to run); a candidate the segments cannot take is left to the serial decode. */
static __device__ void gi_seg_cand(const struct gi_stream *s, uint64_t i, struct infl_tabs *t, struct gi_seg_plan *p)
{
    uint64_t nbytes = s->in_len - 4;
    struct infl_res r;
    struct infl_br br;

    p->nseg = p->guess = 0;
    p->next = UINT32_MAX;
    p->slot = s->clist[i];
    if (p->slot == UINT32_MAX) /* not in the map (it never fills): no result is read */
        return;
    infl_br_init(&br, s->in, nbytes, s->keys[p->slot]);
    if (infl_block_head(&br, t, &r) != 2 ||
        infl_seg_guess_range(p->data_start = infl_br_pos(&br), nbytes * 8, &p->from, &p->lim)) {
        gi_fall(s, p->slot);
        return;
    }
    p->final = r.final;
    p->guess = 1;
}

/* Every thread: the first set bit of the bitmap in [p->from, p->lim), or p->lim (infl_seg_guess,
 * GI_SEG_THREADS * GI_NEXT_WORDS words a step; at most INFL_SEG_GUESS_BITS / 32768 + 1 steps). */
static __device__ uint64_t gi_seg_next(const struct gi_stream *s, struct gi_seg_plan *p)
{
    uint64_t last = (p->lim - 1) >> 5;

    for (uint64_t w = p->from >> 5; w <= last; w += GI_SEG_THREADS * GI_NEXT_WORDS) {
        uint64_t f[GI_NEXT_WORDS], first = UINT64_MAX;
#pragma unroll
        for (unsigned j = 0; j < GI_NEXT_WORDS; j++) {
            uint64_t wi = w + threadIdx.x * GI_NEXT_WORDS + j;
            f[j] = wi <= last ? infl_cand_first(s->cbits, wi, p->from, p->lim) : UINT64_MAX;
        }
#pragma unroll
        for (unsigned j = 0; j < GI_NEXT_WORDS; j++)
            first = f[j] < first ? f[j] : first;
        if (first != UINT64_MAX)
            atomicMin(&p->next, (unsigned int)(first - p->from));
        if (__syncthreads_or(first != UINT64_MAX))
            break;
    }
    return p->next == UINT32_MAX ? p->lim : p->from + p->next;
}

/* The sync rounds of segment k (every thread of the block calls it; k >= nseg idles). */
static __device__ void gi_seg_sync(const struct gi_stream *s, const struct infl_tabs *t, const struct gi_seg_plan *p,
                                   struct infl_seg *segs, uint32_t k)
{
    uint64_t nbytes = s->in_len - 4;
    int on = k < p->nseg;

    if (on)
        infl_seg_first(s->in, nbytes, t, p->data_start, p->seg_bits, k, p->nseg, p->end_bit, &segs[k]);
    for (uint32_t r = 1; r <= p->nseg; r++) {
        __syncthreads();
        uint64_t want = on ? infl_seg_want(segs, k) : 0;
        __syncthreads();
        int decoded = on && infl_seg_round(s->in, nbytes, t, p->data_start, p->seg_bits, k, p->nseg, p->end_bit,
                                           want, &segs[k]);
        if (!__syncthreads_or(decoded))
            break;
    }
    /* every state is now visible: nseg 1 leaves segment 0 to thread 0 alone, more end on a barrier */
}

/* Block-wide exclusive prefix sum of v (every thread calls it; blockDim.x a multiple of 32, at
 * most 32 warps); *total receives the sum over the block. */
static __device__ uint64_t gi_block_prefix(uint64_t v, uint64_t *s_warp, uint64_t *total)
{
    unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    uint64_t x = v, before = 0, all = 0;

    for (unsigned d = 1; d < 32; d <<= 1) {
        uint64_t y = __shfl_up_sync(0xffffffffu, x, d);
        if (lane >= d)
            x += y;
    }
    if (lane == 31)
        s_warp[w] = x;
    __syncthreads();
    for (unsigned j = 0; j < nw; j++) {
        before += j < w ? s_warp[j] : 0;
        all += s_warp[j];
    }
    __syncthreads();
    *total = all;
    return before + x - v;
}

/* Phase 4, after the sync: block bk's segments verified and written (every thread calls it): 0,
 * or -1 to decline. */
static __device__ int gi_seg_write(const struct gi_stream *s, const struct infl_blk *bk, const struct infl_tabs *t,
                                   const struct gi_seg_plan *p, const struct infl_seg *segs, uint64_t *s_warp)
{
    uint32_t k = threadIdx.x;
    uint64_t off, total, steps;
    int bad;

    bad = __syncthreads_or(k == 0 && infl_seg_verdict(segs, p->nseg, p->data_start, p->end_bit, bk->len));
    off = gi_block_prefix(k < p->nseg ? segs[k].count : 0, s_warp, &total);
    if (bad || total != bk->len)
        return -1;
    if (k < p->nseg && (off + segs[k].count > bk->len ||
                        infl_seg_write(s->in, s->in_len - 4, t, &segs[k], s->sym + bk->out_off + off,
                                       bk->out_off + off, &steps)))
        return -1;
    return 0;
}

/* Phase 2, after the sync, thread 0: the candidate's result, or the candidate left to the serial
 * decode. */
static __device__ void gi_seg_count(const struct gi_stream *s, const struct gi_seg_plan *p,
                                    const struct infl_seg *segs)
{
    uint64_t end = 0, len = 0;
    struct infl_res r;

    if (infl_seg_eob(segs, p->nseg, p->data_start, &end, &len) == 0 &&
        infl_seg_res(end, len, p->final, s->out_len, &r) == 0)
        s->res[p->slot] = r;
    else
        gi_fall(s, p->slot);
}

/* The segment driver: phase 2 (count 1: the candidates' results) or phase 4 (count 0: the chain's
 * symbols). Every branch around a barrier reads shared values written before one, so the block
 * takes it as one. */
__global__ void __launch_bounds__(GI_SEG_THREADS) gi_seg(const __grid_constant__ struct gi_batch b, int count)
{
    GI_STREAM(b);
    extern __shared__ struct infl_seg s_segs[];
    __shared__ struct infl_tabs s_t;
    __shared__ struct gi_seg_plan s_p;
    __shared__ uint64_t s_warp[GI_SEG_THREADS / 32];

    /* one thread reads the flag, so that the block leaves or stays as one */
    if (__syncthreads_or(threadIdx.x == 0 && s->st->declined))
        return;
    uint64_t items = count ? (s->st->ncand < s->cap ? s->st->ncand : s->cap) : s->st->nblocks;
    for (uint64_t i = blockIdx.x; i < items; i += gridDim.x) {
        __syncthreads(); /* the item before is done: its tables and plan may go */
        if (threadIdx.x == 0) {
            if (count)
                gi_seg_cand(s, i, &s_t, &s_p);
            else if (gi_seg_head(s, i, &s_t, &s_p)) {
                s_p.nseg = 0;
                atomicExch(&s->st->declined, 1);
            }
        }
        __syncthreads();
        if (s_p.guess) {
            uint64_t end = gi_seg_next(s, &s_p);
            if (threadIdx.x == 0)
                gi_seg_cut(&s_p, end);
            __syncthreads();
        }
        if (!s_p.nseg)
            continue;
        gi_seg_sync(s, &s_t, &s_p, s_segs, threadIdx.x);
        if (count) {
            if (threadIdx.x == 0)
                gi_seg_count(s, &s_p, s_segs);
        } else if (gi_seg_write(s, &s->blocks[i], &s_t, &s_p, s_segs, s_warp)) {
            atomicExch(&s->st->declined, 1);
        }
    }
}

/* Phase 2 in segments, the rest: the candidates gi_seg left, each decoded serially by thread 0 of
 * a 32-thread block (gi_place's shape, its tables in shared memory). */
__global__ void gi_pass1_fall(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    __shared__ struct infl_tabs t;

    if (threadIdx.x || s->st->declined)
        return;
    for (uint64_t i = blockIdx.x; i < s->st->nfall; i += gridDim.x)
        gi_pass1_one(s, s->flist[i], &t);
}

/* Phase 5, round `round`: every output position takes one pointer-jumping step (infl_jump), in a
 * grid-stride loop over a grid the device holds at once; a round after one that left no marker
 * returns at once, so that the rounds launched past the last useful one cost a resident grid's
 * start each, not one block per 256 positions. */
__global__ void gi_jump(const __grid_constant__ struct gi_batch b, int round)
{
    GI_STREAM(b);
    int left = 0;

    if (s->st->declined || (round > 0 && !s->st->left[round - 1]))
        return;
    GI_FOR(p, s->out_len)
    left |= infl_jump(s->sym, p);
    /* one store a thread block: millions of threads storing to one word queue at its L2 slice */
    if (__syncthreads_or(left) && threadIdx.x == 0)
        s->st->left[round] = 1;
}

/* Phase 6: one thread per output position writes its byte (a marker still there: declined). */
__global__ void gi_write(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);

    if (s->st->declined)
        return;
    GI_FOR(p, s->out_len)
    {
        uint32_t v = s->sym[p];
        if (v >= INFL_MARK)
            s->st->declined = 1;
        else
            s->out[p] = (uint8_t)v;
    }
}

/* Phase 7: one warp per INFL_ADLER_CHUNK bytes adds its part of Adler-32's sums: infl_adler_chunk's
 * sums with the lanes reading consecutive bytes (a thread per chunk reads 4 KiB one byte at a
 * time, each load its own request), added up across the warp. */
__global__ void gi_adler(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    const unsigned lane = threadIdx.x & 31;
    const uint64_t warps = (uint64_t)gridDim.x * blockDim.x / 32;

    if (s->st->declined)
        return;
    for (uint64_t c = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / 32;
         c < (s->out_len + INFL_ADLER_CHUNK - 1) / INFL_ADLER_CHUNK; c += warps) {
        uint64_t off = c * INFL_ADLER_CHUNK, m = s->out_len - off, sa = 0, sb = 0;
        m = m < INFL_ADLER_CHUNK ? m : INFL_ADLER_CHUNK;
        for (uint64_t k = lane; k < m; k += 32) {
            uint64_t v = s->out[off + k];
            sa += v;
            sb += (m - k) * v;
        }
        for (int d = 16; d > 0; d >>= 1) {
            sa += __shfl_down_sync(0xffffffffu, sa, d);
            sb += __shfl_down_sync(0xffffffffu, sb, d);
        }
        if (lane == 0) {
            sa %= INFL_ADLER_MOD;
            sb = (sb + ((s->out_len - off - m) % INFL_ADLER_MOD) * sa) % INFL_ADLER_MOD;
            atomicAdd(&s->st->sum_a, (unsigned long long)sa);
            atomicAdd(&s->st->sum_b, (unsigned long long)sb);
        }
    }
}

/* Phase 8: the verdict. */
__global__ void gi_final(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);

    if (threadIdx.x || blockIdx.x)
        return;
    *s->status = !s->st->declined && infl_adler_final(s->st->sum_a, s->st->sum_b, s->out_len) ==
                                         infl_be32(s->in + s->st->trailer)
                     ? GINFLATE_OK
                     : GINFLATE_DECLINED;
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
static size_t gi_layout(struct gi_batch *bt, uintptr_t base, int n, const uint8_t *const *d_in,
                        const size_t *in_len, uint8_t *const *d_out, const size_t *out_len, int *d_status)
{
    size_t at = 0;

    bt->n = n;
    for (int i = 0; i < n; i++) {
        struct gi_stream *s = &bt->s[i];
        at += gi_carve(s, base ? base + at : 0, in_len[i], out_len[i]);
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
    if ((rc = gi_grow(g, stream, gi_layout(&bt, 0, n, NULL, in_len, NULL, out_len, NULL), err)))
        return rc;
    gi_layout(&bt, (uintptr_t)g->d_scratch, n, d_in, in_len, d_out, out_len, d_status);
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
