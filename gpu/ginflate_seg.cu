/* ginflate_seg.cu — the device inflate's phases 2 and 4 in segments (ginflate_internal.h): a thread
 * block an item, a thread a segment of its bits. */
#include "ginflate_internal.h"

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
 * gi_pass1_fall, the serial decode of only those. When the guess was the block's end, phase 2 also
 * saves the synced starts and counts (inflate_seg_core.h, "Saves"; thread 0 reserves the words with
 * an atomic bump, a barrier, each segment writes its pair), and phase 4 loads a block's states from
 * its save instead of syncing when the save has the block's cut.
 *
 * Segments are about INFL_SEG_BITS long, at most GI_SEG_THREADS of them, longer ones for longer
 * blocks (infl_seg_count, the cut the host tests run as inflseg_block's nseg 0). Their states (168
 * bytes each) live in dynamic shared memory, 42 KiB for 256: shared because every round reads the
 * predecessor's bound and each decode walks its own marks; 256 because 1024 would take 168 KiB,
 * one thread block per SM, where 256 leave room for several. The blocks of the tests'
 * photograph-like stream at zlib level 6 are about 200 kbit: they get the full 256. The counts are
 * ginflate_internal.h's, where the launches read them too. */
#define GI_NEXT_WORDS 4 /* bitmap words a thread reads per step of the search: 32 kbit a step */

/* What thread 0 tells the others about the current item (nseg 0: nothing more to do). */
struct gi_seg_plan {
    uint64_t data_start, end_bit, seg_bits;
    uint64_t from, lim; /* phase 2: where the next candidate is looked for */
    uint32_t nseg;
    uint32_t guess; /* phase 2: 1 when the end is to be guessed (from, lim set) */
    uint32_t slot;  /* phase 2: the candidate's map slot */
    uint32_t final; /* phase 2: its BFINAL */
    uint32_t save;  /* phase 2: where the candidate's save goes; phase 4: the block's save, whose states
                       replace the sync (INFL_SEG_NOSAVE: none) */
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
    p->save = INFL_SEG_NOSAVE;
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
    /* the chain's result's save, when it holds this cut (inflate_seg_core.h, "Saves"); phase 2's
       kernel has ended, so its words and counter are all visible */
    if (infl_seg_save_at(s->segsave, s->st->segsave_used, s->segsave_cap, bk->seg, p->nseg))
        p->save = bk->seg;
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
    p->save = INFL_SEG_NOSAVE;
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
 * decode. When the guess was the end (the cut phase 4 will make), room for its save is reserved in
 * p->save, which the segments then fill; a full area saves nothing (the counter passes the cap,
 * 64 bits: at most cap candidates reserve). */
static __device__ void gi_seg_count(const struct gi_stream *s, struct gi_seg_plan *p,
                                    const struct infl_seg *segs)
{
    uint64_t end = 0, len = 0;
    struct infl_res r;

    if (infl_seg_eob(segs, p->nseg, p->data_start, &end, &len) ||
        infl_seg_res(end, len, p->final, s->out_len, &r)) {
        gi_fall(s, p->slot);
        return;
    }
    if (infl_seg_saveable(segs, p->nseg, p->data_start, p->end_bit)) {
        unsigned long long need = infl_seg_save_size(p->nseg), at = atomicAdd(&s->st->segsave_used, need);
        if (infl_seg_save_fits(at, s->segsave_cap, p->nseg))
            r.seg = p->save = (uint32_t)at;
    }
    s->res[p->slot] = r;
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

    if (gi_block_declined(s))
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
        if (s_p.save != INFL_SEG_NOSAVE && !count) {
            /* phase 4 from phase 2's save: each thread its segment's state, then a barrier, since the
               verdict (thread 0) reads them all */
            if (threadIdx.x < s_p.nseg)
                infl_seg_load_one(s->segsave + s_p.save, threadIdx.x, s_p.nseg, s_p.data_start, s_p.end_bit,
                                  &s_segs[threadIdx.x]);
            __syncthreads();
        } else {
            gi_seg_sync(s, &s_t, &s_p, s_segs, threadIdx.x);
        }
        if (count) {
            if (threadIdx.x == 0)
                gi_seg_count(s, &s_p, s_segs);
            __syncthreads(); /* s_p.save: every segment writes its pair of the save */
            if (s_p.save != INFL_SEG_NOSAVE && threadIdx.x < s_p.nseg)
                infl_seg_save_one(s->segsave + s_p.save, s_segs, threadIdx.x, s_p.nseg, s_p.data_start);
        } else if (gi_seg_write(s, &s->blocks[i], &s_t, &s_p, s_segs, s_warp)) {
            atomicExch(&s->st->declined, 1);
        }
    }
}
