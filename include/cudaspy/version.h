/* version.h: tool and run-file format versions, shared by all programs. */
#ifndef CUDASPY_VERSION_H
#define CUDASPY_VERSION_H

#define CS_VERSION "0.1.0"
/* Run-file format: readers refuse files whose "format_version" is newer.
 * 2: CUDA blocks are compact (cudablk.h); readers still read version 1.
 * 3: host_blk may hold Python samples (CS_REC_PYSAMPLE), a kind version-2
 *    readers refuse as unknown. A file says 3 only once it holds one (the
 *    store raises it), else CS_FORMAT_VERSION_PLAIN: a run without samples
 *    stays readable by version-2 readers.
 * 4: GPU records (CS_REC_GPU) are 80 bytes, with the graph and node that
 *    ran them; readers widen the 64-byte records of earlier files. A file
 *    says 4 once it holds a GPU record (the store raises it), so that a
 *    version-3 reader refuses it with the version message. */
#define CS_FORMAT_VERSION 4
#define CS_FORMAT_VERSION_PLAIN 2
#define CS_FORMAT_MAGIC "cudaspy-run"

#endif
