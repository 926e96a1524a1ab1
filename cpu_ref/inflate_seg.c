/* inflate_seg.c — the host driver of the segment decode of one block: the device's phases (sync
 * rounds, counts and their prefix sum, the write), each a serial loop over the segments. */
#include "inflate_seg.h"

#include <stdlib.h>

/* The sync rounds: round 0, then rounds until one decodes nothing (at most nseg decode). Every
 * segment's wanted start is read before any decodes again, as the device's barrier orders it. */
static uint32_t inflseg_sync(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t, uint64_t data_start,
                             uint64_t seg_bits, uint32_t nseg, uint64_t end_bit, struct infl_seg *segs,
                             uint64_t *want, struct inflseg_stats *st)
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
static int inflseg_write(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t, const struct infl_seg *segs,
                         uint32_t nseg, uint32_t *sym, uint64_t out_off, struct inflseg_stats *st)
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

int inflseg_block(const uint8_t *in, uint64_t nbytes, uint64_t start_bit, uint64_t end_bit, uint64_t out_off,
                  uint64_t len, uint32_t nseg, uint32_t *sym, struct inflseg_stats *st, char err[EDGED_ERR_LEN])
{
    struct inflseg_stats local = {0};
    struct infl_tabs *t = NULL;
    struct infl_seg *segs = NULL;
    uint64_t *want = NULL, data_start, seg_bits;
    struct infl_res r;
    struct infl_br b;
    int rc = INFLSEG_DECLINED;

    if (!st)
        st = &local;
    *st = (struct inflseg_stats){0};
    if (nseg == 0 || !in || !sym)
        return edged_fail(err, EDGED_E_PARAM, "inflseg_block: %u segments", nseg);
    if (start_bit >= end_bit || end_bit > nbytes * 8)
        return INFLSEG_DECLINED;
    if (!(t = malloc(sizeof(*t))))
        return edged_fail(err, EDGED_E_NOMEM, "inflseg_block: tables");
    infl_br_init(&b, in, nbytes, start_bit);
    if (infl_block_head(&b, t, &r) <= 0 || (data_start = infl_br_pos(&b)) >= end_bit ||
        end_bit - data_start > INFL_SEG_MAX_BITS)
        goto out;
    seg_bits = (end_bit - data_start + nseg - 1) / nseg;
    nseg = (uint32_t)((end_bit - data_start + seg_bits - 1) / seg_bits); /* none empty */
    segs = malloc(nseg * sizeof(*segs));
    want = malloc(nseg * sizeof(*want));
    if (!segs || !want) {
        rc = edged_fail(err, EDGED_E_NOMEM, "inflseg_block: %u segments", nseg);
        goto out;
    }
    st->segments = nseg;
    st->rounds = inflseg_sync(in, nbytes, t, data_start, seg_bits, nseg, end_bit, segs, want, st);
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
