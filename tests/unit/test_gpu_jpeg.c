/* test_gpu_jpeg.c — nvJPEG on the device (gpu/gconv_jpeg*.cu) against libjpeg-turbo: decode of
 * JPEGs made here with TurboJPEG (4:4:4, 4:2:2, 4:2:0, gray; odd and even sides; baseline and
 * progressive) within JPEG_TOL levels of the CPU decoder (IDCT and chroma upsampling rounding; the
 * measured maxima are printed); batched decode equal to one at a time; every EXIF orientation equal
 * to the CPU rotation of the unrotated decode; encode decoded back above JPEG_MIN_PSNR dB; a job with
 * JPEG bytes through gconv_submit_jpeg against the job with CPU-decoded pixels through gconv_submit;
 * CMYK refused with GCONV_E_JPEG_REFUSED; the header probe's readings against the CPU decoder, from
 * one thread and from several at once, and jobs that carry them. Built only with GPU=1 NVJPEG=1;
 * EDGED_REQUIRE_GPU=1 fails instead of skipping when no device is usable. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "check.h"
#include "filter.h"
#include "gconv.h"
#include "image.h"
#include "codec/image_io.h"
#include "imgdiff.h"
#include "codec/jpeg_io.h"

/* Largest per-sample difference from libjpeg-turbo's decode: full-resolution chroma and gray
 * differ by IDCT rounding only; subsampled chroma also by the upsampling filter (smooth test
 * images keep that small). */
#define JPEG_TOL_FULL 4
#define JPEG_TOL_SUB 8
/* nvJPEG's encode of a smooth image at quality 90, decoded by libjpeg-turbo. */
#define JPEG_MIN_PSNR 30.0
#define NSTREAMS 4

struct kind {
    const char *name;
    int subsamp; /* TJSAMP_* */
    int progressive;
};

static const struct kind kinds[] = {
    {"4:4:4", TJSAMP_444, 0},
    {"4:2:2", TJSAMP_422, 0},
    {"4:2:0", TJSAMP_420, 0},
    {"gray", TJSAMP_GRAY, 0},
    {"4:4:4 progressive", TJSAMP_444, 1},
    {"4:2:0 progressive", TJSAMP_420, 1},
    {"gray progressive", TJSAMP_GRAY, 1},
};
static const int sizes[][2] = {{1, 1},   {7, 5},     {16, 16},  {33, 17},
                               {64, 48}, {333, 257}, {1001, 3}, {640, 480}};
#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

/* A smooth w x h image of ch channels (gradients and low sines, a seeded phase) so that the
 * decoders' differences measure rounding, not the codec's treatment of noise. */
static int smooth_image(struct img *im, int w, int h, int ch, unsigned seed)
{
    char err[EDGED_ERR_LEN];
    double ph = (seed % 97) * 0.1;

    if (img_alloc(im, w, h, ch, err) < 0)
        return -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                double v = 128 + 60 * sin(x * 0.05 + c + ph) + 50 * cos(y * 0.07 - c * 0.5) + (x + y) % 16;
                im->px[y * im->stride + (size_t)x * ch + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    return 0;
}

/* JPEG of im (1 channel: gray; 3: RGB, 4: CMYK) with TurboJPEG; *out freed with tjFree. */
static int make_jpeg(const struct img *im, int subsamp, int progressive, int quality, unsigned char **out,
                     unsigned long *len)
{
    tjhandle tj = tjInitCompress();
    int pf = im->ch == 1 ? TJPF_GRAY : im->ch == 4 ? TJPF_CMYK : TJPF_RGB, rc;

    *out = NULL;
    if (!tj)
        return -1;
    rc = tjCompress2(tj, im->px, im->w, (int)im->stride, im->h, pf, out, len,
                     im->ch == 1 ? TJSAMP_GRAY : subsamp, quality,
                     TJFLAG_ACCURATEDCT | (progressive ? TJFLAG_PROGRESSIVE : 0));
    tjDestroy(tj);
    return rc;
}

/* The CPU decode the service runs (libjpeg-turbo through jpeg_io). */
static int cpu_decode(const uint8_t *d, size_t n, struct img *out, char *err)
{
    struct jpegio_info info;
    int rc = jpegio_peek(d, n, &info, err);

    return rc < 0 ? rc : jpegio_decode(d, n, &info, out, err);
}

static double psnr(const struct img *a, const struct img *b)
{
    double se = 0;
    size_t n = (size_t)a->w * a->h * a->ch;

    if (a->w != b->w || a->h != b->h || a->ch != b->ch)
        return 0;
    for (int y = 0; y < a->h; y++)
        for (size_t x = 0; x < (size_t)a->w * a->ch; x++) {
            double d = (double)a->px[y * a->stride + x] - b->px[y * b->stride + x];
            se += d * d;
        }
    return se == 0 ? 99.0 : 10 * log10(255.0 * 255.0 * n / se);
}

/* One JPEG of kind k at size (w, h); 0 or -1. */
static int kind_jpeg(const struct kind *k, int w, int h, unsigned seed, unsigned char **jpg,
                     unsigned long *len)
{
    struct img im = {0};
    int rc;

    if (smooth_image(&im, w, h, k->subsamp == TJSAMP_GRAY ? 1 : 3, seed) < 0)
        return -1;
    rc = make_jpeg(&im, k->subsamp, k->progressive, 90, jpg, len);
    img_free(&im);
    return rc;
}

/* Every kind and size against the CPU decoder, one image per call. nvJPEG may refuse progressive
 * streams (the CPU fallback serves them), nothing else. */
static void test_decode_vs_cpu(struct gconv_ctx *ctx)
{
    char err[EDGED_ERR_LEN];

    for (int k = 0; k < NKINDS; k++) {
        int worst = 0, refused = 0,
            tol = kinds[k].subsamp == TJSAMP_444 || kinds[k].subsamp == TJSAMP_GRAY ? JPEG_TOL_FULL
                                                                                    : JPEG_TOL_SUB;
        for (int s = 0; s < NSIZES; s++) {
            unsigned char *jpg = NULL;
            unsigned long len = 0;
            struct img cpu = {0}, gpu = {0};
            const uint8_t *d;
            size_t n;
            int rc1 = 0, rc, w = sizes[s][0], h = sizes[s][1];

            if (kind_jpeg(&kinds[k], w, h, (unsigned)(k * 31 + s), &jpg, &len) < 0) {
                CHECK(0, "tjCompress2 %s %dx%d: %s", kinds[k].name, w, h, tjGetErrorStr());
                continue;
            }
            d = jpg, n = len;
            CHECK(cpu_decode(d, n, &cpu, err) == 0, "CPU decode %s %dx%d: %s", kinds[k].name, w, h, err);
            rc = gconv_jpeg_decode_host(ctx, 1, &d, &n, NULL, 0, &gpu, &rc1, NULL, err);
            CHECK(rc == 0, "gconv_jpeg_decode_host %s %dx%d: %s", kinds[k].name, w, h, err);
            if (rc == 0 && rc1 == GCONV_E_JPEG_REFUSED && kinds[k].progressive) {
                refused++;
            } else if (rc == 0) {
                int m = imgdiff_max(&cpu, &gpu);
                CHECK(rc1 == 0, "nvJPEG decode %s %dx%d: rc %d", kinds[k].name, w, h, rc1);
                CHECK(rc1 != 0 || m <= tol, "%s %dx%d: max diff %d > %d", kinds[k].name, w, h, m, tol);
                worst = rc1 == 0 && m > worst ? m : worst;
            }
            img_free(&cpu);
            img_free(&gpu);
            tjFree(jpg);
        }
        printf("decode %-18s max diff vs libjpeg-turbo %d (bound %d)%s\n", kinds[k].name, worst, tol,
               refused ? ", refused by nvJPEG: CPU fallback" : "");
    }
}

/* Every baseline kind and size in one batched call equals the same images one per call. */
static void test_batch(struct gconv_ctx *ctx)
{
    unsigned char *jpg[GCONV_JPEG_MAX_BATCH] = {0};
    unsigned long jl[GCONV_JPEG_MAX_BATCH];
    const uint8_t *d[GCONV_JPEG_MAX_BATCH];
    size_t n[GCONV_JPEG_MAX_BATCH];
    int orient[GCONV_JPEG_MAX_BATCH], rcb[GCONV_JPEG_MAX_BATCH], rcs[GCONV_JPEG_MAX_BATCH], cnt = 0, same = 0;
    struct img batch[GCONV_JPEG_MAX_BATCH], single[GCONV_JPEG_MAX_BATCH];
    char err[EDGED_ERR_LEN];
    double ms_b = 0, ms_s = 0, ms;

    for (int k = 0; k < NKINDS && cnt < GCONV_JPEG_MAX_BATCH; k++)
        for (int s = 0; s < NSIZES && cnt < GCONV_JPEG_MAX_BATCH; s++) {
            if (kinds[k].progressive ||
                kind_jpeg(&kinds[k], sizes[s][0], sizes[s][1], (unsigned)(s + 7), &jpg[cnt], &jl[cnt]) < 0)
                continue;
            d[cnt] = jpg[cnt], n[cnt] = jl[cnt], orient[cnt] = 1 + cnt % 8, cnt++;
        }
    CHECK(gconv_jpeg_decode_host(ctx, cnt, d, n, orient, 1, batch, rcb, &ms_b, err) == 0, "batched: %s", err);
    for (int i = 0; i < cnt; i++) {
        CHECK(gconv_jpeg_decode_host(ctx, 1, &d[i], &n[i], &orient[i], 0, &single[i], &rcs[i], &ms, err) == 0,
              "single %d: %s", i, err);
        ms_s += ms;
        CHECK(rcb[i] == 0 && rcs[i] == 0, "image %d: batched rc %d, single rc %d", i, rcb[i], rcs[i]);
        if (rcb[i] == 0 && rcs[i] == 0) {
            int m = imgdiff_max(&batch[i], &single[i]);
            CHECK(m == 0, "image %d (orientation %d): batched differs from single by %d", i, orient[i], m);
            same += m == 0;
        }
        img_free(&batch[i]);
        img_free(&single[i]);
        tjFree(jpg[i]);
    }
    printf("batch of %d (orientations 1..8 mixed) equals one at a time: %d of %d; %.3f ms batched, %.3f ms "
           "single\n",
           cnt, same, cnt, ms_b, ms_s);
}

/* Orientation o on the device equals imageio_orient of the unrotated device decode, exactly. */
static void test_orientations(struct gconv_ctx *ctx)
{
    static const struct kind rgb = {"4:4:4", TJSAMP_444, 0}, gray = {"gray", TJSAMP_GRAY, 0};
    const struct kind *ks[] = {&rgb, &gray};
    char err[EDGED_ERR_LEN];

    for (int k = 0; k < 2; k++) {
        unsigned char *jpg = NULL;
        unsigned long jl = 0;
        struct img base = {0};
        const uint8_t *d;
        size_t n;
        int rc1 = -1, ok = 0;

        if (kind_jpeg(ks[k], 37, 23, 5, &jpg, &jl) < 0) {
            CHECK(0, "tjCompress2: %s", tjGetErrorStr());
            continue;
        }
        d = jpg, n = jl;
        CHECK(gconv_jpeg_decode_host(ctx, 1, &d, &n, NULL, 0, &base, &rc1, NULL, err) == 0 && rc1 == 0,
              "base decode: %s", err);
        for (int o = 1; o <= 8 && rc1 == 0; o++) {
            struct img gpu = {0}, ref = {0};
            int rc2 = -1;
            CHECK(img_alloc(&ref, base.w, base.h, base.ch, err) == 0, "%s", err);
            memcpy(ref.px, base.px, base.stride * (size_t)base.h);
            CHECK(imageio_orient(&ref, o, err) == 0, "imageio_orient %d: %s", o, err);
            CHECK(gconv_jpeg_decode_host(ctx, 1, &d, &n, &o, 0, &gpu, &rc2, NULL, err) == 0 && rc2 == 0,
                  "orientation %d: %s", o, err);
            CHECK(imgdiff_max(&gpu, &ref) == 0, "%s orientation %d: %dx%d vs %dx%d, differs", ks[k]->name, o,
                  gpu.w, gpu.h, ref.w, ref.h);
            ok += imgdiff_max(&gpu, &ref) == 0;
            img_free(&gpu);
            img_free(&ref);
        }
        printf("orientations %s 37x23: %d of 8 equal the CPU rotation\n", ks[k]->name, ok);
        img_free(&base);
        tjFree(jpg);
    }
}

/* nvJPEG's encode (quality 90, 4:2:0 or gray) decoded by libjpeg-turbo: PSNR against the source. */
static void test_encode(struct gconv_ctx *ctx)
{
    static const int sides[][2] = {{640, 480}, {333, 257}, {17, 9}};
    char err[EDGED_ERR_LEN];

    for (int ch = 1; ch <= 3; ch += 2)
        for (int s = 0; s < 3; s++) {
            struct img im = {0}, back = {0};
            uint8_t *jpg = NULL;
            size_t len = 0;
            double p;

            if (smooth_image(&im, sides[s][0], sides[s][1], ch, 3) < 0)
                continue;
            CHECK(gconv_jpeg_encode_host(ctx, &im, 90, &jpg, &len, err) == 0, "encode: %s", err);
            CHECK(jpg && cpu_decode(jpg, len, &back, err) == 0, "decode back: %s", err);
            p = psnr(&im, &back);
            CHECK(p >= JPEG_MIN_PSNR, "%d ch %dx%d: PSNR %.1f dB < %.1f", ch, im.w, im.h, p, JPEG_MIN_PSNR);
            printf("encode %d ch %dx%d quality 90: %zu bytes, PSNR %.1f dB (bound %.0f)\n", ch, im.w, im.h,
                   len, p, JPEG_MIN_PSNR);
            free(jpg);
            img_free(&im);
            img_free(&back);
        }
    {
        struct img im4 = {0};
        uint8_t *jpg = NULL;
        size_t len = 0;
        smooth_image(&im4, 8, 8, 4, 1);
        CHECK(gconv_jpeg_encode_host(ctx, &im4, 90, &jpg, &len, err) == GCONV_E_JPEG_REFUSED,
              "4 channels must be refused");
        img_free(&im4);
        smooth_image(&im4, 8, 8, 3, 1);
        CHECK(gconv_jpeg_encode_host(ctx, &im4, 0, &jpg, &len, err) == EDGED_E_PARAM,
              "quality 0 must be refused");
        img_free(&im4);
    }
}

/* Waits for stream s and finishes its job into out. */
static int finish(struct gconv_ctx *ctx, int s, struct img *out, char *err)
{
    int p;

    while ((p = gconv_poll(ctx, s)) == 0)
        ;
    return gconv_finish(ctx, s, out, NULL, err);
}

/* Jobs of JPEG bytes on NSTREAMS streams in one call (orientations 1, 6, 3, 8) against the same
 * images decoded on the CPU, rotated on the CPU and run through gconv_submit: gaussian 5x5 moves no
 * output further than its input moved, so the bound is the decode's, plus 1 for rounding. Then the
 * device encode of the last result decodes back above JPEG_MIN_PSNR, and so do the encodes that the
 * jobs of streams 1 and 2 asked for at submit (queued behind the job, collected after a finish
 * that left the pixels on the device, which gconv_finish_copy then fetches). */
static void test_jobs(struct gconv_ctx *ctx, enum variant v, struct gconv_jpeg_probe *probe)
{
    static const int orient[NSTREAMS] = {1, 6, 3, 8};
    struct gconv_jpeg_job jobs[NSTREAMS];
    struct gconv_jpeg_head heads[NSTREAMS];
    unsigned char *jpg[NSTREAMS] = {0};
    unsigned long jl[NSTREAMS];
    struct filter_plan plan;
    struct filter_spec spec;
    char err[EDGED_ERR_LEN];
    int submitted;

    filter_spec_init(&spec, FILTER_GAUSSIAN5);
    if (filter_plan_make(&spec, 3, &plan, err) < 0) {
        CHECK(0, "plan: %s", err);
        return;
    }
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < NSTREAMS; i++) {
        CHECK(kind_jpeg(&kinds[2], 301 + 16 * i, 203, (unsigned)i, &jpg[i], &jl[i]) == 0, "tjCompress2");
        jobs[i] = (struct gconv_jpeg_job){.s = i,
                                          .data = jpg[i],
                                          .len = jl[i],
                                          .orientation = orient[i],
                                          .plan = &plan,
                                          .v = v,
                                          .block = VARIANT_DEFAULT_BLOCK,
                                          .quality = i == 1 || i == 2 ? 90 : 0};
        if (probe) {
            CHECK(gconv_jpeg_probe(probe, jpg[i], jl[i], &heads[i], err) == 0, "probe %d: %s", i, err);
            jobs[i].head = &heads[i];
        }
    }
    submitted = gconv_submit_jpeg(ctx, jobs, NSTREAMS);
    CHECK(submitted == NSTREAMS, "gconv_submit_jpeg: %d of %d (%s)", submitted, NSTREAMS, jobs[0].err);
    for (int i = 0; i < NSTREAMS; i++) {
        struct img cpu = {0}, out_gpu = {0}, out_cpu = {0}, back = {0};
        uint8_t *behind = NULL;
        size_t behind_len = 0;
        int m = -1;
        CHECK(jobs[i].rc == 0, "job %d: %s", i, jobs[i].err);
        if (jobs[i].rc != 0)
            continue;
        CHECK(img_alloc(&out_gpu, jobs[i].w, jobs[i].h, plan.out_ch, err) == 0, "%s", err);
        if (jobs[i].quality > 0) {
            CHECK(finish(ctx, i, NULL, err) == 0, "finish %d without copy: %s", i, err);
            CHECK(gconv_jpeg_encode_result(ctx, i, 90, &behind, &behind_len, err) == 0, "collect %d: %s", i,
                  err);
            CHECK(gconv_finish_copy(ctx, i, &out_gpu, err) == 0, "finish_copy %d: %s", i, err);
        } else {
            CHECK(finish(ctx, i, &out_gpu, err) == 0, "finish %d: %s", i, err);
        }
        CHECK(cpu_decode(jpg[i], jl[i], &cpu, err) == 0 && imageio_orient(&cpu, orient[i], err) == 0, "%s",
              err);
        CHECK(img_alloc(&out_cpu, cpu.w, cpu.h, plan.out_ch, err) == 0, "%s", err);
        CHECK(gconv_submit(ctx, i, &cpu, &plan, v, VARIANT_DEFAULT_BLOCK, err) == 0, "submit: %s", err);
        CHECK(finish(ctx, i, &out_cpu, err) == 0, "finish: %s", err);
        m = imgdiff_max(&out_gpu, &out_cpu);
        CHECK(m <= JPEG_TOL_SUB + 1, "job %d (orientation %d, %s): max diff %d > %d", i, orient[i],
              variant_name(v), m, JPEG_TOL_SUB + 1);
        printf("job %d %s 4:2:0 %dx%d orientation %d%s: JPEG bytes vs CPU pixels max diff %d (bound %d)\n", i,
               variant_name(v), out_gpu.w, out_gpu.h, orient[i], probe ? ", headers probed" : "", m,
               JPEG_TOL_SUB + 1);
        if (jobs[i].quality > 0) {
            CHECK(behind && cpu_decode(behind, behind_len, &back, err) == 0, "decode back %d: %s", i, err);
            CHECK(psnr(&out_cpu, &back) >= JPEG_MIN_PSNR, "job %d encode behind: PSNR %.1f", i,
                  psnr(&out_cpu, &back));
            printf("job %d encoded behind it: %zu bytes, PSNR %.1f dB\n", i, behind_len,
                   psnr(&out_cpu, &back));
            free(behind);
            img_free(&back);
        }
        if (i == NSTREAMS - 1) { /* the device encode of the result just finished on stream i */
            uint8_t *enc = NULL;
            size_t len = 0;
            struct img back = {0};
            CHECK(gconv_jpeg_encode_result(ctx, i, 90, &enc, &len, err) == 0, "encode_result: %s", err);
            CHECK(enc && cpu_decode(enc, len, &back, err) == 0, "decode back: %s", err);
            CHECK(psnr(&out_cpu, &back) >= JPEG_MIN_PSNR, "result encode PSNR %.1f", psnr(&out_cpu, &back));
            free(enc);
            img_free(&back);
        }
        img_free(&cpu);
        img_free(&out_gpu);
        img_free(&out_cpu);
    }
    for (int i = 0; i < NSTREAMS; i++)
        tjFree(jpg[i]);
}

/* CMYK (4 components) is refused for the CPU decoder to serve; the stream stays free. */
static void test_refused(struct gconv_ctx *ctx)
{
    struct img im = {0};
    unsigned char *jpg = NULL;
    unsigned long jl = 0;
    struct filter_plan plan;
    struct filter_spec spec;
    struct gconv_jpeg_job job;
    char err[EDGED_ERR_LEN];

    filter_spec_init(&spec, FILTER_GAUSSIAN5);
    if (smooth_image(&im, 40, 30, 4, 2) < 0 || make_jpeg(&im, TJSAMP_444, 0, 90, &jpg, &jl) < 0 ||
        filter_plan_make(&spec, 3, &plan, err) < 0) {
        CHECK(0, "CMYK JPEG: %s", tjGetErrorStr());
        img_free(&im);
        return;
    }
    memset(&job, 0, sizeof(job));
    job = (struct gconv_jpeg_job){.s = 0,
                                  .data = jpg,
                                  .len = jl,
                                  .orientation = 1,
                                  .plan = &plan,
                                  .v = VARIANT_FAST,
                                  .block = VARIANT_DEFAULT_BLOCK};
    CHECK(gconv_submit_jpeg(ctx, &job, 1) == 0, "nothing submitted");
    CHECK(job.rc == GCONV_E_JPEG_REFUSED, "CMYK: rc %d (%s), expected GCONV_E_JPEG_REFUSED", job.rc, job.err);
    CHECK(gconv_poll(ctx, 0) == EDGED_E_PARAM, "stream 0 must have no job");
    printf("CMYK refused: %s\n", job.err);
    img_free(&im);
    tjFree(jpg);
}

/* ---- the header probe ---- */

#define PROBE_THREADS 8
#define PROBE_ROUNDS 20
#define PROBE_FILES ((int)(sizeof(kinds) / sizeof(kinds[0])))

struct probe_set {
    struct gconv_jpeg_probe *p;
    unsigned char *jpg[PROBE_FILES];
    unsigned long len[PROBE_FILES];
    struct gconv_jpeg_head want[PROBE_FILES];
    int differ; /* per thread: readings unlike the first thread's */
};

struct probe_arg {
    struct probe_set *set;
    int differ;
};

static void *probe_thread(void *arg)
{
    struct probe_arg *a = arg;
    struct gconv_jpeg_head h;
    char err[EDGED_ERR_LEN];

    for (int r = 0; r < PROBE_ROUNDS; r++)
        for (int k = 0; k < PROBE_FILES; k++)
            if (gconv_jpeg_probe(a->set->p, a->set->jpg[k], a->set->len[k], &h, err) != 0 ||
                memcmp(&h, &a->set->want[k], sizeof(h)) != 0)
                a->differ++;
    return NULL;
}

/* The probe reads each kind's size and channels as the CPU decoder decodes them, says no engine
 * for a progressive file, refuses CMYK and bytes that are no JPEG, and PROBE_THREADS threads
 * reading at once get the readings one thread got. */
static void test_probe(struct gconv_ctx *ctx, struct gconv_jpeg_probe *p)
{
    struct probe_set set = {.p = p};
    struct probe_arg args[PROBE_THREADS];
    pthread_t th[PROBE_THREADS];
    struct gconv_jpeg_head h;
    char err[EDGED_ERR_LEN];
    struct img im = {0};
    unsigned char *cmyk = NULL;
    unsigned long cl = 0;
    static const uint8_t junk[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0, 1, 2, 3};
    int differ = 0, started = 0, engines = 0;

    for (int k = 0; k < PROBE_FILES; k++) {
        struct img cpu = {0};
        CHECK(kind_jpeg(&kinds[k], 301, 203, (unsigned)k, &set.jpg[k], &set.len[k]) == 0, "tjCompress2");
        CHECK(gconv_jpeg_probe(p, set.jpg[k], set.len[k], &set.want[k], err) == 0, "probe %s: %s",
              kinds[k].name, err);
        CHECK(cpu_decode(set.jpg[k], set.len[k], &cpu, err) == 0, "%s", err);
        CHECK(set.want[k].w == cpu.w && set.want[k].h == cpu.h && set.want[k].ch == cpu.ch,
              "probe %s: %d x %d x %d, the CPU decodes %d x %d x %d", kinds[k].name, set.want[k].w,
              set.want[k].h, set.want[k].ch, cpu.w, cpu.h, cpu.ch);
        CHECK(!(kinds[k].progressive && set.want[k].engine), "probe %s: the engine takes no progressive file",
              kinds[k].name);
        engines += set.want[k].engine;
        img_free(&cpu);
    }
    printf("probe: %d of %d kinds for the engine (backend %s)\n", engines, PROBE_FILES,
           gconv_jpeg_backend(ctx));
    CHECK(gconv_jpeg_probe(p, junk, sizeof(junk), &h, err) == GCONV_E_JPEG_REFUSED, "junk: not refused");
    if (smooth_image(&im, 40, 30, 4, 2) == 0 && make_jpeg(&im, TJSAMP_444, 0, 90, &cmyk, &cl) == 0)
        CHECK(gconv_jpeg_probe(p, cmyk, cl, &h, err) == GCONV_E_JPEG_REFUSED, "CMYK: not refused");
    printf("probe refuses CMYK: %s\n", err);
    for (int t = 0; t < PROBE_THREADS; t++) {
        args[t] = (struct probe_arg){&set, 0};
        started += pthread_create(&th[t], NULL, probe_thread, &args[t]) == 0;
    }
    CHECK(started == PROBE_THREADS, "started %d of %d probe threads", started, PROBE_THREADS);
    for (int t = 0; t < started; t++) {
        pthread_join(th[t], NULL);
        differ += args[t].differ;
    }
    CHECK(differ == 0, "%d readings of %d threads at once differ from one thread's", differ, started);
    printf("probe: %d threads x %d readings at once, %d differ\n", started, PROBE_ROUNDS * PROBE_FILES,
           differ);
    for (int k = 0; k < PROBE_FILES; k++)
        tjFree(set.jpg[k]);
    tjFree(cmyk);
    img_free(&im);
}

int main(void)
{
    struct gconv_ctx *ctx = NULL;
    struct gconv_jpeg_probe *probe = NULL;
    char err[EDGED_ERR_LEN] = "";
    const char *req = getenv("EDGED_REQUIRE_GPU");
    int rc;

    if ((rc = gconv_open(&ctx, 0, NSTREAMS, err)) < 0) {
        if (req && strcmp(req, "1") == 0)
            CHECK(rc == 0, "EDGED_REQUIRE_GPU=1 but no GPU: %s", err);
        else
            SKIP("nvJPEG tests: %s", err);
        return check_summary();
    }
    CHECK(gconv_jpeg_available(ctx), "built with nvJPEG: must be available");
    test_decode_vs_cpu(ctx);
    printf("nvJPEG decode backend: %s\n", gconv_jpeg_backend(ctx));
    test_batch(ctx);
    test_orientations(ctx);
    test_encode(ctx);
    test_jobs(ctx, VARIANT_FAST, NULL);
    test_jobs(ctx, VARIANT_SEPARABLE, NULL);
    test_refused(ctx);
    CHECK(gconv_jpeg_probe_open(&probe, 0, err) == 0, "probe: %s", err);
    if (probe) {
        test_probe(ctx, probe);
        test_jobs(ctx, VARIANT_FAST, probe);
        gconv_jpeg_probe_close(probe);
    }
    gconv_close(ctx);
    return check_summary();
}
