/* test_gpu_inflate.c — the device inflate (gpu/ginflate.cu through gconv_inflate_host) against
 * libdeflate and the host driver of the same algorithm: the streams of test_inflate_spec in batches
 * of 32 (same verdict as inflspec_decode, libdeflate's bytes when it decodes), then the device time
 * of one photograph-sized stream (2048x2048 RGB rows at zlib level 6) and of a batch of 32 of them.
 * Skips without a usable GPU; EDGED_REQUIRE_GPU=1 fails instead. EDGED_GPU_QUICK=1 (the sanitizer
 * runs) times a 256-row stream alone instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "errors.h"
#include "gconv.h"
#include "inflate_corpus.h"
#include "inflate_spec.h"

#define BATCH 32

/* Runs cases [first, first + n) as one batch; checks each verdict and the bytes. */
static void run_batch(struct gconv_ctx *ctx, const struct icase *c, int n)
{
    const uint8_t *z[BATCH];
    uint8_t *out[BATCH], *host = NULL;
    size_t len[BATCH], olen[BATCH];
    int status[BATCH], i, rc;
    double ms = 0;
    char err[EDGED_ERR_LEN] = "";

    for (i = 0; i < n; i++) {
        z[i] = c[i].z;
        len[i] = c[i].zlen;
        olen[i] = c[i].out_len;
        if (!(out[i] = malloc(olen[i] ? olen[i] : 1)))
            abort();
    }
    rc = gconv_inflate_host(ctx, n, z, len, out, olen, status, &ms, err);
    CHECK(rc == 0, "batch from %s: %s", c[0].name, err);
    for (i = 0; rc == 0 && i < n; i++) {
        int hrc;
        if (!(host = malloc(olen[i] ? olen[i] : 1)))
            abort();
        hrc = inflspec_decode(z[i], len[i], host, olen[i], NULL);
        CHECK(status[i] == (hrc == 0 ? 0 : 1), "%s: device status %d, host rc %d", c[i].name, status[i], hrc);
        if (status[i] == 0)
            CHECK(c[i].ok && !memcmp(out[i], c[i].want, olen[i]), "%s: device bytes differ from libdeflate",
                  c[i].name);
        free(host);
    }
    for (i = 0; i < n; i++)
        free(out[i]);
}

/* The device time of one photograph-sized stream and of BATCH of them. */
static void time_photo(struct gconv_ctx *ctx, uint64_t *seed, int quick)
{
    size_t n = (size_t)(quick ? 256 : 2048) * (2048 * 3 + 1), zl;
    uint8_t *d = icorpus_data(1, n, seed), *z = icorpus_zlib(d, n, 6, 8, Z_DEFAULT_STRATEGY, &zl);
    const uint8_t *zs[BATCH];
    uint8_t *out[BATCH];
    size_t len[BATCH], olen[BATCH];
    int status[BATCH], i, k, rc, good;
    double ms = 0;
    char err[EDGED_ERR_LEN] = "";

    for (k = 1; k <= (quick ? 1 : BATCH); k += BATCH - 1) {
        for (i = 0; i < k; i++) {
            zs[i] = z;
            len[i] = zl;
            olen[i] = n;
            if (!(out[i] = malloc(n)))
                abort();
        }
        rc = gconv_inflate_host(ctx, k, zs, len, out, olen, status, &ms, err);
        CHECK(rc == 0, "photo batch of %d: %s", k, err);
        for (i = 0, good = 0; rc == 0 && i < k; i++)
            good += status[i] == 0 && !memcmp(out[i], d, n);
        CHECK(rc == 0 && good == k, "photo batch of %d: %d of %d decoded right", k, good, k);
        printf("device inflate: %d x (%zu -> %zu bytes, zlib level 6): %.3f ms\n", k, zl, n, ms);
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
    time_photo(ctx, &k.seed, q && atoi(q) > 0);
    icorpus_free(&k);
    gconv_close(ctx);
    return check_summary();
}
