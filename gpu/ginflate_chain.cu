/* ginflate_chain.cu — the device inflate's blocks one thread an item (ginflate_internal.h): phase 2
 * decodes each candidate, phase 3 walks the chain of blocks, phase 4 writes each block of it. */
#include "ginflate_internal.h"

/* Phase 2: each candidate of the map decoded without writing output: end bit, length. A block is
 * one warp over 32 slots of the map; the lanes whose slot holds a candidate take turns to decode it
 * with the block's tables in shared memory (a thread's own tables would live in local memory, whose
 * lookups miss L1 once thousands of threads hold 6 KiB each: the decode is a chain of such lookups).
 * Candidates are sparse in the map, so a warp rarely has two (GI_WARP_SLOTS). */

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

/* Phase 2 in segments, the rest: the candidates gi_seg left, each decoded serially by thread 0 of
 * a 32-thread block (gi_place's shape, below: its tables in shared memory). */
__global__ void gi_pass1_fall(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    __shared__ struct infl_tabs t;

    if (threadIdx.x || s->st->declined)
        return;
    for (uint64_t i = blockIdx.x; i < s->st->nfall; i += gridDim.x)
        gi_pass1_one(s, s->flist[i], &t);
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
