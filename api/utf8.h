/* utf8.h — UTF-8 validation: the one rule for what counts as valid UTF-8 (parameters, log lines). */
#ifndef EDGED_UTF8_H
#define EDGED_UTF8_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Length of the UTF-8 sequence at s (at most n bytes), or 0 where it is not valid UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF included). */
size_t utf8_seq(const unsigned char *s, size_t n);

/* 1 when the n bytes at s are valid UTF-8, else 0. */
int utf8_valid(const char *s, size_t n);

/* s (NUL-terminated) as valid UTF-8: each byte that starts no valid sequence becomes U+FFFD.
 * Returns a malloc'd copy (caller frees) when s had such bytes, NULL when s is valid as it is or
 * when out of memory (*oom then says which). */
char *utf8_repair(const char *s, int *oom);

#ifdef __cplusplus
}
#endif
#endif
