/* Static graphs: a recorded step replayed in one call (see pg_api_graph.h). */
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "ptrmap.h"

struct pg_graph {
    int build;
    int64_t n; /* nodes, in recording order (owned) */
    pg_node **nodes;
    int64_t (*shape)[2]; /* each node's output shape when recorded */
    pg_tensor *out;      /* owned ref */
    int64_t n_in;
    pg_tensor **in;         /* owned refs */
    int64_t n_gt;           /* tensors that carry a gradient in backward, with their buffers */
    pg_tensor **gt, **gbuf; /* owned refs; gbuf[i] NULL until the first run */
    int64_t n_par;          /* leaves requiring grad (parameters) among gt */
    pg_tensor **par;
    pg_gradmap *map; /* parameters reached -> gradient buffers (after the first run) */
    pg_optim *opt;   /* borrowed */
    int draws;       /* 1: a replay draws from the random stream (pg_graph_draws) */
};

int pg_graph_record_begin(void)
{
    if (pg_tape_depth() != 0)
        return pg_fail(PG_STATUS_ERR_STATE,
                       "ag_compile: cannot record inside with_grad_tape (the step is recorded on "
                       "its own tape)");
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
    for (int64_t i = 0; i < n; i++)
        if (v[i] == t) return 1;
    return 0;
}

void pg_graph_free(pg_graph *g)
{
    if (!g) return;
    for (int64_t i = g->n - 1; i >= 0; i--) {
        pg_count_nodes(1);
        pg_node_free(g->nodes[i]);
    }
    for (int64_t i = 0; i < g->n_in; i++) pg_tensor_release(g->in[i]);
    for (int64_t i = 0; i < g->n_gt; i++) {
        pg_tensor_release(g->gt[i]);
        pg_tensor_release(g->gbuf[i]);
    }
    pg_tensor_release(g->out);
    if (g->map) pg_gradmap_free(g->map);
    PG_FREE_ALL(g->nodes, g->shape, g->in, g->gt, g->gbuf, g->par, g);
}

pg_graph *pg_graph_record_end(pg_tensor *out, pg_tensor **inputs, int64_t n_inputs, int build,
                              pg_optim *opt)
{
    pg_tape_record_all(0);
    if (pg_tape_depth() > 0) pg_tape_end();
    const char *op = "ag_compile";
    if (build < 0 || build >= PG_GRAPH_BUILD_COUNT) {
        pg_tape_clear();
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: unknown build %d", op, build);
    }
    if (pg_not_live(out, op, "fn's value")) {
        pg_tape_clear();
        return NULL;
    }
    for (int64_t i = 0; i < n_inputs; i++)
        if (pg_not_live(inputs[i], op, "input")) {
            pg_tape_clear();
            return NULL;
        }
    if (build != PG_GRAPH_BUILD_FORWARD && (out->ne[0] != 1 || out->ne[1] != 1)) {
        pg_tape_clear();
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: build 'grad'/'opt' needs fn to return a 1x1 loss, got %s", op,
                            pg_desc(out));
    }
    if (build == PG_GRAPH_BUILD_OPT && !opt) {
        pg_tape_clear();
        return pg_fail_null(PG_STATUS_ERR_ARG, "%s: build 'opt' needs an optimizer", op);
    }
    if (build != PG_GRAPH_BUILD_FORWARD && !out->node) {
        pg_tape_clear();
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: fn's loss does not depend on any tensor that requires grad", op);
    }
    for (int64_t k = 0; k < pg_tape_nodes(); k++) {
        pg_node *nd = pg_tape_node(k);
        if (nd->host) { /* its backward is front-end code: nothing a graph could replay */
            pg_tape_clear();
            return pg_fail_null(
                PG_STATUS_ERR_VALUE,
                "%s: fn calls ag_checkpoint(), whose segment a compiled graph cannot replay (it "
                "re-runs R/Python code in backward); compile a step without ag_checkpoint (a "
                "compiled graph keeps its activations in planned buffers) or run it eagerly",
                op);
        }
        if (!nd->fw) {
            const char *name = nd->op;
            pg_tape_clear();
            return pg_fail_null(
                PG_STATUS_ERR_VALUE,
                "%s: op '%s' cannot be replayed in a compiled graph (no forward rule; it reads "
                "data the graph cannot refill, or is not supported yet); run this step eagerly",
                op, name);
        }
    }
    pg_graph *g = calloc(1, sizeof *g);
    if (!g) {
        pg_tape_clear();
        return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", op);
    }
    g->build = build;
    g->opt = opt;
    g->nodes = pg_tape_take(&g->n);
    for (int64_t k = 0; k < g->n; k++) /* dropout masks, attention dropout, reparameterised draws */
        g->draws |= !strcmp(g->nodes[k]->op, "dropout") || !strcmp(g->nodes[k]->op, "randn") ||
            (!strcmp(g->nodes[k]->op, "mha_heads") && g->nodes[k]->ip[2]);
    g->shape = calloc((size_t)(g->n + 1), sizeof *g->shape);
    g->in = calloc((size_t)(n_inputs + 1), sizeof *g->in);
    /* at most: every node output and every node input */
    int64_t cap = 1;
    for (int64_t k = 0; k < g->n; k++) cap += 1 + g->nodes[k]->n_in;
    g->gt = calloc((size_t)cap, sizeof *g->gt);
    g->gbuf = calloc((size_t)cap, sizeof *g->gbuf);
    g->par = calloc((size_t)cap, sizeof *g->par);
    if (!g->shape || !g->in || !g->gt || !g->gbuf || !g->par) {
        pg_graph_free(g);
        return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", op);
    }
    g->out = out;
    pg_tensor_retain(out);
    for (int64_t i = 0; i < n_inputs; i++) {
        g->in[i] = inputs[i];
        pg_tensor_retain(inputs[i]);
    }
    g->n_in = n_inputs;
    for (int64_t k = 0; k < g->n; k++) {
        pg_node *nd = g->nodes[k];
        g->shape[k][0] = nd->out->ne[0];
        g->shape[k][1] = nd->out->ne[1];
        if (build == PG_GRAPH_BUILD_FORWARD) continue;
        for (int i = 0; i < nd->n_in; i++) {
            pg_tensor *t = nd->in[i];
            if (!pg_wants_grad(t) || has(g->gt, g->n_gt, t)) continue;
            g->gt[g->n_gt++] = t;
            pg_tensor_retain(t);
            if (!t->node) g->par[g->n_par++] = t;
        }
        if (pg_wants_grad(nd->out) && !has(g->gt, g->n_gt, nd->out)) {
            g->gt[g->n_gt++] = nd->out;
            pg_tensor_retain(nd->out);
        }
    }
    return g;
}

int pg_graph_set_input(pg_graph *g, int64_t i, const void *src, int src_dtype, int64_t nrow,
                       int64_t ncol, int64_t rstride, int64_t cstride)
{
    if (!g) return pg_fail(PG_STATUS_ERR_ARG, "compiled graph: NULL handle");
    if (i < 0 || i >= g->n_in)
        return pg_fail(PG_STATUS_ERR_VALUE, "compiled graph: no input %lld (it has %lld)",
                       (long long)i, (long long)g->n_in);
    pg_tensor *t = g->in[i];
    if (nrow != t->ne[0] || ncol != t->ne[1])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "compiled graph: input %lld was recorded as %s but the new value is "
                       "[%lldx%lld]; shapes are fixed (compile again for this shape)",
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
int pg_graph_run(pg_graph *g) { PG_GRAD_LOCKED(graph_run(g)); }

static int graph_run(pg_graph *g)
{
    if (!g) return -pg_fail(PG_STATUS_ERR_ARG, "compiled graph: NULL handle");
    /* the graph must still be the one that was planned */
    for (int64_t k = 0; k < g->n; k++) {
        pg_node *nd = g->nodes[k];
        if (nd->out->ne[0] != g->shape[k][0] || nd->out->ne[1] != g->shape[k][1] || !nd->fw)
            return -pg_fail(PG_STATUS_ERR_STATE,
                            "compiled graph: node %lld (%s) is %s, planned [%lldx%lld]",
                            (long long)k + 1, nd->op, pg_desc(nd->out), (long long)g->shape[k][0],
                            (long long)g->shape[k][1]);
        for (int i = 0; i < nd->n_in; i++)
            if (nd->in[i] && nd->in[i]->magic != PG_TENSOR_MAGIC)
                return -pg_fail(PG_STATUS_ERR_STATE,
                                "compiled graph: an input of node %lld (%s) is no longer alive",
                                (long long)k + 1, nd->op);
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
    if (!seed) {
        unhook(g);
        return -pg_last_status();
    }
    PG_DISPATCH(g->out->dtype, { *(T *)seed = 1; });
    for (int64_t k = g->n - 1; k >= 0; k--) {
        pg_node *nd = g->nodes[k];
        pg_tensor *o = nd->out;
        if (o->bw_epoch != ep || !o->bw_grad) continue;
        if (nd->bw(nd, o->bw_grad)) {
            unhook(g);
            return -pg_last_status();
        }
    }
    if (!g->map) { /* parameters reached (fixed by the topology) -> their buffers */
        pg_tensor **keys = malloc((size_t)(g->n_par + 1) * sizeof *keys),
                  **vals = malloc((size_t)(g->n_par + 1) * sizeof *vals);
        int64_t m = 0;
        if (keys && vals)
            for (int64_t i = 0; i < g->n_gt; i++)
                if (!g->gt[i]->node && g->gt[i]->bw_epoch == ep) {
                    keys[m] = g->gt[i];
                    vals[m] = g->gbuf[i];
                    m++;
                }
        g->map = keys && vals ? pg_gradmap_make(keys, vals, m) : NULL;
        free(keys);
        free(vals);
        if (!g->map) {
            unhook(g);
            return -pg_fail(PG_STATUS_ERR_NOMEM, "compiled graph: out of memory");
        }
    }
    unhook(g);
    if (g->build == PG_GRAPH_BUILD_GRAD) return 0;
    return pg_optim_step_sum(g->opt, g->map); /* one map per replay: the summing variant */
}

pg_tensor *pg_graph_output(pg_graph *g) { return g ? g->out : NULL; }
pg_tensor *pg_graph_input(pg_graph *g, int64_t i)
{
    return (g && i >= 0 && i < g->n_in) ? g->in[i] : NULL;
}
pg_gradmap *pg_graph_grads(pg_graph *g) { return g ? g->map : NULL; }
int64_t pg_graph_nodes(pg_graph *g) { return g ? g->n : -1; }
const char *pg_graph_node_op(pg_graph *g, int64_t i)
{
    return (g && i >= 0 && i < g->n) ? g->nodes[i]->op : "";
}

int pg_graph_draws(pg_graph *g) { return g ? g->draws : -1; }

int64_t pg_graph_dropout_masks(pg_graph *g)
{
    if (!g) return -1;
    int64_t n = 0;
    for (int64_t i = 0; i < g->n; i++) {
        const pg_node *nd = g->nodes[i];
        if (!strcmp(nd->op, "dropout")) n++;
        else if (!strcmp(nd->op, "mha_heads") && nd->ip[2]) n += nd->ip[0];
    }
    return n;
}

/* bytes of the planned gradient buffers: the sizes they have (or will have at the first run) */
static int64_t grad_bytes(const pg_graph *g)
{
    int64_t b = 0;
    for (int64_t i = 0; i < g->n_gt; i++)
        b += pg_numel(g->gt[i]) * (int64_t)pg_dtype_size(g->gt[i]->dtype);
    return b;
}

int pg_graph_memory(pg_graph *g, pg_graph_buffers *out)
{
    if (!g || !out) return pg_fail(PG_STATUS_ERR_ARG, "compiled graph memory: NULL argument");
    out->bytes_outputs = out->bytes_saved = 0;
    for (int64_t k = 0; k < g->n; k++) {
        pg_node *nd = g->nodes[k];
        out->bytes_outputs += (int64_t)nd->out->st->nbytes;
        for (int i = 0; i < nd->n_saved; i++)
            if (nd->saved[i] && !has(g->in, g->n_in, nd->saved[i]))
                out->bytes_saved += (int64_t)nd->saved[i]->st->nbytes;
    }
    out->bytes_gradients = grad_bytes(g);
    out->nodes = g->n;
    out->gradients = g->n_gt;
    return 0;
}

/* ---- memory report (pg_graph_memory_report): memory.c's walk, each storage charged once ---- */

typedef struct {
    pg_ptrmap seen;
    int64_t operands, planned;
} graph_walk;

/* inputs made by no node of the graph are operands (weights, data, constants); node outputs and
 * saved buffers are the graph's planned buffers */
static int64_t graph_charge(void *ctx, pg_tensor *t, int input)
{
    graph_walk *w = ctx;
    int r = pg_ptrmap_add(&w->seen, t->st);
    if (r <= 0) return r;
    int64_t b = (int64_t)t->st->nbytes;
    if (input) w->operands += b;
    else w->planned += b;
    return b;
}

int64_t pg_graph_memory_report(pg_graph *g, pg_memory_totals *totals, const char **op_label,
                               int64_t *op_nodes, int64_t *op_bytes, int64_t max_ops)
{
    if (!g || !totals) return -pg_fail(PG_STATUS_ERR_ARG, "compiled graph memory: NULL argument");
    if (max_ops < 0 || (max_ops > 0 && (!op_label || !op_nodes || !op_bytes)))
        return -pg_fail(PG_STATUS_ERR_ARG, "compiled graph memory: bad per-op output arrays");
    graph_walk w = {{0}, 0, 0};
    int64_t nrows =
        pg_memory_walk(g->nodes, g->n, graph_charge, &w, op_label, op_nodes, op_bytes, max_ops);
    pg_ptrmap_free(&w.seen);
    if (nrows < 0)
        return -pg_fail(PG_STATUS_ERR_NOMEM,
                        "compiled graph memory: out of memory walking %lld nodes", (long long)g->n);
    totals->nodes = g->n;
    totals->bytes_snapshots = w.planned;
    totals->bytes_fields = g->n * (int64_t)sizeof(pg_node);
    totals->bytes_inputs = w.operands;
    totals->bytes_gradients = grad_bytes(g);
    totals->bytes_total = w.planned + totals->bytes_fields + w.operands + totals->bytes_gradients;
    return nrows;
}
