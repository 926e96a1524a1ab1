/* errors.c — lookups in the error table and the message formatter. */
#include "errors.h"

#include <stdarg.h>
#include <stdio.h>

struct err_row {
    int code, status;
    const char *name, *msg;
};

#define EDGED_ERR_ROW(sym, val, status, name, msg) {val, status, name, msg},
static const struct err_row err_rows[] = {EDGED_ERRORS(EDGED_ERR_ROW)};
#undef EDGED_ERR_ROW

static const struct err_row *err_find(int code)
{
    for (size_t i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++)
        if (err_rows[i].code == code)
            return &err_rows[i];
    return err_find(EDGED_E_INTERNAL);
}

int edged_err_status(int code) { return err_find(code)->status; }
const char *edged_err_name(int code) { return err_find(code)->name; }
const char *edged_err_message(int code) { return err_find(code)->msg; }

int edged_fail(char *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return code;
    va_start(ap, fmt);
    vsnprintf(err, EDGED_ERR_LEN, fmt, ap);
    va_end(ap);
    return code;
}
