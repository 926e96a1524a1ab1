/* test_gpu_png.c — PNG decoded on the device (gpu/gconv_png.cu, png_kernels.cu, the device inflate)
 * against pngio_decode, bit for bit: every PngSuite file whose layout the device takes (the others,
 * and every x*.png, refused or declined, then judged by the CPU decoder as before); generated images
 * of every kind the device takes, widths 1..67, each of the five filter types forced and the
 * adaptive choice, batched 32 at a time and one at a time; inflated streams made here for the
 * unfilter kernel (random rows, bpp 1..4, widths from 1, heights from 1 row to many bands, each
 * filter type alone, mixed, chained, and a type over 4 that must be declined; and a dense grid of
 * every type on every bpp, widths 1..40 and about 32 and 64 words, heights 1..70) against
 * png_unfilter.c; large images; PNG jobs through gconv_submit_png against the CPU-decoded pixels
 * through gconv_submit, with the streams staged by gconv and uploaded from the pinned pool
 * (gpu/gpinned.h) alike; a damaged stream ends its job with GCONV_E_PNG_DECLINED. The random
 * samples' seed is printed. Skips without a GPU; EDGED_REQUIRE_GPU=1 fails instead.
 * EDGED_GPU_QUICK=1 (compute-sanitizer): every fifth width of the generated files, every third of
 * the made streams and of the grid's widths, no large images. The device inflate places blocks as
 * the knob's default says; EDGED_GPU_INFLATE_SEG (0 or 1) chooses, as it does for edged. */
#include <dirent.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "clock.h"
#include "filter.h"
#include "gconv.h"
#include "gpinned.h"
#include "image.h"
#include "imgdiff.h"
#include "inflate_spec.h"
#include "png_layout.h"
#include "pngbuf.h"
#include "pngwrite.h"
#include "codec/png_decode.h"
#include "codec/png_io.h"
#include "codec/png_unfilter.h"

#define NSTREAMS 4
#define BATCH GCONV_PNG_MAX_BATCH

static const int filters[] = {PNG_FILTER_NONE, PNG_FILTER_SUB, PNG_FILTER_UP, PNG_FILTER_AVG, PNG_FILTER_PAETH,
                              PNG_ALL_FILTERS};
static const char *const filter_names[] = {"none", "sub", "up", "avg", "paeth", "adaptive"};
#define NFILTERS ((int)(sizeof(filters) / sizeof(filters[0])))

static int quick; /* EDGED_GPU_QUICK set */

/* One PNG file and what the host side makes of it. */
struct pfile {
    char name[96];
    struct buf b;
    struct png_layout lay;
    const uint8_t *z;
    size_t z_len;
    uint8_t *join;
    int layout_rc; /* pngdec_layout's answer: 0 the device may take it */
};

static void pfile_layout(struct pfile *f)
{
    char err[EDGED_ERR_LEN];

    f->layout_rc = pngdec_layout(f->b.p, f->b.len, &f->lay, &f->z, &f->z_len, &f->join, err);
}

static void pfile_free(struct pfile *f)
{
    free(f->join);
    free(f->b.p);
    memset(f, 0, sizeof(*f));
}

/* Device decode of the n (1..BATCH) files fp[i] (layouts taken) in one call, batched or one at a
 * time, into out and rcs as gconv_png_decode_host gives them; 0, or -1 after a failed check. */
static int decode_files(struct gconv_ctx *ctx, struct pfile *const *fp, int n, int batched, struct img *out,
                        int *rcs)
{
    const struct png_layout *lay[BATCH] = {0};
    const uint8_t *z[BATCH] = {0};
    size_t zl[BATCH] = {0};
    char err[EDGED_ERR_LEN];

    for (int i = 0; i < n; i++)
        lay[i] = &fp[i]->lay, z[i] = fp[i]->z, zl[i] = fp[i]->z_len;
    if (gconv_png_decode_host(ctx, n, lay, z, zl, batched, out, rcs, NULL, err) < 0) {
        CHECK(0, "gconv_png_decode_host (%s...): %s", fp[0]->name, err);
        return -1;
    }
    return 0;
}

/* Device decode of fs[0..n) (layouts taken) in one call, each compared with pngio_decode. Counts
 * the images equal and those the device declined into *equal and *declined. */
static void decode_compare(struct gconv_ctx *ctx, struct pfile *fs, int n, int batched, int *equal, int *declined)
{
    struct pfile *fp[BATCH] = {0};
    struct img out[BATCH];
    int rcs[BATCH];
    char err[EDGED_ERR_LEN];

    for (int i = 0; i < n; i++)
        fp[i] = &fs[i];
    if (decode_files(ctx, fp, n, batched, out, rcs) < 0)
        return;
    for (int i = 0; i < n; i++) {
        struct img ref = {0};
        int rc = pngio_decode(fs[i].b.p, fs[i].b.len, NULL, &ref, err);
        if (rcs[i] == GCONV_E_PNG_DECLINED) {
            (*declined)++; /* the CPU's verdict stands: nothing to compare */
        } else {
            CHECK(rcs[i] == 0, "%s: device rc %d", fs[i].name, rcs[i]);
            CHECK(rc == 0, "%s: the device decoded what pngio_decode refuses (%s)", fs[i].name, err);
            if (rcs[i] == 0 && rc == 0) {
                int same = img_same(&out[i], &ref);
                CHECK(same, "%s: device pixels differ from pngio_decode (max diff %d)", fs[i].name,
                      out[i].ch == ref.ch ? imgdiff_max(&out[i], &ref) : -1);
                *equal += same;
            }
        }
        img_free(&ref);
        img_free(&out[i]);
    }
}

/* PngSuite: the files the device takes decode to pngio_decode's pixels; every x*.png is refused by
 * the layout or declined by the device, and refused by the CPU decoder with its message. */
static void test_pngsuite(struct gconv_ctx *ctx)
{
    DIR *d = opendir(suite_dir());
    struct dirent *e;
    int taken = 0, equal = 0, declined = 0, refused = 0, corrupt = 0;

    if (!d) {
        SKIP("PngSuite not found at %s", suite_dir());
        return;
    }
    while ((e = readdir(d))) {
        struct pfile f;
        struct pngio_info info;
        struct img ref = {0};
        char path[512], err[EDGED_ERR_LEN];
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".png") != 0)
            continue;
        memset(&f, 0, sizeof(f));
        snprintf(path, sizeof(path), "%s/%s", suite_dir(), e->d_name);
        snprintf(f.name, sizeof(f.name), "%s", e->d_name);
        if (!(f.b.p = read_file(path, &f.b.len)))
            continue;
        if (pngio_peek(f.b.p, f.b.len, &info, err) == 0) /* the endpoint's header check comes first */
            pfile_layout(&f);
        else
            f.layout_rc = PNGDEC_DECLINED;
        if (f.layout_rc == 0) {
            int before = declined;
            taken++;
            decode_compare(ctx, &f, 1, 1, &equal, &declined);
            if (e->d_name[0] == 'x')
                CHECK(declined > before, "%s: a corrupt file decoded on the device", e->d_name);
        } else {
            refused++;
        }
        if (e->d_name[0] == 'x') {
            int rc = pngio_decode(f.b.p, f.b.len, NULL, &ref, err);
            CHECK(rc < 0, "%s: corrupt file decoded on the CPU", e->d_name);
            printf("  %s: %s, CPU: %s\n", e->d_name, f.layout_rc ? "refused" : "declined on the device", err);
            corrupt++;
            img_free(&ref);
        }
        pfile_free(&f);
    }
    closedir(d);
    printf("PngSuite: %d taken by the device (%d equal to pngio_decode, %d declined), %d refused, %d corrupt\n",
           taken, equal, declined, refused, corrupt);
    CHECK(taken >= 40 && corrupt >= 14, "PngSuite: %d taken, %d corrupt", taken, corrupt);
}

/* Generated images of every kind the device takes, widths 1..67, each filter choice: batches of
 * BATCH files in one call, and the first batch again one at a time. */
static void test_generated(struct gconv_ctx *ctx)
{
    static struct pfile fs[BATCH];
    int nf = 0, cases = 0, equal = 0, declined = 0, first = 1;

    for (size_t i = 0; i < NKINDS; i++) {
        if (!fast_kind(&kinds[i]))
            continue;
        for (int w = 1; w <= 67; w += quick ? 5 : 1) {
            int h = 1 + (int)((w * 7 + i * 3) % 40), f = (w + (int)i) % NFILTERS;
            struct pfile *p = &fs[nf++];
            p->b = write_kind_filtered(&kinds[i], w, h, w % 3 == 0 ? 64 : 8192, filters[f]);
            snprintf(p->name, sizeof(p->name), "color %d depth %d trns %d %dx%d %s", kinds[i].color,
                     kinds[i].depth, kinds[i].trns, w, h, filter_names[f]);
            pfile_layout(p);
            CHECK(p->layout_rc == 0, "%s: layout refused", p->name);
            if (p->layout_rc != 0) {
                pfile_free(p);
                nf--;
                continue;
            }
            cases++;
            if (nf == BATCH) {
                decode_compare(ctx, fs, nf, 1, &equal, &declined);
                if (first) /* one at a time gives the same */
                    decode_compare(ctx, fs, nf, 0, &equal, &declined), first = 0, cases += nf;
                for (int k = 0; k < nf; k++)
                    pfile_free(&fs[k]);
                nf = 0;
            }
        }
    }
    if (nf)
        decode_compare(ctx, fs, nf, 1, &equal, &declined);
    for (int k = 0; k < nf; k++)
        pfile_free(&fs[k]);
    printf("generated: %d decodes, %d equal to pngio_decode, %d declined by the device inflate\n", cases, equal,
           declined);
    CHECK(equal + declined == cases, "generated: %d equal + %d declined of %d", equal, declined, cases);
}

/* Large images, each forced filter, and the time of a batch of BATCH copies against one image. */
static void test_large(struct gconv_ctx *ctx)
{
    static const struct kind big[] = {{2, 8, 0}, {6, 8, 0}, {0, 8, 0}, {3, 8, 100}, {4, 8, 0}, {2, 8, 1}};
    static const int sizes[][2] = {{2048, 2048}, {1999, 1037}, {4096, 300}, {777, 1501}, {300, 4100}, {1024, 768}};
    const struct png_layout *lay[BATCH];
    const uint8_t *z[BATCH];
    size_t zl[BATCH];
    struct img out[BATCH];
    int rcs[BATCH], equal = 0, declined = 0;
    char err[EDGED_ERR_LEN];

    for (int i = 0; i < (int)(sizeof(big) / sizeof(big[0])); i++) {
        for (int f = 0; f < NFILTERS; f += i == 0 ? 1 : NFILTERS - 1) {
            struct pfile p;
            memset(&p, 0, sizeof(p));
            p.b = write_kind_filtered(&big[i], sizes[i][0], sizes[i][1], 8192, filters[f]);
            snprintf(p.name, sizeof(p.name), "color %d trns %d %dx%d %s", big[i].color, big[i].trns, sizes[i][0],
                     sizes[i][1], filter_names[f]);
            pfile_layout(&p);
            CHECK(p.layout_rc == 0, "%s: layout refused", p.name);
            if (p.layout_rc == 0)
                decode_compare(ctx, &p, 1, 1, &equal, &declined);
            if (i == 0 && f == NFILTERS - 1 && p.layout_rc == 0) {
                double one = 0, many = 0;
                for (int k = 0; k < BATCH; k++)
                    lay[k] = &p.lay, z[k] = p.z, zl[k] = p.z_len;
                if (gconv_png_decode_host(ctx, 1, lay, z, zl, 1, out, rcs, &one, err) == 0)
                    img_free(&out[0]);
                if (gconv_png_decode_host(ctx, BATCH, lay, z, zl, 1, out, rcs, &many, err) == 0)
                    for (int k = 0; k < BATCH; k++)
                        img_free(&out[k]);
                printf("%s: one image %.2f ms, a batch of %d %.2f ms (wall, uploads included, one run)\n", p.name,
                       one, BATCH, many);
            }
            pfile_free(&p);
        }
    }
    printf("large: %d equal to pngio_decode, %d declined by the device inflate\n", equal, declined);
}

/* ---- the unfilter kernel on streams made here ---- */

/* Filter types of a stream's rows: random among the five; only those that read the row above (so
 * that every band waits for the one above); one type forced; random with one type over 4. */
enum { PAT_MIXED, PAT_CHAINED, PAT_NONE, PAT_SUB, PAT_UP, PAT_AVG, PAT_PAETH, PAT_BAD, NPATS };
static const char *const pat_names[NPATS] = {"mixed", "chained", "none", "sub", "up", "avg", "paeth", "bad type"};

/* An 8-bit gray, gray+alpha, RGB or RGBA image (bpp 1..4) whose inflated stream is made here: rows
 * of random bytes under the filter types of a pattern, compressed by zlib; want holds the rows
 * png_unfilter.c makes of them, which are the decoded pixels. */
struct ustream {
    struct pfile f; /* name, lay, z and z_len */
    uint8_t *z, *want;
    int bad;        /* a filter type over 4: the device must decline it */
    int inflate_ok; /* the device inflate's verdict, known from its host twin inflspec_decode */
};

static int ustream_make(struct ustream *u, int bpp, int w, uint32_t h, int pat)
{
    static const int colors[5] = {0, PNG_COLOR_GRAY, PNG_COLOR_GRAY_ALPHA, PNG_COLOR_RGB, PNG_COLOR_RGBA};
    const size_t rb = (size_t)w * bpp, raw = (rb + 1) * h;
    uint8_t *buf = malloc(PNGUNF_LEAD(rb) + raw + PNGUNF_SLACK), *s = buf + PNGUNF_LEAD(rb), *inflated;
    uLongf zl = compressBound(raw);
    uint32_t bad_row = check_rng() % h;
    char err[EDGED_ERR_LEN];
    int rc;

    memset(u, 0, sizeof(*u));
    u->f.lay = (struct png_layout){.w = (uint32_t)w, .h = h, .depth = 8, .color = colors[bpp], .bpp = bpp,
                                   .out_ch = bpp, .rowbytes = rb};
    snprintf(u->f.name, sizeof(u->f.name), "bpp %d %dx%u %s", bpp, w, h, pat_names[pat]);
    u->want = buf; /* rb * h bytes of pixels at its start once unfiltered */
    u->z = malloc(zl);
    if (!buf || !u->z)
        return -1;
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *row = s + y * (rb + 1);
        row[0] = (uint8_t)(pat >= PAT_NONE && pat <= PAT_PAETH ? (unsigned)(pat - PAT_NONE) : check_rng() % 5);
        if (pat == PAT_CHAINED)
            row[0] = (uint8_t)(2 + check_rng() % 3);
        if (pat == PAT_BAD && y == bad_row)
            row[0] = (uint8_t)(5 + check_rng() % 251);
        for (size_t i = 1; i <= rb; i++)
            row[i] = (uint8_t)check_rng();
    }
    CHECK(compress2(u->z, &zl, s, raw, 1) == Z_OK, "%s: compress2", u->f.name);
    u->f.z = u->z, u->f.z_len = zl;
    if ((inflated = malloc(raw))) /* the same verdict as the device's, by its algorithm */
        u->inflate_ok = inflspec_decode(u->z, zl, inflated, raw, NULL) == 0;
    free(inflated);
    rc = pngunf_rows(buf, rb, h, bpp, err);
    CHECK(rc == (pat == PAT_BAD ? PNGUNF_BAD_FILTER : 0), "%s: pngunf_rows %d (%s)", u->f.name, rc, err);
    u->bad = pat == PAT_BAD;
    return 0;
}

static void ustream_free(struct ustream *u)
{
    free(u->z);
    free(u->want);
    memset(u, 0, sizeof(*u));
}

/* Device decode of us[0..n) in one call: each image equal to its want, or declined when it has a
 * bad filter type or its inflate declines (counted). */
static void ustream_compare(struct gconv_ctx *ctx, struct ustream *us, int n, int batched, int *equal,
                            int *declined, int *bad)
{
    struct pfile *fp[BATCH] = {0};
    struct img out[BATCH];
    int rcs[BATCH];

    for (int i = 0; i < n; i++)
        fp[i] = &us[i].f;
    if (decode_files(ctx, fp, n, batched, out, rcs) < 0)
        return;
    for (int i = 0; i < n; i++) {
        const struct png_layout *lay = &us[i].f.lay;
        if (us[i].bad || !us[i].inflate_ok) {
            CHECK(rcs[i] == GCONV_E_PNG_DECLINED, "%s: device rc %d, not declined", us[i].f.name, rcs[i]);
            *(us[i].inflate_ok ? bad : declined) += rcs[i] == GCONV_E_PNG_DECLINED;
        } else {
            int same = rcs[i] == 0 && memcmp(out[i].px, us[i].want, lay->rowbytes * lay->h) == 0;
            CHECK(same, "%s: device rc %d, rows differ from png_unfilter.c", us[i].f.name, rcs[i]);
            *equal += same;
        }
        img_free(&out[i]);
    }
}

/* Made streams decoded BATCH at a time (the first batch also one at a time), with the tallies. */
struct urun {
    struct ustream us[BATCH];
    int n, cases, equal, declined, bad, bads, done_single;
};

static void urun_flush(struct gconv_ctx *ctx, struct urun *u)
{
    if (u->n) {
        ustream_compare(ctx, u->us, u->n, 1, &u->equal, &u->declined, &u->bad);
        if (!u->done_single) /* one at a time gives the same */
            ustream_compare(ctx, u->us, u->n, 0, &u->equal, &u->declined, &u->bad), u->done_single = 1;
    }
    for (int k = 0; k < u->n; k++)
        ustream_free(&u->us[k]);
    u->n = 0;
}

static void urun_add(struct gconv_ctx *ctx, struct urun *u, int bpp, int w, uint32_t h, int pat)
{
    if (ustream_make(&u->us[u->n], bpp, w, h, pat) < 0) {
        CHECK(0, "out of memory");
        ustream_free(&u->us[u->n]);
        return;
    }
    u->cases++, u->bads += pat == PAT_BAD;
    if (++u->n == BATCH)
        urun_flush(ctx, u);
}

static void urun_report(struct gconv_ctx *ctx, struct urun *u, const char *what)
{
    urun_flush(ctx, u);
    printf("%s: %d images (%d with a bad filter type, declined %d times), %d decodes equal to "
           "png_unfilter.c, %d declined by the device inflate as by inflspec_decode\n",
           what, u->cases, u->bads, u->bad, u->equal, u->declined);
    CHECK(u->equal > 0 && u->bad > 0, "%s: %d equal, %d bad declined", what, u->equal, u->bad);
}

/* The unfilter kernel's cases on streams made here: bpp 1..4, widths from 1 (rows of every
 * alignment), heights from 1 row to many bands of rows and partial bands, every filter type alone,
 * mixed, chained from the first row to the last, and a bad type; batches of BATCH mixed sizes, the
 * first also one at a time. Each image the device inflates is equal to png_unfilter.c's rows (none
 * declined by the unfilter's wait bound), or declined for its bad type. */
static void test_unfilter(struct gconv_ctx *ctx)
{
    static const int widths[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 33, 64, 67, 130};
    static const uint32_t heights[] = {1, 2, 31, 32, 33, 63, 64, 65, 97, 2049};
    static struct urun u;

    memset(&u, 0, sizeof(u));
    for (int bpp = 1; bpp <= 4; bpp++)
        for (int hi = 0; hi < (int)(sizeof(heights) / sizeof(heights[0])); hi++)
            for (int wi = quick ? (bpp + hi) % 3 : 0; wi < (int)(sizeof(widths) / sizeof(widths[0]));
                 wi += quick ? 3 : 1)
                urun_add(ctx, &u, bpp, widths[wi], heights[hi], (bpp * 7 + hi * 3 + wi) % NPATS);
    urun_report(ctx, &u, "unfilter");
}

/* The kernel's step per filter type and byte position, densely: for each bpp 1..4 every width of
 * 1..40 pixels and those whose rows end about 32 and 64 words (a chunk is a word, a band 32 rows),
 * each under every pattern (each type alone on every row, random types per row, chained, one bad
 * row), at heights 1..70 taken in turn (one row, partial bands, a band and a row, two bands and a
 * few rows). The rows' first and last words, the lanes before and after their rows' chunks and
 * the mailbox between bands all meet every alignment (rows are rowbytes + 1 bytes apart). */
static void test_unfilter_grid(struct gconv_ctx *ctx)
{
    static const uint32_t heights[] = {1, 2, 3, 4, 5, 7, 31, 32, 33, 34, 63, 64, 65, 66, 70};
    const int nh = (int)(sizeof(heights) / sizeof(heights[0]));
    static struct urun u;
    int turn = 0;

    memset(&u, 0, sizeof(u));
    for (int bpp = 1; bpp <= 4; bpp++) {
        int widths[40 + 12], nw = 0;
        for (int w = 1; w <= 40; w++)
            widths[nw++] = w;
        for (int words = 32; words <= 64; words += 32) /* rowbytes 4 * words - 3 .. 4 * words + 3 */
            for (int d = -3; d <= 3; d += 2) {
                int w = (4 * words + d) / bpp;
                if (w > 40 && (nw == 0 || widths[nw - 1] != w))
                    widths[nw++] = w;
            }
        for (int wi = quick ? bpp % 3 : 0; wi < nw; wi += quick ? 3 : 1)
            for (int pat = 0; pat < NPATS; pat++)
                urun_add(ctx, &u, bpp, widths[wi], heights[turn++ % nh], pat);
    }
    urun_report(ctx, &u, "unfilter grid");
}

static int finish(struct gconv_ctx *ctx, int s, struct img *out, char *err)
{
    int p;

    while ((p = gconv_poll(ctx, s)) == 0)
        ;
    return gconv_finish(ctx, s, out, NULL, err);
}

/* PNG jobs on NSTREAMS streams in one call against the same images decoded on the CPU through
 * gconv_submit: equal outputs. The last job's stream is damaged (its Adler-32 flipped): that job
 * ends with GCONV_E_PNG_DECLINED and the stream takes the next job. pinned: each stream is first
 * copied into a buffer of the pinned pool (gpu/gpinned.h) and uploaded from there (z_pinned), as
 * the service's jobs are; the outputs must equal the CPU's as the staged ones do. */
static void test_jobs(struct gconv_ctx *ctx, enum variant v, int pinned)
{
    static const struct kind ks[NSTREAMS] = {{2, 8, 0}, {6, 8, 0}, {3, 4, 3}, {2, 8, 0}};
    static const int chans[NSTREAMS] = {3, 4, 4, 3};
    struct gconv_png_job jobs[NSTREAMS];
    struct pfile fs[NSTREAMS];
    struct filter_plan plans[NSTREAMS];
    struct filter_spec spec;
    uint8_t *bad = NULL, *pin[NSTREAMS] = {NULL};
    size_t pin_cap[NSTREAMS] = {0};
    char err[EDGED_ERR_LEN];
    int submitted;

    memset(jobs, 0, sizeof(jobs));
    memset(fs, 0, sizeof(fs));
    filter_spec_init(&spec, FILTER_GAUSSIAN5);
    for (int i = 0; i < NSTREAMS; i++) {
        CHECK(filter_plan_make(&spec, chans[i], &plans[i], err) == 0, "plan: %s", err);
        fs[i].b = write_kind(&ks[i], 301 + 16 * i, 203, 8192);
        pfile_layout(&fs[i]);
        CHECK(fs[i].layout_rc == 0, "job %d: layout refused", i);
        jobs[i] = (struct gconv_png_job){.s = i, .lay = &fs[i].lay, .z = fs[i].z, .z_len = fs[i].z_len,
                                         .plan = &plans[i], .v = v, .block = VARIANT_DEFAULT_BLOCK};
    }
    if ((bad = malloc(fs[NSTREAMS - 1].z_len))) {
        memcpy(bad, fs[NSTREAMS - 1].z, fs[NSTREAMS - 1].z_len);
        bad[fs[NSTREAMS - 1].z_len - 1] ^= 0x5a;
        jobs[NSTREAMS - 1].z = bad;
    }
    for (int i = 0; i < NSTREAMS && pinned; i++) {
        CHECK((pin[i] = gpinned_get(jobs[i].z_len, &pin_cap[i])) != NULL, "job %d: no pinned buffer", i);
        if (pin[i]) {
            memcpy(pin[i], jobs[i].z, jobs[i].z_len);
            jobs[i].z = pin[i], jobs[i].z_pinned = 1;
        }
    }
    submitted = gconv_submit_png(ctx, jobs, NSTREAMS);
    CHECK(submitted == NSTREAMS, "gconv_submit_png: %d of %d (%s)", submitted, NSTREAMS, jobs[0].err);
    for (int i = 0; i < NSTREAMS; i++) {
        struct img cpu = {0}, out_gpu = {0}, out_cpu = {0};
        int rc;
        CHECK(jobs[i].rc == 0, "job %d: %s", i, jobs[i].err);
        if (jobs[i].rc != 0)
            continue;
        CHECK(img_alloc(&out_gpu, jobs[i].w, jobs[i].h, plans[i].out_ch, err) == 0, "%s", err);
        rc = finish(ctx, i, &out_gpu, err);
        if (i == NSTREAMS - 1) {
            CHECK(rc == GCONV_E_PNG_DECLINED, "damaged job: rc %d (%s)", rc, err);
            printf("damaged stream: %s\n", err);
        } else if (rc != GCONV_E_PNG_DECLINED) { /* an undamaged stream the device inflate declined: fine */
            CHECK(rc == 0, "finish %d: %s", i, err);
        }
        CHECK(pngio_decode(fs[i].b.p, fs[i].b.len, NULL, &cpu, err) == 0, "%s", err);
        CHECK(img_alloc(&out_cpu, cpu.w, cpu.h, plans[i].out_ch, err) == 0, "%s", err);
        CHECK(gconv_submit(ctx, i, &cpu, &plans[i], v, VARIANT_DEFAULT_BLOCK, err) == 0, "submit: %s", err);
        CHECK(finish(ctx, i, &out_cpu, err) == 0, "finish: %s", err);
        if (rc == 0) {
            CHECK(img_same(&out_gpu, &out_cpu), "job %d (%s): max diff %d", i, variant_name(v),
                  imgdiff_max(&out_gpu, &out_cpu));
            printf("job %d %s %dx%dx%d, stream %s: PNG stream vs CPU pixels equal\n", i, variant_name(v),
                   out_gpu.w, out_gpu.h, cpu.ch, jobs[i].z_pinned ? "pinned" : "staged");
        }
        img_free(&cpu);
        img_free(&out_gpu);
        img_free(&out_cpu);
    }
    free(bad);
    for (int i = 0; i < NSTREAMS; i++) {
        gpinned_put(pin[i], pin_cap[i]); /* the jobs are finished: their uploads are over */
        pfile_free(&fs[i]);
    }
}

/* After the pinned jobs every buffer is back in the pool, which held some. */
static void test_pool_books(void)
{
    struct gpinned_stats st;

    gpinned_stats(&st);
    CHECK(st.in_use == 0 && st.allocs > 0 && st.held_bytes <= GPINNED_CAP_BYTES,
          "pinned pool: in_use %llu allocs %llu held %zu", st.in_use, st.allocs, st.held_bytes);
    printf("pinned pool: %llu buffers given out, %llu allocated, %zu bytes held\n", st.gets, st.allocs,
           st.held_bytes);
}

int main(void)
{
    struct gconv_ctx *ctx = NULL;
    char err[EDGED_ERR_LEN] = "";
    const char *req = getenv("EDGED_REQUIRE_GPU"), *seg = getenv("EDGED_GPU_INFLATE_SEG");
    int rc;

    check_rng_seed(check_seed());
    if (seg && *seg)
        check_knob("EDGED_GPU_INFLATE_SEG", seg);
    printf("device inflate: blocks placed %s (EDGED_GPU_INFLATE_SEG=%d)\n",
           tuning()->inflate_seg ? "in segments" : "one thread a block", tuning()->inflate_seg);
    quick = getenv("EDGED_GPU_QUICK") && atoi(getenv("EDGED_GPU_QUICK")) > 0;
    if ((rc = gconv_open(&ctx, 0, NSTREAMS, err)) < 0) {
        if (req && strcmp(req, "1") == 0)
            CHECK(rc == 0, "EDGED_REQUIRE_GPU=1 but no GPU: %s", err);
        else
            SKIP("device PNG tests: %s", err);
        return check_summary();
    }
    CHECK(gconv_png_available(ctx), "a CUDA build: the device PNG path must be available");
    test_pngsuite(ctx);
    test_generated(ctx);
    test_unfilter(ctx);
    test_unfilter_grid(ctx);
    if (!quick)
        test_large(ctx);
    test_jobs(ctx, VARIANT_FAST, 0);
    test_jobs(ctx, VARIANT_FAST, 1);
    test_jobs(ctx, VARIANT_SEPARABLE, 0);
    test_jobs(ctx, VARIANT_SEPARABLE, 1);
    test_pool_books();
    gconv_close(ctx);
    return check_summary();
}
