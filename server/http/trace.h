/* trace.h — W3C Trace Context: a request's `traceparent` taken as the parent of the server's span,
 * and the `traceparent` of that span for the answer. */
#ifndef EDGED_TRACE_H
#define EDGED_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_ID_HEX 32     /* hex digits of a trace id */
#define TRACE_SPAN_HEX 16   /* hex digits of a span (parent) id */
#define TRACE_HEADER_LEN 55 /* "00-" trace "-" span "-" flags */

/* One request's trace context, as lowercase hex strings. */
struct trace_ctx {
    char trace_id[TRACE_ID_HEX + 1];
    char parent_id[TRACE_SPAN_HEX + 1]; /* the caller's span; "" when the request started the trace */
    char span_id[TRACE_SPAN_HEX + 1];   /* the server's span */
    char flags[3];                      /* the caller's trace flags, "00" for a new trace */
};

/* Reads a traceparent header of version 00: "00-" 32 hex "-" 16 hex "-" 2 hex, lowercase, the
 * trace id and the parent id not all zeros, nothing after. Returns 0 and fills trace_id,
 * parent_id and flags of t, or -1 (t untouched) for anything else, NULL included. */
int trace_parse(const char *header, struct trace_ctx *t);

/* The server span of a request that sent header (may be NULL): the caller's trace and flags when
 * the header is valid, else a new trace (trace id from rand[0] and rand[1], flags 00, no parent);
 * the span id from rand[2]. A zero word is replaced so that no id is all zeros. */
void trace_begin(struct trace_ctx *t, const char *header, const uint64_t rand[3]);

/* The traceparent of the server span ("00-TRACE-SPAN-FLAGS") into buf of cap bytes (at least
 * TRACE_HEADER_LEN + 1). */
void trace_format(const struct trace_ctx *t, char *buf, size_t cap);

#endif
