/* test_inflate_spec.c — the speculative inflate (cpu_ref/inflate_spec.c) against libdeflate's zlib
 * decoder, byte for byte: generated streams of every encoder knob, PngSuite's IDAT streams, wrong
 * output sizes, trailing bytes, and random damage that must never yield other bytes than libdeflate's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "inflate_corpus.h"
#include "inflate_seg.h"
#include "inflate_spec.h"

/* The generated and PngSuite streams: libdeflate's bytes, or a refusal where it refuses; phases 2
 * and 4 in segments (inflseg_spec_decode 1) give the same answer. */
static void test_corpus(const struct icorpus *k)
{
    uint64_t cand = 0, spec = 0, seq = 0, seg = 0, serial = 0;
    int i, mode;

    for (i = 0; i < k->n; i++) {
        const struct icase *c = &k->c[i];
        uint8_t *out = malloc(c->out_len ? c->out_len : 1);
        for (mode = 0; mode < 2; mode++) {
            struct inflspec_stats st;
            int rc = inflseg_spec_decode(c->z, c->zlen, out, c->out_len, mode, &st);
            if (c->ok)
                CHECK(rc == 0 && !memcmp(out, c->want, c->out_len), "%s, mode %d: rc %d (%zu -> %zu bytes)",
                      c->name, mode, rc, c->zlen, c->out_len);
            else
                CHECK(rc == INFLSPEC_DECLINED, "%s: libdeflate refuses it, inflspec mode %d rc %d", c->name, mode,
                      rc);
            if (mode == 0) {
                cand += st.candidates;
                spec += st.spec_blocks;
                seq += st.seq_blocks;
            } else {
                seg += st.seg_cands;
                serial += st.seg_serial;
            }
        }
        free(out);
    }
    printf("corpus: %d streams, %llu candidates, %llu blocks speculative, %llu sequential; phase 2 in segments: "
           "%llu candidates by segments, %llu left to the serial decode\n",
           k->n, (unsigned long long)cand, (unsigned long long)spec, (unsigned long long)seq,
           (unsigned long long)seg, (unsigned long long)serial);
}

/* The device's scan lists the offsets that pass infl_head_plausible (read as infl_is_candidate reads
 * them) before the full test, in a list of inflspec_max_plausible entries: every stream of the corpus
 * stays within a quarter of it, so that the device declines none of them for a full list. */
static void test_plausible(const struct icorpus *k)
{
    uint64_t all = 0, bytes = 0;
    double fullest = 0;
    int i;

    for (i = 0; i < k->n; i++) {
        const struct icase *c = &k->c[i];
        uint64_t nbytes = c->zlen - 4, n = 0, cap = inflspec_max_plausible(c->zlen), bit;
        if (c->zlen < 7)
            continue;
        for (bit = 16; bit < nbytes * 8; bit++) {
            struct infl_br h, cl;
            infl_br_init(&h, c->z, nbytes, bit);
            infl_br_init(&cl, c->z, nbytes, bit + 17);
            n += (uint64_t)infl_head_plausible(h.buf, cl.buf);
        }
        CHECK(4 * n <= cap, "%s: %llu offsets pass the header test, the device's list holds %llu", c->name,
              (unsigned long long)n, (unsigned long long)cap);
        fullest = (double)n / (double)cap > fullest ? (double)n / (double)cap : fullest;
        all += n;
        bytes += nbytes;
    }
    printf("plausible headers: one offset per %.0f bytes of the corpus, the fullest list %.1f %% of its size\n",
           all ? (double)bytes / (double)all : 0.0, 100.0 * fullest);
}

/* infl_head_prefilter on random words, every offset k of the 32: its bit k is the fixed-field test
 * (BTYPE 10, HLIT and HDIST at most 29) of the header at k, written out here field by field, and
 * infl_head_plausible passes no offset the prefilter drops, so the scans may skip those. */
static void test_prefilter(uint64_t *seed)
{
    const int words = 3 << 20;
    uint64_t fields = 0, plaus = 0, bad_fields = 0, bad_plaus = 0;
    int i;
    unsigned k;

    for (i = 0; i < words; i++) {
        uint64_t w = (uint64_t)icorpus_rand(seed) << 32 | icorpus_rand(seed);
        uint64_t c = (uint64_t)icorpus_rand(seed) << 32 | icorpus_rand(seed);
        uint32_t pre = infl_head_prefilter(w);
        for (k = 0; k < 32; k++) {
            uint64_t h = w >> k, ck = k ? c >> k | c << (64 - k) : c;
            int btype = (h >> 1 & 1) == 0 && (h >> 2 & 1) == 1, hlit = (h >> 3 & 31) <= 29;
            int want = btype && hlit && (h >> 8 & 31) <= 29, got = (int)(pre >> k & 1);
            int p = infl_head_plausible(h, ck);
            bad_fields += got != want;
            bad_plaus += (got && p) != p;
            fields += (uint64_t)got;
            plaus += (uint64_t)p;
        }
    }
    CHECK(bad_fields == 0, "prefilter: %llu of %llu offsets differ from the fixed-field test",
          (unsigned long long)bad_fields, 32ull * words);
    CHECK(bad_plaus == 0, "prefilter: %llu offsets pass infl_head_plausible but not the prefilter",
          (unsigned long long)bad_plaus);
    printf("prefilter: %d words; one offset in %.1f passes the fixed fields, one in %.0f the Kraft sum too\n",
           words, fields ? 32.0 * words / (double)fields : 0.0, plaus ? 32.0 * words / (double)plaus : 0.0);
}

/* One size too few or too many, more than INFL_MAX_OUT asked of a stream whose own length is in
 * range (declined before any work, as the device's launcher declines it; out is then never
 * written), and trailing bytes after the Adler-32 (libdeflate ignores them). */
static void test_sizes_and_trailer(const struct icorpus *k)
{
    char err[EDGED_ERR_LEN];
    int i;

    for (i = 0; i < k->n; i += 7) {
        const struct icase *c = &k->c[i];
        uint8_t *out = malloc(c->out_len + 2), *z = malloc(c->zlen + 3);
        if (!c->ok || !out || !z) {
            free(out);
            free(z);
            continue;
        }
        if (c->out_len)
            CHECK(inflspec_decode(c->z, c->zlen, out, c->out_len - 1, NULL) == INFLSPEC_DECLINED, "%s: short", c->name);
        CHECK(inflspec_decode(c->z, c->zlen, out, c->out_len + 1, NULL) == INFLSPEC_DECLINED, "%s: long", c->name);
        CHECK(inflspec_decode(c->z, c->zlen, out, (size_t)INFL_MAX_OUT + 1, NULL) == INFLSPEC_DECLINED &&
                  inflseg_decode(c->z, c->zlen, out, (size_t)INFL_MAX_OUT + 1, 0, NULL, err) == INFLSEG_DECLINED,
              "%s: more than INFL_MAX_OUT asked", c->name);
        memcpy(z, c->z, c->zlen);
        memcpy(z + c->zlen, "\x00\xff\x13", 3);
        CHECK(inflspec_decode(z, c->zlen + 3, out, c->out_len, NULL) == 0 && !memcmp(out, c->want, c->out_len),
              "%s: trailing bytes", c->name);
        free(out);
        free(z);
    }
}

/* The save area between the phases, and how tamper_place changes the save of the chain's middle
 * block that has one before phase 4 (0: not at all). */
struct tamper {
    struct inflseg_save sv;
    int how;
    int done;
};

static int tamper_place(const uint8_t *z, uint64_t nbytes, const struct infl_blk *bk, uint32_t n,
                        uint64_t end_bit, uint32_t *sym, void *ctx, struct inflspec_stats *st)
{
    struct tamper *tp = ctx;
    uint32_t i;

    for (i = n / 2; i < n && tp->how && !tp->done; i++) {
        uint32_t *w = tp->sv.w + bk[i].seg;
        if (bk[i].seg == INFL_SEG_NOSAVE || w[0] < 2)
            continue;
        if (tp->how == 1) {
            w[3]++; /* segment 1 starts a bit later */
        } else if (tp->how == 2) {
            w[2]++; /* segment 0 one byte more, segment 1 one fewer: the same sum */
            w[4]--;
        } else {
            w[0]++; /* a header that is not the block's cut: phase 4 syncs itself */
        }
        tp->done = 1;
    }
    return inflseg_hooks.place(z, nbytes, bk, n, end_bit, sym, ctx, st);
}

/* One decode of z in segments with a save area of cap words and tamper_place's change how: its
 * answer, *reused the blocks placed from saves, *same whether out holds want. */
static int saves_run(const uint8_t *z, size_t zl, const uint8_t *want, size_t n, uint64_t cap, int how,
                     uint32_t *reused, int *same)
{
    static const struct inflspec_hooks hooks = {NULL, tamper_place};
    struct inflspec_hooks h = hooks;
    struct tamper tp = {{malloc((cap ? cap : 1) * sizeof(uint32_t)), cap, 0}, how, 0};
    struct inflspec_stats st;
    uint8_t *out = malloc(n);
    int rc;

    if (!tp.sv.w || !out)
        abort();
    h.pass1 = inflseg_hooks.pass1;
    rc = inflspec_decode_with(z, zl, out, n, &h, &tp, &st);
    *reused = st.seg_reused;
    *same = rc == 0 && !memcmp(out, want, n);
    CHECK(!how || tp.done, "saves: no block with a save of 2 segments or more to change (%d)", how);
    free(out);
    free(tp.sv.w);
    return rc;
}

/* Phase 4 from phase 2's saves on the large stream (reused blocks of them with the full area): a
 * save area too small for any save, or for one, gives the same bytes with phase 4 syncing the rest;
 * a save changed between the phases declines the stream, never other bytes; a header changed is
 * not taken. */
static void test_saves(const uint8_t *z, size_t zl, const uint8_t *want, size_t n, uint32_t reused)
{
    uint64_t one = infl_seg_save_size(INFL_SEG_DEV_MAX);
    uint32_t got, small, got1;
    int same, rc;

    rc = saves_run(z, zl, want, n, inflspec_save_words(zl), 0, &got, &same);
    CHECK(rc == 0 && same && got == reused, "saves: full area rc %d, %u blocks from saves (%u)", rc, got,
          reused);
    rc = saves_run(z, zl, want, n, 0, 0, &got, &same);
    CHECK(rc == 0 && same && got == 0, "saves: no area rc %d, %u blocks from saves", rc, got);
    /* the blocks are about 200 kbit, most of INFL_SEG_DEV_MAX segments: short of one such save, room
       for a few shorter ones at most */
    rc = saves_run(z, zl, want, n, one - 1, 0, &small, &same);
    CHECK(rc == 0 && same && small < reused, "saves: an area short of one save rc %d, %u blocks from saves",
          rc, small);
    rc = saves_run(z, zl, want, n, one + 1, 0, &got, &same);
    got1 = got;
    CHECK(rc == 0 && same && got >= 1 && got < reused,
          "saves: an area of one save rc %d, %u blocks from saves", rc, got);
    rc = saves_run(z, zl, want, n, inflspec_save_words(zl), 1, &got, &same);
    CHECK(rc == INFLSPEC_DECLINED, "saves: a start changed, rc %d (same bytes %d)", rc, same);
    rc = saves_run(z, zl, want, n, inflspec_save_words(zl), 2, &got, &same);
    CHECK(rc == INFLSPEC_DECLINED, "saves: two counts changed, rc %d (same bytes %d)", rc, same);
    rc = saves_run(z, zl, want, n, inflspec_save_words(zl), 3, &got, &same);
    CHECK(rc == 0 && same && got + 1 == reused, "saves: a header changed, rc %d, %u blocks from saves (%u)",
          rc, got, reused);
    printf(
        "saves: areas of 0, %llu and %llu words the same bytes (0, %u and %u blocks from saves), a changed "
        "start or count declined, a changed header synced\n",
        (unsigned long long)(one - 1), (unsigned long long)(one + 1), small, got1);
}

/* A large level-6 photograph-like stream: most blocks come from speculative decodes, and in
 * segments the segments decide every candidate but the false ones and, at most, the one before
 * each (the final block too). */
static void test_large_stats(uint64_t *seed)
{
    size_t n = 3 * 1024 * 1024, zl;
    uint8_t *d = icorpus_data(1, n, seed), *z = icorpus_zlib(d, n, 6, 8, Z_DEFAULT_STRATEGY, &zl);
    uint8_t *out = malloc(n);
    struct inflspec_stats st, sg;
    clock_t t0 = clock();
    int rc = inflspec_decode(z, zl, out, n, &st);
    double ms = 1e3 * (double)(clock() - t0) / CLOCKS_PER_SEC;

    CHECK(rc == 0 && !memcmp(out, d, n), "large stream: rc %d", rc);
    CHECK(st.blocks > 8 && st.spec_blocks + 1 >= st.blocks * 9 / 10, "large stream: %u of %u blocks speculative",
          st.spec_blocks, st.blocks);
    printf("large: %zu -> %zu bytes, %llu candidates (%llu decoded), %u blocks (%u speculative, %u sequential), "
           "%llu markers resolved in %d rounds, %.0f ms serial\n",
           zl, n, (unsigned long long)st.candidates, (unsigned long long)st.spec_ok, st.blocks, st.spec_blocks,
           st.seq_blocks, (unsigned long long)st.markers, st.rounds, ms);
    rc = inflseg_spec_decode(z, zl, out, n, 1, &sg);
    CHECK(rc == 0 && !memcmp(out, d, n) && sg.spec_ok == st.spec_ok && sg.spec_blocks == st.spec_blocks,
          "large stream in segments: rc %d, %llu candidates decoded, %u blocks speculative", rc,
          (unsigned long long)sg.spec_ok, sg.spec_blocks);
    /* a false candidate inside a block is the guessed end of the candidate before it, whose
     * segments then miss its end: each false one leaves at most itself and that one to the serial
     * decode, and without any nothing is left */
    uint64_t fake = sg.candidates > st.blocks ? sg.candidates - st.blocks : 0;
    CHECK(sg.seg_serial <= 2 * fake, "large stream in segments: %llu of %llu candidates left to the serial "
          "decode (%u blocks)", (unsigned long long)sg.seg_serial, (unsigned long long)sg.candidates, st.blocks);
    /* phase 2's guess is every true block's end, so phase 4 takes all but the final block (whose guess
     * is the data's end, past its padding) and any before a false candidate from the saves */
    CHECK(sg.seg_reused + 1 + 2 * fake >= st.blocks && sg.seg_reused * 10 >= st.blocks * 9,
          "large stream in segments: %u of %u blocks placed from phase 2's saves", sg.seg_reused, st.blocks);
    printf("large in segments: %llu candidates by segments, %llu left to the serial decode, %u of %u blocks "
           "placed from phase 2's saves\n",
           (unsigned long long)sg.seg_cands, (unsigned long long)sg.seg_serial, sg.seg_reused, st.blocks);
    test_saves(z, zl, d, n, sg.seg_reused);
    free(out);
    free(z);
    free(d);
}

/* Random damage (bit flips, byte overwrites, truncation) of a few streams, `rounds` times each
 * (EDGED_INFLATE_DAMAGE, default 150): an answer of 0 must carry exactly libdeflate's bytes for
 * the same size. */
static void test_damage(uint64_t *seed, int rounds)
{
    struct icorpus k = {0};
    int i, j, accepted = 0, bad = 0;

    icorpus_damage_set(&k, seed);
    for (i = 0; i < k.n; i++)
        for (j = 0; j < rounds; j++) {
            const struct icase *c = &k.c[i];
            struct icorpus one = {0};
            uint8_t *m = malloc(c->zlen), *out = malloc(c->out_len);
            size_t ml = c->zlen, f, nf = 1 + icorpus_rand(seed) % 3;
            int rc;
            memcpy(m, c->z, c->zlen);
            for (f = 0; f < nf; f++) {
                uint32_t r = icorpus_rand(seed), at = icorpus_rand(seed) % (uint32_t)ml;
                if (r % 4 == 0)
                    m[at] = (uint8_t)icorpus_rand(seed);
                else if (r % 4 == 3 && f == 0)
                    ml = at + 1;
                else
                    m[at] ^= (uint8_t)(1u << (r >> 8) % 8);
            }
            rc = inflspec_decode(m, ml, out, c->out_len, NULL);
            if (inflseg_spec_decode(m, ml, out, c->out_len, 1, NULL) != rc)
                bad++; /* the segments answer as the serial phases do */
            icorpus_add(&one, "damaged", m, ml, c->out_len);
            if (rc == 0) {
                accepted++;
                if (!one.c[0].ok || memcmp(out, one.c[0].want, c->out_len))
                    bad++;
            } else if (rc != INFLSPEC_DECLINED) {
                bad++;
            }
            icorpus_free(&one);
            free(m);
            free(out);
        }
    CHECK(bad == 0, "damage: %d answers differ from libdeflate", bad);
    printf("damage: %d damaged streams, %d decoded (libdeflate agrees), the rest declined\n", k.n * rounds, accepted);
    icorpus_free(&k);
}

int main(void)
{
    struct icorpus k = {0};
    int files;

    k.seed = icorpus_seed();
    icorpus_generated(&k, 100000);
    files = icorpus_pngsuite(&k);
    if (files < 0)
        SKIP("%s not found (EDGED_PNGSUITE): PngSuite streams not tested", icorpus_pngsuite_dir());
    test_corpus(&k);
    test_plausible(&k);
    test_sizes_and_trailer(&k);
    test_large_stats(&k.seed);
    test_damage(&k.seed, icorpus_damage_rounds());
    test_prefilter(&k.seed); /* last: the seed's draws before it stay as they were */
    icorpus_free(&k);
    return check_summary();
}
