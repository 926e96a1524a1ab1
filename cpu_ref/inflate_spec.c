/* inflate_spec.c — the host driver of the speculative inflate: the phases of gpu/ginflate_*.cu, each
 * a serial loop over what the device runs in parallel, through the same core. */
#include "inflate_spec.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

/* A deflate block of a real encoder is kilobytes long: one candidate per 32 input bytes leaves
 * room for every true block and the few false headers that pass the code checks. */
uint64_t inflspec_max_candidates(uint64_t in_len)
{
    return in_len / 32 + 256;
}

/* About one bit offset in 1150 of random bits passes infl_head_plausible (one in five has BTYPE 10
 * and HLIT, HDIST in range, and of those one in 250 a complete code-length code), so compressed
 * data lists about one offset per 140 bytes; one per 8 bytes leaves a margin of more than ten, and
 * only data that passes the test far more often fills it (declined: the CPU decoder decides).
 * test_inflate_spec holds every stream of its corpus to a quarter of it. */
uint64_t inflspec_max_plausible(uint64_t in_len)
{
    return in_len / 8 + 1024;
}

uint64_t inflspec_cand_words(uint64_t nbytes)
{
    return (nbytes * 8 + 31) / 32;
}

/* A save takes 1 + 2 * nseg words with nseg = ceil(bits / INFL_SEG_BITS) for a block's data bits,
 * so at most 3 + bits / 320 words. Blocks whose saves do not overlap (all but those of false
 * candidates inside another's header) cover at most in_len * 8 bits, and there are at most
 * inflspec_max_candidates of them: 3 * (in_len / 32 + 256) + in_len / 40 words, below in_len / 8 +
 * 1024. A photograph's blocks take about in_len / 35 (391 blocks of 256 segments, 7 MB). */
uint64_t inflspec_save_words(uint64_t in_len)
{
    return in_len / 8 + 1024;
}

uint64_t inflspec_map_size(uint64_t in_len)
{
    uint64_t n = 1;

    while (n < 2 * inflspec_max_candidates(in_len))
        n <<= 1;
    return n;
}

/* Phase 1: every bit offset of the deflate data that passes infl_is_candidate goes into the map and
 * the bitmap. As gi_scan, 32 offsets a window: infl_is_candidate only for those whose fixed header
 * fields pass infl_head_prefilter (a necessary part of it), in offset order. */
int inflspec_scan(const uint8_t *z, uint64_t nbytes, uint64_t *keys, uint32_t hmask, uint64_t cap, uint32_t *cbits,
                  uint64_t *found)
{
    uint64_t base, n = 0;

    for (base = 16; base < nbytes * 8; base += 32) {
        struct infl_br w;
        uint32_t m;
        infl_br_init(&w, z, nbytes, base); /* 50 bits or more, zeros past the data: the 44 it needs */
        for (m = infl_head_prefilter(w.buf); m; m &= m - 1) {
            uint64_t bit = base + (unsigned)__builtin_ctz(m);
            uint32_t s;
            if (bit >= nbytes * 8 || !infl_is_candidate(z, nbytes, bit))
                continue;
            if (++n > cap)
                return -1;
            for (s = infl_hash(bit, hmask); keys[s] != INFL_EMPTY; s = (s + 1) & hmask)
                ;
            keys[s] = bit;
            infl_cand_set(cbits, bit);
        }
    }
    *found = n;
    return 0;
}

/* Phase 4: every block's symbols at its offset (again, now written). */
static int inflspec_place(const uint8_t *z, uint64_t nbytes, const struct infl_blk *bk, uint32_t n,
                          struct infl_tabs *t, uint32_t *sym)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        struct infl_res r;
        if (infl_block(z, nbytes, bk[i].start_bit, t, sym + bk[i].out_off, bk[i].out_off, bk[i].len, bk[i].len + 1,
                       &r) ||
            r.len != bk[i].len)
            return -1;
    }
    return 0;
}

/* Phase 5. Rounds run from the last position down, so that every source is read before its own update:
 * the rounds a chain needs are the device's worst case (positions in position order would need
 * one). */
int inflspec_resolve(uint32_t *sym, uint8_t *out, uint64_t out_len, uint64_t *markers, int *rounds)
{
    uint64_t p, m = 0;
    int left = 1, r;

    for (p = 0; p < out_len; p++)
        m += sym[p] >= INFL_MARK;
    *markers = m;
    for (r = 0; left && r < INFL_JUMP_ROUNDS; r++)
        for (p = out_len, left = 0; p-- > 0;)
            left |= infl_jump(sym, p);
    *rounds = r;
    if (left)
        return -1;
    for (p = 0; p < out_len; p++)
        out[p] = (uint8_t)sym[p];
    return 0;
}

/* Phase 6. */
uint32_t inflspec_adler(const uint8_t *out, uint64_t n)
{
    uint64_t sa = 0, sb = 0, off;

    for (off = 0; off < n; off += INFL_ADLER_CHUNK) {
        uint32_t a, b;
        uint64_t m = n - off < INFL_ADLER_CHUNK ? n - off : INFL_ADLER_CHUNK;
        infl_adler_chunk(out, off, m, n, &a, &b);
        sa += a;
        sb += b;
    }
    return infl_adler_final(sa, sb, n);
}

/* Phase 2, one serial decode per candidate of the map. */
static uint64_t inflspec_pass1(const uint8_t *z, uint64_t nbytes, uint64_t out_len, const uint64_t *keys,
                               uint64_t hsize, struct infl_tabs *t, struct infl_res *res)
{
    uint64_t i, ok = 0;

    for (i = 0; i < hsize; i++)
        if (keys[i] != INFL_EMPTY && infl_block(z, nbytes, keys[i], t, NULL, 0, out_len, INFL_MAX_SYMS, &res[i]) == 0)
            ok++;
    return ok;
}

/* Phases 2 and 4, serially or by h. */
static int inflspec_phases(const uint8_t *z, uint64_t nbytes, uint64_t out_len,
                           const struct inflspec_hooks *h, void *ctx, const uint64_t *keys, uint64_t hsize,
                           const uint32_t *cbits, struct infl_res *res, struct infl_blk *bk, uint64_t cap,
                           struct infl_tabs *t, uint32_t *sym, uint64_t *trailer, struct inflspec_stats *st)
{
    struct infl_chain_stats cs;
    uint32_t nb = 0;
    int rc;

    if (!h)
        st->spec_ok = inflspec_pass1(z, nbytes, out_len, keys, hsize, t, res);
    else if ((rc = h->pass1(z, nbytes, out_len, keys, (uint32_t)hsize, cbits, res, ctx, st)))
        return rc;
    if (infl_chain(z, nbytes, out_len, keys, res, (uint32_t)(hsize - 1), t, bk, (uint32_t)cap, &nb, trailer, &cs))
        return INFLSPEC_DECLINED;
    st->blocks = nb;
    st->spec_blocks = cs.spec_blocks;
    st->seq_blocks = cs.seq_blocks;
    if (h)
        return h->place(z, nbytes, bk, nb, cs.end_bit, sym, ctx, st);
    return inflspec_place(z, nbytes, bk, nb, t, sym) ? INFLSPEC_DECLINED : 0;
}

int inflspec_decode(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len, struct inflspec_stats *st)
{
    return inflspec_decode_with(zlib, len, out, out_len, NULL, NULL, st);
}

/* The phases in the device's order; any failure declines. */
int inflspec_decode_with(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len,
                         const struct inflspec_hooks *h, void *ctx, struct inflspec_stats *st)
{
    struct inflspec_stats local;
    uint64_t *keys = NULL, cap, hsize, nbytes, trailer = 0, i;
    struct infl_res *res = NULL;
    struct infl_blk *bk = NULL;
    struct infl_tabs *t = NULL;
    uint32_t *sym = NULL, *cbits = NULL;
    int rc = INFLSPEC_DECLINED;

    if (!st)
        st = &local;
    memset(st, 0, sizeof(*st));
    if (infl_zlib_header(zlib, len) || len > INFL_MAX_IN || out_len > INFL_MAX_OUT)
        return INFLSPEC_DECLINED;
    nbytes = len - 4; /* the deflate data ends before the Adler-32 */
    cap = inflspec_max_candidates(len);
    hsize = inflspec_map_size(len);
    keys = malloc(hsize * sizeof(*keys));
    res = calloc(hsize, sizeof(*res));
    bk = malloc(cap * sizeof(*bk));
    t = malloc(sizeof(*t));
    sym = malloc((out_len ? out_len : 1) * sizeof(*sym));
    cbits = calloc(inflspec_cand_words(nbytes), sizeof(*cbits));
    if (!keys || !res || !bk || !t || !sym || !cbits) {
        rc = EDGED_E_NOMEM;
        goto out;
    }
    for (i = 0; i < hsize; i++)
        keys[i] = INFL_EMPTY;
    if (inflspec_scan(zlib, nbytes, keys, (uint32_t)(hsize - 1), cap, cbits, &st->candidates))
        goto out;
    rc = inflspec_phases(zlib, nbytes, out_len, h, ctx, keys, hsize, cbits, res, bk, cap, t, sym, &trailer,
                         st);
    if (rc == 0 && (inflspec_resolve(sym, out, out_len, &st->markers, &st->rounds) ||
                    inflspec_adler(out, out_len) != infl_be32(zlib + trailer)))
        rc = INFLSPEC_DECLINED;
out:
    free(cbits);
    free(sym);
    free(t);
    free(bk);
    free(res);
    free(keys);
    return rc;
}
