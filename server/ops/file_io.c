/* file_io.c — whole files into memory, grown in chunks so that pipes and files read alike. */
#include "ops/file_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

#define FILEIO_CHUNK ((size_t)1 << 20)

static int read_stream(FILE *f, const char *name, size_t max, uint8_t **out, size_t *len, char *err)
{
    uint8_t *buf = NULL, *bigger;
    size_t cap = 0, n = 0, got;

    do {
        if (n == cap) {
            if (cap > max) {
                free(buf);
                return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "%s is over the %zu byte limit", name, max);
            }
            cap += FILEIO_CHUNK;
            if (!(bigger = realloc(buf, cap))) {
                free(buf);
                return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for %s", cap, name);
            }
            buf = bigger;
        }
        n += got = fread(buf + n, 1, cap - n, f);
    } while (got > 0);
    if (ferror(f)) {
        free(buf);
        return edged_fail(err, EDGED_E_IO, "cannot read %s: %s", name, strerror(errno));
    }
    if (n > max) {
        free(buf);
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "%s is over the %zu byte limit", name, max);
    }
    *out = buf;
    *len = n;
    return 0;
}

int fileio_read(const char *path, size_t max, uint8_t **out, size_t *len, char *err)
{
    FILE *f;
    int rc;

    *out = NULL;
    *len = 0;
    if (strcmp(path, "-") == 0)
        return read_stream(stdin, "standard input", max, out, len, err);
    if (!(f = fopen(path, "rb")))
        return edged_fail(err, EDGED_E_IO, "cannot open %s: %s", path, strerror(errno));
    rc = read_stream(f, path, max, out, len, err);
    fclose(f);
    return rc;
}
