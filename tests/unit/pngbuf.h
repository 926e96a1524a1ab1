/* pngbuf.h — a growing byte buffer for the PNG tests that build files by hand, and the files they
 * read (PngSuite). */
#ifndef EDGED_PNGBUF_H
#define EDGED_PNGBUF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
    uint8_t *p;
    size_t len, cap;
};

/* Appends n bytes of data (aborts when out of memory: a test has nothing better to do). */
static inline void buf_add(struct buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        if (!(b->p = realloc(b->p, b->cap)))
            abort();
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

/* The whole file at path (malloc'd, one spare byte), its size in *len; NULL when unreadable. */
static inline uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n + 1)))
        *len = fread(p, 1, (size_t)n, f);
    fclose(f);
    return p;
}

/* PngSuite's folder: EDGED_PNGSUITE, else ../shared/pngsuite from the repository root. */
static inline const char *suite_dir(void)
{
    return getenv("EDGED_PNGSUITE") ? getenv("EDGED_PNGSUITE") : "../shared/pngsuite";
}

#endif
