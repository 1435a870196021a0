/* fake_python.c: a program that looks like a CPython interpreter to the
 * shim (it exports PyGILState_GetThisThreadState, PyCode_Type, Py_Version
 * and _PyRuntime) but is one we cannot read, for cli.python_unknown_*: the
 * shim must say so in one notice line, record every call without a Python
 * stack, and change nothing the program sees. Not NVIDIA's or Python's API
 * emulated: only the names the shim looks for.
 *
 * Built with FAKE_PY_VERSION (Py_Version, e.g. 0x03630000 for "3.99") and
 * FAKE_PY_COOKIE (the start of _PyRuntime, where 3.13's debug offsets
 * begin with "xdebugpy"): the shim reads them before main() runs. With
 * FAKE_PY_FRAME, a version the shim knows whose thread state points where
 * nothing is mapped: the shim's first walk must find that out without
 * faulting.
 *
 * Usage: fake_python_<case> N: N cudaStreamSynchronize calls. Prints
 * "fake_python: N syncs". */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake_client.h"

#define EXPORT __attribute__((visibility("default"), used))

EXPORT const unsigned long Py_Version = FAKE_PY_VERSION;
EXPORT char _PyRuntime[4096] = FAKE_PY_COOKIE;
EXPORT unsigned char PyCode_Type[256], PyUnicode_Type[256], PyBytes_Type[256];
#ifndef FAKE_PY_FRAME
#define FAKE_PY_FRAME 0
#endif
/* A thread state whose frame pointer (3.11's cframe, at byte 56) is
 * FAKE_PY_FRAME: none, or an address where nothing is mapped. */
static uintptr_t tstate[64] = {[7] = FAKE_PY_FRAME};

EXPORT void *PyGILState_GetThisThreadState(void) { return tstate; }
EXPORT int Py_IsInitialized(void) { return 1; }

int main(int argc, char **argv)
{
    cudaStream_t s;
    int n;

    if (argc != 2) {
        fprintf(stderr, "usage: fake_python N\n");
        return 2;
    }
    n = atoi(argv[1]);
    CLIENT_CHECK("fake_python", cudaStreamCreate(&s));
    for (int i = 0; i < n; i++)
        CLIENT_CHECK("fake_python", cudaStreamSynchronize(s));
    printf("fake_python: %d syncs\n", n);
    return 0;
}
