/* Memory reports: what the tape holds alive (ag_tape_memory), from the core's real byte counts.
 *
 * The report answers "what would clearing the tape free?" exactly. A reference count tells
 * whether anything outside the tape holds a tensor: a tensor dies with the tape iff all its
 * references come from tape nodes (or from the .grad of another tensor that dies with the
 * tape), and a storage dies iff all its references come from dying tensors. The walk in
 * recording order then charges each storage once, to the first node that meets it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "ptrmap.h"

/* ---- thread exit: free what a finished thread leaves on its tape ----
 * The tape is per thread (tape.c). pg_thread_watch() (called by tensor.c's pg_new the first
 * time a thread allocates a tensor) sets a pthread key whose destructor runs at thread exit and
 * calls pg_tape_thread_exit() (tape.c): nodes, stashes and per-thread buffers are freed. */
void pg_tape_thread_exit(void);
void pg_thread_watch(void);

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;

static void on_thread_exit(void *p)
{
    (void)p;
    pg_tape_thread_exit();
}

static void make_exit_key(void)
{
    exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

/* ---- the gradient lock ----
 * Backward writes per-tensor scratch (bw_grad) and leaf .grad fields; two threads running
 * backward through a shared tensor (or one replacing a .grad the other accumulates into) would
 * free each other's buffers. pg_backward, pg_tensor_set_grad and the optimizer calls that read
 * or write gradients hold this process-wide lock (recursive: zero_grad calls set_grad), so
 * those passes run one at a time; forward ops never take it. */

static pthread_mutex_t grad_mu;
static pthread_once_t grad_once = PTHREAD_ONCE_INIT;

static void make_grad_mu(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&grad_mu, &a);
    pthread_mutexattr_destroy(&a);
}

void pg_grad_lock(void)
{
    pthread_once(&grad_once, make_grad_mu);
    pthread_mutex_lock(&grad_mu);
}

void pg_grad_unlock(void) { pthread_mutex_unlock(&grad_mu); }

/* fork.c: 0 before fork (take it), 1 parent (release), 2 child (a fresh lock, unlocked) */
void pg_grad_fork(int phase)
{
    if (phase == 0) pg_grad_lock();
    else if (phase == 1) pg_grad_unlock();
    else make_grad_mu();
}

void pg_thread_watch(void)
{
    static _Thread_local int watched;
    if (watched) return;
    watched = 1;
    pthread_once(&exit_once, make_exit_key);
    if (exit_key_ok) pthread_setspecific(exit_key, &watched); /* any non-NULL value */
}

/* ---- the report ---- */

typedef struct {
    pg_ptrmap
        tensors; /* tensor -> count: references from the tape and from dying tensors; flag: dies */
    pg_ptrmap storages; /* storage -> count: references from dying tensors; flag: dies */
    pg_ptrmap seen;     /* storages already charged */
    int64_t inputs, snapshots;
} walk;

/* Adds one internal reference to t and queues it for the dying check. */
static int ref_internal(walk *w, pg_tensor *t, pg_tensor ***queue, int64_t *nq, int64_t *capq)
{
    pg_ptrmap_ent *e = pg_ptrmap_get(&w->tensors, t, 1);
    if (!e) return -1;
    e->count++;
    if (*nq == *capq) {
        int64_t cap = *capq ? *capq * 2 : 256;
        pg_tensor **q = realloc(*queue, (size_t)cap * sizeof *q);
        if (!q) return -1;
        *queue = q;
        *capq = cap;
    }
    (*queue)[(*nq)++] = t;
    return 0;
}

int64_t pg_node_n_tensors(const pg_node *n) { return pg_node_n_inputs(n) + n->n_saved + 1; }

pg_tensor *pg_node_tensor(const pg_node *n, int64_t j)
{
    int64_t ni = pg_node_n_inputs(n); /* a host node may have more than PG_MAX_IN */
    if (j < ni) return pg_node_input(n, j);
    j -= ni;
    return j < n->n_saved ? n->saved[j] : n->out;
}

/* Marks the tensors and storages that pg_tape_clear() would free. */
static int mark_dying(walk *w, int64_t nn)
{
    pg_tensor **q = NULL;
    int64_t nq = 0, capq = 0;
    for (int64_t k = 0; k < nn; k++) {
        pg_node *n = pg_tape_node(k);
        for (int64_t j = 0; j < pg_node_n_tensors(n); j++) {
            pg_tensor *t = pg_node_tensor(n, j);
            if (t && ref_internal(w, t, &q, &nq, &capq)) goto fail;
        }
    }
    /* Counts only grow, so a tensor found dying stays dying; a newly dying tensor adds a
     * reference to its .grad (and a backward scratch buffer, if any), queued again. */
    for (int64_t i = 0; i < nq; i++) {
        pg_tensor *t = q[i];
        pg_ptrmap_ent *e = pg_ptrmap_get(&w->tensors, t, 0);
        if (e->flag || e->count != t->refcount) continue;
        e->flag = 1;
        pg_ptrmap_ent *s = pg_ptrmap_get(&w->storages, t->st, 1);
        if (!s) goto fail;
        s->count++;
        if (t->grad && ref_internal(w, t->grad, &q, &nq, &capq)) goto fail;
        if (t->bw_grad && ref_internal(w, t->bw_grad, &q, &nq, &capq)) goto fail;
    }
    for (int64_t i = 0; i < w->storages.cap; i++) {
        pg_ptrmap_ent *s = &w->storages.e[i];
        if (s->key) s->flag = s->count == ((const pg_storage *)s->key)->refcount;
    }
    free(q);
    return 0;
fail:
    free(q);
    return -1;
}

/* Charges t's storage to the current node (once per storage), then the .grad chain of a dying
 * tensor (which dies with it when nothing else holds it). Returns the bytes charged. */
static int64_t charge(walk *w, pg_tensor *t, int depth)
{
    if (!t || depth > 8) return 0;
    int64_t bytes = 0;
    if (!pg_ptrmap_get(&w->seen, t->st, 0)) {
        pg_ptrmap_ent *s = pg_ptrmap_get(&w->storages, t->st, 0);
        int dies = s && s->flag;
        if (depth > 0 && !dies) return 0; /* a grad kept by a gradient map is not the tape's */
        if (!pg_ptrmap_get(&w->seen, t->st, 1)) return -1;
        bytes = (int64_t)t->st->nbytes;
        if (dies) w->snapshots += bytes;
        else w->inputs += bytes;
    }
    pg_ptrmap_ent *e = pg_ptrmap_get(&w->tensors, t, 0);
    if (e && e->flag) {
        int64_t b1 = charge(w, t->grad, depth + 1), b2 = charge(w, t->bw_grad, depth + 1);
        if (b1 < 0 || b2 < 0) return -1;
        bytes += b1 + b2;
    }
    return bytes;
}

static int64_t tape_charge(void *ctx, pg_tensor *t, int input)
{
    (void)input;
    return charge(ctx, t, 0);
}

/* ---- the walk shared by the tape's and a compiled graph's reports ---- */

typedef struct {
    const char *label;
    int64_t nodes, bytes;
} op_row;

static int row_cmp(const void *a, const void *b)
{
    const op_row *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->label, y->label);
}

int64_t pg_tape_node_bytes(void) { return (int64_t)sizeof(pg_node); }

int64_t pg_memory_walk(pg_node *const *nodes, int64_t nn, pg_walk_charge fn, void *ctx,
                       const char **op_label, int64_t *op_nodes, int64_t *op_bytes, int64_t max_ops)
{
    op_row *rows = NULL;
    int64_t nrows = 0, caprows = 0;
    for (int64_t k = 0; k < nn; k++) {
        pg_node *n = nodes ? nodes[k] : pg_tape_node(k);
        int64_t b = (int64_t)sizeof(pg_node);
        int64_t ni = pg_node_n_inputs(n);
        for (int64_t j = 0; j < pg_node_n_tensors(n); j++) {
            pg_tensor *t = pg_node_tensor(n, j);
            if (!t) continue;
            int64_t c = fn(ctx, t, j < ni);
            if (c < 0) goto oom;
            b += c;
        }
        const char *label = (n->op && n->op[0]) ? n->op : "<closure only>";
        op_row *r = NULL;
        for (int64_t j = 0; j < nrows && !r; j++)
            if (rows[j].label == label || !strcmp(rows[j].label, label)) r = &rows[j];
        if (!r) {
            if (nrows == caprows) {
                int64_t cap = caprows ? caprows * 2 : 16;
                op_row *nr = realloc(rows, (size_t)cap * sizeof *nr);
                if (!nr) goto oom;
                rows = nr;
                caprows = cap;
            }
            r = &rows[nrows++];
            r->label = label;
            r->nodes = r->bytes = 0;
        }
        r->nodes++;
        r->bytes += b;
    }
    if (nrows > 1) qsort(rows, (size_t)nrows, sizeof *rows, row_cmp);
    for (int64_t j = 0; j < nrows && j < max_ops; j++) {
        op_label[j] = rows[j].label;
        op_nodes[j] = rows[j].nodes;
        op_bytes[j] = rows[j].bytes;
    }
    free(rows);
    return nrows;
oom:
    free(rows);
    return -1;
}

int64_t pg_tape_memory(pg_memory_totals *totals, const char **op_label, int64_t *op_nodes,
                       int64_t *op_bytes, int64_t max_ops)
{
    if (!totals) return -pg_fail(PG_STATUS_ERR_ARG, "ag_tape_memory: NULL totals");
    if (max_ops < 0 || (max_ops > 0 && (!op_label || !op_nodes || !op_bytes)))
        return -pg_fail(PG_STATUS_ERR_ARG, "ag_tape_memory: bad per-op output arrays");
    int64_t nn = pg_tape_nodes();
    walk w;
    memset(&w, 0, sizeof w);
    int64_t nrows = -1;
    if (!mark_dying(&w, nn))
        nrows = pg_memory_walk(NULL, nn, tape_charge, &w, op_label, op_nodes, op_bytes, max_ops);
    pg_ptrmap_free(&w.tensors);
    pg_ptrmap_free(&w.storages);
    pg_ptrmap_free(&w.seen);
    if (nrows < 0)
        return -pg_fail(PG_STATUS_ERR_NOMEM,
                        "ag_tape_memory: out of memory walking a tape of %lld nodes",
                        (long long)nn);
    totals->nodes = nn;
    totals->bytes_snapshots = w.snapshots;
    totals->bytes_fields = nn * (int64_t)sizeof(pg_node);
    totals->bytes_inputs = w.inputs;
    totals->bytes_gradients = 0;
    totals->bytes_total = totals->bytes_snapshots + totals->bytes_fields + totals->bytes_inputs;
    return nrows;
}

/* ---- ag_estimate_training_memory's shapes (ggmlR's rule, once for R and Python) ---- */
int pg_estimate_params(const double *dims, const int64_t *lens, int64_t n_shapes, double *params)
{
    static const char *const FN = "ag_estimate_training_memory()";
    static const char *const RULE = "each shape must be a vector of positive dimensions";
    if (n_shapes < 1 || !lens || !params)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: `shapes` must be a non-empty list of dimension vectors (or give "
                       "model and x)",
                       FN);
    const long long base = pg_index_base();
    double total = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n_shapes; i++) {
        if (lens[i] < 0)
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s; shape %lld is not numeric", FN, RULE,
                           (long long)i + base);
        if (lens[i] == 0)
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s; shape %lld is empty", FN, RULE,
                           (long long)i + base);
        double prod = 1;
        for (int64_t j = 0; j < lens[i]; j++) {
            const double d = dims[at + j];
            if (!(d > 0) || d > 1.7976931348623157e308) {
                char b[32];
                return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s; shape %lld has %s at position %lld",
                               FN, RULE, (long long)i + base, pg_fmt_num(b, sizeof b, d),
                               (long long)j + base);
            }
            prod *= d;
        }
        total += prod;
        at += lens[i];
    }
    *params = total;
    return 0;
}
