/* test_deflate_chunks.c — the chunked deflate core through its host driver: round trips through zlib and
 * libdeflate on data of every kind and chunk size, Adler-32 combine, the count of changes that picks
 * the runs parse, the size of edge maps against
 * libdeflate level 1, and PNG files framed around it read back by libpng. */
#include <libdeflate.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "check.h"
#include "deflate_chunks.h"
#include "deflate_host.h"
#include "deflate_runs.h"
#include "edgemap.h"
#include "png_frame.h"

/* Edge maps may be at most this many times libdeflate level 1's bytes on the same rows. */
#define TEST_MAX_RATIO 1.15

static uint32_t rng_state;

static uint32_t rng(void)
{
    return edgemap_rng(&rng_state);
}

enum kind { K_RANDOM, K_FLAT, K_EDGES, K_PHOTO, K_REPEAT, K_NKINDS };
static const char *kind_name[K_NKINDS] = {"random", "flat", "edges", "photo", "repeat"};

/* n bytes of one kind of data. */
static void fill(uint8_t *p, size_t n, enum kind k)
{
    for (size_t i = 0; i < n; i++) {
        switch (k) {
        case K_RANDOM:
            p[i] = (uint8_t)rng();
            break;
        case K_FLAT:
            p[i] = 7;
            break;
        case K_EDGES:
            p[i] = rng() % 23 == 0 ? 255 : 0;
            break;
        case K_PHOTO:
            p[i] = (uint8_t)((i % 512) / 3 + (i / 512) % 64 + rng() % 5);
            break;
        default:
            p[i] = i < 97 ? (uint8_t)rng() : p[i - 97];
            break;
        }
    }
}

/* Compresses and decompresses through both libraries; checks the bytes come back. */
static void round_trip(const uint8_t *in, size_t n, size_t chunk, int level, unsigned hint, int runs,
                       const char *what)
{
    char err[EDGED_ERR_LEN];
    uint8_t *z = NULL, *back = malloc(n + 1);
    size_t zlen = 0, got = 0;
    uLongf zn = (uLongf)n;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    int rc = deflhost_compress(in, n, chunk, level, hint, runs, &z, &zlen, err);

    CHECK(rc == 0, "%s: %s", what, err);
    if (rc == 0) {
        CHECK(zlen <= deflchunks_bound(n, chunk), "%s: %zu bytes over the bound", what, zlen);
        CHECK(libdeflate_zlib_decompress(d, z, zlen, back, n, &got) == LIBDEFLATE_SUCCESS && got == n &&
                  (n == 0 || memcmp(back, in, n) == 0),
              "%s: libdeflate round trip", what);
        memset(back, 0, n);
        CHECK(uncompress(back, &zn, z, (uLong)zlen) == Z_OK && zn == n &&
                  (n == 0 || memcmp(back, in, n) == 0),
              "%s: zlib round trip", what);
    }
    libdeflate_free_decompressor(d);
    free(z);
    free(back);
}

static void test_round_trips(void)
{
    static const size_t sizes[] = {0, 1, 3, 100, 5000, 70000, 300000};
    static const size_t chunks[] = {1, 7, 1000, 16384, 65536, 200000};
    static const int levels[] = {0, 1, 6};
    char what[160];

    for (int k = 0; k < K_NKINDS; k++)
        for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
            uint8_t *p = malloc(sizes[si] + 1);

            fill(p, sizes[si], (enum kind)k);
            for (size_t ci = 0; ci < sizeof(chunks) / sizeof(*chunks); ci++) {
                if (chunks[ci] < 100 && sizes[si] > 5000)
                    continue; /* thousands of tiny chunks: slow and covered by the small sizes */
                for (size_t li = 0; li < sizeof(levels) / sizeof(*levels); li++)
                    for (int runs = 0; runs <= (k == K_EDGES); runs++) {
                        snprintf(what, sizeof(what), "%s n=%zu chunk=%zu level=%d runs=%d", kind_name[k],
                                 sizes[si], chunks[ci], levels[li], runs);
                        round_trip(p, sizes[si], chunks[ci], levels[li], k == K_REPEAT ? 97 : 513, runs,
                                   what);
                    }
            }
            free(p);
        }
}

static void test_adler(void)
{
    uint8_t p[20000];

    fill(p, sizeof(p), K_RANDOM);
    for (size_t cut = 0; cut <= sizeof(p); cut += 1999) {
        uint32_t a = defl_adler32(1, p, cut), b = defl_adler32(1, p + cut, sizeof(p) - cut);

        CHECK(defl_adler32_combine(a, b, sizeof(p) - cut) == (uint32_t)adler32(1, p, sizeof(p)),
              "combine at %zu", cut);
    }
    CHECK(defl_adler32(1, p, sizeof(p)) == (uint32_t)adler32(1, p, sizeof(p)), "adler32 as zlib's");
    /* from sums over parts, taken in any order (as the device's threads add them) */
    for (int trial = 0; trial < 200; trial++) {
        size_t n = rng() % sizeof(p), cut = n ? rng() % (n + 1) : 0;
        uint64_t s1 = 0, s2 = 0;

        if (trial % 2)
            memset(p, 255, n); /* the largest sums */
        else
            fill(p, n, K_RANDOM);
        defl_adler32_part(p, cut, n, n, &s1, &s2);
        defl_adler32_part(p, 0, cut, n, &s1, &s2);
        CHECK(defl_adler32_sums(n, s1, s2) == (uint32_t)adler32(1, p, n),
              "adler32 from sums, %zu bytes cut at %zu", n, cut);
    }
}

/* Edge maps written unfiltered (filter byte 0 before each row) against libdeflate level 1. */
/* defl_changes, a word at a time, against a count byte by byte, at every start and length near the
 * word edges, on runs of random lengths (each change flips one bit, the high one too). */
static void test_changes(void)
{
    uint8_t p[300];

    for (size_t i = 0; i < sizeof(p); i++)
        p[i] = (uint8_t)(i ? p[i - 1] ^ (rng() % 4 ? 0u : 1u << rng() % 8) : 0);
    for (size_t start = 0; start < 9; start++)
        for (size_t len = 0; start + len <= sizeof(p); len += len < 12 ? 1 : 37) {
            size_t want = 0;

            for (size_t q = start; q < start + len; q++)
                want += q == 0 || p[q] != p[q - 1];
            CHECK(defl_changes(p, start, len) == want, "changes from %zu, %zu bytes: %zu, not %zu", start,
                  len, defl_changes(p, start, len), want);
        }
}

/* defl_run_split against the CPU run coder's loop (full matches while more than 258 bytes remain),
 * and defl_two_level against a byte test. */
static void test_runs_parts(void)
{
    uint8_t p[64];

    for (uint32_t len = 1; len <= 2000; len++) {
        uint32_t full, rest, want_full = 0, r = len - 1;

        for (; r > DEFL_MAX_MATCH; r -= DEFL_MAX_MATCH)
            want_full++;
        defl_run_split(len, &full, &rest);
        CHECK(full == want_full && rest == r, "run of %u: %u full and %u, not %u and %u", len, full, rest,
              want_full, r);
    }
    /* the bits a run's tokens take, as summed and as written, under codes for every symbol */
    {
        static struct defl_work w;
        uint8_t buf[2048];

        for (int s = 0; s < DEFL_NLITLEN; s++)
            w.f.lit[s] = 1 + rng() % 1000;
        for (int s = 0; s < DEFL_NDIST; s++)
            w.f.dist[s] = 1 + rng() % 1000;
        defl_plan_build(&w.k, &w.f, &w.h);
        for (uint32_t len = 1; len <= 3000; len += 1 + len / 64) {
            unsigned v = rng() % 256;
            struct defl_bits b = {buf, 0, 0};

            defl_run_put(&w.k, v, len, &b);
            CHECK((uint64_t)(b.p - buf) * 8 + (uint64_t)b.n == defl_run_bits(&w.k, v, len),
                  "run of %u bytes: %llu bits written, %llu counted", len,
                  (unsigned long long)((b.p - buf) * 8 + b.n),
                  (unsigned long long)defl_run_bits(&w.k, v, len));
        }
    }
    for (int trial = 0; trial < 2000; trial++) {
        size_t n = rng() % sizeof(p), want = 1;

        for (size_t i = 0; i < n; i++)
            p[i] = rng() % 2 ? 255 : 0;
        if (n && trial % 2)
            p[rng() % n] = (uint8_t)(1u << rng() % 8) ^ (rng() % 2 ? 0xff : 0);
        for (size_t i = 0; i < n; i++)
            want &= p[i] == 0 || p[i] == 255;
        CHECK(defl_two_level(p, n) == (int)want, "two-level of %zu bytes", n);
    }
}

static void test_edge_ratio(void)
{
    static const double densities[] = {0.01, 0.05, 0.10, 0.20};
    static const size_t chunks[] = {8192, 16384, 65536};
    int w = 1024, h = 1024;
    size_t rb = (size_t)w + 1, n = rb * h;
    uint8_t *m = malloc((size_t)w * h), *raw = malloc(n), *ref = malloc(n + 1024), *z = NULL;
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);
    char err[EDGED_ERR_LEN], what[80];

    for (size_t di = 0; di < sizeof(densities) / sizeof(*densities); di++) {
        size_t reflen;

        edgemap_draw(m, w, h, (size_t)w, densities[di], &rng_state);
        for (int y = 0; y < h; y++) {
            raw[y * rb] = 0;
            memcpy(raw + y * rb + 1, m + (size_t)y * w, (size_t)w);
        }
        reflen = libdeflate_zlib_compress(c, raw, n, ref, n + 1024);
        for (size_t ci = 0; ci < sizeof(chunks) / sizeof(*chunks); ci++)
            for (int runs = 0; runs <= 1; runs++) {
                size_t zlen = 0;

                if (deflhost_compress(raw, n, chunks[ci], 1, (unsigned)rb, runs, &z, &zlen, err) != 0) {
                    CHECK(0, "%s", err);
                    continue;
                }
                snprintf(what, sizeof(what), "edge map density %.2f chunk %zu runs %d", densities[di],
                         chunks[ci], runs);
                round_trip(raw, n, chunks[ci], 1, (unsigned)rb, runs, what);
                printf(
                    "edge map %dx%d density %.2f chunk %zu %s: %zu bytes, libdeflate level 1 %zu (%.3fx)\n",
                    w, h, densities[di], chunks[ci], runs ? "runs  " : "greedy", zlen, reflen,
                    (double)zlen / reflen);
                CHECK(zlen <= TEST_MAX_RATIO * reflen, "%s: %zu > %.2f x %zu", what, zlen, TEST_MAX_RATIO,
                      reflen);
                free(z);
                z = NULL;
            }
    }
    libdeflate_free_compressor(c);
    free(m);
    free(raw);
    free(ref);
}

/* Reads a PNG with libpng into 8-bit samples (1-bit expanded to 0/1 by packing's inverse). */
static int test_png_read(const uint8_t *png, size_t len, int w, int h, int ch, int bit_depth, uint8_t *px)
{
    png_image im;
    int ok;

    memset(&im, 0, sizeof(im));
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&im, png, len))
        return -1;
    if ((int)im.width != w || (int)im.height != h) {
        png_image_free(&im);
        return -1;
    }
    im.format = ch == 1   ? PNG_FORMAT_GRAY
                : ch == 2 ? PNG_FORMAT_GA
                : ch == 3 ? PNG_FORMAT_RGB
                          : PNG_FORMAT_RGBA;
    (void)bit_depth;
    ok = png_image_finish_read(&im, NULL, px, 0, NULL);
    return ok ? 0 : -1;
}

/* PNGs of random images (filter None or Up per row) framed around the host driver's stream. */
static void test_png_files(void)
{
    char err[EDGED_ERR_LEN];

    for (int ch = 1; ch <= 4; ch++)
        for (int bd = 8; bd >= 1; bd -= 7) {
            int w = 1 + (int)(rng() % 300), h = 1 + (int)(rng() % 200);
            size_t rb = bd == 1 ? ((size_t)w + 7) / 8 : (size_t)w * ch, n = (rb + 1) * h, zlen = 0, plen = 0;
            uint8_t *px = malloc((size_t)w * ch * h), *raw = malloc(n), *z = NULL, *png = NULL;
            uint8_t *back = malloc((size_t)w * ch * h);

            if (bd == 1 && ch != 1)
                goto next;
            for (size_t i = 0; i < (size_t)w * ch * h; i++)
                px[i] = bd == 1 ? (rng() % 7 ? 0 : 255) : (uint8_t)(rng() % 4 * 60);
            for (int y = 0; y < h; y++) {
                uint8_t *r = raw + y * (rb + 1);
                const uint8_t *s = px + (size_t)y * w * ch;

                r[0] = (uint8_t)(y % 2 ? 2 : 0); /* Up on odd rows, None on even */
                if (bd == 1) {
                    memset(r + 1, 0, rb);
                    for (int x = 0; x < w; x++)
                        r[1 + x / 8] |= (uint8_t)(s[x] ? 0x80u >> (x & 7) : 0);
                    r[0] = 0;
                } else {
                    for (size_t i = 0; i < rb; i++)
                        r[1 + i] = (uint8_t)(s[i] - (y % 2 ? s[i - (size_t)w * ch] : 0));
                }
            }
            CHECK(deflhost_compress(raw, n, 4096, 1, (unsigned)rb + 1, 1, &z, &zlen, err) == 0, "%s", err);
            CHECK(pngframe_wrap(z, zlen, w, h, ch, bd, &png, &plen, err) == 0, "%s", err);
            if (png && test_png_read(png, plen, w, h, ch, bd, back) == 0) {
                int same = 1;

                for (size_t i = 0; i < (size_t)w * ch * h; i++)
                    same &= bd == 1 ? (back[i] != 0) == (px[i] != 0) : back[i] == px[i];
                CHECK(same, "%dx%d ch %d depth %d: pixels differ after libpng", w, h, ch, bd);
            } else {
                CHECK(0, "%dx%d ch %d depth %d: libpng refused the file", w, h, ch, bd);
            }
        next:
            free(png);
            free(z);
            free(raw);
            free(px);
            free(back);
        }
}

int main(void)
{
    rng_state = getenv("SEED") ? (uint32_t)strtoul(getenv("SEED"), NULL, 0) : (uint32_t)time(NULL) | 1u;
    printf("seed %u (SEED=... repeats it)\n", rng_state);
    test_adler();
    test_changes();
    test_runs_parts();
    test_round_trips();
    test_edge_ratio();
    test_png_files();
    return check_summary();
}
