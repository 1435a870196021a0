/* version.h: tool and run-file format versions, shared by all programs. */
#ifndef CUDASPY_VERSION_H
#define CUDASPY_VERSION_H

#define CS_VERSION "0.1.0"
/* Run-file format: readers refuse files whose "format_version" is newer.
 * 2: CUDA blocks are compact (cudablk.h); readers still read version 1. */
#define CS_FORMAT_VERSION 2
#define CS_FORMAT_MAGIC "cudaspy-run"

#endif
