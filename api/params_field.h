/* params_field.h — the fields of a request (struct params) as a table, one row per field: its name,
 * its bit, how a text value of it reads, its setter, the filter knob it is. For params_parse.c. */
#ifndef EDGED_PARAMS_FIELD_H
#define EDGED_PARAMS_FIELD_H

#include <cjson/cJSON.h>

#include "params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a text value (query string, form field) becomes the JSON value the setters take. */
enum params_text_kind { PARAMS_TEXT_STRING, PARAMS_TEXT_JSON, PARAMS_TEXT_BOOL, PARAMS_TEXT_LIST };

typedef int (*params_field_setter)(struct params *p, const cJSON *v, char *err);

struct params_field {
    const char *name;
    unsigned bit;
    enum params_text_kind text;
    params_field_setter set;
    int knob; /* the FILTER_KNOB_* of that name (filter_takes says which filters take it), or
               * PARAMS_FIELD_COMMON: every filter takes it */
};
#define PARAMS_FIELD_COMMON (-1)

/* The field named name, or NULL. */
const struct params_field *params_field_find(const char *name);

/* Sets field f of p from the JSON value v with f's setter, which checks its type and range, and
 * records f in p->given. 0 or EDGED_E_PARAM with a message naming the field. */
int params_field_set(struct params *p, const struct params_field *f, const cJSON *v, char *err);

#ifdef __cplusplus
}
#endif
#endif
