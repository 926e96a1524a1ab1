/* deflate_host.h — the host driver of the chunked deflate (deflate_chunks.h, deflate_runs.h): the
 * chunks the device writes, one after the other, for tests and the fuzz target. */
#ifndef EDGED_DEFLATE_HOST_H
#define EDGED_DEFLATE_HOST_H

#include <stddef.h>
#include <stdint.h>

/* Compresses n bytes at in into a zlib stream of independent chunks of chunk bytes (1 ..
 * DEFL_MAX_CHUNK) at level (0..9: 0 stores, others parse greedily); hint: a distance to try at
 * every position (a PNG row's bytes; 0 for none). runs: when every byte of in is 0 or 255, the
 * chunks whose runs are long enough are coded as runs (deflate_runs.h), as the device codes an
 * unfiltered edge map. *out is malloc'd (caller frees). Returns 0, or EDGED_E_PARAM / EDGED_E_NOMEM
 * with a message in err. */
int deflhost_compress(const uint8_t *in, size_t n, size_t chunk, int level, unsigned hint, int runs,
                      uint8_t **out, size_t *out_len, char *err);

#endif
