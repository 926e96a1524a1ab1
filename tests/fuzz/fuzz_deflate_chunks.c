/* fuzz_deflate_chunks.c — libFuzzer target: the chunked deflate core's host driver on arbitrary bytes,
 * with the chunk size, level and hint distance taken from the first four bytes; libdeflate must
 * decompress the stream back to the input, within deflchunks_bound. When the third byte's high bit
 * is set, the input becomes a two-level map (each byte 0 or 255 by its high bit) coded with runs. */
#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deflate_chunks.h"
#include "deflate_host.h"
#include "errors.h"

/* Inputs past this are cut: a few chunks of every size already reach every path. */
#define FUZZ_MAX_INPUT ((size_t)1 << 18)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct libdeflate_decompressor *d;
    char err[EDGED_ERR_LEN];
    uint8_t *z = NULL, *back, *map = NULL;
    size_t chunk, zlen = 0, got = 0, n;
    unsigned hint;
    int level, runs;

    if (size < 4)
        return 0;
    chunk = 1 + ((size_t)data[0] << 8 | data[1]) % 70000; /* tiny chunks up to over one stored block */
    level = data[2] % 10;
    runs = data[2] >> 7;
    hint = data[3] < 16 ? 0 : data[3] * 13u;
    data += 4, n = size - 4;
    if (n > FUZZ_MAX_INPUT)
        n = FUZZ_MAX_INPUT;
    if (n / chunk > 64) /* each chunk clears a hash table and reads a 32 KiB dictionary: keep runs fast */
        chunk = n / 64 + 1;
    if (!d && !(d = libdeflate_alloc_decompressor()))
        abort();
    if (runs) {
        if (!(map = malloc(n + 1)))
            abort();
        for (size_t i = 0; i < n; i++)
            map[i] = data[i] & 0x80 ? 255 : 0;
        data = map;
    }
    if (deflhost_compress(data, n, chunk, level, hint, runs, &z, &zlen, err) != 0)
        abort();
    if (zlen > deflchunks_bound(n, chunk) || !(back = malloc(n + 1)))
        abort();
    if (libdeflate_zlib_decompress(d, z, zlen, back, n, &got) != LIBDEFLATE_SUCCESS || got != n ||
        (n && memcmp(back, data, n) != 0))
        abort();
    free(back);
    free(z);
    free(map);
    return 0;
}
