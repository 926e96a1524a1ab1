/* params_field.c — the table of request fields: one row per field, one setter each, which checks
 * the JSON value's type and range; and the check of the fields a request gives against its filter. */
#include "params_field.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

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
    /* a sigma under the smallest normal float would be stored as 0, which means "the default" */
    if (rc == 0 && d < FLT_MIN)
        return edged_fail(err, EDGED_E_PARAM, "sigma: %g invalid; must be at least %g, the smallest float32 sigma "
                          "(as small a sigma already gives the identity kernel)", d, (double)FLT_MIN);
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

static int set_device(struct params *p, const cJSON *v, char *err)
{
    return get_int(v, "device", 0, PARAMS_MAX_DEVICE, &p->device, err);
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

/* The names `format` takes: each format's own name first (the one answers use), then aliases. */
static const struct {
    const char *name;
    enum params_format f;
} format_names[] = {{"png", PARAMS_FORMAT_PNG}, {"jpeg", PARAMS_FORMAT_JPEG}, {"webp", PARAMS_FORMAT_WEBP},
                    {"jpg", PARAMS_FORMAT_JPEG}};
#define FORMAT_NAMES "png, jpeg (or jpg), webp"

static int format_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
        if (strcmp(name, format_names[i].name) == 0)
            return (int)format_names[i].f;
    return -1;
}

const char *params_format_name(enum params_format f)
{
    for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
        if (format_names[i].f == f)
            return format_names[i].name;
    return "auto";
}

static int set_format(struct params *p, const cJSON *v, char *err)
{
    int id = 0, rc = get_enum(v, "format", format_from_name, FORMAT_NAMES, &id, err);

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

static int set_value(struct params *p, const cJSON *v, char *err)
{
    double d = 0.0;
    int rc = get_number(v, "value", -FILTER_MAX_VALUE, FILTER_MAX_VALUE, &d, err);

    if (rc == 0)
        p->spec.value = (float)d;
    return rc;
}

static int set_ops(struct params *p, const cJSON *v, char *err);

static const struct params_field fields[] = {
    {"filter", PARAMS_F_FILTER, PARAMS_TEXT_STRING, set_filter, PARAMS_FIELD_COMMON},
    {"variant", PARAMS_F_VARIANT, PARAMS_TEXT_STRING, set_variant, PARAMS_FIELD_COMMON},
    {"variants", PARAMS_F_VARIANTS, PARAMS_TEXT_LIST, set_variants, PARAMS_FIELD_COMMON},
    {"threshold", PARAMS_F_THRESHOLD, PARAMS_TEXT_JSON, set_threshold, FILTER_KNOB_THRESHOLD},
    {"border", PARAMS_F_BORDER, PARAMS_TEXT_STRING, set_border, PARAMS_FIELD_COMMON},
    {"color", PARAMS_F_COLOR, PARAMS_TEXT_STRING, set_color, PARAMS_FIELD_COMMON},
    {"post", PARAMS_F_POST, PARAMS_TEXT_STRING, set_post, FILTER_KNOB_POST},
    {"size", PARAMS_F_SIZE, PARAMS_TEXT_JSON, set_size, FILTER_KNOB_SIZE},
    {"sigma", PARAMS_F_SIGMA, PARAMS_TEXT_JSON, set_sigma, FILTER_KNOB_SIGMA},
    {"taps", PARAMS_F_TAPS, PARAMS_TEXT_JSON, set_taps, FILTER_KNOB_TAPS},
    {"normalize", PARAMS_F_NORMALIZE, PARAMS_TEXT_BOOL, set_normalize, FILTER_KNOB_NORMALIZE},
    {"block", PARAMS_F_BLOCK, PARAMS_TEXT_JSON, set_block, PARAMS_FIELD_COMMON},
    {"device", PARAMS_F_DEVICE, PARAMS_TEXT_JSON, set_device, PARAMS_FIELD_COMMON},
    {"output", PARAMS_F_OUTPUT, PARAMS_TEXT_STRING, set_output, PARAMS_FIELD_COMMON},
    {"png_level", PARAMS_F_PNG_LEVEL, PARAMS_TEXT_JSON, set_png_level, PARAMS_FIELD_COMMON},
    {"bit_depth", PARAMS_F_BIT_DEPTH, PARAMS_TEXT_JSON, set_bit_depth, FILTER_KNOB_BIT_DEPTH},
    {"format", PARAMS_F_FORMAT, PARAMS_TEXT_STRING, set_format, PARAMS_FIELD_COMMON},
    {"quality", PARAMS_F_QUALITY, PARAMS_TEXT_JSON, set_quality, PARAMS_FIELD_COMMON},
    {"orientation", PARAMS_F_ORIENTATION, PARAMS_TEXT_STRING, set_orientation, PARAMS_FIELD_COMMON},
    {"low", PARAMS_F_LOW, PARAMS_TEXT_JSON, set_low, FILTER_KNOB_LOW},
    {"high", PARAMS_F_HIGH, PARAMS_TEXT_JSON, set_high, FILTER_KNOB_HIGH},
    {"aperture", PARAMS_F_APERTURE, PARAMS_TEXT_JSON, set_aperture, FILTER_KNOB_APERTURE},
    {"l2gradient", PARAMS_F_L2GRADIENT, PARAMS_TEXT_BOOL, set_l2gradient, FILTER_KNOB_L2GRADIENT},
    {"value", PARAMS_F_VALUE, PARAMS_TEXT_JSON, set_value, FILTER_KNOB_VALUE},
    {"ops", PARAMS_F_OPS, PARAMS_TEXT_JSON, set_ops, PARAMS_FIELD_COMMON},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

const struct params_field *params_field_find(const char *name)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(fields[i].name, name) == 0)
            return &fields[i];
    return NULL;
}

const char *params_field_name(unsigned bit)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (fields[i].bit == bit)
            return fields[i].name;
    return "?";
}

int params_field_set(struct params *p, const struct params_field *f, const cJSON *v, char *err)
{
    int rc = f->set(p, v, err);

    if (rc == 0)
        p->given |= f->bit;
    return rc;
}

/* Whether p uses the filter-specific knob of field f: given at all, except bit_depth (8 is every
 * filter's; 1 is not) and post (auto is every filter's; filter_plan_make judges its value). */
static int knob_used(const struct params *p, const struct params_field *f)
{
    if (f->knob == FILTER_KNOB_BIT_DEPTH)
        return p->bit_depth == 1;
    if (f->knob == FILTER_KNOB_POST)
        return 0;
    return (p->given & f->bit) != 0;
}

/* The fields that only shape the encoded image, and output=png: /v1/compare answers JSON rows and
 * encodes nothing, so it refuses them rather than ignore them. */
#define PARAMS_IMAGE_OUTPUT_FIELDS (PARAMS_F_FORMAT | PARAMS_F_QUALITY | PARAMS_F_PNG_LEVEL | PARAMS_F_BIT_DEPTH)

static int check_compare(const struct params *p, char *err)
{
    char names[128] = "";
    size_t n = 0;

    for (size_t i = 0; i < NFIELDS; i++)
        if ((fields[i].bit & PARAMS_IMAGE_OUTPUT_FIELDS & p->given) && n < sizeof(names))
            n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "", fields[i].name);
    if (p->output == PARAMS_OUTPUT_PNG && n < sizeof(names))
        n += (size_t)snprintf(names + n, sizeof(names) - n, "%soutput=png", n ? ", " : "");
    if (!n)
        return 0;
    return edged_fail(err, EDGED_E_PARAM, "%s: /v1/compare answers JSON rows and encodes no image; leave out "
                      "the image output options", names);
}

/* The fields a step of `ops` takes: the filter, its knobs but bit_depth (an output option), border
 * and color. */
static int step_field(const struct params_field *f)
{
    return f->bit == PARAMS_F_FILTER || f->bit == PARAMS_F_BORDER || f->bit == PARAMS_F_COLOR ||
           (f->knob != PARAMS_FIELD_COMMON && f->knob != FILTER_KNOB_BIT_DEPTH);
}

/* Beside `ops` only the request's own fields: a filter or knob there would be ambiguous. */
static int check_beside_ops(const struct params *p, char *err)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if ((p->given & fields[i].bit) && step_field(&fields[i]))
            return edged_fail(err, EDGED_E_PARAM, "%s: give it inside each step of ops, not beside ops",
                              fields[i].name);
    return 0;
}

static int check_applies(const struct params *p, char *err);

/* block and device shape the GPU's work: with a CPU variant (compare: a list of CPU variants only)
 * they would do nothing, so they are refused rather than ignored. */
static int check_gpu_fields(const struct params *p, char *err)
{
    static const unsigned gpu_fields[] = {PARAMS_F_BLOCK, PARAMS_F_DEVICE};
    unsigned gpu_listed = p->variants >> VARIANT_FIRST_GPU;

    for (size_t i = 0; i < sizeof(gpu_fields) / sizeof(gpu_fields[0]); i++) {
        const char *name = params_field_name(gpu_fields[i]);
        if (!(p->given & gpu_fields[i]))
            continue;
        if (p->mode == PARAMS_FILTER && p->variant != VARIANT_AUTO && !variant_is_gpu(p->variant))
            return edged_fail(err, EDGED_E_PARAM, "%s: applies to GPU variants, not %s (a CPU variant runs on "
                              "the CPU)", name, variant_name(p->variant));
        if (p->mode == PARAMS_COMPARE && p->variants && !gpu_listed)
            return edged_fail(err, EDGED_E_PARAM, "%s: applies to GPU variants, and `variants` lists none", name);
    }
    return 0;
}

/* Step i of ops: an object of step fields, parsed into step (a fresh request) by their setters and
 * checked as one filter's request is. */
static int parse_step(const cJSON *obj, int i, struct params *step, char *err)
{
    const struct params_field *f;
    const cJSON *item;
    char q[PARAMS_QUOTE_MAX + 1], m[EDGED_ERR_LEN] = "";
    unsigned seen = 0;
    int rc;

    if (!cJSON_IsObject(obj))
        return edged_fail(err, EDGED_E_PARAM, "ops[%d]: expected an object (one step)", i);
    params_init(step, PARAMS_FILTER);
    cJSON_ArrayForEach(item, obj)
    {
        if (!(f = params_field_find(item->string)))
            return edged_fail(err, EDGED_E_PARAM, "ops[%d]: unknown parameter '%s'", i, params_quote(item->string, q));
        if (f->bit == PARAMS_F_OPS)
            return edged_fail(err, EDGED_E_PARAM, "ops[%d].ops: steps do not nest", i);
        if (!step_field(f))
            return edged_fail(err, EDGED_E_PARAM, "ops[%d].%s: a request option, not a step's; give it beside ops",
                              i, f->name);
        if (seen & f->bit)
            return edged_fail(err, EDGED_E_PARAM, "ops[%d]: duplicate key '%s'", i, f->name);
        seen |= f->bit;
        if ((rc = params_field_set(step, f, item, m)) < 0)
            return edged_fail(err, rc, "ops[%d].%s", i, m);
    }
    if (!(seen & PARAMS_F_FILTER))
        return edged_fail(err, EDGED_E_PARAM, "ops[%d]: filter missing (each step names its filter)", i);
    if ((rc = check_applies(step, m)) < 0)
        return edged_fail(err, rc, "ops[%d].%s", i, m);
    return 0;
}

static int set_ops(struct params *p, const cJSON *v, char *err)
{
    struct params *step = NULL;
    const cJSON *item;
    int n, i = 0, rc = 0;

    if (!cJSON_IsArray(v))
        return type_error("ops", "an array of steps", v, err);
    if ((n = cJSON_GetArraySize(v)) < 1 || n > FILTER_MAX_STEPS)
        return edged_fail(err, EDGED_E_PARAM, "ops: %d steps; a pipeline has 1..%d", n, FILTER_MAX_STEPS);
    if (!(step = malloc(sizeof(*step)))) /* large (the specs' taps): heap, not the connection's stack */
        return edged_fail(err, EDGED_E_NOMEM, "ops: out of memory");
    cJSON_ArrayForEach(item, v)
    {
        if ((rc = parse_step(item, i, step, err)) < 0)
            goto out;
        p->ops[i++] = step->spec;
    }
    p->nops = n;
out:
    free(step);
    return rc;
}

/* A knob given for a filter that does not take it (filter_takes) is an error rather than silently
 * ignored. */
static int check_applies(const struct params *p, char *err)
{
    enum filter_id f = p->nops ? p->ops[p->nops - 1].filter : p->spec.filter;
    const char *name = filter_name(f);
    char who[128];
    int rc;

    if (p->nops && (rc = check_beside_ops(p, err)) < 0)
        return rc;

    for (size_t i = 0; i < NFIELDS; i++) {
        const struct params_field *fd = &fields[i];
        if (fd->knob == PARAMS_FIELD_COMMON || !knob_used(p, fd) ||
            filter_takes(f, (enum filter_knob)fd->knob))
            continue;
        filter_knob_takers((enum filter_knob)fd->knob, who, sizeof(who));
        if (fd->knob == FILTER_KNOB_BIT_DEPTH)
            return edged_fail(err, EDGED_E_PARAM, "bit_depth: 1 is for the binary maps of %s, not %s", who,
                              name);
        return edged_fail(err, EDGED_E_PARAM, "%s: applies to %s, not %s", fd->name, who, name);
    }
    if (f == FILTER_CUSTOM && !(p->given & PARAMS_F_TAPS))
        return edged_fail(err, EDGED_E_PARAM, "taps: filter custom needs taps (an array of rows)");
    if ((rc = check_gpu_fields(p, err)) < 0)
        return rc;
    if (p->mode == PARAMS_COMPARE)
        return check_compare(p, err);
    if (p->format != PARAMS_FORMAT_AUTO && (rc = params_output_format(p, p->format, NULL, err)) < 0)
        return rc;
    return 0;
}

int params_output_format(const struct params *p, enum params_format chosen, const char *by, char *err)
{
    enum params_format f = p->format != PARAMS_FORMAT_AUTO ? p->format : chosen;

    /* bit_depth 1 is not among them: a 1-bit map is written as 0/255 in any format (api.md) */
    if (f != PARAMS_FORMAT_PNG && (p->given & PARAMS_F_PNG_LEVEL)) {
        if (p->format != PARAMS_FORMAT_AUTO)
            return edged_fail(err, EDGED_E_PARAM, "png_level: applies to format=png, not %s", params_format_name(f));
        return edged_fail(err, EDGED_E_PARAM, "png_level: applies to format=png; without `format` %s, so the answer "
                          "would be %s", by ? by : "the answer is not PNG", params_format_name(f));
    }
    if (f != PARAMS_FORMAT_PNG || !(p->given & PARAMS_F_QUALITY))
        return (int)f;
    if (p->format == PARAMS_FORMAT_PNG)
        return edged_fail(err, EDGED_E_PARAM, "quality: applies to format=jpeg or webp, not png");
    return edged_fail(err, EDGED_E_PARAM, "quality: applies to format=jpeg or webp; without `format` %s, so the "
                      "answer would be PNG", by ? by : "the answer is PNG");
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
    rc = p->nops ? filter_pipeline_make(p->ops, p->nops, 3, plan, err) : filter_plan_make(&p->spec, 3, plan, err);
    free(plan);
    return rc;
}
