/* deflate_runs.h — the run coder of two-level maps in chunks: one C core for host and device. */
#ifndef EDGED_DEFLATE_RUNS_H
#define EDGED_DEFLATE_RUNS_H

/* An image whose samples are all 0 or 255 (an edge map) is written unfiltered, and each chunk of
 * it (deflate_chunks.h: one dynamic block and a sync flush) is coded as its runs of equal bytes,
 * as the CPU encoder's run coder codes a whole map: a run of byte v is the literal v, then
 * matches at distance 1 of 258 bytes while more than 258 remain, then the rest as one match, or
 * as one or two more literals. A run's tokens depend only on its byte and length, so the device
 * finds the runs, counts the symbols, sizes every run's bits and writes them all in parallel
 * (gpu/gconv_png_encode.cu); defl_runs_chunk writes the same bytes serially. A chunk's first run
 * starts at the chunk, so chunks stay independent. A chunk whose runs are shorter than
 * DEFL_RUNS_MIN_BYTES on average goes to the greedy parser, as the CPU encoder hands such maps to
 * libdeflate. Everything marked DEFL_HD compiles as C11 and as CUDA device code. */

#include "deflate_chunks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DEFL_RUNS_MIN_BYTES 2

/* Whether each of the n bytes at p is 0 or 255 (all of its bits equal), a word at a time; the
 * CPU encoder asks it of each row before its run coder. */
DEFL_HD static inline int defl_two_level(const uint8_t *p, size_t n)
{
    uint32_t bad = 0;
    size_t i = 0;

    for (; i + 4 <= n; i += 4) {
        uint32_t x = defl_load32(p + i);

        bad |= (x ^ (x >> 1)) & 0x7f7f7f7fu;
    }
    for (; i < n; i++)
        bad |= (uint32_t)((p[i] ^ (p[i] >> 1)) & 0x7f);
    return bad == 0;
}

/* Whether a chunk of len bytes with `changes` run starts (defl_changes) is coded as runs. */
DEFL_HD static inline int defl_runs_take(size_t changes, size_t len)
{
    return len > 0 && changes * DEFL_RUNS_MIN_BYTES <= len;
}

/* A run of len >= 1 bytes after its literal: full matches of DEFL_MAX_MATCH bytes, then the rest
 * (0..DEFL_MAX_MATCH bytes: one match from DEFL_MIN_MATCH up, else that many literals). */
DEFL_HD static inline void defl_run_split(uint32_t len, uint32_t *full, uint32_t *rest)
{
    uint32_t r = len - 1;

    *full = r ? (r - 1) / DEFL_MAX_MATCH : 0;
    *rest = r - *full * DEFL_MAX_MATCH;
}

/* The literal/length symbols of a run of byte v, len bytes long, as up to three (symbol, count)
 * pairs; returns how many, and *dist the count of distance code 0 (distance 1). */
DEFL_HD static inline int defl_run_syms(unsigned v, uint32_t len, uint32_t sym[3], uint32_t cnt[3],
                                        uint32_t *dist)
{
    uint32_t full, rest;
    int ne, n = 1;
    unsigned ev;

    defl_run_split(len, &full, &rest);
    sym[0] = v, cnt[0] = 1 + (rest < DEFL_MIN_MATCH ? rest : 0);
    if (full)
        sym[n] = 257 + (uint32_t)defl_len_code(DEFL_MAX_MATCH, &ne, &ev), cnt[n++] = full;
    if (rest >= DEFL_MIN_MATCH)
        sym[n] = 257 + (uint32_t)defl_len_code(rest, &ne, &ev), cnt[n++] = 1;
    *dist = full + (rest >= DEFL_MIN_MATCH);
    return n;
}

/* Tokens of a run of len bytes: its literal, the full matches, then one match or 0..2 literals. */
DEFL_HD static inline uint32_t defl_run_ntok(uint32_t len)
{
    uint32_t full, rest;

    defl_run_split(len, &full, &rest);
    return 1 + full + (rest >= DEFL_MIN_MATCH ? 1 : rest);
}

/* Token idx (< defl_run_ntok(len)) of a run of byte v under the codes of k, as *val (LSB first);
 * returns its bits (a match: length code, extra bits and distance code, at most 35). */
DEFL_HD static inline int defl_run_token(const struct defl_plan *k, unsigned v, uint32_t len, uint32_t idx,
                                         uint64_t *val)
{
    uint32_t full, rest, m;
    unsigned ev;
    int ne, c;

    defl_run_split(len, &full, &rest);
    if (idx == 0 || (idx > full && rest < DEFL_MIN_MATCH)) {
        *val = k->lit_code[v];
        return k->lens[v];
    }
    m = idx <= full ? DEFL_MAX_MATCH : rest;
    c = 257 + defl_len_code(m, &ne, &ev);
    *val = k->lit_code[c] | (uint64_t)ev << k->lens[c] | (uint64_t)k->dist_code[0] << (k->lens[c] + ne);
    return k->lens[c] + ne + k->lens[k->nlit];
}

/* Adds the symbols of a run of byte v, len bytes long, to f. */
static inline void defl_run_count(unsigned v, uint32_t len, struct defl_freq *f)
{
    uint32_t sym[3], cnt[3], dist;
    int n = defl_run_syms(v, len, sym, cnt, &dist);

    for (int i = 0; i < n; i++)
        f->lit[sym[i]] += cnt[i];
    f->dist[0] += dist;
}

/* Bits of the tokens of a run of byte v, len bytes long, under the codes of k. */
DEFL_HD static inline uint64_t defl_run_bits(const struct defl_plan *k, unsigned v, uint32_t len)
{
    uint32_t full, rest;
    uint64_t val, bits = (uint64_t)defl_run_token(k, v, len, 0, &val);

    defl_run_split(len, &full, &rest);
    if (full)
        bits += (uint64_t)full * (uint64_t)defl_run_token(k, v, len, 1, &val);
    for (uint32_t i = 1 + full; i < defl_run_ntok(len); i++)
        bits += (uint64_t)defl_run_token(k, v, len, i, &val);
    return bits;
}

/* The tokens of a run of byte v, len bytes long, into b. */
static inline void defl_run_put(const struct defl_plan *k, unsigned v, uint32_t len, struct defl_bits *b)
{
    for (uint32_t i = 0, ntok = defl_run_ntok(len); i < ntok; i++) {
        uint64_t val;
        int n = defl_run_token(k, v, len, i, &val);

        defl_put(b, (uint32_t)val, n < 32 ? n : 32);
        if (n > 32)
            defl_put(b, (uint32_t)(val >> 32), n - 32);
    }
}

/* The length of the run that starts at p, at most end - p. */
static inline uint32_t defl_run_len(const uint8_t *in, size_t p, size_t end)
{
    size_t q = p + 1;

    while (q < end && in[q] == in[p])
        q++;
    return (uint32_t)(q - p);
}

/* Codes chunk in[start, start + len) (len >= 1) as runs into out (defl_chunk_bound(len) bytes),
 * the final one of the stream when final, with w for the counts and codes: one dynamic block, or
 * stored blocks where those are smaller. Returns the bytes written; the chunk ends byte-aligned. */
static inline size_t defl_runs_chunk(const uint8_t *in, size_t start, size_t len, int final,
                                     struct defl_work *w, uint8_t *out)
{
    size_t end = start + len, bits, bytes;
    struct defl_bits b = {out, 0, 0};
    uint32_t run = 0;

    memset(&w->f, 0, sizeof(w->f));
    for (size_t p = start; p < end; p += run)
        defl_run_count(in[p], run = defl_run_len(in, p, end), &w->f);
    w->f.lit[256] = 1;
    bits = defl_plan_build(&w->k, &w->f, &w->h);
    bytes = final ? (bits + 7) / 8 : (bits + 3 + 7) / 8 + 4;
    if (bytes >= defl_stored_size(len))
        return defl_write_stored(in, start, len, final, out);
    defl_block_head(&w->k, final, &b);
    for (size_t p = start; p < end; p += run)
        defl_run_put(&w->k, in[p], run = defl_run_len(in, p, end), &b);
    defl_put(&b, w->k.lit_code[256], w->k.lens[256]);
    return defl_chunk_end(&b, final, out);
}

#ifdef __cplusplus
}
#endif
#endif
