/* trace.c — W3C Trace Context (traceparent, version 00): parse the caller's, make the server's. */
#include "http/trace.h"

#include <stdio.h>
#include <string.h>

/* n lowercase hex digits at s, not all '0' when nonzero is set. */
static int hex_field(const char *s, size_t n, int nonzero)
{
    int any = 0;

    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
        any |= s[i] != '0';
    }
    return any || !nonzero;
}

int trace_parse(const char *h, struct trace_ctx *t)
{
    if (!h || strlen(h) != TRACE_HEADER_LEN || strncmp(h, "00-", 3) != 0 || h[35] != '-' || h[52] != '-' ||
        !hex_field(h + 3, TRACE_ID_HEX, 1) || !hex_field(h + 36, TRACE_SPAN_HEX, 1) ||
        !hex_field(h + 53, 2, 0))
        return -1;
    memcpy(t->trace_id, h + 3, TRACE_ID_HEX);
    t->trace_id[TRACE_ID_HEX] = '\0';
    memcpy(t->parent_id, h + 36, TRACE_SPAN_HEX);
    t->parent_id[TRACE_SPAN_HEX] = '\0';
    memcpy(t->flags, h + 53, 2);
    t->flags[2] = '\0';
    return 0;
}

static unsigned long long nonzero(uint64_t v)
{
    return v ? (unsigned long long)v : 1ULL;
}

void trace_begin(struct trace_ctx *t, const char *header, const uint64_t rand[3])
{
    if (trace_parse(header, t) < 0) {
        snprintf(t->trace_id, sizeof(t->trace_id), "%016llx%016llx", (unsigned long long)rand[0],
                 nonzero(rand[1]));
        t->parent_id[0] = '\0';
        memcpy(t->flags, "00", 3);
    }
    snprintf(t->span_id, sizeof(t->span_id), "%016llx", nonzero(rand[2]));
}

void trace_format(const struct trace_ctx *t, char *buf, size_t cap)
{
    snprintf(buf, cap, "00-%s-%s-%s", t->trace_id, t->span_id, t->flags);
}
