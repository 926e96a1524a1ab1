/* test_png_codec.c — the fast PNG codec against libpng: same pixels for every valid PngSuite file
 * and for generated images of every kind, same refusals for damaged ones, encoder round trips. */
#include <dirent.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "check.h"
#include "pngbuf.h"
#include "pngwrite.h"
#include "clock.h"
#include "errors.h"
#include "image.h"
#include "codec/png_decode.h"
#include "codec/png_io.h"
#include "codec/png_unfilter.h"
#include "png_layout.h"


static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Recomputes the CRC of the chunk at pos. */
static void fix_crc(uint8_t *d, size_t pos)
{
    uint32_t n = be32(d + pos);

    put32(d + pos + 8 + n, (uint32_t)crc32(0, d + pos + 4, n + 4));
}


/* ---- the comparison every case goes through ---- */

static int lenient_seen;

/* Pixel x of an unfiltered row by the layout's rules alone, as the device expands it. */
static void layout_pixel(const struct png_layout *lay, const uint8_t *row, uint32_t x, uint8_t *dst)
{
    if (lay->color == PNG_COLOR_PALETTE) {
        int ppb = 8 / lay->depth, shift = lay->depth * (ppb - 1 - (int)(x % (uint32_t)ppb));
        int idx = lay->depth == 8 ? row[x] : (row[x / (uint32_t)ppb] >> shift) & ((1 << lay->depth) - 1);
        memcpy(dst, lay->rgba[idx], (size_t)lay->out_ch);
        return;
    }
    memcpy(dst, row + (size_t)x * lay->bpp, (size_t)lay->bpp);
    if (lay->has_key)
        dst[lay->bpp] = memcmp(dst, lay->key, (size_t)lay->bpp) == 0 ? 0 : 255;
}

/* pngdec_layout_into gives the same layout and stream as pngdec_layout (lay, z, zl), the stream
 * copied into the caller's buffer of len bytes (one IDAT chunk or several), nothing written past
 * the stream. */
static void check_layout_into(const char *what, const uint8_t *data, size_t len, const struct png_layout *lay,
                              const uint8_t *z, size_t zl)
{
    struct png_layout into;
    uint8_t *dst = malloc(len + 1);
    size_t got = 0;
    int rc;

    if (!dst) {
        CHECK(0, "%s: out of memory", what);
        return;
    }
    memset(dst, 0xa5, len + 1);
    rc = pngdec_layout_into(data, len, &into, dst, &got);
    CHECK(rc == 0 && got == zl && memcmp(dst, z, zl) == 0 && memcmp(&into, lay, sizeof(into)) == 0,
          "%s: pngdec_layout_into (%d, %zu bytes) differs from pngdec_layout (%zu bytes)", what, rc, got, zl);
    for (size_t i = zl; i <= len; i++)
        if (dst[i] != 0xa5) {
            CHECK(0, "%s: pngdec_layout_into wrote byte %zu past the %zu-byte stream", what, i, zl);
            break;
        }
    free(dst);
}

/* Whether pngdec_layout_into declines data (len bytes). */
static int layout_into_refuses(const uint8_t *data, size_t len)
{
    struct png_layout lay;
    uint8_t *dst = malloc(len);
    size_t got;
    int rc = dst ? pngdec_layout_into(data, len, &lay, dst, &got) : PNGDEC_DECLINED;

    free(dst);
    return rc == PNGDEC_DECLINED;
}

/* The device decoder's view of a file pngdec_decode served: pngdec_layout takes it, and its zlib
 * stream inflated by zlib, unfiltered by png_unfilter.c and expanded by the layout alone gives the
 * same image. A stream zlib refuses (pngdec_deflate_lenient's kinds) is counted, not compared. */
static int layout_zlib_refused;
static void check_layout(const char *what, const uint8_t *data, size_t len, const struct img *direct)
{
    struct png_layout lay;
    struct img m = {0};
    const uint8_t *z = NULL;
    uint8_t *join = NULL, *buf = NULL;
    size_t zl = 0, raw;
    uLongf got;
    char err[EDGED_ERR_LEN];
    int rc = pngdec_layout(data, len, &lay, &z, &zl, &join, err);

    CHECK(rc == 0, "%s: served by pngdec_decode, refused by pngdec_layout (%d)", what, rc);
    if (rc != 0)
        return;
    check_layout_into(what, data, len, &lay, z, zl);
    raw = (lay.rowbytes + 1) * lay.h;
    got = raw;
    buf = malloc(PNGUNF_LEAD(lay.rowbytes) + raw + PNGUNF_SLACK);
    if (uncompress(buf + PNGUNF_LEAD(lay.rowbytes), &got, z, zl) != Z_OK || got != raw) {
        layout_zlib_refused++;
        goto out;
    }
    CHECK(pngunf_rows(buf, lay.rowbytes, lay.h, lay.bpp, err) == 0, "%s: unfilter: %s", what, err);
    CHECK(img_alloc(&m, (int)lay.w, (int)lay.h, lay.out_ch, err) == 0, "%s: %s", what, err);
    for (uint32_t y = 0; m.px && y < lay.h; y++)
        for (uint32_t x = 0; x < lay.w; x++)
            layout_pixel(&lay, buf + y * lay.rowbytes, x, m.px + y * m.stride + (size_t)x * m.ch);
    CHECK(m.px && img_same(&m, direct), "%s: the layout's expansion differs from pngdec_decode", what);
out:
    img_free(&m);
    free(buf);
    free(join);
}

/* pngio_decode and pngio_decode_libpng agree: the same image, or the same code and message.
 * Returns the code; *served says whether the fast decoder took the file itself. */
static int compare(const char *what, const uint8_t *data, size_t len, const struct png_limits *lim, int *served)
{
    struct img fast, ref, direct = {0};
    char ef[EDGED_ERR_LEN] = "", er[EDGED_ERR_LEN] = "", ed[EDGED_ERR_LEN] = "";
    int rf = pngio_decode(data, len, lim, &fast, ef), rr = pngio_decode_libpng(data, len, lim, &ref, er);
    int rd = rf == 0 ? pngdec_decode(data, len, &direct, ed) : PNGDEC_DECLINED;

    if (served)
        *served = rd == 0;
    if (rf == 0 && rr == EDGED_E_BAD_PNG && pngdec_deflate_lenient(er)) {
        lenient_seen++; /* a deflate fault libdeflate reads: see pngdec_deflate_lenient */
    } else {
        CHECK(rf == rr, "%s: fast decoder %d (%s), libpng %d (%s)", what, rf, ef, rr, er);
        if (rf == rr && rf == 0)
            CHECK(img_same(&fast, &ref), "%s: images differ (%dx%dx%d vs %dx%dx%d)", what, fast.w, fast.h,
                  fast.ch, ref.w, ref.h, ref.ch);
        else if (rf == rr)
            CHECK(strcmp(ef, er) == 0 && !fast.px && !ref.px, "%s: messages differ: '%s' vs '%s'", what, ef, er);
    }
    if (rd == 0) {
        CHECK(img_same(&direct, &fast), "%s: pngdec_decode differs from pngio_decode", what);
        check_layout(what, data, len, &direct);
    }
    img_free(&direct);
    img_free(&fast);
    img_free(&ref);
    return rf;
}

/* ---- PngSuite ---- */

static void test_pngsuite(void)
{
    const char *dir = suite_dir();
    DIR *d = opendir(dir);
    struct dirent *e;
    int valid = 0, corrupt = 0, served = 0;

    if (!d) {
        SKIP("PngSuite not found at %s (set EDGED_PNGSUITE)", dir);
        return;
    }
    while ((e = readdir(d))) {
        char path[4096];
        size_t n = strlen(e->d_name), len = 0;
        uint8_t *data;
        int rc, fast;

        if (n < 5 || strcmp(e->d_name + n - 4, ".png") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (!(data = read_file(path, &len)))
            continue;
        rc = compare(e->d_name, data, len, NULL, &fast);
        if (e->d_name[0] == 'x') {
            CHECK(rc < 0, "%s: corrupt file decoded", e->d_name);
            corrupt++;
        } else {
            CHECK(rc == 0, "%s: valid file refused (%d)", e->d_name, rc);
            valid++;
            served += fast;
        }
        free(data);
    }
    closedir(d);
    printf("PngSuite: %d valid files equal to libpng (%d served by the fast decoder), %d corrupt refused alike\n",
           valid, served, corrupt);
    CHECK(valid >= 150 && corrupt >= 14 && served >= 40, "PngSuite: %d valid, %d corrupt, %d served", valid,
          corrupt, served);
}

/* ---- generated images, written by libpng (adaptive filters, level 6) ---- */


static void test_generated(void)
{
    int cases = 0, served = 0;

    for (size_t i = 0; i < NKINDS; i++)
        for (int w = 1; w <= 67; w++) {
            int h = 1 + (int)((w * 7 + i * 3) % 40), fast;
            size_t zbuf = w % 3 == 0 ? 64 : 8192; /* small buffers: many IDAT chunks */
            struct buf b = write_kind(&kinds[i], w, h, zbuf);
            char what[96];

            snprintf(what, sizeof(what), "color %d depth %d trns %d %dx%d", kinds[i].color, kinds[i].depth,
                     kinds[i].trns, w, h);
            CHECK(compare(what, b.p, b.len, NULL, &fast) == 0, "%s: refused", what);
            CHECK(fast == fast_kind(&kinds[i]), "%s: fast decoder %s it", what, fast ? "took" : "declined");
            cases++;
            served += fast;
            free(b.p);
        }
    printf("generated: %d images of %zu kinds equal to libpng (%d served by the fast decoder)\n", cases, NKINDS,
           served);
}

/* The 2048x2048 photo-like RGB image, written as libpng writes it: equal, and timed. */
static void test_big_rgb(void)
{
    const struct kind k = {2, 8, 0};
    struct buf b = write_kind(&k, 2048, 2048, 8192);
    struct img a, r;
    char err[EDGED_ERR_LEN];
    double t0 = clock_ms(), t1, t2;
    int fast, ok = pngio_decode(b.p, b.len, NULL, &a, err) == 0;

    t1 = clock_ms();
    ok &= pngio_decode_libpng(b.p, b.len, NULL, &r, err) == 0;
    t2 = clock_ms();
    CHECK(ok && img_same(&a, &r), "2048x2048 RGB: %s", err);
    compare("2048x2048 RGB", b.p, b.len, NULL, &fast);
    CHECK(fast, "2048x2048 RGB: not served by the fast decoder");
    printf("2048x2048 RGB (%zu bytes): fast %.1f ms, libpng %.1f ms (one run each, unwarmed)\n", b.len, t1 - t0,
           t2 - t1);
    img_free(&a);
    img_free(&r);
    free(b.p);
}

/* ---- damaged files: the fast decoder refuses exactly as libpng ---- */

static size_t chunk_ends(const uint8_t *d, size_t len, size_t *ends, size_t max)
{
    size_t pos = 8, n = 0;

    while (len - pos >= 12 && n < max) {
        pos += 12 + be32(d + pos);
        if (pos > len)
            break;
        ends[n++] = pos;
    }
    return n;
}

static void damage_one(const char *name, const struct buf *b)
{
    size_t ends[4096], n = chunk_ends(b->p, b->len, ends, 4096), flips = 0;
    uint8_t *c = malloc(b->len);
    char what[160];

    /* truncated at every byte of a small file, at every chunk boundary (and one byte either side) */
    for (size_t cut = 0; cut < b->len; cut++) {
        int boundary = 0;
        for (size_t i = 0; i < n; i++)
            boundary |= cut + 1 >= ends[i] && cut <= ends[i] + 1;
        if (b->len > 4096 && !boundary)
            continue;
        snprintf(what, sizeof(what), "%s cut at %zu/%zu", name, cut, b->len);
        CHECK(compare(what, b->p, cut, NULL, NULL) < 0, "%s: decoded", what);
    }
    /* a CRC byte flipped in each chunk: both decoders refuse, and so does the device's layout */
    for (size_t i = 0; i < n; i++) {
        memcpy(c, b->p, b->len);
        c[ends[i] - 1 - (i % 4)] ^= 0x40;
        snprintf(what, sizeof(what), "%s CRC of chunk %zu", name, i);
        CHECK(compare(what, c, b->len, NULL, NULL) < 0, "%s: decoded", what);
        /* IHDR's CRC (chunk 0) is the caller's check, before the layout is read */
        CHECK(i == 0 || layout_into_refuses(c, b->len), "%s: pngdec_layout_into took it", what);
    }
    /* bit flips in IDAT data, with the CRC as it was (refused) and recomputed (anything, alike) */
    for (size_t i = 0, start = 8; i < n; start = ends[i++]) {
        uint32_t len = be32(b->p + start);

        if (memcmp(b->p + start + 4, "IDAT", 4) != 0 || len == 0)
            continue;
        for (int k = 0; k < 40; k++) {
            size_t at = start + 8 + check_rng() % len;

            memcpy(c, b->p, b->len);
            c[at] ^= (uint8_t)(1u << (check_rng() % 8));
            snprintf(what, sizeof(what), "%s bit flip at %zu", name, at);
            CHECK(compare(what, c, b->len, NULL, NULL) < 0, "%s: decoded despite the CRC", what);
            fix_crc(c, start);
            compare(what, c, b->len, NULL, NULL);
            flips++;
        }
    }
    printf("  %s: %zu chunks, %zu IDAT bit flips compared\n", name, n, flips);
    free(c);
}

static void test_damaged(void)
{
    static const struct kind ks[] = {{2, 8, 0}, {6, 8, 0}, {3, 4, 5}, {0, 8, 1}, {4, 8, 0}};

    for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
        struct buf b = write_kind(&ks[i], 61, 37, i % 2 ? 512 : 8192);
        char name[64];

        snprintf(name, sizeof(name), "color %d depth %d 61x37", ks[i].color, ks[i].depth);
        damage_one(name, &b);
        free(b.p);
    }
    if (lenient_seen)
        printf("  %d damaged streams were deflate faults libdeflate reads and zlib refuses\n", lenient_seen);
}

/* IDAT chunks longer than the pieces the fast decoder checks and copies at a time (16 KiB), one
 * and several; and a large image (huge-page buffer) with a CRC fault in one IDAT chunk of many. */
static void test_damaged_large(void)
{
    const struct kind rgb = {2, 8, 0};
    struct buf b = write_kind(&rgb, 300, 200, 40000), one = write_kind(&rgb, 300, 200, 1 << 20);
    struct buf big = write_kind(&rgb, 1024, 1536, 8192);
    size_t ends[4096], n = chunk_ends(big.p, big.len, ends, 4096);
    int fast;

    damage_one("color 2 depth 8 300x200, 40000-byte IDAT", &b);
    damage_one("color 2 depth 8 300x200, one IDAT", &one);
    CHECK(compare("1024x1536 RGB", big.p, big.len, NULL, &fast) == 0 && fast, "1024x1536 RGB: not served");
    for (size_t i = 1; i + 1 < n; i += n / 3) {
        char what[96];

        big.p[ends[i] - 1] ^= 0x01;
        snprintf(what, sizeof(what), "1024x1536 RGB, CRC of chunk %zu of %zu", i, n);
        CHECK(compare(what, big.p, big.len, NULL, NULL) < 0, "%s: decoded", what);
        big.p[ends[i] - 1] ^= 0x01;
    }
    free(b.p);
    free(one.p);
    free(big.p);
}

/* IHDR over the limits: both give IMAGE_TOO_LARGE with the same message, before any allocation. */
static void test_limits(void)
{
    const struct kind k = {0, 8, 0};
    struct buf b = write_kind(&k, 30, 20, 8192);
    struct png_limits lim;

    pngio_default_limits(&lim);
    lim.max_side = 29;
    CHECK(compare("30x20 at max-side 29", b.p, b.len, &lim, NULL) == EDGED_E_IMAGE_TOO_LARGE, "max-side");
    pngio_default_limits(&lim);
    lim.max_pixels = 599;
    CHECK(compare("30x20 at max-pixels 599", b.p, b.len, &lim, NULL) == EDGED_E_IMAGE_TOO_LARGE, "max-pixels");
    lim.max_pixels = 600;
    CHECK(compare("30x20 at max-pixels 600", b.p, b.len, &lim, NULL) == 0, "max-pixels 600");
    put32(b.p + 16, 40000);
    fix_crc(b.p, 8);
    CHECK(compare("width 40000", b.p, b.len, NULL, NULL) == EDGED_E_IMAGE_TOO_LARGE, "width 40000");
    free(b.p);
}

/* ---- the encoder, checked through libpng's decoder ---- */

static struct img photo_img(int w, int h, int ch, size_t pad)
{
    struct img im = {w, h, ch, (size_t)w * ch + pad, NULL, 0};

    im.px = calloc(im.stride * (size_t)h, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++)
                im.px[y * im.stride + (size_t)x * ch + c] = (uint8_t)photo(x, y, c, w, h);
    return im;
}

static void roundtrip(const struct img *src, int level)
{
    struct img back;
    uint8_t *png = NULL, *png2 = NULL;
    size_t len = 0, len2 = 0;
    char err[EDGED_ERR_LEN] = "";
    int rc = pngio_encode(src, level, 8, &png, &len, err);

    CHECK(rc == 0 && pngio_decode_libpng(png, len, NULL, &back, err) == 0 && img_same(src, &back),
          "encode %dx%dx%d level %d: libpng reads back something else (%s)", src->w, src->h, src->ch, level, err);
    CHECK(pngio_encode(src, level, 8, &png2, &len2, err) == 0 && len2 == len && !memcmp(png, png2, len),
          "encode %dx%dx%d level %d: not deterministic", src->w, src->h, src->ch, level);
    if (rc == 0)
        img_free(&back);
    free(png);
    free(png2);
}

static void test_encode_roundtrip(void)
{
    static const int sizes[][2] = {{1, 1}, {7, 3}, {33, 65}, {300, 200}};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int ch = 1; ch <= 4; ch++) {
            struct img src = photo_img(sizes[s][0], sizes[s][1], ch, s == 2 ? 5 : 0);

            for (int level = 0; level <= 9; level++)
                roundtrip(&src, level);
            free(src.px);
        }
}

/* 1-bit: thresholded at 128, and a packed map gives the same bytes; libpng reads 0/255. */
static void test_encode_1bit(void)
{
    static const int sizes[][2] = {{1, 1}, {8, 1}, {9, 2}, {37, 13}, {300, 200}};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int level = 0; level <= 9; level += 3) {
            struct img src = photo_img(sizes[s][0], sizes[s][1], 1, s), pk = src, back;
            uint8_t *png = NULL, *png2 = NULL;
            size_t len = 0, len2 = 0, bad = 0;
            char err[EDGED_ERR_LEN] = "";
            int rc;

            pk.stride = ((size_t)src.w + 7) / 8 + s % 2;
            pk.packed = 1;
            pk.px = calloc(pk.stride * src.h, 1);
            for (int y = 0; y < src.h; y++)
                for (int x = 0; x < src.w; x++)
                    if (src.px[y * src.stride + x] >= 128)
                        pk.px[y * pk.stride + x / 8] |= (uint8_t)(0x80u >> (x % 8));
            rc = pngio_encode(&src, level, 1, &png, &len, err);
            CHECK(rc == 0 && png[24] == 1 && png[25] == 0, "1-bit encode %dx%d: %s", src.w, src.h, err);
            rc = rc ? rc : pngio_decode_libpng(png, len, NULL, &back, err);
            for (int y = 0; rc == 0 && y < src.h; y++)
                for (int x = 0; x < src.w; x++)
                    bad += back.px[y * back.stride + x] != (src.px[y * src.stride + x] >= 128 ? 255 : 0);
            CHECK(rc == 0 && bad == 0, "1-bit %dx%d level %d: %zu pixels wrong (%s)", src.w, src.h, level, bad, err);
            CHECK(pngio_encode(&pk, level, 1, &png2, &len2, err) == 0 && len2 == len && !memcmp(png, png2, len),
                  "1-bit %dx%d level %d: the packed map encodes differently", src.w, src.h, level);
            if (rc == 0)
                img_free(&back);
            free(png);
            free(png2);
            free(pk.px);
            free(src.px);
        }
}

/* A 2048x2048 gradient-magnitude map of the photo-like image at the default level: no larger
 * than libpng + zlib makes it. */
static void test_encode_size(void)
{
    struct img g = photo_img(2048, 2048, 1, 0), e = {2048, 2048, 1, 2048, calloc(2048 * 2048, 1), 0};
    uint8_t *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    char err[EDGED_ERR_LEN];
    double t0, t1, t2;

    for (int y = 1; y < 2047; y++)
        for (int x = 1; x < 2047; x++) {
            int gx = g.px[y * 2048 + x + 1] - g.px[y * 2048 + x - 1], gy = g.px[(y + 1) * 2048 + x] - g.px[(y - 1) * 2048 + x];
            int m = abs(gx) + abs(gy);
            e.px[y * 2048 + x] = (uint8_t)(m > 255 ? 255 : m);
        }
    t0 = clock_ms();
    CHECK(pngio_encode(&e, PNGIO_DEFAULT_LEVEL, 8, &a, &la, err) == 0, "encode: %s", err);
    t1 = clock_ms();
    CHECK(pngio_encode_libpng(&e, PNGIO_DEFAULT_LEVEL, 8, &b, &lb, err) == 0, "libpng encode: %s", err);
    t2 = clock_ms();
    printf("2048x2048 edge map, level %d: edged %zu bytes %.1f ms, libpng %zu bytes %.1f ms (one run each)\n",
           PNGIO_DEFAULT_LEVEL, la, t1 - t0, lb, t2 - t1);
    CHECK(la <= lb, "edged's PNG (%zu bytes) is larger than libpng's (%zu)", la, lb);
    free(a);
    free(b);
    free(e.px);
    free(g.px);
}

/* Two-level gray maps (0/255, the edge filter's output), which level 1 writes with the run coder:
 * libpng reads every kind back at every level, runs of every length up to two rows, rows shorter
 * and longer than the coder's 64-byte steps, padded strides. */
static void test_encode_map(void)
{
    static const int sizes[][2] = {{1, 1}, {1, 300}, {63, 2}, {64, 3}, {65, 5}, {129, 7}, {300, 200}, {1000, 50}};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int kind = 0; kind < 6; kind++) {
            struct img src = photo_img(sizes[s][0], sizes[s][1], 1, s % 3);
            size_t run = 0, next = 1;
            int v = 0;

            for (int y = 0; y < src.h; y++)
                for (int x = 0; x < src.w; x++) {
                    uint8_t *p = src.px + (size_t)y * src.stride + x;

                    if (kind == 0 || kind == 1) {
                        *p = kind ? 255 : 0; /* all 0, all 255 */
                    } else if (kind == 2) {
                        *p = check_rng() % 2 ? 255 : 0; /* noise: short runs */
                    } else if (kind == 3) {
                        *p = check_rng() % 20 ? 0 : 255; /* sparse dots */
                    } else if (kind == 4) {
                        *p = *p >= 128 ? 255 : 0; /* thresholded photo: long runs */
                    } else {
                        if (run++ == next) /* runs of length 1, 2, 3, ... */
                            run = 1, next++, v ^= 255;
                        *p = (uint8_t)v;
                    }
                }
            for (int level = 0; level <= 9; level++)
                roundtrip(&src, level);
            free(src.px);
        }
}

/* Edge maps (0/255) of the photo-like image at three densities, at level 1: no larger than libpng
 * + zlib makes them. */
static void test_encode_map_size(void)
{
    static const int thresholds[] = {2, 5, 60};
    struct img g = photo_img(2048, 2048, 1, 0), e = {2048, 2048, 1, 2048, calloc(2048 * 2048, 1), 0};

    for (size_t i = 0; i < sizeof(thresholds) / sizeof(thresholds[0]); i++) {
        uint8_t *a = NULL, *b = NULL;
        size_t la = 0, lb = 0, on = 0;
        char err[EDGED_ERR_LEN];

        for (int y = 1; y < 2047; y++)
            for (int x = 1; x < 2047; x++) {
                const uint8_t *p = g.px + y * 2048 + x;
                int lap = 4 * p[0] - p[-1] - p[1] - p[-2048] - p[2048];

                e.px[y * 2048 + x] = abs(lap) > thresholds[i] ? 255 : 0;
                on += abs(lap) > thresholds[i];
            }
        CHECK(pngio_encode(&e, 1, 8, &a, &la, err) == 0, "encode: %s", err);
        CHECK(pngio_encode_libpng(&e, 1, 8, &b, &lb, err) == 0, "libpng encode: %s", err);
        printf("2048x2048 0/255 map, |laplacian| > %d (%.1f%% set), level 1: edged %zu bytes, libpng %zu\n",
               thresholds[i], 100.0 * (double)on / (2048.0 * 2048.0), la, lb);
        CHECK(la <= lb, "edged's map PNG (%zu bytes) is larger than libpng's (%zu)", la, lb);
        free(a);
        free(b);
    }
    free(e.px);
    free(g.px);
}

int main(void)
{
    check_rng_init();
    test_pngsuite();
    test_generated();
    test_big_rgb();
    pngunf_set_baseline(1); /* the same on the SSE2 row code where the CPU has more */
    test_generated();
    test_big_rgb();
    pngunf_set_baseline(0);
    test_damaged();
    test_damaged_large();
    test_limits();
    test_encode_roundtrip();
    test_encode_1bit();
    test_encode_size();
    test_encode_map();
    test_encode_map_size();
    return check_summary();
}
