/* Tensors: counted allocation, reference counting, ids, copies in and out. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "pg.h"

/* Counters are process-wide and touched from any thread: relaxed atomics are enough. */
static int64_t mem_cur[5];
static int64_t mem_total, mem_peak;
static int64_t mem_cat_peak[5]; /* each category's own maximum since the last reset */
static int64_t live_tensors, live_gradmaps, live_optims;
static _Thread_local int64_t tape_nodes_live;
static int64_t next_id = 1;
static int default_dtype = PG_DTYPE_F32;

#define ADD(var, d) __atomic_add_fetch(&(var), (d), __ATOMIC_RELAXED)
#define LOAD(var)   __atomic_load_n(&(var), __ATOMIC_RELAXED)

static void account(int category, int64_t delta)
{
    int64_t cur = ADD(mem_cur[category], delta);
    int64_t cpeak = LOAD(mem_cat_peak[category]);
    while (cur > cpeak &&
           !__atomic_compare_exchange_n(&mem_cat_peak[category], &cpeak, cur, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {}
    int64_t total = ADD(mem_total, delta);
    int64_t peak = LOAD(mem_peak);
    while (total > peak &&
           !__atomic_compare_exchange_n(&mem_peak, &peak, total, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {}
}

void *pg_alloc(size_t nbytes, int category)
{
    /* 64-byte alignment for SIMD; never a zero-size request (empty tensors still get a block). */
    size_t sz = (nbytes + 63) & ~(size_t)63;
    if (sz == 0) sz = 64;
    void *p = pg_pool_get(sz);
    if (!p) p = aligned_alloc(64, sz);
    if (!p) return NULL;
    account(category, (int64_t)nbytes);
    return p;
}

void pg_free(void *p, size_t nbytes, int category)
{
    if (!p) return;
    size_t sz = (nbytes + 63) & ~(size_t)63;
    if (!pg_pool_put(p, sz ? sz : 64)) free(p);
    account(category, -(int64_t)nbytes);
}

void pg_count_object(int kind, int delta)
{
    if (kind == 0) ADD(live_gradmaps, delta);
    else ADD(live_optims, delta);
}

void pg_count_nodes(int64_t delta) { tape_nodes_live += delta; }

_Static_assert(sizeof(((pg_memory_counts *)0)->current) == PG_MEM_CATEGORY_COUNT * sizeof(int64_t),
               "pg_memory_counts.current: one slot per category");

int pg_memory_stats(pg_memory_counts *out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_memory_stats: NULL output");
    for (int c = 0; c < PG_MEM_CATEGORY_COUNT; c++) out->current[c] = LOAD(mem_cur[c]);
    out->total = LOAD(mem_total);
    out->peak = LOAD(mem_peak);
    out->live_tensors = LOAD(live_tensors);
    out->live_gradmaps = LOAD(live_gradmaps);
    out->live_optims = LOAD(live_optims);
    out->tape_nodes = tape_nodes_live;
    return 0;
}

void pg_memory_reset_peak(void)
{
    __atomic_store_n(&mem_peak, LOAD(mem_total), __ATOMIC_RELAXED);
    for (int c = 0; c < 5; c++)
        __atomic_store_n(&mem_cat_peak[c], LOAD(mem_cur[c]), __ATOMIC_RELAXED);
}

int pg_memory_category_peaks(int64_t *out, int n)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_memory_category_peaks: NULL output");
    for (int c = 0; c < n && c < 5; c++) out[c] = LOAD(mem_cat_peak[c]);
    return 0;
}

int64_t pg_live_objects(void)
{
    return LOAD(live_tensors) + LOAD(live_gradmaps) + LOAD(live_optims);
}

int pg_default_dtype(void) { return default_dtype; }
int64_t pg_tensor_next_id(void) { return LOAD(next_id); }

int pg_set_default_dtype(int dtype)
{
    if (dtype != PG_DTYPE_F32 && dtype != PG_DTYPE_F64)
        return pg_fail(PG_STATUS_ERR_DTYPE, "ag_dtype(): dtype must be f32 or f64, got %s",
                       pg_dtype_name(dtype));
    int prev = default_dtype;
    default_dtype = dtype;
    return prev;
}

size_t pg_dtype_size(int dtype)
{
    switch (dtype) {
    case PG_DTYPE_F32:
    case PG_DTYPE_I32: return 4;
    case PG_DTYPE_F64:
    case PG_DTYPE_I64: return 8;
    case PG_DTYPE_U8: return 1;
    default: return 0;
    }
}

static pg_storage *storage_new(size_t nbytes, int category)
{
    pg_storage *s = pg_obj_new(sizeof *s);
    if (!s) return NULL;
    s->data = pg_alloc(nbytes, category);
    if (!s->data) {
        pg_obj_free(s, sizeof *s);
        return NULL;
    }
    s->refcount = 1;
    s->nbytes = nbytes;
    s->category = category;
    return s;
}

static void storage_release(pg_storage *s)
{
    if (s && __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        pg_free(s->data, s->nbytes, s->category);
        pg_obj_free(s, sizeof *s);
    }
}

void pg_set_category(pg_tensor *t, int category)
{
    pg_storage *s = t->st;
    if (s->category == category) return;
    account(s->category, -(int64_t)s->nbytes);
    account(category, (int64_t)s->nbytes);
    s->category = category;
}

static pg_tensor *tensor_wrap(int dtype, int64_t nrow, int64_t ncol, pg_storage *st, int with_id)
{
    pg_tensor *t = pg_obj_new(sizeof *t);
    if (!t) return NULL;
    t->magic = PG_TENSOR_MAGIC;
    t->dtype = dtype;
    t->refcount = 1;
    t->id = with_id ? ADD(next_id, 1) - 1 : 0;
    t->ne[0] = nrow;
    t->ne[1] = ncol;
    t->ne[2] = 1;
    t->ne[3] = 1;
    t->st = st;
    ADD(live_tensors, 1);
    return t;
}

void pg_thread_watch(void); /* memory.c: frees this thread's tape when it exits */

pg_tensor *pg_new(int dtype, int64_t nrow, int64_t ncol, int category)
{
    pg_thread_watch();
    if (dtype != PG_DTYPE_F32 && dtype != PG_DTYPE_F64)
        return pg_fail_null(PG_STATUS_ERR_DTYPE, "tensor dtype must be f32 or f64, got %s",
                            pg_dtype_name(dtype));
    if (nrow < 0 || ncol < 0)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "tensor dims must be >= 0, got [%lldx%lld]",
                            (long long)nrow, (long long)ncol);
    if (ncol > 0 && nrow > (INT64_MAX / 8) / ncol)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "tensor [%lldx%lld] is too large", (long long)nrow,
                            (long long)ncol);
    size_t nbytes = (size_t)(nrow * ncol) * pg_dtype_size(dtype);
    /* beyond the machine's memory: refused without trying (an overcommitting OS may say yes) */
    static int64_t phys_cache = -1; /* any thread may fill it: the same value each time */
    int64_t phys = nbytes > ((size_t)1 << 30) ? LOAD(phys_cache) : 0;
    if (phys < 0) __atomic_store_n(&phys_cache, phys = pg_physical_memory(), __ATOMIC_RELAXED);
    if (phys > 0 && (int64_t)nbytes > phys)
        return pg_fail_null(PG_STATUS_ERR_NOMEM,
                            "out of memory allocating a [%lldx%lld] %s tensor (%zu bytes, more "
                            "than this machine's %lld)",
                            (long long)nrow, (long long)ncol, pg_dtype_name(dtype), nbytes,
                            (long long)phys);
    pg_storage *st = storage_new(nbytes, category);
    if (!st)
        return pg_fail_null(PG_STATUS_ERR_NOMEM,
                            "out of memory allocating a [%lldx%lld] %s tensor (%zu bytes)",
                            (long long)nrow, (long long)ncol, pg_dtype_name(dtype), nbytes);
    pg_tensor *t = tensor_wrap(dtype, nrow, ncol, st, 1);
    if (!t) {
        storage_release(st);
        return pg_fail_null(PG_STATUS_ERR_NOMEM, "out of memory");
    }
    return t;
}

pg_tensor *pg_new_zeros(int dtype, int64_t nrow, int64_t ncol, int category)
{
    pg_tensor *t = pg_new(dtype, nrow, ncol, category);
    if (t) memset(t->st->data, 0, t->st->nbytes);
    return t;
}

pg_tensor *pg_new_like(const pg_tensor *t, int category)
{
    pg_tensor *o = pg_new(t->dtype, t->ne[0], t->ne[1], category);
    if (o) memcpy(o->img, t->img, sizeof o->img); /* elementwise results keep the image shape */
    return o;
}

int pg_not_live(const pg_tensor *t, const char *op, const char *arg)
{
    if (!t) return pg_fail(PG_STATUS_ERR_ARG, "%s: argument '%s' is NULL", op, arg);
    if (t->magic != PG_TENSOR_MAGIC)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: argument '%s' is not a live tensor (freed or foreign object)", op, arg);
    return 0;
}

/* Two operands of one op must share a dtype; the message names both. */
int pg_same_dtype(const char *op, const char *an, const pg_tensor *a, const char *bn,
                  const pg_tensor *b)
{
    if (a->dtype != b->dtype)
        return pg_fail(PG_STATUS_ERR_DTYPE, "%s: dtype mismatch: %s is %s, %s is %s", op, an,
                       pg_desc(a), bn, pg_desc(b));
    return 0;
}

int pg_tensor_check(pg_tensor *t) { return pg_not_live(t, "tensor", "t"); }

void pg_tensor_retain(pg_tensor *t)
{
    if (t && t->magic == PG_TENSOR_MAGIC) __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
}

void pg_tensor_release(pg_tensor *t)
{
    if (!t || t->magic != PG_TENSOR_MAGIC) return;
    if (__atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
    /* A node owns a ref to its output, so a dying tensor has no live node pointing at it. */
    pg_tensor *g = t->grad;
    pg_tensor *bg = t->bw_grad;
    storage_release(t->st);
    t->magic = PG_DEAD_MAGIC;
    pg_obj_free(t, sizeof *t);
    ADD(live_tensors, -1);
    pg_tensor_release(g);
    pg_tensor_release(bg);
}

/* Strided, converting copy: src element (i, j) at src[i*rs + j*cs] into column-major dst. */
static int copy_in(int dtype, void *dst, int64_t nrow, int64_t ncol, const void *src, int src_dtype,
                   int64_t rs, int64_t cs)
{
#define PG_COPY_FROM(ST)                                                                           \
    do {                                                                                           \
        const ST *s = (const ST *)src;                                                             \
        for (int64_t j = 0; j < ncol; j++)                                                         \
            for (int64_t i = 0; i < nrow; i++) d[i + j * nrow] = (T)s[i * rs + j * cs];            \
    } while (0)
    PG_DISPATCH(dtype, {
        T *d = (T *)dst;
        switch (src_dtype) {
        case PG_DTYPE_F32: PG_COPY_FROM(float); break;
        case PG_DTYPE_F64: PG_COPY_FROM(double); break;
        case PG_DTYPE_I32: PG_COPY_FROM(int32_t); break;
        case PG_DTYPE_I64: PG_COPY_FROM(int64_t); break;
        case PG_DTYPE_U8: PG_COPY_FROM(uint8_t); break;
        default: return pg_fail(PG_STATUS_ERR_DTYPE, "unsupported source dtype %d", src_dtype);
        }
    });
#undef PG_COPY_FROM
    return 0;
}

pg_tensor *pg_tensor_new(int dtype, int64_t nrow, int64_t ncol, const void *src, int src_dtype,
                         int64_t rstride, int64_t cstride)
{
    pg_tensor *t = pg_new(dtype, nrow, ncol, PG_MEM_CATEGORY_OTHER);
    if (!t) return NULL;
    if (!src) {
        memset(t->st->data, 0, t->st->nbytes);
    } else if (copy_in(dtype, t->st->data, nrow, ncol, src, src_dtype, rstride, cstride)) {
        pg_tensor_release(t);
        return NULL;
    }
    return t;
}

pg_tensor *pg_tensor_full(int dtype, int64_t nrow, int64_t ncol, double value)
{
    pg_tensor *t = pg_new(dtype, nrow, ncol, PG_MEM_CATEGORY_OTHER);
    if (!t) return NULL;
    int64_t n = pg_numel(t);
    PG_DISPATCH(dtype, {
        T *d = pg_data(t);
        for (int64_t i = 0; i < n; i++) d[i] = (T)value;
    });
    return t;
}

pg_tensor *pg_tensor_cast(pg_tensor *t, int dtype)
{
    if (pg_not_live(t, "pg_tensor_cast", "t")) return NULL;
    return pg_tensor_new(dtype, t->ne[0], t->ne[1], pg_data(t), t->dtype, 1, t->ne[0]);
}

pg_tensor *pg_tensor_clone(pg_tensor *t)
{
    if (pg_not_live(t, "pg_tensor_clone", "t")) return NULL;
    return pg_tensor_cast(t, t->dtype);
}

int64_t pg_tensor_id(pg_tensor *t) { return pg_not_live(t, "id", "t") ? -1 : t->id; }
int pg_tensor_dtype(pg_tensor *t) { return pg_not_live(t, "dtype", "t") ? -1 : t->dtype; }
int64_t pg_tensor_nrow(pg_tensor *t) { return pg_not_live(t, "nrow", "t") ? -1 : t->ne[0]; }
int64_t pg_tensor_ncol(pg_tensor *t) { return pg_not_live(t, "ncol", "t") ? -1 : t->ne[1]; }
int64_t pg_tensor_numel(pg_tensor *t) { return pg_not_live(t, "numel", "t") ? -1 : pg_numel(t); }
void *pg_tensor_data(pg_tensor *t) { return pg_not_live(t, "data", "t") ? NULL : pg_data(t); }
int pg_tensor_requires_grad(pg_tensor *t)
{
    return pg_not_live(t, "requires_grad", "t") ? -1 : t->requires_grad;
}
int pg_tensor_is_leaf(pg_tensor *t)
{
    return pg_not_live(t, "is_leaf", "t") ? -1 : t->node == NULL;
}
const char *pg_tensor_op(pg_tensor *t)
{
    return (pg_not_live(t, "op", "t") || !t->node) ? "" : t->node->op;
}

int pg_tensor_set_requires_grad(pg_tensor *t, int flag)
{
    if (pg_not_live(t, "set_requires_grad", "t")) return PG_STATUS_ERR_ARG;
    t->requires_grad = flag != 0;
    /* A leaf that requires grad is a parameter for the memory report. */
    if (flag && !t->node && t->st->category == PG_MEM_CATEGORY_OTHER)
        pg_set_category(t, PG_MEM_CATEGORY_PARAM);
    else if (!flag && t->st->category == PG_MEM_CATEGORY_PARAM)
        pg_set_category(t, PG_MEM_CATEGORY_OTHER);
    return 0;
}

int pg_tensor_read(pg_tensor *t, void *dst, int dst_dtype)
{
    if (pg_not_live(t, "read", "t")) return PG_STATUS_ERR_ARG;
    if (!dst) return pg_fail(PG_STATUS_ERR_ARG, "read: NULL destination");
    if (dst_dtype != PG_DTYPE_F32 && dst_dtype != PG_DTYPE_F64)
        return pg_fail(PG_STATUS_ERR_DTYPE, "read: destination dtype must be f32 or f64");
    return copy_in(dst_dtype, dst, t->ne[0], t->ne[1], pg_data(t), t->dtype, 1, t->ne[0]);
}

int pg_tensor_write(pg_tensor *t, const void *src, int src_dtype, int64_t nrow, int64_t ncol,
                    int64_t rstride, int64_t cstride)
{
    if (pg_not_live(t, "write", "t")) return PG_STATUS_ERR_ARG;
    if (!src && nrow * ncol > 0) return pg_fail(PG_STATUS_ERR_ARG, "write: NULL source");
    if (nrow != t->ne[0] || ncol != t->ne[1])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "assigning data: tensor is %s but the new value is [%lldx%lld]", pg_desc(t),
                       (long long)nrow, (long long)ncol);
    int rc = copy_in(t->dtype, pg_data(t), nrow, ncol, src, src_dtype, rstride, cstride);
    if (rc == 0) pg_bump(t); /* copy_in refuses a dtype before writing anything */
    return rc;
}

pg_tensor *pg_tensor_grad(pg_tensor *t) { return pg_not_live(t, "grad", "t") ? NULL : t->grad; }

static int set_grad_locked(pg_tensor *t, pg_tensor *g);

int pg_tensor_set_grad(pg_tensor *t, pg_tensor *g) { PG_GRAD_LOCKED(set_grad_locked(t, g)); }

static int set_grad_locked(pg_tensor *t, pg_tensor *g)
{
    if (pg_not_live(t, "set_grad", "t")) return PG_STATUS_ERR_ARG;
    if (g) {
        if (pg_not_live(g, "set_grad", "g")) return PG_STATUS_ERR_ARG;
        if (g->ne[0] != t->ne[0] || g->ne[1] != t->ne[1] || g->dtype != t->dtype)
            return pg_fail(PG_STATUS_ERR_SHAPE, "set_grad: gradient %s does not match tensor %s",
                           pg_desc(g), pg_desc(t));
        pg_tensor_retain(g);
    }
    pg_tensor *old = t->grad;
    t->grad = g;
    pg_tensor_release(old);
    return 0;
}
