/* test_gpu_inflate.c — the device inflate (gpu/ginflate_*.cu through gconv_inflate_host) against
 * libdeflate and the host driver of the same algorithm: the streams of test_inflate_spec in batches
 * of 32 (same verdict as inflseg_spec_decode, libdeflate's bytes when it decodes), each batch run
 * both ways (the knob EDGED_GPU_INFLATE_SEG: 0 the speculative and placing decodes one thread a
 * block, 1 both in segments; the same verdicts and bytes), then the device time of one
 * photograph-sized stream (2048x2048 RGB rows at zlib level 6) and of a batch of 32 of them, both
 * ways. A stream asking for more than INFL_MAX_OUT bytes is declined. Skips without a usable GPU;
 * EDGED_REQUIRE_GPU=1 fails instead.
 * EDGED_GPU_QUICK=1 (the sanitizer runs) times a 256-row stream alone instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "errors.h"
#include "gconv.h"
#include "inflate_corpus.h"
#include "inflate_seg.h"
#include "inflate_spec.h"

#define BATCH 32

static const char *const placement[2] = {"one thread a block", "in segments"};

/* gconv_inflate_host with phases 2 and 4 as seg (0 or 1) picks them: the knob is read when the
 * call creates its inflate state. */
static int dev_inflate(struct gconv_ctx *ctx, int seg, int n, const uint8_t *const *z, const size_t *len,
                       uint8_t *const *out, const size_t *olen, int *status, double *ms, char *err)
{
    check_knob("EDGED_GPU_INFLATE_SEG", seg ? "1" : "0");
    return gconv_inflate_host(ctx, n, z, len, out, olen, status, ms, err);
}

/* Runs cases [first, first + n) as one batch both ways; checks each verdict against the host
 * driver's in the same mode and the bytes, and that the two ways agree. */
static void run_batch(struct gconv_ctx *ctx, const struct icase *c, int n)
{
    const uint8_t *z[BATCH];
    uint8_t *out[2][BATCH], *host = NULL;
    size_t len[BATCH], olen[BATCH];
    int status[2][BATCH], i, rc[2], seg;
    double ms = 0;
    char err[EDGED_ERR_LEN] = "";

    for (i = 0; i < n; i++) {
        z[i] = c[i].z;
        len[i] = c[i].zlen;
        olen[i] = c[i].out_len;
        for (seg = 0; seg < 2; seg++)
            if (!(out[seg][i] = malloc(olen[i] ? olen[i] : 1)))
                abort();
    }
    for (seg = 0; seg < 2; seg++) {
        rc[seg] = dev_inflate(ctx, seg, n, z, len, out[seg], olen, status[seg], &ms, err);
        CHECK(rc[seg] == 0, "batch from %s, decodes %s: %s", c[0].name, placement[seg], err);
    }
    for (i = 0; rc[0] == 0 && rc[1] == 0 && i < n; i++) {
        if (!(host = malloc(olen[i] ? olen[i] : 1)))
            abort();
        for (seg = 0; seg < 2; seg++) {
            int hrc = inflseg_spec_decode(z[i], len[i], host, olen[i], seg, NULL);
            CHECK(status[seg][i] == (hrc == 0 ? 0 : 1), "%s, decodes %s: device status %d, host rc %d",
                  c[i].name, placement[seg], status[seg][i], hrc);
            if (status[seg][i] == 0)
                CHECK(c[i].ok && !memcmp(out[seg][i], c[i].want, olen[i]),
                      "%s, decodes %s: device bytes differ from libdeflate", c[i].name, placement[seg]);
        }
        CHECK(status[0][i] == status[1][i] && (status[0][i] || !memcmp(out[0][i], out[1][i], olen[i])),
              "%s: the two ways differ (status %d and %d)", c[i].name, status[0][i], status[1][i]);
        free(host);
    }
    for (i = 0; i < n; i++)
        for (seg = 0; seg < 2; seg++)
            free(out[seg][i]);
}

/* A stream that asks for more than INFL_MAX_OUT bytes is declined before a kernel reads it, alone
 * and beside a stream that decodes (whose bytes stay right): the zlib stream of empty input, which
 * would decode "right" to 0 bytes if the request's length were not judged. */
static void too_long(struct gconv_ctx *ctx, const struct icase *good)
{
    static const uint8_t empty[] = {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};
    const uint8_t *z[2] = {good->z, empty};
    size_t len[2] = {good->zlen, sizeof(empty)}, olen[2] = {good->out_len, (size_t)INFL_MAX_OUT + 1};
    uint8_t *out[2];
    int status[2], rc, seg;
    double ms = 0;
    char err[EDGED_ERR_LEN] = "";

    if (!(out[0] = malloc(olen[0] ? olen[0] : 1)) || !(out[1] = malloc(olen[1])))
        abort();
    for (seg = 0; seg < 2; seg++) {
        rc = dev_inflate(ctx, seg, 1, z + 1, len + 1, out + 1, olen + 1, status + 1, &ms, err);
        CHECK(rc == 0 && status[1] != 0, "empty stream asking for %zu bytes, decodes %s: rc %d, status %d (%s)",
              olen[1], placement[seg], rc, status[1], err);
        int hrc = inflseg_spec_decode(good->z, good->zlen, out[0], olen[0], seg, NULL); /* the host's verdict */
        rc = dev_inflate(ctx, seg, 2, z, len, out, olen, status, &ms, err);
        CHECK(rc == 0 && status[1] != 0, "beside %s: the stream asking for %zu bytes, decodes %s: rc %d, status %d",
              good->name, olen[1], placement[seg], rc, status[1]);
        CHECK(rc == 0 && status[0] == (hrc == 0 ? 0 : 1) && (status[0] || !memcmp(out[0], good->want, olen[0])),
              "%s beside a stream asking for %zu bytes, decodes %s: status %d, host rc %d", good->name, olen[1],
              placement[seg], status[0], hrc);
    }
    free(out[0]);
    free(out[1]);
}

/* The device time of one photograph-sized stream and of BATCH of them, decoded both ways. */
static void time_photo(struct gconv_ctx *ctx, uint64_t *seed, int quick)
{
    size_t n = (size_t)(quick ? 256 : 2048) * (2048 * 3 + 1), zl;
    uint8_t *d = icorpus_data(1, n, seed), *z = icorpus_zlib(d, n, 6, 8, Z_DEFAULT_STRATEGY, &zl);
    const uint8_t *zs[BATCH];
    uint8_t *out[BATCH];
    size_t len[BATCH], olen[BATCH];
    int status[BATCH], i, k, rc, good, seg;
    double ms = 0;
    char err[EDGED_ERR_LEN] = "";

    for (k = 1; k <= (quick ? 1 : BATCH); k += BATCH - 1)
        for (seg = 0; seg < 2; seg++) {
            for (i = 0; i < k; i++) {
                zs[i] = z;
                len[i] = zl;
                olen[i] = n;
                if (!(out[i] = malloc(n)))
                    abort();
            }
            rc = dev_inflate(ctx, seg, k, zs, len, out, olen, status, &ms, err);
            CHECK(rc == 0, "photo batch of %d, decodes %s: %s", k, placement[seg], err);
            for (i = 0, good = 0; rc == 0 && i < k; i++)
                good += status[i] == 0 && !memcmp(out[i], d, n);
            CHECK(rc == 0 && good == k, "photo batch of %d, decodes %s: %d of %d decoded right", k,
                  placement[seg], good, k);
            printf("device inflate: %d x (%zu -> %zu bytes, zlib level 6), decodes %s: %.3f ms\n", k, zl, n,
                   placement[seg], ms);
            for (i = 0; i < k; i++)
                free(out[i]);
        }
    free(z);
    free(d);
}

int main(void)
{
    struct gconv_ctx *ctx = NULL;
    struct icorpus k = {0};
    char err[EDGED_ERR_LEN] = "";
    const char *req = getenv("EDGED_REQUIRE_GPU"), *env = getenv("EDGED_TEST_SEED"), *q = getenv("EDGED_GPU_QUICK");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    int rc, i;

    printf("seed %llu (EDGED_TEST_SEED)\n", (unsigned long long)seed);
    if ((rc = gconv_open(&ctx, 0, 1, err)) < 0) {
        if (req && strcmp(req, "1") == 0)
            CHECK(rc == 0, "EDGED_REQUIRE_GPU=1 but no GPU: %s", err);
        else
            SKIP("GPU inflate tests: %s", err);
        return check_summary();
    }
    k.seed = seed;
    icorpus_generated(&k, 100000);
    if (icorpus_pngsuite(&k) < 0)
        SKIP("%s not found (EDGED_PNGSUITE): PngSuite streams not tested", icorpus_pngsuite_dir());
    for (i = 0; i < k.n; i += BATCH)
        run_batch(ctx, k.c + i, k.n - i < BATCH ? k.n - i : BATCH);
    if (k.n > 0)
        too_long(ctx, &k.c[0]);
    time_photo(ctx, &k.seed, q && atoi(q) > 0);
    check_knobs_reset();
    icorpus_free(&k);
    gconv_close(ctx);
    return check_summary();
}
