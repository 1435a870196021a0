/* test_pystack.c: analyzer/model/pystack.c's rule for which Python frame is
 * a call's site (issue 30): where a file comes from, read from its path
 * alone, and the short name the text forms give it. */
#include "check.h"
#include "model/pystack.h"

struct path_case {
    const char *path;
    enum pystack_origin origin;
    const char *short_name;
};

static const struct path_case cases[] = {
    /* the user's code, wherever it lies */
    {"/home/u/proj/train.py", PYSTACK_USER, "train.py"},
    {"train.py", PYSTACK_USER, "train.py"},
    {"/tmp/ipykernel_4711/2390482.py", PYSTACK_USER, "2390482.py"},
    {"/home/u/lib/python/tools.py", PYSTACK_USER, "tools.py"},
    {"/home/u/python3.12/x.py", PYSTACK_USER, "x.py"},       /* not under lib/ */
    {"/home/u/lib/pythonic/x.py", PYSTACK_USER, "x.py"},     /* not a version */
    {"/srv/site-packages-mirror/x.py", PYSTACK_USER, "x.py"},
    /* installed packages */
    {"/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", PYSTACK_LIBRARY,
     "torch/cuda/__init__.py"},
    {"/usr/lib/python3/dist-packages/numpy/core/numeric.py", PYSTACK_LIBRARY,
     "numpy/core/numeric.py"},
    {"/home/u/.local/lib/python3.11/site-packages/tqdm/std.py", PYSTACK_LIBRARY, "tqdm/std.py"},
    {"site-packages/x/y.py", PYSTACK_LIBRARY, "x/y.py"},
    /* the interpreter's stdlib: system, venv (outside site-packages),
     * pyenv, conda, free-threaded, zipped, lib64 */
    {"/usr/lib/python3.12/threading.py", PYSTACK_LIBRARY, "threading.py"},
    {"/opt/venv/lib/python3.12/copy.py", PYSTACK_LIBRARY, "copy.py"},
    {"/root/.pyenv/versions/3.11.7/lib/python3.11/asyncio/events.py", PYSTACK_LIBRARY,
     "asyncio/events.py"},
    {"/opt/conda/lib/python3.10/json/encoder.py", PYSTACK_LIBRARY, "json/encoder.py"},
    {"/opt/py313t/lib/python3.13t/queue.py", PYSTACK_LIBRARY, "queue.py"},
    {"/usr/lib/python312.zip/logging/__init__.py", PYSTACK_LIBRARY, "logging/__init__.py"},
    {"/usr/lib64/python3.9/os.py", PYSTACK_LIBRARY, "os.py"},
    {"lib/python3.12/os.py", PYSTACK_LIBRARY, "os.py"},
    {"<frozen runpy>", PYSTACK_LIBRARY, "<frozen runpy>"},
    {"<frozen importlib._bootstrap>", PYSTACK_LIBRARY, "<frozen importlib._bootstrap>"},
    /* pseudo files: exec()'d code, the prompt, an unknown name */
    {"<string>", PYSTACK_PSEUDO, "<string>"},
    {"<stdin>", PYSTACK_PSEUDO, "<stdin>"},
    {"<eval_with_key>.3", PYSTACK_PSEUDO, "<eval_with_key>.3"},
    {"", PYSTACK_PSEUDO, ""},
};

static int test_origin_and_short_name(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct path_case *c = &cases[i];
        if (pystack_file_origin(c->path) != c->origin)
            fprintf(stderr, "path %s:\n", c->path);
        CHECK_EQ(pystack_file_origin(c->path), c->origin);
        CHECK_STR(pystack_short_name(c->path), c->short_name);
    }
    return 0;
}

int main(void)
{
    RUN(test_origin_and_short_name);
    return check_status();
}
