/* test_auth.c — API keys: list validation (never quoting a key), loading, and the Bearer check
 * (exact match only: no prefix, suffix, case change or other scheme passes). */
#include <string.h>

#include "ops/auth.h"
#include "check.h"
#include "errors.h"

static char err[EDGED_ERR_LEN];

static void test_check(void)
{
    char big[AUTH_KEY_MAX + 2], many[AUTH_MAX_KEYS * 3 + 8] = "";
    int n = -1;

    CHECK(auth_keys_check(NULL, &n, err) == 0 && n == 0, "NULL list");
    CHECK(auth_keys_check("", &n, err) == 0 && n == 0, "empty list");
    CHECK(auth_keys_check("a,b-2,C.3_x", &n, err) == 0 && n == 3, "three keys: %d", n);
    CHECK(auth_keys_check("a b", &n, err) == EDGED_E_USAGE && !strstr(err, "a b"), "space: %s", err);
    CHECK(auth_keys_check("a,,b", &n, err) == EDGED_E_USAGE, "empty key");
    CHECK(auth_keys_check(",a", &n, err) == EDGED_E_USAGE, "leading comma");
    CHECK(auth_keys_check("a,", &n, err) == EDGED_E_USAGE, "trailing comma");
    CHECK(auth_keys_check("q\"uote", &n, err) == EDGED_E_USAGE, "quote");
    CHECK(auth_keys_check("\xc3\xa9t\xc3\xa9", &n, err) == EDGED_E_USAGE, "non-ASCII");
    memset(big, 'k', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(auth_keys_check(big, &n, err) == EDGED_E_USAGE && !strstr(err, "kkkk"), "257 characters: %s", err);
    big[AUTH_KEY_MAX] = '\0';
    CHECK(auth_keys_check(big, &n, err) == 0 && n == 1, "256 characters");
    for (int i = 0; i <= AUTH_MAX_KEYS; i++)
        strcat(many, i ? ",k" : "k");
    CHECK(auth_keys_check(many, &n, err) == EDGED_E_USAGE, "%d keys", AUTH_MAX_KEYS + 1);
}

static void test_bearer(void)
{
    struct auth_keys k;

    auth_keys_load(&k, "k1-abcdef,second.Key_2,z");
    CHECK(k.n == 3 && strcmp(k.key[1], "second.Key_2") == 0 && k.len[2] == 1, "loaded %d", k.n);
    CHECK(auth_bearer_ok(&k, "Bearer k1-abcdef"), "first key");
    CHECK(auth_bearer_ok(&k, "bearer second.Key_2"), "scheme in any case");
    CHECK(auth_bearer_ok(&k, "BEARER   z  "), "spaces around the key");
    CHECK(!auth_bearer_ok(&k, NULL), "no header");
    CHECK(!auth_bearer_ok(&k, "Bearer "), "empty key");
    CHECK(!auth_bearer_ok(&k, "Bearer k1-abcde"), "prefix");
    CHECK(!auth_bearer_ok(&k, "Bearer k1-abcdefg"), "longer");
    CHECK(!auth_bearer_ok(&k, "Bearer K1-ABCDEF"), "case of the key");
    CHECK(!auth_bearer_ok(&k, "Bearer zz"), "a key repeated");
    CHECK(!auth_bearer_ok(&k, "Basic k1-abcdef"), "other scheme");
    CHECK(!auth_bearer_ok(&k, "k1-abcdef"), "no scheme");
    CHECK(!auth_bearer_ok(&k, "Bearer k1-abcdef,second.Key_2"), "the whole list");
    auth_keys_load(&k, "");
    CHECK(k.n == 0 && !auth_bearer_ok(&k, "Bearer z"), "no keys: nothing passes (auth is off upstream)");
}

int main(void)
{
    test_check();
    test_bearer();
    return check_summary();
}
