/* multipart.h — strict multipart/form-data parsing (RFC 7578) of a complete, buffered body. */
#ifndef EDGED_MULTIPART_H
#define EDGED_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#define MULTIPART_MAX_PARTS 32
#define MULTIPART_MAX_BOUNDARY 70   /* RFC 2046 */
#define MULTIPART_MAX_HEADERS 8192  /* bytes of header lines per part */

/* One part; data points into the parsed body (no copy). */
struct multipart_part {
    char name[64];
    char content_type[128];
    int has_filename;
    const uint8_t *data;
    size_t len;
};

/* Extracts the boundary parameter of a Content-Type value ("multipart/form-data; boundary=x",
 * quoted or not) into boundary (MULTIPART_MAX_BOUNDARY + 1 bytes). 0 or EDGED_E_MULTIPART. */
int multipart_boundary(const char *content_type, char *boundary, char *err);

/* Splits body into at most max parts. Every part needs a Content-Disposition form-data name; the
 * closing delimiter must be present (a truncated body is an error, never a shorter part).
 * Preamble and epilogue are ignored. Returns the number of parts, or EDGED_E_MULTIPART with a
 * message saying what is wrong and where. */
int multipart_parse(const uint8_t *body, size_t len, const char *boundary, struct multipart_part *parts, int max,
                    char *err);

#endif
