/* cs_api.c: the table behind cudaspy/api.h (names, layers, families) and
 * name lookups. Linked into the shim too, so nothing here allocates. */
#include <stdio.h>
#include <string.h>

#include "cudaspy/api.h"

const struct cs_api_info cs_api_table[CS_API_COUNT] = {
    [CS_API_NONE] = {"?", CS_LAYER_DRIVER, CS_FAM_OTHER, 0},
#define CS_API_ROW_(name, layer, fam, sync) [CS_API_##name] = {#name, layer, fam, sync},
    CS_API_LIST(CS_API_ROW_)
#undef CS_API_ROW_
};

/* Strip a trailing _ptsz/_ptds; returns the base length. */
static size_t strip_variant(const char *name, enum cs_variant *v)
{
    size_t n = strlen(name);

    *v = CS_VAR_LEGACY;
    if (n > 5 && strcmp(name + n - 5, "_ptsz") == 0) {
        *v = CS_VAR_PTSZ;
        return n - 5;
    }
    if (n > 5 && strcmp(name + n - 5, "_ptds") == 0) {
        *v = CS_VAR_PTDS;
        return n - 5;
    }
    return n;
}

enum cs_api cs_api_lookup(const char *name, enum cs_variant *variant)
{
    enum cs_variant v;
    size_t n;

    if (name == NULL)
        return CS_API_NONE;
    n = strip_variant(name, &v);
    for (int i = 1; i < CS_API_COUNT; i++) {
        const char *t = cs_api_table[i].name;
        if (strncmp(t, name, n) == 0 && t[n] == '\0') {
            if (variant)
                *variant = v;
            return (enum cs_api)i;
        }
    }
    return CS_API_NONE;
}

const char *cs_api_display(enum cs_api api, enum cs_variant v, char *buf, size_t n)
{
    const char *base = (unsigned)api < CS_API_COUNT ? cs_api_table[api].name : "?";
    const char *suf = v == CS_VAR_PTSZ ? "_ptsz" : v == CS_VAR_PTDS ? "_ptds" : "";

    snprintf(buf, n, "%s%s", base, suf);
    return buf;
}

const char *cs_family_name(enum cs_family f)
{
    static const char *const names[] = {"other",  "launch", "copy",    "memset", "sync",
                                        "alloc",  "free",   "capture", "module", "register",
                                        "init",   "graph"};
    return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "other";
}
