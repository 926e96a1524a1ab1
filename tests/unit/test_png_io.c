/* test_png_io.c — PNG decode/encode: all of PngSuite, limits, truncation, bombs, round trips. */
#include <dirent.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

#include "check.h"
#include "pngbuf.h"
#include "errors.h"
#include "image.h"
#include "codec/png_io.h"

/* Peak-RSS growth allowed while rejecting a huge or bomb file (the bad cases would need 64+ MB). */
#define RSS_BUDGET_KB (16 * 1024)

static long peak_rss_kb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* ---- byte buffers and hand-built PNGs (zlib only, no libpng, so they test libpng's view) ---- */

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void add_chunk(struct buf *b, const char *type, const void *data, size_t n)
{
    uint8_t hdr[8], crc[4];
    uLong c = crc32(0, (const Bytef *)type, 4);

    put32(hdr, (uint32_t)n);
    memcpy(hdr + 4, type, 4);
    if (n)
        c = crc32(c, data, (uInt)n);
    put32(crc, (uint32_t)c);
    buf_add(b, hdr, 8);
    buf_add(b, data, n);
    buf_add(b, crc, 4);
}

static void add_sig_ihdr(struct buf *b, uint32_t w, uint32_t h, int depth, int color)
{
    static const uint8_t sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    uint8_t ihdr[13] = {0};

    buf_add(b, sig, 8);
    put32(ihdr, w);
    put32(ihdr + 4, h);
    ihdr[8] = (uint8_t)depth;
    ihdr[9] = (uint8_t)color;
    add_chunk(b, "IHDR", ihdr, 13);
}

/* Deflates h copies of one filtered scanline (filter byte + row) without building the image. */
static void deflate_rows(struct buf *z, const uint8_t *row, size_t rowlen, uint32_t h, int level,
                         int strategy)
{
    z_stream s = {0};
    uint8_t out[1 << 16];

    if (deflateInit2(&s, level, Z_DEFLATED, 15, 8, strategy) != Z_OK)
        abort();
    for (uint32_t y = 0; y <= h; y++) {
        int flush = y == h ? Z_FINISH : Z_NO_FLUSH;

        s.next_in = (Bytef *)row;
        s.avail_in = y == h ? 0 : (uInt)rowlen;
        do {
            s.next_out = out;
            s.avail_out = sizeof(out);
            deflate(&s, flush);
            buf_add(z, out, sizeof(out) - s.avail_out);
        } while (s.avail_out == 0);
    }
    deflateEnd(&s);
}

/* A valid w x h 8-bit gray PNG of one colour, any size, built in O(compressed size) memory. */
static struct buf make_flat_gray(uint32_t w, uint32_t h, uint8_t v)
{
    struct buf b = {0}, z = {0};
    uint8_t *row = malloc((size_t)w + 1);

    row[0] = 0;
    memset(row + 1, v, w);
    deflate_rows(&z, row, (size_t)w + 1, h, 1, Z_RLE);
    add_sig_ihdr(&b, w, h, 8, 0);
    add_chunk(&b, "IDAT", z.p, z.len);
    add_chunk(&b, "IEND", NULL, 0);
    free(row);
    free(z.p);
    return b;
}

/* A small valid 8-bit gray PNG (w x h, pixel = x + y) with extra chunks spliced in before IDAT. */
static struct buf make_small_with(uint32_t w, uint32_t h, const struct buf *extra)
{
    struct buf b = {0}, raw = {0};
    uLongf zlen;
    uint8_t *z;

    for (uint32_t y = 0; y < h; y++) {
        uint8_t f = 0;

        buf_add(&raw, &f, 1);
        for (uint32_t x = 0; x < w; x++) {
            uint8_t v = (uint8_t)(x + y);
            buf_add(&raw, &v, 1);
        }
    }
    zlen = compressBound(raw.len);
    z = malloc(zlen);
    compress2(z, &zlen, raw.p, raw.len, 6);
    add_sig_ihdr(&b, w, h, 8, 0);
    if (extra)
        buf_add(&b, extra->p, extra->len);
    add_chunk(&b, "IDAT", z, zlen);
    add_chunk(&b, "IEND", NULL, 0);
    free(z);
    free(raw.p);
    return b;
}

/* ---- an independent reference: libpng with no value transforms, mapped by hand to 8 bits ---- */

struct ref {
    png_structp png;
    png_infop info;
    png_bytep *rows;
    uint32_t w, h;
    int depth, color, ch;
    png_colorp plte;
    int nplte;
    png_bytep trns_alpha;
    int ntrns;
    png_color_16p trns;
};

struct mem_src {
    const uint8_t *p;
    size_t len, pos;
};

static void ref_read(png_structp png, png_bytep out, size_t n)
{
    struct mem_src *s = png_get_io_ptr(png);

    if (n > s->len - s->pos)
        png_error(png, "eof");
    memcpy(out, s->p + s->pos, n);
    s->pos += n;
}

/* Raw samples: 1/2/4-bit unpacked to one byte each but not scaled, 16-bit kept big-endian. */
static int ref_run(struct ref *r, struct mem_src *src)
{
    if (setjmp(png_jmpbuf(r->png)))
        return -1;
    png_set_read_fn(r->png, src, ref_read);
    png_read_info(r->png, r->info);
    r->w = png_get_image_width(r->png, r->info);
    r->h = png_get_image_height(r->png, r->info);
    r->depth = png_get_bit_depth(r->png, r->info);
    r->color = png_get_color_type(r->png, r->info);
    if (r->depth < 8)
        png_set_packing(r->png);
    png_set_interlace_handling(r->png);
    png_read_update_info(r->png, r->info);
    r->rows = calloc(r->h, sizeof(*r->rows));
    for (uint32_t y = 0; y < r->h; y++)
        r->rows[y] = malloc(png_get_rowbytes(r->png, r->info));
    png_read_image(r->png, r->rows);
    png_get_PLTE(r->png, r->info, &r->plte, &r->nplte);
    png_get_tRNS(r->png, r->info, &r->trns_alpha, &r->ntrns, &r->trns);
    return 0;
}

static void ref_free(struct ref *r)
{
    for (uint32_t y = 0; r->rows && y < r->h; y++)
        free(r->rows[y]);
    free(r->rows);
    png_destroy_read_struct(&r->png, &r->info, NULL);
}

static int ref_open(struct ref *r, const uint8_t *data, size_t len)
{
    struct mem_src src = {data, len, 0};

    memset(r, 0, sizeof(*r));
    r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    r->info = png_create_info_struct(r->png);
    if (ref_run(r, &src))
        return -1;
    r->ch = r->color == 0 ? 1 : r->color == 4 ? 2 : r->color == 6 ? 4 : 3;
    if (png_get_valid(r->png, r->info, PNG_INFO_tRNS))
        r->ch++;
    return 0;
}

/* Raw sample k of pixel x in row y, scaled to 8 bits as the spec says. */
static unsigned ref_sample(const struct ref *r, int spp, uint32_t x, uint32_t y, int k, unsigned *raw)
{
    const png_byte *row = r->rows[y];

    if (r->depth == 16) {
        *raw = (unsigned)row[(x * spp + k) * 2] << 8 | row[(x * spp + k) * 2 + 1];
        return (*raw + 128) / 257;
    }
    *raw = row[x * spp + k];
    return r->depth == 8 ? *raw : *raw * 255 / ((1u << r->depth) - 1);
}

/* The 8-bit pixel decode must give, computed from the raw samples, PLTE and tRNS by hand. */
static void ref_pixel(const struct ref *r, uint32_t x, uint32_t y, unsigned px[4])
{
    int spp = r->color == 0 || r->color == 3 ? 1 : r->color == 4 ? 2 : r->color == 2 ? 3 : 4;
    unsigned raw[4] = {0}, keyed = 1;

    for (int k = 0; k < spp; k++)
        px[k] = ref_sample(r, spp, x, y, k, &raw[k]);
    if (r->color == 3) {
        unsigned i = raw[0];

        px[0] = i < (unsigned)r->nplte ? r->plte[i].red : 0;
        px[1] = i < (unsigned)r->nplte ? r->plte[i].green : 0;
        px[2] = i < (unsigned)r->nplte ? r->plte[i].blue : 0;
        if (r->ntrns)
            px[3] = i < (unsigned)r->ntrns ? r->trns_alpha[i] : 255;
    } else if (r->ntrns && r->color == 0) {
        px[1] = raw[0] == r->trns->gray ? 0 : 255;
    } else if (r->ntrns && r->color == 2) {
        keyed = raw[0] == r->trns->red && raw[1] == r->trns->green && raw[2] == r->trns->blue;
        px[3] = keyed ? 0 : 255;
    }
}

/* ---- PngSuite ---- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Channels the PngSuite name promises: colour type digit at [4]; tRNS files start tb, tm, tp1. */
static int suite_channels(const char *name)
{
    int ch = name[4] == '0' ? 1 : name[4] == '4' ? 2 : name[4] == '6' ? 4 : 3;
    int trns = strncmp(name, "tb", 2) == 0 || strncmp(name, "tm", 2) == 0 || strncmp(name, "tp1", 3) == 0;

    return ch + (trns && (name[4] == '0' || name[4] == '2' || name[4] == '3'));
}

static int img_equal(const struct img *a, const struct img *b)
{
    if (a->w != b->w || a->h != b->h || a->ch != b->ch)
        return 0;
    for (int y = 0; y < a->h; y++)
        if (memcmp(a->px + (size_t)y * a->stride, b->px + (size_t)y * b->stride, (size_t)a->w * a->ch))
            return 0;
    return 1;
}

/* Compares every pixel of im with the reference; returns the number of mismatching samples. */
static long compare_with_ref(const char *name, const uint8_t *data, size_t len, const struct img *im)
{
    struct ref r;
    long bad = 0;

    if (ref_open(&r, data, len)) {
        ref_free(&r);
        CHECK(0, "%s: reference decode failed", name);
        return 1;
    }
    CHECK(r.ch == im->ch && (int)r.w == im->w && (int)r.h == im->h, "%s: ref %ux%ux%d vs %dx%dx%d", name, r.w,
          r.h, r.ch, im->w, im->h, im->ch);
    for (uint32_t y = 0; r.ch == im->ch && y < r.h; y++)
        for (uint32_t x = 0; x < r.w; x++) {
            unsigned px[4];

            ref_pixel(&r, x, y, px);
            for (int k = 0; k < im->ch; k++)
                if (px[k] != im->px[y * im->stride + x * im->ch + k] && bad++ < 3)
                    fprintf(stderr, "%s (%u,%u)[%d]: %u expected, %u decoded\n", name, x, y, k, px[k],
                            im->px[y * im->stride + x * im->ch + k]);
        }
    ref_free(&r);
    return bad;
}

static void suite_valid(const char *dir, const char *name, const uint8_t *data, size_t len, int *nvalid)
{
    struct img im;
    char err[EDGED_ERR_LEN] = "";
    struct pngio_info pi;
    int rc = pngio_decode(data, len, NULL, &im, err);

    CHECK(rc == 0, "%s: decode returned %d: %s", name, rc, err);
    if (rc)
        return;
    (*nvalid)++;
    CHECK(im.ch == suite_channels(name), "%s: %d channels, name says %d", name, im.ch, suite_channels(name));
    CHECK(compare_with_ref(name, data, len, &im) == 0, "%s: pixels differ from the reference mapping", name);
    CHECK(pngio_peek(data, len, &pi, err) == 0 && pi.w == im.w && pi.h == im.h && pi.ch == im.ch,
          "%s: peek %dx%dx%d vs decode %dx%dx%d", name, pi.w, pi.h, pi.ch, im.w, im.h, im.ch);
    CHECK(pi.interlaced == (name[3] == 'i'), "%s: peek says interlaced %d", name, pi.interlaced);
    if (name[3] == 'i') {
        char path[4096];
        uint8_t *twin;
        size_t tlen;
        struct img tim;

        snprintf(path, sizeof(path), "%s/%.3sn%s", dir, name, name + 4);
        if ((twin = read_file(path, &tlen))) {
            rc = pngio_decode(twin, tlen, NULL, &tim, err);
            CHECK(rc == 0 && img_equal(&im, &tim), "%s: interlaced differs from its twin %s", name, path);
            img_free(&tim);
            free(twin);
        }
    }
    img_free(&im);
}

static void suite_corrupt(const char *name, const uint8_t *data, size_t len, int *nbad)
{
    struct img im = {.w = 1, .h = 1, .ch = 1, .stride = 1, .px = (uint8_t *)"x"};
    char err[EDGED_ERR_LEN] = "";
    int rc = pngio_decode(data, len, NULL, &im, err);

    (*nbad)++;
    CHECK(rc == EDGED_E_BAD_PNG || rc == EDGED_E_NOT_PNG, "%s: corrupt file gave %d", name, rc);
    CHECK(err[0] != '\0' && im.px == NULL, "%s: no message or a partial image", name);
    printf("  %s -> %s: %s\n", name, edged_err_name(rc), err);
}

/* Random single-bit flips of a valid file: only success or a clean rejection, never anything else
 * (valgrind and ASan runs of this test watch the memory side). */
static void bitflips(const char *name, const uint8_t *data, size_t len, int n)
{
    uint8_t *copy = malloc(len);
    int wrong = 0;

    for (int i = 0; i < n; i++) {
        size_t at = check_rng() % len;
        uint8_t bit = (uint8_t)(1u << (check_rng() % 8));
        struct img im;
        char err[EDGED_ERR_LEN] = "";
        int rc;

        memcpy(copy, data, len);
        copy[at] ^= bit;
        rc = pngio_decode(copy, len, NULL, &im, err);
        if (rc == 0 ? !im.px || im.w < 1 : rc != EDGED_E_BAD_PNG && rc != EDGED_E_NOT_PNG)
            wrong++;
        img_free(&im);
    }
    CHECK(wrong == 0, "%s: %d of %d bit flips gave neither a clean image nor BAD_PNG/NOT_PNG", name, wrong,
          n);
    free(copy);
}

static void test_pngsuite(void)
{
    const char *dir = suite_dir();
    DIR *d = opendir(dir);
    struct dirent *e;
    char *names[512];
    int n = 0, nvalid = 0, nbad = 0;

    if (!d) {
        SKIP("PngSuite not found at %s (set EDGED_PNGSUITE)", dir);
        return;
    }
    while ((e = readdir(d)) && n < 512)
        if (strlen(e->d_name) > 4 && strcmp(e->d_name + strlen(e->d_name) - 4, ".png") == 0)
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), name_cmp);
    for (int i = 0; i < n; i++) {
        char path[4096];
        size_t len;
        uint8_t *data;

        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        data = read_file(path, &len);
        CHECK(data != NULL, "cannot read %s", path);
        if (data && names[i][0] == 'x')
            suite_corrupt(names[i], data, len, &nbad);
        else if (data) {
            suite_valid(dir, names[i], data, len, &nvalid);
            bitflips(names[i], data, len, 20);
        }
        free(data);
        free(names[i]);
    }
    printf("PngSuite %s: %d valid files decoded, %d corrupt files rejected\n", dir, nvalid, nbad);
    CHECK(nvalid >= 150 && nbad >= 14, "expected the full PngSuite, found %d valid, %d corrupt", nvalid,
          nbad);
}

/* Pixel values worked out by hand (zlib + unfilter in a script, no libpng). */
static void test_hand_checked(void)
{
    static const struct {
        const char *file;
        int x, y, ch;
        uint8_t px[4];
    } cases[] = {
        {"basn0g16.png", 1, 0, 1, {9}},           /* raw 2304 -> 8.96 */
        {"basn0g16.png", 31, 31, 1, {1}},         /* raw 255 -> 0.99 */
        {"basn2c16.png", 0, 0, 3, {255, 255, 0}}, /* raw 65535, 65535, 0 */
        {"basn2c16.png", 5, 3, 3, {214, 230, 0}}, /* raw 54965 -> 213.87, 59193 -> 230.32 */
        {"basn4a16.png", 20, 5, 2, {146, 82}},    /* raw 37448 -> 145.71, 21141 -> 82.26 */
        {"basn3p04.png", 16, 7, 3, {34, 255, 0}}, /* index 3 */
        {"tbbn0g04.png", 0, 0, 2, {255, 0}},      /* raw 15 == tRNS gray 15: transparent */
        {"tbbn0g04.png", 10, 10, 2, {136, 255}},  /* raw 8 -> 8 * 17 */
    };
    const char *dir = suite_dir();

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[4096], err[EDGED_ERR_LEN] = "";
        size_t len;
        uint8_t *data;
        struct img im;

        snprintf(path, sizeof(path), "%s/%s", dir, cases[i].file);
        if (!(data = read_file(path, &len))) {
            SKIP("%s missing", path);
            continue;
        }
        CHECK(pngio_decode(data, len, NULL, &im, err) == 0 && im.ch == cases[i].ch, "%s: %s", cases[i].file,
              err);
        if (im.px) {
            const uint8_t *px = im.px + cases[i].y * im.stride + cases[i].x * im.ch;

            CHECK(memcmp(px, cases[i].px, (size_t)im.ch) == 0, "%s (%d,%d): first sample %u, expected %u",
                  cases[i].file, cases[i].x, cases[i].y, px[0], cases[i].px[0]);
        }
        img_free(&im);
        free(data);
    }
}

/* All 65536 16-bit values, as gray and as RGB (v, 65535 - v, v ^ 0x5a5a): each must become
 * round(v / 257) = (v + 128) / 257 (257 is odd, so no ties). */
static void test_scale16_all(void)
{
    for (int color = 0; color <= 2; color += 2) {
        int spp = color ? 3 : 1;
        struct buf b = {0}, raw = {0};
        uLongf zlen;
        uint8_t *z;
        struct img im;
        char err[EDGED_ERR_LEN] = "";
        long bad = 0;

        for (unsigned y = 0; y < 256; y++) {
            uint8_t f = 0;

            buf_add(&raw, &f, 1);
            for (unsigned x = 0; x < 256; x++) {
                unsigned v = y * 256 + x, s[3] = {v, 65535 - v, v ^ 0x5a5a};

                for (int k = 0; k < spp; k++) {
                    uint8_t be[2] = {(uint8_t)(s[k] >> 8), (uint8_t)s[k]};
                    buf_add(&raw, be, 2);
                }
            }
        }
        zlen = compressBound(raw.len);
        z = malloc(zlen);
        compress2(z, &zlen, raw.p, raw.len, 1);
        add_sig_ihdr(&b, 256, 256, 16, color);
        add_chunk(&b, "IDAT", z, zlen);
        add_chunk(&b, "IEND", NULL, 0);
        CHECK(pngio_decode(b.p, b.len, NULL, &im, err) == 0 && im.ch == spp, "16-bit ct %d: %s", color, err);
        for (unsigned v = 0; im.px && v < 65536; v++) {
            unsigned s[3] = {v, 65535 - v, v ^ 0x5a5a};

            for (int k = 0; k < spp; k++)
                if (im.px[(size_t)v * spp + k] != (s[k] + 128) / 257 && bad++ < 3)
                    fprintf(stderr, "16-bit %u -> %u, expected %u\n", s[k], im.px[(size_t)v * spp + k],
                            (s[k] + 128) / 257);
        }
        CHECK(im.px && bad == 0, "16-bit colour type %d: %ld of %d samples not round(v/257)", color, bad,
              65536 * spp);
        img_free(&im);
        free(z);
        free(raw.p);
        free(b.p);
    }
}

static void test_defaults(void)
{
    struct png_limits lim;

    pngio_default_limits(&lim);
    CHECK(lim.max_side == 32768 && lim.max_pixels == 50000000 && lim.max_chunk_bytes == 8u << 20,
          "defaults %u %llu %zu", lim.max_side, (unsigned long long)lim.max_pixels, lim.max_chunk_bytes);
}

/* A real (~0.5 MB) 20000x20000 PNG must be refused from IHDR, memory not growing. */
static void test_too_large(void)
{
    struct buf b = make_flat_gray(20000, 20000, 77);
    struct img im;
    char err[EDGED_ERR_LEN] = "";
    long rss0 = peak_rss_kb(), grew;
    struct pngio_info pi;
    int rc = pngio_decode(b.p, b.len, NULL, &im, err);

    grew = peak_rss_kb() - rss0;
    printf("20000x20000 flat PNG: %zu bytes -> %s: %s (peak RSS +%ld KB)\n", b.len, edged_err_name(rc), err,
           grew);
    CHECK(rc == EDGED_E_IMAGE_TOO_LARGE && im.px == NULL, "20000x20000 gave %d", rc);
    CHECK(strstr(err, "400000000") && strstr(err, "50000000"), "message should name value and limit: %s",
          err);
    CHECK(grew < RSS_BUDGET_KB, "peak RSS grew by %ld KB", grew);
    CHECK(pngio_peek(b.p, b.len, &pi, err) == 0 && pi.w == 20000 && pi.h == 20000 && pi.ch == 1, "peek %s",
          err);
    free(b.p);

    /* side limit, on a small file whose IHDR is patched (CRC fixed): decided before any IDAT. */
    b = make_small_with(5, 4, NULL);
    put32(b.p + 16, 40000);
    put32(b.p + 29, (uint32_t)crc32(0, b.p + 12, 17));
    rc = pngio_decode(b.p, b.len, NULL, &im, err);
    CHECK(rc == EDGED_E_IMAGE_TOO_LARGE && strstr(err, "40000") && strstr(err, "max-side 32768"), "%d %s", rc,
          err);
    free(b.p);
}

/* A real 3000x2000 flat image decodes completely; the pixel limit is inclusive. */
static void test_limits_edge(void)
{
    struct buf b = make_flat_gray(3000, 2000, 201);
    struct png_limits lim;
    struct img im;
    char err[EDGED_ERR_LEN] = "";
    size_t bad = 0;
    int rc;

    pngio_default_limits(&lim);
    lim.max_pixels = 6000000;
    rc = pngio_decode(b.p, b.len, &lim, &im, err);
    CHECK(rc == 0 && im.w == 3000 && im.h == 2000 && im.ch == 1, "3000x2000 at max-pixels 6000000: %s", err);
    for (size_t i = 0; im.px && i < (size_t)im.w * im.h; i++)
        bad += im.px[i] != 201;
    CHECK(im.px && bad == 0, "%zu pixels not 201", bad);
    img_free(&im);
    lim.max_pixels = 5999999;
    rc = pngio_decode(b.p, b.len, &lim, &im, err);
    CHECK(rc == EDGED_E_IMAGE_TOO_LARGE && strstr(err, "6000000 pixels exceeds max-pixels 5999999"), "%s",
          err);
    pngio_default_limits(&lim);
    lim.max_side = 2999;
    rc = pngio_decode(b.p, b.len, &lim, &im, err);
    CHECK(rc == EDGED_E_IMAGE_TOO_LARGE && strstr(err, "max-side 2999"), "%s", err);
    free(b.p);
}

/* One IDAT chunk larger than max_chunk_bytes (9 MB of noise, stored) is image data, not refused. */
static void test_big_idat(void)
{
    uint32_t w = 2000, h = 1500;
    size_t rowlen = (size_t)w * 3 + 1, bad = 0;
    struct buf b = {0}, raw = {0};
    uLongf zlen;
    uint8_t *z, *row = malloc(rowlen);
    struct img im;
    char err[EDGED_ERR_LEN] = "";

    for (uint32_t y = 0; y < h; y++) {
        row[0] = 0;
        for (size_t i = 1; i < rowlen; i++)
            row[i] = (uint8_t)(i * 7 + y * 13);
        buf_add(&raw, row, rowlen);
    }
    zlen = compressBound(raw.len);
    z = malloc(zlen);
    compress2(z, &zlen, raw.p, raw.len, 0);
    add_sig_ihdr(&b, w, h, 8, 2);
    add_chunk(&b, "IDAT", z, zlen);
    add_chunk(&b, "IEND", NULL, 0);
    CHECK(pngio_decode(b.p, b.len, NULL, &im, err) == 0 && im.ch == 3, "single %lu-byte IDAT: %s",
          (unsigned long)zlen, err);
    for (uint32_t y = 0; im.px && y < h; y++)
        bad += memcmp(im.px + y * im.stride, raw.p + y * rowlen + 1, rowlen - 1) != 0;
    CHECK(im.px && bad == 0, "single big IDAT: %zu rows differ", bad);
    img_free(&im);
    free(row);
    free(z);
    free(raw.p);
    free(b.p);
}

static struct img random_img(int w, int h, int ch, size_t pad)
{
    struct img im = {.w = w, .h = h, .ch = ch, .stride = (size_t)w * ch + pad};

    im.px = malloc(im.stride * (size_t)h);
    for (size_t i = 0; i < im.stride * (size_t)h; i++)
        im.px[i] = (uint8_t)check_rng();
    return im;
}

/* Every prefix of a valid file is refused: NOT_PNG below 8 bytes, BAD_PNG after. */
static void truncate_all(const char *what, const uint8_t *data, size_t len)
{
    size_t wrong = 0, ok = 0;

    for (size_t cut = 0; cut < len; cut++) {
        struct img im;
        char err[EDGED_ERR_LEN] = "";
        int rc = pngio_decode(data, cut, NULL, &im, err);
        int want = cut < 8 ? EDGED_E_NOT_PNG : EDGED_E_BAD_PNG;

        ok += rc == 0;
        if ((rc != want || im.px || !err[0]) && wrong++ < 3)
            fprintf(stderr, "%s cut at %zu/%zu: %d %s\n", what, cut, len, rc, err);
        img_free(&im);
    }
    CHECK(wrong == 0 && ok == 0, "%s: %zu of %zu truncations not rejected properly", what, wrong, len);
}

static void test_truncation(void)
{
    struct img src = random_img(33, 65, 4, 0);
    uint8_t *png = NULL;
    size_t len = 0;
    char err[EDGED_ERR_LEN] = "", path[4096];
    const char *dir = suite_dir();

    CHECK(pngio_encode(&src, 6, 8, &png, &len, err) == 0, "encode: %s", err);
    truncate_all("33x65 RGBA", png, len);
    free(png);
    free(src.px);
    snprintf(path, sizeof(path), "%s/basi3p02.png", dir);
    if ((png = read_file(path, &len)))
        truncate_all("basi3p02", png, len);
    else
        SKIP("%s missing", path);
    free(png);
}

static void expect_rc(const char *what, const uint8_t *data, size_t len, int want)
{
    struct img im;
    char err[EDGED_ERR_LEN] = "";
    struct pngio_info pi;
    int rc = pngio_decode(data, len, NULL, &im, err);

    CHECK(rc == want && im.px == NULL && err[0], "%s: got %d (%s), want %d", what, rc, err, want);
    if (want == EDGED_E_NOT_PNG)
        CHECK(pngio_peek(data, len, &pi, err) == EDGED_E_NOT_PNG, "%s: peek", what);
    printf("  %s -> %s: %s\n", what, edged_err_name(rc), err);
    img_free(&im);
}

static void test_not_png(void)
{
    static const uint8_t jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F',
                                   0,    1,    1,    0,    0, 1,  0,   1,   0,   0};
    static const uint8_t gif[] = "GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04";
    static const uint8_t sig7[] = {137, 80, 78, 71, 13, 10, 26};

    expect_rc("JPEG", jpeg, sizeof(jpeg), EDGED_E_NOT_PNG);
    expect_rc("GIF", gif, sizeof(gif) - 1, EDGED_E_NOT_PNG);
    expect_rc("empty", (const uint8_t *)"", 0, EDGED_E_NOT_PNG);
    expect_rc("NULL", NULL, 0, EDGED_E_NOT_PNG);
    expect_rc("7-byte signature", sig7, sizeof(sig7), EDGED_E_NOT_PNG);
    CHECK(!pngio_is_png(sig7, 7) && pngio_is_png((const uint8_t *)"\x89PNG\r\n\x1a\n", 8), "pngio_is_png");
}

/* Structure damage with every CRC correct: only libpng's parsing can notice. */
static void test_structure(void)
{
    struct buf b = make_small_with(9, 7, NULL), c = {0}, z = {0};
    uint8_t row[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    size_t idat_at = 33;

    expect_rc("missing IEND", b.p, b.len - 12, EDGED_E_BAD_PNG);
    {
        struct img im;
        char err[EDGED_ERR_LEN] = "";

        pngio_decode(b.p, b.len - 12, NULL, &im, err);
        CHECK(strstr(err, "truncated") != NULL, "missing IEND should say truncated: %s", err);
    }
    /* IEND present, but the zlib stream holds 3 of 7 rows. */
    deflate_rows(&z, row, sizeof(row), 3, 6, Z_DEFAULT_STRATEGY);
    add_sig_ihdr(&c, 9, 7, 8, 0);
    add_chunk(&c, "IDAT", z.p, z.len);
    add_chunk(&c, "IEND", NULL, 0);
    expect_rc("zlib stream short by 4 rows", c.p, c.len, EDGED_E_BAD_PNG);
    c.len = 0;
    add_sig_ihdr(&c, 9, 7, 8, 0);
    add_chunk(&c, "IDAT", z.p, z.len / 2);
    add_chunk(&c, "IEND", NULL, 0);
    expect_rc("IDAT cut in half, CRC fixed", c.p, c.len, EDGED_E_BAD_PNG);
    c.len = 0;
    add_sig_ihdr(&c, 9, 7, 8, 0);
    add_chunk(&c, "IEND", NULL, 0);
    expect_rc("no IDAT", c.p, c.len, EDGED_E_BAD_PNG);
    /* a CRC error in IDAT, in IEND and in an ancillary chunk: all rejected */
    b.p[idat_at + 8 + 3] ^= 0x10;
    expect_rc("IDAT byte flipped", b.p, b.len, EDGED_E_BAD_PNG);
    b.p[idat_at + 8 + 3] ^= 0x10;
    b.p[b.len - 1] ^= 1;
    expect_rc("IEND CRC flipped", b.p, b.len, EDGED_E_BAD_PNG);
    free(b.p);
    c.len = 0;
    add_chunk(&c, "tEXt", "Comment\0hello", 13);
    b = make_small_with(9, 7, &c);
    b.p[33 + 8 + 2] ^= 0x20;
    expect_rc("tEXt byte flipped (ancillary CRC)", b.p, b.len, EDGED_E_BAD_PNG);
    free(b.p);
    free(c.p);
    free(z.p);
}

/* A chunk after the image data: an unknown critical one (upper-case first letter) is refused as
 * the specification and libpng say, on the fast decoder's path (8-bit) and on libpng's (16-bit);
 * an unknown ancillary one is skipped. */
static void test_chunk_after_idat(void)
{
    static const uint8_t row16[19] = {0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9};
    struct buf b, z = {0};

    for (int depth = 8; depth <= 16; depth += 8) {
        for (int critical = 0; critical <= 1; critical++) {
            if (depth == 8) {
                b = make_small_with(9, 7, NULL);
            } else {
                b = (struct buf){0};
                z.len = 0;
                deflate_rows(&z, row16, sizeof(row16), 7, 6, Z_DEFAULT_STRATEGY);
                add_sig_ihdr(&b, 9, 7, 16, 0);
                add_chunk(&b, "IDAT", z.p, z.len);
                add_chunk(&b, "IEND", NULL, 0);
            }
            b.len -= 12; /* IEND again after the extra chunk */
            add_chunk(&b, critical ? "ABCD" : "aBCD", "xx", 2);
            add_chunk(&b, "IEND", NULL, 0);
            if (critical) {
                expect_rc(depth == 8 ? "unknown critical chunk after IDAT, 8-bit"
                                     : "unknown critical chunk after IDAT, 16-bit", b.p, b.len, EDGED_E_BAD_PNG);
            } else {
                struct img im;
                char err[EDGED_ERR_LEN] = "";
                int rc = pngio_decode(b.p, b.len, NULL, &im, err);

                CHECK(rc == 0 && im.w == 9 && im.h == 7, "unknown ancillary chunk after IDAT, %d-bit: %d %s", depth,
                      rc, err);
                img_free(&im);
            }
            free(b.p);
        }
    }
    free(z.p);
}

/* Decodes data and checks it is the 9x7 x+y gradient of make_small_with. */
static int is_small_gradient(const uint8_t *data, size_t len, const struct png_limits *lim, char *err)
{
    struct img im;
    int ok = pngio_decode(data, len, lim, &im, err) == 0 && im.w == 9 && im.h == 7 && im.ch == 1;

    for (int y = 0; ok && y < 7; y++)
        for (int x = 0; x < 9; x++)
            ok &= im.px[y * im.stride + x] == x + y;
    img_free(&im);
    return ok;
}

/* Decodes the 9x7 test image carrying extra chunks and checks that peak RSS stayed flat. */
static void decode_bounded(const char *what, const struct buf *extra, const struct png_limits *lim)
{
    struct buf b = make_small_with(9, 7, extra);
    char err[EDGED_ERR_LEN] = "";
    long rss0 = peak_rss_kb(), grew;

    CHECK(is_small_gradient(b.p, b.len, lim, err), "%s: %s", what, err);
    grew = peak_rss_kb() - rss0;
    printf("%s (%zu bytes): decoded, peak RSS +%ld KB (peak %ld KB)\n", what, b.len, grew, peak_rss_kb());
    CHECK(grew < RSS_BUDGET_KB, "%s: peak RSS grew by %ld KB", what, grew);
    free(b.p);
}

/* zTXt and iCCP chunks each inflating to 256 MB of zeros. */
static void test_ztxt_bomb(void)
{
    const size_t bomb = (size_t)256 << 20, step = 1 << 20;
    uint8_t *zeros = calloc(1, step), out[65536];
    struct buf extra = {0}, z = {0};
    z_stream s = {0};

    buf_add(&z, "bomb\0\0", 6); /* keyword, NUL, compression method 0 */
    deflateInit(&s, 9);
    for (size_t done = 0; done <= bomb; done += step) {
        s.next_in = zeros;
        s.avail_in = done == bomb ? 0 : (uInt)step;
        do {
            s.next_out = out;
            s.avail_out = sizeof(out);
            deflate(&s, done == bomb ? Z_FINISH : Z_NO_FLUSH);
            buf_add(&z, out, sizeof(out) - s.avail_out);
        } while (s.avail_out == 0);
    }
    deflateEnd(&s);
    add_chunk(&extra, "zTXt", z.p, z.len);
    add_chunk(&extra, "iCCP", z.p, z.len);
    decode_bounded("zTXt + iCCP bombs, 256 MB inflated each", &extra, NULL);
    free(extra.p);
    free(z.p);
    free(zeros);
}

/* 20000 small tEXt and unknown chunks: over libpng's chunk cache, still bounded. */
static void test_chunk_flood(void)
{
    struct buf extra = {0};

    for (int i = 0; i < 20000; i++)
        add_chunk(&extra, i % 2 ? "tEXt" : "spam", "Comment\0flood", 13);
    decode_bounded("20000 small ancillary chunks", &extra, NULL);
    free(extra.p);
}

/* Ancillary chunks are streamed through the CRC check, never buffered: one over max_chunk_bytes
 * costs nothing, so it is not refused either. A length past the end of the data is. */
static void test_big_text(void)
{
    const size_t mb = 1 << 20;
    uint8_t *zeros = calloc(1, mb);
    struct buf extra = {0}, b;
    struct png_limits lim;

    add_chunk(&extra, "tEXt", zeros, mb);
    for (int i = 0; i < 24; i++)
        buf_add(&extra, zeros, mb);
    put32(extra.p, (uint32_t)(extra.len - 12));
    put32(extra.p + extra.len - 4, (uint32_t)crc32(0, extra.p + 4, (uInt)(extra.len - 8)));
    pngio_default_limits(&lim);
    lim.max_chunk_bytes = 1000;
    decode_bounded("25 MB tEXt, max_chunk_bytes 1000", &extra, &lim);
    decode_bounded("25 MB tEXt, default limits", &extra, NULL);
    b = make_small_with(9, 7, &extra);
    put32(b.p + 33, 0x7fffffff);
    expect_rc("chunk length 2^31-1", b.p, b.len, EDGED_E_BAD_PNG);
    free(b.p);
    free(extra.p);
    free(zeros);
}

static void roundtrip_one(int w, int h, int ch, int level, size_t pad)
{
    struct img src = random_img(w, h, ch, pad), back;
    uint8_t *png = NULL, *png2 = NULL;
    size_t len = 0, len2 = 0;
    char err[EDGED_ERR_LEN] = "";
    int rc = pngio_encode(&src, level, 8, &png, &len, err);
    struct pngio_info pi;

    CHECK(rc == 0 && png && len > 33, "encode %dx%dx%d level %d: %s", w, h, ch, level, err);
    rc = pngio_decode(png, len, NULL, &back, err);
    CHECK(rc == 0 && img_equal(&src, &back), "round trip %dx%dx%d level %d pad %zu: %s", w, h, ch, level, pad,
          err);
    CHECK(pngio_peek(png, len, &pi, err) == 0 && pi.w == w && pi.h == h && pi.ch == ch && pi.depth == 8 &&
              !pi.interlaced && !pi.animated,
          "peek of encoded %dx%dx%d", w, h, ch);
    CHECK(pngio_encode(&src, level, 8, &png2, &len2, err) == 0 && len2 == len && memcmp(png, png2, len) == 0,
          "encode %dx%dx%d level %d not deterministic", w, h, ch, level);
    img_free(&back);
    free(png);
    free(png2);
    free(src.px);
}

static void test_roundtrip(void)
{
    static const int sizes[][2] = {{1, 1}, {7, 3}, {33, 65}, {300, 200}};
    static const int levels[] = {0, 1, 3, 4, 6, 9};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int ch = 1; ch <= 4; ch++)
            for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++)
                roundtrip_one(sizes[s][0], sizes[s][1], ch, levels[l], s == 2 ? 5 : 0);
}

/* src (1 channel) as a packed 1-bit map (struct img packed), rows (w+7)/8 + pad bytes apart. */
static struct img pack_img(const struct img *src, int pad)
{
    struct img p = {src->w, src->h, 1, ((size_t)src->w + 7) / 8 + pad, NULL, 1};

    p.px = calloc(p.stride * p.h, 1);
    if (!p.px)
        abort();
    for (int y = 0; y < src->h; y++)
        for (int x = 0; x < src->w; x++)
            if (src->px[y * src->stride + x] >= 128)
                p.px[y * p.stride + x / 8] |= (uint8_t)(0x80u >> (x % 8));
    return p;
}

/* 1-bit PNGs: samples >= 128 white, and a packed map (what the GPU returns for 1-bit requests)
 * encodes to the same bytes as the u8 map it packs. */
static void test_1bit(void)
{
    static const int sizes[][2] = {{1, 1}, {8, 1}, {9, 2}, {37, 13}, {33, 65}};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int level = 0; level <= 9; level += 3) {
            struct img src = random_img(sizes[s][0], sizes[s][1], 1, s), back;
            uint8_t *png = NULL;
            size_t len = 0, bad = 0;
            char err[EDGED_ERR_LEN] = "";
            int rc = pngio_encode(&src, level, 1, &png, &len, err);

            CHECK(rc == 0 && png[24] == 1 && png[25] == 0, "1-bit encode %dx%d: %s", src.w, src.h, err);
            rc = pngio_decode(png, len, NULL, &back, err);
            CHECK(rc == 0 && back.ch == 1 && back.w == src.w && back.h == src.h, "1-bit decode: %s", err);
            for (int y = 0; rc == 0 && y < src.h; y++)
                for (int x = 0; x < src.w; x++)
                    bad += back.px[y * back.stride + x] != (src.px[y * src.stride + x] >= 128 ? 255 : 0);
            CHECK(rc == 0 && bad == 0, "1-bit %dx%d level %d: %zu pixels not 0/255 as thresholded", src.w,
                  src.h, level, bad);
            struct img pk = pack_img(&src, (int)s % 2);
            uint8_t *png2 = NULL;
            size_t len2 = 0;
            CHECK(pngio_encode(&pk, level, 1, &png2, &len2, err) == 0 && len2 == len && !memcmp(png, png2, len),
                  "1-bit %dx%d level %d: the packed map encodes differently (%s)", src.w, src.h, level, err);
            free(png2);
            free(pk.px);
            img_free(&back);
            free(png);
            free(src.px);
        }
}

static void expect_param(const char *what, const struct img *im, int level, int depth, int with_out)
{
    uint8_t *png = (uint8_t *)"x";
    size_t len = 1;
    char err[EDGED_ERR_LEN] = "";
    int rc = pngio_encode(im, level, depth, with_out ? &png : NULL, &len, err);

    CHECK(rc == EDGED_E_PARAM && err[0] && (!with_out || png == NULL), "%s: got %d (%s)", what, rc, err);
}

static void test_encode_params(void)
{
    struct img g = random_img(4, 4, 1, 0), rgb = random_img(4, 4, 3, 0), bad;

    expect_param("level -1", &g, -1, 8, 1);
    expect_param("level 10", &g, 10, 8, 1);
    expect_param("bit depth 0", &g, 1, 0, 1);
    expect_param("bit depth 2", &g, 1, 2, 1);
    expect_param("bit depth 16", &g, 1, 16, 1);
    expect_param("1-bit RGB", &rgb, 1, 1, 1);
    rgb.ch = 2;
    expect_param("1-bit gray+alpha", &rgb, 1, 1, 1);
    rgb.ch = 4;
    expect_param("1-bit RGBA", &rgb, 1, 1, 1);
    expect_param("NULL image", NULL, 1, 8, 1);
    expect_param("NULL out", &g, 1, 8, 0);
    bad = g;
    bad.stride = 3;
    expect_param("stride < w*ch", &bad, 1, 8, 1);
    bad = g;
    bad.ch = 5;
    expect_param("5 channels", &bad, 1, 8, 1);
    bad = g;
    bad.w = 0;
    expect_param("width 0", &bad, 1, 8, 1);
    bad = g;
    bad.packed = 1;
    expect_param("packed map as 8-bit", &bad, 1, 8, 1);
    bad.stride = 0;
    expect_param("packed stride < (w+7)/8", &bad, 1, 1, 1);
    bad = rgb;
    bad.ch = 3, bad.packed = 1;
    expect_param("packed RGB", &bad, 1, 1, 1);
    free(g.px);
    free(rgb.px);
}

int main(void)
{
    check_rng_init();
    test_defaults();
    /* memory-bound cases first, while the peak RSS they are measured against is still low */
    test_too_large();
    test_ztxt_bomb();
    test_chunk_flood();
    test_big_text();
    test_pngsuite();
    test_hand_checked();
    test_scale16_all();
    test_limits_edge();
    test_big_idat();
    test_truncation();
    test_not_png();
    test_structure();
    test_chunk_after_idat();
    test_roundtrip();
    test_1bit();
    test_encode_params();
    return check_summary();
}
