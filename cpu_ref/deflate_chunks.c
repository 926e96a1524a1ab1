/* deflate_chunks.c — the chunked deflate's bound and zlib header, shared by the device encoder and
 * the host driver (deflate_host.c). */
#include "deflate_chunks.h"

#include <stdint.h>

#include "image.h"

size_t deflchunks_bound(size_t n, size_t chunk)
{
    size_t chunks, total;

    if (chunk == 0)
        return 0;
    chunks = n ? (n + chunk - 1) / chunk : 1;
    /* every chunk's stored overhead; the data once */
    if (size_mul(chunks, 5 * ((chunk + DEFL_MAX_STORED - 1) / DEFL_MAX_STORED), &total) ||
        total > SIZE_MAX - n || total + n > SIZE_MAX - DEFLCHUNKS_ZLIB_OVERHEAD)
        return 0;
    return total + n + DEFLCHUNKS_ZLIB_OVERHEAD;
}

/* Deflate with a 32 KiB window and the "fastest" level flag (it only informs a recompressor), as
 * the CPU encoder's run coder writes. */
void deflchunks_zlib_header(uint8_t *p)
{
    p[0] = 0x78;
    p[1] = 0x01;
}
