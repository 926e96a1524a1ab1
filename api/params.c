/* params.c — strict parsing of request parameters from text fields and JSON into struct params. */
#include "params.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "utf8.h"

/* How a text value (query string, form field) becomes the JSON value the setters take. */
enum text_kind { TEXT_STRING, TEXT_JSON, TEXT_BOOL, TEXT_LIST };

typedef int (*field_setter)(struct params *p, const cJSON *v, char *err);

struct field {
    const char *name;
    unsigned bit;
    enum text_kind text;
    field_setter set;
    int knob; /* the FILTER_KNOB_* of that name (filter_takes says which filters take it), or
               * COMMON: every filter takes it */
};

#define COMMON (-1)

/* Any byte but printable ASCII becomes '?', so that no control or non-UTF-8 byte of the input
 * reaches an answer or a log. */
const char *params_quote(const char *s, char *buf)
{
    size_t n = 0;

    for (; s && s[n] && n < PARAMS_QUOTE_MAX; n++)
        buf[n] = (unsigned char)s[n] >= 0x20 && (unsigned char)s[n] < 0x7f ? s[n] : '?';
    buf[n] = '\0';
    return buf;
}

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

static int type_error(const char *field, const char *want, const cJSON *v, char *err)
{
    const char *got = cJSON_IsString(v)   ? "a string"
                      : cJSON_IsNumber(v) ? "a number"
                      : cJSON_IsBool(v)   ? "a boolean"
                      : cJSON_IsArray(v)  ? "an array"
                      : cJSON_IsObject(v) ? "an object"
                                          : "null";
    return edged_fail(err, EDGED_E_PARAM, "%s: expected %s, got %s", field, want, got);
}

static int get_number(const cJSON *v, const char *field, double lo, double hi, double *out, char *err)
{
    if (!cJSON_IsNumber(v))
        return type_error(field, "a number", v, err);
    if (!isfinite(v->valuedouble))
        return edged_fail(err, EDGED_E_PARAM, "%s: not a finite number", field);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return edged_fail(err, EDGED_E_PARAM, "%s: %g out of range %g..%g", field, v->valuedouble, lo, hi);
    *out = v->valuedouble;
    return 0;
}

static int get_int(const cJSON *v, const char *field, int lo, int hi, int *out, char *err)
{
    double d = 0.0;
    int rc;

    if ((rc = get_number(v, field, lo, hi, &d, err)) < 0)
        return rc;
    if (d != floor(d))
        return edged_fail(err, EDGED_E_PARAM, "%s: %g is not an integer", field, d);
    *out = (int)d;
    return 0;
}

/* Looks a string value up with from_name; `names` lists the choices for the message. */
static int get_enum(const cJSON *v, const char *field, int (*from_name)(const char *), const char *names,
                    int *out, char *err)
{
    char q[PARAMS_QUOTE_MAX + 1];
    int id;

    if (!cJSON_IsString(v))
        return type_error(field, "a string", v, err);
    if ((id = from_name(v->valuestring)) < 0)
        return edged_fail(err, EDGED_E_PARAM, "%s: unknown value '%s' (%s)", field, params_quote(v->valuestring, q),
                          names);
    *out = id;
    return 0;
}

static int set_filter(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc;

    if ((rc = get_enum(v, "filter", filter_from_name, "see GET /v1/filters", &id, err)) < 0)
        return rc;
    p->spec.filter = (enum filter_id)id;
    return 0;
}

static int set_variant(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc;

    if (p->mode == PARAMS_COMPARE)
        return edged_fail(err, EDGED_E_PARAM, "variant: compare takes `variants` (a list)");
    if ((rc = get_enum(v, "variant", variant_from_name, "see GET /v1/variants", &id, err)) < 0)
        return rc;
    p->variant = (enum variant)id;
    return 0;
}

static int set_variants(struct params *p, const cJSON *v, char *err)
{
    const cJSON *item;
    char q[PARAMS_QUOTE_MAX + 1];
    unsigned set = 0;
    int id;

    if (p->mode != PARAMS_COMPARE)
        return edged_fail(err, EDGED_E_PARAM, "variants: only /v1/compare takes a list; use `variant`");
    if (!cJSON_IsArray(v))
        return type_error("variants", "an array of variant names", v, err);
    cJSON_ArrayForEach(item, v)
    {
        if (!cJSON_IsString(item))
            return type_error("variants[]", "a string", item, err);
        id = variant_from_name(item->valuestring);
        if (id < 0 || id == VARIANT_AUTO)
            return edged_fail(err, EDGED_E_PARAM, "variants: unknown variant '%s'",
                              params_quote(item->valuestring, q));
        set |= 1u << id;
    }
    if (!set)
        return edged_fail(err, EDGED_E_PARAM, "variants: empty list");
    p->variants = set;
    return 0;
}

static int set_threshold(struct params *p, const cJSON *v, char *err)
{
    double d = 0.0;
    int rc = get_number(v, "threshold", 0.0, 1e6, &d, err);

    if (rc == 0)
        p->spec.threshold = (float)d;
    return rc;
}

static int set_border(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc = get_enum(v, "border", border_from_name, "zero, replicate, reflect", &id, err);

    if (rc == 0)
        p->spec.border = (enum border)id;
    return rc;
}

static int set_color(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc = get_enum(v, "color", color_from_name, "auto, gray, rgb", &id, err);

    if (rc == 0)
        p->spec.color = (enum color_mode)id;
    return rc;
}

static int set_post(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc = get_enum(v, "post", post_from_name, "auto, clamp, abs, offset", &id, err);

    if (rc == 0 && id == POST_THRESHOLD)
        return edged_fail(err, EDGED_E_PARAM, "post: threshold is the edge filter's own output");
    if (rc == 0)
        p->spec.post = (enum post_mode)id;
    return rc;
}

static int set_size(struct params *p, const cJSON *v, char *err)
{
    int n = 0, rc = get_int(v, "size", 3, FILTER_MAX_SIDE, &n, err);

    if (rc == 0 && n % 2 == 0)
        return edged_fail(err, EDGED_E_PARAM, "size: %d is even; must be odd, 3..%d", n, FILTER_MAX_SIDE);
    if (rc == 0)
        p->spec.size = n;
    return rc;
}

static int set_sigma(struct params *p, const cJSON *v, char *err)
{
    double d = 0.0;
    int rc = get_number(v, "sigma", 0.0, 1000.0, &d, err);

    if (rc == 0 && d <= 0.0)
        return edged_fail(err, EDGED_E_PARAM, "sigma: %g invalid; must be > 0 (leave it out for the default)", d);
    if (rc == 0)
        p->spec.sigma = (float)d;
    return rc;
}

/* taps: an array of `rows` arrays of `cols` finite numbers, both odd and 1..FILTER_MAX_SIDE. */
static int set_taps(struct params *p, const cJSON *v, char *err)
{
    const cJSON *row, *tap;
    int rows, cols, i = 0, j;

    if (!cJSON_IsArray(v))
        return type_error("taps", "an array of rows", v, err);
    rows = cJSON_GetArraySize(v);
    cols = rows > 0 ? cJSON_GetArraySize(cJSON_GetArrayItem(v, 0)) : 0;
    if (rows < 1 || rows > FILTER_MAX_SIDE || rows % 2 == 0 || cols < 1 || cols > FILTER_MAX_SIDE || cols % 2 == 0)
        return edged_fail(err, EDGED_E_PARAM, "taps: %dx%d; rows and cols must be odd, 1..%d", rows, cols,
                          FILTER_MAX_SIDE);
    cJSON_ArrayForEach(row, v)
    {
        if (!cJSON_IsArray(row))
            return type_error("taps[]", "an array of numbers", row, err);
        if (cJSON_GetArraySize(row) != cols)
            return edged_fail(err, EDGED_E_PARAM, "taps: row %d has %d taps, row 0 has %d", i,
                              cJSON_GetArraySize(row), cols);
        j = 0;
        cJSON_ArrayForEach(tap, row)
        {
            if (!cJSON_IsNumber(tap) || !isfinite(tap->valuedouble) || fabs(tap->valuedouble) > 1e30)
                return edged_fail(err, EDGED_E_PARAM, "taps[%d][%d]: expected a finite number", i, j);
            p->spec.custom_taps[i * cols + j++] = (float)tap->valuedouble;
        }
        i++;
    }
    p->spec.custom_rows = rows;
    p->spec.custom_cols = cols;
    return 0;
}

static int set_normalize(struct params *p, const cJSON *v, char *err)
{
    if (!cJSON_IsBool(v))
        return type_error("normalize", "a boolean", v, err);
    p->spec.custom_normalize = cJSON_IsTrue(v);
    return 0;
}

static int set_block(struct params *p, const cJSON *v, char *err)
{
    int n = 0, rc = get_int(v, "block", 1, 1024, &n, err);

    if (rc == 0 && !variant_block_ok(n))
        return edged_fail(err, EDGED_E_PARAM, "block: %d invalid; must be 8, 16, 24 or 32", n);
    if (rc == 0)
        p->block = n;
    return rc;
}

static int output_from_name(const char *name)
{
    return strcmp(name, "png") == 0 ? PARAMS_OUTPUT_PNG : strcmp(name, "json") == 0 ? PARAMS_OUTPUT_JSON : -1;
}

static int set_output(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc = get_enum(v, "output", output_from_name, "png, json", &id, err);

    if (rc == 0)
        p->output = (enum params_output)id;
    return rc;
}

static int set_png_level(struct params *p, const cJSON *v, char *err)
{
    return get_int(v, "png_level", 0, 9, &p->png_level, err);
}

static int set_bit_depth(struct params *p, const cJSON *v, char *err)
{
    int n = 0, rc = get_int(v, "bit_depth", 1, 8, &n, err);

    if (rc == 0 && n != 1 && n != 8)
        return edged_fail(err, EDGED_E_PARAM, "bit_depth: %d invalid; must be 8, or 1 for edge maps", n);
    if (rc == 0)
        p->bit_depth = n;
    return rc;
}

static int format_from_name(const char *name)
{
    return strcmp(name, "png") == 0 ? PARAMS_FORMAT_PNG : strcmp(name, "jpeg") == 0 ? PARAMS_FORMAT_JPEG : -1;
}

static int set_format(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc = get_enum(v, "format", format_from_name, "png, jpeg", &id, err);

    if (rc == 0)
        p->format = (enum params_format)id;
    return rc;
}

static int set_quality(struct params *p, const cJSON *v, char *err)
{
    return get_int(v, "quality", 1, 100, &p->quality, err);
}

static int orientation_from_name(const char *name)
{
    return strcmp(name, "exif") == 0 ? PARAMS_ORIENT_EXIF : strcmp(name, "ignore") == 0 ? PARAMS_ORIENT_IGNORE : -1;
}

static int set_orientation(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc = get_enum(v, "orientation", orientation_from_name, "exif, ignore", &id, err);

    if (rc == 0)
        p->orientation = (enum params_orientation)id;
    return rc;
}

/* Canny's thresholds: finite, 0..FILTER_CANNY_MAX_THRESHOLD (low <= high is checked with the plan). */
static int set_canny_threshold(const char *name, float *dst, const cJSON *v, char *err)
{
    double d = 0.0;
    int rc = get_number(v, name, 0.0, FILTER_CANNY_MAX_THRESHOLD, &d, err);

    if (rc == 0)
        *dst = (float)d;
    return rc;
}

static int set_low(struct params *p, const cJSON *v, char *err)
{
    return set_canny_threshold("low", &p->spec.canny.low, v, err);
}

static int set_high(struct params *p, const cJSON *v, char *err)
{
    return set_canny_threshold("high", &p->spec.canny.high, v, err);
}

static int set_aperture(struct params *p, const cJSON *v, char *err)
{
    int n = 0, rc = get_int(v, "aperture", 3, 7, &n, err);

    if (rc == 0 && n % 2 == 0)
        return edged_fail(err, EDGED_E_PARAM, "aperture: %d invalid; must be 3, 5 or 7", n);
    if (rc == 0)
        p->spec.canny.aperture = n;
    return rc;
}

static int set_l2gradient(struct params *p, const cJSON *v, char *err)
{
    if (!cJSON_IsBool(v))
        return type_error("l2gradient", "a boolean", v, err);
    p->spec.canny.l2gradient = cJSON_IsTrue(v);
    return 0;
}

static const struct field fields[] = {
    {"filter", PARAMS_F_FILTER, TEXT_STRING, set_filter, COMMON},
    {"variant", PARAMS_F_VARIANT, TEXT_STRING, set_variant, COMMON},
    {"variants", PARAMS_F_VARIANTS, TEXT_LIST, set_variants, COMMON},
    {"threshold", PARAMS_F_THRESHOLD, TEXT_JSON, set_threshold, FILTER_KNOB_THRESHOLD},
    {"border", PARAMS_F_BORDER, TEXT_STRING, set_border, COMMON},
    {"color", PARAMS_F_COLOR, TEXT_STRING, set_color, COMMON},
    {"post", PARAMS_F_POST, TEXT_STRING, set_post, FILTER_KNOB_POST},
    {"size", PARAMS_F_SIZE, TEXT_JSON, set_size, FILTER_KNOB_SIZE},
    {"sigma", PARAMS_F_SIGMA, TEXT_JSON, set_sigma, FILTER_KNOB_SIGMA},
    {"taps", PARAMS_F_TAPS, TEXT_JSON, set_taps, FILTER_KNOB_TAPS},
    {"normalize", PARAMS_F_NORMALIZE, TEXT_BOOL, set_normalize, FILTER_KNOB_NORMALIZE},
    {"block", PARAMS_F_BLOCK, TEXT_JSON, set_block, COMMON},
    {"output", PARAMS_F_OUTPUT, TEXT_STRING, set_output, COMMON},
    {"png_level", PARAMS_F_PNG_LEVEL, TEXT_JSON, set_png_level, COMMON},
    {"bit_depth", PARAMS_F_BIT_DEPTH, TEXT_JSON, set_bit_depth, FILTER_KNOB_BIT_DEPTH},
    {"format", PARAMS_F_FORMAT, TEXT_STRING, set_format, COMMON},
    {"quality", PARAMS_F_QUALITY, TEXT_JSON, set_quality, COMMON},
    {"orientation", PARAMS_F_ORIENTATION, TEXT_STRING, set_orientation, COMMON},
    {"low", PARAMS_F_LOW, TEXT_JSON, set_low, FILTER_KNOB_LOW},
    {"high", PARAMS_F_HIGH, TEXT_JSON, set_high, FILTER_KNOB_HIGH},
    {"aperture", PARAMS_F_APERTURE, TEXT_JSON, set_aperture, FILTER_KNOB_APERTURE},
    {"l2gradient", PARAMS_F_L2GRADIENT, TEXT_BOOL, set_l2gradient, FILTER_KNOB_L2GRADIENT},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static const struct field *field_find(const char *name)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(fields[i].name, name) == 0)
            return &fields[i];
    return NULL;
}

int params_plan(const struct params *p, int ch, struct filter_plan *plan, char *err)
{
    int rc;

    if ((rc = filter_plan_make(&p->spec, ch, plan, err)) < 0)
        return rc;
    if (p->bit_depth == 1 && plan->out_ch != 1)
        return edged_fail(err, EDGED_E_PARAM, "bit_depth: 1 needs a one-channel output; this input has alpha, "
                                              "so the output has %d channels", plan->out_ch);
    plan->accept_packed = p->bit_depth == 1;
    return 0;
}

const char *params_field_name(unsigned bit)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (fields[i].bit == bit)
            return fields[i].name;
    return "?";
}

void params_source_begin(struct params *p) { p->source_seen = 0; }

void params_init(struct params *p, enum params_mode mode)
{
    memset(p, 0, sizeof(*p));
    filter_spec_init(&p->spec, FILTER_EDGE);
    p->variant = VARIANT_AUTO;
    p->output = PARAMS_OUTPUT_AUTO;
    p->png_level = PARAMS_DEFAULT_PNG_LEVEL;
    p->bit_depth = 8;
    p->format = PARAMS_FORMAT_AUTO;
    p->quality = PARAMS_DEFAULT_QUALITY;
    p->orientation = PARAMS_ORIENT_EXIF;
    p->mode = mode;
}

static int set_field(struct params *p, const struct field *f, const cJSON *v, char *err)
{
    int rc = f->set(p, v, err);

    if (rc == 0)
        p->given |= f->bit;
    return rc;
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

static int text_value(const struct field *f, const char *value, cJSON **out, char *err)
{
    char *list, *tok, *save = NULL, q[PARAMS_QUOTE_MAX + 1];
    int rc = 0;

    switch (f->text) {
    case TEXT_STRING:
        *out = cJSON_CreateString(value);
        break;
    case TEXT_BOOL:
        if (strcmp(value, "true") && strcmp(value, "false") && strcmp(value, "1") && strcmp(value, "0"))
            return edged_fail(err, EDGED_E_PARAM, "%s: '%s' is not true, false, 1 or 0", f->name,
                              params_quote(value, q));
        *out = cJSON_CreateBool(value[0] == 't' || value[0] == '1');
        break;
    case TEXT_JSON:
        if ((rc = json_parse(f->name, value, strlen(value), out, err)) < 0)
            return edged_fail(err, rc, "%s: '%s' is not a valid value", f->name, params_quote(value, q));
        break;
    case TEXT_LIST:
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
    const struct field *f = field_find(key);
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
        rc = set_field(p, f, v, err);
    cJSON_Delete(v);
    return rc;
}

int params_set_json(struct params *p, const char *text, size_t len, char *err)
{
    const struct field *f;
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
        if (!(f = field_find(item->string))) {
            rc = edged_fail(err, EDGED_E_PARAM, "params: unknown parameter '%s'",
                            params_quote(item->string, q));
            goto out;
        }
        if (seen & f->bit) {
            rc = edged_fail(err, EDGED_E_PARAM, "params: duplicate key '%s'", f->name);
            goto out;
        }
        seen |= f->bit;
        if ((rc = set_field(p, f, item, err)) < 0)
            goto out;
    }
out:
    cJSON_Delete(root);
    return rc;
}

/* Whether p uses the filter-specific knob of field f: given at all, except bit_depth (8 is every
 * filter's; 1 is not) and post (auto is every filter's; filter_plan_make judges its value). */
static int knob_used(const struct params *p, const struct field *f)
{
    if (f->knob == FILTER_KNOB_BIT_DEPTH)
        return p->bit_depth == 1;
    if (f->knob == FILTER_KNOB_POST)
        return 0;
    return (p->given & f->bit) != 0;
}

/* A knob given for a filter that does not take it (filter_takes) is an error rather than silently
 * ignored. */
static int check_applies(const struct params *p, char *err)
{
    enum filter_id f = p->spec.filter;
    const char *name = filter_name(f);
    char who[128];

    for (size_t i = 0; i < NFIELDS; i++) {
        const struct field *fd = &fields[i];
        if (fd->knob == COMMON || !knob_used(p, fd) || filter_takes(f, (enum filter_knob)fd->knob))
            continue;
        filter_knob_takers((enum filter_knob)fd->knob, who, sizeof(who));
        if (fd->knob == FILTER_KNOB_BIT_DEPTH)
            return edged_fail(err, EDGED_E_PARAM, "bit_depth: 1 is for the binary maps of %s, not %s", who,
                              name);
        return edged_fail(err, EDGED_E_PARAM, "%s: applies to %s, not %s", fd->name, who, name);
    }
    if (f == FILTER_CUSTOM && !(p->given & PARAMS_F_TAPS))
        return edged_fail(err, EDGED_E_PARAM, "taps: filter custom needs taps (an array of rows)");
    if ((p->given & PARAMS_F_BLOCK) && p->mode == PARAMS_FILTER && p->variant != VARIANT_AUTO &&
        !variant_is_gpu(p->variant))
        return edged_fail(err, EDGED_E_PARAM, "block: applies to GPU variants, not %s", variant_name(p->variant));
    if ((p->given & PARAMS_F_QUALITY) && p->format == PARAMS_FORMAT_PNG)
        return edged_fail(err, EDGED_E_PARAM, "quality: applies to JPEG output, not format png");
    return 0;
}

int params_validate(const struct params *p, char *err)
{
    struct filter_plan *plan;
    int rc;

    if ((rc = check_applies(p, err)) < 0)
        return rc;
    /* The plan is large (two 63x63 kernels): heap, not the connection thread's stack. */
    if (!(plan = malloc(sizeof(*plan))))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory");
    rc = filter_plan_make(&p->spec, 3, plan, err);
    free(plan);
    return rc;
}
