/* test_png_job.c — jobs that carry PNG bytes for the device decoder (server/jobs/png_job.c) on the
 * host: the take keeps the kinds the device serves (every generated kind pngdec_decode serves) with
 * their layout and zlib stream, and drops the others (interlaced, 16-bit, sub-byte gray, a header
 * that does not match) with nothing kept; the CPU decode that serves what the device refuses or
 * declines gives pngio_decode's image, or its error for a stream damaged under right CRCs; a job
 * with PNG bytes runs on the CPU lane as the job with pixels does; without a pinned buffer the
 * stream stays in ordinary memory and still decodes; the backlog rule and the counters. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "filter.h"
#include "png_layout.h"
#include "pngbuf.h"
#include "pngwrite.h"
#include "jobs/backend.h"
#include "jobs/png_job.h"
#include "jobs/queue.h"
#include "codec/png_io.h"

/* A job sized w x h x ch for the PNG b (not yet taken). */
static struct job *sized_job(int w, int h, int ch)
{
    struct job *job = job_new();

    if (job)
        job->in = (struct img){.w = w, .h = h, .ch = ch};
    return job;
}

/* Every generated kind: taken exactly when the fast decoder serves it, and then its CPU decode
 * equals pngio_decode's. */
static void test_take_kinds(void)
{
    int taken = 0, dropped = 0;
    char err[EDGED_ERR_LEN];

    for (size_t i = 0; i < NKINDS; i++) {
        struct buf b = write_kind(&kinds[i], 37, 11, i % 2 ? 64 : 8192);
        struct img ref = {0};
        struct job *job;
        CHECK(pngio_decode(b.p, b.len, NULL, &ref, err) == 0, "kind %zu: %s", i, err);
        job = sized_job(ref.w, ref.h, ref.ch);
        if (pngjob_take(job, b.p, b.len)) {
            taken++;
            CHECK(fast_kind(&kinds[i]), "kind %zu (color %d depth %d) taken", i, kinds[i].color, kinds[i].depth);
            CHECK(job->src_format == JOB_SRC_PNG && job->png_lay && job->png_z && job->png_z_len > 0,
                  "kind %zu: taken without layout or stream", i);
            CHECK(job->src == b.p && job->src_len == b.len && !job->src_block,
                  "kind %zu: the bytes are borrowed, not copied", i);
            CHECK(job->png_lay->out_ch == ref.ch, "kind %zu: layout channels %d, decode %d", i,
                  job->png_lay->out_ch, ref.ch);
            CHECK(pngjob_decode_src(job) == 0 && img_same(&job->in, &ref), "kind %zu: CPU decode: %s", i,
                  job->err);
        } else {
            dropped++;
            CHECK(!fast_kind(&kinds[i]), "kind %zu (color %d depth %d) dropped", i, kinds[i].color,
                  kinds[i].depth);
            CHECK(!job->src && !job->png_lay && !job->png_join, "kind %zu: dropped but kept memory", i);
        }
        job_release(NULL, job);
        img_free(&ref);
        free(b.p);
    }
    printf("take: %d kinds taken, %d left to the CPU\n", taken, dropped);
}

/* A header the job does not match (another channel count) is dropped; a stream damaged under right
 * CRCs is taken (only an inflate can tell) and its CPU decode gives pngio_decode's error. */
static void test_mismatch_and_damage(void)
{
    static const struct kind rgb = {2, 8, 0};
    struct buf b = write_kind(&rgb, 40, 30, 1 << 20); /* one IDAT chunk */
    struct img ref = {0};
    struct job *job = sized_job(40, 30, 4);
    char err[EDGED_ERR_LEN];
    size_t at = 33 + 8; /* the IDAT data after signature, IHDR and its chunk header */
    uint32_t n = (uint32_t)b.p[33] << 24 | (uint32_t)b.p[34] << 16 | (uint32_t)b.p[35] << 8 | b.p[36];
    uLong crc;
    int rc, rr;

    CHECK(memcmp(b.p + 37, "IDAT", 4) == 0, "the writer put a chunk before IDAT");
    CHECK(!pngjob_take(job, b.p, b.len), "4 channels expected of an RGB file: taken");
    job_release(NULL, job);
    b.p[at + n - 1] ^= 0x5a; /* the Adler-32's last byte */
    crc = crc32(0, b.p + 37, n + 4);
    b.p[at + n] = (uint8_t)(crc >> 24), b.p[at + n + 1] = (uint8_t)(crc >> 16);
    b.p[at + n + 2] = (uint8_t)(crc >> 8), b.p[at + n + 3] = (uint8_t)crc;
    job = sized_job(40, 30, 3);
    CHECK(pngjob_take(job, b.p, b.len), "damaged stream under right CRCs: not taken");
    rc = pngjob_decode_src(job);
    rr = pngio_decode(b.p, b.len, NULL, &ref, err);
    CHECK(rc < 0 && rc == rr && strcmp(job->err, err) == 0, "damaged: %d (%s), pngio_decode %d (%s)", rc,
          job->err, rr, err);
    printf("damaged stream: %s\n", job->err);
    job_release(NULL, job);
    free(b.p);
}

/* A job with PNG bytes on the CPU lane gives exactly the output of the job with the pixels. */
static void test_cpu_lane(struct backend *be)
{
    static const struct kind pal = {3, 4, 3};
    struct buf b = write_kind(&pal, 61, 23, 8192);
    struct filter_spec spec;
    struct job *job, *ref;
    char err[EDGED_ERR_LEN];

    filter_spec_init(&spec, FILTER_GAUSSIAN5);
    job = sized_job(61, 23, 4), ref = job_new();
    CHECK(pngjob_take(job, b.p, b.len), "palette with tRNS: not taken");
    CHECK(pngio_decode(b.p, b.len, NULL, &ref->in, err) == 0, "%s", err);
    CHECK(filter_plan_make(&spec, 4, &job->plan, err) == 0 && filter_plan_make(&spec, 4, &ref->plan, err) == 0,
          "%s", err);
    job->variant = ref->variant = VARIANT_CPU;
    CHECK(backend_route(be, job, err) == 0 && backend_route(be, ref, err) == 0, "%s", err);
    CHECK(backend_run(be, job) == 0 && backend_run(be, ref) == 0, "run: %s %s", job->err, ref->err);
    CHECK(img_same(&job->out, &ref->out), "PNG-byte job differs from the pixel job");
    job_release(NULL, job);
    job_release(NULL, ref);
    free(b.p);
}

/* The device keeps PNGs until its backlog reaches the limit; past it, only while the cores are
 * busy (cpu_free 0). The busy ones are counted. */
static void test_backlog(void)
{
    const size_t limit = (size_t)3 << 20;
    struct pngjob_counts c0, c1;

    pngjob_counts(&c0);
    CHECK(pngjob_gpu_ok(1000, 1, limit) && pngjob_gpu_ok(1000, 0, limit), "an empty backlog refuses the device");
    pngjob_backlog_begin(limit - 1);
    CHECK(pngjob_gpu_ok(1000, 1, limit), "a backlog under the limit and free cores: not the device");
    pngjob_backlog_begin(1);
    CHECK(!pngjob_gpu_ok(1000, 1, limit), "a full backlog and free cores: still the device");
    CHECK(pngjob_gpu_ok(1000, 0, limit), "a full backlog and busy cores: not the device");
    CHECK(pngjob_gpu_ok(1000, 1, 2 * limit), "a larger limit: not the device");
    pngjob_backlog_end(limit);
    CHECK(pngjob_gpu_ok(1000, 1, limit), "the backlog did not drain");
    pngjob_counts(&c1);
    CHECK(c1.cpu_busy == c0.cpu_busy + 1 && c1.gpu_decoded == c0.gpu_decoded, "busy count %llu -> %llu",
          c0.cpu_busy, c1.cpu_busy);
}

/* Without a pinned buffer (this program opens no device context, so the pool of gpu/gpinned.h
 * answers NULL; a build without CUDA always does) the take keeps the stream where the layout put it
 * (several IDAT chunks: their join), counts it unpinned, and the CPU decode still gives
 * pngio_decode's image. */
static void test_unpinned_fallback(void)
{
    static const struct kind rgb = {2, 8, 0};
    struct buf b = write_kind(&rgb, 97, 71, 1024); /* several IDAT chunks */
    struct pngjob_counts c0, c1;
    struct img ref = {0};
    struct job *job = sized_job(97, 71, 3);
    char err[EDGED_ERR_LEN];

    pngjob_counts(&c0);
    CHECK(pngio_decode(b.p, b.len, NULL, &ref, err) == 0, "%s", err);
    CHECK(pngjob_take(job, b.p, b.len), "RGB in several IDAT chunks: not taken");
    CHECK(!job->png_pinned && job->png_join && job->png_z == job->png_join, "pinned %p join %p z %p",
          (void *)job->png_pinned, (void *)job->png_join, (const void *)job->png_z);
    pngjob_counts(&c1);
    CHECK(c1.z_unpinned == c0.z_unpinned + 1 && c1.z_pinned == c0.z_pinned, "counts: unpinned %llu -> %llu",
          c0.z_unpinned, c1.z_unpinned);
    CHECK(pngjob_decode_src(job) == 0 && img_same(&job->in, &ref), "CPU decode: %s", job->err);
    job_release(NULL, job);
    img_free(&ref);
    free(b.p);
}

int main(void)
{
    struct backend *be = NULL;
    char err[EDGED_ERR_LEN];

    check_rng_seed(check_seed());
    test_take_kinds();
    test_mismatch_and_damage();
    test_unpinned_fallback();
    if (backend_open(&be, BACKEND_CPU, NULL, 0, 1, 2, err) == 0)
        test_cpu_lane(be);
    else
        CHECK(0, "CPU backend: %s", err);
    backend_close(be);
    test_backlog();
    return check_summary();
}
