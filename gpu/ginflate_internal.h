/* ginflate_internal.h — what the device inflate's files share behind ginflate.h: the per-stream
 * state and scratch the kernels read, the batch every kernel takes, and each phase's kernel with
 * its launch shape (ginflate_host.cu launches them in order). .cu files only; C++ linkage.
 *
 * The files, in the order of the phases (those of cpu_ref/inflate_spec.c, through the same core):
 *   ginflate_scan.cu   phase 0 (gi_init) and phase 1, the candidates (gi_scan, gi_check)
 *   ginflate_chain.cu  phase 2 one thread a candidate (gi_pass1, and gi_pass1_fall for what the
 *                      segments leave), phase 3 the chain of blocks (gi_chain), phase 4 one thread
 *                      a block (gi_place)
 *   ginflate_seg.cu    phases 2 and 4 with a thread block an item, a thread a segment (gi_seg)
 *   ginflate_output.cu phase 5 the markers resolved (gi_jump), 6 the bytes (gi_write), 7 Adler-32
 *                      (gi_adler), 8 the verdict (gi_final)
 *   ginflate_host.cu   the state, the scratch's layout, the launches, and the test entry
 * The build has no relocatable device code: each kernel is defined in one file and only launched
 * from the host (ginflate_host.cu); device helpers two files use live here, static inline. */
#ifndef EDGED_GINFLATE_INTERNAL_H
#define EDGED_GINFLATE_INTERNAL_H

#include <stdint.h>

#include "ginflate.h"
#include "inflate_seg_core.h"
#include "inflate_spec.h"

#define GI_THREADS 256
#define GI_MAX_GRID (1u << 20) /* grid-stride loops past this many blocks */

/* Per-stream words the kernels share. */
struct gi_state {
    unsigned long long nplaus; /* plausible offsets the scan listed (may pass pcap: then declined) */
    unsigned int ncand;   /* candidates found (may pass cap: then declined) */
    unsigned int nblocks; /* blocks of the chain */
    int declined;         /* set to 1 by any phase that gives up */
    unsigned int nfall;   /* candidates phase 2 in segments left to the serial decode */
    unsigned long long segsave_used; /* words of segsave phase 2 reserved (may pass segsave_cap: those
                                        reservations failed and saved nothing) */
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
    uint32_t *segsave; /* phase 2's saves of synced segments for phase 4 (segsave_cap words) */
    uint64_t nwords; /* u32 words of cbits */
    uint32_t hsize, cap; /* map size (a power of two), candidates and blocks at most */
    uint32_t pcap;       /* plausible offsets at most (inflspec_max_plausible) */
    uint32_t segsave_cap; /* inflspec_save_words with segments, else 0 */
};

/* A batch, passed by value to every kernel (blockIdx.y picks the stream); __grid_constant__ lets
 * a thread index it in the parameter space instead of copying it to local memory. */
struct gi_batch {
    int n;
    int seg; /* phases 2 and 4 in segments: phase 1 (gi_check) fills the bitmap */
    struct gi_stream s[GINFLATE_MAX_BATCH];
};

/* Whether a stream's lengths are in range (else it is declined without work). */
static inline __host__ __device__ int gi_sane(uint64_t in_len, uint64_t out_len)
{
    return in_len >= 7 && in_len <= INFL_MAX_IN && out_len <= INFL_MAX_OUT;
}

#define GI_STREAM(b) const struct gi_stream *s = &(b).s[blockIdx.y]
#define GI_FOR(i, count) \
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (count); i += (uint64_t)gridDim.x * blockDim.x)

/* Whether the stream is declined, one answer for every thread of the block: thread 0 alone reads
 * the flag and __syncthreads_or hands its reading to all. Threads reading it each for itself could
 * disagree, since another block may decline the stream meanwhile, and a block split there would
 * leave the threads that stay waiting at barriers and warp-wide votes the others never reach. A
 * barrier itself: every thread of the block calls it, at the kernel's start. */
static __device__ __forceinline__ int gi_block_declined(const struct gi_stream *s)
{
    return __syncthreads_or(threadIdx.x == 0 && s->st->declined);
}

/* ---- Phases 0 and 1 (ginflate_scan.cu): GI_THREADS threads a block */
__global__ void gi_init(const __grid_constant__ struct gi_batch b);
__global__ void gi_scan(const __grid_constant__ struct gi_batch b);
__global__ void gi_check(const __grid_constant__ struct gi_batch b);

/* ---- Phases 2 to 4 one thread an item (ginflate_chain.cu) */
#define GI_WARP_SLOTS 32    /* gi_pass1: a block is one warp over this many slots of the map */
#define GI_PLACE_THREADS 32 /* gi_place's and gi_pass1_fall's blocks, of which thread 0 works */
#define GI_FALL_GRID 4096   /* blocks of gi_pass1_fall per stream (about all an H200 holds at once) */
__global__ void gi_pass1(const __grid_constant__ struct gi_batch b);
__global__ void gi_pass1_fall(const __grid_constant__ struct gi_batch b);
__global__ void gi_chain(const __grid_constant__ struct gi_batch b);
__global__ void gi_place(const __grid_constant__ struct gi_batch b);

/* ---- Phases 2 and 4 in segments (ginflate_seg.cu): GI_SEG_THREADS threads a block, their
 * segments' states in GI_SEG_SHARED bytes of dynamic shared memory */
#define GI_SEG_THREADS INFL_SEG_DEV_MAX
#define GI_SEG_SHARED ((size_t)GI_SEG_THREADS * sizeof(struct infl_seg))
#define GI_SEG_GRID 1024 /* blocks per stream; each takes items i, i + 1024, ... */
__global__ void __launch_bounds__(GI_SEG_THREADS) gi_seg(const __grid_constant__ struct gi_batch b, int count);

/* ---- Phases 5 to 8 (ginflate_output.cu): GI_THREADS threads a block, gi_final one thread */
__global__ void gi_jump(const __grid_constant__ struct gi_batch b, int round);
__global__ void gi_write(const __grid_constant__ struct gi_batch b);
__global__ void gi_adler(const __grid_constant__ struct gi_batch b);
__global__ void gi_final(const __grid_constant__ struct gi_batch b);

#endif
