/* utf8.c — UTF-8 validation and repair. */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

#define UTF8_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80                    ? 1
                 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
                 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
                 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                                : 0;
    unsigned lo = 0x80, hi = 0xBF;

    if (len == 0 || len > n)
        return 0;
    if (s[0] == 0xE0)
        lo = 0xA0;
    else if (s[0] == 0xED)
        hi = 0x9F;
    else if (s[0] == 0xF0)
        lo = 0x90;
    else if (s[0] == 0xF4)
        hi = 0x8F;
    if (len > 1 && (s[1] < lo || s[1] > hi))
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

int utf8_valid(const char *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq((const unsigned char *)s + i, n - i)))
            return 0;
    return 1;
}

/* Every invalid byte grows by 2 (one byte becomes three): the copy holds at most 3n + 1. */
char *utf8_repair(const char *s, int *oom)
{
    size_t n = strlen(s), w = 0, k;
    char *out;

    *oom = 0;
    if (utf8_valid(s, n))
        return NULL;
    if (n > (((size_t)-1) - 1) / 3 || !(out = malloc(3 * n + 1))) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i += k) {
        if ((k = utf8_seq((const unsigned char *)s + i, n - i)) > 0) {
            memcpy(out + w, s + i, k);
            w += k;
        } else {
            memcpy(out + w, UTF8_REPLACEMENT, 3);
            w += 3;
            k = 1;
        }
    }
    out[w] = '\0';
    return out;
}
