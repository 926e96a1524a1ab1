/* deflate_host.c — the host driver of the chunked deflate: the device's chunks, in a loop. */
#include "deflate_host.h"

#include <stdlib.h>

#include "deflate_chunks.h"
#include "deflate_runs.h"
#include "errors.h"

/* The chunks run one after the other here, each written right behind the last; the device writes
 * them into slots of defl_chunk_bound bytes and compacts (gpu/gconv_png_encode.cu). */
int deflhost_compress(const uint8_t *in, size_t n, size_t chunk, int level, unsigned hint, int runs,
                      uint8_t **out, size_t *out_len, char *err)
{
    struct defl_scratch sc = {NULL, NULL, NULL};
    size_t bound = deflchunks_bound(n, chunk), pos = 2;
    uint32_t adler = 1;
    uint8_t *buf = NULL;
    int rc = 0;

    *out = NULL, *out_len = 0;
    if (chunk < 1 || chunk > DEFL_MAX_CHUNK || level < 0 || level > 9 || !bound)
        return edged_fail(err, EDGED_E_PARAM, "deflate chunks: chunk %zu (1..%u) or level %d (0..9) invalid",
                          chunk, DEFL_MAX_CHUNK, level);
    if (!(buf = malloc(bound)) || !(sc.hash = malloc(DEFL_HASH_SIZE * sizeof(*sc.hash))) ||
        !(sc.tok = malloc((n < chunk ? (n ? n : 1) : chunk) * sizeof(*sc.tok))) ||
        !(sc.work = malloc(sizeof(*sc.work)))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "deflate chunks: cannot allocate %zu bytes", bound);
        goto out;
    }
    deflchunks_zlib_header(buf);
    runs = runs && level > 0 && defl_two_level(in, n);
    for (size_t start = 0;;) {
        size_t len = n - start < chunk ? n - start : chunk;
        int final = start + len == n;

        if (runs && defl_runs_take(defl_changes(in, start, len), len))
            pos += defl_runs_chunk(in, start, len, final, sc.work, buf + pos);
        else
            pos += defl_chunk(in, start, len, final, level, hint, sc, buf + pos);
        adler = defl_adler32_combine(adler, defl_adler32(1, in + start, len), len);
        start += len;
        if (final)
            break;
    }
    for (int i = 0; i < 4; i++)
        buf[pos++] = (uint8_t)(adler >> (24 - 8 * i));
    *out = buf, *out_len = pos, buf = NULL;
out:
    free(sc.work);
    free(sc.tok);
    free(sc.hash);
    free(buf);
    return rc;
}
