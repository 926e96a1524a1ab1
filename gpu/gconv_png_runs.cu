/* gconv_png_runs.cu — the device PNG encoder's run coder for two-level maps (deflate_runs.h): the
 * levels flag and one block per chunk writing the bytes defl_runs_chunk writes. */
#include "deflate_chunks.h"
#include "deflate_runs.h"
#include "gconv_png_encode_internal.h"

__global__ void gpng_levels_kernel(struct gpng_src s, uint32_t *multi)
{
    for (int y = blockIdx.x; y < s.h; y += gridDim.x) {
        const uint8_t *row = s.d_px + (size_t)y * s.pitch;
        unsigned bad = 0;

        for (int x = threadIdx.x; x < s.w; x += blockDim.x)
            bad |= (row[x] ^ (row[x] >> 1)) & 0x7fu;
        if (__any_sync(0xffffffffu, bad != 0) && (threadIdx.x & 31) == 0)
            atomicOr(multi, 1u);
    }
}

/* Bits written at any bit offset of a zeroed word array, a word at a time with atomicOr: the
 * words at a writer's two ends are shared with its neighbours'. */
struct gpng_bitw {
    uint32_t *w;
    uint64_t word, acc;
    int n;
};

__device__ static inline void gpng_bitw_start(struct gpng_bitw *b, uint32_t *w, uint64_t bit)
{
    b->w = w, b->word = bit / 32, b->acc = 0, b->n = (int)(bit % 32);
}

/* n <= 32 bits of v. */
__device__ static inline void gpng_bitw_put(struct gpng_bitw *b, uint64_t v, int n)
{
    b->acc |= (v & ((1ull << n) - 1)) << b->n;
    b->n += n;
    if (b->n >= 32) {
        atomicOr(&b->w[b->word++], (uint32_t)b->acc);
        b->acc >>= 32;
        b->n -= 32;
    }
}

__device__ static inline void gpng_bitw_flush(struct gpng_bitw *b)
{
    if (b->n > 0)
        atomicOr(&b->w[b->word], (uint32_t)b->acc);
}

/* The tokens of a run of byte v, len bytes long (defl_run_token), into b. */
__device__ static inline void gpng_run_put(const struct defl_plan *k, unsigned v, uint32_t len,
                                           struct gpng_bitw *b)
{
    for (uint32_t i = 0, ntok = defl_run_ntok(len); i < ntok; i++) {
        uint64_t val;
        int n = defl_run_token(k, v, len, i, &val);

        gpng_bitw_put(b, val, n < 32 ? n : 32);
        if (n > 32)
            gpng_bitw_put(b, val >> 32, n - 32);
    }
}

/* Calls f(v, len) for each run that starts in [first, e) of the chunk c (chunk-relative; first:
 * the first start there), the last one ending at next, the first start after e. */
template <class F>
__device__ static inline void gpng_runs_each(const uint8_t *c, uint32_t first, uint32_t e, uint32_t next, F f)
{
    for (uint32_t j = first, q; j < e; j = q) {
        for (q = j + 1; q < e && c[q] == c[j];)
            q++;
        f(c[j], (q < e ? q : next) - j);
    }
}

/* One block per chunk of a two-level map: counts the chunk's changes as defl_changes does and,
 * where defl_runs_take, codes the chunk as defl_runs_chunk does, with the same bytes: each thread
 * takes a stretch of the chunk and the runs that start in it, the block adds up their symbols,
 * thread 0 builds the codes and writes the header, each thread writes its runs' bits at the offset
 * a scan of their sizes gives it, and thread 0 ends the chunk. taken[i] says whether it did;
 * gpng_chunk_kernel codes the others. */
__global__ void __launch_bounds__(GPNG_RUNS_THREADS) gpng_runs_kernel(uint8_t *d_base, struct gpng_plan p)
{
    __shared__ struct defl_freq s_f;
    __shared__ struct defl_plan s_k;
    __shared__ struct defl_huff_tmp s_h;
    __shared__ uint32_t s_next[GPNG_RUNS_THREADS];
    __shared__ unsigned long long s_a1, s_a2; /* the chunk's Adler-32 sums (defl_adler32_part) */
    __shared__ uint64_t s_off[GPNG_RUNS_THREADS];
    __shared__ unsigned s_changes;
    __shared__ int s_ok;
    __shared__ uint64_t s_bits, s_eob;
    unsigned i = blockIdx.x, t = threadIdx.x, nt = blockDim.x, changes = 0;
    size_t start = (size_t)i * p.chunk, len = p.n - start < p.chunk ? p.n - start : p.chunk;
    const uint8_t *c = d_base + p.raw + start;
    uint8_t *slot = d_base + p.slots + (size_t)i * p.slot, *taken = d_base + p.taken;
    uint32_t seg = (uint32_t)((len + nt - 1) / nt), a = t * seg < len ? t * seg : (uint32_t)len;
    uint32_t e = a + seg < len ? a + seg : (uint32_t)len, first = (uint32_t)len;
    int final = i == p.nchunks - 1;

    if (*(const uint32_t *)(d_base + p.multi)) { /* not a two-level map: every chunk to the parser */
        if (t == 0)
            taken[i] = 0;
        return;
    }
    for (uint32_t j = a; j < e; j++) {
        int run = j == 0 || c[j] != c[j - 1];

        changes += j == 0 ? (start == 0 || c[0] != c[-1]) : run;
        if (run && first == len)
            first = j;
    }
    s_next[t] = first;
    for (unsigned k = t; k < DEFL_NLITLEN; k += nt)
        s_f.lit[k] = 0;
    for (unsigned k = t; k < DEFL_NDIST; k += nt)
        s_f.dist[k] = 0;
    if (t == 0)
        s_changes = 0, s_a1 = s_a2 = 0;
    __syncthreads();
    atomicAdd(&s_changes, changes);
    __syncthreads();
    if (!defl_runs_take(s_changes, len)) { /* the same for every thread */
        if (t == 0)
            taken[i] = 0;
        return;
    }
    {
        uint64_t a1 = 0, a2 = 0;

        defl_adler32_part(c, a, e, len, &a1, &a2);
        atomicAdd(&s_a1, (unsigned long long)a1);
        atomicAdd(&s_a2, (unsigned long long)a2);
    }
    if (t == 0) /* each stretch's next run start after it */
        for (int k = (int)nt - 1, nx = (int)len; k >= 0; k--) {
            int f = (int)s_next[k];

            s_next[k] = (uint32_t)nx;
            nx = f < (int)len ? f : nx;
        }
    __syncthreads();
    gpng_runs_each(c, first, e, s_next[t], [&](unsigned v, uint32_t run) {
        uint32_t sym[3], cnt[3], dist;
        int n = defl_run_syms(v, run, sym, cnt, &dist);

        for (int k = 0; k < n; k++)
            atomicAdd(&s_f.lit[sym[k]], cnt[k]);
        atomicAdd(&s_f.dist[0], dist);
    });
    __syncthreads();
    if (t == 0) {
        s_f.lit[256] = 1;
        s_bits = defl_plan_build(&s_k, &s_f, &s_h);
    }
    __syncthreads();
    uint64_t bytes = final ? (s_bits + 7) / 8 : (s_bits + 3 + 7) / 8 + 4;
    if (bytes >= defl_stored_size(len)) { /* stored blocks are smaller */
        if (t == 0)
            ((uint64_t *)(d_base + p.len))[i] = defl_write_stored(d_base + p.raw, start, len, final, slot);
    } else {
        uint32_t *w = (uint32_t *)slot;
        struct gpng_bitw bw;
        uint64_t sum = 0;

        for (uint64_t k = t; k < (bytes + 3) / 4; k += nt)
            w[k] = 0;
        gpng_runs_each(c, first, e, s_next[t],
                       [&](unsigned v, uint32_t run) { sum += defl_run_bits(&s_k, v, run); });
        s_off[t] = sum;
        __syncthreads();
        if (t == 0) { /* the header, and each stretch's bit offset after it */
            struct defl_bits b = {slot, 0, 0};

            defl_block_head(&s_k, final, &b);
            if (b.n)
                *b.p = (uint8_t)b.acc;
            s_eob = (uint64_t)(b.p - slot) * 8 + (uint64_t)b.n;
            for (unsigned k = 0; k < nt; k++) {
                uint64_t o = s_off[k];

                s_off[k] = s_eob;
                s_eob += o;
            }
            s_ok = s_eob + s_k.lens[256] == s_bits; /* the plan's size is the writers' (always) */
        }
        __syncthreads();
        if (!s_ok) { /* else the parser writes this chunk from scratch */
            if (t == 0)
                taken[i] = 0;
            return;
        }
        gpng_bitw_start(&bw, w, s_off[t]);
        gpng_runs_each(c, first, e, s_next[t],
                       [&](unsigned v, uint32_t run) { gpng_run_put(&s_k, v, run, &bw); });
        gpng_bitw_flush(&bw);
        __syncthreads();
        if (t == 0) { /* the end-of-block code and defl_chunk_end's tail */
            uint64_t pos = s_eob + s_k.lens[256] + (final ? 0 : 3);

            gpng_bitw_start(&bw, w, s_eob);
            gpng_bitw_put(&bw, s_k.lit_code[256], s_k.lens[256]);
            if (!final)
                gpng_bitw_put(&bw, 0, 3);
            gpng_bitw_put(&bw, 0, (int)((8 - pos % 8) % 8));
            if (!final)
                gpng_bitw_put(&bw, 0, 16), gpng_bitw_put(&bw, 0xffff, 16);
            gpng_bitw_flush(&bw);
            ((uint64_t *)(d_base + p.len))[i] = (pos + 7) / 8 + (final ? 0 : 4);
        }
    }
    if (t == 0) {
        ((uint32_t *)(d_base + p.adler))[i] = defl_adler32_sums(len, s_a1, s_a2);
        taken[i] = 1;
    }
}
