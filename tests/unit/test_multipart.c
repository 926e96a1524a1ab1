/* test_multipart.c — the multipart/form-data parser: boundaries, parts, every malformation, and
 * random truncations and byte flips of a valid body (only whole results or EDGED_E_MULTIPART). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "http/multipart.h"

static char err[EDGED_ERR_LEN];

static int parse(const char *body, size_t len, struct multipart_part *parts)
{
    return multipart_parse((const uint8_t *)body, len, "XyZ", parts, MULTIPART_MAX_PARTS, err);
}

static void test_boundary(void)
{
    char b[MULTIPART_MAX_BOUNDARY + 1];
    char longb[128] = "multipart/form-data; boundary=";

    CHECK(multipart_boundary("multipart/form-data; boundary=abc123", b, err) == 0 && strcmp(b, "abc123") == 0,
          "plain boundary: %s", b);
    CHECK(multipart_boundary("multipart/form-data; charset=utf-8; BOUNDARY=\"a b;c\"", b, err) == 0 &&
              strcmp(b, "a b;c") == 0,
          "quoted boundary: '%s'", b);
    CHECK(multipart_boundary("multipart/form-data", b, err) == EDGED_E_MULTIPART, "missing boundary accepted");
    CHECK(multipart_boundary("multipart/form-data; boundary=", b, err) == EDGED_E_MULTIPART, "empty boundary");
    memset(longb + strlen(longb), 'a', 71);
    CHECK(multipart_boundary(longb, b, err) == EDGED_E_MULTIPART, "71-char boundary accepted");
}

static const char valid[] = "preamble to ignore\r\n"
                            "--XyZ\r\n"
                            "Content-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n"
                            "Content-Type: image/png\r\n"
                            "\r\n"
                            "\x89PNG\r\n--XyX not a boundary\r\n\r\n"
                            "--XyZ  \r\n"
                            "content-disposition: form-data; name=params\r\n"
                            "\r\n"
                            "{\"filter\":\"edge\"}\r\n"
                            "--XyZ\r\n"
                            "Content-Disposition: form-data; name=\"empty\"\r\n"
                            "\r\n"
                            "\r\n"
                            "--XyZ--\r\n"
                            "epilogue to ignore";

static void test_valid(void)
{
    struct multipart_part p[MULTIPART_MAX_PARTS];
    int n = parse(valid, sizeof(valid) - 1, p);
    const char img[] = "\x89PNG\r\n--XyX not a boundary\r\n";

    CHECK(n == 3, "parts %d (%s)", n, err);
    if (n != 3)
        return;
    CHECK(strcmp(p[0].name, "image") == 0 && p[0].has_filename && strcmp(p[0].content_type, "image/png") == 0,
          "part 0 headers: %s %d %s", p[0].name, p[0].has_filename, p[0].content_type);
    CHECK(p[0].len == sizeof(img) - 1 && memcmp(p[0].data, img, p[0].len) == 0, "part 0 data (%zu bytes)", p[0].len);
    CHECK(strcmp(p[1].name, "params") == 0 && !p[1].has_filename && p[1].len == 17, "part 1 (%zu)", p[1].len);
    CHECK(strcmp(p[2].name, "empty") == 0 && p[2].len == 0, "empty part (%zu)", p[2].len);
}

static void test_invalid(void)
{
    static const char *const bad[] = {
        "",
        "no boundary at all",
        "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\ndata with no end",
        "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\ndata\r\n--XyZ",
        "--XyZ\r\nContent-Disposition: form-data\r\n\r\nnameless\r\n--XyZ--",
        "--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--XyZ--",
        "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nno blank line\r\n--XyZ--",
        "--XyZgarbage\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--XyZ--",
        "--XyZ--",
    };
    struct multipart_part p[MULTIPART_MAX_PARTS];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = parse(bad[i], strlen(bad[i]), p);
        CHECK(n == EDGED_E_MULTIPART && err[0], "malformed body #%zu gave %d", i, n);
    }
}

static void test_too_many_parts(void)
{
    char body[8192] = "";
    struct multipart_part p[MULTIPART_MAX_PARTS];

    for (int i = 0; i <= MULTIPART_MAX_PARTS; i++)
        strcat(body, "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n");
    strcat(body, "--XyZ--\r\n");
    CHECK(parse(body, strlen(body), p) == EDGED_E_MULTIPART && strstr(err, "parts"), "too many parts: %s", err);
}

/* Every truncation of the valid body fails (the closing delimiter is gone) or, once the closing
 * delimiter is complete, gives exactly the full result; random flips never crash. */
static void test_truncations_and_flips(void)
{
    struct multipart_part p[MULTIPART_MAX_PARTS];
    size_t full = sizeof(valid) - 1, close_end = strstr(valid, "--XyZ--") - valid + 7;
    char buf[sizeof(valid)];
    int wrong = 0;

    for (size_t len = 0; len < full; len++) {
        int n = parse(valid, len, p);
        wrong += len < close_end ? n != EDGED_E_MULTIPART : n != 3;
    }
    CHECK(wrong == 0, "%d truncations gave a wrong answer", wrong);
    wrong = 0;
    for (int i = 0; i < 20000; i++) {
        memcpy(buf, valid, full);
        for (int k = check_rng() % 3; k >= 0; k--)
            buf[check_rng() % full] = (char)(check_rng() % 256);
        int n = parse(buf, full, p);
        wrong += !(n == EDGED_E_MULTIPART || (n >= 1 && n <= MULTIPART_MAX_PARTS));
    }
    CHECK(wrong == 0, "%d flipped bodies gave an impossible answer", wrong);
}

int main(void)
{
    check_rng_init();
    test_boundary();
    test_valid();
    test_invalid();
    test_too_many_parts();
    test_truncations_and_flips();
    return check_summary();
}
