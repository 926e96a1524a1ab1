/* test_image_io.c — JPEG header peek and scan count, EXIF orientation, sniff, JPEG/WebP decode (JPEG at
 * any sampling factors), JPEG and WebP encode. */
#include <math.h>
#include <stdio.h> /* before jpeglib.h */
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <webp/decode.h>
#include <webp/encode.h>

#include "check.h"
#include "codec/exif.h"
#include "codec/image_io.h"

/* A JPEG header up to SOS: SOI, optional extra segment, SOF (marker m, precision p, nf
 * components with sampling hv[]), a one-component SOS and a few entropy bytes. */
static size_t make_header(uint8_t *b, int m, int p, int w, int h, int nf, const int *hv, const uint8_t *extra,
                          size_t extra_len)
{
    size_t n = 0;

    b[n++] = 0xFF, b[n++] = 0xD8;
    if (extra_len) /* memcpy's source may not be NULL, even for 0 bytes */
        memcpy(b + n, extra, extra_len);
    n += extra_len;
    b[n++] = 0xFF, b[n++] = (uint8_t)m;
    b[n++] = 0, b[n++] = (uint8_t)(8 + 3 * nf);
    b[n++] = (uint8_t)p, b[n++] = (uint8_t)(h >> 8), b[n++] = (uint8_t)h, b[n++] = (uint8_t)(w >> 8),
    b[n++] = (uint8_t)w, b[n++] = (uint8_t)nf;
    for (int i = 0; i < nf; i++)
        b[n++] = (uint8_t)(i + 1), b[n++] = (uint8_t)hv[i], b[n++] = 0;
    memcpy(b + n, "\xFF\xDA\x00\x08\x01\x01\x00\x00\x3F\x00", 10);
    n += 10;
    memset(b + n, 0, 16);
    return n + 16;
}

static void test_peek_kinds(void)
{
    static const int s444[] = {0x11, 0x11, 0x11}, s422[] = {0x21, 0x11, 0x11}, s420[] = {0x22, 0x11, 0x11},
                     s440[] = {0x12, 0x11, 0x11}, s411[] = {0x41, 0x11, 0x11}, sodd[] = {0x22, 0x21, 0x11},
                     g[] = {0x11}, k4[] = {0x11, 0x11, 0x11, 0x11};
    static const uint8_t adobe0[] = "\xFF\xEE\x00\x0E"
                                    "Adobe\x00\x64\x00\x00\x00\x00\x00";
    static const uint8_t adobe2[] = "\xFF\xEE\x00\x0E"
                                    "Adobe\x00\x64\x00\x00\x00\x00\x02";
    struct {
        int m, nf;
        const int *hv;
        const uint8_t *extra;
        size_t extra_len;
        int ch, prog, arith;
        enum jpegio_colorspace cs;
        enum jpegio_subsamp sub;
    } cases[] = {
        {0xC0, 3, s444, NULL, 0, 3, 0, 0, JPEGIO_CS_YCBCR, JPEGIO_SUB_444},
        {0xC2, 3, s422, NULL, 0, 3, 1, 0, JPEGIO_CS_YCBCR, JPEGIO_SUB_422},
        {0xC1, 3, s420, NULL, 0, 3, 0, 0, JPEGIO_CS_YCBCR, JPEGIO_SUB_420},
        {0xC0, 3, s440, NULL, 0, 3, 0, 0, JPEGIO_CS_YCBCR, JPEGIO_SUB_440},
        {0xCA, 3, s411, NULL, 0, 3, 1, 1, JPEGIO_CS_YCBCR, JPEGIO_SUB_411},
        {0xC0, 3, sodd, NULL, 0, 3, 0, 0, JPEGIO_CS_YCBCR, JPEGIO_SUB_OTHER},
        {0xC2, 1, g, NULL, 0, 1, 1, 0, JPEGIO_CS_GRAY, JPEGIO_SUB_GRAY},
        {0xC0, 3, s444, adobe0, sizeof(adobe0) - 1, 3, 0, 0, JPEGIO_CS_RGB, JPEGIO_SUB_444},
        {0xC0, 4, k4, adobe0, sizeof(adobe0) - 1, 3, 0, 0, JPEGIO_CS_CMYK, JPEGIO_SUB_444},
        {0xC0, 4, k4, adobe2, sizeof(adobe2) - 1, 3, 0, 0, JPEGIO_CS_YCCK, JPEGIO_SUB_444},
    };
    uint8_t b[256];
    char err[EDGED_ERR_LEN];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct jpegio_info info;
        size_t n = make_header(b, cases[i].m, 8, 300, 200, cases[i].nf, cases[i].hv, cases[i].extra,
                               cases[i].extra_len);
        int rc = jpegio_peek(b, n, &info, err);
        CHECK(rc == 0, "case %zu: %s", i, err);
        CHECK(info.w == 300 && info.h == 200 && info.ch == cases[i].ch && info.components == cases[i].nf,
              "case %zu: %dx%d ch %d", i, info.w, info.h, info.ch);
        CHECK(info.progressive == cases[i].prog && info.arithmetic == cases[i].arith, "case %zu: kind", i);
        CHECK(info.cs == cases[i].cs && info.sub == cases[i].sub, "case %zu: %s %s", i,
              jpegio_colorspace_name(info.cs), jpegio_subsamp_name(info.sub));
        CHECK(info.orientation == 1, "case %zu: orientation %d", i, info.orientation);
        CHECK(info.scans == 1, "case %zu: %d scans (one SOS, no EOI)", i, info.scans);
    }
    /* the sampling factors as the frame gives them, for POST /v1/info */
    struct jpegio_info info;
    size_t n = make_header(b, 0xC0, 8, 30, 20, 3, sodd, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == 0 && strcmp(info.factors, "2x2,2x1,1x1") == 0, "factors '%s'",
          info.factors);
    n = make_header(b, 0xC0, 8, 30, 20, 1, g, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == 0 && strcmp(info.factors, "1x1") == 0, "gray factors '%s'", info.factors);
}

static void test_peek_refusals(void)
{
    static const int s444[] = {0x11, 0x11, 0x11}, bad[] = {0x05, 0x11, 0x11}, two[] = {0x11, 0x11};
    uint8_t b[256];
    char err[EDGED_ERR_LEN];
    struct jpegio_info info;
    size_t n;

    n = make_header(b, 0xC3, 8, 8, 8, 3, s444, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == EDGED_E_NOT_PNG && strstr(err, "lossless"), "SOF3: %s", err);
    n = make_header(b, 0xC5, 8, 8, 8, 3, s444, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == EDGED_E_NOT_PNG && strstr(err, "hierarchical"), "SOF5: %s", err);
    n = make_header(b, 0xC1, 12, 8, 8, 3, s444, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == EDGED_E_NOT_PNG && strstr(err, "12-bit"), "12-bit: %s", err);
    n = make_header(b, 0xC0, 8, 8, 8, 2, two, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == EDGED_E_NOT_PNG, "2 components: %s", err);
    n = make_header(b, 0xC0, 8, 8, 0, 3, s444, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == EDGED_E_NOT_PNG && strstr(err, "DNL"), "height 0: %s", err);
    n = make_header(b, 0xC0, 8, 0, 8, 3, s444, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == EDGED_E_BAD_IMAGE, "width 0: %s", err);
    n = make_header(b, 0xC0, 8, 8, 8, 3, bad, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == EDGED_E_BAD_IMAGE, "sampling 0: %s", err);
    n = make_header(b, 0xC0, 8, 65535, 65535, 3, s444, NULL, 0);
    CHECK(jpegio_peek(b, n, &info, err) == 0 && info.w == 65535, "bomb header peeks: %s", err);
    CHECK(imageio_peek(b, n, NULL, &(struct imageio_head){0}, err) == EDGED_E_IMAGE_TOO_LARGE, "bomb: %s",
          err);
    /* every prefix that cuts the header (before the SOS is whole) is refused by the peek */
    n = make_header(b, 0xC0, 8, 8, 8, 3, s444, NULL, 0);
    for (size_t cut = 0; cut < n - 16; cut++) {
        int rc = jpegio_peek(b, cut, &info, err);
        CHECK(rc == (cut < 3 ? EDGED_E_NOT_PNG : EDGED_E_BAD_IMAGE), "prefix %zu: %d %s", cut, rc, err);
    }
    CHECK(jpegio_peek(NULL, 0, &info, err) == EDGED_E_NOT_PNG, "NULL");
}

/* An Exif APP1 with one IFD0 entry (tag, type, count, value), little or big endian. */
static size_t make_app1(uint8_t *b, int le, unsigned tag, unsigned type, unsigned count, unsigned value)
{
    uint8_t t[64];
    size_t n = 0;
#define P16(v)                                                                                               \
    (le ? (t[n++] = (uint8_t)(v), t[n++] = (uint8_t)((v) >> 8))                                              \
        : (t[n++] = (uint8_t)((v) >> 8), t[n++] = (uint8_t)(v)))
#define P32(v) (le ? (P16((v)&0xFFFF), P16((v) >> 16)) : (P16((v) >> 16), P16((v)&0xFFFF)))
    memcpy(t, "Exif\0\0", 6);
    n = 6;
    memcpy(t + n, le ? "II*\0" : "MM\0*", 4);
    n += 4;
    P32(8u);
    P16(1u);
    P16(tag);
    P16(type);
    P32(count);
    P16(value);
    P16(0u);
    P32(0u);
#undef P16
#undef P32
    b[0] = 0xFF, b[1] = 0xE1, b[2] = (uint8_t)((n + 2) >> 8), b[3] = (uint8_t)(n + 2);
    memcpy(b + 4, t, n);
    return n + 4;
}

static void test_orientation(void)
{
    static const int s444[] = {0x11, 0x11, 0x11};
    uint8_t app[64], b[256];
    struct jpegio_info info;
    char err[EDGED_ERR_LEN];
    size_t a, n;

    for (int le = 0; le <= 1; le++)
        for (unsigned o = 0; o <= 9; o++) {
            int want = o >= 1 && o <= 8 ? (int)o : 1;
            a = make_app1(app, le, 0x0112, 3, 1, o);
            n = make_header(b, 0xC0, 8, 16, 8, 3, s444, app, a);
            CHECK(jpegio_orientation(b, n) == want, "le %d o %u: %d", le, o, jpegio_orientation(b, n));
            CHECK(jpegio_peek(b, n, &info, err) == 0 && info.orientation == want, "peek le %d o %u", le, o);
        }
    a = make_app1(app, 1, 0x0112, 4, 1, 6); /* LONG, not SHORT */
    n = make_header(b, 0xC0, 8, 16, 8, 3, s444, app, a);
    CHECK(jpegio_orientation(b, n) == 1, "wrong type");
    a = make_app1(app, 1, 0x0112, 3, 2, 6);
    n = make_header(b, 0xC0, 8, 16, 8, 3, s444, app, a);
    CHECK(jpegio_orientation(b, n) == 1, "count 2");
    a = make_app1(app, 1, 0x0110, 3, 1, 6);
    n = make_header(b, 0xC0, 8, 16, 8, 3, s444, app, a);
    CHECK(jpegio_orientation(b, n) == 1, "another tag");
    a = make_app1(app, 1, 0x0112, 3, 1, 6);
    app[14] = 0xF0; /* IFD offset past the block */
    n = make_header(b, 0xC0, 8, 16, 8, 3, s444, app, a);
    CHECK(jpegio_orientation(b, n) == 1, "IFD out of range");
    a = make_app1(app, 1, 0x0112, 3, 1, 6);
    app[18] = 40; /* entry count past the block */
    CHECK(exif_orientation(app + 4, a - 4) == 1 || exif_orientation(app + 4, a - 4) == 6, "entry count");
    for (size_t cut = 0; cut < a - 4; cut++)
        CHECK(exif_orientation(app + 4, cut) == 1 || cut >= a - 4 - 6, "exif prefix %zu", cut);
    n = make_header(b, 0xC0, 8, 16, 8, 3, s444, NULL, 0);
    CHECK(jpegio_orientation(b, n) == 1, "no EXIF");
    CHECK(jpegio_orientation(b, 5) == 1 && jpegio_orientation(NULL, 0) == 1, "short input");
}

/* A smooth ramp per channel plus a little texture (below 256 for sides up to 40). */
static void fill(struct img *im, unsigned seed)
{
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++)
            for (int c = 0; c < im->ch; c++)
                im->px[(size_t)y * im->stride + (size_t)x * im->ch + c] =
                    (uint8_t)(x * 2 + y * 2 + c * 20 + (seed * 7 + (unsigned)(x * y)) % 5);
}

static int max_err(const struct img *a, const struct img *b)
{
    int m = 0;

    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < a->w * a->ch; x++) {
            int d = abs((int)a->px[(size_t)y * a->stride + x] - (int)b->px[(size_t)y * b->stride + x]);
            m = d > m ? d : m;
        }
    return m;
}

static void test_jpeg_round_trip(void)
{
    char err[EDGED_ERR_LEN];

    for (int ch = 1; ch <= 4; ch++) {
        struct img im = {0}, out = {0};
        uint8_t *jpg = NULL;
        size_t len = 0;
        struct imageio_head head;
        CHECK(img_alloc(&im, 37, 29, ch, err) == 0, "alloc");
        fill(&im, (unsigned)ch);
        CHECK(jpegio_encode(&im, 100, &jpg, &len, err) == 0, "encode ch %d: %s", ch, err);
        CHECK(imageio_peek(jpg, len, NULL, &head, err) == 0 && head.fmt == IMAGEIO_JPEG, "peek ch %d: %s", ch,
              err);
        CHECK(head.ch == (ch <= 2 ? 1 : 3) && head.jpeg.sub == (ch <= 2 ? JPEGIO_SUB_GRAY : JPEGIO_SUB_420),
              "ch %d: head ch %d sub %s", ch, head.ch, jpegio_subsamp_name(head.jpeg.sub));
        CHECK(imageio_decode(jpg, len, NULL, &head, 1, &out, err) == 0, "decode ch %d: %s", ch, err);
        if (ch == 1 || ch == 3)
            CHECK(max_err(&im, &out) <= (ch == 1 ? 2 : 12), "ch %d: max error %d", ch, max_err(&im, &out));
        img_free(&out);
        /* every prefix of the file is refused, never a partial image, and none is complete */
        CHECK(jpegio_complete(jpg, len), "ch %d: the whole file is complete", ch);
        for (size_t cut = 0; cut < len; cut += cut < 700 ? 1 : 97) {
            int rc = imageio_load(jpg, cut, NULL, 1, &out, err);
            CHECK(rc < 0 && !out.px, "ch %d prefix %zu/%zu: rc %d", ch, cut, len, rc);
            CHECK(!jpegio_complete(jpg, cut), "ch %d prefix %zu/%zu complete", ch, cut, len);
            img_free(&out);
        }
        CHECK(!jpegio_complete(jpg, len - 1), "ch %d: without the EOI's last byte", ch);
        uint8_t *tail = realloc(jpg, len + 3);
        CHECK(tail != NULL, "realloc");
        if (tail) {
            jpg = tail;
            memcpy(jpg + len, "\xFF\x12z", 3); /* bytes after the EOI, as some cameras write */
            CHECK(jpegio_complete(jpg, len + 3), "ch %d: trailing bytes after the EOI", ch);
        }
        free(jpg);
        jpg = NULL;
        CHECK(jpegio_encode(&im, 0, &jpg, &len, err) == EDGED_E_PARAM && !jpg, "quality 0");
        img_free(&im);
    }
}

static void test_webp(void)
{
    char err[EDGED_ERR_LEN];
    struct img im = {0}, out = {0};
    uint8_t *wp = NULL;
    size_t len;
    struct imageio_head head;

    CHECK(img_alloc(&im, 23, 17, 4, err) == 0, "alloc");
    fill(&im, 3);
    for (int y = 0; y < im.h; y++)
        for (int x = 0; x < im.w; x++)
            im.px[(size_t)y * im.stride + 4 * x + 3] = (uint8_t)(255 - x); /* alpha not opaque */
    len = WebPEncodeLosslessRGBA(im.px, im.w, im.h, (int)im.stride, &wp);
    CHECK(len > 0, "webp encode");
    CHECK(imageio_peek(wp, len, NULL, &head, err) == 0 && head.fmt == IMAGEIO_WEBP && head.ch == 4 &&
              head.webp.lossless,
          "webp peek: %s", err);
    CHECK(imageio_decode(wp, len, NULL, &head, 1, &out, err) == 0 && img_same(&im, &out),
          "webp lossless exact: %s", err);
    img_free(&out);
    for (size_t cut = 0; cut < len; cut++) {
        int rc = imageio_load(wp, cut, NULL, 1, &out, err);
        CHECK(rc < 0 && !out.px, "webp prefix %zu/%zu: %d", cut, len, rc);
        img_free(&out);
    }
    WebPFree(wp);
    img_free(&im);
}

/* im (3 channels) as a JPEG of quality 95 with luma sampling hv[0] and chroma hv[1] (h << 4 | v),
 * progressive (libjpeg's default script) when prog; malloc'd into *out (libjpeg's jpeg_mem_dest). */
static void libjpeg_encode(const struct img *im, const int hv[2], int prog, unsigned char **out, unsigned long *len)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;

    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, out, len);
    c.image_width = (JDIMENSION)im->w;
    c.image_height = (JDIMENSION)im->h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 95, TRUE);
    for (int i = 0; i < 3; i++) {
        c.comp_info[i].h_samp_factor = hv[i > 0] >> 4;
        c.comp_info[i].v_samp_factor = hv[i > 0] & 15;
    }
    if (prog)
        jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = im->px + (size_t)c.next_scanline * im->stride;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
}

static double psnr(const struct img *a, const struct img *b)
{
    double se = 0.0;
    size_t n = 0;

    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < a->w * a->ch; x++, n++) {
            double d = (double)a->px[(size_t)y * a->stride + x] - (double)b->px[(size_t)y * b->stride + x];
            se += d * d;
        }
    return se == 0.0 ? 99.0 : 10.0 * log10(255.0 * 255.0 * (double)n / se);
}

/* Sampling factors TurboJPEG's header call has no name for (4:1:0, 1x3, 1x4, 2x4, 3x1, chroma
 * above 1x1) decode, baseline and progressive, to the size and channels the peek announced and
 * close to the source; the peek counts the scans (1 baseline; libjpeg's script: 10). */
static void test_jpeg_samplings(void)
{
    static const int hv[][2] = {{0x42, 0x11}, {0x13, 0x11}, {0x14, 0x11}, {0x24, 0x11}, {0x31, 0x11},
                                {0x22, 0x21}, {0x41, 0x11}, {0x22, 0x11}};
    char err[EDGED_ERR_LEN];
    struct img im = {0};

    CHECK(img_alloc(&im, 61, 47, 3, err) == 0, "alloc");
    fill(&im, 9);
    for (size_t i = 0; i < sizeof(hv) / sizeof(hv[0]); i++)
        for (int prog = 0; prog <= 1; prog++) {
            unsigned char *jpg = NULL;
            unsigned long len = 0;
            struct imageio_head head;
            struct img out = {0};
            libjpeg_encode(&im, hv[i], prog, &jpg, &len);
            CHECK(imageio_peek(jpg, len, NULL, &head, err) == 0 && head.ch == 3 && head.w == 61 && head.h == 47,
                  "%dx%d/%dx%d prog %d: peek %s", hv[i][0] >> 4, hv[i][0] & 15, hv[i][1] >> 4, hv[i][1] & 15, prog,
                  err);
            CHECK(head.jpeg.scans == (prog ? 10 : 1), "%02x prog %d: %d scans", hv[i][0], prog, head.jpeg.scans);
            CHECK(imageio_decode(jpg, len, NULL, &head, 1, &out, err) == 0 && out.w == 61 && out.h == 47 &&
                      out.ch == 3,
                  "%02x/%02x prog %d: decode %s", hv[i][0], hv[i][1], prog, err);
            CHECK(out.px && psnr(&im, &out) >= 30.0, "%02x/%02x prog %d: PSNR %.1f dB", hv[i][0], hv[i][1], prog,
                  out.px ? psnr(&im, &out) : 0.0);
            img_free(&out);
            free(jpg);
        }
    img_free(&im);
}

/* The scan limit is judged from the peek's count, before any decode. */
static void test_scan_limit(void)
{
    struct jpegio_info info = {.scans = JPEGIO_MAX_SCANS};
    char err[EDGED_ERR_LEN] = "";

    CHECK(jpegio_check_scans(&info, err) == 0, "%d scans: %s", info.scans, err);
    info.scans = JPEGIO_MAX_SCANS + 1;
    CHECK(jpegio_check_scans(&info, err) == EDGED_E_BAD_IMAGE && strstr(err, "501") && strstr(err, "500"),
          "%d scans: %s", info.scans, err);
}

/* im through webpio_encode and back through libwebp's own decoder, as RGBA: lossless gives every
 * sample (gray expanded to RGB; the colour under alpha 0 kept too), lossy at quality 90 a PSNR of
 * at least 35 dB on this smooth image and alpha exact. */
static void webp_round_trip(const struct img *im, int lossless)
{
    char err[EDGED_ERR_LEN];
    uint8_t *wp = NULL, *back = NULL;
    size_t len = 0;
    int w = 0, h = 0, alpha = im->ch == 2 || im->ch == 4;
    struct img want = {0}, got = {0};

    CHECK(webpio_encode(im, lossless, 90, &wp, &len, err) == 0 && len > 12, "encode ch %d lossless %d: %s", im->ch,
          lossless, err);
    back = wp ? WebPDecodeRGBA(wp, len, &w, &h) : NULL;
    CHECK(back && w == im->w && h == im->h, "libwebp decode ch %d", im->ch);
    if (back && img_alloc(&want, im->w, im->h, 4, err) == 0) {
        for (int y = 0; y < im->h; y++)
            for (int x = 0; x < im->w; x++) {
                const uint8_t *s = im->px + (size_t)y * im->stride + (size_t)x * im->ch;
                uint8_t *d = want.px + (size_t)y * want.stride + 4 * (size_t)x;
                d[0] = s[0], d[1] = s[im->ch >= 3], d[2] = s[im->ch >= 3 ? 2 : 0], d[3] = alpha ? s[im->ch - 1] : 255;
            }
        got = (struct img){im->w, im->h, 4, 4 * (size_t)im->w, back, 0};
        if (lossless)
            CHECK(img_same(&want, &got), "ch %d: lossless round trip differs (max %d)", im->ch, img_max_diff(&want, &got));
        else
            CHECK(psnr(&want, &got) >= 35.0, "ch %d: lossy PSNR %.1f dB", im->ch, psnr(&want, &got));
        for (size_t i = 3; alpha && !lossless && i < want.stride * (size_t)want.h; i += 4)
            if (want.px[i] != back[i]) {
                CHECK(0, "ch %d: lossy alpha differs at %zu", im->ch, i / 4);
                break;
            }
    }
    img_free(&want);
    WebPFree(back);
    free(wp);
}

static void test_webp_encode(void)
{
    char err[EDGED_ERR_LEN];
    struct img im = {0}, packed = {0};
    uint8_t *out = NULL;
    size_t len = 0;

    for (int ch = 1; ch <= 4; ch++)
        for (int lossless = 0; lossless <= 1; lossless++) {
            CHECK(img_alloc(&im, 37, 29, ch, err) == 0, "alloc");
            fill(&im, (unsigned)ch);
            if (ch == 4) /* transparent pixels of several colours: lossless keeps their colour */
                for (int x = 0; x < im.w; x++)
                    im.px[4 * (size_t)x + 3] = 0;
            webp_round_trip(&im, lossless);
            img_free(&im);
        }
    /* a packed 1-bit map is written as 0/255 */
    CHECK(img_alloc(&im, 20, 3, 1, err) == 0, "alloc");
    packed = (struct img){20, 3, 1, 3, calloc(9, 1), 1};
    for (int y = 0; packed.px && y < 3; y++)
        for (int x = 0; x < 20; x++)
            if ((x + y) % 3 == 0) {
                packed.px[(size_t)y * 3 + (x >> 3)] |= (uint8_t)(0x80 >> (x & 7));
                im.px[(size_t)y * im.stride + x] = 255;
            }
    if (packed.px) {
        uint8_t *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        CHECK(webpio_encode(&packed, 1, 90, &a, &alen, err) == 0 && webpio_encode(&im, 1, 90, &b, &blen, err) == 0 &&
                  alen == blen && memcmp(a, b, alen) == 0,
              "packed map and its 0/255 twin encode alike: %s", err);
        free(a);
        free(b);
    }
    free(packed.px);
    img_free(&im);
    /* refusals: a side past WebP's, a quality out of range (lossy only) */
    im = (struct img){WEBPIO_MAX_SIDE + 1, 1, 1, WEBPIO_MAX_SIDE + 1, NULL, 0};
    uint8_t one = 0;
    im.px = &one;
    CHECK(webpio_encode(&im, 1, 90, &out, &len, err) == EDGED_E_PARAM && !out && strstr(err, "16383"), "side: %s",
          err);
    CHECK(imageio_check_output(IMAGEIO_OUT_WEBP, WEBPIO_MAX_SIDE + 1, 1, err) == EDGED_E_PARAM &&
              imageio_check_output(IMAGEIO_OUT_WEBP, WEBPIO_MAX_SIDE, 1, err) == 0 &&
              imageio_check_output(IMAGEIO_OUT_PNG, 65535, 1, err) == 0,
          "check_output: %s", err);
    im = (struct img){1, 1, 1, 1, &one, 0};
    CHECK(webpio_encode(&im, 0, 0, &out, &len, err) == EDGED_E_PARAM && !out, "quality 0: %s", err);
    CHECK(webpio_encode(&im, 0, 101, &out, &len, err) == EDGED_E_PARAM && !out, "quality 101: %s", err);
}

static void test_sniff_and_orient(void)
{
    char err[EDGED_ERR_LEN];
    static const uint8_t damaged[] = "\x89PNX\r\n\x1a\n\0\0\0\rIHDR";
    struct img im = {0};

    CHECK(imageio_sniff((const uint8_t *)"GIF89a......", 12, err) == EDGED_E_NOT_PNG && strstr(err, "WebP"),
          "gif");
    CHECK(imageio_sniff(damaged, sizeof(damaged) - 1, err) == EDGED_E_BAD_PNG, "damaged PNG signature");
    CHECK(imageio_sniff((const uint8_t *)"RIFF\0\0\0\0WEBPVP8 ", 16, err) == IMAGEIO_WEBP, "webp");
    CHECK(imageio_sniff((const uint8_t *)"\xFF\xD8\xFF", 3, err) == IMAGEIO_JPEG, "jpeg");
    /* 3x2, samples 0..5 row-major: orientation 6 (rotate clockwise) gives 2x3 [3 0; 4 1; 5 2],
     * 8 gives [2 5; 1 4; 0 3], 5 (transpose) [0 3; 1 4; 2 5], 7 [5 2; 4 1; 3 0] */
    static const uint8_t want[9][6] = {{0},
                                       {0, 1, 2, 3, 4, 5},
                                       {2, 1, 0, 5, 4, 3},
                                       {5, 4, 3, 2, 1, 0},
                                       {3, 4, 5, 0, 1, 2},
                                       {0, 3, 1, 4, 2, 5},
                                       {3, 0, 4, 1, 5, 2},
                                       {5, 2, 4, 1, 3, 0},
                                       {2, 5, 1, 4, 0, 3}};
    for (int o = 1; o <= 8; o++) {
        CHECK(img_alloc(&im, 3, 2, 1, err) == 0, "alloc");
        for (int i = 0; i < 6; i++)
            im.px[i] = (uint8_t)i;
        CHECK(imageio_orient(&im, o, err) == 0, "orient %d", o);
        CHECK((o >= 5 ? im.w == 2 && im.h == 3 : im.w == 3 && im.h == 2) && memcmp(im.px, want[o], 6) == 0,
              "orientation %d: %d %d %d %d %d %d", o, im.px[0], im.px[1], im.px[2], im.px[3], im.px[4],
              im.px[5]);
        img_free(&im);
    }
}

int main(void)
{
    test_peek_kinds();
    test_peek_refusals();
    test_orientation();
    test_jpeg_round_trip();
    test_webp();
    test_jpeg_samplings();
    test_scan_limit();
    test_webp_encode();
    test_sniff_and_orient();
    return check_summary();
}
