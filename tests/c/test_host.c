/* Host nodes (native/host.c): a C "front end" replays the segment
 * y = tanh(W (W x)) on the private tape (optionally with W x as an inner host node); gradients
 * must equal the plain tape's bit for bit, failures must leave the tape as it was. */
#include <math.h>
#include <string.h>
#include "check.h"

typedef struct {
    pg_tensor *w, *x; /* borrowed */
    int nested;       /* W x is an inner host node */
    int fail_at;      /* the replay number that fails (0: never) */
    int bad_shape;    /* the replay returns another shape */
    int calls, freed;
} seg_ctx;

static pg_tensor *seg_run(seg_ctx *c);

static int inner_bw(void *p)
{
    seg_ctx *c = p;
    pg_tensor *y = pg_matmul(c->w, c->x);
    int rc = y ? pg_host_replay(y) : -1;
    REL(y);
    return rc;
}

static int seg_bw(void *p)
{
    seg_ctx *c = p;
    if (++c->calls == c->fail_at) return pg_host_fail(PG_STATUS_ERR_VALUE, "segment says no");
    CHECK(pg_tape_enabled() && pg_tape_nodes() == 0 && pg_host_depth() >= 1);
    CHECK_ERR(pg_backward(c->w) == NULL, PG_STATUS_ERR_STATE, "cannot run inside an ag_checkpoint");
    pg_tensor *y = c->bad_shape ? pg_transpose(c->w) : seg_run(c);
    int rc = y ? pg_host_replay(y) : -1;
    REL(y);
    return rc;
}

static void seg_free(void *p) { ((seg_ctx *)p)->freed++; }

static pg_tensor *seg_run(seg_ctx *c)
{
    pg_tensor *h;
    if (c->nested && pg_tape_enabled()) { /* an inner checkpoint: its forward unrecorded */
        CHECK(pg_tape_stash() == 0);
        pg_tensor *v = pg_matmul(c->w, c->x);
        CHECK(pg_tape_unstash() == 0);
        h = pg_host_record(v, &c->x, 1, "inner", inner_bw, c, NULL);
        REL(v);
    } else {
        h = pg_matmul(c->w, c->x);
    }
    pg_tensor *m = pg_matmul(c->w, h);
    pg_tensor *out = pg_unary(PG_UNARY_OP_TANH, m);
    REL(h);
    REL(m);
    return out;
}

/* loss = sum(v * seg(x)) with x = u^2 (upstream op); grads of W and u, plain or checkpointed */
static void host_grads(pg_tensor *w, pg_tensor *u, pg_tensor *v, int mode, seg_ctx *c, double *gw,
                       double *gu, int *fail)
{
    pg_tape_begin();
    pg_tensor *x = pg_mul(u, u);
    c->w = w;
    c->x = x;
    pg_tensor *y;
    if (mode == 0) {
        y = seg_run(c);
    } else {
        c->nested = mode == 2;
        CHECK(pg_tape_stash() == 0);
        pg_tensor *val = seg_run(c);
        CHECK(pg_tape_unstash() == 0);
        y = pg_host_record(val, &x, 1, "checkpoint", seg_bw, c, seg_free);
        REL(val);
        CHECK(y && pg_tensor_requires_grad(y) == 1 && strcmp(pg_tensor_op(y), "checkpoint") == 0);
    }
    pg_tensor *yv = pg_mul(y, v), *l = pg_sum(yv, 0);
    REL(yv);
    pg_tape_end();
    int64_t nodes = pg_tape_nodes();
    pg_gradmap *m = pg_backward(l);
    *fail = m == NULL;
    if (m) {
        pg_tensor_read(pg_gradmap_get(m, w), gw, PG_DTYPE_F64);
        pg_tensor_read(pg_gradmap_get(m, u), gu, PG_DTYPE_F64);
        CHECK(pg_gradmap_get(m, y) != NULL && pg_gradmap_get(m, x) != NULL);
        pg_gradmap_free(m);
    }
    CHECK(pg_tape_nodes() == nodes && !pg_tape_enabled() && pg_host_depth() == 0);
    REL(l);
    REL(y);
    REL(x);
    pg_tape_clear();
}

void test_host(void)
{
    pg_tensor *w = rnd(PG_DTYPE_F64, 3, 3, 0), *u = rnd(PG_DTYPE_F64, 3, 2, 0),
              *v = rnd(PG_DTYPE_F64, 3, 2, 0);
    pg_tensor_set_requires_grad(w, 1);
    pg_tensor_set_requires_grad(u, 1);
    double gw[3][9], gu[3][6];
    int fail;
    for (int mode = 0; mode < 3; mode++) {
        seg_ctx c = {0};
        host_grads(w, u, v, mode, &c, gw[mode], gu[mode], &fail);
        CHECK(!fail);
        if (mode) CHECK(c.calls == 1 && c.freed == 1);
    }
    CHECK(memcmp(gw[0], gw[1], sizeof gw[0]) == 0 && memcmp(gu[0], gu[1], sizeof gu[0]) == 0);
    CHECK(memcmp(gw[0], gw[2], sizeof gw[0]) == 0 && memcmp(gu[0], gu[2], sizeof gu[0]) == 0);
    /* .grad: the three backwards accumulated W's gradient once each */
    double acc[9];
    pg_tensor_read(pg_tensor_grad(w), acc, PG_DTYPE_F64);
    for (int i = 0; i < 9; i++) CHECK(fabs(acc[i] - 3 * gw[0][i]) <= 1e-12 * (1 + fabs(acc[i])));
    pg_tensor_set_grad(w, NULL);
    pg_tensor_set_grad(u, NULL);

    /* a failing replay, a wrong shape: backward fails, nothing changed */
    seg_ctx c1 = {.fail_at = 1};
    host_grads(w, u, v, 1, &c1, gw[1], gu[1], &fail);
    CHECK(fail && pg_last_status() == PG_STATUS_ERR_VALUE &&
          strstr(pg_last_error(), "segment says no"));
    CHECK(pg_tensor_grad(w) == NULL && pg_tensor_grad(u) == NULL && c1.freed == 1);
    seg_ctx c2 = {.bad_shape = 1};
    host_grads(w, u, v, 1, &c2, gw[1], gu[1], &fail);
    CHECK(fail && pg_last_status() == PG_STATUS_ERR_SHAPE &&
          strstr(pg_last_error(), "must be reproducible"));
    CHECK(pg_tensor_grad(w) == NULL && c2.freed == 1);

    /* outside a host rule; tape off; more inputs than a node's slots */
    CHECK_ERR(pg_host_replay(u) != 0, PG_STATUS_ERR_STATE, "only valid inside");
    seg_ctx c3 = {0};
    CHECK_ERR(pg_host_record(u, NULL, 0, "checkpoint", seg_bw, &c3, seg_free) == NULL,
              PG_STATUS_ERR_STATE, "not recording");
    CHECK(c3.freed == 1);
    /* ag_checkpoint's refusals of its function, once for both front ends */
    CHECK_ERR(pg_ckpt_fail(NULL, 0) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              "ag_checkpoint() expects a function as its first argument.");
    CHECK_ERR(pg_ckpt_fail("numeric", 0) != 0, PG_STATUS_ERR_ARG,
              "ag_checkpoint(): fn must return an ag_tensor, got numeric");
    CHECK_ERR(pg_ckpt_fail("int", 1) != 0, PG_STATUS_ERR_ARG,
              "ag_checkpoint(): fn must return an ag_tensor (it returned int when replayed in "
              "backward())");
    pg_tensor *xs[8];
    for (int i = 0; i < 8; i++) xs[i] = rnd(PG_DTYPE_F64, 3, 2, 0);
    pg_tape_begin();
    seg_ctx c4 = {0};
    pg_tensor *y = pg_host_record(u, xs, 8, "checkpoint", seg_bw, &c4, seg_free);
    CHECK(y && pg_tape_nodes() == 1);
    pg_memory_totals tot;
    CHECK(pg_tape_memory(&tot, NULL, NULL, NULL, 0) == 1);
    CHECK(tot.bytes_inputs ==
          9 * 6 * 8); /* the 8 inputs (beyond the node's 5 slots too) and the value */
    pg_tape_end();
    REL(y);
    pg_tape_clear();
    CHECK(c4.freed == 1 && c4.calls == 0);
    for (int i = 0; i < 8; i++) REL(xs[i]);

    /* ag_compile refuses a host node by name */
    CHECK(pg_graph_record_begin() == 0);
    seg_ctx c5 = {0};
    pg_tensor *z = pg_host_record(u, &u, 1, "checkpoint", seg_bw, &c5, seg_free);
    pg_tensor *lz = pg_sum(z, 0);
    CHECK_ERR(pg_graph_record_end(lz, &u, 1, PG_GRAPH_BUILD_GRAD, NULL) == NULL,
              PG_STATUS_ERR_VALUE, "ag_checkpoint");
    CHECK(c5.freed == 1 && pg_tape_nodes() == 0 && pg_tape_depth() == 0);
    REL(lz);
    REL(z);
    REL(w);
    REL(u);
    REL(v);
}
