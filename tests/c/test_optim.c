/* Optimizers (SGD, momentum, Nesterov, Adam, accumulation, state get/set, clipping) and the
 * data-parallel helpers. */
#include <math.h>
#include <string.h>
#include "check.h"

/* ---- optimizers ---- */
void test_optim(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
        for (int kind = 0; kind <= 1; kind++)
            for (int variant = 0; variant < 4; variant++) {
                pg_tensor *p = rnd(dt, 3, 2, 0), *q = rnd(dt, 1, 2, 0), *nog = rnd(dt, 2, 2, 0);
                pg_tensor_set_requires_grad(p, 1);
                pg_tensor_set_requires_grad(q, 1);
                pg_tensor_set_requires_grad(nog, 1); /* never gets a gradient */
                pg_tensor *ps[4] = {p, q, p, nog};
                int64_t dropped = -1;
                pg_optim *o = pg_optim_new(kind, ps, 4, &dropped);
                CHECK(o && dropped == 1 && pg_optim_nparams(o) == 3 && pg_optim_kind(o) == kind);
                CHECK(pg_optim_set(o, "lr", 0.05) == 0 && pg_optim_get(o, "lr") == 0.05);
                if (variant == 1)
                    CHECK(pg_optim_set(o, kind ? "weight_decay" : "momentum", 0.5) == 0);
                if (variant == 2) {
                    CHECK(pg_optim_set(o, "nesterov", 1) == 0);
                    pg_optim_set(o, "momentum", 0.9);
                }
                if (variant == 3) CHECK(pg_optim_set(o, "accumulate_steps", 2) == 0);
                CHECK_ERR(pg_optim_set(o, "lr", NAN) != 0, PG_STATUS_ERR_VALUE, "nan");
                CHECK_ERR(pg_optim_set(o, "lr", -1) != 0, PG_STATUS_ERR_VALUE, ">= 0");
                CHECK_ERR(pg_optim_set(o, "beta1", 1) != 0, PG_STATUS_ERR_VALUE, "[0, 1)");
                CHECK_ERR(pg_optim_set(o, "accumulate_steps", 1.5) != 0, PG_STATUS_ERR_VALUE,
                          "integer");
                CHECK_ERR(pg_optim_set(o, "bogus", 1) != 0, PG_STATUS_ERR_VALUE, "unknown");
                CHECK_ERR(isnan(pg_optim_get(o, "bogus")), PG_STATUS_ERR_VALUE, "unknown");
                double before[4], after[4];
                pg_tensor_read(nog, before, PG_DTYPE_F64);
                for (int step = 0; step < 4; step++) {
                    CHECK(pg_tape_begin() == 0);
                    pg_tensor *pq = pg_mul(p, q), *t = pg_unary(PG_UNARY_OP_TANH, pq),
                              *l = pg_mean(t, 0);
                    pg_tape_end();
                    pg_gradmap *m = pg_backward(l);
                    CHECK(m != NULL);
                    double nrm = -1;
                    pg_tensor *cl[3] = {p, q, p};
                    CHECK(pg_clip_grad_norm(cl, 3, step % 2 ? m : NULL, 0.01, &nrm) == 0 &&
                          nrm >= 0);
                    int rc = pg_optim_step(o, step % 2 ? m : NULL);
                    CHECK(rc == (variant == 3 ? step % 2 : 1));
                    CHECK(pg_optim_zero_grad(o) == 0 && pg_tensor_grad(p) == NULL &&
                          pg_tape_nodes() == 0);
                    pg_gradmap_free(m);
                    REL(pq);
                    REL(t);
                    REL(l);
                }
                pg_tensor_read(nog, after, PG_DTYPE_F64);
                /* no gradient: skipped entirely (not even decoupled weight decay) */
                CHECK(memcmp(after, before, sizeof after) == 0);
                CHECK(pg_optim_get(o, "t") == (kind ? (variant == 3 ? 2 : 4) : 0));
                /* parameters and state slots out of range */
                CHECK(pg_optim_param(o, 0) == p && pg_optim_param(o, 3) == NULL &&
                      pg_optim_state(o, 0, 9) == NULL);
                /* a .grad of the wrong shape is refused before anything changes */
                pg_tensor *gw = rnd(dt, 3, 2, 0);
                pg_tensor_set_grad(p, gw);
                pg_tensor *gq = rnd(dt, 1, 2, 0);
                CHECK(pg_tensor_set_grad(q, gq) == 0);
                REL(gw);
                REL(gq);
                CHECK(pg_optim_step(o, NULL) >= 0);
                pg_optim_free(o);
                REL(p);
                REL(q);
                REL(nog);
            }
    pg_optim *e = pg_optim_new(1, NULL, 0, NULL); /* no parameters at all */
    CHECK(e && pg_optim_step(e, NULL) == 1 && pg_optim_zero_grad(e) == 0);
    pg_optim_free(e);
    /* issue 19: no gradient for any parameter is an error that counts nothing; ranges name the optimizer */
    pg_tensor *w = rnd(PG_DTYPE_F64, 2, 2, 0);
    pg_optim *a = pg_optim_new(1, &w, 1, NULL);
    CHECK(a != NULL);
    CHECK_ERR(pg_optim_step(a, NULL) == -PG_STATUS_ERR_STATE, PG_STATUS_ERR_STATE,
              "optimizer_adam step(): no gradient for any");
    CHECK_ERR(pg_optim_step_sum(a, NULL) == -PG_STATUS_ERR_STATE, PG_STATUS_ERR_STATE,
              "no gradient for any");
    CHECK(pg_optim_get(a, "t") == 0);
    CHECK_ERR(pg_optim_set(a, "lr", INFINITY) != 0, PG_STATUS_ERR_VALUE,
              "optimizer_adam: lr must be a finite number >= 0, got inf");
    CHECK_ERR(pg_optim_set(a, "eps", 0) != 0, PG_STATUS_ERR_VALUE,
              "eps must be a finite number > 0");
    CHECK_ERR(pg_optim_set(a, "momentum", 1) != 0, PG_STATUS_ERR_VALUE, "[0, 1)");
    double neg[4] = {1, 1, 1, -1}, zero[4] = {0, 0, 0, 0};
    const double *vals[2] = {zero, neg};
    CHECK_ERR(pg_optim_load(a, vals, 2, 1, 0) != 0, PG_STATUS_ERR_VALUE, "negative entry");
    CHECK(pg_optim_state(a, 0, 0) == NULL && pg_optim_get(a, "t") == 0); /* nothing written */
    CHECK_ERR(pg_clamp(w, NAN, 1) == NULL, PG_STATUS_ERR_VALUE, "ag_clamp: lo must be");
    pg_optim_free(a);
    REL(w);
    /* ag_fit's per-epoch statistics (stats.c, internal): ggml_opt_result_loss / _accuracy */
    double v4[4] = {1, 2, 3, 4}, w4[4] = {1, 1, 1, 1}, vw[2] = {1, 3}, m, u;
    CHECK(pg_loss_stats(v4, w4, 4, 1, &m, &u) == 0 && m == 2.5 && fabs(u - sqrt(1.25 / 3)) < 1e-15);
    CHECK(pg_loss_stats(v4, w4, 4, 0, &m, &u) == 0 && m == 10 && fabs(u - sqrt(5.0 / 3)) < 1e-15);
    CHECK(pg_loss_stats(vw, vw, 2, 1, &m, &u) == 0 && m == 2.5 && u == 1); /* weighted mean */
    CHECK(pg_loss_stats(vw, vw, 2, 0, &m, &u) == 0 && m == 4);             /* a sum: the total */
    CHECK(pg_loss_stats(v4, w4, 1, 1, &m, &u) == 0 && m == 1 && isnan(u)); /* one batch */
    CHECK(pg_loss_stats(v4, w4, 0, 1, &m, &u) == 0 && isnan(m) && isnan(u));
    CHECK(pg_acc_stats(3, 4, &m, &u) == 0 && m == 0.75 && fabs(u - sqrt(0.75 * 0.25 / 3)) < 1e-15);
    CHECK(pg_acc_stats(0, 0, &m, &u) == 0 && isnan(m) && isnan(u));
    CHECK_ERR(pg_loss_stats(v4, w4, 4, 1, NULL, &u) != 0, PG_STATUS_ERR_ARG, "NULL output");
}

/* ---- data-parallel helpers ---- */
void test_dist(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
        pg_tensor *a0 = rnd(dt, 2, 3, 0), *b0 = rnd(dt, 4, 1, 0), *a1 = rnd(dt, 2, 3, 0),
                  *b1 = rnd(dt, 4, 1, 0);
        pg_tensor *ps[4] = {a0, b0, a1, b1};
        for (int i = 0; i < 4; i++) pg_tensor_set_requires_grad(ps[i], 1);
        pg_tensor *g = rnd(dt, 2, 3, 0), *g1 = rnd(dt, 2, 3, 0), *gb = rnd(dt, 4, 1, 0);
        pg_tensor_set_grad(a0, g);
        pg_tensor_set_grad(a1, g1);
        pg_tensor_set_grad(b1, gb);
        int64_t len = pg_dist_flat_len(ps, 2, 1);
        CHECK(len == 6 + 4 + 2);
        double buf[12] = {0};
        CHECK(pg_dist_pack(ps, 2, NULL, PG_DIST_WHAT_GRAD, 1, 0.5, buf, PG_DTYPE_F64, 12) == 0);
        CHECK(buf[10] == 1 && buf[11] == 0);
        CHECK(pg_dist_unpack(ps, 2, NULL, PG_DIST_WHAT_GRAD, 1, 2.0, buf, PG_DTYPE_F64, 12) == 0);
        CHECK(pg_dist_pack(ps, 2, NULL, PG_DIST_WHAT_VALUE, 0, 1.0, buf, PG_DTYPE_F64, 12) == 0);
        CHECK_ERR(pg_dist_pack(ps, 2, NULL, PG_DIST_WHAT_VALUE, 0, 1.0, buf, PG_DTYPE_F64, 3) != 0,
                  PG_STATUS_ERR_SHAPE, "buffer");
        CHECK_ERR(pg_dist_average_replicas(ps, 2, 2, NULL) != 0, PG_STATUS_ERR_ARG, "NULL");
        pg_gradmap *none[2] = {NULL, NULL};
        CHECK(pg_dist_average_replicas(ps, 2, 2, none) == 0);
        CHECK(pg_tensor_grad(b0) != NULL); /* made from replica 1's gradient */
        CHECK(pg_dist_copy_values(&a1, &a0, 1) == 0);
        { /* R 4.2's mean() of these three (its correction pass; the plain sum / 3 ends in ...31) */
            const double x[3] = {0x1.11e82a9ec0545p-5, -0x1.4ca9822ccc94bp+5,
                                 -0x1.1f2798ea528d5p+2};
            CHECK(pg_mean_r(x, 3) == -0x1.eb0d4eff3ef3p+3);
            CHECK(isnan(pg_mean_r(x, 0)) && isnan(pg_mean_r(NULL, 3)));
            const double big[3] = {1e308, 1e308, -1e308}; /* 2e308 midway: long double holds it */
            CHECK(pg_mean_r(big, 3) == 0x1.7bbef5d3a60d5p+1021);
        }
        CHECK(pg_dist_zero_grad(ps, 4) == 0 && pg_tensor_grad(a0) == NULL);
        CHECK(pg_dist_flat_len(NULL, 2, 0) < 0);
        pg_clear_error();
        for (int i = 0; i < 4; i++) REL(ps[i]);
        REL(g);
        REL(g1);
        REL(gb);
    }
}
