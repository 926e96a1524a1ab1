/* ginflate_output.cu — the device inflate's last phases (ginflate_internal.h): the markers resolved,
 * the bytes written, Adler-32 summed and the verdict given. */
#include "ginflate_internal.h"

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
