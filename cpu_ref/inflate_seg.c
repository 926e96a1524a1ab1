/* inflate_seg.c — the host driver of the segment decode of one block: the device's phases (sync
 * rounds, counts and their prefix sum, the write), each a serial loop over the segments. */
#include "inflate_seg.h"

#include <stdlib.h>

#include "inflate_spec.h"

/* The sync rounds: round 0, then rounds until one decodes nothing (at most nseg decode). Every
 * segment's wanted start is read before any decodes again, as the device's barrier orders it. */
static uint32_t inflseg_sync(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t,
                             uint64_t data_start, uint64_t seg_bits, uint32_t nseg, uint64_t end_bit,
                             struct infl_seg *segs, uint64_t *want, struct inflseg_stats *st)
{
    uint32_t k, rounds = 1, decoded = 1;

    for (k = 0; k < nseg; k++) {
        infl_seg_first(in, nbytes, t, data_start, seg_bits, k, nseg, end_bit, &segs[k]);
        st->first_steps += segs[k].steps;
    }
    while (decoded && rounds <= nseg) {
        for (k = 0; k < nseg; k++)
            want[k] = infl_seg_want(segs, k);
        for (k = 0, decoded = 0; k < nseg; k++)
            if (infl_seg_round(in, nbytes, t, data_start, seg_bits, k, nseg, end_bit, want[k], &segs[k])) {
                decoded = 1;
                st->later_steps += segs[k].steps;
            }
        rounds += decoded;
    }
    return rounds;
}

/* Every segment's steps at its offset, the exclusive prefix sum of the counts before it. */
static int inflseg_write(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t,
                         const struct infl_seg *segs, uint32_t nseg, uint32_t *sym, uint64_t out_off,
                         struct inflseg_stats *st)
{
    uint64_t at = out_off, steps;
    uint32_t k;

    for (k = 0; k < nseg; k++) {
        if (infl_seg_write(in, nbytes, t, &segs[k], sym + at, at, &steps))
            return -1;
        at += segs[k].count;
        st->block_steps += steps;
    }
    return 0;
}

/* inflseg_block, with the segments' states from the save at offset off of sv (when there is one
 * and it has this cut's nseg) instead of the sync. */
static int inflseg_block_saved(const uint8_t *in, uint64_t nbytes, uint64_t start_bit, uint64_t end_bit,
                               uint64_t out_off, uint64_t len, uint32_t nseg, const struct inflseg_save *sv,
                               uint32_t off, uint32_t *sym, struct inflseg_stats *st, char err[EDGED_ERR_LEN])
{
    struct inflseg_stats local = {0};
    struct infl_tabs *t = NULL;
    struct infl_seg *segs = NULL;
    uint64_t *want = NULL, data_start, seg_bits;
    const uint32_t *w;
    struct infl_res r;
    struct infl_br b;
    int rc = INFLSEG_DECLINED;

    if (!st)
        st = &local;
    *st = (struct inflseg_stats){0};
    if (!in || !sym)
        return edged_fail(err, EDGED_E_PARAM, "inflseg_block: no input or output");
    if (start_bit >= end_bit || end_bit > nbytes * 8)
        return INFLSEG_DECLINED;
    if (!(t = malloc(sizeof(*t))))
        return edged_fail(err, EDGED_E_NOMEM, "inflseg_block: tables");
    infl_br_init(&b, in, nbytes, start_bit);
    if (infl_block_head(&b, t, &r) <= 0 || (data_start = infl_br_pos(&b)) >= end_bit ||
        end_bit - data_start > INFL_SEG_MAX_BITS)
        goto out;
    if (nseg == 0)
        nseg = infl_seg_count(end_bit - data_start, INFL_SEG_DEV_MAX);
    nseg = infl_seg_cut(end_bit - data_start, nseg, &seg_bits);
    segs = malloc(nseg * sizeof(*segs));
    want = malloc(nseg * sizeof(*want));
    if (!segs || !want) {
        rc = edged_fail(err, EDGED_E_NOMEM, "inflseg_block: %u segments", nseg);
        goto out;
    }
    st->segments = nseg;
    w = sv ? infl_seg_save_at(sv->w, sv->used, sv->cap, off, nseg) : NULL;
    if (w) {
        uint32_t k;
        for (k = 0; k < nseg; k++)
            infl_seg_load_one(w, k, nseg, data_start, end_bit, &segs[k]);
        st->reused = 1;
    } else {
        st->rounds = inflseg_sync(in, nbytes, t, data_start, seg_bits, nseg, end_bit, segs, want, st);
    }
    if (infl_seg_verdict(segs, nseg, data_start, end_bit, len) ||
        inflseg_write(in, nbytes, t, segs, nseg, sym, out_off, st))
        goto out;
    rc = 0;
out:
    free(want);
    free(segs);
    free(t);
    return rc;
}

int inflseg_block(const uint8_t *in, uint64_t nbytes, uint64_t start_bit, uint64_t end_bit, uint64_t out_off,
                  uint64_t len, uint32_t nseg, uint32_t *sym, struct inflseg_stats *st,
                  char err[EDGED_ERR_LEN])
{
    return inflseg_block_saved(in, nbytes, start_bit, end_bit, out_off, len, nseg, NULL, INFL_SEG_NOSAVE, sym,
                               st, err);
}

int inflseg_chain(const uint8_t *in, uint64_t nbytes, uint64_t out_len, struct infl_blk *bk, uint32_t max,
                  uint32_t *n, uint64_t *end_bit, char err[EDGED_ERR_LEN])
{
    struct infl_tabs *t = malloc(sizeof(*t));
    uint64_t bit = 16, total = 0;
    int rc = INFLSEG_DECLINED;

    if (!t)
        return edged_fail(err, EDGED_E_NOMEM, "inflseg_chain: tables");
    for (*n = 0; *n < max;) {
        struct infl_res r;
        if (infl_block(in, nbytes, bit, t, NULL, 0, out_len - total, out_len + 1, &r))
            break;
        bk[*n] = (struct infl_blk){bit, total, r.len, INFL_SEG_NOSAVE};
        (*n)++;
        total += r.len;
        bit = r.end_bit;
        if (r.final) {
            *end_bit = bit;
            rc = total == out_len ? 0 : INFLSEG_DECLINED;
            break;
        }
    }
    free(t);
    return rc;
}

/* BTYPE of the block whose header starts at bit. */
static int inflseg_btype(const uint8_t *in, uint64_t nbytes, uint64_t bit)
{
    struct infl_br b;

    infl_br_init(&b, in, nbytes, bit);
    return (int)(b.buf >> 1 & 3);
}

static void inflseg_add(struct inflseg_stats *st, const struct inflseg_stats *bs)
{
    st->segments += bs->segments;
    st->rounds = bs->rounds > st->rounds ? bs->rounds : st->rounds;
    st->first_steps += bs->first_steps;
    st->later_steps += bs->later_steps;
    st->block_steps += bs->block_steps;
    st->reused += bs->reused;
}

int inflseg_place(const uint8_t *in, uint64_t nbytes, const struct infl_blk *bk, uint32_t n, uint64_t end_bit,
                  uint32_t nseg, const struct inflseg_save *sv, uint32_t *sym, struct inflseg_stats *st,
                  char err[EDGED_ERR_LEN])
{
    struct inflseg_stats local = {0};
    struct infl_tabs t;
    uint32_t i;

    if (!st)
        st = &local;
    for (i = 0; i < n; i++) {
        struct inflseg_stats bs;
        struct infl_res r;
        uint64_t end = i + 1 < n ? bk[i + 1].start_bit : end_bit;
        int rc;
        if (inflseg_btype(in, nbytes, bk[i].start_bit) == 0) {
            if (infl_block(in, nbytes, bk[i].start_bit, &t, sym + bk[i].out_off, bk[i].out_off, bk[i].len,
                           bk[i].len + 1, &r))
                return INFLSEG_DECLINED;
            continue;
        }
        rc = inflseg_block_saved(in, nbytes, bk[i].start_bit, end, bk[i].out_off, bk[i].len, nseg, sv,
                                 bk[i].seg, sym, &bs, err);
        if (rc)
            return rc;
        inflseg_add(st, &bs);
    }
    return 0;
}

/* One candidate at start_bit in segments over its guessed range (the device's cut, t, segs and
 * want as scratch): 0 with *r the serial decode's result, or -1 to leave it to the serial decode.
 * When the guess was the block's end, the synced segments go into sv (may be NULL) while it has room. */
static int inflseg_cand(const uint8_t *in, uint64_t nbytes, uint64_t out_len, uint64_t start_bit,
                        const uint32_t *cbits, struct infl_tabs *t, struct infl_seg *segs, uint64_t *want,
                        struct inflseg_save *sv, struct infl_res *r)
{
    struct inflseg_stats st = {0};
    uint64_t ds, from, lim, end, guess, seg_bits, len = 0;
    struct infl_res h;
    struct infl_br b;
    uint32_t nseg;

    infl_br_init(&b, in, nbytes, start_bit);
    if (infl_block_head(&b, t, &h) != 2)
        return -1;
    ds = infl_br_pos(&b);
    if (infl_seg_guess_range(ds, nbytes * 8, &from, &lim))
        return -1;
    end = guess = infl_seg_guess(cbits, from, lim);
    nseg = infl_seg_cut(end - ds, infl_seg_count(end - ds, INFL_SEG_DEV_MAX), &seg_bits);
    inflseg_sync(in, nbytes, t, ds, seg_bits, nseg, end, segs, want, &st);
    if (infl_seg_eob(segs, nseg, ds, &end, &len) || infl_seg_res(end, len, h.final, out_len, r))
        return -1;
    if (sv && infl_seg_saveable(segs, nseg, ds, guess) && infl_seg_save_fits(sv->used, sv->cap, nseg)) {
        uint32_t k;
        for (k = 0; k < nseg; k++)
            infl_seg_save_one(sv->w + sv->used, segs, k, nseg, ds);
        r->seg = (uint32_t)sv->used;
        sv->used += infl_seg_save_size(nseg);
    }
    return 0;
}

int inflseg_pass1(const uint8_t *in, uint64_t nbytes, uint64_t out_len, const uint64_t *keys, uint32_t hsize,
                  const uint32_t *cbits, struct infl_res *res, struct inflseg_save *sv,
                  struct inflseg_pass1_stats *st, char err[EDGED_ERR_LEN])
{
    struct inflseg_pass1_stats local;
    struct infl_tabs *t = malloc(sizeof(*t));
    struct infl_seg *segs = malloc(INFL_SEG_DEV_MAX * sizeof(*segs));
    uint64_t *want = malloc(INFL_SEG_DEV_MAX * sizeof(*want));
    uint32_t i;
    int rc = 0;

    if (!st)
        st = &local;
    *st = (struct inflseg_pass1_stats){0};
    if (!t || !segs || !want) {
        rc = edged_fail(err, EDGED_E_NOMEM, "inflseg_pass1: scratch");
        goto out;
    }
    for (i = 0; i < hsize; i++) {
        if (keys[i] == INFL_EMPTY)
            continue;
        if (inflseg_cand(in, nbytes, out_len, keys[i], cbits, t, segs, want, sv, &res[i]) == 0) {
            st->seg++;
        } else {
            st->serial++;
            infl_block(in, nbytes, keys[i], t, NULL, 0, out_len, INFL_MAX_SYMS, &res[i]);
        }
        st->ok += res[i].ok;
    }
out:
    free(want);
    free(segs);
    free(t);
    return rc;
}

/* inflspec_hooks' phase 2: inflseg_pass1, saving into the struct inflseg_save ctx. */
static int inflseg_hook_pass1(const uint8_t *z, uint64_t nbytes, uint64_t out_len, const uint64_t *keys,
                              uint32_t hsize, const uint32_t *cbits, struct infl_res *res, void *ctx,
                              struct inflspec_stats *st)
{
    struct inflseg_pass1_stats ps;
    char err[EDGED_ERR_LEN];
    int rc = inflseg_pass1(z, nbytes, out_len, keys, hsize, cbits, res, (struct inflseg_save *)ctx, &ps, err);

    st->spec_ok = ps.ok;
    st->seg_cands = ps.seg;
    st->seg_serial = ps.serial;
    return rc;
}

/* inflspec_hooks' phase 4: inflseg_place as the device cuts the blocks, from phase 2's saves. */
static int inflseg_hook_place(const uint8_t *z, uint64_t nbytes, const struct infl_blk *bk, uint32_t n,
                              uint64_t end_bit, uint32_t *sym, void *ctx, struct inflspec_stats *st)
{
    struct inflseg_stats ps = {0};
    char err[EDGED_ERR_LEN];
    int rc = inflseg_place(z, nbytes, bk, n, end_bit, 0, (const struct inflseg_save *)ctx, sym, &ps, err);

    st->seg_reused = ps.reused;
    return rc;
}

const struct inflspec_hooks inflseg_hooks = {inflseg_hook_pass1, inflseg_hook_place};

int inflseg_spec_decode(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len, int seg,
                        struct inflspec_stats *st)
{
    struct inflseg_save sv = {0};
    int rc;

    if (!seg)
        return inflspec_decode_with(zlib, len, out, out_len, NULL, NULL, st);
    sv.cap = inflspec_save_words(len);
    if (!(sv.w = malloc(sv.cap * sizeof(*sv.w))))
        return EDGED_E_NOMEM;
    rc = inflspec_decode_with(zlib, len, out, out_len, &inflseg_hooks, &sv, st);
    free(sv.w);
    return rc;
}

int inflseg_decode(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len, uint32_t nseg,
                   struct inflseg_stats *st, char err[EDGED_ERR_LEN])
{
    struct inflseg_stats local;
    struct infl_blk *bk = NULL;
    uint32_t *sym = NULL, n = 0, max;
    uint64_t end_bit = 0, markers;
    int rc = INFLSEG_DECLINED, rounds;

    if (!st)
        st = &local;
    *st = (struct inflseg_stats){0};
    if (infl_zlib_header(zlib, len) || len > INFL_MAX_IN || out_len > INFL_MAX_OUT)
        return INFLSEG_DECLINED;
    max = (uint32_t)(len * 8 / 10 + 2); /* the shortest block, an empty fixed one, takes 10 bits */
    bk = malloc(max * sizeof(*bk));
    sym = malloc((out_len ? out_len : 1) * sizeof(*sym));
    if (!bk || !sym) {
        rc = edged_fail(err, EDGED_E_NOMEM, "inflseg_decode: %zu bytes", out_len);
        goto out;
    }
    rc = inflseg_chain(zlib, len - 4, out_len, bk, max, &n, &end_bit, err);
    if (rc == 0)
        rc = inflseg_place(zlib, len - 4, bk, n, end_bit, nseg, NULL, sym, st, err);
    if (rc == 0 && (inflspec_resolve(sym, out, out_len, &markers, &rounds) ||
                    inflspec_adler(out, out_len) != infl_be32(zlib + ((end_bit + 7) >> 3))))
        rc = INFLSEG_DECLINED;
out:
    free(sym);
    free(bk);
    return rc;
}
