/* fuzz_params.c — libFuzzer target: the parameter parser and validator (api/params*.c).
 * Input: byte 0 picks the mode (bit 0: compare) and the path (bit 1: text fields, else one JSON
 * object); the rest is the JSON text, or "key=value" lines for the text path. Oracles: only
 * EDGED_E_PARAM / EDGED_E_NOMEM as errors, and a validated set of parameters holds values in
 * their documented ranges (a pipeline's steps too) and makes a filter plan for 1 to 4 channels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "filter.h"
#include "params.h"

static void check_ranges(const struct params *p)
{
    const struct filter_spec *s = &p->spec;

    if (p->png_level < 0 || p->png_level > 9 || (p->bit_depth != 1 && p->bit_depth != 8))
        abort();
    if ((p->given & PARAMS_F_SIZE) && (s->size < 3 || s->size > FILTER_MAX_SIDE || s->size % 2 == 0))
        abort();
    if ((p->given & PARAMS_F_THRESHOLD) && !(s->threshold >= 0.0f && s->threshold <= 1e6f))
        abort();
    if ((p->given & PARAMS_F_SIGMA) && !(s->sigma > 0.0f && s->sigma <= 1000.0f))
        abort();
    if ((p->given & PARAMS_F_BLOCK) && p->block != 8 && p->block != 16 && p->block != 24 && p->block != 32)
        abort();
    if ((p->given & PARAMS_F_DEVICE) ? p->device < 0 || p->device > PARAMS_MAX_DEVICE : p->device != -1)
        abort();
    if (p->nops < 0 || p->nops > FILTER_MAX_STEPS || ((p->given & PARAMS_F_OPS) != 0) != (p->nops > 0))
        abort();
    for (int i = 0; i < p->nops; i++) /* each step as one filter's request: the same ranges */
        if ((unsigned)p->ops[i].filter >= FILTER_COUNT || p->ops[i].filter == FILTER_CANNY ||
            (p->ops[i].size && (p->ops[i].size < 3 || p->ops[i].size > FILTER_MAX_SIDE || p->ops[i].size % 2 == 0)) ||
            !(p->ops[i].value >= -FILTER_MAX_VALUE && p->ops[i].value <= FILTER_MAX_VALUE))
            abort();
}

static int apply_lines(struct params *p, const char *text, size_t len, char *err)
{
    char *copy = malloc(len + 1), *line, *save = NULL, *eq;
    int rc = 0;

    if (!copy)
        return 0;
    memcpy(copy, text, len);
    copy[len] = '\0';
    for (line = strtok_r(copy, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
        eq = strchr(line, '=');
        if (eq)
            *eq = '\0';
        rc = params_set_text(p, line, eq ? eq + 1 : NULL, err);
    }
    free(copy);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct params p;
    struct filter_plan *plan;
    char err[EDGED_ERR_LEN];
    int rc;

    if (size < 1)
        return 0;
    params_init(&p, (data[0] & 1) ? PARAMS_COMPARE : PARAMS_FILTER);
    if (data[0] & 2)
        rc = apply_lines(&p, (const char *)data + 1, size - 1, err);
    else
        rc = params_set_json(&p, (const char *)data + 1, size - 1, err);
    if (rc == 0)
        rc = params_validate(&p, err);
    if (rc != 0) {
        if (rc != EDGED_E_PARAM && rc != EDGED_E_NOMEM)
            abort();
        if (strnlen(err, EDGED_ERR_LEN) == 0 || strnlen(err, EDGED_ERR_LEN) == EDGED_ERR_LEN)
            abort(); /* every refusal says why, terminated */
        return 0;
    }
    check_ranges(&p);
    if (!(plan = malloc(sizeof(*plan))))
        return 0;
    for (int ch = 1; ch <= 4; ch++)
        if ((p.nops ? filter_pipeline_make(p.ops, p.nops, ch, plan, err) : filter_plan_make(&p.spec, ch, plan, err)) != 0 ||
            filter_plan_check(plan, err) != 0)
            abort(); /* validation promised a plan, and one that every backend accepts */
    free(plan);
    return 0;
}
