/* fuzz_request.c — libFuzzer target: the request body path of POST /v1/filter as the server runs
 * it: pieces appended to the bounded body buffer (upload_body_append, as http_daemon.c does for each
 * libmicrohttpd callback), then upload_parse (multipart, form fields, JSON params, validation).
 * Input: byte 0 seeds the split (bit 1: the length announced first, as a Content-Length), then the
 * Content-Type value up to the first '\n', then the body.
 * Oracles: the same body delivered whole and in random pieces gives the same outcome (code,
 * message, image bytes, parameters); errors are only the documented ones; the image, when found,
 * lies inside the body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "params.h"
#include "http/upload.h"

#define FUZZ_MAX_BODY (1u << 20)
#define FUZZ_MAX_CTYPE 256

/* xorshift32: a split that depends on the input only. */
static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Appends body in pieces of 1..64 bytes (seed odd) or 1..4096 bytes (seed even); 0 or the code. */
static int assemble(struct upload_body *b, const uint8_t *body, size_t len, uint8_t seed, char *err)
{
    uint32_t st = 0x9e3779b9u ^ seed;
    size_t at = 0, n, span = (seed & 1) ? 64 : 4096;
    int rc;

    while (at < len) {
        n = 1 + next_rand(&st) % span;
        n = n > len - at ? len - at : n;
        if ((rc = upload_body_append(b, body + at, n, err)) < 0)
            return rc;
        at += n;
    }
    return upload_body_append(b, body, 0, err); /* the final, empty callback */
}

static int parse(const char *ctype, const uint8_t *body, size_t len, struct upload *u, char *err)
{
    params_init(&u->p, PARAMS_FILTER);
    return upload_parse(ctype, body, len, u, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char ctype[FUZZ_MAX_CTYPE + 1], err1[EDGED_ERR_LEN] = "", err2[EDGED_ERR_LEN] = "";
    const uint8_t *nl, *body;
    struct upload_body b;
    struct upload u1, u2;
    size_t clen, len;
    int rc1, rc2;

    if (size < 2 || size > FUZZ_MAX_BODY)
        return 0;
    nl = memchr(data + 1, '\n', size - 1 < FUZZ_MAX_CTYPE ? size - 1 : FUZZ_MAX_CTYPE);
    clen = nl ? (size_t)(nl - data - 1) : 0;
    memcpy(ctype, data + 1, clen);
    ctype[clen] = '\0';
    body = nl ? nl + 1 : data + 1;
    len = size - (size_t)(body - data);

    memset(&u1, 0, sizeof(u1));
    memset(&u2, 0, sizeof(u2));
    rc1 = parse(ctype, body, len, &u1, err1);
    upload_body_init(&b, FUZZ_MAX_BODY);
    if (data[0] & 2)
        upload_body_announce(&b, len); /* Content-Length given: one buffer of that size */
    if (assemble(&b, body, len, data[0], err2) != 0 || b.len != len || (len && memcmp(b.p, body, len)) ||
        ((data[0] & 2) && len && b.cap != len))
        abort(); /* a body under the cap is kept whole, byte for byte; an announced one in one buffer */
    rc2 = parse(ctype, b.p, b.len, &u2, err2);
    if (rc1 != rc2 || strcmp(err1, err2) != 0)
        abort();
    if (rc1 == 0) {
        if (u1.image_len != u2.image_len || (u1.image && (u1.image < body || u1.image + u1.image_len > body + len)) ||
            (u1.image_len && memcmp(u1.image, u2.image, u1.image_len)) ||
            (u1.image && u2.image - b.p != u1.image - body) || memcmp(&u1.p, &u2.p, sizeof(u1.p)) != 0)
            abort();
    } else if (rc1 != EDGED_E_MULTIPART && rc1 != EDGED_E_PARAM && rc1 != EDGED_E_NOMEM) {
        abort();
    }
    upload_body_free(&b);
    return 0;
}
