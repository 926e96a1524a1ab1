/* upload.h — a request body as it arrives (a bounded buffer filled piece by piece) and its parse
 * into the image bytes and the parameters: a raw image/png body, or multipart/form-data with an
 * `image` (or `file`) part, form fields and a JSON `params` part. Pure functions of the bytes, so that the
 * fuzz target runs exactly the code the server runs. */
#ifndef EDGED_UPLOAD_H
#define EDGED_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"

/* The body buffer: at most `max` bytes; exact when max is the length the request announced
 * (Content-Length), not only a cap. */
struct upload_body {
    uint8_t *p;
    size_t len, cap, max;
    int exact;
};

/* An empty buffer that will refuse to grow past max bytes. Allocates nothing. */
void upload_body_init(struct upload_body *b, size_t max);
/* The request announced its body as n bytes (Content-Length, at most max): max becomes n, exact,
 * and the first append allocates all n at once. Allocates nothing. */
void upload_body_announce(struct upload_body *b, size_t n);
/* Grows the buffer's capacity to n bytes (nothing when it holds that much already), the step
 * upload_body_append takes to upload_body_next_cap. Returns 0, EDGED_E_BODY_TOO_LARGE (n > max) or
 * EDGED_E_NOMEM, with a message. */
int upload_body_reserve(struct upload_body *b, size_t n, char *err);
/* The capacity the buffer will have after appending n bytes (its capacity now when they fit): an
 * announced length (exact) is taken whole by the first piece; else the first piece takes 256 KiB
 * (or max, when smaller), then it doubles, never past max. */
size_t upload_body_next_cap(const struct upload_body *b, size_t n);
/* Appends n bytes, growing the buffer to upload_body_next_cap. Returns 0,
 * EDGED_E_BODY_TOO_LARGE (the body would pass max; nothing is appended) or EDGED_E_NOMEM. */
int upload_body_append(struct upload_body *b, const void *data, size_t n, char *err);
/* Frees the buffer; the struct may be initialised again. */
void upload_body_free(struct upload_body *b);

/* A parsed upload. image points into the body (no copy). */
struct upload {
    const uint8_t *image;
    size_t image_len;
    struct params p;
};

/* Parses body (len bytes, content_type as sent, may be NULL) into u. u->p must have been set up
 * by params_init (and hold the query-string parameters, which form fields and then JSON override).
 * A Content-Type image/png, image/jpeg or image/webp takes the body as the image (its format is
 * sniffed from the bytes; the route admits only these image types); anything else is multipart:
 * exactly one image part (named `image` or `file`), at most one `params` part (JSON, applied
 * last), every other part a parameter by name. Ends with params_validate. Returns 0, EDGED_E_MULTIPART, EDGED_E_PARAM or
 * EDGED_E_NOMEM, with a message naming the part or field. */
int upload_parse(const char *content_type, const uint8_t *body, size_t len, struct upload *u, char *err);

#endif
