/* auth.c — API keys: parsing the list and the constant-time Bearer check. */
#include "ops/auth.h"

#include <string.h>
#include <strings.h>

#include "errors.h"

static int key_char_ok(unsigned char c) { return c > 0x20 && c < 0x7f && c != ',' && c != '"' && c != '\\'; }

int auth_keys_check(const char *list, int *n, char *err)
{
    int count = 0;
    size_t len = 0;

    if (n)
        *n = 0;
    if (!list || !*list)
        return 0;
    for (const char *p = list;; p++) {
        if (*p == ',' || *p == '\0') {
            if (len == 0 || len > AUTH_KEY_MAX)
                return edged_fail(err, EDGED_E_USAGE, "EDGED_API_KEYS: key %d is empty or longer than %d characters",
                                  count + 1, AUTH_KEY_MAX);
            if (++count > AUTH_MAX_KEYS)
                return edged_fail(err, EDGED_E_USAGE, "EDGED_API_KEYS: more than %d keys", AUTH_MAX_KEYS);
            len = 0;
            if (*p == '\0')
                break;
        } else if (!key_char_ok((unsigned char)*p)) {
            return edged_fail(err, EDGED_E_USAGE, "EDGED_API_KEYS: key %d has a character that is not visible ASCII "
                                                  "(or is a quote or backslash)", count + 1);
        } else {
            len++;
        }
    }
    if (n)
        *n = count;
    return 0;
}

void auth_keys_load(struct auth_keys *k, const char *list)
{
    size_t len = 0;

    k->n = 0;
    for (const char *p = list; p && *p && k->n < AUTH_MAX_KEYS; p++) {
        if (*p != ',' && len < AUTH_KEY_MAX)
            k->key[k->n][len++] = *p;
        if (*p == ',' || p[1] == '\0') {
            k->key[k->n][len] = '\0';
            k->len[k->n++] = len;
            len = 0;
        }
    }
}

/* Time depends on the length of what the client sent only: each of its bytes is compared with
 * the key's (cycled), for every key, and the verdicts are OR-ed without branching on them. */
static int key_matches(const struct auth_keys *k, const char *given, size_t n)
{
    unsigned match = 0;

    for (int i = 0; i < k->n; i++) {
        unsigned char d = (unsigned char)(n != k->len[i]);
        for (size_t j = 0; j < n; j++)
            d |= (unsigned char)(given[j] ^ k->key[i][j % k->len[i]]);
        match |= d == 0;
    }
    return match != 0;
}

int auth_bearer_ok(const struct auth_keys *k, const char *header)
{
    size_t n;

    if (!header || k->n == 0 || strncasecmp(header, "Bearer ", 7) != 0)
        return 0;
    for (header += 7; *header == ' '; header++)
        ;
    n = strlen(header);
    while (n > 0 && (header[n - 1] == ' ' || header[n - 1] == '\t'))
        n--;
    return n > 0 && n <= AUTH_KEY_MAX && key_matches(k, header, n);
}
