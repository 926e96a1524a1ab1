/* inflate_spec_core.h — the speculative inflate's core, one C source for the host (C11) and the
 * device (nvcc): bit reader, block-header test, Huffman tables, block decode with window markers,
 * the chain of blocks, marker resolution and Adler-32. Included by inflate_spec.h and gpu/ginflate_internal.h.
 *
 * Markers: a block decoded without the output before it (each block is, by its own thread) writes
 * u32 symbols at its place in the output: 0..255 a byte, INFL_MARK + q the byte that output position
 * q (before the block) will hold. Markers are resolved by pointer jumping (infl_jump): each round
 * replaces a marker by what its source holds, so a chain of copies through k blocks takes about
 * log2(k) rounds, all positions in parallel. Code rules (which streams are accepted) are zlib's: every code complete, except
 * that a literal/length or distance code may be empty or hold one symbol of length 1 (codeword 0;
 * codeword 1 is invalid); the code-length code must be complete; symbol 256 must have a length;
 * HLIT and HDIST at most 29; literal/length symbols 286 and 287 and distance symbols 30 and 31 are
 * invalid. libdeflate accepts a little more (an incomplete code-length code, both codewords of a
 * one-symbol code): such streams are declined, and the CPU decoder's verdict stands. */
#ifndef EDGED_INFLATE_SPEC_CORE_H
#define EDGED_INFLATE_SPEC_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define INFL_HD __host__ __device__
#else
#define INFL_HD
#endif
#ifdef __CUDA_ARCH__
#define INFL_UNROLL _Pragma("unroll")
#else
#define INFL_UNROLL
#endif

#define INFL_WIN 32768u      /* the deflate window */
#define INFL_MARK 256u       /* first marker value of the u32 symbols */
#define INFL_LIT_TBITS 10    /* root bits of the literal/length table */
#define INFL_DIST_TBITS 8    /* root bits of the distance table */
#define INFL_LIT_ENOUGH 2048 /* entries: root plus every sub-table a complete code can need */
#define INFL_DIST_ENOUGH 1024
#define INFL_PRE_TBITS 7     /* the code-length code is at most 7 bits long: one flat table */
#define INFL_MAX_SYMS (1u << 19) /* symbols one speculative decode may take (zlib's blocks: 64 Ki) */
#define INFL_SEQ_MAX_OUT (1u << 20) /* bytes the chain may Huffman-decode itself before declining */
#define INFL_MAX_IN (1ull << 30)     /* longer streams are declined */
#define INFL_MAX_OUT (1ull << 31)    /* markers (INFL_MARK + position) stay inside u32 */

/* Table entry (u16, so that a thread's tables take 6 KiB): symbol in bits 0..8 and bits to drop in
 * 9..12; or INFL_SUB on a root entry, the sub-table's offset in bits 0..10 and its bits in 11..13;
 * 0 is an invalid code. */
#define INFL_SUB 0x8000u
#define INFL_ENTRY(sym, len) ((uint16_t)((sym) | ((len) << 9)))

/* The result of one block decode. */
struct infl_res {
    uint64_t end_bit; /* just past the end-of-block code (stored: past the data) */
    uint64_t len;     /* output bytes */
    uint32_t ok;      /* 1 when it decoded */
    uint16_t final;   /* BFINAL */
    uint16_t stored;  /* BTYPE 00 */
    uint32_t seg;     /* phase 2 in segments: its synced segments' save (inflate_seg_core.h), or UINT32_MAX */
};

/* One block of the chain: where its header starts and where its output goes. */
struct infl_blk {
    uint64_t start_bit;
    uint64_t out_off;
    uint64_t len;
    uint32_t seg; /* the result's save when taken from a speculative decode, else UINT32_MAX */
};

/* What the chain did, for tests and the docs. */
struct infl_chain_stats {
    uint32_t spec_blocks;  /* blocks taken from speculative decodes */
    uint32_t seq_blocks;   /* blocks the chain decoded itself (fixed, stored, not a candidate) */
    uint64_t seq_huff_out; /* bytes of those decoded with Huffman codes (stored ones are free) */
    uint64_t end_bit;      /* just past the final block (the segment placement's last block end) */
};

/* Per-thread decoding tables. */
struct infl_tabs {
    uint16_t lit[INFL_LIT_ENOUGH];
    uint16_t dist[INFL_DIST_ENOUGH];
};

/* LSB-first bit reader over nbytes bytes: reads past the end give zeros; the caller compares
 * infl_br_pos with nbytes * 8 to see an overrun. */
struct infl_br {
    const uint8_t *in;
    uint64_t nbytes;
    uint64_t at; /* next byte to load */
    uint64_t buf;
    unsigned cnt;
};

/* Refills the buffer to 57..64 bits. Away from the end it takes whole bytes of one 8-byte read whose
 * loads are independent (issued together, one memory latency on the device instead of one per
 * byte); near the end byte by byte, zeros past it. Both leave the same buffer. */
INFL_HD static inline void infl_br_refill(struct infl_br *b)
{
    if (b->cnt <= 56 && b->at + 8 <= b->nbytes) {
        unsigned take = (64 - b->cnt) >> 3; /* whole bytes that fit: 1..8 */
        uint64_t v = 0;
        for (int k = 0; k < 8; k++)
            v |= (uint64_t)b->in[b->at + k] << (8 * k);
        if (take < 8)
            v &= (1ull << (8 * take)) - 1;
        b->buf |= v << b->cnt;
        b->at += take;
        b->cnt += 8 * take;
        return;
    }
    while (b->cnt <= 56) {
        uint64_t v = b->at < b->nbytes ? b->in[b->at] : 0;
        b->buf |= v << b->cnt;
        b->at++;
        b->cnt += 8;
    }
}

INFL_HD static inline void infl_br_init(struct infl_br *b, const uint8_t *in, uint64_t nbytes, uint64_t bit)
{
    b->in = in;
    b->nbytes = nbytes;
    b->at = bit >> 3;
    b->buf = 0;
    b->cnt = 0;
    infl_br_refill(b);
    b->buf >>= bit & 7;
    b->cnt -= (unsigned)(bit & 7);
}

INFL_HD static inline uint64_t infl_br_pos(const struct infl_br *b)
{
    return b->at * 8 - b->cnt;
}

/* Takes n (0..32) bits; the buffer must hold them (refill first). */
INFL_HD static inline uint32_t infl_br_take(struct infl_br *b, unsigned n)
{
    uint32_t v = (uint32_t)(b->buf & ((1ull << n) - 1));
    b->buf >>= n;
    b->cnt -= n;
    return v;
}

/* Checks the code lengths lens[0..n) (each 0..15): 0 complete, 1 an allowed incomplete code
 * (empty, or one symbol of length 1, when allow_incomplete), -1 otherwise. */
INFL_HD static inline int infl_kraft(const uint8_t *lens, int n, int allow_incomplete)
{
    int count[16];
    int left = 1, l, i;

    for (l = 0; l < 16; l++)
        count[l] = 0;
    for (i = 0; i < n; i++)
        count[lens[i] & 15]++;
    for (l = 1; l < 16; l++) {
        left = 2 * left - count[l];
        if (left < 0)
            return -1;
    }
    if (left == 0)
        return 0;
    if (!allow_incomplete)
        return -1;
    if (count[0] == n || (count[0] == n - 1 && count[1] == 1))
        return 1;
    return -1;
}

INFL_HD static inline uint32_t infl_rev(uint32_t code, int len)
{
    uint32_t r = 0;
    int i;

    for (i = 0; i < len; i++) {
        r = (r << 1) | (code & 1);
        code >>= 1;
    }
    return r;
}

/* Builds the decoding table of lens[0..n) (n <= 320, lengths checked by infl_kraft) with a root of
 * tbits bits and sub-tables behind it, in cap entries. Returns 0, or -1 when cap is too small. */
INFL_HD static inline int infl_build(uint16_t *tab, int cap, int tbits, const uint8_t *lens, int n)
{
    uint16_t sorted[320], codes[320];
    int count[16], offs[16];
    uint32_t next[16], code = 0;
    int i, l, m = 0, used = 1 << tbits;
    uint32_t mask = (1u << tbits) - 1;

    for (l = 0; l < 16; l++)
        count[l] = 0;
    for (i = 0; i < n; i++)
        count[lens[i] & 15]++;
    offs[1] = 0;
    for (l = 1; l < 15; l++)
        offs[l + 1] = offs[l] + count[l];
    count[0] = 0;
    for (l = 1; l < 16; l++) {
        code = (code + (uint32_t)count[l - 1]) << 1;
        next[l] = code;
    }
    for (i = 0; i < n; i++)
        if (lens[i])
            sorted[offs[lens[i]]++] = (uint16_t)i;
    for (l = 1; l < 16; l++)
        m += count[l];
    for (i = 0; i < m; i++)
        codes[i] = (uint16_t)next[lens[sorted[i]]]++;
    if (cap < used)
        return -1;
    for (i = 0; i < used; i++)
        tab[i] = 0;
    for (i = 0; i < m;) {
        int len = lens[sorted[i]];
        uint32_t rev = infl_rev(codes[i], len);
        if (len <= tbits) {
            uint32_t k;
            for (k = rev; k < (1u << tbits); k += 1u << len)
                tab[k] = INFL_ENTRY(sorted[i], len);
            i++;
            continue;
        }
        /* A sub-table for every symbol whose first tbits code bits equal this one's: they follow
         * each other in canonical order, the last is the longest. */
        uint32_t prefix = codes[i] >> (len - tbits);
        int j = i, sbits, off = used;
        while (j + 1 < m && lens[sorted[j + 1]] > tbits &&
               (uint32_t)(codes[j + 1] >> (lens[sorted[j + 1]] - tbits)) == prefix)
            j++;
        sbits = lens[sorted[j]] - tbits;
        if (used + (1 << sbits) > cap)
            return -1;
        used += 1 << sbits;
        for (l = off; l < used; l++)
            tab[l] = 0;
        tab[rev & mask] = (uint16_t)(INFL_SUB | (uint32_t)off | (uint32_t)sbits << 11);
        for (; i <= j; i++) {
            int r = lens[sorted[i]] - tbits;
            uint32_t k, idx = infl_rev(codes[i], lens[sorted[i]]) >> tbits;
            for (k = idx; k < (1u << sbits); k += 1u << r)
                tab[off + k] = INFL_ENTRY(sorted[i], r);
        }
    }
    return 0;
}

/* Decodes one symbol (the buffer must hold 15 bits); -1 on an invalid code. */
INFL_HD static inline int infl_decode_sym(struct infl_br *b, const uint16_t *tab, int tbits)
{
    uint32_t e = tab[b->buf & ((1u << tbits) - 1)];

    if (e & INFL_SUB) {
        b->buf >>= tbits;
        b->cnt -= (unsigned)tbits;
        e = tab[(e & 0x7ff) + (b->buf & ((1u << ((e >> 11) & 7)) - 1))];
    }
    if (!e)
        return -1;
    b->buf >>= (e >> 9) & 15;
    b->cnt -= (e >> 9) & 15;
    return (int)(e & 0x1ff);
}

/* Reads a dynamic block's code lengths (the reader just past the 3 header bits) into lens
 * (*nlit literal/length then *ndist distance lengths) and checks every rule of the header.
 * Returns 0, or -1 when no block header can start here. */
INFL_HD static inline int infl_dyn_lens(struct infl_br *b, uint8_t *lens, int *nlit, int *ndist)
{
    const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t pre[19];
    uint16_t ptab[1 << INFL_PRE_TBITS];
    int hlit, hdist, hclen, i, total;
    uint32_t kraft;

    infl_br_refill(b);
    hlit = (int)infl_br_take(b, 5);
    hdist = (int)infl_br_take(b, 5);
    if (hlit > 29 || hdist > 29)
        return -1;
    hclen = (int)infl_br_take(b, 4) + 4;
    for (i = 0; i < 19; i++)
        pre[i] = 0;
    /* 57 bits at most, all in the refilled buffer; the Kraft sum of the code-length code in units
     * of 2^-7 is the cheap reject of almost every offset that is not a block header. */
    infl_br_refill(b);
    for (i = 0, kraft = 0; i < hclen; i++) {
        uint32_t l = infl_br_take(b, 3);
        pre[order[i]] = (uint8_t)l;
        kraft += l ? 128u >> l : 0;
    }
    if (kraft != 128 || infl_build(ptab, 1 << INFL_PRE_TBITS, INFL_PRE_TBITS, pre, 19))
        return -1;
    *nlit = hlit + 257;
    *ndist = hdist + 1;
    total = *nlit + *ndist;
    for (i = 0; i < total;) {
        int sym, rep;
        uint8_t val = 0;
        infl_br_refill(b);
        sym = infl_decode_sym(b, ptab, INFL_PRE_TBITS);
        if (sym < 0)
            return -1;
        if (sym < 16) {
            lens[i++] = (uint8_t)sym;
            continue;
        }
        if (sym == 16) {
            if (i == 0)
                return -1;
            val = lens[i - 1];
            rep = 3 + (int)infl_br_take(b, 2);
        } else if (sym == 17) {
            rep = 3 + (int)infl_br_take(b, 3);
        } else {
            rep = 11 + (int)infl_br_take(b, 7);
        }
        if (i + rep > total)
            return -1;
        while (rep--)
            lens[i++] = val;
    }
    if (infl_br_pos(b) > b->nbytes * 8 || lens[256] == 0 || infl_kraft(lens, *nlit, 1) < 0 ||
        infl_kraft(lens + *nlit, *ndist, 1) < 0)
        return -1;
    return 0;
}

/* The fixed fields of a dynamic-Huffman block header at 32 offsets at once: w holds the bits from
 * some offset on (bit j of w is the offset's bit j, first bit lowest, as infl_br and the device's
 * windows read them); bit k of the result (k 0..31) is set when the header at offset + k has BTYPE
 * 10 after BFINAL and HLIT, HDIST at most 29. It reads bits 1..43 of w, so one 64-bit window serves
 * all 32 offsets. A 5-bit field is 30 or 31 exactly when its top four bits are ones. About one
 * offset in five passes: the scans run the Kraft sum (infl_head_kraft) only for those. */
INFL_HD static inline uint32_t infl_head_prefilter(uint64_t w)
{
    const uint64_t ones2 = w & w >> 1, ones4 = ones2 & ones2 >> 2; /* bit k: bits k..k+3 all ones */

    /* BTYPE bits k+1 (0) and k+2 (1); HLIT's top four at k+4..k+7, HDIST's at k+9..k+12 */
    return (uint32_t)(w >> 2 & ~(w >> 1 | ones4 >> 4 | ones4 >> 9));
}

/* The rest of infl_head_plausible, for a header whose fixed fields pass infl_head_prefilter: the
 * code-length code complete (Kraft sum 1 in units of 2^-7), h and c as there. */
INFL_HD static inline int infl_head_kraft(uint64_t h, uint64_t c)
{
    uint32_t hclen = (uint32_t)(h >> 13 & 15) + 4, kraft = 0, i;

    INFL_UNROLL
    for (i = 0; i < 19; i++) {
        uint32_t l = (uint32_t)(c >> (3 * i)) & 7;
        kraft += i < hclen && l ? 128u >> l : 0;
    }
    return kraft == 128;
}

/* The cheap necessary test of a dynamic-Huffman block header, from h (the bits at the header's
 * offset, 17 of them used) and c (the 57 bits 17 further: the code-length code's lengths), both read
 * as infl_br reads (zeros past the data): BTYPE 10, HLIT and HDIST in range (infl_head_prefilter's
 * bit 0, so that the per-offset and the 32-offset tests are one definition), and the code-length
 * code complete. No arrays, no loads: the scans test every bit offset with it (in its two parts:
 * the prefilter 32 offsets at a time, the Kraft sum for those that pass) and hand the few it passes
 * to infl_is_candidate. */
INFL_HD static inline int infl_head_plausible(uint64_t h, uint64_t c)
{
    return (infl_head_prefilter(h) & 1) && infl_head_kraft(h, c);
}

/* Whether a dynamic-Huffman block header could start at bit `bit` of in[0..nbytes). Its callers
 * (the scans) hand it only offsets whose fixed fields passed infl_head_prefilter. */
INFL_HD static inline int infl_is_candidate(const uint8_t *in, uint64_t nbytes, uint64_t bit)
{
    struct infl_br b, c;
    uint8_t lens[320];
    int nlit, ndist;

    infl_br_init(&b, in, nbytes, bit);
    infl_br_init(&c, in, nbytes, bit + 17);
    if (!infl_head_plausible(b.buf, c.buf))
        return 0;
    infl_br_take(&b, 3);
    return infl_dyn_lens(&b, lens, &nlit, &ndist) == 0;
}

/* Copies a stored block's bytes (the reader just past its 3 header bits). */
INFL_HD static inline int infl_stored(struct infl_br *b, uint32_t *out, uint64_t cap, struct infl_res *r)
{
    uint64_t at = (infl_br_pos(b) + 7) >> 3, k;
    uint32_t len, nlen;

    if (at + 4 > b->nbytes)
        return -1;
    len = (uint32_t)b->in[at] | (uint32_t)b->in[at + 1] << 8;
    nlen = (uint32_t)b->in[at + 2] | (uint32_t)b->in[at + 3] << 8;
    if ((len ^ 0xffffu) != nlen || at + 4 + len > b->nbytes || len > cap)
        return -1;
    if (out)
        for (k = 0; k < len; k++)
            out[k] = b->in[at + 4 + k];
    r->end_bit = (at + 4 + len) * 8;
    r->len = len;
    return 0;
}

/* Builds the tables of the fixed code. */
INFL_HD static inline void infl_fixed_tabs(struct infl_tabs *t)
{
    uint8_t lens[288];
    int i;

    for (i = 0; i < 288; i++)
        lens[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    infl_build(t->lit, INFL_LIT_ENOUGH, INFL_LIT_TBITS, lens, 288);
    for (i = 0; i < 32; i++)
        lens[i] = 5;
    infl_build(t->dist, INFL_DIST_ENOUGH, INFL_DIST_TBITS, lens, 32);
}

/* Copies len bytes from dist back: within the block a copy, before it a marker of the absolute
 * position (the block's output starts at base); -1 for a reference before the whole output. The
 * copy goes in groups of up to INFL_COPY_GROUP symbols no longer than dist, so that a group's loads
 * do not depend on its stores and the device issues them together. */
#define INFL_COPY_GROUP 8
INFL_HD static inline int infl_copy(uint32_t *out, uint64_t base, uint64_t p, uint32_t len, uint32_t dist)
{
    uint32_t k, j, g, v[INFL_COPY_GROUP];

    if (dist > base + p)
        return -1;
    for (k = 0; k < len; k += g) {
        g = len - k < INFL_COPY_GROUP ? len - k : INFL_COPY_GROUP;
        g = g < dist ? g : dist;
        INFL_UNROLL
        for (j = 0; j < INFL_COPY_GROUP; j++) {
            int64_t src = (int64_t)(p + k + j) - dist;
            if (j < g)
                v[j] = src >= 0 ? out[src] : (uint32_t)(INFL_MARK + (uint64_t)((int64_t)base + src));
        }
        INFL_UNROLL
        for (j = 0; j < INFL_COPY_GROUP; j++)
            if (j < g)
                out[p + k + j] = v[j];
    }
    return 0;
}

/* One step of a Huffman-coded body (the buffer refilled, so that it holds the 48 bits a step can
 * take): a literal (returns 0..255), the end-of-block code (256), or a match (257, with *len and
 * *dist); -1 on an invalid code. A step needs no state but the bit position: the segment decode
 * (inflate_seg_core.h) rests on that. */
#define INFL_STEP_MATCH 257
INFL_HD static inline int infl_step(struct infl_br *b, const struct infl_tabs *t, uint32_t *len, uint32_t *dist)
{
    int sym = infl_decode_sym(b, t->lit, INFL_LIT_TBITS), ds;
    uint32_t e;

    if (sym <= 256)
        return sym;
    if (sym > 285)
        return -1;
    sym -= 257;
    if (sym < 8) {
        *len = 3 + (uint32_t)sym;
    } else if (sym == 28) {
        *len = 258;
    } else {
        e = (uint32_t)(sym - 4) >> 2;
        *len = ((4u + (sym & 3)) << e) + 3 + infl_br_take(b, e);
    }
    ds = infl_decode_sym(b, t->dist, INFL_DIST_TBITS);
    if (ds < 0 || ds > 29)
        return -1;
    if (ds < 4) {
        *dist = 1 + (uint32_t)ds;
    } else {
        e = ((uint32_t)ds >> 1) - 1;
        *dist = ((2u + (ds & 1)) << e) + 1 + infl_br_take(b, e);
    }
    return INFL_STEP_MATCH;
}

/* The Huffman-coded body of a block up to its end-of-block code. */
INFL_HD static inline int infl_huff(struct infl_br *b, const struct infl_tabs *t, uint32_t *out, uint64_t base,
                                    uint64_t cap, uint64_t max_syms, struct infl_res *r)
{
    uint64_t p = 0, syms = 0;

    for (;;) {
        int sym;
        uint32_t len = 0, dist = 0;
        if (++syms > max_syms || b->at > b->nbytes + 8)
            return -1;
        infl_br_refill(b);
        sym = infl_step(b, t, &len, &dist);
        if (sym < 0)
            return -1;
        if (sym < 256) {
            if (p >= cap)
                return -1;
            if (out)
                out[p] = (uint32_t)sym;
            p++;
            continue;
        }
        if (sym == 256)
            break;
        if (len > cap - p || dist > p + INFL_WIN)
            return -1;
        if (out && infl_copy(out, base, p, len, dist))
            return -1;
        p += len;
    }
    r->end_bit = infl_br_pos(b);
    r->len = p;
    return r->end_bit <= b->nbytes * 8 ? 0 : -1;
}

/* Reads the header of the block at the reader's position: BFINAL into r->final, BTYPE, and for a
 * Huffman block its tables into t. The reader stops at the first data bit (stored: just past the
 * 3 header bits). Returns BTYPE (0 stored, 1 fixed, 2 dynamic), or -1 for BTYPE 11 or a dynamic
 * header that breaks a rule. */
INFL_HD static inline int infl_block_head(struct infl_br *b, struct infl_tabs *t, struct infl_res *r)
{
    uint8_t lens[320];
    int nlit, ndist, type;

    r->final = (uint16_t)infl_br_take(b, 1);
    type = (int)infl_br_take(b, 2);
    r->stored = type == 0;
    if (type == 1)
        infl_fixed_tabs(t);
    else if (type == 2 && (infl_dyn_lens(b, lens, &nlit, &ndist) ||
                           infl_build(t->lit, INFL_LIT_ENOUGH, INFL_LIT_TBITS, lens, nlit) ||
                           infl_build(t->dist, INFL_DIST_ENOUGH, INFL_DIST_TBITS, lens + nlit, ndist)))
        return -1;
    return type == 3 ? -1 : type;
}

/* Decodes the block whose header starts at start_bit of in[0..nbytes) into out (NULL: only
 * measure; else the block's place in the output, which starts base symbols after the output's
 * start) with markers for the bytes before it, at most cap symbols and max_syms codes, using t as
 * scratch. r->ok says whether it decoded; returns 0 or -1 likewise. */
INFL_HD static inline int infl_block(const uint8_t *in, uint64_t nbytes, uint64_t start_bit, struct infl_tabs *t,
                                     uint32_t *out, uint64_t base, uint64_t cap, uint64_t max_syms,
                                     struct infl_res *r)
{
    struct infl_br b;
    int type, rc = -1;

    r->ok = 0;
    r->seg = UINT32_MAX;
    infl_br_init(&b, in, nbytes, start_bit);
    type = infl_block_head(&b, t, r);
    if (type == 0)
        rc = infl_stored(&b, out, cap, r);
    else if (type > 0)
        rc = infl_huff(&b, t, out, base, cap, max_syms, r);
    r->ok = rc == 0;
    return rc;
}

/* Checks the 2-byte zlib header (CM 8, CINFO <= 7, FCHECK, no FDICT) of a stream of len bytes
 * with room for a 4-byte trailer. */
INFL_HD static inline int infl_zlib_header(const uint8_t *z, uint64_t len)
{
    if (len < 7 || (z[0] & 15) != 8 || (z[0] >> 4) > 7 || (z[1] & 0x20) ||
        ((uint32_t)z[0] << 8 | z[1]) % 31 != 0)
        return -1;
    return 0;
}

/* Open-addressing map from a candidate's start bit to its slot (keys[], hmask + 1 a power of two). */
#define INFL_EMPTY UINT64_MAX
INFL_HD static inline uint32_t infl_hash(uint64_t bit, uint32_t hmask)
{
    return (uint32_t)((bit * 0x9E3779B97F4A7C15ull) >> 32) & hmask;
}

/* Sets bit `bit` of the candidate bitmap, one bit per bit offset in u32 words, which phase 2 in
 * segments searches (inflate_seg_core.h; the device sets it with atomicOr). */
INFL_HD static inline void infl_cand_set(uint32_t *cbits, uint64_t bit)
{
    cbits[bit >> 5] |= 1u << (bit & 31);
}

/* The slot of start bit `bit`, or -1. */
INFL_HD static inline int64_t infl_lookup(const uint64_t *keys, uint32_t hmask, uint64_t bit)
{
    uint32_t s = infl_hash(bit, hmask), i;

    for (i = 0; i <= hmask; i++, s = (s + 1) & hmask) {
        if (keys[s] == bit)
            return s;
        if (keys[s] == INFL_EMPTY)
            return -1;
    }
    return -1;
}

/* Walks the blocks from bit 16: a block that starts at a candidate which decoded is taken from
 * res[], any other is decoded here (t as scratch; at most INFL_SEQ_MAX_OUT bytes with Huffman
 * codes in all). Fills blocks[0..*nblocks) (at most max_blocks) and *trailer, the byte offset of
 * the Adler-32. Returns 0 when the final block ends with exactly out_len bytes, else -1. */
INFL_HD static inline int infl_chain(const uint8_t *in, uint64_t nbytes, uint64_t out_len, const uint64_t *keys,
                                     const struct infl_res *res, uint32_t hmask, struct infl_tabs *t,
                                     struct infl_blk *blocks, uint32_t max_blocks, uint32_t *nblocks,
                                     uint64_t *trailer, struct infl_chain_stats *st)
{
    uint64_t bit = 16, total = 0;
    uint32_t n = 0;

    st->spec_blocks = st->seq_blocks = 0;
    st->seq_huff_out = st->end_bit = 0;
    for (;;) {
        struct infl_res r;
        int64_t s = infl_lookup(keys, hmask, bit);
        if (n >= max_blocks)
            return -1;
        if (s >= 0 && res[s].ok) {
            r = res[s];
            st->spec_blocks++;
        } else {
            if (infl_block(in, nbytes, bit, t, NULL, 0, out_len - total, out_len + 1, &r))
                return -1;
            st->seq_blocks++;
            if (!r.stored) {
                st->seq_huff_out += r.len;
                if (st->seq_huff_out > INFL_SEQ_MAX_OUT)
                    return -1;
            }
        }
        if (r.len > out_len - total)
            return -1;
        blocks[n].start_bit = bit;
        blocks[n].out_off = total;
        blocks[n].len = r.len;
        blocks[n].seg = r.seg;
        n++;
        *nblocks = n;
        total += r.len;
        bit = r.end_bit;
        if (r.final)
            break;
    }
    st->end_bit = bit;
    *trailer = (bit + 7) >> 3;
    return total == out_len ? 0 : -1;
}

/* Rounds of infl_jump that resolve every chain of markers through up to 2^(rounds-1) blocks. */
#define INFL_JUMP_ROUNDS 34

/* One pointer-jumping step at position p: a marker becomes what its source holds (a byte, or a
 * marker nearer the start of the chain). Returns 1 when p still holds a marker. Safe while other
 * threads do the same: every value a position ever holds names the same final byte. */
INFL_HD static inline int infl_jump(uint32_t *sym, uint64_t p)
{
    uint32_t v = sym[p];

    if (v < INFL_MARK)
        return 0;
    v = sym[v - INFL_MARK];
    sym[p] = v;
    return v >= INFL_MARK;
}

#define INFL_ADLER_MOD 65521u
#define INFL_ADLER_CHUNK 4096u

/* The contributions of out[off..off+m) of an n-byte output to Adler-32's two sums, mod 65521:
 * a = sum of the bytes, b = sum of (n - position) * byte; infl_adler_final adds them up. */
INFL_HD static inline void infl_adler_chunk(const uint8_t *out, uint64_t off, uint64_t m, uint64_t n, uint32_t *a,
                                            uint32_t *b)
{
    uint64_t sa = 0, sb = 0, k;

    for (k = 0; k < m; k++) {
        sa += out[off + k];
        sb += (m - k) * (uint64_t)out[off + k];
    }
    sa %= INFL_ADLER_MOD;
    sb = (sb + ((n - off - m) % INFL_ADLER_MOD) * sa) % INFL_ADLER_MOD;
    *a = (uint32_t)sa;
    *b = (uint32_t)sb;
}

/* Adler-32 of n bytes from the summed chunk contributions (each sum below 2^64). */
INFL_HD static inline uint32_t infl_adler_final(uint64_t sum_a, uint64_t sum_b, uint64_t n)
{
    uint32_t a = (uint32_t)((1 + sum_a % INFL_ADLER_MOD) % INFL_ADLER_MOD);
    uint32_t b = (uint32_t)((n % INFL_ADLER_MOD + sum_b % INFL_ADLER_MOD) % INFL_ADLER_MOD);

    return b << 16 | a;
}

INFL_HD static inline uint32_t infl_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
