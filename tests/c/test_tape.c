/* The tape (nesting, no-grad, stash, clear), gradient maps and the memory reports. */
#include <string.h>
#include "check.h"

/* ---- tape: nesting, no-grad, stash, clear with live outputs ---- */
void test_tape(void)
{
    pg_tensor *w = rnd(PG_DTYPE_F64, 3, 3, 0);
    pg_tensor_set_requires_grad(w, 1);
    CHECK(pg_tape_begin() == 0 && pg_tape_depth() == 1 && pg_tape_enabled());
    pg_tensor *y1 = pg_unary(PG_UNARY_OP_TANH, w);
    CHECK(pg_tape_nodes() == 1 && strcmp(pg_tensor_op(y1), "") != 0 && pg_tensor_is_leaf(y1) == 0);
    CHECK(pg_tape_begin() == 0 && pg_tape_depth() == 2 && pg_tape_nodes() == 1); /* nested: kept */
    int prev = pg_tape_set_enabled(0);
    pg_tensor *y2 = pg_unary(PG_UNARY_OP_EXP, y1); /* not recorded */
    CHECK(pg_tape_nodes() == 1);
    pg_tape_set_enabled(prev);
    CHECK(pg_tape_end() == 0 && pg_tape_enabled());
    CHECK(pg_tape_stash() == 0 && pg_tape_nodes() == 0 && pg_tape_depth() == 0);
    pg_tensor *y3 = pg_unary(PG_UNARY_OP_SIGMOID, w); /* recording is off on the private tape */
    CHECK(pg_tape_begin() == 0);
    pg_tensor *y4 = pg_unary(PG_UNARY_OP_SIGMOID, w);
    CHECK(pg_tape_nodes() == 1);
    CHECK(pg_tape_unstash() == 0 && pg_tape_nodes() == 1 && pg_tape_depth() == 1);
    CHECK(pg_tape_end() == 0 && !pg_tape_enabled());
    pg_memory_totals tot;
    int64_t nodes[8], bytes[8];
    const char *lab[8];
    int64_t nlab = pg_tape_memory(&tot, lab, nodes, bytes, 8);
    CHECK(nlab == 1 && tot.nodes == 1 && nodes[0] == 1 && strcmp(lab[0], "tanh") == 0);
    CHECK(pg_tape_node_bytes() > 0);
    /* the tape keeps y1 alive after its handle goes; clearing it frees everything */
    pg_tensor *s = pg_sum(y1, 0);
    REL(y1);
    pg_tape_clear();
    CHECK(pg_tape_nodes() == 0);
    REL(y2);
    REL(y3);
    REL(y4);
    REL(s);
    /* a backward over a loss no recorded op produced: an error saying why, no map, no .grad */
    pg_tensor *l = pg_sum(w, 0);
    pg_gradmap *m = NULL;
    CHECK_ERR((m = pg_backward(l)) == NULL, PG_STATUS_ERR_STATE, "is not on the current tape");
    CHECK(pg_tensor_grad(w) == NULL);
    REL(l);
    /* a map outlives its keys and the tape; looking up a dead key's address finds nothing */
    CHECK(pg_tape_begin() == 0);
    pg_tensor *h = pg_unary(PG_UNARY_OP_RELU, w), *l2 = pg_sum(h, 0);
    pg_tape_end();
    m = pg_backward(l2);
    int64_t hid = pg_tensor_id(h);
    REL(h);
    REL(l2);
    pg_tape_clear();
    CHECK(pg_gradmap_get_id(m, hid) != NULL);
    CHECK(pg_gradmap_value(m, 0) != NULL && pg_gradmap_value(m, 99) == NULL &&
          pg_gradmap_key_id(m, -1) == -1);
    /* leaf flags: w (a parameter) is a leaf; h and the loss were produced by recorded ops */
    int leaves = 0, others = 0;
    for (int64_t i = 0; i < pg_gradmap_size(m); i++) {
        if (pg_gradmap_key_is_leaf(m, i) == 1) {
            leaves++;
            CHECK(pg_gradmap_key_id(m, i) == pg_tensor_id(w));
        } else {
            others++;
            CHECK(pg_gradmap_key_is_leaf(m, i) == 0);
        }
    }
    CHECK(leaves == 1 && others == 2 && pg_gradmap_key_is_leaf(m, 99) == -1 &&
          pg_gradmap_key_is_leaf(NULL, 0) == -1);
    pg_gradmap_free(m);
    CHECK(pg_tensor_grad(w) != NULL);
    REL(w);

    /* which compiled graphs draw at replay (R syncs its stream only for those) */
    pg_tensor *x = rnd(PG_DTYPE_F64, 4, 3, 0), *ls = rnd(PG_DTYPE_F64, 4, 3, 0);
    for (int kind = 0; kind < 3; kind++) {
        CHECK(pg_graph_record_begin() == 0);
        pg_tensor *h = kind == 0 ? pg_unary(PG_UNARY_OP_TANH, x)
            : kind == 1          ? pg_dropout(x, 0.5, 0)
                                 : pg_sample_normal(x, ls);
        pg_tensor *t = h ? pg_sum(h, 0) : NULL;
        pg_graph *g = t ? pg_graph_record_end(t, &x, 1, PG_GRAPH_BUILD_FORWARD, NULL) : NULL;
        if (!g) pg_graph_record_abort();
        CHECK(g && pg_graph_draws(g) == (kind > 0));
        CHECK(g && pg_graph_dropout_masks(g) == (kind == 1));
        if (g) pg_graph_free(g);
        if (h) REL(h);
        if (t) REL(t);
    }
    CHECK(pg_graph_draws(NULL) == -1);
    REL(x);
    REL(ls);
}

/* ---- memory reports and counters ---- */
void test_memory(void)
{
    pg_memory_counts st;
    int64_t peaks[5];
    CHECK(pg_memory_stats(&st) == 0);
    pg_memory_reset_peak();
    pg_tensor *big = pg_tensor_full(PG_DTYPE_F64, 100, 100, 1.0);
    CHECK(pg_memory_stats(&st) == 0 && st.peak >= 80000 &&
          st.current[PG_MEM_CATEGORY_OTHER] >= 80000);
    CHECK(pg_memory_category_peaks(peaks, 5) == 0 && peaks[PG_MEM_CATEGORY_OTHER] >= 80000);
    pg_tensor_set_requires_grad(big, 1);
    CHECK(pg_memory_stats(&st) == 0 && st.current[PG_MEM_CATEGORY_PARAM] >= 80000);
    REL(big);
}
