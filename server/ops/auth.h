/* auth.h — optional API keys (EDGED_API_KEYS): the list, and the check of an Authorization:
 * Bearer header in time that depends only on what the client sent. */
#ifndef EDGED_AUTH_H
#define EDGED_AUTH_H

#include <stddef.h>

#define AUTH_MAX_KEYS 32 /* keys at most */
#define AUTH_KEY_MAX 256 /* longest key */

struct auth_keys {
    char key[AUTH_MAX_KEYS][AUTH_KEY_MAX + 1];
    size_t len[AUTH_MAX_KEYS];
    int n; /* 0: authentication off */
};

/* Checks a comma-separated list: 1..AUTH_MAX_KEYS keys of 1..AUTH_KEY_MAX visible ASCII
 * characters (no spaces, commas, quotes or backslashes); NULL or "" is an empty list. Returns 0
 * (the count in *n, which may be NULL) or EDGED_E_USAGE with a message that never quotes a key. */
int auth_keys_check(const char *list, int *n, char *err);

/* Loads a list that passed auth_keys_check (NULL or "": no keys). */
void auth_keys_load(struct auth_keys *k, const char *list);

/* 1 when header (an Authorization value, may be NULL) is "Bearer KEY" (scheme in any case) with
 * one of the keys. Every key is compared with every byte sent, without an early exit. */
int auth_bearer_ok(const struct auth_keys *k, const char *header);

#endif
