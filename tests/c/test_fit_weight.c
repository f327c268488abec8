/* ag_fit(sample_weight =, class_weight =) in the core (native/fit_weight.c, fit_wloss.c): the
 * checks, the plan's weight row per batch, weights of 1 giving the unweighted losses' bits and
 * the weighted losses' gradients against central differences. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static pg_fit *plan(pg_tensor *x, pg_tensor *y, int classify)
{
    pg_fit_params p = pg_fit_default_params();
    p.batch_size = 4, p.shuffle = 0, p.classify = classify;
    return pg_fit_new(x, y, &p);
}

static void test_set_and_gather(void)
{
    double xd[16], yd[8] = {0, 1, 2, 1, 0, 2, 2, 1}, sw[8], cw[2] = {2, 0.5}, ids[2] = {0, 2};
    for (int i = 0; i < 16; i++) xd[i] = i;
    for (int i = 0; i < 8; i++) sw[i] = i + 1;
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 2, 8, xd, PG_DTYPE_F64, 1, 2);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 8, yd, PG_DTYPE_F64, 1, 1);
    pg_fit *f = plan(x, y, 1);
    CHECK(f != NULL);
    CHECK(pg_fit_batch_weights(f) == NULL && pg_last_status() == 0); /* unweighted: no error */
    CHECK_ERR(pg_fit_set_weights(f, -1, sw, 8, NULL, NULL, 0, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "ag_fit: sample_weight needs a built-in loss");
    CHECK_ERR(pg_fit_set_weights(f, PG_FIT_LOSS_MSE, NULL, 0, ids, cw, 2, -1, NULL, 0),
              PG_STATUS_ERR_VALUE, "class_weight needs class-id targets");
    CHECK_ERR(pg_fit_set_weights(f, 0, sw, 7, NULL, NULL, 0, -1, NULL, 0), PG_STATUS_ERR_SHAPE,
              "ag_fit: sample_weight has 7 values but x has 8 samples");
    sw[2] = -1;
    CHECK_ERR(pg_fit_set_weights(f, 0, sw, 8, NULL, NULL, 0, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "sample_weight must be finite and >= 0");
    sw[2] = 3;
    cw[1] = -0.5;
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, ids, cw, 2, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "class_weight must be finite and >= 0; class 2 has -0.5");
    cw[1] = NAN;
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, ids, cw, 2, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "class_weight must be finite and >= 0; class 2 has nan");
    const char *lab[3] = {"a", "b", "c"}; /* labels y: the class by its label (issue 29) */
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, ids, cw, 2, -1, lab, 3), PG_STATUS_ERR_VALUE,
              "class_weight must be finite and >= 0; class 'c' has nan");
    cw[1] = 0.5;
    const double dup[2] = {1, 1}, frac[1] = {1.5}, big[1] = {16777217}, zero[3] = {0, 0, 0};
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, dup, cw, 2, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "class_weight names a class twice; class 1 has 0.5");
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, frac, cw, 1, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "must be 0-based class ids (whole numbers >= 0); got 1.5");
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, big, cw, 1, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "class id 16777217 is above 16777216");
    const double huge[1] = {1e300}; /* shown as a number, not 301 digits */
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, huge, cw, 1, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "class_weight's class id 1e+300 is above 16777216");
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, NULL, zero, 3, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "every sample's weight (class_weight) is 0");
    /* ids beyond the run's classes (keras refuses such keys): y's largest id + 1, else the host's */
    const double far[2] = {0, 3}, four[4] = {1, 1, 1, 1};
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, far, cw, 2, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "ag_fit: class_weight's class id 3 is not a class of this run (3 classes: ids 0 "
              "to 2)");
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, NULL, four, 4, -1, NULL, 0), PG_STATUS_ERR_VALUE,
              "class id 3 is not a class of this run (3 classes");
    CHECK_ERR(pg_fit_set_weights(f, 0, NULL, 0, far, cw, 2, 2, NULL, 0), PG_STATUS_ERR_VALUE,
              "class id 3 is not a class of this run (2 classes: ids 0 to 1)");
    CHECK(pg_fit_batch_weights(f) == NULL); /* a refused call set nothing */
    CHECK(pg_fit_set_weights(f, PG_FIT_LOSS_MSE, NULL, 0, ids, cw, 0, -1, NULL, 0) ==
          0); /* empty: none */
    CHECK(pg_fit_batch_weights(f) == NULL);
    CHECK(pg_fit_set_weights(f, 0, sw, 8, ids, cw, 2, -1, NULL, 0) == 0);
    CHECK_ERR(pg_fit_set_weights(f, 0, sw, 8, ids, cw, 2, -1, NULL, 0), PG_STATUS_ERR_STATE,
              "already set");
    pg_tensor *xb, *yb;
    CHECK(pg_fit_epoch_begin(f) == 0);
    CHECK(pg_fit_batch(f, 0, 1, &xb, &yb) == 4);
    pg_tensor *wb = pg_fit_batch_weights(f);
    CHECK(wb && pg_tensor_nrow(wb) == 1 && pg_tensor_ncol(wb) == 4);
    if (wb) { /* samples 5..8: sw * cw[class] (class 1 not given: 1) */
        const double *w = pg_tensor_data(wb), want[4] = {5 * 2.0, 6 * 0.5, 7 * 0.5, 8 * 1.0};
        CHECK(memcmp(w, want, sizeof want) == 0);
    }
    REL(xb), REL(yb), REL(wb);
    pg_fit_free(f);
    double yb01[8] = {0, 1, 1, 0, 1, 0.5, 0, 1};
    pg_tensor *y01 = pg_tensor_new(PG_DTYPE_F64, 1, 8, yb01, PG_DTYPE_F64, 1, 1);
    f = plan(x, y01, 0);
    CHECK_ERR(pg_fit_set_weights(f, PG_FIT_LOSS_BCE_WITH_LOGITS, NULL, 0, ids, cw, 2, 5, NULL, 0),
              PG_STATUS_ERR_VALUE, "class id 2 is not a class of this run (2 classes: ids 0 to 1)");
    const double ids01[2] = {0, 1};
    CHECK_ERR(
        pg_fit_set_weights(f, PG_FIT_LOSS_BCE_WITH_LOGITS, NULL, 0, ids01, cw, 2, -1, NULL, 0),
        PG_STATUS_ERR_VALUE, "needs 0/1 targets; sample 5 has 0.5");
    pg_fit_free(f);
    REL(x), REL(y), REL(y01);
}

/* weights of 1: the unweighted op's value and gradient, bit for bit */
static void test_unit_weights(int loss, int dtype)
{
    pg_tensor *o = rnd(dtype, 3, 5, 0.05), *t = rnd_pos(dtype, 3, 5), *w = pg_new(dtype, 1, 5, 0);
    if (loss == PG_FIT_LOSS_BINARY_CROSS_ENTROPY || loss == PG_FIT_LOSS_BCE_WITH_LOGITS)
        PG_DISPATCH(dtype, {
            T *tv = pg_tensor_data(t);
            for (int i = 0; i < 15; i++) tv[i] = tv[i] - 0.3;
        });
    if (loss == PG_FIT_LOSS_BINARY_CROSS_ENTROPY) {
        REL(o);
        o = pg_tensor_clone(t);
        PG_DISPATCH(dtype, {
            T *ov = pg_tensor_data(o);
            for (int i = 0; i < 15; i++) ov[i] = (T)0.05 + (T)0.9 * ov[i];
        });
    }
    PG_DISPATCH(dtype, {
        T *wv = pg_tensor_data(w);
        for (int i = 0; i < 5; i++) wv[i] = 1;
    });
    pg_tensor_set_requires_grad(o, 1);
    pg_tensor *yy = (loss == PG_FIT_LOSS_MEAN || loss == PG_FIT_LOSS_SUM) ? NULL : t;
    pg_tensor *l[2];
    pg_tensor *g[2];
    for (int k = 0; k < 2; k++) {
        CHECK(pg_tape_begin() == 0);
        l[k] = k ? pg_fit_loss_weighted(loss, o, yy, w) : pg_fit_loss(loss, o, yy);
        CHECK(pg_tape_end() == 0);
        CHECK(l[k] != NULL);
        pg_gradmap *gm = l[k] ? pg_backward(l[k]) : NULL;
        g[k] = gm ? pg_gradmap_get(gm, o) : NULL;
        if (g[k]) pg_tensor_retain(g[k]);
        pg_gradmap_free(gm);
        pg_tape_clear();
    }
    if (l[0] && l[1] && loss != PG_FIT_LOSS_MEAN && loss != PG_FIT_LOSS_SUM) {
        /* mean / sum: pg_mean's own summation order; the rest the same terms, the same order */
        CHECK(read1(l[0]) == read1(l[1]));
        CHECK(g[0] && g[1] &&
              memcmp(pg_tensor_data(g[0]), pg_tensor_data(g[1]),
                     15 * (dtype == PG_DTYPE_F64 ? 8 : 4)) == 0);
    } else if (l[0] && l[1]) {
        CHECK(fabs(read1(l[0]) - read1(l[1])) <= 1e-5 * fabs(read1(l[0])));
    }
    REL(l[0]), REL(l[1]), REL(g[0]), REL(g[1]), REL(o), REL(t), REL(w);
}

static pg_tensor *wloss(pg_tensor **in, const void *ctx)
{
    const int loss = *(const int *)ctx;
    return pg_fit_loss_weighted(
        loss, in[0], (loss == PG_FIT_LOSS_MEAN || loss == PG_FIT_LOSS_SUM) ? NULL : in[1], in[2]);
}

/* class_weight's keys (pg_fit_class_keys): labels by name only, ids as numbers' text */
static void test_class_keys(void)
{
    const char *labels[3] = {"0", "b", "c"}, *keys[3] = {"c", "0", "b"}, *bad[2] = {"b", "1"};
    double ids[3];
    CHECK(pg_fit_class_keys(keys, 3, labels, 3, ids) == 0 && ids[0] == 2 && ids[1] == 0 &&
          ids[2] == 1);
    CHECK_ERR(pg_fit_class_keys(bad, 2, labels, 3, ids), PG_STATUS_ERR_VALUE,
              "ag_fit: class_weight's key '1' is not one of y's labels ('0', 'b', 'c'); with "
              "labels y, class_weight is keyed by label, not by class id");
    const char *twice[2] = {"b", "b"}, *missing[1] = {NULL};
    CHECK_ERR(pg_fit_class_keys(twice, 2, labels, 3, ids), PG_STATUS_ERR_VALUE,
              "ag_fit: class_weight names the class 'b' twice");
    CHECK_ERR(pg_fit_class_keys(missing, 1, labels, 3, ids), PG_STATUS_ERR_VALUE,
              "ag_fit: class_weight has a missing key (NA or None)");
    CHECK_ERR(pg_fit_class_keys(missing, 1, NULL, -1, ids), PG_STATUS_ERR_VALUE, "missing key");
    const char *nums[3] = {"2", "-1", "1.5"}, *text[2] = {"1", " 1"};
    CHECK(pg_fit_class_keys(nums, 3, NULL, -1, ids) == 0 && ids[0] == 2 && ids[1] == -1 &&
          ids[2] == 1.5); /* whole and >= 0: pg_fit_set_weights' rule */
    CHECK_ERR(pg_fit_class_keys(text, 2, NULL, -1, ids), PG_STATUS_ERR_VALUE,
              "ag_fit: class_weight's keys must be 0-based class ids (y holds class ids, not "
              "labels); got ' 1'");
    CHECK(pg_fit_class_keys(NULL, 0, NULL, -1, NULL) == 0);
}

void test_fit_weight(void)
{
    test_set_and_gather();
    test_class_keys();
    const int64_t row[2] = {1, 5}, col[2] = {5, 1}, mat[3] = {2, 3, 4};
    CHECK(pg_fit_weight_shape(row, 1) == 0 && pg_fit_weight_shape(row, 2) == 0 &&
          pg_fit_weight_shape(col, 2) == 0);
    CHECK_ERR(pg_fit_weight_shape(mat, 2), PG_STATUS_ERR_SHAPE,
              "ag_fit: sample_weight must be a vector of one weight per sample, got a 2x3 array");
    CHECK_ERR(pg_fit_weight_shape(mat, 3), PG_STATUS_ERR_SHAPE, "got a 2x3x4 array");
    CHECK_ERR(pg_fit_weight_shape(NULL, 0), PG_STATUS_ERR_SHAPE, "got a scalar");
    for (int loss = 0; loss < PG_FIT_LOSS_COUNT; loss++) {
        test_unit_weights(loss, PG_DTYPE_F64);
        test_unit_weights(loss, PG_DTYPE_F32);
    }
    /* gradients against central differences (f64); targets in [0.3, 1.3], weights >= 0 */
    const int codes[] = {PG_FIT_LOSS_CROSS_ENTROPY, PG_FIT_LOSS_MSE,   PG_FIT_LOSS_MEAN,
                         PG_FIT_LOSS_SUM,           PG_FIT_LOSS_HUBER, PG_FIT_LOSS_MAE};
    const int64_t shapes[6] = {3, 5, 3, 5, 1, 5};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
        gradcheck(pg_fit_loss_name(codes[i]), wloss, &codes[i], 3, shapes, 6u, 1u, PG_DTYPE_F64);
}
