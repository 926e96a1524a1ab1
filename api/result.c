/* result.c — JSON result bodies and the single error-to-answer function. */
#include "result.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

/* Hand-written so that the error path allocates nothing and cannot fail. */
size_t result_escape(char *dst, size_t cap, size_t pos, const char *s, size_t reserve,
                     enum result_escape_form form)
{
    static const char hex[] = "0123456789abcdef";

    for (; s && *s && pos + 7 + reserve < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            dst[pos++] = '\\';
            dst[pos++] = (char)c;
        } else if ((c < 0x20 || c == 0x7f) && form == RESULT_ESCAPE_LABEL) {
            dst[pos++] = ' ';
        } else if (c < 0x20 || c == 0x7f) {
            pos += (size_t)snprintf(dst + pos, cap - pos, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
        } else if (c >= 0x80) { /* input quoted in a message may be any bytes: never echo them raw */
            dst[pos++] = '?';
        } else {
            dst[pos++] = (char)c;
        }
    }
    if (pos < cap)
        dst[pos] = '\0';
    return pos;
}

static size_t put(char *dst, size_t cap, size_t pos, const char *s)
{
    size_t n = strlen(s);

    if (pos + n >= cap)
        n = cap - pos - 1;
    memcpy(dst + pos, s, n);
    dst[pos + n] = '\0';
    return pos + n;
}

int result_error(int code, const char *message, const char *request_id, char *body, size_t cap)
{
    size_t pos = 0;

    if (!body || cap < 128)
        return edged_err_status(code);
    if (!message || !*message)
        message = edged_err_message(code);
    pos = put(body, cap, pos, "{\"error\":{\"code\":\"");
    pos = put(body, cap, pos, edged_err_name(code));
    pos = put(body, cap, pos, "\",\"message\":\"");
    pos = result_escape(body, cap, pos, message, 64 + (request_id ? strlen(request_id) : 0),
                        RESULT_ESCAPE_JSON);
    pos = put(body, cap, pos, "\",\"request_id\":\"");
    pos = result_escape(body, cap, pos, request_id ? request_id : "", 8, RESULT_ESCAPE_JSON);
    put(body, cap, pos, "\"}}\n");
    return edged_err_status(code);
}

static const char *const stage_names[RESULT_STAGE_COUNT] = {
#define STAGE_NAME(id, field, api) #field,
    EDGED_STAGES(STAGE_NAME)
#undef STAGE_NAME
};

static const unsigned char stage_in_api[RESULT_STAGE_COUNT] = {
#define STAGE_API(id, field, api) api,
    EDGED_STAGES(STAGE_API)
#undef STAGE_API
};

static const size_t stage_offset[RESULT_STAGE_COUNT] = {
#define STAGE_OFFSET(id, field, api) offsetof(struct result_times, field),
    EDGED_STAGES(STAGE_OFFSET)
#undef STAGE_OFFSET
};

const char *result_stage_name(enum result_stage s) { return s < RESULT_STAGE_COUNT ? stage_names[s] : "?"; }
int result_stage_in_api(enum result_stage s) { return s < RESULT_STAGE_COUNT && stage_in_api[s]; }

double result_stage_ms(const struct result_times *t, enum result_stage s)
{
    double v = 0.0;

    if (s < RESULT_STAGE_COUNT)
        memcpy(&v, (const char *)t + stage_offset[s], sizeof(v));
    return v;
}

void result_server_timing(const struct result_times *t, char *buf, size_t cap)
{
    size_t pos = 0;

    if (cap)
        buf[0] = '\0';
    for (int s = 0; s < RESULT_STAGE_COUNT && pos < cap; s++)
        if (stage_in_api[s])
            pos += (size_t)snprintf(buf + pos, cap - pos, "%s%s;dur=%.3f", pos ? ", " : "", stage_names[s],
                                    result_stage_ms(t, s));
}

void result_kernel_rates(const struct filter_plan *plan, int w, int h, double kernel_ms, double *gflops,
                         double *gbps)
{
    double samples = (double)w * h * plan->planes;

    *gflops = *gbps = 0.0;
    if (kernel_ms <= 0.0)
        return;
    *gflops = 2.0 * filter_plan_taps(plan) * samples / (kernel_ms * 1e6);
    *gbps = plan->nconv * samples * 2.0 * sizeof(float) / (kernel_ms * 1e6);
}

/* Figures are printed to a fixed number of decimals (times: microseconds), not 17 digits of noise. */
static double rnd(double v, double scale) { return round(v * scale) / scale; }

double result_round_ms(double ms) { return rnd(ms, 1e3); }

void result_times_json(cJSON *obj, const struct result_times *t, enum result_times_form form)
{
    for (int s = 0; s < RESULT_STAGE_COUNT; s++) {
        double v = result_stage_ms(t, s);
        int put_it = form == RESULT_TIMES_API ? stage_in_api[s] : v > 0.0 || s == RESULT_STAGE_TOTAL;
        if (put_it)
            cJSON_AddNumberToObject(obj, stage_names[s], result_round_ms(v));
    }
}

static cJSON *times_json(const struct result_times *t)
{
    cJSON *o = cJSON_CreateObject();

    result_times_json(o, t, RESULT_TIMES_API);
    return o;
}

cJSON *result_knobs_json(enum filter_id f)
{
    cJSON *a = cJSON_CreateArray();

    for (int k = 0; a && k < FILTER_KNOB_COUNT; k++)
        if (filter_takes(f, k))
            cJSON_AddItemToArray(a, cJSON_CreateString(filter_knob_name(k)));
    return a;
}

/* A float as the shortest decimal that reads back as that float (0.1f prints 0.1, not
 * 0.10000000149), so that an echoed value is the one the client sent. */
static double float_json(float f)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%.7g", (double)f);
    return strtod(buf, NULL);
}

static cJSON *taps_json(const struct filter_spec *spec)
{
    cJSON *rows = cJSON_CreateArray();

    for (int i = 0; rows && i < spec->custom_rows; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int j = 0; row && j < spec->custom_cols; j++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber(float_json(spec->custom_taps[i * spec->custom_cols + j])));
        cJSON_AddItemToArray(rows, row);
    }
    return rows;
}

/* Where the knobs of one filter (the request's, or a step of its pipeline) come from: the spec as
 * given, the kernels built for it, and what the plan resolved. post < 0: not echoed (a step before
 * the last, whose floats pass on unrounded). */
struct knob_src {
    const struct filter_spec *spec;
    const struct kernel2d *conv;
    int nconv;
    const struct filter_plan *plan;
    int bit_depth;
    int post;
};

/* The value knob k had in the run: what the request gave, or the default the plan resolved. */
static cJSON *knob_json(enum filter_knob k, const struct knob_src *s)
{
    switch (k) {
    case FILTER_KNOB_THRESHOLD:
        return cJSON_CreateNumber(float_json(s->plan->threshold));
    case FILTER_KNOB_TAPS:
        return taps_json(s->spec);
    case FILTER_KNOB_NORMALIZE:
        return cJSON_CreateBool(s->spec->custom_normalize);
    case FILTER_KNOB_SIZE: /* canny without its pre-blur: null */
        return s->nconv ? cJSON_CreateNumber(s->conv[0].rows) : cJSON_CreateNull();
    case FILTER_KNOB_SIGMA:
        return !s->nconv ? cJSON_CreateNull()
                         : cJSON_CreateNumber(float_json((float)filter_gaussian_sigma(s->conv[0].rows, s->spec->sigma)));
    case FILTER_KNOB_BIT_DEPTH:
        return cJSON_CreateNumber(s->bit_depth);
    case FILTER_KNOB_POST:
        return cJSON_CreateString(post_name((enum post_mode)s->post));
    case FILTER_KNOB_LOW:
        return cJSON_CreateNumber(float_json(s->plan->canny.low));
    case FILTER_KNOB_HIGH:
        return cJSON_CreateNumber(float_json(s->plan->canny.high));
    case FILTER_KNOB_APERTURE:
        return cJSON_CreateNumber(s->plan->canny.aperture);
    case FILTER_KNOB_L2GRADIENT:
        return cJSON_CreateBool(s->plan->canny.l2gradient);
    case FILTER_KNOB_VALUE:
        return cJSON_CreateNumber(float_json(s->spec->value));
    default:
        return cJSON_CreateNull();
    }
}

/* The knobs filter f takes, from s, into o; bit_depth only where with_depth (a pipeline's steps
 * leave it to the request). */
static void add_knobs(cJSON *o, enum filter_id f, const struct knob_src *s, int with_depth)
{
    for (int k = 0; o && k < FILTER_KNOB_COUNT; k++)
        if (filter_takes(f, (enum filter_knob)k) && (k != FILTER_KNOB_BIT_DEPTH || with_depth) &&
            (k != FILTER_KNOB_POST || s->post >= 0))
            cJSON_AddItemToObject(o, filter_knob_name((enum filter_knob)k), knob_json((enum filter_knob)k, s));
}

/* A pipeline's steps as they ran: each one's filter, border and knobs; post on the last only. */
static cJSON *ops_json(const struct params *p, const struct filter_plan *plan)
{
    cJSON *a = cJSON_CreateArray();

    for (int i = 0; a && i < p->nops && i < plan->nsteps; i++) {
        const struct plan_step *st = &plan->step[i];
        struct knob_src s = {&p->ops[i], plan->conv + st->conv0, st->nconv, plan, p->bit_depth,
                             i == plan->nsteps - 1 ? (int)plan->post : -1};
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "filter", filter_name(st->filter));
        cJSON_AddStringToObject(o, "border", border_name(st->border));
        add_knobs(o, st->filter, &s, 0);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

const char *result_filter_label(const struct params *p)
{
    return p->nops ? "pipeline" : filter_name(p->spec.filter);
}

cJSON *result_params_json(const struct params *p, const struct filter_plan *plan, const char *variant, int block,
                          enum params_output output)
{
    cJSON *o = cJSON_CreateObject();
    struct knob_src s = {&p->spec, plan->conv, plan->nconv, plan, p->bit_depth, (int)plan->post};
    int gray = plan->gray || (p->nops && plan->planes == 1 && plan->in_ch >= 3);

    cJSON_AddStringToObject(o, "filter", p->nops ? "pipeline" : filter_name(plan->filter));
    cJSON_AddStringToObject(o, "variant", variant);
    cJSON_AddStringToObject(o, "variant_requested", variant_name(p->variant));
    if (block > 0)
        cJSON_AddNumberToObject(o, "block", block);
    else
        cJSON_AddNullToObject(o, "block");
    cJSON_AddStringToObject(o, "border", border_name(plan->border));
    cJSON_AddStringToObject(o, "color", gray ? "gray" : "rgb");
    if (p->nops) {
        cJSON_AddItemToObject(o, "ops", ops_json(p, plan));
        if (filter_takes(plan->filter, FILTER_KNOB_BIT_DEPTH))
            cJSON_AddNumberToObject(o, "bit_depth", p->bit_depth);
    } else {
        add_knobs(o, plan->filter, &s, 1);
    }
    cJSON_AddNumberToObject(o, "png_level", p->png_level);
    cJSON_AddStringToObject(o, "output", output == PARAMS_OUTPUT_JSON ? "json" : "png");
    return o;
}

/* Prints and frees root; NULL when out of memory. cJSON's adders accept NULL items, so an inner
 * allocation failure drops that field instead of crashing. */
static char *print_free(cJSON *root)
{
    char *s = root ? cJSON_PrintUnformatted(root) : NULL;

    cJSON_Delete(root);
    return s;
}

static void add_image(cJSON *o, const char *id, const char *trace_id, const char *filter, const char *backend,
                      const char *device, int w, int h, int ch)
{
    cJSON_AddStringToObject(o, "request_id", id ? id : "");
    if (trace_id)
        cJSON_AddStringToObject(o, "trace_id", trace_id);
    cJSON_AddStringToObject(o, "filter", filter);
    cJSON_AddStringToObject(o, "backend", backend);
    cJSON_AddStringToObject(o, "device", device);
    cJSON_AddNumberToObject(o, "width", w);
    cJSON_AddNumberToObject(o, "height", h);
    cJSON_AddNumberToObject(o, "channels", ch);
}

/* The applied parameters, then the image format as resolved (format or Accept), the quality when
 * that is lossy (JPEG; WebP given a quality), and the orientation rule. */
static cJSON *params_with_format(const struct result_filter *r)
{
    cJSON *o = result_params_json(r->params, r->plan, r->variant, r->block, PARAMS_OUTPUT_JSON);
    int lossy = r->output_format == PARAMS_FORMAT_JPEG ||
                (r->output_format == PARAMS_FORMAT_WEBP && (r->params->given & PARAMS_F_QUALITY));

    cJSON_AddStringToObject(o, "format", params_format_name(r->output_format));
    if (lossy)
        cJSON_AddNumberToObject(o, "quality", r->params->quality);
    cJSON_AddStringToObject(o, "orientation", r->params->orientation == PARAMS_ORIENT_IGNORE ? "ignore" : "exif");
    return o;
}

char *result_filter_json(const struct result_filter *r)
{
    cJSON *root = cJSON_CreateObject(), *k = cJSON_CreateObject(), *out = cJSON_CreateObject();

    add_image(root, r->request_id, r->trace_id, r->filter, r->backend, r->device, r->width, r->height, r->channels);
    if (r->device_number >= 0)
        cJSON_AddNumberToObject(root, "device_number", r->device_number);
    else
        cJSON_AddNullToObject(root, "device_number");
    cJSON_AddStringToObject(root, "variant", r->variant);
    cJSON_AddItemToObject(root, "timings_ms", times_json(&r->t));
    cJSON_AddNumberToObject(k, "gflops", rnd(r->gflops, 1e3));
    cJSON_AddNumberToObject(k, "effective_gbps", rnd(r->effective_gbps, 1e3));
    if (r->bandwidth_fraction >= 0.0)
        cJSON_AddNumberToObject(k, "bandwidth_fraction", rnd(r->bandwidth_fraction, 1e4));
    else
        cJSON_AddNullToObject(k, "bandwidth_fraction");
    if (r->block > 0)
        cJSON_AddNumberToObject(k, "block", r->block);
    else
        cJSON_AddNullToObject(k, "block");
    cJSON_AddItemToObject(root, "kernel", k);
    cJSON_AddNumberToObject(out, "bytes", (double)r->output_bytes);
    cJSON_AddStringToObject(out, "format", params_format_name(r->output_format));
    cJSON_AddItemToObject(root, "output", out);
    if (r->params && r->plan)
        cJSON_AddItemToObject(root, "params", params_with_format(r));
    return print_free(root);
}

char *result_compare_json(const struct result_compare *c)
{
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_CreateArray(), *skipped = cJSON_CreateArray();

    add_image(root, c->request_id, c->trace_id, c->filter, c->backend, c->device, c->width, c->height, c->channels);
    for (int i = 0; i < c->nrows; i++) {
        const struct result_compare_row *r = &c->rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "variant", r->variant);
        if (r->code) {
            cJSON_AddStringToObject(o, "code", edged_err_name(r->code));
            cJSON_AddStringToObject(o, "message", r->message ? r->message : edged_err_message(r->code));
            cJSON_AddItemToArray(skipped, o);
            continue;
        }
        cJSON_AddNumberToObject(o, "kernel_ms", result_round_ms(r->kernel_ms));
        cJSON_AddNumberToObject(o, "gflops", rnd(r->gflops, 1e3));
        cJSON_AddNumberToObject(o, "effective_gbps", rnd(r->effective_gbps, 1e3));
        cJSON_AddNumberToObject(o, "max_abs_diff_vs_cpu_serial", r->max_abs_diff);
        cJSON_AddItemToArray(rows, o);
    }
    cJSON_AddItemToObject(root, "rows", rows);
    cJSON_AddItemToObject(root, "skipped", skipped);
    return print_free(root);
}
