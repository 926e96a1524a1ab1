/* ginflate_scan.cu — the device inflate's first phases (ginflate_internal.h): phase 0 clears each
 * stream's state and checks its zlib header, phase 1 finds the offsets where a block may start. */
#include "ginflate_internal.h"

/* Phase 0: the map empty, the state cleared, the zlib header checked; status DECLINED until the
 * last kernel says otherwise. */
__global__ void gi_init(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        s->st->ncand = s->st->nblocks = s->st->nfall = 0;
        s->st->nplaus = s->st->segsave_used = 0;
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
 * in registers (a thread per offset reading its bytes through infl_br took the whole scan's time).
 * The fixed fields of all 32 come from one window at once (infl_head_prefilter, a few shifts and
 * ands); only the offsets that pass them, about one in five, pay the 19-step Kraft sum. */
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
 * whole warps: the declined flag is read once for the block (gi_block_declined), and a full list in
 * any warp ends the block at the next step's barrier. */
__global__ void gi_scan(const __grid_constant__ struct gi_batch b)
{
    GI_STREAM(b);
    __shared__ uint64_t w[GI_SCAN_WORDS];
    const uint64_t nbytes = s->in_len - 4;
    int over = 0;

    if (gi_block_declined(s))
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
        for (uint32_t m = infl_head_prefilter(gi_bits(w0, w1, w2, p0)); m; m &= m - 1) {
            const unsigned k = (unsigned)__ffs((int)m) - 1;
            const uint64_t bit = bit0 + k;
            if (bit >= 16 && bit < nbytes * 8 &&
                infl_head_kraft(gi_bits(w0, w1, w2, p0 + k), gi_bits(w0, w1, w2, p0 + k + 17)))
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

    /* a full list has declined the stream (nplaus is then past pcap), and the list is read no
     * further than pcap in any case */
    if (gi_block_declined(s))
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
