/* test_params.c — the request-parameter parser: defaults, text and JSON fields, precedence, and
 * every rejection (unknown keys, types, ranges, 1e999, huge ints, even sizes, bad JSON, depth). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "params.h"

static char err[EDGED_ERR_LEN];

/* Applies JSON text to fresh parameters and returns the code; p may be NULL. */
static int json(const char *text, struct params *out)
{
    struct params p;

    params_init(&p, PARAMS_FILTER);
    err[0] = '\0';
    int rc = params_set_json(&p, text, strlen(text), err);
    if (rc == 0)
        rc = params_validate(&p, err);
    if (out)
        *out = p;
    return rc;
}

/* The JSON must be refused with EDGED_E_PARAM and a message naming `field`. */
static void rejects(const char *text, const char *field)
{
    int rc = json(text, NULL);

    CHECK(rc == EDGED_E_PARAM, "%s: rc %d, want EDGED_E_PARAM", text, rc);
    CHECK(strstr(err, field) != NULL, "%s: message '%s' does not name '%s'", text, err, field);
}

static void rejects_text(const char *key, const char *value, const char *field)
{
    struct params p;
    int rc;

    params_init(&p, PARAMS_FILTER);
    err[0] = '\0';
    rc = params_set_text(&p, key, value, err);
    if (rc == 0)
        rc = params_validate(&p, err);
    CHECK(rc == EDGED_E_PARAM, "%s=%s: rc %d, want EDGED_E_PARAM", key, value, rc);
    CHECK(strstr(err, field) != NULL, "%s=%s: message '%s' does not name '%s'", key, value, err, field);
}

static void test_defaults(void)
{
    struct params p;

    params_init(&p, PARAMS_FILTER);
    CHECK(p.spec.filter == FILTER_EDGE, "default filter %d", p.spec.filter);
    CHECK(p.spec.threshold == 5.0f, "default threshold %g", p.spec.threshold);
    CHECK(p.variant == VARIANT_AUTO && p.output == PARAMS_OUTPUT_AUTO, "default variant/output");
    CHECK(p.png_level == PARAMS_DEFAULT_PNG_LEVEL && p.bit_depth == 8, "png_level %d bit_depth %d", p.png_level,
          p.bit_depth);
    CHECK(params_validate(&p, err) == 0, "defaults invalid: %s", err);
}

static void test_text_fields(void)
{
    struct params p;
    int rc = 0;

    params_init(&p, PARAMS_FILTER);
    rc |= params_set_text(&p, "filter", "gaussian", err);
    rc |= params_set_text(&p, "size", "7", err);
    rc |= params_set_text(&p, "sigma", "1.5", err);
    rc |= params_set_text(&p, "border", "reflect", err);
    rc |= params_set_text(&p, "output", "json", err);
    rc |= params_set_text(&p, "png_level", "6", err);
    CHECK(rc == 0, "text fields refused: %s", err);
    CHECK(p.spec.filter == FILTER_GAUSSIAN && p.spec.size == 7 && p.spec.sigma == 1.5f, "gaussian fields");
    CHECK(p.spec.border == BORDER_REFLECT && p.output == PARAMS_OUTPUT_JSON && p.png_level == 6, "other fields");
    CHECK(params_validate(&p, err) == 0, "valid combination refused: %s", err);
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "filter", "custom", err) == 0 &&
              params_set_text(&p, "taps", "[[1,2,1],[2,4,2],[1,2,1]]", err) == 0 &&
              params_set_text(&p, "normalize", "true", err) == 0 && params_validate(&p, err) == 0,
          "custom taps as text: %s", err);
    CHECK(p.spec.custom_rows == 3 && p.spec.custom_cols == 3 && p.spec.custom_taps[4] == 4.0f &&
              p.spec.custom_normalize == 1,
          "taps parsed %dx%d", p.spec.custom_rows, p.spec.custom_cols);
}

static void test_json_fields(void)
{
    struct params p;

    CHECK(json("{\"filter\":\"custom\",\"taps\":[[0,1,0],[1,-4,1],[0,1,0]],\"border\":\"replicate\"}", &p) == 0,
          "custom JSON refused: %s", err);
    CHECK(p.spec.custom_rows == 3 && p.spec.custom_taps[3] == 1.0f && p.spec.custom_taps[4] == -4.0f,
          "taps values");
    CHECK(json("{\"filter\":\"edge\",\"threshold\":12.5,\"bit_depth\":1,\"variant\":\"cpu_serial\"}", &p) == 0,
          "edge JSON refused: %s", err);
    CHECK(p.spec.threshold == 12.5f && p.bit_depth == 1 && p.variant == VARIANT_CPU_SERIAL, "edge fields");
    CHECK(json("  {\"filter\" : \"box\", \"size\" : 5}  ", &p) == 0 && p.spec.size == 5, "whitespace: %s", err);
    CHECK(json("{\"block\":32,\"variant\":\"naive\"}", &p) == 0 && p.block == 32, "block on GPU variant: %s", err);
    CHECK(json("{\"filter\":\"box\",\"size\":31,\"variant\":\"fft\"}", &p) == 0 && p.variant == VARIANT_FFT,
          "variant fft refused: %s", err);
    CHECK(variant_is_gpu(VARIANT_FFT) && variant_built(VARIANT_FFT) == EDGED_FFT &&
              (variant_missing(VARIANT_FFT) == NULL) == EDGED_FFT,
          "fft: a GPU variant, built exactly when EDGED_FFT");
    CHECK(json("{\"filter\":\"box\",\"size\":17,\"variant\":\"tf32x3\"}", &p) == 0 &&
              p.variant == VARIANT_TF32X3 && variant_is_gpu(VARIANT_TF32X3) && variant_built(VARIANT_TF32X3),
          "variant tf32x3: a GPU variant in every CUDA build: %s", err);
}

/* Query/form first, JSON last: JSON wins field by field, other fields survive. */
static void test_precedence(void)
{
    struct params p;
    const char *j = "{\"threshold\":9}";

    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "threshold", "7", err) == 0 && params_set_text(&p, "png_level", "3", err) == 0,
          "text refused");
    CHECK(params_set_json(&p, j, strlen(j), err) == 0, "json refused: %s", err);
    CHECK(p.spec.threshold == 9.0f && p.png_level == 3, "threshold %g png_level %d", p.spec.threshold,
          p.png_level);
}

static void test_rejections(void)
{
    rejects("{\"treshold\":5}", "treshold");
    rejects("{\"threshold\":\"5\"}", "threshold");
    rejects("{\"threshold\":-1}", "threshold");
    rejects("{\"threshold\":1e999}", "threshold");
    rejects("{\"png_level\":10}", "png_level");
    rejects("{\"png_level\":2.5}", "png_level");
    rejects("{\"filter\":\"gaussian\",\"size\":123456789012345678901234567890}", "size");
    rejects("{\"filter\":\"gaussian\",\"size\":4}", "size");
    rejects("{\"filter\":\"box\",\"size\":65}", "size");
    rejects("{\"filter\":\"gaussian\",\"sigma\":-1}", "sigma");
    rejects("{\"filter\":\"gaussian\",\"sigma\":0}", "sigma");
    rejects("{\"filter\":\"gaussian\",\"sigma\":1e-320}", "sigma"); /* would be stored as 0: the default */
    rejects("{\"filter\":\"canny\",\"sigma\":1e-39}", "sigma");
    rejects("{\"filter\":\"blur\"}", "filter");
    rejects("{\"filter\":7}", "filter");
    rejects("{\"variant\":\"fastest\"}", "variant");
    rejects("{\"border\":\"wrap\"}", "border");
    rejects("{\"post\":\"threshold\",\"filter\":\"sobel\"}", "post");
    rejects("{\"output\":\"jpeg\"}", "output");
    rejects("{\"bit_depth\":4}", "bit_depth");
    rejects("{\"filter\":\"sobel\",\"bit_depth\":1}", "bit_depth");
    rejects("{\"block\":12,\"variant\":\"naive\"}", "block");
    rejects("{\"block\":16,\"variant\":\"cpu\"}", "block");
    rejects("{\"filter\":\"sobel\",\"threshold\":3}", "threshold");
    rejects("{\"filter\":\"edge\",\"size\":5}", "size");
    rejects("{\"filter\":\"box\",\"sigma\":2}", "sigma");
    rejects("{\"filter\":\"custom\"}", "taps");
    rejects("{\"filter\":\"sobel\",\"taps\":[[1]]}", "taps");
    rejects("{\"filter\":\"custom\",\"taps\":[[1,2],[3,4]]}", "taps");
    rejects("{\"filter\":\"custom\",\"taps\":[[1,2,3],[1,2]]}", "taps");
    rejects("{\"filter\":\"custom\",\"taps\":[[1,\"x\",3]]}", "taps");
    rejects("{\"filter\":\"custom\",\"taps\":[]}", "taps");
    rejects("{\"filter\":\"custom\",\"taps\":[[1e999]]}", "taps");
    rejects("{\"filter\":\"custom\",\"taps\":[[1]],\"normalize\":\"yes\"}", "normalize");
    rejects("{\"filter\":\"custom\",\"taps\":[[1,-1,0]],\"normalize\":true}", "taps");
    rejects("{\"variants\":[\"cpu\"]}", "variants");
    rejects("{\"filter\":\"edge\",\"filter\":\"sobel\"}", "duplicate");
}

static void test_bad_json(void)
{
    static const char *const bad[] = {"",          "{",           "{\"filter\":\"edge\",}", "\xEF\xBB\xBF{}",
                                      "[]",        "5",           "null",                  "{} {}",
                                      "{'a':1}",   "{\"a\" 1}",   "{\"filter\":\"edge\"",   "\"edge\""};
    char nul[] = "{\"filter\":\"edge\"}\0garbage";
    struct params p;
    int rc;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rc = json(bad[i], NULL);
        CHECK(rc == EDGED_E_PARAM && strstr(err, "params"), "bad JSON #%zu accepted or unnamed: rc %d '%s'", i, rc,
              err);
    }
    params_init(&p, PARAMS_FILTER);
    rc = params_set_json(&p, nul, sizeof(nul) - 1, err);
    CHECK(rc == EDGED_E_PARAM, "JSON with a NUL byte accepted");
    rejects("{\"taps\":[[[[[[[[1]]]]]]]]}", "deeper");
    rejects("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
            "deeper");
    rejects("{\"a\":\"[[[[[[\"}", "unknown parameter 'a'"); /* brackets inside strings do not count */
}

static void test_text_rejections(void)
{
    rejects_text("threshold", "abc", "threshold");
    rejects_text("threshold", "0x10", "threshold");
    rejects_text("threshold", "inf", "threshold");
    rejects_text("threshold", "nan", "threshold");
    rejects_text("threshold", "", "threshold");
    rejects_text("threshold", "1e999", "threshold");
    rejects_text("png_level", "3 4", "png_level");
    rejects_text("normalize", "yes", "normalize");
    rejects_text("treshold", "5", "treshold");
    rejects_text("variants", "cpu", "variants");
}

static void test_compare_mode(void)
{
    struct params p;

    params_init(&p, PARAMS_COMPARE);
    CHECK(params_set_text(&p, "variants", "cpu_serial,cpu", err) == 0, "variants text refused: %s", err);
    CHECK(p.variants == ((1u << VARIANT_CPU_SERIAL) | (1u << VARIANT_CPU)), "variants mask %#x", p.variants);
    CHECK(params_set_text(&p, "variant", "cpu", err) == EDGED_E_PARAM, "compare took `variant`");
    CHECK(params_set_text(&p, "variants", "cpu,auto", err) == EDGED_E_PARAM, "compare took auto");
    CHECK(params_set_json(&p, "{\"variants\":[]}", 15, err) == EDGED_E_PARAM, "empty variants accepted");
    /* compare encodes no image: the image output options are refused, named; output=json is not */
    static const char *const refused[][3] = {{"format", "jpeg", "format"},   {"quality", "80", "quality"},
                                             {"png_level", "6", "png_level"}, {"bit_depth", "8", "bit_depth"},
                                             {"output", "png", "output=png"}};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        params_init(&p, PARAMS_COMPARE);
        CHECK(params_set_text(&p, refused[i][0], refused[i][1], err) == 0, "%s: %s", refused[i][0], err);
        CHECK(params_validate(&p, err) == EDGED_E_PARAM && strncmp(err, refused[i][2], strlen(refused[i][2])) == 0 &&
                  strstr(err, "/v1/compare"),
              "compare %s=%s: %s", refused[i][0], refused[i][1], err);
    }
    params_init(&p, PARAMS_COMPARE);
    CHECK(params_set_text(&p, "output", "json", err) == 0 && params_validate(&p, err) == 0, "output=json: %s", err);
}

/* format: png, jpeg (jpg), webp; quality only for a lossy output, `format` given or resolved. */
static void test_format(void)
{
    static const char *const names[][2] = {{"png", "png"}, {"jpeg", "jpeg"}, {"jpg", "jpeg"}, {"webp", "webp"}};
    struct params p;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        params_init(&p, PARAMS_FILTER);
        CHECK(params_set_text(&p, "format", names[i][0], err) == 0 && params_validate(&p, err) == 0 &&
                  strcmp(params_format_name(p.format), names[i][1]) == 0,
              "format %s: %s", names[i][0], err);
    }
    rejects_text("format", "gif", "png, jpeg (or jpg), webp");
    rejects("{\"format\":\"png\",\"quality\":80}", "format=jpeg or webp");
    CHECK(json("{\"format\":\"webp\",\"quality\":80}", &p) == 0 && p.format == PARAMS_FORMAT_WEBP, "%s", err);
    CHECK(json("{\"quality\":80}", &p) == 0, "quality alone waits for the resolved format: %s", err);
    CHECK(params_output_format(&p, PARAMS_FORMAT_JPEG, "by", err) == PARAMS_FORMAT_JPEG &&
              params_output_format(&p, PARAMS_FORMAT_WEBP, "by", err) == PARAMS_FORMAT_WEBP,
          "quality with a lossy resolved format: %s", err);
    CHECK(params_output_format(&p, PARAMS_FORMAT_PNG, "the Accept header said so", err) == EDGED_E_PARAM &&
              strstr(err, "the Accept header said so") && strstr(err, "quality"),
          "quality with a PNG resolved format: %s", err);
    CHECK(json("{}", &p) == 0 && params_output_format(&p, PARAMS_FORMAT_PNG, "by", err) == PARAMS_FORMAT_PNG,
          "no quality, PNG: %s", err);
    CHECK(json("{\"format\":\"jpeg\"}", &p) == 0 &&
              params_output_format(&p, PARAMS_FORMAT_PNG, "by", err) == PARAMS_FORMAT_JPEG,
          "format wins over the resolved choice: %s", err);
    /* png_level with another format (a bit_depth 1 map is written as 0/255 in any format) */
    rejects("{\"format\":\"jpeg\",\"png_level\":6}", "png_level: applies to format=png, not jpeg");
    CHECK(json("{\"format\":\"webp\",\"bit_depth\":1}", &p) == 0, "bit_depth 1 with webp: %s", err);
    CHECK(json("{\"png_level\":6}", &p) == 0 &&
              params_output_format(&p, PARAMS_FORMAT_WEBP, "the Accept header said so", err) == EDGED_E_PARAM &&
              strstr(err, "png_level") && strstr(err, "the Accept header said so") && strstr(err, "webp"),
          "png_level with a WebP resolved format: %s", err);
}

/* The knob table (filter_takes) is what the parser enforces: each filter-specific knob, given a
 * valid value, is accepted by exactly the filters the table says take it, and a refusal names the
 * knob. custom always gets its taps (it needs them). */
static void test_knob_table(void)
{
    static const char *const value[FILTER_KNOB_COUNT] = {
        [FILTER_KNOB_THRESHOLD] = "3", [FILTER_KNOB_TAPS] = "[[1]]", [FILTER_KNOB_NORMALIZE] = "true",
        [FILTER_KNOB_SIZE] = "5",      [FILTER_KNOB_SIGMA] = "1.5",  [FILTER_KNOB_BIT_DEPTH] = "1",
        [FILTER_KNOB_POST] = "clamp",  [FILTER_KNOB_LOW] = "10",      [FILTER_KNOB_HIGH] = "200",
        [FILTER_KNOB_APERTURE] = "5",  [FILTER_KNOB_L2GRADIENT] = "true", [FILTER_KNOB_VALUE] = "40",
    };
    struct params p;
    int takers = 0;

    for (int k = 0; k < FILTER_KNOB_COUNT; k++) {
        const char *knob = filter_knob_name(k);
        CHECK(value[k] != NULL, "knob %s has no test value", knob);
        for (int f = 0; value[k] && f < FILTER_COUNT; f++) {
            params_init(&p, PARAMS_FILTER);
            err[0] = '\0';
            int rc = params_set_text(&p, "filter", filter_name(f), err);
            if (rc == 0 && f == FILTER_CUSTOM && k != FILTER_KNOB_TAPS)
                rc = params_set_text(&p, "taps", "[[1]]", err);
            if (rc == 0)
                rc = params_set_text(&p, knob, value[k], err);
            CHECK(rc == 0, "%s=%s for %s: set refused: %s", knob, value[k], filter_name(f), err);
            rc = params_validate(&p, err);
            CHECK(filter_takes(f, k) ? rc == 0 : rc == EDGED_E_PARAM && strstr(err, knob) != NULL,
                  "%s=%s for %s: rc %d (%s), table says %s", knob, value[k], filter_name(f), rc, err,
                  filter_takes(f, k) ? "takes it" : "does not");
            takers += filter_takes(f, k);
        }
    }
    CHECK(takers > FILTER_KNOB_COUNT, "the knob table is nearly empty (%d filter-knob pairs)", takers);
    CHECK(strcmp(filter_knob_takers(FILTER_KNOB_SIZE, err, sizeof(err)), "gaussian, box and canny") == 0,
          "takers of size: '%s'", err);
}

/* `ops`: a pipeline of steps, each parsed by the one-filter parser; errors name the step. */
static void test_pipeline(void)
{
    static const struct {
        const char *json, *field;
    } bad[] = {
        {"{\"ops\":{}}", "ops: expected an array"},
        {"{\"ops\":[]}", "ops: 0 steps"},
        {"{\"ops\":[{\"filter\":\"box\"},{\"filter\":\"box\"},{\"filter\":\"box\"},{\"filter\":\"box\"},"
         "{\"filter\":\"box\"},{\"filter\":\"box\"},{\"filter\":\"box\"},{\"filter\":\"box\"},{\"filter\":\"box\"}]}",
         "1..8"},
        {"{\"ops\":[{\"filter\":\"box\",\"ops\":[{\"filter\":\"box\"}]}]}", "ops[0].ops"},
        {"{\"ops\":[{\"filter\":\"box\"},{\"filter\":\"nope\"}]}", "ops[1].filter"},
        {"{\"ops\":[{\"filter\":\"box\"},{\"filter\":\"gaussian\",\"size\":4}]}", "ops[1].size"},
        {"{\"ops\":[{\"filter\":\"box\"},{\"filter\":\"sobel\",\"size\":3}]}", "ops[1].size"},
        {"{\"ops\":[{\"filter\":\"box\"},7]}", "ops[1]: expected an object"},
        {"{\"ops\":[{\"size\":3}]}", "ops[0]: filter missing"},
        {"{\"ops\":[{\"filter\":\"box\",\"variant\":\"cpu\"}]}", "ops[0].variant"},
        {"{\"ops\":[{\"filter\":\"box\",\"bit_depth\":1}]}", "ops[0].bit_depth"},
        {"{\"ops\":[{\"filter\":\"box\",\"size\":3,\"size\":5}]}", "ops[0]: duplicate"},
        {"{\"filter\":\"box\",\"ops\":[{\"filter\":\"box\"}]}", "filter: give it inside each step"},
        {"{\"ops\":[{\"filter\":\"box\"}],\"size\":5}", "size: give it inside each step"},
        {"{\"ops\":[{\"filter\":\"canny\"}]}", "ops[0]: canny"},
        {"{\"ops\":[{\"filter\":\"edge\"},{\"filter\":\"box\"}]}", "ops[0]: edge"},
        {"{\"ops\":[{\"filter\":\"box\",\"post\":\"abs\"},{\"filter\":\"box\"}]}", "ops[0]: post"},
        {"{\"ops\":[{\"filter\":\"sobel\"},{\"filter\":\"box\",\"color\":\"rgb\"}]}", "ops[1]: color rgb"},
        {"{\"ops\":[{\"filter\":\"custom\"}]}", "ops[0].taps"},
        {"{\"ops\":[{\"filter\":\"threshold\",\"value\":1e7}]}", "ops[0].value"},
        {"{\"ops\":[{\"filter\":\"sobel\"},{\"filter\":\"box\"}],\"bit_depth\":1}", "bit_depth"},
    };
    struct params *p = malloc(sizeof(*p));
    struct filter_plan *plan = malloc(sizeof(*plan));

    if (!p || !plan) {
        CHECK(0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        rejects(bad[i].json, bad[i].field);
    CHECK(json("{\"ops\":[{\"filter\":\"gaussian\",\"size\":7},{\"filter\":\"sobel\"},"
               "{\"filter\":\"threshold\",\"value\":40}],\"variant\":\"cpu\",\"bit_depth\":1}", p) == 0,
          "3-step pipeline: %s", err);
    CHECK(p->nops == 3 && p->ops[0].filter == FILTER_GAUSSIAN && p->ops[0].size == 7 &&
              p->ops[1].filter == FILTER_SOBEL && p->ops[2].filter == FILTER_THRESHOLD && p->ops[2].value == 40.0f &&
              p->variant == VARIANT_CPU && p->bit_depth == 1,
          "3-step pipeline parsed as %d steps", p->nops);
    CHECK(params_plan(p, 3, plan, err) == 0 && plan->nsteps == 3 && plan->nconv == 3 && !plan->gray &&
              plan->step[1].to_gray && plan->planes == 1 && plan->out_ch == 1 && plan->step[2].value == 40.0f &&
              plan->step[1].conv0 == 1 && plan->accept_packed && filter_plan_stepwise(plan),
          "3-step plan on RGB: %s (steps %d, kernels %d, planes %d)", err, plan->nsteps, plan->nconv, plan->planes);
    CHECK(params_plan(p, 4, plan, err) == EDGED_E_PARAM && strstr(err, "bit_depth"),
          "bit_depth 1 with alpha: %s", err);
    params_init(p, PARAMS_FILTER);
    CHECK(params_set_text(p, "ops", "[{\"filter\":\"box\",\"size\":5},{\"filter\":\"emboss\"}]", err) == 0 &&
              params_validate(p, err) == 0 && p->nops == 2 && params_plan(p, 3, plan, err) == 0 &&
              plan->planes == 3 && plan->post == POST_OFFSET && filter_plan_stepwise(plan),
          "ops as a text field: %s", err);
out:
    free(plan);
    free(p);
}

/* Numbers exactly as JSON defines them, in the JSON params and in text values alike. */
static void test_strict_numbers(void)
{
    static const char *const bad[] = {"05", "5.", "-05", "5.e3", "1e", "1e+", "00", "-", "1.2.3", "0x10", "1-2", "+5", ".5"};
    static const char *const good[] = {"5", "0", "5.5", "5e2", "5E+2", "50e-1", "0.5"};
    char text[64];
    struct params p;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "{\"threshold\":%s}", bad[i]);
        rejects(text, "threshold");
        rejects_text("threshold", bad[i], "threshold");
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        snprintf(text, sizeof(text), "{\"threshold\":%s}", good[i]);
        CHECK(json(text, NULL) == 0, "%s refused: %s", text, err);
        params_init(&p, PARAMS_FILTER);
        CHECK(params_set_text(&p, "threshold", good[i], err) == 0, "threshold=%s refused: %s", good[i], err);
    }
    rejects("{\"filter\":\"custom\",\"taps\":[[1,2,01]]}", "taps");
    rejects_text("taps", "[[1,2.,1]]", "taps");
    CHECK(json("{\"filter\":\"custom\",\"taps\":[[1,\"05\",1]]}", NULL) == EDGED_E_PARAM && !strstr(err, "JSON number"),
          "a number-like string is a string, not a bad number: %s", err);
}

/* U+0000 in a string is refused (cJSON would stop there); invalid UTF-8 is refused and never
 * quoted back raw. */
static void test_nul_and_utf8(void)
{
    struct params p;

    rejects("{\"filter\":\"edge\\u0000junk\"}", "filter");
    rejects("{\"filter\":\"edge\\u0000\"}", "U+0000");
    CHECK(json("{\"filter\":\"edge\\\\u0000\"}", NULL) == EDGED_E_PARAM && strstr(err, "unknown value"),
          "an escaped backslash before u0000 is no NUL: %s", err);
    rejects("{\"filter\":\"ed\xff\"}", "UTF-8");
    rejects("{\"filter\":\"\xc0\xae\"}", "UTF-8");
    rejects("{\"filter\":\"\xed\xa0\x80\"}", "UTF-8");
    rejects_text("filter", "edge\xff", "filter");
    rejects_text("border", "\xe2\x82", "UTF-8");
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "filter", "\xc3\xa9\x01\x7f", err) == EDGED_E_PARAM && strstr(err, "'?\?\?\?'"),
          "non-ASCII and control bytes are not quoted: %s", err);
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "k\xff\n", "1", err) == EDGED_E_PARAM && strstr(err, "'k?\?'"),
          "an unknown key is quoted printable: %s", err);
    CHECK(json("{\"\xc3\xa9\":1}", NULL) == EDGED_E_PARAM && strstr(err, "'?\?'"), "JSON key quoted: %s", err);
}

/* A text source gives each field once; the next source may set it again and wins. */
static void test_repeats(void)
{
    struct params p;

    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "filter", "edge", err) == 0, "first filter: %s", err);
    CHECK(params_set_text(&p, "filter", "box", err) == EDGED_E_PARAM && strstr(err, "filter") &&
          strstr(err, "twice"), "repeat refused: %s", err);
    params_source_begin(&p);
    CHECK(params_set_text(&p, "filter", "box", err) == 0 && p.spec.filter == FILTER_BOX,
          "the next source overrides: %s", err);
    CHECK(params_set_text(&p, "threshold", "3", err) == 0 && params_set_text(&p, "threshold", "3", err) ==
          EDGED_E_PARAM && strstr(err, "threshold"), "repeat in the second source: %s", err);
}

/* Random mutations of valid parameter texts: only 0 or EDGED_E_PARAM, never a crash. */
static void test_fuzz(void)
{
    static const char *const seeds[] = {"{\"filter\":\"custom\",\"taps\":[[1,2,1],[2,4,2],[1,2,1]],\"normalize\":true}",
                                        "{\"filter\":\"gaussian\",\"size\":7,\"sigma\":1.5,\"border\":\"reflect\"}",
                                        "{\"filter\":\"edge\",\"threshold\":5,\"bit_depth\":1,\"png_level\":9}"};
    const char alphabet[] = "{}[]\",:0123456789.eE+-truefalsnl \\";
    char buf[256];
    int bad = 0;

    for (int i = 0; i < 20000; i++) {
        const char *s = seeds[i % 3];
        size_t n = strlen(s);
        struct params p;
        memcpy(buf, s, n + 1);
        for (int k = (int)(check_rng() % 4); k >= 0; k--)
            buf[check_rng() % n] = alphabet[check_rng() % (sizeof(alphabet) - 1)];
        params_init(&p, PARAMS_FILTER);
        int rc = params_set_json(&p, buf, check_rng() % (n + 1), err);
        if (rc == 0)
            rc = params_validate(&p, err);
        bad += rc != 0 && rc != EDGED_E_PARAM;
    }
    CHECK(bad == 0, "%d mutated inputs gave a code other than 0 or EDGED_E_PARAM", bad);
}

/* device: a CUDA device number 0..PARAMS_MAX_DEVICE, absent -1; refused beside a CPU variant (or a
 * compare list of CPU variants only) and inside a step of ops; errors name the field. */
static void test_device(void)
{
    struct params p;

    params_init(&p, PARAMS_FILTER);
    CHECK(p.device == -1 && !(p.given & PARAMS_F_DEVICE), "default device %d", p.device);
    CHECK(json("{\"device\":1}", &p) == 0 && p.device == 1 && (p.given & PARAMS_F_DEVICE), "device 1: %s", err);
    CHECK(json("{\"device\":63,\"variant\":\"naive\"}", &p) == 0 && p.device == 63, "device 63: %s", err);
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "device", "0", err) == 0 && params_validate(&p, err) == 0 && p.device == 0,
          "device=0 text: %s", err);
    rejects("{\"device\":-1}", "device");
    rejects("{\"device\":64}", "device");
    rejects("{\"device\":1.5}", "device");
    rejects("{\"device\":\"1\"}", "device");
    rejects("{\"device\":null}", "device");
    rejects("{\"device\":0,\"variant\":\"cpu\"}", "device");
    rejects("{\"device\":0,\"variant\":\"cpu_serial\"}", "device");
    rejects("{\"ops\":[{\"filter\":\"box\",\"device\":0}]}", "ops[0].device");
    rejects_text("device", "x", "device");
    rejects_text("device", "64", "device");
    rejects_text("device", "", "device");
    CHECK(json("{\"device\":0,\"variant\":\"cpu\"}", NULL) == EDGED_E_PARAM && strstr(err, "GPU variants"),
          "device with cpu: %s", err);
    params_init(&p, PARAMS_COMPARE);
    CHECK(params_set_text(&p, "variants", "cpu_serial,cpu", err) == 0 && params_set_text(&p, "device", "1", err) == 0,
          "compare text: %s", err);
    CHECK(params_validate(&p, err) == EDGED_E_PARAM && strstr(err, "device") && strstr(err, "variants"),
          "compare, CPU variants only, device accepted: %s", err);
    params_init(&p, PARAMS_COMPARE);
    CHECK(params_set_text(&p, "variants", "cpu,naive", err) == 0 && params_set_text(&p, "device", "1", err) == 0 &&
              params_validate(&p, err) == 0,
          "compare with a GPU variant and device: %s", err);
    params_init(&p, PARAMS_COMPARE);
    CHECK(params_set_text(&p, "device", "2", err) == 0 && params_validate(&p, err) == 0 && p.device == 2,
          "compare, every variant, device: %s", err);
}

int main(void)
{
    check_rng_seed(check_seed());
    test_defaults();
    test_text_fields();
    test_json_fields();
    test_precedence();
    test_rejections();
    test_bad_json();
    test_text_rejections();
    test_compare_mode();
    test_device();
    test_format();
    test_knob_table();
    test_pipeline();
    test_strict_numbers();
    test_nul_and_utf8();
    test_repeats();
    test_fuzz();
    return check_summary();
}
