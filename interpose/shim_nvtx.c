/* shim_nvtx.c: NVTX ranges and marks, through NVTX v3's injection (docs/shim.md, "NVTX").
 * Owns InitializeInjectionNvtx2, which each NVTX instance of the program (the
 * header-only nvtx3 compiled into it, libtorch, ...) calls once after
 * dlopen()ing $NVTX_INJECTION64_PATH, which the constructor points at this
 * library; the callbacks it puts into that instance's slot tables; the
 * per-thread push/pop stacks, the table of open start/end ranges, and the
 * interning of messages, domains and registered strings into the shim's
 * process-local name ids (shim_names.c sends them). A range becomes one
 * struct cs_rec_nvtx (a CS_ENT_NVTX ring entry) when it closes; a mark at
 * once; a range still open when its thread or the process exits is written
 * with CS_NF_OPEN. The NVTX calls are the program's own: nothing here
 * blocks, allocates on the hot path or touches errno, and every return value
 * is what NVTX documents (the range's level, or its id). */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <wchar.h>

#include "cudaspy/utf8.h"
#include "shim.h"

#define NV_DEPTH 64u          /* push/pop ranges kept per thread; deeper ones are counted */
#define NV_STR_SLOTS 65536u   /* distinct strings (messages, domains, registered) */
#define NV_STR_PROBES 32u
#define NV_STR_MAX 4096u      /* bytes of a message that name it */
#define NV_SE_SLOTS 4096u     /* start/end ranges open at once */
#define NV_SE_PROBES 16u
#define NV_EXIT_MAX 1024u     /* open push/pop ranges written at process exit */
#define NV_INHERITED 0x80u    /* frame flag: pushed by the parent before fork (not written) */
#define NV_CAPTURE 0x40u      /* frame flag: its pop may close a capture range (shim_capture.c) */

/* An interned string; its address is the handle of a domain or registered
 * string. Written under shim_lock(), read lock-free: key last (release). */
struct nv_str {
    _Atomic uint64_t key; /* content hash | 1; 0 = empty */
    _Atomic uint32_t id;  /* process-local name id */
    _Atomic uint32_t gen; /* name generation (shim_hot.name_gen) it was last sent in */
};

/* A thread's push/pop ranges, innermost last; one page, mapped at its first
 * push, listed for the exit flush. Only the owner writes it. */
struct nv_stack {
    struct cs_rec_nvtx f[NV_DEPTH]; /* t_start, ids, attributes, depth filled at push */
    _Atomic uint32_t n;             /* frames in f */
    uint32_t over;                  /* pushes past NV_DEPTH, not kept */
    struct nv_stack *next;          /* under shim_lock() */
};
_Static_assert(sizeof(struct nv_stack) <= 4096, "a thread's NVTX stack is one page");

/* An open start/end range: key 0 = free, 1 = being written or read, else its id. */
struct nv_open {
    _Atomic uint64_t key;
    struct cs_rec_nvtx r;
};

static struct nv_str nv_strs[NV_STR_SLOTS];
static struct nv_open nv_se[NV_SE_SLOTS];
static _Atomic uint64_t nv_ticket;
static struct nv_stack *nv_stacks;          /* every thread's, under shim_lock() */
static __thread struct nv_stack *nv_stk;    /* this thread's, NULL before its first push */
static pthread_key_t nv_key;
static int nv_enabled;                      /* the constructor let NVTX in (shim_nvtx_init) */
static _Atomic int nv_once_deep, nv_once_strs, nv_once_se, nv_once_mem;
static uint64_t nv_cap_key;                 /* the capture's range name, hashed; 0: none or default */
static _Atomic uint32_t nv_cap_id;          /* its name id, once known */

/* ---- strings ---- */

static inline uint64_t nv_hash_a(const char *s, size_t *len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t n = 0;

    for (; n < NV_STR_MAX && s[n]; n++)
        h = (h ^ (uint8_t)s[n]) * 0x100000001b3ull;
    *len = n;
    return (h ^ n) | 1;
}

static inline uint64_t nv_hash_w(const wchar_t *s, size_t *len)
{
    uint64_t h = 0x84222325cbf29ce4ull;
    size_t n = 0;

    for (; n < NV_STR_MAX && s[n]; n++)
        h = (h ^ (uint32_t)s[n]) * 0x100000001b3ull;
    *len = n;
    return (h ^ n) | 1;
}

static inline struct nv_str *nv_find(uint64_t key)
{
    uint32_t i = (uint32_t)(key >> 32) & (NV_STR_SLOTS - 1);

    for (uint32_t p = 0; p < NV_STR_PROBES; p++, i = (i + 1) & (NV_STR_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&nv_strs[i].key, memory_order_acquire);
        if (k == key)
            return &nv_strs[i];
        if (k == 0)
            return NULL;
    }
    return NULL;
}

/* Define @p s's name again in a process that has not sent it (a fork child). */
static void nv_touch_slow(struct nv_str *s) SHIM_COLD;
static void nv_touch_slow(struct nv_str *s)
{
    shim_name_touch(atomic_load(&s->id));
    atomic_store(&s->gen, atomic_load(&shim_hot_.name_gen));
}

static inline uint32_t nv_id(struct nv_str *s)
{
    if (s == NULL)
        return 0;
    if (SHIM_UNLIKELY(atomic_load_explicit(&s->gen, memory_order_relaxed) !=
                      atomic_load_explicit(&shim_hot_.name_gen, memory_order_relaxed)))
        nv_touch_slow(s);
    return atomic_load_explicit(&s->id, memory_order_relaxed);
}

/* A new string: a name id (sent into this thread's ring), then a slot. */
static struct nv_str *nv_intern_slow(uint64_t key, const char *utf8, size_t len) SHIM_COLD;
static struct nv_str *nv_intern_slow(uint64_t key, const char *utf8, size_t len)
{
    struct nv_str *s = NULL;
    uint32_t gen = atomic_load(&shim_hot_.name_gen), id;
    uint32_t i = (uint32_t)(key >> 32) & (NV_STR_SLOTS - 1);
    int err = errno;

    id = shim_name_intern_slow(utf8, len, 0, CS_NAME_NVTX);
    if (id != 0) {
        shim_lock();
        for (uint32_t p = 0; p < NV_STR_PROBES; p++, i = (i + 1) & (NV_STR_SLOTS - 1)) {
            uint64_t k = atomic_load_explicit(&nv_strs[i].key, memory_order_relaxed);
            if (k == key) { /* another thread was first: its id is as good */
                s = &nv_strs[i];
                break;
            }
            if (k == 0) {
                s = &nv_strs[i];
                atomic_store_explicit(&s->id, id, memory_order_relaxed);
                atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
                atomic_store_explicit(&s->key, key, memory_order_release);
                break;
            }
        }
        shim_unlock();
    }
    if (s == NULL)
        shim_log_once(&nv_once_strs, "NVTX: too many distinct strings; later ones are unnamed");
    errno = err;
    return s;
}

static inline struct nv_str *nv_str_a(const char *m)
{
    size_t len;
    uint64_t key;
    struct nv_str *s;

    if (m == NULL)
        return NULL;
    key = nv_hash_a(m, &len);
    s = nv_find(key);
    return SHIM_LIKELY(s != NULL) ? s : nv_intern_slow(key, m, len);
}

/* UTF-8 of @p len wide characters at @p w into @p out (@p n bytes); its length. */
static size_t nv_utf8(const wchar_t *w, size_t len, char *out, size_t n)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        if (o + 4 > n)
            break;
        o += cs_utf8_put((uint32_t)w[i], out + o);
    }
    return o;
}

static struct nv_str *nv_intern_w_slow(uint64_t key, const wchar_t *w, size_t len) SHIM_COLD;
static struct nv_str *nv_intern_w_slow(uint64_t key, const wchar_t *w, size_t len)
{
    char buf[NV_STR_MAX];

    return nv_intern_slow(key, buf, nv_utf8(w, len, buf, sizeof(buf)));
}

static inline struct nv_str *nv_str_w(const wchar_t *m)
{
    size_t len;
    uint64_t key;
    struct nv_str *s;

    if (m == NULL)
        return NULL;
    key = nv_hash_w(m, &len);
    s = nv_find(key);
    return SHIM_LIKELY(s != NULL) ? s : nv_intern_w_slow(key, m, len);
}

/* The string behind a handle we gave out (domain, registered string), or
 * NULL for anything else: the program's handles are checked, never trusted. */
static inline struct nv_str *nv_handle(const void *h)
{
    uintptr_t p = (uintptr_t)h, b = (uintptr_t)nv_strs;

    if (p < b || p >= b + sizeof(nv_strs) || (p - b) % sizeof(struct nv_str) != 0)
        return NULL;
    return (struct nv_str *)(void *)h;
}

/* ---- records ---- */

/* Message, category, colour and payload of @p a into @p r (zeroed). */
static inline void nv_attr(struct cs_rec_nvtx *r, const nvtxEventAttributes_t *a)
{
    size_t sz;

    if (a == NULL)
        return;
    sz = a->size;
    if (sz >= offsetof(nvtxEventAttributes_t, category) + sizeof(a->category))
        r->category = a->category;
    if (sz >= offsetof(nvtxEventAttributes_t, color) + sizeof(a->color) &&
        a->colorType == NVTX_COLOR_ARGB)
        r->color = a->color;
    if (sz >= offsetof(nvtxEventAttributes_t, payload) + sizeof(a->payload) &&
        a->payloadType >= NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 &&
        a->payloadType <= NVTX_PAYLOAD_TYPE_FLOAT) {
        r->payload = a->payloadType >= NVTX_PAYLOAD_TYPE_UNSIGNED_INT32 ? a->payload.uiValue
                                                                         : a->payload.ullValue;
        r->payload_type = (uint8_t)a->payloadType;
        r->flags |= CS_NF_PAYLOAD;
    }
    if (sz < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message))
        return;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: r->name_id = nv_id(nv_str_a(a->message.ascii)); break;
    case NVTX_MESSAGE_TYPE_UNICODE: r->name_id = nv_id(nv_str_w(a->message.unicode)); break;
    case NVTX_MESSAGE_TYPE_REGISTERED: r->name_id = nv_id(nv_handle(a->message.registered)); break;
    default: break; /* payload-extension messages: unnamed */
    }
}

/* What names a range or mark: the event attributes @p a, or else the
 * ASCII or wide message of the short form of the call. */
static inline void nv_what(struct cs_rec_nvtx *r, const nvtxEventAttributes_t *a,
                           const char *ascii, const wchar_t *wide)
{
    if (a)
        nv_attr(r, a);
    else
        r->name_id = ascii ? nv_id(nv_str_a(ascii)) : nv_id(nv_str_w(wide));
}

/* Copy @p r, finished, into this thread's sub-ring as one CS_ENT_NVTX entry
 * (attaching on first use), or count it as a drop. */
static inline void nv_push(struct cs_rec_nvtx *r)
{
    struct cs_ring_prod *p = &shim_t_.prod;
    struct cs_ring_ent *e;
    uint64_t end;

    r->pid = SHIM_LIKELY(shim_pid_ != 0) ? shim_pid_ : shim_pid_slow();
    r->flags &= (uint8_t)~(NV_INHERITED | NV_CAPTURE);
    r->pad = 0;
    if (SHIM_UNLIKELY(p->ctl == NULL) && (p = shim_ring_attach_slow()) == NULL)
        return;
    e = cs_ring_reserve(p, (uint32_t)(sizeof(*e) + sizeof(*r)));
    if (SHIM_UNLIKELY(e == NULL)) {
        atomic_fetch_add_explicit(&p->ctl->dropped, 1, memory_order_relaxed);
        return;
    }
    end = p->pending;
    e->len = (uint32_t)(sizeof(*e) + sizeof(*r));
    e->type = CS_ENT_NVTX;
    e->aux = 0;
    memcpy(e + 1, r, sizeof(*r));
    cs_ring_publish(p, end);
}

static inline void nv_zero(struct cs_rec_nvtx *r)
{
    memset(r, 0, sizeof(*r));
}

static void nv_mark(const void *domain, const nvtxEventAttributes_t *a, const char *ascii,
                    const wchar_t *wide)
{
    struct cs_rec_nvtx r;

    if (!shim_recording())
        return;
    nv_zero(&r);
    r.t_start_ns = r.t_end_ns = shim_ring_now();
    r.tid = shim_ring_tid();
    r.flags = CS_NF_MARK;
    r.domain_id = domain ? nv_id(nv_handle(domain)) : 0;
    nv_what(&r, a, ascii, wide);
    nv_push(&r);
}

/* ---- push/pop: a stack per thread ---- */

/* Is @p f, just pushed, the range that bounds capture ranges? Its name id
 * is looked up once the program has used the name; steps: with no name
 * take the first range pushed at the top of the default domain. */
static int nv_cap_match(const struct cs_rec_nvtx *f) SHIM_COLD;
static int nv_cap_match(const struct cs_rec_nvtx *f)
{
    uint32_t id = atomic_load_explicit(&nv_cap_id, memory_order_relaxed), none = 0;
    struct nv_str *s;

    if (id == 0 && nv_cap_key && (s = nv_find(nv_cap_key)) != NULL)
        id = nv_id(s);
    else if (id == 0 && !nv_cap_key && f->depth == 0 && f->domain_id == 0 && f->name_id)
        id = f->name_id;
    if (id && atomic_compare_exchange_strong(&nv_cap_id, &none, id) == 0)
        id = none; /* another thread decided first */
    return id && f->name_id == id;
}

static void nv_stack_free(void *arg);

/* This thread's stack, mapped at its first push. */
static struct nv_stack *nv_stack_slow(void) SHIM_COLD;
static struct nv_stack *nv_stack_slow(void)
{
    int err = errno;
    struct nv_stack *s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                              -1, 0);

    if (s == MAP_FAILED) {
        shim_log_once(&nv_once_mem, "NVTX: no memory for a thread's range stack; its push/pop "
                                    "ranges are not recorded");
        errno = err;
        return NULL;
    }
    shim_lock();
    s->next = nv_stacks;
    nv_stacks = s;
    shim_unlock();
    pthread_setspecific(nv_key, s);
    nv_stk = s;
    errno = err;
    return s;
}

static int nv_push_range(const void *domain, const nvtxEventAttributes_t *a, const char *ascii,
                         const wchar_t *wide)
{
    struct nv_stack *s = nv_stk;
    struct cs_rec_nvtx *f;
    uint32_t n, dom = domain ? nv_id(nv_handle(domain)) : 0;
    int depth = 0;

    if (SHIM_UNLIKELY(s == NULL) && (s = nv_stack_slow()) == NULL)
        return -1;
    n = atomic_load_explicit(&s->n, memory_order_relaxed);
    if (SHIM_UNLIKELY(n == NV_DEPTH)) {
        shim_log_once(&nv_once_deep, "NVTX: ranges nested deeper than 64 on a thread; the "
                                     "deeper ones are not recorded");
        return (int)(NV_DEPTH + s->over++);
    }
    for (uint32_t i = n; i-- > 0;)
        if (s->f[i].domain_id == dom) {
            depth = s->f[i].depth + 1;
            break;
        }
    f = &s->f[n];
    nv_zero(f);
    f->domain_id = dom;
    f->tid = shim_ring_tid(); /* the exit flush writes it from another thread */
    f->depth = (uint16_t)depth;
    nv_what(f, a, ascii, wide);
    f->t_start_ns = shim_ring_now();
    if (SHIM_UNLIKELY(shim_cap_mode_ >= CS_CAPTURE_NVTX) && nv_cap_match(f) &&
        shim_capture_nvtx_push(f->t_start_ns, depth == 0))
        f->flags |= NV_CAPTURE;
    atomic_store_explicit(&s->n, n + 1, memory_order_release);
    return depth;
}

static int nv_pop_range(const void *domain)
{
    struct nv_stack *s = nv_stk;
    struct cs_rec_nvtx r;
    uint64_t t = shim_ring_now();
    uint32_t n, i, dom, bounds;

    if (s == NULL)
        return -1;
    if (SHIM_UNLIKELY(s->over != 0))
        return (int)(NV_DEPTH + --s->over);
    dom = domain ? nv_id(nv_handle(domain)) : 0;
    n = atomic_load_explicit(&s->n, memory_order_relaxed);
    for (i = n; i-- > 0;)
        if (s->f[i].domain_id == dom)
            break;
    if (i == UINT32_MAX)
        return -1; /* nothing of this domain open on this thread */
    r = s->f[i];
    if (SHIM_UNLIKELY(i != n - 1))
        memmove(&s->f[i], &s->f[i + 1], (n - 1 - i) * sizeof(s->f[0]));
    atomic_store_explicit(&s->n, n - 1, memory_order_release);
    bounds = r.flags & NV_CAPTURE;
    if (!(r.flags & NV_INHERITED) && shim_recording()) {
        r.t_end_ns = t;
        nv_push(&r);
    }
    if (SHIM_UNLIKELY(bounds))
        shim_capture_nvtx_pop(t);
    return r.depth;
}

/* ---- start/end: one table per process, any thread may end ---- */

static nvtxRangeId_t nv_start(const void *domain, const nvtxEventAttributes_t *a,
                              const char *ascii, const wchar_t *wide)
{
    uint64_t ticket = atomic_fetch_add_explicit(&nv_ticket, 1, memory_order_relaxed) + 1;
    uint64_t id;

    for (uint32_t p = 0; p < NV_SE_PROBES; p++) {
        uint32_t i = (uint32_t)(ticket + p) & (NV_SE_SLOTS - 1);
        struct nv_open *o = &nv_se[i];
        uint64_t free_key = 0;
        if (!atomic_compare_exchange_strong_explicit(&o->key, &free_key, 1, memory_order_acquire,
                                                     memory_order_relaxed))
            continue;
        nv_zero(&o->r);
        o->r.flags = CS_NF_STARTEND;
        o->r.domain_id = domain ? nv_id(nv_handle(domain)) : 0;
        nv_what(&o->r, a, ascii, wide);
        o->r.tid = shim_ring_tid();
        o->r.t_start_ns = shim_ring_now();
        id = ticket << 12 | i;
        atomic_store_explicit(&o->key, id, memory_order_release);
        return id;
    }
    shim_log_once(&nv_once_se, "NVTX: more than 4096 start/end ranges open at once; later ones "
                               "are not recorded");
    return 0;
}

static void nv_end(nvtxRangeId_t id)
{
    struct nv_open *o = &nv_se[id & (NV_SE_SLOTS - 1)];
    uint64_t t = shim_ring_now(), key = id;
    struct cs_rec_nvtx r;

    if (id < 2 || !atomic_compare_exchange_strong_explicit(&o->key, &key, 1, memory_order_acquire,
                                                           memory_order_relaxed))
        return; /* not ours, or ended already */
    r = o->r;
    atomic_store_explicit(&o->key, 0, memory_order_release);
    if (shim_recording()) {
        r.t_end_ns = t;
        nv_push(&r);
    }
}

/* ---- the callbacks NVTX calls ---- */

static void NVTX_API cb_mark_ex(const nvtxEventAttributes_t *a) { nv_mark(NULL, a, NULL, NULL); }
static void NVTX_API cb_mark_a(const char *m) { nv_mark(NULL, NULL, m, NULL); }
static void NVTX_API cb_mark_w(const wchar_t *m) { nv_mark(NULL, NULL, NULL, m); }
static void NVTX_API cb_dmark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    nv_mark(d, a, NULL, NULL);
}

static nvtxRangeId_t NVTX_API cb_start_ex(const nvtxEventAttributes_t *a)
{
    return nv_start(NULL, a, NULL, NULL);
}
static nvtxRangeId_t NVTX_API cb_start_a(const char *m) { return nv_start(NULL, NULL, m, NULL); }
static nvtxRangeId_t NVTX_API cb_start_w(const wchar_t *m) { return nv_start(NULL, NULL, NULL, m); }
static nvtxRangeId_t NVTX_API cb_dstart_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return nv_start(d, a, NULL, NULL);
}
static void NVTX_API cb_end(nvtxRangeId_t id) { nv_end(id); }
static void NVTX_API cb_dend(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    nv_end(id);
}

static int NVTX_API cb_push_ex(const nvtxEventAttributes_t *a)
{
    return nv_push_range(NULL, a, NULL, NULL);
}
static int NVTX_API cb_push_a(const char *m) { return nv_push_range(NULL, NULL, m, NULL); }
static int NVTX_API cb_push_w(const wchar_t *m) { return nv_push_range(NULL, NULL, NULL, m); }
static int NVTX_API cb_dpush_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return nv_push_range(d, a, NULL, NULL);
}
static int NVTX_API cb_pop(void) { return nv_pop_range(NULL); }
static int NVTX_API cb_dpop(nvtxDomainHandle_t d) { return nv_pop_range(d); }

static nvtxDomainHandle_t NVTX_API cb_domain_a(const char *name)
{
    return (nvtxDomainHandle_t)(void *)nv_str_a(name);
}
static nvtxDomainHandle_t NVTX_API cb_domain_w(const wchar_t *name)
{
    return (nvtxDomainHandle_t)(void *)nv_str_w(name);
}
static void NVTX_API cb_domain_destroy(nvtxDomainHandle_t d) { (void)d; }
static nvtxStringHandle_t NVTX_API cb_register_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return (nvtxStringHandle_t)(void *)nv_str_a(s);
}
static nvtxStringHandle_t NVTX_API cb_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    return (nvtxStringHandle_t)(void *)nv_str_w(s);
}

struct nv_cb {
    unsigned id;
    NvtxFunctionPointer fn;
};
#define CB(id, fn) {id, (NvtxFunctionPointer)(fn)}

static const struct nv_cb cb_core[] = {
    CB(NVTX_CBID_CORE_MarkEx, cb_mark_ex),         CB(NVTX_CBID_CORE_MarkA, cb_mark_a),
    CB(NVTX_CBID_CORE_MarkW, cb_mark_w),           CB(NVTX_CBID_CORE_RangeStartEx, cb_start_ex),
    CB(NVTX_CBID_CORE_RangeStartA, cb_start_a),    CB(NVTX_CBID_CORE_RangeStartW, cb_start_w),
    CB(NVTX_CBID_CORE_RangeEnd, cb_end),           CB(NVTX_CBID_CORE_RangePushEx, cb_push_ex),
    CB(NVTX_CBID_CORE_RangePushA, cb_push_a),      CB(NVTX_CBID_CORE_RangePushW, cb_push_w),
    CB(NVTX_CBID_CORE_RangePop, cb_pop),
};
static const struct nv_cb cb_core2[] = {
    CB(NVTX_CBID_CORE2_DomainMarkEx, cb_dmark_ex),
    CB(NVTX_CBID_CORE2_DomainRangeStartEx, cb_dstart_ex),
    CB(NVTX_CBID_CORE2_DomainRangeEnd, cb_dend),
    CB(NVTX_CBID_CORE2_DomainRangePushEx, cb_dpush_ex),
    CB(NVTX_CBID_CORE2_DomainRangePop, cb_dpop),
    CB(NVTX_CBID_CORE2_DomainRegisterStringA, cb_register_a),
    CB(NVTX_CBID_CORE2_DomainRegisterStringW, cb_register_w),
    CB(NVTX_CBID_CORE2_DomainCreateA, cb_domain_a),
    CB(NVTX_CBID_CORE2_DomainCreateW, cb_domain_w),
    CB(NVTX_CBID_CORE2_DomainDestroy, cb_domain_destroy),
};
#undef CB

/* Put @p n callbacks into module @p mod's slots of one NVTX instance; slots
 * left alone stay no-ops (NVTX clears them after this returns). */
static int nv_fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule mod,
                   const struct nv_cb *t, size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned size = 0;

    if (!cb->GetModuleFunctionTable(mod, &table, &size) || table == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (t[i].id < size && table[t[i].id] != NULL)
            *table[t[i].id] = t[i].fn;
    return 0;
}

/* NVTX's injection entry point: called once per NVTX instance, at its
 * first call, with that instance's export table. @return 1 when the
 * callbacks are in; 0 (NVTX then turns every call into a no-op, and
 * unloads nothing of ours: we are preloaded) when recording is off. */
SHIM_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableCallbacks *cb;
    const NvtxExportTableVersionInfo *vi;
    int err = errno, ok = 0;

    if (!nv_enabled || atomic_load(&shim_off_) || !shim_ring_enabled() || get == NULL)
        return 0;
    cb = get(NVTX_ETID_CALLBACKS);
    if (cb && cb->struct_size >= sizeof(*cb) && cb->GetModuleFunctionTable &&
        nv_fill(cb, NVTX_CB_MODULE_CORE, cb_core, sizeof(cb_core) / sizeof(cb_core[0])) == 0 &&
        nv_fill(cb, NVTX_CB_MODULE_CORE2, cb_core2, sizeof(cb_core2) / sizeof(cb_core2[0])) == 0)
        ok = 1;
    vi = ok ? get(NVTX_ETID_VERSIONINFO) : NULL;
    if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    errno = err;
    return ok;
}

/* ---- open ranges at thread and process exit ---- */

/* A range still open: its last sight is now. */
static void nv_write_open(struct cs_rec_nvtx *r, uint64_t t)
{
    if ((r->flags & NV_INHERITED) || !shim_recording())
        return;
    r->t_end_ns = t < r->t_start_ns ? r->t_start_ns : t;
    r->flags |= CS_NF_OPEN;
    nv_push(r);
}

static void nv_unlist(struct nv_stack *s)
{
    shim_lock();
    for (struct nv_stack **pp = &nv_stacks; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    shim_unlock();
}

/* Thread exit (pthread key destructor): write what it left open, free the stack. */
static void nv_stack_free(void *arg)
{
    struct nv_stack *s = arg;
    uint64_t t = shim_ring_now();
    uint32_t n = atomic_load(&s->n);
    int err = errno;

    for (uint32_t i = 0; i < n; i++) {
        struct cs_rec_nvtx r = s->f[i];
        nv_write_open(&r, t);
    }
    nv_unlist(s);
    nv_stk = NULL;
    munmap(s, 4096);
    errno = err;
}

/* Process exit: every thread's open push/pop ranges (copied under the lock,
 * written after it: no ring push under shim_lock()) and every open
 * start/end range. Threads still running may move their stacks meanwhile:
 * a range popped just now can be written twice, once open. */
__attribute__((destructor)) static void nv_exit(void)
{
    static struct cs_rec_nvtx left[NV_EXIT_MAX];
    uint64_t t;
    uint32_t k = 0;
    int err = errno;

    if (!nv_enabled || atomic_load(&shim_off_) ||
        (__atomic_load_n(&nv_stacks, __ATOMIC_RELAXED) == NULL && atomic_load(&nv_ticket) == 0))
        return; /* no NVTX range in this process: not even a clock read */
    t = shim_ring_now();
    shim_lock();
    for (struct nv_stack *s = nv_stacks; s; s = s->next) {
        uint32_t n = atomic_load_explicit(&s->n, memory_order_acquire);
        for (uint32_t i = 0; i < n && i < NV_DEPTH && k < NV_EXIT_MAX; i++)
            left[k++] = s->f[i];
    }
    shim_unlock();
    for (uint32_t i = 0; i < k; i++)
        nv_write_open(&left[i], t);
    for (uint32_t i = 0; i < NV_SE_SLOTS; i++) {
        uint64_t key = atomic_load_explicit(&nv_se[i].key, memory_order_relaxed);
        if (key > 1 && atomic_compare_exchange_strong(&nv_se[i].key, &key, 1)) {
            struct cs_rec_nvtx r = nv_se[i].r;
            atomic_store(&nv_se[i].key, 0);
            nv_write_open(&r, t);
        }
    }
    errno = err;
}

/* ---- process (shim_main.c) ---- */

int shim_nvtx_init(int preloaded)
{
    const char *env = getenv("NVTX_INJECTION64_PATH");
    char self[PATH_MAX], envr[PATH_MAX];
    Dl_info di;

    if (!dladdr((void *)shim_nvtx_init, &di) || di.dli_fname == NULL ||
        realpath(di.dli_fname, self) == NULL)
        return 0;
    if (env && *env && realpath(env, envr) != NULL)
        env = envr;
    if (!preloaded) /* dlopened by NVTX only (LD_PRELOAD dropped): stay out */
        return env && strcmp(env, self) == 0 ? -1 : 0;
    if (pthread_key_create(&nv_key, nv_stack_free) != 0)
        return 0;
    if (env == NULL || *env == '\0')
        setenv("NVTX_INJECTION64_PATH", self, 1);
    if (shim_capture_range_name() && *shim_capture_range_name()) {
        size_t len;
        nv_cap_key = nv_hash_a(shim_capture_range_name(), &len);
    }
    nv_enabled = 1;
    return 0;
}

/* A fork child: the parent's start/end ranges and other threads' stacks are
 * the parent's to write; this thread's frames stay (its pops must match)
 * but are not written. Under shim_lock()'s fork protocol (shim_main.c). */
void shim_nvtx_atfork_child(void)
{
    struct nv_stack *s = nv_stacks, *next;

    for (uint32_t i = 0; i < NV_SE_SLOTS; i++)
        atomic_store_explicit(&nv_se[i].key, 0, memory_order_relaxed);
    for (; s; s = next) {
        next = s->next;
        if (s != nv_stk)
            munmap(s, 4096);
    }
    nv_stacks = nv_stk;
    if (nv_stk) {
        nv_stk->next = NULL;
        for (uint32_t i = 0; i < atomic_load(&nv_stk->n); i++)
            nv_stk->f[i].flags |= NV_INHERITED;
    }
}
