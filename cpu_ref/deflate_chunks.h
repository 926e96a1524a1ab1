/* deflate_chunks.h — deflate in independent chunks: one C core for host and device, and its host driver. */
#ifndef EDGED_DEFLATE_CHUNKS_H
#define EDGED_DEFLATE_CHUNKS_H

/* The input is cut into chunks of a fixed size. Each chunk is compressed on its own (one device
 * thread, or one call of the host driver's loop) with the previous DEFL_WINDOW bytes of the *input*
 * as its dictionary, so the ratio stays close to one stream's. A chunk is one dynamic Huffman
 * block, or stored blocks where those are smaller, followed by a sync flush (an empty stored
 * block, which byte-aligns) unless it is the last: the chunks' bytes concatenate into one deflate
 * stream. Each chunk's Adler-32 is taken on its own and the sums combined (defl_adler32_combine).
 *
 * Matching is greedy over three candidates at each position: distance 1 (runs), a hint distance
 * given by the caller (one PNG row back: the row above's pattern), and a one-entry hash table of
 * 4-byte prefixes. A chunk of long runs (an edge map's) is parsed with the first two only, which
 * costs a fraction per byte (no table to clear and fill); a count of its runs, a word at a time,
 * decides. Code lengths are limited to 15 by flattening the counts and building again.
 * Everything below marked DEFL_HD compiles as C11 and as CUDA device code. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define DEFL_HD __host__ __device__
#else
#define DEFL_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define DEFL_WINDOW 32768u
#define DEFL_MAX_CHUNK (1u << 24) /* positions within dictionary + chunk fit 32 bits */
/* 16 KiB of table a chunk: 14 bits gave no smaller edge maps for four times the clearing */
#define DEFL_HASH_BITS 12
#define DEFL_HASH_SIZE (1u << DEFL_HASH_BITS)
#define DEFL_HASH_EMPTY 0xffffffffu
#define DEFL_MIN_MATCH 3
#define DEFL_MAX_MATCH 258
#define DEFL_MAX_STORED 65535u
/* Positions inside a match enter the hash table only for matches up to this long: long matches
 * are runs and repeated rows, which the distance-1 and hint candidates find without the table. */
#define DEFL_MAX_INSERT 16
/* Of the dictionary (the input before a chunk), only the last this many bytes enter the hash
 * table: on edge maps the whole window gave under 1 % smaller streams (the row-back and run
 * candidates reach the whole window without it) for eight times the inserts. */
#define DEFL_DICT_HASH 4096u
#define DEFL_NLITLEN 286
#define DEFL_NDIST 30
#define DEFL_NCLEN 19
#define DEFL_MAXBITS 15
#define DEFL_CLEN_MAXBITS 7
#define DEFL_ADLER_BASE 65521u
#define DEFL_ADLER_NMAX 5552 /* bytes before the sums must be reduced */

/* ---- Adler-32 ---- */

/* The Adler-32 of n bytes at p continuing from adler (1 for a fresh sum). */
DEFL_HD static inline uint32_t defl_adler32(uint32_t adler, const uint8_t *p, size_t n)
{
    uint32_t a = adler & 0xffffu, b = adler >> 16;

    while (n) {
        size_t k = n < DEFL_ADLER_NMAX ? n : DEFL_ADLER_NMAX;

        n -= k;
        while (k--) {
            a += *p++;
            b += a;
        }
        a %= DEFL_ADLER_BASE;
        b %= DEFL_ADLER_BASE;
    }
    return a | b << 16;
}

/* The Adler-32 of n bytes at p from sums over parts taken in any order (threads of a block):
 * defl_adler32_part adds bytes [from, to) to s1 (the bytes) and s2 (each byte times n minus its
 * position), defl_adler32_sums turns the totals into the checksum (A = 1 + s1, B = n + s2). */
DEFL_HD static inline void defl_adler32_part(const uint8_t *p, size_t from, size_t to, size_t n, uint64_t *s1,
                                             uint64_t *s2)
{
    for (size_t j = from; j < to; j++)
        *s1 += p[j], *s2 += (uint64_t)(n - j) * p[j];
}

DEFL_HD static inline uint32_t defl_adler32_sums(size_t n, uint64_t s1, uint64_t s2)
{
    return (uint32_t)((1 + s1) % DEFL_ADLER_BASE) | (uint32_t)((n + s2) % DEFL_ADLER_BASE) << 16;
}

/* The Adler-32 of A followed by B from a1 (of A), a2 (of B alone) and B's length. */
DEFL_HD static inline uint32_t defl_adler32_combine(uint32_t a1, uint32_t a2, size_t len2)
{
    uint64_t rem = len2 % DEFL_ADLER_BASE, s1 = a1 & 0xffffu, s2 = rem * s1 % DEFL_ADLER_BASE;

    s1 += (a2 & 0xffffu) + DEFL_ADLER_BASE - 1;
    s2 += (a1 >> 16) + (a2 >> 16) + DEFL_ADLER_BASE - rem;
    s1 %= DEFL_ADLER_BASE;
    s2 %= DEFL_ADLER_BASE;
    return (uint32_t)(s1 | s2 << 16);
}

/* ---- Huffman codes ---- */

/* Working arrays of defl_huff_build: on the device they live in global memory (per-thread local
 * arrays this large would reserve local memory for every resident thread). */
struct defl_huff_tmp {
    uint32_t freq[DEFL_NLITLEN], w[2 * DEFL_NLITLEN];
    int16_t sym[DEFL_NLITLEN], parent[2 * DEFL_NLITLEN];
    uint8_t depth[2 * DEFL_NLITLEN];
};

/* Huffman code lengths of at most maxbits for freq_in[0..n) (n <= DEFL_NLITLEN), 0 for unused
 * symbols, with the working arrays in t. At least two symbols get a length (dummies if needed), so
 * every code is complete. Where the tree is too deep, the counts are flattened and the tree built
 * again. */
DEFL_HD static inline void defl_huff_build(const uint32_t *freq_in, int n, int maxbits, uint8_t *len,
                                           struct defl_huff_tmp *t)
{
    uint32_t *freq = t->freq, *w = t->w;
    int16_t *sym = t->sym, *parent = t->parent;
    uint8_t *depth = t->depth;
    int m = 0, deepest;

    memcpy(freq, freq_in, (size_t)n * sizeof(*freq));
    for (int s = 0; s < n && m < 2; s++)
        m += freq[s] != 0;
    for (int s = 0; s < 2 && m < 2; s++)
        if (!freq[s])
            freq[s] = 1, m++;
    do {
        m = 0;
        for (int s = 0; s < n; s++)
            if (freq[s]) {
                int i = m++;

                for (; i > 0 && freq[sym[i - 1]] > freq[s]; i--)
                    sym[i] = sym[i - 1];
                sym[i] = (int16_t)s;
            }
        for (int i = 0; i < m; i++)
            w[i] = freq[sym[i]];
        for (int next = m, li = 0, ii = m; next < 2 * m - 1; next++) {
            int c[2];

            for (int k = 0; k < 2; k++)
                c[k] = li < m && (ii >= next || w[li] <= w[ii]) ? li++ : ii++;
            w[next] = w[c[0]] + w[c[1]];
            parent[c[0]] = parent[c[1]] = (int16_t)next;
        }
        depth[2 * m - 2] = 0;
        deepest = 0;
        for (int i = 2 * m - 3; i >= 0; i--) {
            depth[i] = (uint8_t)(depth[parent[i]] + 1);
            if (depth[i] > deepest)
                deepest = depth[i];
        }
        for (int s = 0; s < n; s++)
            freq[s] = freq[s] ? (freq[s] >> 1) | 1 : 0;
    } while (deepest > maxbits);
    memset(len, 0, (size_t)n);
    for (int i = 0; i < m; i++)
        len[sym[i]] = depth[i];
}

/* defl_huff_build with its working arrays on the stack (host callers). */
static inline void defl_huff_lengths(const uint32_t *freq_in, int n, int maxbits, uint8_t *len)
{
    struct defl_huff_tmp t;

    defl_huff_build(freq_in, n, maxbits, len, &t);
}

/* Canonical codes for len[0..n), bit-reversed for the LSB-first writer. */
DEFL_HD static inline void defl_huff_codes(const uint8_t *len, int n, uint16_t *code)
{
    int count[DEFL_MAXBITS + 1] = {0}, next[DEFL_MAXBITS + 1];

    for (int s = 0; s < n; s++)
        count[len[s]]++;
    count[0] = 0;
    next[0] = 0;
    for (int b = 1; b <= DEFL_MAXBITS; b++)
        next[b] = (next[b - 1] + count[b - 1]) << 1;
    for (int s = 0; s < n; s++) {
        unsigned c = len[s] ? (unsigned)next[len[s]]++ : 0, r = 0;

        for (int b = 0; b < len[s]; b++)
            r |= ((c >> b) & 1u) << (len[s] - 1 - b);
        code[s] = (uint16_t)r;
    }
}

/* ---- length and distance symbols ---- */

DEFL_HD static inline int defl_log2(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return 31 - __clz(x);
#else
    return 31 - __builtin_clz(x);
#endif
}

/* The length code (0..28; symbol 257 + it) of a match length 3..258, its extra bit count and value. */
DEFL_HD static inline int defl_len_code(unsigned len, int *nextra, unsigned *extra)
{
    unsigned x = len - 3;
    int nb;

    if (len == DEFL_MAX_MATCH) {
        *nextra = 0, *extra = 0;
        return 28;
    }
    if (x < 8) {
        *nextra = 0, *extra = 0;
        return (int)x;
    }
    nb = defl_log2(x);
    *nextra = nb - 2;
    *extra = x & ((1u << (nb - 2)) - 1);
    return 4 * (nb - 1) + (int)((x >> (nb - 2)) & 3u);
}

/* The distance code (0..29) of a distance 1..32768, its extra bit count and value. */
DEFL_HD static inline int defl_dist_code(unsigned dist, int *nextra, unsigned *extra)
{
    unsigned x = dist - 1;
    int nb;

    if (x < 4) {
        *nextra = 0, *extra = 0;
        return (int)x;
    }
    nb = defl_log2(x);
    *nextra = nb - 1;
    *extra = x & ((1u << (nb - 1)) - 1);
    return 2 * nb + (int)((x >> (nb - 1)) & 1u);
}

/* ---- LZ77 ---- */

/* A token: a literal byte (0..255), or a match (dist << 9 | len, dist >= 1). */
#define DEFL_TOK_MATCH(len, dist) ((uint32_t)(dist) << 9 | (uint32_t)(len))

/* The 4 bytes at p as a little-endian word, p of any alignment. The device reads the aligned words
 * around p (never past the aligned word that holds p[3], so never outside an allocation that holds
 * p[3]) and shifts them together: a byte at a time cost a load each. */
DEFL_HD static inline uint32_t defl_load32(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
    const uint32_t *a = (const uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
    unsigned sh = ((unsigned)(uintptr_t)p & 3u) * 8u;

    return sh ? __funnelshift_r(a[0], a[1], sh) : a[0];
#else
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}

DEFL_HD static inline uint32_t defl_hash4(const uint8_t *p)
{
    return (defl_load32(p) * 0x9E3779B1u) >> (32 - DEFL_HASH_BITS);
}

/* How many bytes of a and b agree, up to max: a word at a time, then byte by byte. */
DEFL_HD static inline unsigned defl_match_len(const uint8_t *a, const uint8_t *b, unsigned max)
{
    unsigned n = 0;

    for (; n + 4 <= max; n += 4) {
        uint32_t x = defl_load32(a + n) ^ defl_load32(b + n);

        if (x) {
#ifdef __CUDA_ARCH__
            return n + (unsigned)(__ffs((int)x) - 1) / 8;
#else
            return n + (unsigned)__builtin_ctz(x) / 8;
#endif
        }
    }
    while (n < max && a[n] == b[n])
        n++;
    return n;
}

/* Inserts positions [from, to) (each with 4 bytes before end) into the hash table; positions are
 * stored relative to base. */
DEFL_HD static inline void defl_hash_insert(const uint8_t *in, size_t base, size_t from, size_t to,
                                            size_t end, uint32_t *hash)
{
    if (end < 4)
        return;
    if (to > end - 3)
        to = end - 3;
    for (size_t p = from; p < to; p++)
        hash[defl_hash4(in + p)] = (uint32_t)(p - base);
}

/* The block's counts: literal/length and distance symbols. */
struct defl_freq {
    uint32_t lit[DEFL_NLITLEN], dist[DEFL_NDIST];
};

/* A chunk is parsed without the hash table when its runs (bytes equal to the one before) are this
 * long on average: edge maps. Shorter runs are worth the table. */
#define DEFL_RUNS_MIN_AVG 8

/* How many bytes of in[start, start + len) differ from the byte before them (in[start] counts
 * when start is 0): a word at a time. */
DEFL_HD static inline size_t defl_changes(const uint8_t *in, size_t start, size_t len)
{
    size_t p = start, end = start + len, n = 0;

    if (p == 0 && p < end)
        n++, p++;
    for (; p + 4 <= end; p += 4) {
        uint32_t x = defl_load32(in + p) ^ defl_load32(in + p - 1);

        /* the high bit of each byte that differs */
        x = (((x & 0x7f7f7f7fu) + 0x7f7f7f7fu) | x) & 0x80808080u;
#ifdef __CUDA_ARCH__
        n += (size_t)__popc(x);
#else
        n += (size_t)__builtin_popcount(x);
#endif
    }
    for (; p < end; p++)
        n += in[p] != in[p - 1];
    return n;
}

/* Parses in[start, start + len) greedily into tok (room for len tokens) with in[base, start) as
 * the dictionary, counting symbols in f (zeroed here). hint: a distance worth trying everywhere (0:
 * none). hash: DEFL_HASH_SIZE entries, or NULL for a parse of distance 1 and hint only (runs and
 * repeated rows, as a run coder: no table to clear and fill, a fraction of the cost per byte).
 * Returns the token count. */
DEFL_HD static inline size_t defl_parse(const uint8_t *in, size_t base, size_t start, size_t len,
                                        unsigned hint, uint32_t *hash, uint32_t *tok, struct defl_freq *f)
{
    size_t end = start + len, p = start, t = 0;

    memset(f, 0, sizeof(*f));
    if (hash) {
        for (unsigned i = 0; i < DEFL_HASH_SIZE; i++)
            hash[i] = DEFL_HASH_EMPTY;
        defl_hash_insert(in, base, start - base > DEFL_DICT_HASH ? start - DEFL_DICT_HASH : base, start, end,
                         hash);
    }
    while (p < end) {
        unsigned max = end - p < DEFL_MAX_MATCH ? (unsigned)(end - p) : DEFL_MAX_MATCH, best = 0, dist = 0, l;

        if (p > base && (l = defl_match_len(in + p, in + p - 1, max)) > best)
            best = l, dist = 1;
        if (hint > 1 && hint <= DEFL_WINDOW && p - base >= hint && best < max &&
            (l = defl_match_len(in + p, in + p - hint, max)) > best)
            best = l, dist = hint;
        if (hash && max >= 4) {
            uint32_t h = defl_hash4(in + p), c = hash[h];

            hash[h] = (uint32_t)(p - base);
            if (c != DEFL_HASH_EMPTY && best < max && p - (base + c) <= DEFL_WINDOW &&
                (l = defl_match_len(in + p, in + base + c, max)) > best)
                best = l, dist = (unsigned)(p - (base + c));
        }
        if (best >= DEFL_MIN_MATCH) {
            int ne;
            unsigned ev;

            tok[t++] = DEFL_TOK_MATCH(best, dist);
            f->lit[257 + defl_len_code(best, &ne, &ev)]++;
            f->dist[defl_dist_code(dist, &ne, &ev)]++;
            if (hash && best <= DEFL_MAX_INSERT)
                defl_hash_insert(in, base, p + 1, p + best, end, hash);
            p += best;
        } else {
            tok[t++] = in[p];
            f->lit[in[p]]++;
            p++;
        }
    }
    f->lit[256] = 1;
    return t;
}

/* ---- block writing ---- */

/* LSB-first bit writer into a buffer sized beforehand. */
struct defl_bits {
    uint8_t *p;
    uint64_t acc;
    int n;
};

/* n is at most 32. */
DEFL_HD static inline void defl_put(struct defl_bits *b, uint32_t v, int n)
{
    b->acc |= (uint64_t)v << b->n;
    b->n += n;
    while (b->n >= 8) {
        *b->p++ = (uint8_t)b->acc;
        b->acc >>= 8;
        b->n -= 8;
    }
}

/* Pads to a byte boundary. */
DEFL_HD static inline void defl_align(struct defl_bits *b)
{
    if (b->n > 0)
        defl_put(b, 0, 8 - b->n);
}

/* The codes of one dynamic block, and its code lengths run-length coded: item i is a code-length
 * symbol (0..18) in the low 5 bits and its extra bits' value above. */
struct defl_plan {
    uint8_t lens[DEFL_NLITLEN + DEFL_NDIST], clen_len[DEFL_NCLEN];
    uint16_t lit_code[DEFL_NLITLEN], dist_code[DEFL_NDIST], clen_code[DEFL_NCLEN];
    uint16_t items[DEFL_NLITLEN + DEFL_NDIST];
    int nlit, ndist, nclen, nitems;
};

/* The code-length symbol sent i-th in the block header (a local table: device code cannot read a
 * host array). */
DEFL_HD static inline int defl_clen_order(int i)
{
    const uint8_t order[DEFL_NCLEN] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

    return order[i];
}

DEFL_HD static inline int defl_clen_extra(int sym)
{
    return sym == 16 ? 2 : sym == 17 ? 3 : sym == 18 ? 7 : 0;
}

/* Run-length codes the n code lengths at lens into k->items, counting symbols in cf. */
DEFL_HD static inline void defl_plan_items(struct defl_plan *k, const uint8_t *lens, int n, uint32_t *cf)
{
    k->nitems = 0;
    for (int i = 0; i < n;) {
        int v = lens[i], run = 1;

        while (i + run < n && lens[i + run] == v)
            run++;
        i += run;
        if (v == 0) {
            for (; run >= 11; run -= run < 138 ? run : 138)
                k->items[k->nitems++] = (uint16_t)(18 | ((run < 138 ? run : 138) - 11) << 5), cf[18]++;
            if (run >= 3)
                k->items[k->nitems++] = (uint16_t)(17 | (run - 3) << 5), cf[17]++, run = 0;
        } else {
            k->items[k->nitems++] = (uint16_t)v, cf[v]++, run--;
            for (; run >= 3; run -= run < 6 ? run : 6)
                k->items[k->nitems++] = (uint16_t)(16 | ((run < 6 ? run : 6) - 3) << 5), cf[16]++;
        }
        for (; run > 0; run--)
            k->items[k->nitems++] = (uint16_t)v, cf[v]++;
    }
}

/* Builds the codes of a block from its counts; returns the block's size in bits (header, tokens
 * and end-of-block code). */
DEFL_HD static inline size_t defl_plan_build(struct defl_plan *k, const struct defl_freq *f,
                                             struct defl_huff_tmp *t)
{
    uint8_t *ll = k->lens, *dl;
    uint32_t cf[DEFL_NCLEN] = {0};
    size_t bits = 3 + 14;

    defl_huff_build(f->lit, DEFL_NLITLEN, DEFL_MAXBITS, ll, t);
    for (k->nlit = DEFL_NLITLEN; !ll[k->nlit - 1]; k->nlit--)
        ;
    dl = ll + k->nlit;
    defl_huff_build(f->dist, DEFL_NDIST, DEFL_MAXBITS, dl, t);
    for (k->ndist = DEFL_NDIST; !dl[k->ndist - 1]; k->ndist--)
        ;
    defl_plan_items(k, ll, k->nlit + k->ndist, cf);
    defl_huff_build(cf, DEFL_NCLEN, DEFL_CLEN_MAXBITS, k->clen_len, t);
    for (k->nclen = DEFL_NCLEN; k->nclen > 4 && !k->clen_len[defl_clen_order(k->nclen - 1)]; k->nclen--)
        ;
    defl_huff_codes(ll, k->nlit, k->lit_code);
    defl_huff_codes(dl, k->ndist, k->dist_code);
    defl_huff_codes(k->clen_len, DEFL_NCLEN, k->clen_code);
    bits += 3 * (size_t)k->nclen;
    for (int s = 0; s < DEFL_NCLEN; s++)
        bits += (size_t)cf[s] * (k->clen_len[s] + defl_clen_extra(s));
    for (int s = 0; s < k->nlit; s++)
        bits += (size_t)f->lit[s] * (ll[s] + (s >= 265 && s < 285 ? (s - 261) / 4 : 0));
    for (int s = 0; s < k->ndist; s++)
        bits += (size_t)f->dist[s] * (dl[s] + (s < 4 ? 0 : s / 2 - 1));
    return bits;
}

/* Writes the header of a dynamic block (BFINAL = final): its code lengths. */
DEFL_HD static inline void defl_block_head(const struct defl_plan *k, int final, struct defl_bits *b)
{
    defl_put(b, (uint32_t) final | 2u << 1, 3);
    defl_put(b, (uint32_t)(k->nlit - 257) | (uint32_t)(k->ndist - 1) << 5 | (uint32_t)(k->nclen - 4) << 10,
             14);
    for (int i = 0; i < k->nclen; i++)
        defl_put(b, k->clen_len[defl_clen_order(i)], 3);
    for (int i = 0; i < k->nitems; i++) {
        int s = k->items[i] & 31;

        defl_put(b, k->clen_code[s], k->clen_len[s]);
        defl_put(b, (uint32_t)k->items[i] >> 5, defl_clen_extra(s));
    }
}

/* Writes one dynamic block (BFINAL = final) of the t tokens. */
DEFL_HD static inline void defl_block_write(const struct defl_plan *k, const uint32_t *tok, size_t t,
                                            int final, struct defl_bits *b)
{
    const uint8_t *ll = k->lens, *dl = ll + k->nlit;

    defl_block_head(k, final, b);
    for (size_t i = 0; i < t; i++) {
        uint32_t v = tok[i];

        if (v < 256) {
            defl_put(b, k->lit_code[v], ll[v]);
        } else {
            int ne, c;
            unsigned ev;

            c = 257 + defl_len_code(v & 511u, &ne, &ev);
            defl_put(b, k->lit_code[c], ll[c]);
            defl_put(b, ev, ne);
            c = defl_dist_code(v >> 9, &ne, &ev);
            defl_put(b, k->dist_code[c], dl[c]);
            defl_put(b, ev, ne);
        }
    }
    defl_put(b, k->lit_code[256], ll[256]);
}

/* ---- chunks ---- */

/* The bytes of len bytes as stored blocks (at least one block, of up to DEFL_MAX_STORED bytes). */
DEFL_HD static inline size_t defl_stored_size(size_t len)
{
    size_t blocks = len ? (len + DEFL_MAX_STORED - 1) / DEFL_MAX_STORED : 1;

    return len + 5 * blocks;
}

/* The most bytes defl_chunk writes for a chunk of len bytes: its stored size (a dynamic block is
 * only written when smaller, sync flush included). */
DEFL_HD static inline size_t defl_chunk_bound(size_t len)
{
    return defl_stored_size(len);
}

/* Writes in[start, start + len) as stored blocks, the last with BFINAL = final; returns the bytes. */
DEFL_HD static inline size_t defl_write_stored(const uint8_t *in, size_t start, size_t len, int final,
                                               uint8_t *out)
{
    uint8_t *o = out;
    size_t done = 0;

    do {
        size_t k = len - done < DEFL_MAX_STORED ? len - done : DEFL_MAX_STORED;

        o[0] = (uint8_t)(final && done + k == len);
        o[1] = (uint8_t)k, o[2] = (uint8_t)(k >> 8);
        o[3] = (uint8_t)~k, o[4] = (uint8_t)(~k >> 8);
        memcpy(o + 5, in + start + done, k);
        o += 5 + k;
        done += k;
    } while (done < len);
    return (size_t)(o - out);
}

/* Ends a chunk whose block b has written: a sync flush (an empty stored block) unless it is the
 * final one, then byte alignment. Returns the chunk's bytes from out. */
DEFL_HD static inline size_t defl_chunk_end(struct defl_bits *b, int final, uint8_t *out)
{
    if (!final)
        defl_put(b, 0, 3);
    defl_align(b);
    if (!final) {
        b->p[0] = 0, b->p[1] = 0, b->p[2] = 0xff, b->p[3] = 0xff;
        b->p += 4;
    }
    return (size_t)(b->p - out);
}

/* A chunk's counts, codes and code-building arrays. */
struct defl_work {
    struct defl_freq f;
    struct defl_plan k;
    struct defl_huff_tmp h;
};

/* Where a chunk's tables live: hash (DEFL_HASH_SIZE entries), tok (one per input byte) and work. */
struct defl_scratch {
    uint32_t *hash, *tok;
    struct defl_work *work;
};

/* Compresses chunk in[start, start + len) of the n-byte input into out (defl_chunk_bound(len)
 * bytes), the final one of the stream when final. Level 0 stores; any other level parses greedily
 * (see the top of this file). hint: a distance to try everywhere (0: none). Returns the bytes
 * written; the chunk ends byte-aligned. */
DEFL_HD static inline size_t defl_chunk(const uint8_t *in, size_t start, size_t len, int final, int level,
                                        unsigned hint, struct defl_scratch sc, uint8_t *out)
{
    size_t base = start > DEFL_WINDOW ? start - DEFL_WINDOW : 0, stored = defl_stored_size(len), t, bits,
           bytes;
    struct defl_work *w = sc.work;
    struct defl_bits b = {out, 0, 0};

    if (level == 0 || len == 0)
        return defl_write_stored(in, start, len, final, out);
    t = defl_parse(in, base, start, len, hint,
                   defl_changes(in, start, len) * DEFL_RUNS_MIN_AVG <= len ? NULL : sc.hash, sc.tok, &w->f);
    bits = defl_plan_build(&w->k, &w->f, &w->h);
    bytes = final ? (bits + 7) / 8 : (bits + 3 + 7) / 8 + 4;
    if (bytes >= stored)
        return defl_write_stored(in, start, len, final, out);
    defl_block_write(&w->k, sc.tok, t, final, &b);
    return defl_chunk_end(&b, final, out);
}

/* ---- host driver ---- */

#define DEFLCHUNKS_ZLIB_OVERHEAD 6 /* zlib header 2 + Adler-32 4 */

/* The most bytes the host driver (deflhost_compress) writes for n bytes in chunks of chunk bytes; 0
 * on overflow. */
size_t deflchunks_bound(size_t n, size_t chunk);

/* Writes the 2-byte zlib header of a chunked stream at p. */
void deflchunks_zlib_header(uint8_t *p);

#ifdef __cplusplus
}
#endif
#endif
