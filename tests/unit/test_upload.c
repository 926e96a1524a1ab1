/* test_upload.c — the request body buffer (bounded growth, refusal past the cap, random piece
 * sizes give the same bytes, one buffer for an announced length) and upload_parse (raw PNG, multipart, precedence of JSON over form
 * fields over the query, the image part's two names, and its errors). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "http/upload.h"

static char err[EDGED_ERR_LEN];

static void test_body_growth(void)
{
    struct upload_body b;
    size_t n = 3u << 20, at = 0;
    uint8_t *src = malloc(n);
    int rc = 0;

    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)check_rng();
    upload_body_init(&b, n);
    while (at < n && rc == 0) {
        size_t k = 1 + (size_t)check_rng() % 70000;
        k = k > n - at ? n - at : k;
        rc = upload_body_append(&b, src + at, k, err);
        at += k;
    }
    CHECK(rc == 0 && b.len == n && memcmp(b.p, src, n) == 0, "random pieces: rc %d len %zu", rc, b.len);
    CHECK(b.cap <= n, "buffer %zu bytes for a %zu-byte cap", b.cap, n);
    CHECK(upload_body_append(&b, src, 1, err) == EDGED_E_BODY_TOO_LARGE && b.len == n, "one byte past the cap");
    CHECK(upload_body_append(&b, src, 0, err) == 0, "empty piece at the cap");
    upload_body_free(&b);
    CHECK(b.p == NULL && b.len == 0, "freed");

    upload_body_init(&b, 1000);
    CHECK(upload_body_reserve(&b, 1001, err) == EDGED_E_BODY_TOO_LARGE, "reserve past the cap");
    CHECK(upload_body_reserve(&b, 1000, err) == 0 && b.cap == 1000, "reserve the cap: %zu", b.cap);
    CHECK(upload_body_append(&b, src, 600, err) == 0 && upload_body_append(&b, src, 401, err) ==
          EDGED_E_BODY_TOO_LARGE && b.len == 600, "a piece that would pass the cap is refused whole");
    upload_body_free(&b);
    upload_body_free(&b); /* twice is fine */
    free(src);
}

/* An announced length (Content-Length) is one buffer from the first piece on, never regrown; a
 * body of unknown length under the same cap still starts at 256 KiB and doubles. */
static void test_body_announced(void)
{
    struct upload_body b;
    size_t n = 3u << 20, first = 1000;
    uint8_t *src = calloc(1, n + 1), *p;

    upload_body_init(&b, 16u << 20);
    upload_body_announce(&b, n);
    CHECK(b.exact && b.max == n && b.cap == 0 && !b.p, "announce allocates nothing");
    CHECK(upload_body_next_cap(&b, first) == n, "next cap of the first piece: %zu", upload_body_next_cap(&b, first));
    CHECK(upload_body_append(&b, src, first, err) == 0 && b.cap == n, "capacity after the first piece: %zu", b.cap);
    p = b.p;
    CHECK(upload_body_append(&b, src, n - first, err) == 0 && b.p == p && b.cap == n && b.len == n,
          "the rest fills the same buffer: cap %zu", b.cap);
    CHECK(upload_body_append(&b, src, 1, err) == EDGED_E_BODY_TOO_LARGE && b.len == n, "one byte past the length");
    upload_body_free(&b);

    upload_body_init(&b, 16u << 20);
    upload_body_announce(&b, n);
    CHECK(upload_body_append(&b, src, n + 1, err) == EDGED_E_BODY_TOO_LARGE && b.len == 0 && !b.p,
          "a first piece over the announced length is refused, nothing allocated");
    upload_body_free(&b);

    upload_body_init(&b, n);
    CHECK(!b.exact && upload_body_next_cap(&b, first) == 256u * 1024, "unannounced: first cap %zu",
          upload_body_next_cap(&b, first));
    CHECK(upload_body_append(&b, src, first, err) == 0 && b.cap == 256u * 1024, "unannounced cap %zu", b.cap);
    CHECK(upload_body_append(&b, src, 256u * 1024, err) == 0 && b.cap == 512u * 1024, "then doubles: %zu", b.cap);
    CHECK(upload_body_append(&b, src, n - b.len, err) == 0 && b.cap == n, "never past max: %zu", b.cap);
    upload_body_free(&b);

    upload_body_init(&b, 0);
    upload_body_announce(&b, 0);
    CHECK(upload_body_append(&b, src, 0, err) == 0 && !b.p && upload_body_append(&b, src, 1, err) ==
          EDGED_E_BODY_TOO_LARGE, "announced empty body");
    upload_body_free(&b);
    free(src);
}

static const char png_sig[] = "\x89PNG\r\n\x1a\n";

static int parse(const char *ctype, const char *body, struct upload *u)
{
    params_init(&u->p, PARAMS_FILTER);
    return upload_parse(ctype, (const uint8_t *)body, strlen(body), u, err);
}

static void test_parse(void)
{
    struct upload u;
    const char *mp = "--B\r\nContent-Disposition: form-data; name=\"filter\"\r\n\r\nsobel\r\n"
                     "--B\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.jpg\"\r\n"
                     "Content-Type: image/jpeg\r\n\r\n\x89PNG\r\n\x1a\nxyz\r\n"
                     "--B\r\nContent-Disposition: form-data; name=\"params\"\r\n\r\n{\"filter\":\"gaussian\"}\r\n"
                     "--B--\r\n";
    int rc;

    rc = parse("image/png", png_sig, &u);
    CHECK(rc == 0 && u.image_len == 8 && memcmp(u.image, png_sig, 8) == 0, "raw body: %d %s", rc, err);
    rc = parse("multipart/form-data; boundary=B", mp, &u);
    CHECK(rc == 0 && u.image_len == 11 && memcmp(u.image, png_sig, 8) == 0, "multipart: %d %s", rc, err);
    CHECK(rc == 0 && u.p.spec.filter == FILTER_GAUSSIAN, "JSON params win over the form field");
    params_init(&u.p, PARAMS_FILTER);
    CHECK(params_set_text(&u.p, "filter", "box", err) == 0, "query");
    rc = upload_parse("multipart/form-data; boundary=B",
                      (const uint8_t *)"--B\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\nx\r\n--B--\r\n",
                      strlen("--B\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\nx\r\n--B--\r\n"), &u, err);
    CHECK(rc == 0 && u.p.spec.filter == FILTER_BOX, "the query stays when the body does not set it: %d", rc);
    CHECK(parse("multipart/form-data; boundary=\"B", mp, &u) == EDGED_E_MULTIPART, "unterminated quoted boundary");
    CHECK(parse("multipart/form-data", mp, &u) == EDGED_E_MULTIPART, "no boundary");
    CHECK(parse(NULL, mp, &u) == EDGED_E_MULTIPART, "no Content-Type");
    CHECK(parse("multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"size\"\r\n\r\n4\r\n"
                "--B\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\nx\r\n--B--\r\n", &u) == EDGED_E_PARAM &&
          strstr(err, "size"), "validation runs: %s", err);
    CHECK(parse("multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\nx\r\n",
                &u) == EDGED_E_MULTIPART && strstr(err, "truncated"), "truncated: %s", err);
}

#define PART(name, data) "--B\r\nContent-Disposition: form-data; name=\"" name "\"\r\n\r\n" data "\r\n"
#define MP "multipart/form-data; boundary=B"

/* `file` (imaginary's field name, curl -F file=@x.png) is the image like `image`; two image parts
 * of either name are refused; without one the message names both. */
static void test_image_part_names(void)
{
    struct upload u;
    int rc;

    rc = parse(MP, PART("file", "\x89PNG\r\n\x1a\nxyz") PART("filter", "sobel") "--B--\r\n", &u);
    CHECK(rc == 0 && u.image_len == 11 && memcmp(u.image, png_sig, 8) == 0 && u.p.spec.filter == FILTER_SOBEL,
          "'file' part is the image: %d %s", rc, err);
    rc = parse(MP, PART("image", "a") PART("file", "b") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_MULTIPART && strstr(err, "more than one image part"), "image + file: %d %s", rc, err);
    rc = parse(MP, PART("file", "a") PART("image", "b") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_MULTIPART && strstr(err, "more than one image part"), "file + image: %d %s", rc, err);
    rc = parse(MP, PART("file", "a") PART("file", "b") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_MULTIPART && strstr(err, "more than one image part"), "file + file: %d %s", rc, err);
    rc = parse(MP, PART("params", "{}") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_MULTIPART && strstr(err, "no image part") && strstr(err, "'image' or 'file'"),
          "no image part: %d %s", rc, err);
    static const char wrong_name[] = "--B\r\nContent-Disposition: form-data; name=\"img\"; filename=\"x.png\"\r\n"
                                     "\r\n\x89PNG\r\n\x1a\n\0\0\r\n--B--\r\n"; /* curl -F img=@x.png */

    rc = parse(MP, PART("picture", "a") PART("image", "b") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_PARAM && strstr(err, "picture"), "other names stay parameters: %d %s", rc, err);
    params_init(&u.p, PARAMS_FILTER);
    rc = upload_parse(MP, (const uint8_t *)wrong_name, sizeof(wrong_name) - 1, &u, err);
    CHECK(rc == EDGED_E_PARAM && strstr(err, "'img'") && strstr(err, "'image' or 'file'") && strstr(err, "'params'"),
          "a binary file under another name names the expected parts: %d %s", rc, err);
    rc = parse(MP, "--B\r\nContent-Disposition: form-data; name=\"filter\"; filename=\"f.txt\"\r\n\r\nsobel\r\n"
               PART("image", "b") "--B--\r\n", &u);
    CHECK(rc == 0 && u.p.spec.filter == FILTER_SOBEL, "a text file may still carry a parameter: %d %s", rc, err);
}

/* Form fields: a repeated field is refused naming it, a form field may override the query, and
 * numbers, NUL and UTF-8 are held to the same rules as the query string. */
static void test_strict_form(void)
{
    struct upload u;
    int rc;

    rc = parse(MP, PART("threshold", "3") PART("threshold", "4") PART("image", "x") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_PARAM && strstr(err, "threshold") && strstr(err, "twice"), "form repeat: %d %s", rc, err);
    params_init(&u.p, PARAMS_FILTER);
    CHECK(params_set_text(&u.p, "threshold", "3", err) == 0, "query");
    rc = upload_parse(MP, (const uint8_t *)(PART("threshold", "4") PART("image", "x") "--B--\r\n"),
                      strlen(PART("threshold", "4") PART("image", "x") "--B--\r\n"), &u, err);
    CHECK(rc == 0 && u.p.spec.threshold == 4.0f, "form overrides the query: %d %s", rc, err);
    rc = parse(MP, PART("threshold", "05") PART("image", "x") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_PARAM && strstr(err, "threshold"), "form 05: %d %s", rc, err);
    rc = parse(MP, PART("params", "{\"threshold\":5.}") PART("image", "x") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_PARAM && strstr(err, "threshold"), "params 5.: %d %s", rc, err);
    rc = parse(MP, PART("params", "{\"filter\":\"edge\\u0000x\"}") PART("image", "x") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_PARAM && strstr(err, "filter"), "params NUL: %d %s", rc, err);
    rc = parse(MP, PART("border", "zero\xff") PART("image", "x") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_PARAM && strstr(err, "border") && !strchr(err, '\xff'), "form UTF-8: %d %s", rc, err);
    rc = parse(MP, PART("b\xc3\xa9", "1") PART("image", "x") "--B--\r\n", &u);
    CHECK(rc == EDGED_E_PARAM && !strchr(err, '\xc3'), "unknown form key quoted printable: %d %s", rc, err);
}

int main(void)
{
    check_rng_init();
    test_body_growth();
    test_body_announced();
    test_parse();
    test_image_part_names();
    test_strict_form();
    return check_summary();
}
