/* model/mcall.h: one CUDA call of the model (struct m_call), apart from
 * model.h so that the compact store (callstore.h) that model.h reads calls
 * through can hold it too. */
#ifndef CUDASPY_ANALYZER_MCALL_H
#define CUDASPY_ANALYZER_MCALL_H

#include <stdint.h>

#include "cudaspy/api.h"

/* One CUDA call, as much of struct cs_rec_cuda as the analysis reads, in 40
 * bytes (10 M calls = 400 MB). A launch has no bytes, so the kernel name id
 * shares that field, and so does a graph launch's or instantiation's
 * executable graph (its aux): read it through model_name_id(),
 * model_bytes() and model_graph_exec(). */
struct m_call {
    uint64_t t_enter_ns, t_exit_ns;
    uint64_t stream;
    uint64_t bytes_or_name; /* bytes moved, or the kernel name id (CS_CF_HAS_NAME) */
    uint32_t thr;           /* index in model.thr */
    uint16_t api : 11;      /* enum cs_api */
    uint16_t variant : 2;   /* enum cs_variant */
    uint16_t dir : 3;       /* enum cs_dir */
    uint16_t flags;         /* CS_CF_* */
};
_Static_assert(sizeof(struct m_call) == 40, "m_call is 40 bytes");
_Static_assert(CS_API_COUNT <= 2048, "enum cs_api fits m_call.api");

#endif
