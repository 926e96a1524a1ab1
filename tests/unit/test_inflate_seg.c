/* test_inflate_seg.c — the segment decode of one block (cpu_ref/inflate_seg.c) against libdeflate:
 * every Huffman block of the inflate corpus in 1 to 256 segments, in segments of a few bytes and
 * as the device cuts them, its markers resolved against the bytes before it; whole streams
 * (inflseg_decode) against libdeflate's answer; decodes that meet a previous decode's marks against
 * fresh ones; damaged blocks, which must give the serial decode's bytes or decline; phase 2 in
 * segments (inflseg_pass1) against the serial decode of every candidate; the sync rounds
 * on a photograph-like stream and on EDGED_SEG_PNG's IDAT (tests/bench/photos.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "inflate_corpus.h"
#include "inflate_seg.h"
#include "inflate_spec.h"

#define MAX_BLOCKS 4096

/* One block of a stream as the serial decode walks it. */
struct tblk {
    uint64_t start, end, off, len;
    int type; /* BTYPE */
};

/* Segment counts every block is decoded with; 0 and -1 stand for segments of 3 and 8 bytes, -2 for
 * the device's cut (inflseg_block's nseg 0: about 80 bytes, at most INFL_SEG_DEV_MAX). */
#define AS_DEVICE (-2)
static const int seg_counts[] = {1, 2, 3, 7, 32, 256, 0, -1, AS_DEVICE};
#define NCOUNTS (int)(sizeof(seg_counts) / sizeof(seg_counts[0]))

static uint32_t nseg_of(int which, const struct tblk *b)
{
    uint64_t bits = b->end - b->start, size = which == 0 ? 24 : 64;

    if (which == AS_DEVICE)
        return 0;
    return which > 0 ? (uint32_t)which : (uint32_t)((bits + size - 1) / size);
}

/* The blocks of z[0..zlen) (out_len bytes) by the serial decode; returns how many, 0 when it fails. */
static int walk(const uint8_t *z, size_t zlen, size_t out_len, struct tblk *bk)
{
    static struct infl_blk chain[MAX_BLOCKS];
    uint64_t end_bit = 0;
    uint32_t n = 0, i;

    if (zlen < 6 || inflseg_chain(z, zlen - 4, out_len, chain, MAX_BLOCKS, &n, &end_bit, NULL))
        return 0;
    for (i = 0; i < n; i++) {
        struct infl_br b;
        infl_br_init(&b, z, zlen - 4, chain[i].start_bit);
        bk[i] = (struct tblk){chain[i].start_bit, i + 1 < n ? chain[i + 1].start_bit : end_bit,
                              chain[i].out_off, chain[i].len, (int)(b.buf >> 1 & 3)};
    }
    return (int)n;
}

/* Pointer jumping over sym[off..off+len), whose markers name positions before them (those before
 * off hold bytes). Returns the rounds, or -1 when markers are left. */
static int resolve(uint32_t *sym, uint64_t off, uint64_t len)
{
    int rounds, left = 1;
    uint64_t p;

    for (rounds = 0; left && rounds < INFL_JUMP_ROUNDS; rounds++)
        for (p = off + len, left = 0; p-- > off;)
            left |= infl_jump(sym, p);
    return left ? -1 : rounds;
}

/* Block b of z (the chain's start, end and length) in nseg segments into sym, resolved: 0, the
 * answer of inflseg_block, or -100 when markers are left. */
static int seg_run(const uint8_t *z, size_t zlen, const struct tblk *b, uint32_t nseg, uint32_t *sym,
                   struct inflseg_stats *st)
{
    char err[EDGED_ERR_LEN] = "";
    int rc = inflseg_block(z, zlen - 4, b->start, b->end, b->off, b->len, nseg, sym, st, err);

    return rc == 0 && resolve(sym, b->off, b->len) < 0 ? -100 : rc;
}

/* Puts want's bytes back into sym[off..off+len) (the bytes the next block reads). */
static void restore(uint32_t *sym, const uint8_t *want, uint64_t off, uint64_t len)
{
    uint64_t i;

    for (i = 0; i < len; i++)
        sym[off + i] = want[off + i];
}

/* seg_run, then 0 only when the bytes are want's; sym holds want's bytes before b->off. */
static int seg_block(const uint8_t *z, size_t zlen, const struct tblk *b, uint32_t nseg, const uint8_t *want,
                     uint32_t *sym, struct inflseg_stats *st)
{
    uint64_t i;
    int rc = seg_run(z, zlen, b, nseg, sym, st);

    for (i = 0; rc == 0 && i < b->len; i++)
        if (sym[b->off + i] != want[b->off + i])
            rc = -100;
    restore(sym, want, b->off, b->len);
    return rc;
}

static uint32_t *sym_of(const uint8_t *want, size_t n)
{
    uint32_t *sym = malloc((n ? n : 1) * sizeof(*sym));
    size_t i;

    if (!sym)
        abort();
    for (i = 0; i < n; i++)
        sym[i] = want[i];
    return sym;
}

/* Every Huffman block of every stream libdeflate accepts, in every segment count. */
static void test_corpus(const struct icorpus *k, struct tblk *bk)
{
    int i, j, c, blocks[3] = {0, 0, 0}, walked = 0;

    for (i = 0; i < k->n; i++) {
        const struct icase *ic = &k->c[i];
        int n = ic->ok ? walk(ic->z, ic->zlen, ic->out_len, bk) : 0, bad = 0, first = -1, rc = 0;
        uint32_t *sym;
        if (!n)
            continue; /* refused, or a stream the serial decode declines */
        walked++;
        sym = sym_of(ic->want, ic->out_len);
        for (j = 0; j < n; j++) {
            blocks[bk[j].type]++;
            for (c = 0; bk[j].type && c < NCOUNTS; c++) {
                int r =
                    seg_block(ic->z, ic->zlen, &bk[j], nseg_of(seg_counts[c], &bk[j]), ic->want, sym, NULL);
                if (r && !bad++) {
                    first = j;
                    rc = r;
                }
            }
        }
        CHECK(bad == 0, "%s: %d segment decodes differ, first in block %d (rc %d)", ic->name, bad, first, rc);
        free(sym);
    }
    CHECK(blocks[1] > 0 && blocks[2] > 0, "fixed %d and dynamic %d blocks", blocks[1], blocks[2]);
    printf("corpus: %d streams, %d stored, %d fixed and %d dynamic blocks, each in %d segmentations\n",
           walked, blocks[0], blocks[1], blocks[2], NCOUNTS);
}

/* Whether two segment states describe the same decode (a failed one: only where it failed). */
static int same_state(const struct infl_seg *a, const struct infl_seg *b)
{
    return a->start == b->start && a->bound == b->bound && a->flags == b->flags &&
           (a->count == b->count || (a->flags & INFL_SEG_FAIL));
}

/* The marks: a decode that meets the previous one's marks ends as a fresh decode from the same
 * start does, for any two starts and any limit in a block; a third decode after it as well. */
static void test_meet(uint64_t *seed, struct tblk *bk)
{
    size_t n = 200000, zl;
    uint8_t *d = icorpus_data(1, n, seed), *z = icorpus_zlib(d, n, 6, 8, Z_DEFAULT_STRATEGY, &zl);
    struct infl_tabs *t = malloc(sizeof(*t));
    int nb = walk(z, zl, n, bk), j, i, bad = 0, trials = 0, met = 0;

    if (!t)
        abort();
    for (j = 0; j < nb; j++) {
        struct infl_res r;
        struct infl_br b;
        uint64_t ds;
        infl_br_init(&b, z, zl - 4, bk[j].start);
        if (infl_block_head(&b, t, &r) <= 0)
            continue;
        ds = infl_br_pos(&b);
        for (i = 0; i < 300; i++, trials++) {
            struct infl_seg a = {0}, f = {0};
            uint64_t span = bk[j].end - ds, lim = ds + 1 + icorpus_rand(seed) % span;
            uint64_t w = ds + icorpus_rand(seed) % (lim - ds), s2 = ds + icorpus_rand(seed) % (lim - ds);
            uint64_t s3 = ds + icorpus_rand(seed) % (lim - ds);
            if (i % 2) /* near the wrong start, where the decodes meet */
                s2 = w + 1 + icorpus_rand(seed) % 64 < lim ? w + 1 + icorpus_rand(seed) % 64 : w;
            infl_seg_decode(z, zl - 4, t, w, lim, bk[j].end, &a);
            infl_seg_decode(z, zl - 4, t, s2, lim, bk[j].end, &a);
            infl_seg_decode(z, zl - 4, t, s2, lim, bk[j].end, &f);
            met += a.steps < f.steps;
            bad += !same_state(&a, &f);
            infl_seg_decode(z, zl - 4, t, s3, lim, bk[j].end, &a);
            f.nmarks = 0;
            infl_seg_decode(z, zl - 4, t, s3, lim, bk[j].end, &f);
            bad += !same_state(&a, &f);
        }
    }
    CHECK(nb > 0 && bad == 0, "meet: %d of %d decodes end otherwise than a fresh one", bad, 2 * trials);
    printf("meet: %d decodes after another, %d of them ended early at a mark, all as a fresh decode\n",
           trials, met);
    free(t);
    free(z);
    free(d);
}

/* Whole streams through inflseg_decode: libdeflate's bytes, or a refusal where it refuses. */
static void test_streams(const struct icorpus *k)
{
    static const uint32_t counts[] = {1, 7, 256, 0};
    int i, c, bad = 0;
    uint32_t rounds = 0;

    for (i = 0; i < k->n; i++) {
        const struct icase *ic = &k->c[i];
        uint8_t *out = malloc(ic->out_len ? ic->out_len : 1);
        if (!out)
            abort();
        for (c = 0; c < 4; c++) {
            struct inflseg_stats st;
            char err[EDGED_ERR_LEN] = "";
            int rc = inflseg_decode(ic->z, ic->zlen, out, ic->out_len, counts[c], &st, err);
            int right = ic->ok ? rc == 0 && !memcmp(out, ic->want, ic->out_len) : rc == INFLSEG_DECLINED;
            if (!right && !bad++)
                fprintf(stderr, "%s in %u segments: rc %d %s\n", ic->name, counts[c], rc, err);
            rounds = st.rounds > rounds ? st.rounds : rounds;
        }
        free(out);
    }
    CHECK(bad == 0, "streams: %d answers differ from libdeflate's", bad);
    printf("streams: %d streams in 1, 7 and 256 segments a block and as the device cuts them, libdeflate's "
           "answer (rounds at most %u)\n",
           k->n, rounds);
}

/* The segment decode of a damaged block with end and length e, against the serial decode (ser 0:
 * it gave ref with the end and length own): 0 declined where right, 1 wrong, 2 declined a block
 * the serial decode gives, 3 decoded to the serial decode's bytes. */
static int damaged_try(const uint8_t *m, size_t zl, const struct tblk *e, const struct tblk *own, int ser,
                       uint32_t nseg, uint32_t *sym, const uint32_t *ref)
{
    int same = ser == 0 && e->end == own->end && e->len == own->len;
    int seg = seg_run(m, zl, e, nseg, sym, NULL);
    uint64_t i;

    if (seg == INFLSEG_DECLINED)
        return same ? 2 : 0;
    if (seg != 0 || !same)
        return 1;
    for (i = 0; i < e->len; i++)
        if (sym[e->off + i] != ref[e->off + i])
            return 1;
    return 3;
}

/* One damaged Huffman block b of m: the segment decode with the chain's end and length, and with
 * those the serial decode finds, against the serial decode's bytes. Counts the answers of
 * damaged_try in res[]. */
static void damaged_block(const uint8_t *m, size_t zl, const struct icase *c, const struct tblk *b,
                          uint32_t nseg, struct infl_tabs *t, uint32_t *sym, uint32_t *ref, int res[4])
{
    struct tblk own = *b;
    struct infl_res r;
    int ser = -1;

    if (infl_block(m, zl - 4, b->start, t, NULL, 0, c->out_len - b->off, c->out_len + 1, &r) == 0 &&
        !r.stored) {
        own.end = r.end_bit;
        own.len = r.len;
        ser = infl_block(m, zl - 4, own.start, t, ref + own.off, own.off, own.len, own.len + 1, &r) ||
                      resolve(ref, own.off, own.len) < 0
                  ? -1
                  : 0;
    }
    res[damaged_try(m, zl, b, &own, ser, nseg, sym, ref)]++;
    if (ser == 0 && (own.end != b->end || own.len != b->len))
        res[damaged_try(m, zl, &own, &own, ser, nseg, sym, ref)]++;
    restore(sym, c->want, b->off, own.len > b->len ? own.len : b->len);
    restore(ref, c->want, b->off, own.len > b->len ? own.len : b->len);
}

/* Random bit flips (1 to 3) inside one Huffman block of a few streams, `rounds` times each
 * (EDGED_INFLATE_DAMAGE, default 150), each decoded in 7 and in 64 segments. */
static void test_damage(uint64_t *seed, int rounds, struct tblk *bk)
{
    struct icorpus k = {0};
    struct infl_tabs *t = malloc(sizeof(*t));
    int i, j, res[4] = {0, 0, 0, 0};

    if (!t)
        abort();
    icorpus_damage_set(&k, seed);
    for (i = 0; i < k.n; i++) {
        const struct icase *c = &k.c[i];
        int n = walk(c->z, c->zlen, c->out_len, bk), huff = 0;
        uint32_t *sym = sym_of(c->want, c->out_len), *ref = sym_of(c->want, c->out_len);
        uint8_t *m = malloc(c->zlen);
        for (j = 0; j < n; j++)
            huff += bk[j].type != 0;
        for (j = 0; huff && j < rounds; j++) {
            const struct tblk *b;
            uint32_t f, nf = 1 + icorpus_rand(seed) % 3, pick = icorpus_rand(seed) % (uint32_t)n;
            while (!bk[pick].type)
                pick = (pick + 1) % (uint32_t)n;
            b = &bk[pick];
            memcpy(m, c->z, c->zlen);
            for (f = 0; f < nf; f++) {
                uint64_t at = b->start + icorpus_rand(seed) % (b->end - b->start);
                m[at >> 3] ^= (uint8_t)(1u << (at & 7));
            }
            damaged_block(m, c->zlen, c, b, j & 1 ? 64 : 7, t, sym, ref, res);
        }
        free(m);
        free(sym);
        free(ref);
    }
    CHECK(res[1] == 0, "damage: %d segment decodes gave other bytes than the serial decode", res[1]);
    CHECK(res[2] == 0, "damage: %d blocks declined that the serial decode gives", res[2]);
    printf("damage: %d damaged blocks, %d answers the serial decode's bytes, %d its refusal\n", k.n * rounds,
           res[3], res[0]);
    icorpus_free(&k);
    free(t);
}

/* The sync rounds of every Huffman block of one stream in nseg segments (<= 0: of 3 or 8 bytes):
 * max and mean rounds, and the steps the sync decodes per step of the block. */
static void rounds_of(const char *what, const uint8_t *z, size_t zl, const uint8_t *want, size_t n, int which,
                      struct tblk *bk)
{
    int nb = walk(z, zl, n, bk), j, blocks = 0, maxr = 0, bad = 0;
    uint64_t first = 0, later = 0, steps = 0, sumr = 0;
    uint32_t *sym = sym_of(want, n);

    for (j = 0; j < nb; j++) {
        struct inflseg_stats st;
        if (!bk[j].type)
            continue;
        bad += seg_block(z, zl, &bk[j], nseg_of(which, &bk[j]), want, sym, &st) != 0;
        blocks++;
        sumr += st.rounds;
        maxr = st.rounds > (uint32_t)maxr ? (int)st.rounds : maxr;
        first += st.first_steps;
        later += st.later_steps;
        steps += st.block_steps;
    }
    CHECK(nb > 0 && bad == 0, "%s: %d of %d blocks differ", what, bad, blocks);
    if (which == AS_DEVICE)
        printf("rounds %s, segments as the device cuts them: %d blocks, rounds max %d mean %.2f; steps per block "
               "step: round 0 %.2f, later rounds %.3f\n",
               what, blocks, maxr, blocks ? (double)sumr / blocks : 0.0, (double)first / (steps ? steps : 1),
               (double)later / (steps ? steps : 1));
    else if (which > 0)
        printf(
            "rounds %s, %d segments: %d blocks, rounds max %d mean %.2f; steps per block step: round 0 %.2f, "
            "later rounds %.3f\n",
            what, which, blocks, maxr, blocks ? (double)sumr / blocks : 0.0,
            (double)first / (steps ? steps : 1), (double)later / (steps ? steps : 1));
    else
        printf("rounds %s, segments of %d bytes: %d blocks, rounds max %d mean %.2f; steps per block step: "
               "round 0 "
               "%.2f, later rounds %.3f\n",
               what, which == 0 ? 3 : 8, blocks, maxr, blocks ? (double)sumr / blocks : 0.0,
               (double)first / (steps ? steps : 1), (double)later / (steps ? steps : 1));
    free(sym);
}

/* The rounds on a large level-6 photograph-like stream, and on EDGED_SEG_PNG's IDAT when set. */
static void test_rounds(uint64_t *seed, struct tblk *bk)
{
    static const int counts[] = {32, 256, 1024, -1, 0, AS_DEVICE};
    size_t n = 3 * 1024 * 1024, zl, i;
    uint8_t *d = icorpus_data(1, n, seed), *z = icorpus_zlib(d, n, 6, 8, Z_DEFAULT_STRATEGY, &zl);
    const char *png = getenv("EDGED_SEG_PNG");

    for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        rounds_of("photo-like l6", z, zl, d, n, counts[i], bk);
    if (png) {
        struct buf idat = {0};
        struct libdeflate_decompressor *dd = libdeflate_alloc_decompressor();
        size_t cap = (size_t)1 << 28, got = 0;
        uint8_t *raw = malloc(cap);
        if (!dd || !raw)
            abort();
        CHECK(icorpus_read_idat(png, &idat) == 0 && idat.len > 0 &&
                  libdeflate_zlib_decompress_ex(dd, idat.p, idat.len, raw, cap, NULL, &got) ==
                      LIBDEFLATE_SUCCESS,
              "%s: no IDAT stream libdeflate decodes", png);
        for (i = 0; got && i < sizeof(counts) / sizeof(counts[0]); i++)
            rounds_of("EDGED_SEG_PNG", idat.p, idat.len, raw, got, counts[i], bk);
        libdeflate_free_decompressor(dd);
        free(raw);
        free(idat.p);
    } else {
        printf("rounds: EDGED_SEG_PNG not set (a photograph's PNG, tests/bench/photos.py): generated stream "
               "only\n");
    }
    free(z);
    free(d);
}

/* Phase 2 of z (out_len bytes) both ways, the serial decode of every candidate and inflseg_pass1,
 * with nfake bits set in the bitmap at random offsets first (false candidates as the guess sees
 * them). Returns the candidates whose results differ, -1 when the stream has no room for a scan;
 * *ps inflseg_pass1's stats, *ncand the candidates. */
static int pass1_both(const uint8_t *z, size_t zl, size_t out_len, int nfake, uint64_t *seed,
                      struct inflseg_pass1_stats *ps, uint64_t *ncand)
{
    uint64_t nbytes = zl - 4, cap = inflspec_max_candidates(zl), hsize = inflspec_map_size(zl), i;
    uint64_t *keys = malloc(hsize * sizeof(*keys));
    struct infl_res *ser = calloc(hsize, sizeof(*ser)), *seg = calloc(hsize, sizeof(*seg));
    uint32_t *cbits = calloc(inflspec_cand_words(zl), sizeof(*cbits));
    struct infl_tabs *t = malloc(sizeof(*t));
    char err[EDGED_ERR_LEN] = "";
    int bad = 0, f;

    if (!keys || !ser || !seg || !cbits || !t)
        abort();
    for (i = 0; i < hsize; i++)
        keys[i] = INFL_EMPTY;
    *ncand = 0;
    if (zl < 7 || inflspec_scan(z, nbytes, keys, (uint32_t)(hsize - 1), cap, cbits, ncand)) {
        bad = -1;
        goto out;
    }
    for (f = 0; f < nfake && nbytes * 8 > 16; f++)
        infl_cand_set(cbits, 16 + icorpus_rand(seed) % (nbytes * 8 - 16));
    CHECK(inflseg_pass1(z, nbytes, out_len, keys, (uint32_t)hsize, cbits, seg, NULL, ps, err) == 0,
          "pass1: %s", err);
    for (i = 0; i < hsize; i++) {
        if (keys[i] == INFL_EMPTY)
            continue;
        infl_block(z, nbytes, keys[i], t, NULL, 0, out_len, INFL_MAX_SYMS, &ser[i]);
        bad += ser[i].ok != seg[i].ok ||
               (ser[i].ok && (ser[i].end_bit != seg[i].end_bit || ser[i].len != seg[i].len ||
                              ser[i].final != seg[i].final || ser[i].stored != seg[i].stored));
    }
out:
    free(t);
    free(cbits);
    free(seg);
    free(ser);
    free(keys);
    return bad;
}

/* Phase 2 of the damage streams with 1 to 3 bits flipped anywhere, 100 times each: the candidates
 * whose segment result differs from the serial decode's. */
static int pass1_damaged(uint64_t *seed)
{
    struct icorpus k = {0};
    int i, j, bad = 0;

    icorpus_damage_set(&k, seed);
    for (i = 0; i < k.n; i++) {
        uint8_t *m = malloc(k.c[i].zlen);
        if (!m)
            abort();
        for (j = 0; j < 100; j++) {
            struct inflseg_pass1_stats ps;
            uint64_t n = 0;
            uint32_t f, nf = 1 + icorpus_rand(seed) % 3;
            memcpy(m, k.c[i].z, k.c[i].zlen);
            for (f = 0; f < nf; f++) {
                uint32_t at = icorpus_rand(seed) % (uint32_t)(k.c[i].zlen * 8);
                m[at >> 3] ^= (uint8_t)(1u << (at & 7));
            }
            bad += pass1_both(m, k.c[i].zlen, k.c[i].out_len, (int)(j % 2), seed, &ps, &n) > 0;
        }
        free(m);
    }
    icorpus_free(&k);
    return bad;
}

/* Phase 2 in segments on every stream of the corpus, and with 3 false candidates added to the
 * bitmap, and on damaged streams: the serial decode's result for every candidate. */
static void test_pass1(const struct icorpus *k, uint64_t *seed)
{
    uint64_t by_seg[2] = {0, 0}, serial[2] = {0, 0}, cands = 0;
    int i, fake, bad = 0;

    for (i = 0; i < k->n; i++)
        for (fake = 0; fake < 2; fake++) {
            const struct icase *c = &k->c[i];
            struct inflseg_pass1_stats ps;
            uint64_t n = 0;
            int d = pass1_both(c->z, c->zlen, c->out_len, fake * 3, seed, &ps, &n);
            if (d < 0)
                continue;
            if (d > 0 && !bad)
                fprintf(stderr, "%s, %d false candidates: %d results differ\n", c->name, fake * 3, d);
            bad += d;
            by_seg[fake] += ps.seg;
            serial[fake] += ps.serial;
            cands += fake ? 0 : n;
        }
    bad += pass1_damaged(seed);
    CHECK(bad == 0, "pass1: %d candidates whose segment result differs from the serial decode's", bad);
    printf("pass1: %llu candidates: %llu by segments, %llu left to the serial decode; with 3 false candidates a "
           "stream in the bitmap: %llu and %llu\n",
           (unsigned long long)cands, (unsigned long long)by_seg[0], (unsigned long long)serial[0],
           (unsigned long long)by_seg[1], (unsigned long long)serial[1]);
}

/* A false candidate (icorpus_false_header: a stored block whose bytes are the start of a dynamic
 * block): the serial decode decides it, and the stream decodes. */
static void test_false_candidate(uint64_t *seed)
{
    size_t n = 60000, zl;
    uint8_t *d = icorpus_data(1, n, seed), *z = icorpus_false_header(d, n, 300, seed, &zl), *out = malloc(n);
    struct inflseg_pass1_stats ps;
    struct inflspec_stats st;
    struct tblk bk[16];
    uint64_t ncand = 0;
    int nb, diff, rc;

    if (!out)
        abort();
    nb = walk(z, zl, n, bk);
    diff = pass1_both(z, zl, n, 0, seed, &ps, &ncand);
    rc = inflseg_spec_decode(z, zl, out, n, 1, &st);
    CHECK(nb > 1 && bk[0].type == 0 && ncand > (uint64_t)nb - 1,
          "false candidate: %d blocks (the first of type %d), %llu candidates", nb, nb ? bk[0].type : -1,
          (unsigned long long)ncand);
    CHECK(diff == 0 && ps.serial >= 1, "false candidate: %d results differ, %llu left to the serial decode", diff,
          (unsigned long long)ps.serial);
    CHECK(rc == 0 && !memcmp(out, d, n), "false candidate: rc %d", rc);
    printf("false candidate: %d blocks, %llu candidates, %llu by segments, %llu left to the serial decode\n", nb,
           (unsigned long long)ncand, (unsigned long long)ps.seg, (unsigned long long)ps.serial);
    free(out);
    free(z);
    free(d);
}

/* infl_seg_guess against a bit-by-bit search, on sparse random bitmaps and random ranges (the
 * word edges included: ranges start and end anywhere in a word). */
static void test_guess(uint64_t *seed)
{
    uint32_t cbits[128];
    int trial, bad = 0;

    for (trial = 0; trial < 3000; trial++) {
        uint64_t from = icorpus_rand(seed) % 4096, lim = from + 1 + icorpus_rand(seed) % (4096 - from), want, b;
        int i, nset = (int)(icorpus_rand(seed) % 6);
        memset(cbits, 0, sizeof(cbits));
        for (i = 0; i < nset; i++)
            infl_cand_set(cbits, icorpus_rand(seed) % 4096);
        for (want = lim, b = from; b < lim; b++)
            if (cbits[b >> 5] >> (b & 31) & 1) {
                want = b;
                break;
            }
        bad += infl_seg_guess(cbits, from, lim) != want;
    }
    CHECK(bad == 0, "guess: %d of 3000 searches differ from a bit-by-bit search", bad);
}

/* One dynamic final block, 96 lengths: the segments decide it whatever its padding (0 to 7 bits
 * after its end-of-block code before the Adler-32), every padding met. */
static void test_final_padding(uint64_t *seed)
{
    int k, seen = 0, bad = 0, pads[8] = {0};

    for (k = 0; k < 96; k++) {
        size_t n = 1500 + 37 * (size_t)k, zl;
        uint8_t *d = icorpus_data(1, n, seed), *z = icorpus_zlib(d, n, 6, 8, Z_DEFAULT_STRATEGY, &zl);
        struct inflseg_pass1_stats ps;
        struct tblk bk[4];
        uint64_t ncand = 0;
        int nb = walk(z, zl, n, bk);
        if (nb == 1 && bk[0].type == 2) {
            int diff = pass1_both(z, zl, n, 0, seed, &ps, &ncand);
            bad += diff != 0 || ncand != 1 || ps.seg != 1;
            pads[(8 - bk[0].end % 8) % 8]++;
        }
        free(z);
        free(d);
    }
    for (k = 0; k < 8; k++)
        seen += pads[k] > 0;
    CHECK(bad == 0 && seen == 8, "final block: %d streams not decided by the segments, %d of 8 paddings met",
          bad, seen);
    printf("final block: 96 one-block streams, paddings 0..7 met %d %d %d %d %d %d %d %d times, all by segments\n",
           pads[0], pads[1], pads[2], pads[3], pads[4], pads[5], pads[6], pads[7]);
}

int main(void)
{
    struct icorpus k = {0};
    struct tblk *bk = malloc(MAX_BLOCKS * sizeof(*bk));

    if (!bk)
        abort();
    k.seed = icorpus_seed();
    icorpus_generated(&k, 100000);
    if (icorpus_pngsuite(&k) < 0)
        SKIP("%s not found (EDGED_PNGSUITE): PngSuite streams not tested", icorpus_pngsuite_dir());
    test_corpus(&k, bk);
    test_streams(&k);
    test_meet(&k.seed, bk);
    test_pass1(&k, &k.seed);
    test_false_candidate(&k.seed);
    test_final_padding(&k.seed);
    test_guess(&k.seed);
    test_damage(&k.seed, icorpus_damage_rounds(), bk);
    test_rounds(&k.seed, bk);
    icorpus_free(&k);
    free(bk);
    return check_summary();
}
