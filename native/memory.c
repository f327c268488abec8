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

static void make_exit_key(void) { exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0; }

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

/* ---- a small open-addressing map: pointer -> (count, flag) ---- */

typedef struct {
    const void *key;
    int64_t count;
    int flag;
} pm_ent;

typedef struct {
    pm_ent *e;
    int64_t cap, n;
} pmap;

static uint64_t pm_hash(const void *k) { return ((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull; }

static int pm_grow(pmap *m)
{
    int64_t cap = m->cap ? m->cap * 2 : 256;
    pm_ent *e = calloc((size_t)cap, sizeof *e);
    if (!e) return -1;
    for (int64_t i = 0; i < m->cap; i++) {
        if (!m->e[i].key) continue;
        int64_t s = (int64_t)(pm_hash(m->e[i].key) & (uint64_t)(cap - 1));
        while (e[s].key) s = (s + 1) & (cap - 1);
        e[s] = m->e[i];
    }
    free(m->e);
    m->e = e;
    m->cap = cap;
    return 0;
}

/* Entry for k; created (zeroed) when absent and create is set. NULL: absent, or out of memory
 * (*oom set). Entries stay valid until the next insertion. */
static pm_ent *pm_get(pmap *m, const void *k, int create, int *oom)
{
    if (m->cap) {
        int64_t s = (int64_t)(pm_hash(k) & (uint64_t)(m->cap - 1));
        while (m->e[s].key) {
            if (m->e[s].key == k) return &m->e[s];
            s = (s + 1) & (m->cap - 1);
        }
    }
    if (!create) return NULL;
    if (2 * (m->n + 1) > m->cap && pm_grow(m)) { *oom = 1; return NULL; }
    int64_t s = (int64_t)(pm_hash(k) & (uint64_t)(m->cap - 1));
    while (m->e[s].key) s = (s + 1) & (m->cap - 1);
    m->e[s].key = k;
    m->n++;
    return &m->e[s];
}

static void pm_free(pmap *m) { free(m->e); m->e = NULL; m->cap = m->n = 0; }

/* ---- the report ---- */

typedef struct {
    const char *label;
    int64_t nodes, bytes;
} op_row;

typedef struct {
    pmap tensors;   /* tensor -> count: references from the tape and from dying tensors; flag: dies */
    pmap storages;  /* storage -> count: references from dying tensors; flag: dies */
    pmap seen;      /* storages already charged */
    int oom;
    int64_t inputs, snapshots;
} walk;

static const char *node_label(const pg_node *n) { return (n->op && n->op[0]) ? n->op : "<closure only>"; }

/* Adds one internal reference to t and queues it for the dying check. */
static int ref_internal(walk *w, pg_tensor *t, pg_tensor ***queue, int64_t *nq, int64_t *capq)
{
    pm_ent *e = pm_get(&w->tensors, t, 1, &w->oom);
    if (!e) return -1;
    e->count++;
    if (*nq == *capq) {
        int64_t cap = *capq ? *capq * 2 : 256;
        pg_tensor **q = realloc(*queue, (size_t)cap * sizeof *q);
        if (!q) { w->oom = 1; return -1; }
        *queue = q;
        *capq = cap;
    }
    (*queue)[(*nq)++] = t;
    return 0;
}

/* Marks the tensors and storages that pg_tape_clear() would free. */
static int mark_dying(walk *w, int64_t nn)
{
    pg_tensor **q = NULL;
    int64_t nq = 0, capq = 0;
    for (int64_t k = 0; k < nn; k++) {
        pg_node *n = pg_tape_node(k);
        for (int64_t i = 0; i < pg_node_n_inputs(n); i++) /* a host node may have more than PG_MAX_IN */
            if (pg_node_input(n, i) && ref_internal(w, pg_node_input(n, i), &q, &nq, &capq)) goto fail;
        for (int i = 0; i < n->n_saved; i++)
            if (n->saved[i] && ref_internal(w, n->saved[i], &q, &nq, &capq)) goto fail;
        if (n->out && ref_internal(w, n->out, &q, &nq, &capq)) goto fail;
    }
    /* Counts only grow, so a tensor found dying stays dying; a newly dying tensor adds a
     * reference to its .grad (and a backward scratch buffer, if any), queued again. */
    for (int64_t i = 0; i < nq; i++) {
        pg_tensor *t = q[i];
        pm_ent *e = pm_get(&w->tensors, t, 0, &w->oom);
        if (e->flag || e->count != t->refcount) continue;
        e->flag = 1;
        pm_ent *s = pm_get(&w->storages, t->st, 1, &w->oom);
        if (!s) goto fail;
        s->count++;
        if (t->grad && ref_internal(w, t->grad, &q, &nq, &capq)) goto fail;
        if (t->bw_grad && ref_internal(w, t->bw_grad, &q, &nq, &capq)) goto fail;
    }
    for (int64_t i = 0; i < w->storages.cap; i++) {
        pm_ent *s = &w->storages.e[i];
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
    pm_ent *seen = pm_get(&w->seen, t->st, 0, &w->oom);
    if (!seen) {
        pm_ent *s = pm_get(&w->storages, t->st, 0, &w->oom);
        int dies = s && s->flag;
        if (depth > 0 && !dies) return 0; /* a grad kept by a gradient map is not the tape's */
        if (!pm_get(&w->seen, t->st, 1, &w->oom)) return -1;
        bytes = (int64_t)t->st->nbytes;
        if (dies) w->snapshots += bytes;
        else w->inputs += bytes;
    }
    pm_ent *e = pm_get(&w->tensors, t, 0, &w->oom);
    if (e && e->flag) {
        int64_t b1 = charge(w, t->grad, depth + 1), b2 = charge(w, t->bw_grad, depth + 1);
        if (b1 < 0 || b2 < 0) return -1;
        bytes += b1 + b2;
    }
    return bytes;
}

static int row_cmp(const void *a, const void *b)
{
    const op_row *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->label, y->label);
}

int64_t pg_tape_node_bytes(void) { return (int64_t)sizeof(pg_node); }

int64_t pg_tape_memory(int64_t *totals, const char **op_label, int64_t *op_nodes,
                       int64_t *op_bytes, int64_t max_ops)
{
    if (!totals) return -pg_fail(PG_STATUS_ERR_ARG, "ag_tape_memory: NULL totals");
    if (max_ops < 0 || (max_ops > 0 && (!op_label || !op_nodes || !op_bytes)))
        return -pg_fail(PG_STATUS_ERR_ARG, "ag_tape_memory: bad per-op output arrays");
    int64_t nn = pg_tape_nodes();
    walk w;
    memset(&w, 0, sizeof w);
    op_row *rows = NULL;
    int64_t nrows = 0, caprows = 0;
    if (mark_dying(&w, nn)) goto oom;

    const int64_t field = (int64_t)sizeof(pg_node);
    for (int64_t k = 0; k < nn; k++) {
        pg_node *n = pg_tape_node(k);
        int64_t b = field;
        for (int64_t i = 0; i < pg_node_n_inputs(n); i++) {
            int64_t c = charge(&w, pg_node_input(n, i), 0);
            if (c < 0) goto oom;
            b += c;
        }
        for (int i = 0; i < n->n_saved; i++) {
            int64_t c = charge(&w, n->saved[i], 0);
            if (c < 0) goto oom;
            b += c;
        }
        int64_t c = charge(&w, n->out, 0);
        if (c < 0) goto oom;
        b += c;

        const char *label = node_label(n);
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
    totals[0] = nn;
    totals[2] = w.snapshots;
    totals[3] = nn * field;
    totals[4] = w.inputs;
    totals[1] = totals[2] + totals[3] + totals[4];
    free(rows);
    pm_free(&w.tensors);
    pm_free(&w.storages);
    pm_free(&w.seen);
    return nrows;
oom:
    free(rows);
    pm_free(&w.tensors);
    pm_free(&w.storages);
    pm_free(&w.seen);
    return -pg_fail(PG_STATUS_ERR_NOMEM, "ag_tape_memory: out of memory walking a tape of %lld nodes", (long long)nn);
}
