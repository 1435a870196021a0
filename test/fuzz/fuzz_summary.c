/* fuzz_summary.c: libFuzzer target for the saved gate summary reader
 * (analyzer/gate/summary.c: summary_load() of a file starting with '{'). The
 * input is the file; a summary that loads is saved again, reloaded, and
 * gated against itself and the reload (gate.c's gate_eval with the bootstrap
 * on, few resamples), so every field the reader accepts reaches the code
 * that uses it. */
#include "fuzz_common.h"
#include "gate/gate.h"
#include "gate/summary.h"

static void gate_pair(const struct summary *a, const struct summary *b)
{
    struct gate_opts o;
    struct gate_row *rows = NULL;
    size_t n = 0;

    gate_opts_init(&o);
    o.resamples = 20;
    o.min_calls = 1;
    o.by_kernel = 1;
    if (gate_eval(a, b, &o, &rows, &n) == 0)
        for (size_t i = 0; i < n; i++)
            (void)gate_verdict_name(rows[i].verdict);
    free(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    const char *path = fuzz_scratch("summary");
    struct summary *s = NULL, *back = NULL;
    struct cs_err err = {""};

    if (n == 0 || d[0] != '{') /* anything else is a run file: fuzz_runfile's */
        return 0;
    if (fuzz_write_file(path, d, n) < 0)
        return 0;
    if (summary_load(path, SUMMARY_SAMPLES_DEFAULT, &s, &err) == 0) {
        json_t *j = summary_to_json(s);
        if (j && summary_from_json(j, "again", &back, &err) == 0)
            gate_pair(s, back);
        gate_pair(s, s);
        json_decref(j);
    }
    summary_free(back);
    summary_free(s);
    unlink(path);
    return 0;
}
