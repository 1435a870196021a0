/* ring.h: the hand-off from a traced process to the collector.
 *
 * Each traced process, on its first CUDA event, connects to the collector's
 * SOCK_SEQPACKET Unix socket (address in $CUDASPY_SOCK), sends a
 * cs_msg_hello, then one cs_msg_seg per shared-memory segment it creates,
 * with the segment's memfd attached (SCM_RIGHTS). A segment holds nsub
 * single-producer sub-rings; a thread claims one (CAS on owner_tid) and is
 * then its only producer, the collector its only consumer. EOF on the socket
 * tells the collector the process is gone: it drains what is left, so events
 * survive _exit() and SIGKILL. After fork() the child never writes into its
 * parent's segments (they are shared, not copied): it closes the inherited
 * socket and registers its own on its first event.
 *
 * Sub-ring protocol (Usage):
 *   producer: e = cs_ring_reserve(p, len); fill e; cs_ring_commit(p);
 *             (NULL from reserve = full: count a drop in hdr->dropped, go on)
 *   consumer: cs_ring_consume(hdr, data, size, fn, arg) visits committed
 *             entries in order and publishes the new tail.
 * Entries are 8-byte aligned, never wrap: a CS_ENT_PAD entry fills the end. */
#ifndef CUDASPY_RING_H
#define CUDASPY_RING_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "pyframe.h"
#include "record.h"

#define CS_RING_MAGIC   0x31474e4952505343ull /* "CSPRING1" little-endian */
#define CS_RING_VERSION 1
#define CS_ENV_SOCK     "CUDASPY_SOCK" /* collector socket path ("@name" = abstract) */

/* Clocks a producer may stamp records with. */
enum cs_clock {
    CS_CLOCK_MONO = 1, /* CLOCK_MONOTONIC ns, stored as is */
    CS_CLOCK_TSC = 2   /* raw rdtsc; collector converts with its own calibration */
};

/* ---- ring entries ---- */

enum cs_ent_type {
    CS_ENT_PAD = 0,    /* skip to the end of the data area */
    CS_ENT_CUDA = 1,   /* struct cs_rec_cuda (name_id process-local) */
    CS_ENT_NAME = 2,   /* struct cs_ent_name + bytes: a process-local string id */
    CS_ENT_STACK = 3,  /* struct cs_ent_stack + frames */
    CS_ENT_THREAD = 4, /* struct cs_ent_thread: a thread's name */
    CS_ENT_DROPS = 5,  /* struct cs_ent_drops: producer-side drop summary */
    CS_ENT_GPU = 6,    /* struct cs_rec_gpu (times CLOCK_MONOTONIC, name_id process-local) */
    CS_ENT_GPUCOV = 7, /* struct cs_rec_gpucov (times CLOCK_MONOTONIC, reason_id local) */
    CS_ENT_NVTX = 8,   /* struct cs_rec_nvtx (times in the segment's clock, ids local) */
    CS_ENT_CAPTURE = 9 /* struct cs_ent_capture: the program opened or closed a capture range */
};

struct cs_ring_ent {
    uint32_t len;  /* bytes of this entry, header included, multiple of 8 */
    uint16_t type; /* enum cs_ent_type */
    uint16_t aux;
};
_Static_assert(sizeof(struct cs_ring_ent) == 8, "ring entry header is 8 bytes");

/* Name kinds for CS_ENT_NAME. */
enum cs_name_kind {
    CS_NAME_KERNEL = 1,
    CS_NAME_MODULE = 2,
    CS_NAME_NVTX = 3,  /* an NVTX message, registered string or domain name */
    CS_NAME_PYTHON = 4 /* a Python source file or function (qualified name) */
};

struct cs_ent_name {
    uint32_t local_id; /* process-local id (records refer to it); from 1 */
    uint32_t len;      /* bytes of name, no NUL */
    uint64_t handle;   /* CUfunction/CUkernel or module base it came from */
    uint32_t kind;     /* enum cs_name_kind */
    uint32_t pad;
    /* char name[len] follows, then padding to 8 */
};

struct cs_ent_stack {
    uint32_t local_id; /* process-local stack id referenced by cs_rec_cuda.stack_id */
    uint32_t nframes;
    /* struct cs_frame frames[nframes] follow; module_id is a process-local
       CS_NAME_MODULE id, or for a CS_FRAME_PYTHON frame a CS_NAME_PYTHON id,
       as is the function id in its offset */
};

struct cs_ent_thread {
    uint32_t tid;
    uint32_t pad;
    char name[16];
};

struct cs_ent_drops {
    uint64_t dropped; /* total records this process dropped so far */
};

/* A capture range the program itself bounds (record --capture
 * cudaProfilerApi, nvtx:NAME, steps:A-B; docs/capture.md): the shim has
 * already set its own process's sub-rings to match; the collector follows
 * with every other process and the host sampler. */
struct cs_ent_capture {
    uint64_t t_ns;  /* when (the segment's clock) */
    uint32_t on;    /* 1 = a range opens, 0 = it closes */
    uint32_t pad;
};

/* ---- shared-memory segment ---- */

/* One sub-ring's control block. head and tail live on their own cache lines. */
struct cs_subring {
    _Atomic uint32_t owner_tid; /* 0 = free; claimed by CAS, released at thread exit */
    uint32_t pad0;
    _Atomic uint64_t dropped;   /* entries lost to a full ring (producer adds) */
    /* Written by the producer: the owner's PyThreadState in its process
     * (0 = none known), for the collector's Python samples (docs/python.md,
     * the segment header's py); cleared before the ring is released. */
    _Atomic uint64_t py_tstate;
    uint8_t pad1[40];
    _Atomic uint64_t head;      /* bytes ever committed (producer, release) */
    /* Written by the collector only: 1 = record nothing now (the off phases
     * of `cudaspy record --duty`), 0 = record. On head's line, which the
     * producer touches at every commit anyway. */
    _Atomic uint32_t paused;
    /* Written by the producer: 1 while its thread is inside an outermost
     * recorded CUDA call, else 0. The collector samples a thread's Python
     * stack only while it is 0 (host code). On head's line too. */
    _Atomic uint32_t in_call;
    uint8_t pad2[48];
    _Atomic uint64_t tail;      /* bytes ever consumed (collector, release) */
    uint8_t pad3[56];
};
_Static_assert(sizeof(struct cs_subring) == 192, "sub-ring control is 3 lines");

/* Segment header at offset 0 of the memfd. Layout: this header (4 KiB), then
 * nsub struct cs_subring (padded to 4 KiB), then nsub data areas of
 * sub_bytes each. Use cs_seg_sub() / cs_seg_data(). */
struct cs_seg_hdr {
    uint64_t magic;     /* CS_RING_MAGIC */
    uint32_t version;   /* CS_RING_VERSION */
    uint32_t nsub;
    uint32_t sub_bytes; /* power of two, >= 4096 */
    uint32_t seg_index; /* 0, 1, ... within the process */
    uint32_t pid;
    uint32_t clock;     /* enum cs_clock for every record in this segment */
    /* 1 once the process's shim bounds capture ranges itself (record
     * --capture cudaProfilerApi, nvtx:, steps:): from then on it alone sets
     * its sub-rings' paused words. The shim stores it before
     * those words, in every segment it has and makes; the collector reads
     * it before touching them, so a segment it maps late, or a mark it
     * reads late, cannot pause a range the shim opened. */
    _Atomic uint32_t self_capture;
    /* The process's CPython layout, for the collector's Python samples of
     * its threads (sub-ring py_tstate); zero (magic 0) when it has none to
     * offer. Written before the segment is sent, never changed after. */
    struct cs_py_layout py;
};
_Static_assert(sizeof(struct cs_seg_hdr) <= 4096, "the segment header fits its 4 KiB");

#define CS_SEG_HDR_BYTES 4096u

static inline uint64_t cs_seg_ctl_bytes(uint32_t nsub)
{
    uint64_t b = (uint64_t)nsub * sizeof(struct cs_subring);
    return (b + 4095) & ~4095ull;
}

/** Total bytes of a segment with @p nsub sub-rings of @p sub_bytes. */
static inline uint64_t cs_seg_bytes(uint32_t nsub, uint32_t sub_bytes)
{
    return CS_SEG_HDR_BYTES + cs_seg_ctl_bytes(nsub) + (uint64_t)nsub * sub_bytes;
}

static inline struct cs_subring *cs_seg_sub(void *seg, uint32_t i)
{
    return (struct cs_subring *)((char *)seg + CS_SEG_HDR_BYTES) + i;
}

static inline uint8_t *cs_seg_data(void *seg, uint32_t i)
{
    struct cs_seg_hdr *h = (struct cs_seg_hdr *)seg;
    return (uint8_t *)seg + CS_SEG_HDR_BYTES + cs_seg_ctl_bytes(h->nsub) +
           (uint64_t)i * h->sub_bytes;
}

/* ---- producer (one thread per sub-ring) ---- */

struct cs_ring_prod {
    struct cs_subring *ctl;
    uint8_t *data;
    uint64_t size;       /* sub_bytes */
    uint64_t head;       /* local copy of ctl->head */
    uint64_t tail_cache; /* last tail seen; refreshed only when the ring looks full */
    uint64_t pending;    /* head after the reserved entry */
};

/** Attach producer state @p p to sub-ring @p i of @p seg (already claimed). */
static inline void cs_ring_prod_init(struct cs_ring_prod *p, void *seg, uint32_t i)
{
    p->ctl = cs_seg_sub(seg, i);
    p->data = cs_seg_data(seg, i);
    p->size = ((struct cs_seg_hdr *)seg)->sub_bytes;
    p->head = atomic_load_explicit(&p->ctl->head, memory_order_acquire);
    p->tail_cache = atomic_load_explicit(&p->ctl->tail, memory_order_acquire);
    p->pending = p->head;
}

/** Reserve an entry of @p len bytes (multiple of 8, header included, at most
 * size/2). @return where to write the entry (header included), or NULL when
 * the ring is full. No locks, no system calls. */
static inline struct cs_ring_ent *cs_ring_reserve(struct cs_ring_prod *p, uint32_t len)
{
    uint64_t head = p->head;
    uint64_t off = head & (p->size - 1);
    uint64_t need = len;

    if (off + len > p->size)
        need += p->size - off; /* pad to the end, start again at 0 */
    if (head + need - p->tail_cache > p->size) {
        p->tail_cache = atomic_load_explicit(&p->ctl->tail, memory_order_acquire);
        if (head + need - p->tail_cache > p->size)
            return (struct cs_ring_ent *)0;
    }
    if (need != len) {
        struct cs_ring_ent *pad = (struct cs_ring_ent *)(p->data + off);
        pad->len = (uint32_t)(p->size - off);
        pad->type = CS_ENT_PAD;
        pad->aux = 0;
        head += p->size - off;
        off = 0;
    }
    p->pending = head + len;
    return (struct cs_ring_ent *)(p->data + off);
}

/** Publish the entries up to @p end, p->pending read before they were
 * filled (the stores that fill them may alias it, so the compiler would
 * read it again). */
static inline void cs_ring_publish(struct cs_ring_prod *p, uint64_t end)
{
    p->head = end;
    atomic_store_explicit(&p->ctl->head, end, memory_order_release);
}

/** Publish the entry reserved last (release store of head). */
static inline void cs_ring_commit(struct cs_ring_prod *p)
{
    cs_ring_publish(p, p->pending);
}

/* ---- consumer (the collector) ---- */

/* Called for each committed non-pad entry; return 0 to go on, <0 to stop
 * before consuming this entry (it is seen again next time). */
typedef int (*cs_ring_fn)(const struct cs_ring_ent *e, void *arg);

/** Visit every committed entry of sub-ring @p ctl/@p data (@p size bytes),
 * then publish the new tail. A malformed entry (len not a multiple of 8, 0,
 * or past the end) stops the drain and returns CS_E_CORRUPT-like -1; the
 * caller should stop reading that ring. @return entries visited, or -1. */
static inline long cs_ring_consume(struct cs_subring *ctl, const uint8_t *data, uint64_t size,
                                   cs_ring_fn fn, void *arg)
{
    uint64_t tail = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&ctl->head, memory_order_acquire);
    long n = 0;

    if (head - tail > size)
        return -1;
    while (tail < head) {
        uint64_t off = tail & (size - 1);
        const struct cs_ring_ent *e = (const struct cs_ring_ent *)(data + off);
        uint32_t len = e->len;

        if (len < sizeof(*e) || (len & 7) || off + len > size || tail + len > head) {
            atomic_store_explicit(&ctl->tail, tail, memory_order_release);
            return -1;
        }
        if (e->type != CS_ENT_PAD) {
            if (fn(e, arg) < 0)
                break;
            n++;
        }
        tail += len;
    }
    atomic_store_explicit(&ctl->tail, tail, memory_order_release);
    return n;
}

/* ---- control messages (SOCK_SEQPACKET, one message per datagram) ---- */

#define CS_MSG_MAGIC 0x4d535343u /* "CSSM" */

enum cs_msg_type {
    CS_MSG_HELLO = 1, /* struct cs_msg_hello: first message of a connection */
    CS_MSG_SEG = 2    /* struct cs_msg_seg + memfd in SCM_RIGHTS */
};

struct cs_msg_hdr {
    uint32_t magic;   /* CS_MSG_MAGIC */
    uint16_t version; /* CS_RING_VERSION */
    uint16_t type;    /* enum cs_msg_type */
};

struct cs_msg_hello {
    struct cs_msg_hdr h;
    uint32_t pid, ppid;
    uint64_t start_ticks;   /* /proc/self/stat field 22 (clock ticks since boot) */
    uint64_t t_hello_ns;    /* CLOCK_MONOTONIC when sent */
    uint32_t clock;         /* enum cs_clock the process stamps with */
    uint32_t rank;          /* $RANK, CS_RANK_NONE if absent */
    uint32_t local_rank;    /* $LOCAL_RANK, CS_RANK_NONE if absent */
    uint32_t cmdline_len;   /* bytes of cmdline that follow (args joined by ' ') */
    char comm[16];
    /* char cmdline[cmdline_len] follows (truncated to CS_MSG_CMDLINE_MAX) */
};
#define CS_MSG_CMDLINE_MAX 2048

struct cs_msg_seg {
    struct cs_msg_hdr h;
    uint32_t seg_index;
    uint32_t nsub;
    uint32_t sub_bytes;
    uint32_t pad;
    uint64_t seg_bytes; /* size of the memfd, = cs_seg_bytes(nsub, sub_bytes) */
};

#endif
