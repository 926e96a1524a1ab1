/* params.c — a request's parameters: the defaults, the sources that set them, the plan they make,
 * and the quoting of input in messages. The fields and their setters are params_field.c's, the
 * reading of text and JSON params_parse.c's. */
#include "params.h"

#include <string.h>

#include "errors.h"

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
    p->device = -1;
    p->mode = mode;
}

int params_plan(const struct params *p, int ch, struct filter_plan *plan, char *err)
{
    int rc;

    rc = p->nops ? filter_pipeline_make(p->ops, p->nops, ch, plan, err) : filter_plan_make(&p->spec, ch, plan, err);
    if (rc < 0)
        return rc;
    if (p->bit_depth == 1 && plan->out_ch != 1)
        return edged_fail(err, EDGED_E_PARAM, "bit_depth: 1 needs a one-channel output; this input has alpha, "
                                              "so the output has %d channels", plan->out_ch);
    plan->accept_packed = p->bit_depth == 1;
    return 0;
}

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
