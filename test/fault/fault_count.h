/* fault_count.h: what fault_client's loop mode publishes in its COUNTFILE
 * (a shared mapping), read by fault_check after the client was killed. */
#ifndef CUDASPY_FAULT_COUNT_H
#define CUDASPY_FAULT_COUNT_H

#include <stdint.h>

struct fault_count {
    uint32_t pid;       /* the client's pid, set before the loop starts */
    uint32_t is_ready;  /* 1 once the loop runs */
    uint64_t calls;     /* loop calls (launch, synchronize) that returned */
    uint64_t t_last_ns; /* CLOCK_MONOTONIC when the last of them returned */
};

#endif
