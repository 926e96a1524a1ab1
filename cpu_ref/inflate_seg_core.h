/* inflate_seg_core.h — one Huffman block decoded in segments of its bit range, each meant for its
 * own thread: the sync rounds that find every segment's true start, and the write of a segment's
 * symbols. One C source for the host (C11) and the device (nvcc), on top of inflate_spec_core.h.
 *
 * The block's tables and its data bits [data_start, end_bit) are known (infl_block_head; the chain
 * gives end_bit). Segment k covers nominal bits [s_k, s_k+1) with s_k = data_start + k * seg_bits,
 * the last one up to end_bit. A step (literal, match with its extra bits, or end of block;
 * infl_step) depends on nothing but its first bit, so a segment decodes from a start it assumes up
 * to the first step boundary at or after s_k+1 (its bound), and given the right start that bound is
 * the next segment's right start.
 *
 * Sync. Round 0: segment 0 from data_start, every other from its nominal start (rarely a step
 * boundary). Round r >= 1: every segment k >= 1 reads the bound segment k - 1 had after round r - 1
 * and, when that differs from its start, decodes again from it (a segment behind a failed decode
 * waits). Segment 0 is right from round 0, and a segment whose predecessor was right after round
 * r - 1 is right after round r: after round K - 1 all K are right, so at most K rounds decode and
 * round K decodes nothing. Huffman codes resynchronise: a decode from a wrong start meets the true
 * boundaries within a few steps (infl_seg_marked), and from there on the two decodes are the same.
 * So a decode that ran from a wrong start into the right boundaries inside its segment already
 * reported the right bound, and the rounds stop after round 1 (2 decoding rounds) unless segments
 * are about as short as that distance (a few dozen steps). And a decode records some of its
 * boundaries (marks); the next decode of the segment stops where it meets one of them and takes the
 * rest (bound, output bytes, failure, end of block) from the previous decode, so that a round after
 * round 0 costs tens of steps per segment, not the segment again.
 *
 * Verdict (infl_seg_verdict): no right-started decode failed (invalid code, a step past end_bit,
 * the end-of-block code anywhere but just before end_bit), the end-of-block code was met, and the
 * output bytes add up to the block's length. Anything else declines the block to the serial path:
 * a wrongly started decode's failure is only ever a reason to decode again.
 *
 * Write (infl_seg_write): from its true start, each segment writes its steps at its output offset
 * (an exclusive prefix sum of the counts) as u32 symbols: a byte, a copy from within the segment,
 * and for a source before the segment (earlier in the block or before it) the marker
 * INFL_MARK + position that infl_jump resolves. A source before the whole output fails. */
#ifndef EDGED_INFLATE_SEG_CORE_H
#define EDGED_INFLATE_SEG_CORE_H

#include "inflate_spec_core.h"

#define INFL_SEG_MARKS 16               /* boundaries a decode remembers for the next one to meet */
#define INFL_SEG_FAIL 1u                /* the decode met an invalid code or ran past end_bit */
#define INFL_SEG_EOB 2u                 /* the decode ended with the end-of-block code */
#define INFL_SEG_MAX_BITS 0xffffffffull /* longer blocks are declined (marks are u32 offsets) */
#define INFL_SEG_BITS 640               /* the device's segment: about 80 bytes of data bits */
#define INFL_SEG_DEV_MAX 256            /* segments the device gives a block at most (their states
                                           fill its thread block's shared memory) */

/* One segment's state between rounds (168 bytes). */
struct infl_seg {
    uint64_t start; /* the bit its last decode started at */
    uint64_t bound; /* where it stopped: the first boundary at or after its limit, past the
                       end-of-block code, or the start of the step that failed */
    uint64_t count; /* output bytes of its steps from start to bound */
    uint32_t flags; /* INFL_SEG_FAIL, INFL_SEG_EOB */
    uint32_t nmarks;
    uint32_t steps;                    /* steps the last decode took itself (for the tests) */
    uint32_t mark_bit[INFL_SEG_MARKS]; /* boundaries of the decode (infl_seg_marked), bits after start */
    uint32_t mark_out[INFL_SEG_MARKS]; /* output bytes from start up to each */
};

/* Whether a decode remembers the boundary after its n-th step: n = 2^i or 3 * 2^i, the first 16
 * up to step 256. A wrong start meets the true boundaries within 5 to 7 steps in half the cases
 * and about 45 in 99% (zlib level 6, photographs); the first mark at or after that step is at most
 * twice as far, and the next decode of the segment goes about that far before it meets it. */
INFL_HD static inline int infl_seg_marked(uint64_t n)
{
    uint64_t m = n % 3 == 0 ? n / 3 : n;

    return n && (m & (m - 1)) == 0;
}

/* The segments the device cuts a block of `bits` data bits into: one per INFL_SEG_BITS, at most
 * max (then longer ones), at least 1. */
INFL_HD static inline uint32_t infl_seg_count(uint64_t bits, uint32_t max)
{
    uint64_t n = (bits + INFL_SEG_BITS - 1) / INFL_SEG_BITS;

    return (uint32_t)(n < 1 ? 1 : n < max ? n : max);
}

/* Cuts `bits` data bits into about nseg (>= 1) segments of *seg_bits bits each, the last shorter:
 * returns how many, none of them empty. */
INFL_HD static inline uint32_t infl_seg_cut(uint64_t bits, uint32_t nseg, uint64_t *seg_bits)
{
    *seg_bits = (bits + nseg - 1) / nseg;
    return (uint32_t)((bits + *seg_bits - 1) / *seg_bits);
}

/* Where segment k's nominal range ends: the next nominal start, or end_bit for the last. */
INFL_HD static inline uint64_t infl_seg_limit(uint64_t data_start, uint64_t seg_bits, uint32_t k,
                                              uint32_t nseg, uint64_t end_bit)
{
    return k + 1 < nseg ? data_start + (uint64_t)(k + 1) * seg_bits : end_bit;
}

/* Takes the decode's marks nb/no[0..n) as the segment's. */
INFL_HD static inline void infl_seg_keep(struct infl_seg *s, uint64_t from, uint32_t n, const uint32_t *nb,
                                         const uint32_t *no)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        s->mark_bit[i] = nb[i];
        s->mark_out[i] = no[i];
    }
    s->nmarks = n;
    s->start = from;
}

/* The decode from `from` met the previous decode's mark j after c output bytes: the previous
 * decode's rest (bound, flags, the bytes after the mark, the marks after it) becomes this one's. */
INFL_HD static inline void infl_seg_meet(struct infl_seg *s, uint64_t from, uint64_t c, uint32_t j,
                                         uint32_t n, uint32_t *nb, uint32_t *no)
{
    uint32_t i, at_mark = s->mark_out[j];

    s->count = c + (s->count - at_mark);
    for (i = j + 1; i < s->nmarks && n < INFL_SEG_MARKS && c + s->mark_out[i] - at_mark <= UINT32_MAX;
         i++, n++) {
        nb[n] = (uint32_t)(s->start + s->mark_bit[i] - from);
        no[n] = (uint32_t)(c + s->mark_out[i] - at_mark);
    }
    infl_seg_keep(s, from, n, nb, no);
}

/* Ends a decode that did not meet the previous one. */
INFL_HD static inline void infl_seg_end(struct infl_seg *s, uint64_t from, uint64_t q, uint64_t c,
                                        uint32_t flags, uint32_t n, const uint32_t *nb, const uint32_t *no)
{
    infl_seg_keep(s, from, n, nb, no);
    s->bound = q;
    s->count = c;
    s->flags = flags;
}

/* Decodes segment s from bit `from` up to the first boundary at or after lim (or the end-of-block
 * code, or a failure), meeting the previous decode's marks where it can. Every step takes at least
 * one bit, so the loop ends within end_bit - from + 1 steps; reads past the input are zeros and a
 * step that ends past end_bit (<= nbytes * 8) fails. */
INFL_HD static inline void infl_seg_decode(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t,
                                           uint64_t from, uint64_t lim, uint64_t end_bit, struct infl_seg *s)
{
    uint32_t nb[INFL_SEG_MARKS], no[INFL_SEG_MARKS], n = 0, j = 0, len = 0, dist = 0;
    uint64_t q = from, c = 0, steps;
    struct infl_br b;

    infl_br_init(&b, in, nbytes, from);
    for (steps = 0; steps <= end_bit - from; steps++) {
        int sym;
        while (j < s->nmarks && s->start + s->mark_bit[j] < q)
            j++;
        if (j < s->nmarks && s->start + s->mark_bit[j] == q) {
            s->steps = (uint32_t)steps;
            infl_seg_meet(s, from, c, j, n, nb, no);
            return;
        }
        if (q >= lim)
            break;
        infl_br_refill(&b);
        sym = infl_step(&b, t, &len, &dist);
        if (sym < 0 || infl_br_pos(&b) > end_bit) {
            s->steps = (uint32_t)steps + 1;
            infl_seg_end(s, from, q, c, INFL_SEG_FAIL, n, nb, no);
            return;
        }
        q = infl_br_pos(&b);
        c += sym < 256 ? 1 : sym == 256 ? 0 : len;
        if (sym == 256) {
            s->steps = (uint32_t)steps + 1;
            infl_seg_end(s, from, q, c, INFL_SEG_EOB, n, nb, no);
            return;
        }
        if (n < INFL_SEG_MARKS && infl_seg_marked(steps + 1)) {
            nb[n] = (uint32_t)(q - from);
            no[n++] = (uint32_t)c;
        }
    }
    s->steps = (uint32_t)steps;
    infl_seg_end(s, from, q, c, 0, n, nb, no);
}

/* Round 0 for segment k: a fresh decode from its nominal start (data_start for segment 0). */
INFL_HD static inline void infl_seg_first(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t,
                                          uint64_t data_start, uint64_t seg_bits, uint32_t k, uint32_t nseg,
                                          uint64_t end_bit, struct infl_seg *s)
{
    s->nmarks = 0;
    s->start = data_start + (uint64_t)k * seg_bits;
    infl_seg_decode(in, nbytes, t, s->start, infl_seg_limit(data_start, seg_bits, k, nseg, end_bit), end_bit,
                    s);
}

/* The start segment k should have in the next round, from the states after this one (the device
 * reads it for every segment before any decodes again): the predecessor's bound, or its own start
 * while the predecessor's decode failed. */
INFL_HD static inline uint64_t infl_seg_want(const struct infl_seg *segs, uint32_t k)
{
    if (k == 0 || (segs[k - 1].flags & INFL_SEG_FAIL))
        return segs[k].start;
    return segs[k - 1].bound;
}

/* Round r >= 1 for segment k with the start read by infl_seg_want: decodes again when it differs.
 * Returns 1 when it decoded (a round in which no segment does ends the sync). */
INFL_HD static inline int infl_seg_round(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t,
                                         uint64_t data_start, uint64_t seg_bits, uint32_t k, uint32_t nseg,
                                         uint64_t end_bit, uint64_t want, struct infl_seg *s)
{
    if (want == s->start)
        return 0;
    infl_seg_decode(in, nbytes, t, want, infl_seg_limit(data_start, seg_bits, k, nseg, end_bit), end_bit, s);
    return 1;
}

/* After the sync: 0 when the segments chain from data_start without a failure up to the first
 * end-of-block code, with *end just past it and *len the bytes up to it; the segments after that
 * one are not looked at. -1 when a segment on the way failed or none met the code. */
INFL_HD static inline int infl_seg_eob(const struct infl_seg *segs, uint32_t nseg, uint64_t data_start,
                                       uint64_t *end, uint64_t *len)
{
    uint64_t total = 0, at = data_start;
    uint32_t k;

    for (k = 0; k < nseg; k++) {
        const struct infl_seg *s = &segs[k];
        if (s->start != at || (s->flags & INFL_SEG_FAIL))
            return -1;
        total += s->count;
        at = s->bound;
        if (s->flags & INFL_SEG_EOB) {
            *end = at;
            *len = total;
            return 0;
        }
    }
    return -1;
}

/* After the sync of a block whose end and length the chain gave: 0 when the segments chain from
 * data_start to the end-of-block code, which ends exactly at end_bit, with len bytes, else -1. */
INFL_HD static inline int infl_seg_verdict(const struct infl_seg *segs, uint32_t nseg, uint64_t data_start,
                                           uint64_t end_bit, uint64_t len)
{
    uint64_t end = 0, got = 0;

    return infl_seg_eob(segs, nseg, data_start, &end, &got) == 0 && end == end_bit && got == len ? 0 : -1;
}

/* Writes segment s's steps, from its (verified) start to its bound, at out, which is output
 * position base: exactly s->count symbols, in *nsteps steps. Returns 0, or -1 when the decode
 * differs from the sync's or a copy reaches before the output. */
INFL_HD static inline int infl_seg_write(const uint8_t *in, uint64_t nbytes, const struct infl_tabs *t,
                                         const struct infl_seg *s, uint32_t *out, uint64_t base,
                                         uint64_t *nsteps)
{
    uint64_t p = 0, q = s->start, steps;
    uint32_t len = 0, dist = 0, eob = 0;
    struct infl_br b;

    infl_br_init(&b, in, nbytes, s->start);
    for (steps = 0; q < s->bound && !eob && steps <= s->bound - s->start; steps++) {
        int sym;
        infl_br_refill(&b);
        sym = infl_step(&b, t, &len, &dist);
        if (sym < 0)
            return -1;
        if (sym < 256) {
            if (p >= s->count)
                return -1;
            out[p++] = (uint32_t)sym;
        } else if (sym == INFL_STEP_MATCH) {
            if (len > s->count - p || infl_copy(out, base, p, len, dist))
                return -1;
            p += len;
        }
        eob = sym == 256;
        q = infl_br_pos(&b);
    }
    *nsteps = steps;
    return q == s->bound && p == s->count && eob == !!(s->flags & INFL_SEG_EOB) ? 0 : -1;
}

/* Phase 2 in segments. A candidate's block is decoded by the segments over a guessed range: from
 * its first data bit to the next candidate in bit order (candidates are almost never false, so a
 * true block almost always ends where the next one starts), or to the end of the deflate data or
 * INFL_SEG_GUESS_BITS, whichever comes first, when there is none. The sync runs as above with that
 * guess as end_bit; infl_seg_eob finds where the block really ends (at the guess, or before it: a
 * fixed or stored block next, the final block's padding) and its length. The decode from the data
 * start is the serial decode's, so that answer is the serial one's whenever the serial decode
 * would not have stopped on a limit first (infl_seg_res). Anything else (a failed segment, no
 * end-of-block code before the guess, a limit) leaves the candidate to the serial decode. The
 * candidates are bits of a bitmap (one bit per bit offset, u32 words) that the scan sets. */
#define INFL_SEG_GUESS_BITS (1ull << 24) /* furthest a block's end is looked for (2 MiB of input) */

/* The range [*from, *lim) in which the next candidate after a block with data start data_start in
 * nbits bits of deflate data is looked for; 0, or -1 when the block has no data bit. */
INFL_HD static inline int infl_seg_guess_range(uint64_t data_start, uint64_t nbits, uint64_t *from, uint64_t *lim)
{
    if (data_start >= nbits)
        return -1;
    *from = data_start + 1; /* a block's data holds at least its end-of-block code */
    *lim = nbits - data_start < INFL_SEG_GUESS_BITS ? nbits : data_start + INFL_SEG_GUESS_BITS;
    return 0;
}

/* The first set bit of word w of the bitmap inside [from, lim), or UINT64_MAX. */
INFL_HD static inline uint64_t infl_cand_first(const uint32_t *cbits, uint64_t w, uint64_t from, uint64_t lim)
{
    uint32_t v = cbits[w];
    uint64_t at = w << 5;

    if (from > at)
        v &= from - at >= 32 ? 0u : ~0u << (from - at);
    if (lim < at + 32)
        v &= lim <= at ? 0u : (1u << (lim - at)) - 1;
    if (!v)
        return UINT64_MAX;
    for (at = w << 5; !(v & 1); v >>= 1)
        at++;
    return at;
}

/* The guessed end: the first candidate in [from, lim), or lim (serially; the device searches the
 * same words a thread block at a time). */
INFL_HD static inline uint64_t infl_seg_guess(const uint32_t *cbits, uint64_t from, uint64_t lim)
{
    uint64_t w, f;

    for (w = from >> 5; w <= (lim - 1) >> 5; w++)
        if ((f = infl_cand_first(cbits, w, from, lim)) != UINT64_MAX)
            return f;
    return lim;
}

/* The speculative result of a block the segments decoded to end with len bytes (BFINAL final) in
 * a stream of out_len bytes, as the serial decode (infl_block with cap out_len and INFL_MAX_SYMS)
 * gives it: 0 with *r filled; -1 where the serial decode might have stopped on a limit first. A
 * step makes at least one byte, so len + 1 steps at most. */
INFL_HD static inline int infl_seg_res(uint64_t end, uint64_t len, uint32_t final, uint64_t out_len,
                                       struct infl_res *r)
{
    if (len > out_len || len + 1 > INFL_MAX_SYMS)
        return -1;
    r->end_bit = end;
    r->len = len;
    r->ok = 1;
    r->final = (uint16_t)final;
    r->stored = 0;
    r->seg = UINT32_MAX; /* the caller records a save */
    return 0;
}

/* Saves. Phase 4 cuts a block of the chain as phase 2 cut its candidate whenever phase 2's guessed
 * end was the block's true end (the chain takes the block from that result, so the data start is the
 * same, and the end, and with them nseg and seg_bits): phase 2's sync then found the very starts phase
 * 4's would. So phase 2 saves them, in a u32 area of the stream: at offset off (res.seg, then
 * blk.seg) a header word nseg, then per segment its start - data_start and its count. Phase 4 takes
 * a block's save when the header matches its own cut and syncs itself otherwise (no save: the area
 * was full, the guess was not the end, a serial result).
 *
 * A save is never trusted: the verdict checks that segment 0 starts at data_start and that the
 * counts add up to the block's length, and infl_seg_write that each segment's decode from its
 * start ends exactly at the next segment's start (the last: at end_bit, with the end-of-block code)
 * with exactly its count of bytes. Segment 0's start is a true step boundary, and a decode from a
 * true boundary meets only true boundaries, so by induction every saved start that passes is true
 * and every count is the block's own: a wrong save can only make the verdict or a write fail, which
 * declines the stream (the CPU decoder then decides), never place other bytes. Reads of the area are
 * bounds-checked (infl_seg_save_at), so a corrupt offset or header reads nothing outside it. */
#define INFL_SEG_NOSAVE UINT32_MAX

/* Words a save of nseg segments takes. */
INFL_HD static inline uint64_t infl_seg_save_size(uint32_t nseg)
{
    return 1 + 2 * (uint64_t)nseg;
}

/* Whether phase 2's synced segments over [data_start, end_bit) are the ones phase 4 needs: they
 * chain from data_start without a failure, only the last ends with the end-of-block code and
 * exactly at end_bit (the guess was the block's end), and offsets and counts fit a u32. */
INFL_HD static inline int infl_seg_saveable(const struct infl_seg *segs, uint32_t nseg, uint64_t data_start,
                                            uint64_t end_bit)
{
    uint64_t at = data_start;
    uint32_t k;

    if (end_bit - data_start > INFL_SEG_MAX_BITS)
        return 0;
    for (k = 0; k < nseg; k++) {
        const struct infl_seg *s = &segs[k];
        if (s->start != at || (s->flags & INFL_SEG_FAIL) || !(s->flags & INFL_SEG_EOB) != (k + 1 < nseg) ||
            s->count > UINT32_MAX)
            return 0;
        at = s->bound;
    }
    return at == end_bit;
}

/* Segment k's words of a save at w (w[0], the header, by segment 0): each segment its own, so that
 * the device's threads write their pairs at once. */
INFL_HD static inline void infl_seg_save_one(uint32_t *w, const struct infl_seg *segs, uint32_t k,
                                             uint32_t nseg, uint64_t data_start)
{
    if (k == 0)
        w[0] = nseg;
    w[1 + 2 * (uint64_t)k] = (uint32_t)(segs[k].start - data_start);
    w[2 + 2 * (uint64_t)k] = (uint32_t)segs[k].count;
}

/* Whether a save of nseg segments fits at word `at` of an area of cap words. at may pass cap: the
 * device's counter of reserved words goes on counting the reservations that did not fit. */
INFL_HD static inline int infl_seg_save_fits(uint64_t at, uint64_t cap, uint32_t nseg)
{
    return at <= cap && infl_seg_save_size(nseg) <= cap - at;
}

/* The save at offset off of an area of cap words whose first `used` were reserved (used may pass
 * cap, as for infl_seg_save_fits): its words when it lies inside those that fit and its header is
 * nseg, else NULL (off INFL_SEG_NOSAVE: none). */
INFL_HD static inline const uint32_t *infl_seg_save_at(const uint32_t *area, uint64_t used, uint64_t cap,
                                                       uint32_t off, uint32_t nseg)
{
    if (!area || off == INFL_SEG_NOSAVE || !infl_seg_save_fits(off, used < cap ? used : cap, nseg) ||
        area[off] != nseg)
        return (const uint32_t *)0;
    return area + off;
}

/* Segment k's state after the sync, from the save w of nseg segments over [data_start, end_bit),
 * as the sync would leave it (no marks). A start past its bound or a bound past end_bit, which no
 * true save holds, is a failure: the verdict declines it before any write decodes. */
INFL_HD static inline void infl_seg_load_one(const uint32_t *w, uint32_t k, uint32_t nseg,
                                             uint64_t data_start, uint64_t end_bit, struct infl_seg *s)
{
    s->start = data_start + w[1 + 2 * (uint64_t)k];
    s->bound = k + 1 < nseg ? data_start + w[3 + 2 * (uint64_t)k] : end_bit;
    s->count = w[2 + 2 * (uint64_t)k];
    s->flags = k + 1 < nseg ? 0 : INFL_SEG_EOB;
    s->nmarks = 0;
    s->steps = 0;
    if (s->start > s->bound || s->bound > end_bit)
        s->flags = INFL_SEG_FAIL;
}

#endif
