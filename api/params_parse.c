/* params_parse.c — request parameters from text fields (query string, form) and JSON `params`,
 * strictly: the checks of the text that cJSON does not make (exact JSON numbers, UTF-8, no U+0000,
 * the nesting depth), a parse of a bounded copy, then each field's setter (params_field.c). */
#include "params.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "params_field.h"
#include "utf8.h"

static size_t digits_end(const char *s, size_t i, size_t n)
{
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    return i;
}

/* Length of the JSON number at s (RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), or
 * 0 where s[0..n) does not start with one. */
static size_t json_number_len(const char *s, size_t n)
{
    size_t i = n > 0 && s[0] == '-', d;

    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        i = digits_end(s, i + 1, n);
    else
        return 0;
    if (i < n && s[i] == '.') {
        if ((d = digits_end(s, i + 1, n)) == i + 1)
            return 0;
        i = d;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i += i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-') ? 2 : 1;
        if ((d = digits_end(s, i, n)) == i)
            return 0;
        i = d;
    }
    return i;
}

/* Span of the number-like token at s: letters, digits, '.', '+' and '-' up to the next
 * delimiter, so that "0x10" and "5.e3" are judged whole. */
static size_t number_token_len(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n && s[i] && (strchr("+-.", s[i]) || (s[i] >= '0' && s[i] <= '9') ||
                             ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')))
        i++;
    return i;
}

/* What cJSON does not check: every number token must be exactly a JSON number ("05", "5.", "+1"
 * and ".5" are not), strings must be valid UTF-8 and none may hold \u0000 (cJSON would cut it
 * there). Strings are skipped with their escapes; the last object key seen names the field in
 * the message. */
static int json_strict(const char *what, const char *s, size_t len, char *err)
{
    char key[PARAMS_QUOTE_MAX + 1] = "", q[PARAMS_QUOTE_MAX + 1];
    size_t i = 0, start, n;

    while (i < len) {
        if (s[i] == '"') {
            for (start = ++i; i < len && s[i] != '"'; i++) {
                if ((unsigned char)s[i] >= 0x80 && (n = utf8_seq((const unsigned char *)s + i, len - i)) > 0)
                    i += n - 1;
                else if ((unsigned char)s[i] >= 0x80)
                    return edged_fail(err, EDGED_E_PARAM, "%s%s%s: string is not valid UTF-8", what,
                                      key[0] ? "." : "", key);
                if (s[i] != '\\')
                    continue;
                if (i + 5 < len && memcmp(s + i, "\\u0000", 6) == 0)
                    return edged_fail(err, EDGED_E_PARAM, "%s%s%s: string contains U+0000", what,
                                      key[0] ? "." : "", key);
                i++;
            }
            n = i - start < PARAMS_QUOTE_MAX ? i - start : PARAMS_QUOTE_MAX;
            i++;
            while (i < len && strchr(" \t\r\n", s[i]))
                i++;
            if (i < len && s[i] == ':') {
                memcpy(q, s + start, n);
                q[n] = '\0';
                params_quote(q, key);
            }
        } else if (s[i] == '-' || s[i] == '+' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9')) {
            n = number_token_len(s + i, len - i);
            if (json_number_len(s + i, len - i) != n) {
                memcpy(q, s + i, n < PARAMS_QUOTE_MAX ? n : PARAMS_QUOTE_MAX);
                q[n < PARAMS_QUOTE_MAX ? n : PARAMS_QUOTE_MAX] = '\0';
                return edged_fail(err, EDGED_E_PARAM, "%s%s%s: '%s' is not a JSON number", what,
                                  key[0] ? "." : "", key, q);
            }
            i += n;
        } else {
            i++;
        }
    }
    return 0;
}

/* Depth of the deepest array/object nesting, counted outside strings; stops past `limit` so that
 * a hostile text is rejected before cJSON recurses into it. */
static int json_depth(const char *s, size_t len, int limit)
{
    int depth = 0, max = 0, in_str = 0;

    for (size_t i = 0; i < len && max <= limit; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max)
                max = depth;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return max;
}

/* Parses a bounded, NUL-terminated copy of text; *out is the caller's to cJSON_Delete. */
static int json_parse(const char *what, const char *text, size_t len, cJSON **out, char *err)
{
    const char *end = NULL;
    char *copy;

    *out = NULL;
    if (len == 0)
        return edged_fail(err, EDGED_E_PARAM, "%s: empty JSON", what);
    if (len > PARAMS_MAX_JSON)
        return edged_fail(err, EDGED_E_PARAM, "%s: JSON of %zu bytes exceeds %d", what, len, PARAMS_MAX_JSON);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) /* cJSON would skip it; JSON (RFC 8259) forbids it */
        return edged_fail(err, EDGED_E_PARAM, "%s: JSON starts with a byte-order mark", what);
    if (memchr(text, '\0', len))
        return edged_fail(err, EDGED_E_PARAM, "%s: JSON contains a NUL byte", what);
    if (json_strict(what, text, len, err) < 0)
        return EDGED_E_PARAM;
    if (!utf8_valid(text, len)) /* strings were checked above, naming their field; this is the rest */
        return edged_fail(err, EDGED_E_PARAM, "%s: JSON is not valid UTF-8", what);
    if (json_depth(text, len, PARAMS_MAX_DEPTH) > PARAMS_MAX_DEPTH)
        return edged_fail(err, EDGED_E_PARAM, "%s: JSON nested deeper than %d", what, PARAMS_MAX_DEPTH);
    if (!(copy = malloc(len + 1)))
        return edged_fail(err, EDGED_E_NOMEM, "%s: out of memory", what);
    memcpy(copy, text, len);
    copy[len] = '\0';
    *out = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
    if (!*out) {
        size_t at = end && end >= copy ? (size_t)(end - copy) : 0;
        free(copy);
        return edged_fail(err, EDGED_E_PARAM, "%s: invalid JSON near byte %zu", what, at);
    }
    free(copy);
    return 0;
}

static int text_value(const struct params_field *f, const char *value, cJSON **out, char *err)
{
    char *list, *tok, *save = NULL, q[PARAMS_QUOTE_MAX + 1];
    int rc = 0;

    switch (f->text) {
    case PARAMS_TEXT_STRING:
        *out = cJSON_CreateString(value);
        break;
    case PARAMS_TEXT_BOOL:
        if (strcmp(value, "true") && strcmp(value, "false") && strcmp(value, "1") && strcmp(value, "0"))
            return edged_fail(err, EDGED_E_PARAM, "%s: '%s' is not true, false, 1 or 0", f->name,
                              params_quote(value, q));
        *out = cJSON_CreateBool(value[0] == 't' || value[0] == '1');
        break;
    case PARAMS_TEXT_JSON:
        if ((rc = json_parse(f->name, value, strlen(value), out, err)) < 0)
            return edged_fail(err, rc, "%s: '%s' is not a valid value", f->name, params_quote(value, q));
        break;
    case PARAMS_TEXT_LIST:
        if (!(*out = cJSON_CreateArray()) || !(list = strdup(value)))
            break;
        for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            cJSON_AddItemToArray(*out, cJSON_CreateString(tok));
        free(list);
        break;
    }
    return *out ? 0 : edged_fail(err, EDGED_E_NOMEM, "%s: out of memory", f->name);
}

int params_set_text(struct params *p, const char *key, const char *value, char *err)
{
    const struct params_field *f = params_field_find(key);
    char q[PARAMS_QUOTE_MAX + 1];
    cJSON *v = NULL;
    int rc;

    value = value ? value : "";
    if (!f)
        return edged_fail(err, EDGED_E_PARAM, "unknown parameter '%s'", params_quote(key, q));
    if (p->source_seen & f->bit)
        return edged_fail(err, EDGED_E_PARAM, "%s: given twice; give each parameter once", f->name);
    p->source_seen |= f->bit;
    if (!utf8_valid(value, strlen(value)))
        return edged_fail(err, EDGED_E_PARAM, "%s: value is not valid UTF-8", f->name);
    if ((rc = text_value(f, value, &v, err)) == 0)
        rc = params_field_set(p, f, v, err);
    cJSON_Delete(v);
    return rc;
}

int params_set_json(struct params *p, const char *text, size_t len, char *err)
{
    const struct params_field *f;
    const cJSON *item;
    cJSON *root = NULL;
    char q[PARAMS_QUOTE_MAX + 1];
    unsigned seen = 0;
    int rc;

    if ((rc = json_parse("params", text, len, &root, err)) < 0)
        return rc;
    if (!cJSON_IsObject(root)) {
        rc = edged_fail(err, EDGED_E_PARAM, "params: expected a JSON object");
        goto out;
    }
    cJSON_ArrayForEach(item, root)
    {
        if (!(f = params_field_find(item->string))) {
            rc = edged_fail(err, EDGED_E_PARAM, "params: unknown parameter '%s'",
                            params_quote(item->string, q));
            goto out;
        }
        if (seen & f->bit) {
            rc = edged_fail(err, EDGED_E_PARAM, "params: duplicate key '%s'", f->name);
            goto out;
        }
        seen |= f->bit;
        if ((rc = params_field_set(p, f, item, err)) < 0)
            goto out;
    }
out:
    cJSON_Delete(root);
    return rc;
}
