/* pngbuf.h — a growing byte buffer for the PNG tests that build files by hand. */
#ifndef EDGED_PNGBUF_H
#define EDGED_PNGBUF_H

#include <stdint.h>
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

#endif
