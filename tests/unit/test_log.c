/* test_log.c — the log: level names and the threshold, the level of an access line (probes at
 * debug, refusals for capacity at warn, server errors at error), and lines that stay valid UTF-8
 * and one line each whatever bytes a request carried (JSON: U+FFFD for each bad byte; text:
 * printable ASCII only); UTF-8 repair itself; the access line's device, only for a job that ran
 * on a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ops/log.h"
#include "utf8.h"

#define FFFD "\xef\xbf\xbd"

static void test_utf8_repair(void)
{
    static const struct {
        const char *in, *want; /* want NULL: already valid */
    } cases[] = {
        {"plain /v1/filter", NULL},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", NULL},
        {"\xff", FFFD},
        {"a\xfe-", "a" FFFD "-"},
        {"\xc0\xaf", FFFD FFFD},                   /* overlong '/' */
        {"\xed\xa0\x80", FFFD FFFD FFFD},          /* a surrogate */
        {"\xe2\x82", FFFD FFFD},                   /* cut short */
        {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD}, /* past U+10FFFF */
    };
    int oom;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = utf8_repair(cases[i].in, &oom);
        CHECK(!oom, "case %zu: oom", i);
        if (!cases[i].want)
            CHECK(got == NULL, "case %zu: valid input repaired", i);
        else
            CHECK(got && !strcmp(got, cases[i].want), "case %zu: got %s", i, got ? got : "(null)");
        CHECK(utf8_valid(got ? got : cases[i].in, strlen(got ? got : cases[i].in)), "case %zu: invalid", i);
        free(got);
    }
}

static void test_levels(void)
{
    const char *names[] = {"debug", "info", "warn", "error"};

    for (int i = 0; i < 4; i++)
        CHECK(log_level_parse(names[i]) == i && !strcmp(log_level_name((enum log_level)i), names[i]), "%s",
              names[i]);
    CHECK(log_level_parse("warning") == -1 && log_level_parse("INFO") == -1 && log_level_parse("") == -1,
          "unknown");
    log_set_level(LOG_WARN);
    CHECK(!log_enabled(LOG_DEBUG) && !log_enabled(LOG_INFO) && log_enabled(LOG_WARN) &&
              log_enabled(LOG_ERROR),
          "threshold warn");
    log_set_level(LOG_INFO);
}

static void test_request_level(void)
{
    CHECK(log_request_level(200, 0, 0) == LOG_INFO, "a served request");
    CHECK(log_request_level(404, 0, 0) == LOG_INFO, "a client error");
    CHECK(log_request_level(0, 0, 0) == LOG_INFO, "a request never answered");
    CHECK(log_request_level(200, 0, 1) == LOG_DEBUG, "a probe");
    CHECK(log_request_level(503, 1, 1) == LOG_DEBUG, "readiness 503: not an error");
    CHECK(log_request_level(429, 1, 0) == LOG_WARN, "queue full");
    CHECK(log_request_level(503, 1, 0) == LOG_WARN, "memory budget or draining");
    CHECK(log_request_level(500, 0, 0) == LOG_ERROR, "internal error");
    CHECK(log_request_level(504, 0, 0) == LOG_ERROR, "deadline");
    CHECK(log_request_level(503, 0, 1) == LOG_ERROR, "a scrape that failed for the server");
}

/* What the log writes while fn runs, with stderr sent to a temporary file. */
static char *captured(void (*fn)(void))
{
    FILE *f = tmpfile();
    int saved = dup(STDERR_FILENO);
    char *text = NULL;
    long n;

    if (!f || saved < 0) {
        CHECK(0, "no temporary file");
        return NULL;
    }
    fflush(stderr);
    dup2(fileno(f), STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    n = ftell(f) >= 0 ? lseek(fileno(f), 0, SEEK_END) : -1;
    if (n >= 0 && (text = calloc(1, (size_t)n + 1))) {
        lseek(fileno(f), 0, SEEK_SET);
        CHECK(read(fileno(f), text, (size_t)n) == n, "read back");
    }
    fclose(f);
    return text;
}

static void bad_request_lines(void)
{
    struct result_times t = {.total = 1.5};
    struct log_request r = {LOG_INFO,
                            "id-1",
                            "G\xffT",
                            "/a\xfe\xc3/caf\xc3\xa9\n",
                            NULL,
                            NULL,
                            NULL,
                            "not_found",
                            "0af7651916cd43dd8448eb211c80319c",
                            "b7ad6b7169203331",
                            NULL,
                            404,
                            0,
                            95,
                            0,
                            0,
                            &t,
                            -1};

    log_request(&r);
    log_event("warn", "test", "message with \xc3 and \x01 in it");
    log_event("debug", "test", "never written at info");
    r.level = LOG_DEBUG;
    log_request(&r);
}

static void test_lines(enum log_format form)
{
    char *text, *line, *save = NULL;
    int lines = 0;

    log_set_format(form);
    text = captured(bad_request_lines);
    if (!text)
        return;
    CHECK(utf8_valid(text, strlen(text)), "%s: not valid UTF-8: %s", log_format_name(form), text);
    CHECK(!strstr(text, "never written") && !strstr(text, "\"level\":\"debug\"") && !strstr(text, " debug "),
          "debug lines written at info: %s", text);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const unsigned char *p = (const unsigned char *)line;
        lines++;
        while (*p >= 0x20 && *p != 0x7f && (form == LOG_JSON || *p < 0x80))
            p++;
        CHECK(*p == '\0', "byte %02x in %s", *p, line);
        if (form == LOG_JSON)
            CHECK(line[0] == '{' && line[strlen(line) - 1] == '}', "not one object: %s", line);
    }
    CHECK(lines == 2, "%s: %d lines", log_format_name(form), lines);
    if (form == LOG_JSON)
        CHECK(strstr(text, "\"method\":\"G" FFFD "T\"") &&
                  strstr(text, "\"path\":\"/a" FFFD FFFD "/caf\xc3\xa9\\n\"") &&
                  strstr(text, "\"trace_id\":\"0af7651916cd43dd8448eb211c80319c\"") &&
                  strstr(text, "\"span_id\":\"b7ad6b7169203331\"") && !strstr(text, "parent_id") &&
                  !strstr(text, "device"),
              "JSON fields: %s", text);
    else
        CHECK(strstr(text, " request \"G???T\" \"/a??????"
                           "/caf??\\u000a\" 404 1.5 ms id=id-1 trace_id="),
              "text head: %s", text);
    free(text);
}

/* A request whose job ran on the GPU lane: the access line names its CUDA device number. */
static void gpu_request_line(void)
{
    struct result_times t = {.total = 2.0};
    struct log_request r = {.level = LOG_INFO,
                            .request_id = "id-2",
                            .method = "POST",
                            .path = "/v1/filter",
                            .filter = "edge",
                            .variant = "fast",
                            .backend = "gpu",
                            .status = 200,
                            .t = &t,
                            .device = 3};

    log_request(&r);
}

static void test_device_field(enum log_format form)
{
    char *text;

    log_set_format(form);
    if (!(text = captured(gpu_request_line)))
        return;
    if (form == LOG_JSON)
        CHECK(strstr(text, "\"backend\":\"gpu\",\"device\":3,"), "JSON device: %s", text);
    else
        CHECK(strstr(text, " backend=gpu device=3 "), "text device: %s", text);
    free(text);
}

int main(void)
{
    test_utf8_repair();
    test_levels();
    test_request_level();
    test_lines(LOG_JSON);
    test_lines(LOG_TEXT);
    test_device_field(LOG_JSON);
    test_device_field(LOG_TEXT);
    return check_summary();
}
