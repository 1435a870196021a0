/* views/jtext.c: getters of the docs/json.md object and frames as text
 * (jtext.h). */
#include <stdio.h>
#include <string.h>

#include "jtext.h"
#include "model/pystack.h"

json_int_t jtext_int(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

double jtext_num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

const char *jtext_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

const char *jtext_frame(char *buf, size_t n, const json_t *f)
{
    const char *file = json_string_value(json_object_get(f, "file"));
    const char *mod = json_string_value(json_object_get(f, "module"));
    const char *b = file ? file : mod ? mod : "?";

    if (file)
        b = pystack_short_name(file);
    else if (strrchr(b, '/') && strrchr(b, '/')[1])
        b = strrchr(b, '/') + 1;
    if (file && !strcmp(file, "?") && jtext_int(f, "line") == 0)
        snprintf(buf, n, "?"); /* a stack id with no stack */
    else if (file && jtext_int(f, "line"))
        snprintf(buf, n, "%s:%" JSON_INTEGER_FORMAT " in %s", b, jtext_int(f, "line"),
                 jtext_str(f, "function"));
    else if (file)
        snprintf(buf, n, "%s:? in %s", b, jtext_str(f, "function"));
    else if (mod && strcmp(mod, "?"))
        snprintf(buf, n, "%s+0x%llx", b, (unsigned long long)jtext_int(f, "offset"));
    else
        snprintf(buf, n, "0x%llx", (unsigned long long)jtext_int(f, "offset"));
    return buf;
}
