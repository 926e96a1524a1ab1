/* png_kernels.cu — a PNG's inflated rows on the device: the row filters undone by a wavefront of
 * warps, each a band of rows chained to the band above through memory, then the expansion to the
 * decoded channels (palette, tRNS key) as pngio_decode does.
 *
 * Exactness: every byte is reconstructed by the formulas of the PNG specification (None, Sub, Up,
 * Average, Paeth on bytes, the left neighbour bpp bytes back, the row above already reconstructed)
 * in 8-bit wrap-around arithmetic, the same as server/codec/png_unfilter.c's byte loops; the
 * order of the work changes, not one value. The expansion copies the same table entries and key
 * test as png_decode.c's. test_gpu_png compares the two bit for bit. */
#include <string.h>

#include "gconv_internal.h"
#include "ginflate.h"
#include "png_layout.h"

/* Unfiltering: a warp per band of UNF_ROWS consecutive rows, each band its own block, so that one
 * image spreads over the whole device. Lane t owns row r0 + t and walks it in chunks of UNF_CHUNK
 * bytes, one step behind lane t - 1: at step k it does chunk k - t, whose upper bytes lane t - 1
 * made at step k - 1 and hands over with __shfl_up_sync, and whose left bytes it made itself. The
 * warp steps in lockstep: no shared memory, no barrier. A band of g rows and c chunks takes
 * c + g - 1 steps, and a step is the arithmetic of one chunk, so chunks are one 32-bit word.
 * The step is short because its path is: the bytes travel one shuffle each (a byte whose left
 * neighbour lies in the same chunk, bpp < 4, is made after that one and handed over after it),
 * every filter type is the same dozen or so instructions a byte (unf_byte: Paeth's candidates as keys,
 * the type's constants set once per row), and nothing branches on where the lane is: before its
 * row's first chunk a lane makes zeros from zeros (its filtered word taken as 0, and so are the
 * chunk it made and the bytes lane t - 1 hands over, itself before its first), so that the
 * chunk before the first is 0 as the specification says; after its last it makes what it likes,
 * which nothing reads. Stores, mailbox loads and posts are predicated on the chunk being the
 * row's, a row's edge bytes go out after the steps, and the steps run in whole rounds: the one
 * branch left is lane 0's check that the next two chunks above were posted, once a pair of steps.
 *
 * Band to band: the band's last lane also posts each chunk of its row to the band's mailbox (in
 * scratch behind the rows) as one 64-bit word, the chunk and its index + 1. A 64-bit store is
 * single-copy atomic, so a word seen with the expected tag holds its chunk: no fence on either
 * side. Lane 0 of the band below loads each mailbox word UNF_MAIL_AHEAD steps before it needs
 * it, checks two at a time (at the first's step), and polls again only for one not posted yet:
 * UNF_SPINS polls back to back, then naps of UNF_NAP_NS between them (a band waiting for the
 * wavefront to reach it). A band whose first row is None or Sub does not read the row above: it
 * never waits, and runs beside the band above.
 *
 * No deadlock: a band waits only for the band above, and bands are numbered by a ticket that the
 * block takes from its image's counter when it starts (not by blockIdx, whose blocks need not be
 * running), so the band waited for has started and stays resident until it ends; by induction from
 * band 0, which waits for nothing, every band posts every chunk in finite time whatever the bytes
 * are (a bad filter type is undone as None and reported). So no image can stall it. Each wait is
 * still bounded by UNF_WAIT_NS of the device's clock, a guard against the unforeseen (a kernel
 * halted in a debugger): a lane that waited that long marks the image declined (the CPU decodes
 * it), stops waiting and runs on, so the bands below it do not wait long either.
 *
 * Memory: each lane loads its filtered bytes as the aligned 32-bit words of its row, UNF_AHEAD
 * steps before their use (they do not depend on the arithmetic), funnel-shifted into place (rows
 * are rowbytes + 1 apart, so mostly not aligned), and writes one aligned word a step: the one
 * holding the chunk's first bytes, whose earlier bytes end its own chunk before. The bytes of a
 * word that reaches into another row (a row's first and last few, in its chunks 0, chunks - 2
 * and chunks - 1, which the lane keeps) go out one by one after the steps: no store touches
 * another row, and no lane reads another row's reconstructed bytes from the rows. The
 * launch before, unfilter_reset_kernel, clears the counters and mailboxes and sets the status pair. */
#define UNF_ROWS 32              /* rows of a band: one warp */
#define UNF_LANES 0xffffffffu    /* the warp's lanes, all of them stepping together */
#define UNF_CHUNK 4              /* bytes of a step, at least bpp: upper-left bytes lie in the chunk before */
#define UNF_AHEAD 8              /* steps between the load of a filtered word and its use */
/* Steps between the load of a mailbox word and its use (1..UNF_AHEAD): few, because the band below
 * runs just behind the band above, so that a word loaded long before its step is mostly not posted
 * yet and costs a poll, and each band's lag behind the one above grows with that distance (the
 * unfilter's time at 2, 4 and 8, and each band's lag at 8 and 16: performance.md and its journal). */
#define UNF_MAIL_AHEAD 2
#define UNF_RING (UNF_AHEAD + 2) /* filtered words a lane holds (a step reads two); steps unrolled */
static_assert(UNF_RING % 2 == 0, "the waits for the row above go by pairs of steps within a round");
static_assert(UNF_MAIL_AHEAD >= 1 && UNF_MAIL_AHEAD <= UNF_AHEAD,
              "a post is loaded by the step before its pair, into a slot of the ring");
#define UNF_SPINS 32             /* polls before a lane waiting for a post naps between them */
#define UNF_NAP_NS 64
/* A wait this long means something unforeseen: the image is declined. A real wait lasts as long as
 * the bands above take to reach the chunk; the bound is far beyond that, also for runs under
 * compute-sanitizer, many times slower and sharing the device with other processes. */
#define UNF_WAIT_NS 10000000000ull
#define UNF_MAX_ROWBYTES ((size_t)1 << 28) /* chunk and word indices stay in an int */
#define UNF_RESET_THREADS 256
#define UNF_RESET_BLOCKS 128 /* per image at most; they stride over its scratch */

/* An image's scratch, 8-byte words behind its rows (16-byte aligned, as the buffer is): the band
 * counter and a spare word, then the mailboxes of bands 0 .. bands - 2, chunks words each. */
static __host__ __device__ size_t unf_work_offset(size_t rowbytes, uint32_t h)
{
    return ((rowbytes + 1) * h + 15) & ~(size_t)15;
}

static __host__ __device__ uint32_t unf_bands(uint32_t h)
{
    return h / UNF_ROWS + (h % UNF_ROWS != 0);
}

static __host__ __device__ uint32_t unf_chunks(size_t rowbytes)
{
    return (uint32_t)((rowbytes + UNF_CHUNK - 1) / UNF_CHUNK);
}

static __host__ __device__ size_t unf_work_words(size_t rowbytes, uint32_t h)
{
    return 2 + (size_t)(unf_bands(h) - 1) * unf_chunks(rowbytes);
}

size_t png_unfilter_bytes(size_t rowbytes, uint32_t h)
{
    size_t raw, mail;

    if (h < 1 || rowbytes < 1 || rowbytes > UNF_MAX_ROWBYTES || size_mul(rowbytes + 1, h, &raw) < 0 ||
        size_mul(unf_work_words(rowbytes, h), 8, &mail) < 0 || raw > SIZE_MAX - 16 - mail)
        return 0;
    return unf_work_offset(rowbytes, h) + mail;
}

/* Every filter type is one formula of bytes (x filtered, a left, b above, c upper left):
 *   x + min(ka, kb, kc) + avg, kept to 8 bits,
 * where the keys are Paeth's candidates, each its distance << 10 | its rank << 8 | its value:
 *   ka = |b - c| << 10 | a,  kb = |a - c| << 10 | 1 << 8 | b,  kc = |a + b - 2c| << 10 | 2 << 8 | c,
 * so the least key is the candidate of least distance, ties to a, then b, then c: the
 * specification's Paeth predictor, and its value is the key's low byte. A row's filter type
 * sets five constants (unf_sel) once: UNF_KEY_OFF added to the candidates the type does not
 * predict from (Sub keeps a, Up b, Paeth all three; None and Average keep kc with c masked to 0,
 * whose low byte is 0) and avg = (a + b) >> 1 for Average, 0 otherwise. The 32 rows of a warp, of
 * any types, run the same instructions: no branch and no predictor computed only to be dropped.
 * Distances are at most 510 (9 bits), so a key without UNF_KEY_OFF is below 1 << 19. On the
 * device (sm_90) a byte is about 14 instructions, 5 deep from a: an absolute difference with an
 * addend is one (ka's UNF_KEY_OFF rides on its distance), |a + b - 2c| is |a - (2c - b)| with
 * 2c - b made before a is known, the average is the high word of (a + b) * 2^31, the minimum of
 * three keys is one. */
#define UNF_KEY_OFF (1u << 24)

struct unf_sel {
    uint32_t a_off; /* added to ka's distance: UNF_KEY_OFF >> 10 or 0 */
    uint32_t b_or;  /* or-ed into kb's value: its rank, and UNF_KEY_OFF */
    uint32_t c_and; /* c's value in kc: 0xff for Paeth, 0 to predict 0 */
    uint32_t c_or;  /* kc's rank, and UNF_KEY_OFF */
    uint32_t s_mul; /* 2^31 for Average (avg = (a + b) * s_mul >> 32), 0 otherwise */
};

static __host__ __device__ __forceinline__ struct unf_sel unf_sel_of(int ft)
{
    struct unf_sel f;

    f.a_off = ft == 1 || ft == 4 ? 0 : UNF_KEY_OFF >> 10;
    f.b_or = 1u << 8 | (ft == 2 || ft == 4 ? 0 : UNF_KEY_OFF);
    f.c_and = ft == 4 ? 0xffu : 0;
    f.c_or = 2u << 8 | (ft == 1 || ft == 2 ? UNF_KEY_OFF : 0);
    f.s_mul = ft == 3 ? 1u << 31 : 0;
    return f;
}

/* |x - y| + z of unsigned and of signed x, y (one instruction each on the device); the high word
 * of x * y. */
static __host__ __device__ __forceinline__ uint32_t unf_absdiff(uint32_t x, uint32_t y, uint32_t z)
{
#ifdef __CUDA_ARCH__
    return __usad(x, y, z);
#else
    return (x > y ? x - y : y - x) + z;
#endif
}

static __host__ __device__ __forceinline__ uint32_t unf_sabsdiff(int x, int y)
{
#ifdef __CUDA_ARCH__
    return __sad(x, y, 0);
#else
    return (uint32_t)(x > y ? x - y : y - x);
#endif
}

static __host__ __device__ __forceinline__ uint32_t unf_mulhi(uint32_t x, uint32_t y)
{
    return (uint32_t)((uint64_t)x * y >> 32);
}

static __host__ __device__ __forceinline__ uint32_t unf_min(uint32_t x, uint32_t y)
{
    return x < y ? x : y;
}

/* One reconstructed byte (0..255) of a row with constants f from bytes 0..255 (the formula
 * above). */
static __host__ __device__ __forceinline__ uint32_t unf_byte(const struct unf_sel &f, uint32_t x, uint32_t a,
                                                             uint32_t b, uint32_t c)
{
    const uint32_t ka = (unf_absdiff(b, c, f.a_off) << 10) + a;
    const uint32_t kb = (unf_absdiff(a, c, 0) << 10) + (b | f.b_or);
    const uint32_t kc = (unf_sabsdiff((int)a, (int)(2 * c) - (int)b) << 10) + ((c & f.c_and) | f.c_or);

    return (x + unf_min(unf_min(ka, kb), kc) + unf_mulhi(a + b, f.s_mul)) & 0xffu;
}

/* One step of a lane (the head comment): chunk x of its row from the chunk it made the step before
 * (r, its bytes; all 0 before the row's first chunk) and the chunk above, which lane t - 1 made the
 * step before and hands over byte by byte, or for lane 0 (top) mu, from the mailbox. u holds the
 * bytes above the chunk before (upper-left neighbours). r and u become this chunk's. Bytes k of a
 * chunk whose left neighbour lies in it (k >= BPP) wait for that one; the others only for r. */
template <int BPP>
static __device__ __forceinline__ void unf_step(const struct unf_sel &f, uint32_t x, uint32_t mu, bool top,
                                                uint32_t r[UNF_CHUNK], uint32_t u[UNF_CHUNK])
{
    uint32_t b[UNF_CHUNK], n[UNF_CHUNK];

#pragma unroll
    for (int k = 0; k < UNF_CHUNK; k++) {
        b[k] = __shfl_up_sync(UNF_LANES, r[k], 1);
        b[k] = top ? mu >> 8 * k & 0xffu : b[k];
    }
#pragma unroll
    for (int k = 0; k < UNF_CHUNK; k++) {
        const int in = k >= BPP ? k - BPP : 0, before = k >= BPP ? 0 : UNF_CHUNK - BPP + k; /* one is used */
        const uint32_t a = k >= BPP ? n[in] : r[before], c = k >= BPP ? b[in] : u[before];
        n[k] = unf_byte(f, x >> 8 * k & 0xffu, a, b[k], c);
    }
#pragma unroll
    for (int k = 0; k < UNF_CHUNK; k++)
        r[k] = n[k], u[k] = b[k];
}

/* The bytes of chunk j (r) of the row at cur, rowbytes long, that lie in none of its aligned words
 * wlo .. whi (d_w from cur - o: word j holds the chunk's first 4 - o bytes, word j + 1 the rest),
 * one by one. Only chunks 0, chunks - 2 and chunks - 1 have such bytes: whi >= chunks - 2. */
static __device__ __forceinline__ void unf_store_edge(uint8_t *cur, int j, int o, int wlo, int whi,
                                                      int rowbytes, uint32_t r)
{
    const bool in0 = j >= wlo && j <= whi, in1 = o == 0 || j + 1 <= whi;

    if (j < 0)
        return;
#pragma unroll
    for (int k = 0; k < UNF_CHUNK; k++)
        if (4 * j + k < rowbytes && !(k + o < 4 ? in0 : in1))
            cur[4 * j + k] = (uint8_t)(r >> 8 * k);
}

/* A mailbox word: loaded and stored whole, at the device's scope, never cached out of date. The
 * load and the post are predicated instructions, not branches around them. */
static __device__ __forceinline__ uint64_t unf_mail_load(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(__cvta_generic_to_global(p)));
    return v;
}

/* *v = *p when on; p is not read otherwise (it may lie past the mailbox then). */
static __device__ __forceinline__ void unf_mail_load_if(uint64_t *v, const uint64_t *p, bool on)
{
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t"
                 "@q ld.relaxed.gpu.global.u64 %0, [%1];\n\t}"
                 : "+l"(*v)
                 : "l"(__cvta_generic_to_global(p)), "r"((uint32_t)on));
}

static __device__ __forceinline__ void unf_mail_post_if(uint64_t *p, int j, uint32_t r, bool on)
{
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t"
                 "@q st.relaxed.gpu.global.u64 [%0], %1;\n\t}" ::"l"(__cvta_generic_to_global(p)),
                 "l"((uint64_t)(j + 1) << 32 | r), "r"((uint32_t)on));
}

static __device__ __forceinline__ uint64_t unf_clock(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Chunk j of the row above from its mailbox word p, not posted when it was loaded: polled until
 * posted, spinning UNF_SPINS times and then napping between polls, for at most UNF_WAIT_NS; past
 * that the image is declined (*late, d_status[1]) and the lane waits no more. Returns the word. */
static __device__ __forceinline__ uint64_t unf_wait(const uint64_t *p, int j, bool *late, int *d_status)
{
    const uint64_t t0 = unf_clock();
    uint64_t v;

    for (int n = 0;; n++) {
        if (n >= UNF_SPINS)
            __nanosleep(UNF_NAP_NS);
        v = unf_mail_load(p);
        if ((uint32_t)(v >> 32) == (uint32_t)j + 1)
            return v;
        if (unf_clock() - t0 > UNF_WAIT_NS) {
            *late = true;
            d_status[1] = PNG_UNF_LATE;
            return v;
        }
    }
}

/* Band `band` of im: the lane's row, in steps (the head comment); BPP is im.bpp. */
template <int BPP>
static __device__ __forceinline__ void unf_band(const struct png_unf_image &im, uint64_t *work, uint32_t band,
                                                uint32_t bands)
{
    const int t = (int)threadIdx.x, chunks = (int)unf_chunks(im.rowbytes);
    const uint32_t r0 = band * UNF_ROWS, rows = min((uint32_t)UNF_ROWS, im.h - r0);
    const int steps = chunks + (int)rows - 1;
    const bool valid = t < (int)rows;
    uint8_t *cur = im.d_raw + (size_t)(r0 + (valid ? t : 0)) * (im.rowbytes + 1) + 1;
    /* d_w's word w holds the row's bytes 4w - o .. 4w + 3 - o: word last its last byte, words
     * wlo .. whi lie wholly inside it */
    const int rowbytes = (int)im.rowbytes, o = (int)((uintptr_t)cur & 3), last = (rowbytes - 1 + o) >> 2;
    const int wlo = o != 0, whi = (rowbytes + o - 4) >> 2;
    uint32_t *d_w = (uint32_t *)(cur - o);
    const uint64_t *d_above = work + 2 + (size_t)(band > 0 ? band - 1 : 0) * chunks;
    uint64_t *d_post = work + 2 + (size_t)band * chunks;
    int ft = valid ? cur[-1] : 0;
    uint32_t q[UNF_RING], r[UNF_CHUNK] = {0, 0, 0, 0}, u[UNF_CHUNK] = {0, 0, 0, 0}, w = 0;
    uint32_t e0 = 0, e1 = 0, e2 = 0; /* chunks 0, chunks - 2 and chunks - 1, for unf_store_edge */
    uint64_t m[UNF_RING];
    bool late = false;

    if (ft > 4) {
        im.d_status[1] = PNG_UNF_BAD_FILTER;
        ft = 0; /* keep going without it: the result is dropped */
    }
    const struct unf_sel f = unf_sel_of(ft);
    const bool wait = t == 0 && band > 0 && ft >= 2; /* Up, Average, Paeth read the band above */
    const bool post = t == UNF_ROWS - 1 && band + 1 < bands;
    /* Step k loads word j + UNF_RING - 1 (j = k - t) into q[k % UNF_RING] when the row has that
     * word (a slot not loaded is read only where its bytes do not count: before the row, x is 0;
     * past it, its bytes are past the row's end) and reads words j, j + 1 from the two slots after
     * it; lane 0 reads chunk k's post in m[k % UNF_RING] (0 when it does not wait: the row above is
     * then taken as zeros, which its type does not read). */
#pragma unroll
    for (int s = 0; s < UNF_RING; s++) {
        q[s] = 0;
        if (s > 0 && valid && (unsigned)(s - 1 - t) <= (unsigned)last)
            q[s] = d_w[s - 1 - t];
        m[s] = 0;
        unf_mail_load_if(&m[s], d_above + s, s < UNF_MAIL_AHEAD && s < chunks && wait);
    }
    /* Whole rounds of UNF_RING steps: the few past the band's last make bytes nothing reads, as a
     * lane does after its row's last chunk. */
    for (int k0 = 0; k0 < steps; k0 += UNF_RING) {
        uint64_t *const d_round = d_post + (k0 - t); /* chunk j's post at d_round + s */
#pragma unroll
        for (int s = 0; s < UNF_RING; s++) {
            const int k = k0 + s, j = k - t, jq = j + UNF_RING - 1;
            /* before the row's first chunk the lane makes zeros: x is 0 and so are r, u and what
             * lane t - 1, itself before its first, hands over */
            const uint32_t x =
                j >= 0 ? __funnelshift_r(q[(s + 1) % UNF_RING], q[(s + 2) % UNF_RING], 8 * o) : 0;
            if (valid && (unsigned)jq <= (unsigned)last)
                q[s] = d_w[jq];
            if (s % 2 == 0) { /* chunks k and k + 1 above, checked together: a branch a pair of steps */
                const bool w0 = wait && k < chunks && (uint32_t)(m[s] >> 32) != (uint32_t)k + 1;
                const bool w1 = wait && k + 1 < chunks && (uint32_t)(m[s + 1] >> 32) != (uint32_t)k + 2;
                if ((w0 || w1) && !late) {
                    if (w0)
                        m[s] = unf_wait(d_above + k, k, &late, im.d_status);
                    if (w1 && !late)
                        m[s + 1] = unf_wait(d_above + k + 1, k + 1, &late, im.d_status);
                }
            }
            const uint32_t mu = (uint32_t)m[s];
            unf_mail_load_if(&m[(s + UNF_MAIL_AHEAD) % UNF_RING], d_above + k + UNF_MAIL_AHEAD,
                             wait && k + UNF_MAIL_AHEAD < chunks);
            unf_step<BPP>(f, x, mu, t == 0, r, u);
            const uint32_t n = r[0] | r[1] << 8 | r[2] << 16 | r[3] << 24;
            if (valid && j >= wlo && j <= whi) /* the word of the chunk's first bytes */
                d_w[j] = __funnelshift_rc(w, n, 32 - 8 * o);
            unf_mail_post_if(d_round + s, j, n, post && (unsigned)j < (unsigned)chunks);
            e0 = j == 0 ? n : e0;
            if ((unsigned)j < (unsigned)chunks)
                e1 = e2, e2 = n;
            w = n;
        }
    }
    if (valid) {
        unf_store_edge(cur, 0, o, wlo, whi, rowbytes, e0);
        unf_store_edge(cur, chunks - 2, o, wlo, whi, rowbytes, e1);
        unf_store_edge(cur, chunks - 1, o, wlo, whi, rowbytes, e2);
    }
}

/* Block (x, i): one band of image i, the band numbered by its ticket; blocks past the image's
 * bands, and every block of an image whose inflate declined (its rows are undefined), end at once.
 * One block a multiprocessor is all the bounds ask: with more, ptxas keeps the step's state in
 * fewer registers and spills. */
__global__ void __launch_bounds__(UNF_ROWS, 1) unfilter_kernel(const struct png_unf_batch b)
{
    const struct png_unf_image im = b.im[blockIdx.y];
    const uint32_t bands = unf_bands(im.h);
    uint32_t band = 0;

    if (blockIdx.x >= bands || *im.d_inflated != GINFLATE_OK)
        return;
    uint64_t *work = (uint64_t *)(im.d_raw + unf_work_offset(im.rowbytes, im.h));
    if (threadIdx.x == 0)
        band = atomicAdd((unsigned int *)work, 1u);
    band = __shfl_sync(UNF_LANES, band, 0);
    switch (im.bpp) { /* the launcher checked 1..UNF_CHUNK */
    case 1:
        unf_band<1>(im, work, band, bands);
        break;
    case 2:
        unf_band<2>(im, work, band, bands);
        break;
    case 3:
        unf_band<3>(im, work, band, bands);
        break;
    default:
        unf_band<4>(im, work, band, bands);
    }
}

/* Blocks (x, i): image i's status pair, and its scratch cleared when its rows are to be undone. */
__global__ void unfilter_reset_kernel(const struct png_unf_batch b)
{
    const struct png_unf_image im = b.im[blockIdx.y];
    const size_t n = unf_work_words(im.rowbytes, im.h);
    uint64_t *work = (uint64_t *)(im.d_raw + unf_work_offset(im.rowbytes, im.h));

    if (blockIdx.x == 0 && threadIdx.x == 0)
        im.d_status[0] = *im.d_inflated, im.d_status[1] = 0;
    if (*im.d_inflated != GINFLATE_OK)
        return;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        work[i] = 0;
}

cudaError_t png_unfilter_launch(const struct png_unf_batch *b, cudaStream_t s)
{
    uint32_t bands = 0;
    size_t words = 0;
    cudaError_t e;

    if (b->n < 1)
        return cudaSuccess;
    if (b->n > GCONV_PNG_MAX_BATCH)
        return cudaErrorInvalidValue;
    for (int i = 0; i < b->n; i++) {
        const struct png_unf_image *im = &b->im[i];
        if (!png_unfilter_bytes(im->rowbytes, im->h) || im->bpp < 1 || im->bpp > UNF_CHUNK ||
            ((uintptr_t)im->d_raw & 15) != 0)
            return cudaErrorInvalidValue;
        bands = max(bands, unf_bands(im->h));
        words = max(words, unf_work_words(im->rowbytes, im->h));
    }
    dim3 reset((unsigned)min(words / UNF_RESET_THREADS + 1, (size_t)UNF_RESET_BLOCKS), (unsigned)b->n);
    unfilter_reset_kernel<<<reset, UNF_RESET_THREADS, 0, s>>>(*b);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    unfilter_kernel<<<dim3(bands, (unsigned)b->n), UNF_ROWS, 0, s>>>(*b);
    return cudaGetLastError();
}

/* Expansion: one thread per output pixel. */
#define EXPAND_BLOCK_X 64
#define EXPAND_BLOCK_Y 4

enum expand_mode { EXPAND_COPY, EXPAND_KEY, EXPAND_PALETTE };

struct expand_args {
    const uint8_t *d_raw;
    const uint8_t *d_rgba;
    uint8_t *d_dst;
    size_t stride;
    int w, h, depth, bpp, out_ch, mode;
    uint8_t key[3];
};

__global__ void expand_kernel(const struct expand_args a)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;

    if (x >= a.w || y >= a.h)
        return;
    const uint8_t *src = a.d_raw + (size_t)y * a.stride + 1;
    uint8_t *dst = a.d_dst + ((size_t)y * a.w + x) * a.out_ch;
    if (a.mode == EXPAND_PALETTE) {
        int ppb = 8 / a.depth, shift = a.depth * (ppb - 1 - x % ppb);
        int idx = a.depth == 8 ? src[x] : (src[x / ppb] >> shift) & ((1 << a.depth) - 1);
        for (int c = 0; c < a.out_ch; c++)
            dst[c] = __ldg(a.d_rgba + 4 * idx + c);
        return;
    }
    src += (size_t)x * a.bpp;
    int same = 1;
    for (int c = 0; c < a.bpp; c++) {
        dst[c] = src[c];
        same &= src[c] == a.key[c];
    }
    if (a.mode == EXPAND_KEY)
        dst[a.bpp] = same ? 0 : 255;
}

cudaError_t png_expand_launch(const struct png_layout *lay, const uint8_t *d_raw, const uint8_t *d_rgba,
                              uint8_t *d_dst, cudaStream_t s)
{
    struct expand_args a;
    dim3 block(EXPAND_BLOCK_X, EXPAND_BLOCK_Y);
    dim3 grid(div_up((int)lay->w, EXPAND_BLOCK_X), div_up((int)lay->h, EXPAND_BLOCK_Y));

    memset(&a, 0, sizeof(a));
    a.d_raw = d_raw, a.d_rgba = d_rgba, a.d_dst = d_dst, a.stride = lay->rowbytes + 1;
    a.w = (int)lay->w, a.h = (int)lay->h, a.depth = lay->depth, a.bpp = lay->bpp, a.out_ch = lay->out_ch;
    a.mode = lay->color == PNG_COLOR_PALETTE ? EXPAND_PALETTE : lay->has_key ? EXPAND_KEY : EXPAND_COPY;
    for (int c = 0; c < 3; c++)
        a.key[c] = lay->key[c];
    expand_kernel<<<grid, block, 0, s>>>(a);
    return cudaGetLastError();
}
