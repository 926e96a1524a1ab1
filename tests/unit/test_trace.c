/* test_trace.c — W3C traceparent: what is taken as the parent (version 00, lowercase hex, ids not
 * all zeros, exact length) and what starts a new trace; the server span's id and header. */
#include <string.h>

#include "check.h"
#include "http/trace.h"

#define GOOD "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void test_parse(void)
{
    static const char *const bad[] = {
        NULL,
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",     /* no flags */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* one more byte */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",   /* short flags */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* uppercase */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* zero parent id */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* another version */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* the forbidden version */
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",  /* not hex */
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",  /* separators */
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",  /* leading space */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",  /* flags not hex */
    };
    struct trace_ctx t;

    memset(&t, 0, sizeof(t));
    CHECK(trace_parse(GOOD, &t) == 0, "valid header refused");
    CHECK(!strcmp(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736") &&
              !strcmp(t.parent_id, "00f067aa0ba902b7") && !strcmp(t.flags, "01"),
          "parsed %s %s %s", t.trace_id, t.parent_id, t.flags);
    CHECK(trace_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", &t) == 0 &&
              !strcmp(t.flags, "00"),
          "flags 00");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&t, 'x', sizeof(t));
        CHECK(trace_parse(bad[i], &t) == -1 && t.trace_id[0] == 'x', "accepted: %s",
              bad[i] ? bad[i] : "(null)");
    }
}

static void test_begin(void)
{
    const uint64_t rnd[3] = {0x0123456789abcdefULL, 0xfedcba9876543210ULL, 0x1111222233334444ULL};
    const uint64_t zero[3] = {0, 0, 0};
    struct trace_ctx t;
    char h[TRACE_HEADER_LEN + 1];

    trace_begin(&t, GOOD, rnd);
    trace_format(&t, h, sizeof(h));
    CHECK(!strcmp(h, "00-4bf92f3577b34da6a3ce929d0e0e4736-1111222233334444-01"),
          "child of a valid parent: %s", h);
    CHECK(!strcmp(t.parent_id, "00f067aa0ba902b7"), "parent kept: %s", t.parent_id);
    trace_begin(&t, "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", rnd);
    trace_format(&t, h, sizeof(h));
    CHECK(!strcmp(h, "00-0123456789abcdeffedcba9876543210-1111222233334444-00") && !t.parent_id[0],
          "an invalid header starts a new trace: %s", h);
    trace_begin(&t, NULL, zero);
    trace_format(&t, h, sizeof(h));
    CHECK(trace_parse(h, &t) == 0, "the server's own header is valid even from zero words: %s", h);
}

int main(void)
{
    test_parse();
    test_begin();
    return check_summary();
}
