/* The gradient tape (one per thread) and reverse-mode backward over it. */
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "gradmap_internal.h"

typedef struct {
    pg_node **nodes;
    int64_t n, cap;
    int depth; /* open with_grad_tape scopes */
    int enabled;
    int record_all;               /* compiled graphs: record ops even when no input requires grad */
    unsigned char *saved_enabled; /* recording flag at each open scope's begin, restored at end */
    int saved_cap;
    uint64_t epoch; /* increments per backward call; tags valid bw_grad fields */
    int used;       /* backward() ran since the last node was recorded (zero_grad may clear) */
} pg_tape;

static _Thread_local pg_tape tape;
static _Thread_local int n_stashed; /* tapes set aside by pg_tape_stash */
static uint64_t
    backward_calls; /* process-wide: backward epochs never repeat, even across threads */

/* Tensors that received a gradient in the running backward, in first-reached order. */
static _Thread_local pg_tensor **reached;
static _Thread_local int64_t n_reached, cap_reached;


void pg_node_free(pg_node *n);
static void node_free(pg_node *n) { pg_node_free(n); }

void pg_node_free(pg_node *n)
{
    if (n->out && n->out->node == n) n->out->node = NULL;
    for (int i = 0; i < n->n_in; i++) pg_tensor_release(n->in[i]);
    for (int i = 0; i < n->n_saved; i++) pg_tensor_release(n->saved[i]);
    pg_tensor_release(n->out);
    if (n->host) pg_host_free(n->host);
    pg_obj_free(n, sizeof *n);
    pg_count_nodes(-1);
}

void pg_tape_clear(void)
{
    /* newest first, so an output's node pointer is reset before older nodes drop inputs */
    for (int64_t i = tape.n - 1; i >= 0; i--) node_free(tape.nodes[i]);
    tape.n = 0;
    tape.used = 0;
    pg_seg_log_unclaimed_drop();
}

/* zero_grad()'s clear: a tape recorded since the last backward() is kept for the backward()
 * that follows (PyTorch's order: loss, zero_grad, backward, step); a used one is emptied (ggmlR's
 * order: backward, step, zero_grad). */
void pg_tape_clear_used(void)
{
    if (tape.used || tape.n == 0) pg_tape_clear();
}

int pg_tape_begin(void)
{
    if (tape.depth == tape.saved_cap) {
        int cap = tape.saved_cap ? tape.saved_cap * 2 : 16;
        unsigned char *p = realloc(tape.saved_enabled, (size_t)cap);
        if (!p) return pg_fail(PG_STATUS_ERR_NOMEM, "with_grad_tape: out of memory");
        tape.saved_enabled = p;
        tape.saved_cap = cap;
    }
    if (tape.depth == 0) pg_tape_clear();
    tape.saved_enabled[tape.depth++] = (unsigned char)tape.enabled;
    tape.enabled = 1;
    return 0;
}

int pg_tape_end(void)
{
    if (tape.depth <= 0)
        return pg_fail(PG_STATUS_ERR_STATE, "with_grad_tape: end without a matching begin");
    /* back to the state before the matching begin: an outer scope keeps recording, an
     * enclosing no-grad section stays off, and the outermost end stops recording */
    tape.enabled = --tape.depth ? tape.saved_enabled[tape.depth] : 0;
    return 0;
}

int pg_tape_depth(void) { return tape.depth; }

int pg_tape_end_to(int depth)
{
    while (tape.depth > (depth < 0 ? 0 : depth)) pg_tape_end();
    return tape.depth;
}
int pg_tape_enabled(void) { return tape.enabled; }
int64_t pg_tape_nodes(void) { return tape.n; }

int pg_tape_set_enabled(int flag)
{
    int prev = tape.enabled;
    tape.enabled = flag != 0;
    return prev;
}

static pg_node *record(const char *op, pg_bw_fn bw, pg_tensor *out, int n_in, pg_tensor **in,
                       int *err, int force)
{
    *err = 0;
    pg_seg_touch(in, n_in, n_stashed); /* a checkpoint forward's weights (version.c) */
    int any = force;
    for (int i = 0; i < n_in; i++) any |= pg_wants_grad(in[i]);
    out->requires_grad = any;
    if (!tape.enabled || (!any && !tape.record_all)) return NULL;
    if (tape.n == tape.cap) {
        int64_t cap = tape.cap ? tape.cap * 2 : 64;
        pg_node **nn = realloc(tape.nodes, (size_t)cap * sizeof *nn);
        if (!nn) {
            *err = 1;
            pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory growing the tape", op);
            return NULL;
        }
        tape.nodes = nn;
        tape.cap = cap;
    }
    pg_node *n = pg_obj_new(sizeof *n);
    if (!n) {
        *err = 1;
        pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory recording a tape node", op);
        return NULL;
    }
    n->op = op;
    n->bw = bw;
    n->n_in = n_in;
    for (int i = 0; i < n_in; i++) {
        n->in[i] = in[i];
        pg_tensor_retain(in[i]);
    }
    n->out = out;
    pg_tensor_retain(out);
    out->node = n;
    n->tape = &tape;
    for (int i = 0; i < n_in; i++) n->ver[i] = in[i] ? pg_version_observe(in[i]) : 0;
    n->ver[PG_MAX_IN] = pg_version_observe(out);
    tape.nodes[tape.n++] = n;
    tape.used = 0;
    pg_count_nodes(1);
    return n;
}

pg_node *pg_record(const char *op, pg_bw_fn bw, pg_tensor *out, int n_in, pg_tensor **in, int *err)
{
    return record(op, bw, out, n_in, in, err, 0);
}

pg_node *pg_record_forced(const char *op, pg_bw_fn bw, pg_tensor *out, int n_in, pg_tensor **in,
                          int *err)
{
    return record(op, bw, out, n_in, in, err, 1);
}

int pg_tape_record_all(int flag)
{
    int prev = tape.record_all;
    if (flag >= 0) tape.record_all = flag != 0;
    return prev;
}

pg_tensor *pg_op_run(const char *op, pg_fw_fn fw, pg_bw_fn bw, pg_tensor *out, int n_in,
                     pg_tensor **in, const double *p, const int64_t *ip, int n_saved,
                     pg_tensor **saved)
{
    pg_node tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.op = op;
    tmp.n_in = n_in;
    for (int i = 0; i < n_in; i++) tmp.in[i] = in[i];
    tmp.out = out;
    if (p) memcpy(tmp.p, p, sizeof tmp.p);
    if (ip) memcpy(tmp.ip, ip, sizeof tmp.ip);
    tmp.n_saved = n_saved;
    for (int i = 0; i < n_saved; i++) tmp.saved[i] = saved[i];
    int err = fw(&tmp) != 0;
    pg_node *n = NULL;
    if (!err) n = pg_record(op, bw, out, n_in, in, &err);
    if (err) {
        pg_tensor_release(out);
        for (int i = 0; i < n_saved; i++) pg_tensor_release(saved[i]);
        return NULL;
    }
    if (n) {
        n->fw = fw;
        memcpy(n->p, tmp.p, sizeof n->p);
        memcpy(n->ip, tmp.ip, sizeof n->ip);
        n->n_saved = n_saved;
        for (int i = 0; i < n_saved; i++) n->saved[i] = saved[i]; /* takes over the refs */
    } else {
        for (int i = 0; i < n_saved; i++) pg_tensor_release(saved[i]);
    }
    return out;
}

static _Thread_local void *scratch;
static _Thread_local size_t scratch_cap;

void *pg_scratch(size_t nbytes)
{
    if (nbytes > scratch_cap) {
        size_t cap = nbytes < 4096 ? 4096 : nbytes * 2;
        void *p = realloc(scratch, cap);
        if (!p) {
            pg_fail(PG_STATUS_ERR_NOMEM, "out of memory (scratch of %zu bytes)", nbytes);
            return NULL;
        }
        scratch = p;
        scratch_cap = cap;
    }
    return scratch;
}

int pg_node_save(pg_node *n, pg_tensor *t)
{
    if (n->n_saved >= PG_MAX_SAVED)
        return pg_fail(PG_STATUS_ERR_STATE, "%s: too many saved tensors", n->op);
    pg_tensor_retain(t);
    n->saved[n->n_saved++] = t;
    return 0;
}

static int reach(pg_tensor *t)
{
    if (n_reached == cap_reached) {
        int64_t cap = cap_reached ? cap_reached * 2 : 64;
        pg_tensor **r = realloc(reached, (size_t)cap * sizeof *r);
        if (!r) return -1;
        reached = r;
        cap_reached = cap;
    }
    pg_tensor_retain(t);
    reached[n_reached++] = t;
    return 0;
}

void *pg_grad_slot(pg_tensor *t, int *acc)
{
    if (t->bw_epoch == tape.epoch && t->bw_grad) {
        *acc = 1;
        return pg_data(t->bw_grad);
    }
    if (t->bw_fresh == tape.epoch && t->bw_grad) { /* a compiled graph's planned buffer */
        t->bw_epoch = tape.epoch;
        *acc = 0;
        return pg_data(t->bw_grad);
    }
    pg_tensor *g = pg_new(t->dtype, t->ne[0], t->ne[1], PG_MEM_CATEGORY_GRAD);
    if (!g) return NULL;
    if (reach(t)) {
        pg_tensor_release(g);
        pg_fail(PG_STATUS_ERR_NOMEM, "backward: out of memory");
        return NULL;
    }
    pg_tensor_release(t->bw_grad); /* stale buffer from an earlier, failed backward */
    t->bw_grad = g;
    t->bw_epoch = tape.epoch;
    *acc = 0;
    return pg_data(g);
}

static void reached_drop(void)
{
    for (int64_t i = 0; i < n_reached; i++) {
        pg_tensor *t = reached[i];
        pg_tensor_release(t->bw_grad);
        t->bw_grad = NULL;
        pg_tensor_release(t);
    }
    n_reached = 0;
}

/* Adds g to the leaf's .grad. The first gradient is shared with the map; later ones build a
 * new tensor, so a map returned earlier never changes under its owner. */
static int leaf_accumulate(pg_tensor *t, pg_tensor *g)
{
    if (!t->grad) {
        pg_tensor_retain(g);
        t->grad = g;
        return 0;
    }
    pg_tensor *sum = pg_new(t->dtype, t->ne[0], t->ne[1], PG_MEM_CATEGORY_GRAD);
    if (!sum) return -1;
    int64_t n = pg_numel(t);
    PG_DISPATCH(t->dtype, {
        const T *a = pg_data(t->grad);
        const T *b = pg_data(g);
        T *d = pg_data(sum);
        for (int64_t i = 0; i < n; i++) d[i] = a[i] + b[i];
    });
    pg_tensor_release(t->grad);
    t->grad = sum;
    return 0;
}

static pg_gradmap *backward_locked(pg_tensor *loss);

/* The reverse walk over this thread's tape. A host node's rule (host.c) walks a private tape
 * with this same function, re-entrantly: the loop re-reads `tape` after each rule. */
static int walk(void)
{
    for (int64_t k = tape.n - 1; k >= 0; k--) {
        pg_node *n = tape.nodes[k];
        pg_tensor *out = n->out;
        if (out->bw_epoch != tape.epoch || !out->bw_grad) continue;
        if (pg_node_check_versions(n) || n->bw(n, out->bw_grad)) return -1;
    }
    return 0;
}

/* A replay's walk (host.c): gout is added into out's slot of the running backward, then the
 * current (private) tape is walked; gradients land in the same slots as the outer walk's. */
int pg_tape_walk_from(pg_tensor *out, pg_tensor *gout)
{
    return pg_grad_add(out, gout) ? -1 : walk();
}

int pg_grad_add(pg_tensor *x, const pg_tensor *g) { return pg_grad_add_times(x, g, NULL); }

int pg_grad_add_times(pg_tensor *x, const pg_tensor *g, const pg_tensor *m)
{
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t n = pg_numel(x);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *gp = pg_data(g);
        if (m) {
            const T *mp = pg_data(m);
            PG_STORE_LOOP(acc, n, d, gp[i] * mp[i]);
        } else PG_STORE_LOOP(acc, n, d, gp[i]);
    });
    return 0;
}

int64_t pg_reached_count(void) { return n_reached; }

/* Tensors a replay made (id >= mark) leave the walk: they die with the private tape, and
 * their gradients are no one's (the caller's inputs and the segment's parameters stay). */
void pg_reached_drop_since(int64_t r0, int64_t mark)
{
    int64_t w = r0;
    for (int64_t i = r0; i < n_reached; i++) {
        pg_tensor *t = reached[i];
        if (t->id >= mark) {
            pg_tensor_release(t->bw_grad);
            t->bw_grad = NULL;
            t->bw_epoch = 0;
            pg_tensor_release(t);
        } else {
            reached[w++] = t;
        }
    }
    n_reached = w;
}

static int loss_is_input(const pg_tensor *loss)
{
    for (int64_t k = 0; k < tape.n; k++)
        for (int i = 0; i < tape.nodes[k]->n_in; i++)
            if (tape.nodes[k]->in[i] == loss) return 1;
    return 0;
}

/* Same for a tensor's .grad changed in place (the helpers with grads = NULL): the map keeps its values. */
pg_tensor *pg_grad_own(pg_tensor *t)
{
    pg_tensor *g = t->grad;
    if (!g || (g->refcount <= 1 && g->st->refcount <= 1)) return g;
    pg_tensor *c = pg_new(g->dtype, g->ne[0], g->ne[1], PG_MEM_CATEGORY_GRAD);
    if (!c) return NULL;
    memcpy(pg_data(c), pg_data(g), (size_t)pg_numel(g) * pg_dtype_size(g->dtype));
    t->grad = c;
    pg_tensor_release(g);
    return c;
}

pg_gradmap *pg_backward(pg_tensor *loss)
{
    pg_grad_lock();
    pg_gradmap *m = backward_locked(loss);
    pg_grad_unlock();
    return m;
}

static pg_gradmap *backward_locked(pg_tensor *loss)
{
    if (pg_not_live(loss, "backward()", "loss")) return NULL;
    if (pg_host_depth() > 0) /* the running walk owns the epoch and the reached set */
        return pg_fail_null(
            PG_STATUS_ERR_STATE,
            "backward(): cannot run inside an ag_checkpoint segment while backward() replays it");
    if (loss->ne[0] != 1 || loss->ne[1] != 1)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "backward(): loss must be a 1x1 tensor, got %s (reduce it with ag_sum "
                            "or ag_mean first)",
                            pg_desc(loss));
    /* a loss no op of this thread's tape produced would give a map with the loss alone */
    if (!loss->node && !loss->requires_grad)
        return pg_fail_null(
            PG_STATUS_ERR_STATE,
            "backward(): the loss %s does not require grad: nothing it was computed from "
            "requires grad (ag_param), or it was computed under ag_no_grad()",
            pg_desc(loss));
    if (!loss->node)
        return pg_fail_null(
            PG_STATUS_ERR_STATE,
            "backward(): the loss %s is not on the current tape: compute it inside "
            "with_grad_tape(), and call backward() before the tape is cleared (ag_tape_clear(), "
            "the next with_grad_tape(), or zero_grad() after a backward())",
            pg_desc(loss));
    if (loss->node->tape != &tape)
        return pg_fail_null(PG_STATUS_ERR_STATE,
                            "backward(): the loss %s was recorded on another thread's tape: call "
                            "backward() in the thread that computed it",
                            pg_desc(loss));
    tape.epoch =
        __atomic_add_fetch(&backward_calls, 1, __ATOMIC_RELAXED); /* unique across threads */
    n_reached = 0;
    int acc;
    void *seed = pg_grad_slot(loss, &acc);
    if (!seed) return NULL;
    PG_DISPATCH(loss->dtype, { *(T *)seed = 1; });
    if (walk()) {
        reached_drop();
        return NULL;
    }

    pg_gradmap *m = pg_gradmap_alloc(n_reached);
    if (!m) {
        reached_drop();
        return pg_fail_null(PG_STATUS_ERR_NOMEM,
                            "backward(): out of memory building the gradient map");
    }
    int fail = 0;
    for (int64_t i = 0; i < n_reached; i++) {
        pg_tensor *t = reached[i];
        m->keys[i] = t;
        m->ids[i] = t->id;
        m->leaf[i] = t->node == NULL;
        m->vals[i] = t->bw_grad; /* takes over the ref held by bw_grad */
        t->bw_grad = NULL;
        /* ggmlR 0.8.5+: every requires-grad input of a recorded node gets the map total once
         * (intermediates too); the loss only when it is itself some node's input */
        if (t->requires_grad && !fail && (t != loss || loss_is_input(loss)))
            fail = leaf_accumulate(t, m->vals[i]);
        pg_tensor_release(t); /* the ref held by `reached` */
    }
    m->n = n_reached;
    n_reached = 0;
    tape.used = 1;
    pg_gradmap_index(m);
    pg_count_object(0, 1);
    if (fail) {
        pg_gradmap_free(m);
        return pg_fail_null(PG_STATUS_ERR_NOMEM, "backward(): out of memory accumulating .grad");
    }
    return m;
}

/* ---- internal access for memory.c (tape reports and measurements) ---- */

pg_node *pg_tape_node(int64_t i) { return (i >= 0 && i < tape.n) ? tape.nodes[i] : NULL; }

/* Stack of tapes set aside by pg_tape_stash (declared in pg_api_memory.h). */
typedef struct pg_tape_saved {
    pg_tape t;
    struct pg_tape_saved *prev;
} pg_tape_saved;
static _Thread_local pg_tape_saved *stashed;

int pg_tape_stash_depth(void) { return n_stashed; }

int pg_tape_unstash_to(int n)
{
    while (n_stashed > (n < 0 ? 0 : n))
        if (pg_tape_unstash()) return -1;
    return 0;
}

int pg_tape_stash(void)
{
    pg_tape_saved *s = malloc(sizeof *s);
    if (!s) return pg_fail(PG_STATUS_ERR_NOMEM, "tape stash: out of memory");
    s->t = tape;
    s->prev = stashed;
    stashed = s;
    pg_seg_log_begin(++n_stashed);
    uint64_t epoch = tape.epoch;
    memset(&tape, 0, sizeof tape);
    tape.epoch = epoch;
    return 0;
}

int pg_tape_unstash(void)
{
    pg_tape_saved *s = stashed;
    if (!s) return pg_fail(PG_STATUS_ERR_STATE, "tape unstash: no tape was set aside");
    pg_tape_clear();
    free(tape.nodes);
    free(tape.saved_enabled);
    uint64_t epoch = tape.epoch;
    tape = s->t;
    if (tape.epoch < epoch) tape.epoch = epoch;
    stashed = s->prev;
    pg_seg_log_end(n_stashed--);
    free(s);
    return 0;
}

/* Thread exit (called by the destructor memory.c registers for every thread that allocates):
 * a thread that ends with nodes on its tape would otherwise leak them and every tensor they
 * hold. Drops stashed tapes, the tape and this thread's buffers. */
void pg_tape_thread_exit(void)
{
    while (stashed) pg_tape_unstash();
    pg_tape_clear();
    pg_seg_log_drop();
    free(tape.nodes);
    free(tape.saved_enabled);
    memset(&tape, 0, sizeof tape);
    free(reached);
    reached = NULL;
    n_reached = cap_reached = 0;
    free(scratch);
    scratch = NULL;
    scratch_cap = 0;
}

/* ---- for compiled graphs (graph.c) ---- */

/* Hands the tape's nodes to the caller (who frees them with pg_node_free) and empties the tape. */
pg_node **pg_tape_take(int64_t *n)
{
    pg_node **nodes = tape.nodes;
    *n = tape.n;
    tape.nodes = NULL;
    tape.n = tape.cap = 0;
    pg_count_nodes(-*n);
    return nodes;
}

uint64_t pg_tape_new_epoch(void)
{
    tape.epoch = __atomic_add_fetch(&backward_calls, 1, __ATOMIC_RELAXED);
    return tape.epoch;
}
