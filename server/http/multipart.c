/* multipart.c — multipart/form-data over a complete body: delimiters, part headers, no copies.
 * The body is buffered whole anyway (the PNG must be complete before decoding), so parsing after
 * the last byte keeps this a pure function of the bytes: split delivery cannot change the result,
 * and a fuzz target needs no HTTP connection. */
#include "http/multipart.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "errors.h"

#define NPOS ((size_t)-1)

/* Copies the value of parameter `key` (after "key=", quoted or a token) of a header value; a
 * value longer than cap - 1 is cut there (callers that care check its length). An unterminated
 * quoted value counts as absent: the header is malformed. */
static int header_param(const char *value, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key), n = 0;
    const char *p = value;

    while ((p = strchr(p, ';'))) {
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncasecmp(p, key, klen) != 0 || p[klen] != '=')
            continue;
        p += klen + 1;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                char c = (*p == '\\' && p[1]) ? *++p : *p;
                if (n + 1 < cap)
                    out[n++] = c;
            }
            out[n] = '\0';
            return *p == '"';
        }
        for (; *p && *p != ';' && *p != ' ' && *p != '\t' && n + 1 < cap; p++)
            out[n++] = *p;
        out[n] = '\0';
        return 1;
    }
    return 0;
}

int multipart_boundary(const char *content_type, char *boundary, char *err)
{
    char b[MULTIPART_MAX_BOUNDARY + 2];

    if (!header_param(content_type, "boundary", b, sizeof(b)) || b[0] == '\0')
        return edged_fail(err, EDGED_E_MULTIPART, "multipart Content-Type has no boundary parameter");
    if (strlen(b) > MULTIPART_MAX_BOUNDARY)
        return edged_fail(err, EDGED_E_MULTIPART, "multipart boundary longer than %d characters",
                          MULTIPART_MAX_BOUNDARY);
    memcpy(boundary, b, strlen(b) + 1);
    return 0;
}

/* Offset of the next "\r\n--boundary" at or after from, or NPOS. */
static size_t find_delim(const uint8_t *b, size_t len, size_t from, const char *bd, size_t blen)
{
    size_t need = 4 + blen;

    while (from + need <= len) {
        const uint8_t *r = memchr(b + from, '\r', len - from - need + 1);
        size_t at;
        if (!r)
            return NPOS;
        at = (size_t)(r - b);
        if (b[at + 1] == '\n' && b[at + 2] == '-' && b[at + 3] == '-' && memcmp(b + at + 4, bd, blen) == 0)
            return at;
        from = at + 1;
    }
    return NPOS;
}

/* Parses one header line (NUL-terminated) into part. */
static void part_header(char *line, struct multipart_part *part)
{
    char *colon = strchr(line, ':'), *v;

    if (!colon)
        return;
    *colon = '\0';
    for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
        ;
    if (strcasecmp(line, "Content-Disposition") == 0) {
        char fname[8];
        if (strncasecmp(v, "form-data", 9) != 0)
            return;
        header_param(v, "name", part->name, sizeof(part->name));
        part->has_filename = header_param(v, "filename", fname, sizeof(fname)) ||
                             header_param(v, "filename*", fname, sizeof(fname));
    } else if (strcasecmp(line, "Content-Type") == 0) {
        snprintf(part->content_type, sizeof(part->content_type), "%s", v);
    }
}

/* Parses the header block [h, e) (CRLF-separated lines) of part number idx. */
static int part_headers(const uint8_t *b, size_t h, size_t e, struct multipart_part *part, int idx, char *err)
{
    char block[MULTIPART_MAX_HEADERS + 1], *line, *save = NULL;

    if (e - h > MULTIPART_MAX_HEADERS)
        return edged_fail(err, EDGED_E_MULTIPART, "part %d: headers longer than %d bytes", idx,
                          MULTIPART_MAX_HEADERS);
    memcpy(block, b + h, e - h);
    block[e - h] = '\0';
    if (strlen(block) != e - h)
        return edged_fail(err, EDGED_E_MULTIPART, "part %d: NUL byte in the headers", idx);
    for (line = strtok_r(block, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save))
        part_header(line, part);
    if (!part->name[0])
        return edged_fail(err, EDGED_E_MULTIPART, "part %d has no Content-Disposition form-data name", idx);
    return 0;
}

/* Position just after the delimiter's line at p ("--boundary" + optional padding + CRLF), 0 for
 * the closing delimiter ("--boundary--"), or NPOS when malformed. */
static size_t after_delim(const uint8_t *b, size_t len, size_t p, size_t blen)
{
    size_t q = p + 2 + blen;

    if (q + 2 <= len && b[q] == '-' && b[q + 1] == '-')
        return 0;
    while (q < len && (b[q] == ' ' || b[q] == '\t'))
        q++;
    if (q + 2 <= len && b[q] == '\r' && b[q + 1] == '\n')
        return q + 2;
    return NPOS;
}

int multipart_parse(const uint8_t *body, size_t len, const char *boundary, struct multipart_part *parts, int max,
                    char *err)
{
    size_t blen = strlen(boundary), p, h, e, d, next;
    int n = 0, rc;

    if (len >= 2 + blen && body[0] == '-' && body[1] == '-' && memcmp(body + 2, boundary, blen) == 0)
        p = 0;
    else if ((p = find_delim(body, len, 0, boundary, blen)) != NPOS)
        p += 2;
    else
        return edged_fail(err, EDGED_E_MULTIPART, "body has no multipart boundary '--%s'", boundary);
    for (;;) {
        if ((h = after_delim(body, len, p, blen)) == 0)
            break; /* closing delimiter */
        if (h == NPOS)
            return edged_fail(err, EDGED_E_MULTIPART, "malformed delimiter line at byte %zu", p);
        if (n == max)
            return edged_fail(err, EDGED_E_MULTIPART, "more than %d parts", max);
        memset(&parts[n], 0, sizeof(parts[n]));
        if (h + 2 <= len && body[h] == '\r' && body[h + 1] == '\n') {
            e = h;
            d = h + 2; /* no header lines */
        } else {
            for (e = h; e + 4 <= len && memcmp(body + e, "\r\n\r\n", 4) != 0; e++)
                if (e - h > MULTIPART_MAX_HEADERS)
                    break;
            if (e + 4 > len || e - h > MULTIPART_MAX_HEADERS)
                return edged_fail(err, EDGED_E_MULTIPART, "part %d: headers not terminated by an empty line", n);
            d = e + 4;
        }
        if ((rc = part_headers(body, h, e, &parts[n], n, err)) < 0)
            return rc;
        if ((next = find_delim(body, len, d, boundary, blen)) == NPOS)
            return edged_fail(err, EDGED_E_MULTIPART, "truncated body: part '%s' has no closing boundary",
                              parts[n].name);
        parts[n].data = body + d;
        parts[n].len = next - d;
        n++;
        p = next + 2;
    }
    if (n == 0)
        return edged_fail(err, EDGED_E_MULTIPART, "multipart body has no parts");
    return n;
}
