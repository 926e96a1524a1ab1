/* upload.c — the request body buffer and its parse into image bytes and parameters. */
#include "http/upload.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errors.h"
#include "http/multipart.h"

#define UPLOAD_FIRST_CHUNK (256 * 1024) /* first buffer of a body of unknown length */

void upload_body_init(struct upload_body *b, size_t max) { *b = (struct upload_body){NULL, 0, 0, max, 0}; }

void upload_body_announce(struct upload_body *b, size_t n)
{
    b->max = n;
    b->exact = 1;
}

void upload_body_free(struct upload_body *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int upload_body_reserve(struct upload_body *b, size_t n, char *err)
{
    uint8_t *p;

    if (n > b->max)
        return edged_fail(err, EDGED_E_BODY_TOO_LARGE, "body of %zu bytes exceeds the %zu-byte cap", n, b->max);
    if (n <= b->cap)
        return 0;
    if (!(p = realloc(b->p, n)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot buffer a body of %zu bytes", n);
    b->p = p;
    b->cap = n;
    return 0;
}

/* An announced length is allocated whole by the first piece, so the body is never copied again
 * (an image the job then owns stays where it arrived). That is address space, not memory: a large
 * allocation is mapped lazily and its pages are touched only as bytes arrive, and the memory budget
 * counts what has arrived, in steps (receive() in http_daemon.c), not the capacity. A body of
 * unknown length (chunked) grows by doubling (O(n) copies in all). Growth never passes max; a body
 * that would is refused whole, before anything of the piece is kept. */
size_t upload_body_next_cap(const struct upload_body *b, size_t n)
{
    size_t cap;

    if (n <= b->cap - b->len || n > b->max - b->len)
        return b->cap;
    if (b->exact)
        return b->max;
    cap = b->cap ? b->cap : UPLOAD_FIRST_CHUNK;
    while (cap < b->len + n && cap <= b->max / 2)
        cap *= 2;
    return cap < b->len + n ? b->len + n : cap > b->max ? b->max : cap;
}

int upload_body_append(struct upload_body *b, const void *data, size_t n, char *err)
{
    int rc;

    if (n > b->max - b->len)
        return edged_fail(err, EDGED_E_BODY_TOO_LARGE, "body exceeds the %zu-byte cap", b->max);
    if (n > b->cap - b->len && (rc = upload_body_reserve(b, upload_body_next_cap(b, n), err)) < 0)
        return rc;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

#define UPLOAD_PARTS_HINT "the image goes in form field 'image' or 'file', the parameters in 'params' (JSON) or " \
                          "in fields named after them"

/* A form field's bytes as text: bounded, NUL-free, terminated. A file that is no text is an image
 * sent under another name, not a parameter: the message says which names are expected. */
static int form_param(struct params *p, const struct multipart_part *part, char *err)
{
    char *text, q[PARAMS_QUOTE_MAX + 1];
    int rc;

    if (part->len > PARAMS_MAX_JSON || memchr(part->data, '\0', part->len))
        return edged_fail(err, EDGED_E_PARAM, "form field '%s': %s, but %s", params_quote(part->name, q),
                          part->has_filename ? "a file that is no parameter's text" : "over the size of a parameter "
                          "or not text", UPLOAD_PARTS_HINT);
    if (!(text = malloc(part->len + 1)))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory");
    memcpy(text, part->data, part->len);
    text[part->len] = '\0';
    rc = params_set_text(p, part->name, text, err);
    free(text);
    return rc;
}

/* The form field names the image may come in: `image` (this API) and `file` (imaginary's name,
 * and what most HTTP client examples send). Any other name is a parameter. */
static int is_image_part(const char *name) { return strcmp(name, "image") == 0 || strcmp(name, "file") == 0; }

/* Parts: exactly one image part (`image` or `file`), at most one `params` (JSON, applied last so
 * that it wins), any other part is a plain form field naming a parameter. */
static int parse_multipart(const char *ctype, const uint8_t *body, size_t len, struct upload *u, char *err)
{
    struct multipart_part parts[MULTIPART_MAX_PARTS];
    const struct multipart_part *json = NULL;
    char boundary[MULTIPART_MAX_BOUNDARY + 1];
    int n, rc;

    if ((rc = multipart_boundary(ctype ? ctype : "", boundary, err)) < 0)
        return rc;
    if ((n = multipart_parse(body, len, boundary, parts, MULTIPART_MAX_PARTS, err)) < 0)
        return n;
    params_source_begin(&u->p); /* form fields override the query string; each is given once */
    for (int i = 0; i < n; i++) {
        if (is_image_part(parts[i].name)) {
            if (u->image)
                return edged_fail(err, EDGED_E_MULTIPART, "more than one image part ('%s' after an earlier "
                                  "'image' or 'file')", parts[i].name);
            u->image = parts[i].data;
            u->image_len = parts[i].len;
        } else if (strcmp(parts[i].name, "params") == 0) {
            if (json)
                return edged_fail(err, EDGED_E_MULTIPART, "more than one 'params' part");
            json = &parts[i];
        } else if ((rc = form_param(&u->p, &parts[i], err)) < 0) {
            return rc;
        }
    }
    if (json && (rc = params_set_json(&u->p, (const char *)json->data, json->len, err)) < 0)
        return rc;
    if (!u->image)
        return edged_fail(err, EDGED_E_MULTIPART, "no image part: %s", UPLOAD_PARTS_HINT);
    return 0;
}

int upload_parse(const char *content_type, const uint8_t *body, size_t len, struct upload *u, char *err)
{
    int rc;

    u->image = NULL;
    u->image_len = 0;
    if (content_type && strncasecmp(content_type, "image/", 6) == 0) {
        u->image = body;
        u->image_len = len;
    } else if ((rc = parse_multipart(content_type, body, len, u, err)) < 0) {
        return rc;
    }
    return params_validate(&u->p, err);
}
