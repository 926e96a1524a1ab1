/* inflate_spec.c — the host driver of the speculative inflate: the phases of gpu/ginflate.cu, each
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

uint64_t inflspec_map_size(uint64_t in_len)
{
    uint64_t n = 1;

    while (n < 2 * inflspec_max_candidates(in_len))
        n <<= 1;
    return n;
}

/* Phase 1: every bit offset of the deflate data that passes infl_is_candidate goes into the map. */
static int inflspec_scan(const uint8_t *z, uint64_t nbytes, uint64_t *keys, uint32_t hmask, uint64_t cap,
                         uint64_t *found)
{
    uint64_t bit, n = 0;

    for (bit = 16; bit < nbytes * 8; bit++) {
        uint32_t s;
        if (!infl_is_candidate(z, nbytes, bit))
            continue;
        if (++n > cap)
            return -1;
        for (s = infl_hash(bit, hmask); keys[s] != INFL_EMPTY; s = (s + 1) & hmask)
            ;
        keys[s] = bit;
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

/* The phases in the device's order; any failure declines. */
int inflspec_decode(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len, struct inflspec_stats *st)
{
    struct inflspec_stats local;
    struct infl_chain_stats cs;
    uint64_t *keys = NULL, cap, hsize, nbytes, trailer = 0, i;
    struct infl_res *res = NULL;
    struct infl_blk *bk = NULL;
    struct infl_tabs *t = NULL;
    uint32_t *sym = NULL;
    uint32_t nb = 0;
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
    if (!keys || !res || !bk || !t || !sym) {
        rc = EDGED_E_NOMEM;
        goto out;
    }
    for (i = 0; i < hsize; i++)
        keys[i] = INFL_EMPTY;
    if (inflspec_scan(zlib, nbytes, keys, (uint32_t)(hsize - 1), cap, &st->candidates))
        goto out;
    for (i = 0; i < hsize; i++)
        if (keys[i] != INFL_EMPTY && infl_block(zlib, nbytes, keys[i], t, NULL, 0, out_len, INFL_MAX_SYMS, &res[i]) == 0)
            st->spec_ok++;
    if (infl_chain(zlib, nbytes, out_len, keys, res, (uint32_t)(hsize - 1), t, bk, (uint32_t)cap, &nb, &trailer, &cs))
        goto out;
    st->blocks = nb;
    st->spec_blocks = cs.spec_blocks;
    st->seq_blocks = cs.seq_blocks;
    if (inflspec_place(zlib, nbytes, bk, nb, t, sym) ||
        inflspec_resolve(sym, out, out_len, &st->markers, &st->rounds) ||
        inflspec_adler(out, out_len) != infl_be32(zlib + trailer))
        goto out;
    rc = 0;
out:
    free(sym);
    free(t);
    free(bk);
    free(res);
    free(keys);
    return rc;
}
