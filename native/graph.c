/* Static graphs: a recorded step replayed in one call (see pg_api_graph.h). */
#include <stdlib.h>
#include <string.h>
#include "pg.h"

struct pg_graph {
    int build;
    int64_t n;                  /* nodes, in recording order (owned) */
    pg_node **nodes;
    int64_t (*shape)[2];        /* each node's output shape when recorded */
    pg_tensor *out;             /* owned ref */
    int64_t n_in;
    pg_tensor **in;             /* owned refs */
    int64_t n_gt;               /* tensors that carry a gradient in backward, with their buffers */
    pg_tensor **gt, **gbuf;     /* owned refs; gbuf[i] NULL until the first run */
    int64_t n_par;              /* leaves requiring grad (parameters) among gt */
    pg_tensor **par;
    pg_gradmap *map;            /* parameters reached -> gradient buffers (after the first run) */
    pg_optim *opt;              /* borrowed */
};

int pg_graph_record_begin(void)
{
    if (pg_tape_depth() != 0)
        return pg_fail(PG_STATUS_ERR_STATE, "ag_compile: cannot record inside with_grad_tape (the step is recorded on its own tape)");
    int rc = pg_tape_begin();
    if (rc) return rc;
    pg_tape_record_all(1);
    return 0;
}

void pg_graph_record_abort(void)
{
    pg_tape_record_all(0);
    if (pg_tape_depth() > 0) pg_tape_end();
    pg_tape_clear();
}

static int has(pg_tensor **v, int64_t n, pg_tensor *t)
{
    for (int64_t i = 0; i < n; i++) if (v[i] == t) return 1;
    return 0;
}

void pg_graph_free(pg_graph *g)
{
    if (!g) return;
    for (int64_t i = g->n - 1; i >= 0; i--) { pg_count_nodes(1); pg_node_free(g->nodes[i]); }
    for (int64_t i = 0; i < g->n_in; i++) pg_tensor_release(g->in[i]);
    for (int64_t i = 0; i < g->n_gt; i++) { pg_tensor_release(g->gt[i]); pg_tensor_release(g->gbuf[i]); }
    pg_tensor_release(g->out);
    if (g->map) pg_gradmap_free(g->map);
    free(g->nodes); free(g->shape); free(g->in); free(g->gt); free(g->gbuf); free(g->par);
    free(g);
}

pg_graph *pg_graph_record_end(pg_tensor *out, pg_tensor **inputs, int64_t n_inputs, int build, pg_optim *opt)
{
    pg_tape_record_all(0);
    if (pg_tape_depth() > 0) pg_tape_end();
    const char *op = "ag_compile";
    if (build < 0 || build >= PG_GRAPH_BUILD_COUNT) { pg_tape_clear(); return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: unknown build %d", op, build); }
    if (pg_not_live(out, op, "fn's value")) { pg_tape_clear(); return NULL; }
    for (int64_t i = 0; i < n_inputs; i++) if (pg_not_live(inputs[i], op, "input")) { pg_tape_clear(); return NULL; }
    if (build != PG_GRAPH_BUILD_FORWARD && (out->ne[0] != 1 || out->ne[1] != 1)) {
        pg_tape_clear();
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "%s: build 'grad'/'opt' needs fn to return a 1x1 loss, got %s", op, pg_desc(out));
    }
    if (build == PG_GRAPH_BUILD_OPT && !opt) { pg_tape_clear(); return pg_fail_null(PG_STATUS_ERR_ARG, "%s: build 'opt' needs an optimizer", op); }
    if (build != PG_GRAPH_BUILD_FORWARD && !out->node) {
        pg_tape_clear();
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: fn's loss does not depend on any tensor that requires grad", op);
    }
    for (int64_t k = 0; k < pg_tape_nodes(); k++) {
        pg_node *nd = pg_tape_node(k);
        if (nd->host) { /* its backward is front-end code: nothing a graph could replay */
            pg_tape_clear();
            return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: fn calls ag_checkpoint(), whose segment a compiled graph cannot replay (it re-runs R/Python code in backward); compile a step without ag_checkpoint (a compiled graph keeps its activations in planned buffers) or run it eagerly",
                                op);
        }
        if (!nd->fw) {
            const char *name = nd->op;
            pg_tape_clear();
            return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: op '%s' cannot be replayed in a compiled graph (no forward rule; it reads data the graph cannot refill, or is not supported yet); run this step eagerly",
                                op, name);
        }
    }
    pg_graph *g = calloc(1, sizeof *g);
    if (!g) { pg_tape_clear(); return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", op); }
    g->build = build;
    g->opt = opt;
    g->nodes = pg_tape_take(&g->n);
    g->shape = calloc((size_t)(g->n + 1), sizeof *g->shape);
    g->in = calloc((size_t)(n_inputs + 1), sizeof *g->in);
    /* at most: every node output and every node input */
    int64_t cap = 1;
    for (int64_t k = 0; k < g->n; k++) cap += 1 + g->nodes[k]->n_in;
    g->gt = calloc((size_t)cap, sizeof *g->gt);
    g->gbuf = calloc((size_t)cap, sizeof *g->gbuf);
    g->par = calloc((size_t)cap, sizeof *g->par);
    if (!g->shape || !g->in || !g->gt || !g->gbuf || !g->par) { pg_graph_free(g); return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", op); }
    g->out = out;
    pg_tensor_retain(out);
    for (int64_t i = 0; i < n_inputs; i++) { g->in[i] = inputs[i]; pg_tensor_retain(inputs[i]); }
    g->n_in = n_inputs;
    for (int64_t k = 0; k < g->n; k++) {
        pg_node *nd = g->nodes[k];
        g->shape[k][0] = nd->out->ne[0];
        g->shape[k][1] = nd->out->ne[1];
        if (build == PG_GRAPH_BUILD_FORWARD) continue;
        for (int i = 0; i < nd->n_in; i++) {
            pg_tensor *t = nd->in[i];
            if (!pg_wants_grad(t) || has(g->gt, g->n_gt, t)) continue;
            g->gt[g->n_gt++] = t; pg_tensor_retain(t);
            if (!t->node) g->par[g->n_par++] = t;
        }
        if (pg_wants_grad(nd->out) && !has(g->gt, g->n_gt, nd->out)) { g->gt[g->n_gt++] = nd->out; pg_tensor_retain(nd->out); }
    }
    return g;
}

int pg_graph_set_input(pg_graph *g, int64_t i, const void *src, int src_dtype, int64_t nrow, int64_t ncol,
                       int64_t rstride, int64_t cstride)
{
    if (!g) return pg_fail(PG_STATUS_ERR_ARG, "compiled graph: NULL handle");
    if (i < 0 || i >= g->n_in) return pg_fail(PG_STATUS_ERR_VALUE, "compiled graph: no input %lld (it has %lld)", (long long)i, (long long)g->n_in);
    pg_tensor *t = g->in[i];
    if (nrow != t->ne[0] || ncol != t->ne[1])
        return pg_fail(PG_STATUS_ERR_SHAPE, "compiled graph: input %lld was recorded as %s but the new value is [%lldx%lld]; shapes are fixed (compile again for this shape)",
                       (long long)i + 1, pg_desc(t), (long long)nrow, (long long)ncol);
    return pg_tensor_write(t, src, src_dtype, nrow, ncol, rstride, cstride);
}

static int plan_grads(pg_graph *g)
{
    for (int64_t i = 0; i < g->n_gt; i++) {
        if (g->gbuf[i]) continue;
        pg_tensor *t = g->gt[i];
        g->gbuf[i] = pg_new(t->dtype, t->ne[0], t->ne[1], PG_MEM_CATEGORY_GRAD);
        if (!g->gbuf[i]) return -1;
    }
    return 0;
}

static void unhook(pg_graph *g)
{
    for (int64_t i = 0; i < g->n_gt; i++) {
        pg_tensor *t = g->gt[i];
        pg_tensor_release(t->bw_grad);
        t->bw_grad = NULL;
        t->bw_fresh = 0;
    }
}

static int graph_run(pg_graph *g);

/* A replay writes the gradient fields of shared parameters and steps the optimizer: it takes the
 * same process-wide lock as backward() and optimizer steps, so threads replaying graphs over
 * shared parameters (or mixing replays with eager steps) never interleave. */
int pg_graph_run(pg_graph *g)
{
    pg_grad_lock();
    int rc = graph_run(g);
    pg_grad_unlock();
    return rc;
}

static int graph_run(pg_graph *g)
{
    if (!g) return -pg_fail(PG_STATUS_ERR_ARG, "compiled graph: NULL handle");
    /* the graph must still be the one that was planned */
    for (int64_t k = 0; k < g->n; k++) {
        pg_node *nd = g->nodes[k];
        if (nd->out->ne[0] != g->shape[k][0] || nd->out->ne[1] != g->shape[k][1] || !nd->fw)
            return -pg_fail(PG_STATUS_ERR_STATE, "compiled graph: node %lld (%s) is %s, planned [%lldx%lld]",
                            (long long)k + 1, nd->op, pg_desc(nd->out), (long long)g->shape[k][0], (long long)g->shape[k][1]);
        for (int i = 0; i < nd->n_in; i++)
            if (nd->in[i] && nd->in[i]->magic != PG_TENSOR_MAGIC)
                return -pg_fail(PG_STATUS_ERR_STATE, "compiled graph: an input of node %lld (%s) is no longer alive", (long long)k + 1, nd->op);
    }
    for (int64_t k = 0; k < g->n; k++)
        if (g->nodes[k]->fw(g->nodes[k])) return -pg_last_status();
    if (g->build == PG_GRAPH_BUILD_FORWARD) return 0;

    if (plan_grads(g)) return -PG_STATUS_ERR_NOMEM;
    uint64_t ep = pg_tape_new_epoch();
    for (int64_t i = 0; i < g->n_gt; i++) {
        pg_tensor *t = g->gt[i];
        pg_tensor_release(t->bw_grad);
        pg_tensor_retain(g->gbuf[i]);
        t->bw_grad = g->gbuf[i];
        t->bw_fresh = ep;
        t->bw_epoch = 0;
    }
    int acc;
    void *seed = pg_grad_slot(g->out, &acc);
    if (!seed) { unhook(g); return -pg_last_status(); }
    PG_DISPATCH(g->out->dtype, { *(T *)seed = 1; });
    for (int64_t k = g->n - 1; k >= 0; k--) {
        pg_node *nd = g->nodes[k];
        pg_tensor *o = nd->out;
        if (o->bw_epoch != ep || !o->bw_grad) continue;
        if (nd->bw(nd, o->bw_grad)) { unhook(g); return -pg_last_status(); }
    }
    if (!g->map) { /* parameters reached (fixed by the topology) -> their buffers */
        pg_tensor **keys = malloc((size_t)(g->n_par + 1) * sizeof *keys), **vals = malloc((size_t)(g->n_par + 1) * sizeof *vals);
        int64_t m = 0;
        if (keys && vals)
            for (int64_t i = 0; i < g->n_gt; i++)
                if (!g->gt[i]->node && g->gt[i]->bw_epoch == ep) { keys[m] = g->gt[i]; vals[m] = g->gbuf[i]; m++; }
        g->map = keys && vals ? pg_gradmap_make(keys, vals, m) : NULL;
        free(keys); free(vals);
        if (!g->map) { unhook(g); return -pg_fail(PG_STATUS_ERR_NOMEM, "compiled graph: out of memory"); }
    }
    unhook(g);
    if (g->build == PG_GRAPH_BUILD_GRAD) return 0;
    return pg_optim_step_sum(g->opt, g->map); /* one map per replay: the summing variant */
}

pg_tensor *pg_graph_output(pg_graph *g) { return g ? g->out : NULL; }
pg_tensor *pg_graph_input(pg_graph *g, int64_t i) { return (g && i >= 0 && i < g->n_in) ? g->in[i] : NULL; }
pg_gradmap *pg_graph_grads(pg_graph *g) { return g ? g->map : NULL; }
int64_t pg_graph_nodes(pg_graph *g) { return g ? g->n : -1; }
const char *pg_graph_node_op(pg_graph *g, int64_t i) { return (g && i >= 0 && i < g->n) ? g->nodes[i]->op : ""; }

int pg_graph_memory(pg_graph *g, int64_t *out, int n)
{
    if (!g || !out) return pg_fail(PG_STATUS_ERR_ARG, "compiled graph memory: NULL argument");
    int64_t v[5] = {0, 0, 0, g->n, g->n_gt};
    for (int64_t k = 0; k < g->n; k++) {
        pg_node *nd = g->nodes[k];
        v[0] += (int64_t)nd->out->st->nbytes;
        for (int i = 0; i < nd->n_saved; i++) if (nd->saved[i] && !has(g->in, g->n_in, nd->saved[i])) v[1] += (int64_t)nd->saved[i]->st->nbytes;
    }
    for (int64_t i = 0; i < g->n_gt; i++) v[2] += (int64_t)(pg_numel(g->gt[i]) * (int64_t)pg_dtype_size(g->gt[i]->dtype));
    for (int i = 0; i < n && i < 5; i++) out[i] = v[i];
    return 0;
}

/* ---- memory report (pg_graph_memory_report) ---- */

typedef struct { const void **k; int64_t cap, n; } pset;

/* 1 if p was added, 0 if already there, -1 out of memory */
static int pset_add(pset *s, const void *p)
{
    if (2 * (s->n + 1) > s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 256;
        const void **k = calloc((size_t)cap, sizeof *k);
        if (!k) return -1;
        for (int64_t i = 0; i < s->cap; i++) {
            if (!s->k[i]) continue;
            int64_t j = (int64_t)((((uintptr_t)s->k[i] >> 4) * 0x9E3779B97F4A7C15ull) & (uint64_t)(cap - 1));
            while (k[j]) j = (j + 1) & (cap - 1);
            k[j] = s->k[i];
        }
        free(s->k);
        s->k = k;
        s->cap = cap;
    }
    int64_t j = (int64_t)((((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) & (uint64_t)(s->cap - 1));
    while (s->k[j]) {
        if (s->k[j] == p) return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->k[j] = p;
    s->n++;
    return 1;
}

typedef struct { const char *label; int64_t nodes, bytes; } grow_row;

static int grow_cmp(const void *a, const void *b)
{
    const grow_row *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->label, y->label);
}

int64_t pg_graph_memory_report(pg_graph *g, int64_t *totals, const char **op_label, int64_t *op_nodes,
                               int64_t *op_bytes, int64_t max_ops)
{
    if (!g || !totals) return -pg_fail(PG_STATUS_ERR_ARG, "compiled graph memory: NULL argument");
    if (max_ops < 0 || (max_ops > 0 && (!op_label || !op_nodes || !op_bytes)))
        return -pg_fail(PG_STATUS_ERR_ARG, "compiled graph memory: bad per-op output arrays");
    pset seen = {0};
    grow_row *rows = calloc((size_t)(g->n + 1), sizeof *rows);
    int64_t nrows = 0, operands = 0, planned = 0, grads = 0;
    const int64_t field = (int64_t)sizeof(pg_node);
    if (!rows) goto oom;
    for (int64_t k = 0; k < g->n; k++) {
        pg_node *nd = g->nodes[k];
        int64_t b = field;
        /* inputs made by no node of the graph are operands (weights, data, constants); node
         * outputs and saved buffers are the graph's planned buffers */
        for (int i = 0; i < nd->n_in; i++) {
            pg_tensor *t = nd->in[i];
            if (!t) continue;
            int r = pset_add(&seen, t->st);
            if (r < 0) goto oom;
            if (r) { b += (int64_t)t->st->nbytes; operands += (int64_t)t->st->nbytes; }
        }
        for (int i = 0; i <= nd->n_saved; i++) {
            pg_tensor *t = i < nd->n_saved ? nd->saved[i] : nd->out;
            if (!t) continue;
            int r = pset_add(&seen, t->st);
            if (r < 0) goto oom;
            if (r) { b += (int64_t)t->st->nbytes; planned += (int64_t)t->st->nbytes; }
        }
        const char *label = (nd->op && nd->op[0]) ? nd->op : "<closure only>";
        grow_row *row = NULL;
        for (int64_t j = 0; j < nrows && !row; j++) if (!strcmp(rows[j].label, label)) row = &rows[j];
        if (!row) { row = &rows[nrows++]; row->label = label; }
        row->nodes++;
        row->bytes += b;
    }
    for (int64_t i = 0; i < g->n_gt; i++) /* planned at the first run: the sizes they will have */
        grads += pg_numel(g->gt[i]) * (int64_t)pg_dtype_size(g->gt[i]->dtype);
    if (nrows > 1) qsort(rows, (size_t)nrows, sizeof *rows, grow_cmp);
    for (int64_t j = 0; j < nrows && j < max_ops; j++) {
        op_label[j] = rows[j].label;
        op_nodes[j] = rows[j].nodes;
        op_bytes[j] = rows[j].bytes;
    }
    totals[0] = g->n;
    totals[2] = planned;
    totals[3] = g->n * field;
    totals[4] = operands;
    totals[5] = grads;
    totals[1] = planned + totals[3] + operands + grads;
    free(rows);
    free(seen.k);
    return nrows;
oom:
    free(rows);
    free(seen.k);
    return -pg_fail(PG_STATUS_ERR_NOMEM, "compiled graph memory: out of memory walking %lld nodes", (long long)g->n);
}
