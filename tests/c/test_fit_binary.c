/* Classification rules in the core (native/fit_binary.c, issue 31): binary accuracy as keras'
 * binary_accuracy in pg_binary_count and in a plan's record (PROBS / LOGITS), BCE targets outside
 * [0, 1] refused by pg_fit_new, the class count against the outputs, the loss rules' codes. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static void test_binary_count(void)
{
    /* probabilities against 0/1 labels: out > 0.5 predicts 1; 0.5 itself predicts 0 */
    const double out[6] = {0.9, 0.2, 0.5, 0.7, 0.1, 0.6}, y[6] = {1, 0, 1, 0, 0, 1};
    int64_t hit = -1, nd = -1;
    CHECK(pg_binary_count(NULL, out, 1, 6, y, 1, 0.5, &hit, &nd) == 0 && hit == 4 && nd == 6);
    CHECK(pg_binary_count(NULL, out, 1, 6, y, 1, 0.0, &hit, &nd) == 0 &&
          hit == 3); /* all predict 1 */
    CHECK(pg_binary_count(NULL, out, 2, 3, y, 2, 0.5, &hit, &nd) == 0 && hit == 4 && nd == 6);
    const double soft[2] = {0.7, 0.3}; /* a target above 0.5 counts as 1 */
    CHECK(pg_binary_count(NULL, out, 1, 2, soft, 1, 0.5, &hit, &nd) == 0 && hit == 2 && nd == 2);
    const double bad[2] = {1, 2};
    CHECK_ERR(pg_binary_count(NULL, out, 1, 2, bad, 1, 0.5, &hit, &nd), PG_STATUS_ERR_VALUE,
              "ag_accuracy: binary targets must be in [0, 1] (0/1 labels), got 2 at row 1, "
              "column 2");
    CHECK_ERR(pg_binary_count(NULL, out, 1, 6, y, 2, 0.5, &hit, &nd), PG_STATUS_ERR_SHAPE,
              "output is [1x6] but y has 2 rows");
    CHECK_ERR(pg_binary_count(NULL, out, 1, 6, y, 1, NAN, &hit, &nd), PG_STATUS_ERR_VALUE,
              "threshold must be a finite number");
    CHECK_ERR(pg_binary_count(NULL, out, 1, 6, y, 1, 0.5, NULL, &nd), PG_STATUS_ERR_ARG, "NULL");
    /* ag_evaluate's metrics count here too: its errors name it (they said ag_accuracy) */
    CHECK_ERR(pg_binary_count("ag_evaluate", out, 1, 6, y, 2, 0.5, &hit, &nd), PG_STATUS_ERR_SHAPE,
              "ag_evaluate: the model's output is [1x6] but y has 2 rows");
}

static void test_accuracy(void)
{
    /* ag_accuracy's rule: a 1-output model or a threshold per element, else arg-max */
    const double p1[4] = {0.9, 0.2, 0.6, 0.4}, y1[4] = {1, 0, 0, 0};
    double acc = -1;
    CHECK(pg_accuracy("ag_accuracy", p1, 1, 4, y1, 1, 4, 0, 0, 0, &acc) == 0 && acc == 0.75);
    CHECK(pg_accuracy("ag_accuracy", p1, 1, 4, y1, 1, 4, 1, 0.65, 0, &acc) == 0 && acc == 1.0);
    const double o2[6] = {0.1, 0.9, 0.8, 0.2, 0.3, 0.7}, ids[3] = {1, 0, 0};
    CHECK(pg_accuracy("ag_accuracy", o2, 2, 3, ids, 1, 3, 0, 0, 0, &acc) == 0 &&
          fabs(acc - 2.0 / 3.0) < 1e-15);
    const double hot[6] = {0, 1, 1, 0, 0, 1}; /* a threshold: per element against 0/1 */
    CHECK(pg_accuracy("ag_accuracy", o2, 2, 3, hot, 2, 3, 1, 0.5, 1, &acc) == 0 && acc == 1.0);
    acc = -1; /* failures leave the result alone */
    CHECK_ERR(pg_accuracy("ag_accuracy", o2, 2, 3, ids, 1, 2, 0, 0, 0, &acc), PG_STATUS_ERR_SHAPE,
              "ag_accuracy: x has 3 samples but y has 2");
    CHECK_ERR(pg_accuracy("ag_accuracy", o2, 2, 3, ids, 1, 3, 0, 0, 1, &acc), PG_STATUS_ERR_ARG,
              "ag_accuracy: y must be 0-based class ids or a one-hot matrix, got booleans");
    const double far[3] = {0, 2, 0};
    CHECK_ERR(pg_accuracy("ag_accuracy", o2, 2, 3, far, 1, 3, 0, 0, 0, &acc), PG_STATUS_ERR_VALUE,
              "y must be 0-based class ids in [0, 2)");
    CHECK_ERR(pg_accuracy("ag_accuracy", p1, 1, 4, y1, 1, 4, 1, NAN, 0, &acc), PG_STATUS_ERR_VALUE,
              "threshold must be a finite number");
    CHECK_ERR(pg_accuracy("ag_accuracy", p1, 1, 4, y1, 1, 4, 0, 0, 0, NULL), PG_STATUS_ERR_ARG,
              "NULL");
    CHECK(acc == -1);
}

static void test_check_classes(void)
{
    CHECK(pg_fit_check_classes(3, 3, 1) == 0 && pg_fit_check_classes(2, 3, 0) == 0);
    CHECK(pg_fit_check_classes(5, 0, 1) == 0); /* outputs unknown: nothing to check */
    CHECK_ERR(pg_fit_check_classes(2, 3, 1), PG_STATUS_ERR_VALUE,
              "ag_fit: y's labels have 2 classes (a factor's levels, a Categorical's categories) "
              "but the model has 3 outputs; give the model one output per class (or keep every "
              "class: factor(y, levels = ...), pd.Categorical(y, categories=...))");
    CHECK_ERR(pg_fit_check_classes(4, 3, 1), PG_STATUS_ERR_VALUE,
              "outputs; give the model one output per class (unused ones count: droplevels(y), "
              "y.cat.remove_unused_categories())");
    CHECK_ERR(pg_fit_check_classes(4, 3, 0), PG_STATUS_ERR_VALUE,
              "ag_fit: y holds class ids up to 3 (4 classes) but the model has 3 outputs; ids "
              "are 0-based, in [0, 3)");
    /* the ids themselves (pg_fit_check_ids): the largest + 1, a factor's levels, R's hint */
    const double ok[4] = {0, 2, 1, 2}, big[3] = {0, 3, 1}, one[3] = {1, 3, 2};
    const double frac[3] = {0, 1.5, 9}, nan[3] = {0, NAN, 9}, neg[2] = {-1, 9};
    CHECK(pg_fit_check_ids(ok, 4, 3, -1, 1) == 0 && pg_fit_check_ids(big, 3, -1, -1, 0) == 0);
    CHECK_ERR(pg_fit_check_ids(big, 3, 3, -1, 0), PG_STATUS_ERR_VALUE,
              "ag_fit: y holds class ids up to 3 (4 classes) but the model has 3 outputs");
    CHECK_ERR(pg_fit_check_ids(one, 3, 3, -1, 1), PG_STATUS_ERR_VALUE,
              "ag_fit: y holds class ids 1..3 but the model has 3 outputs; class ids are "
              "0-based: pass as.integer(f) - 1L, or the factor itself");
    CHECK_ERR(pg_fit_check_ids(one, 3, 3, -1, 0), PG_STATUS_ERR_VALUE, "up to 3 (4 classes)");
    CHECK_ERR(pg_fit_check_ids(ok, 4, 3, 2, 0), PG_STATUS_ERR_VALUE,
              "y's labels have 2 classes (a factor's levels, a Categorical's categories) but");
    /* labels' ids 1..outputs (a first class unused): the levels' text, not R's 1-based hint */
    CHECK_ERR(pg_fit_check_ids(one, 3, 3, 4, 1), PG_STATUS_ERR_VALUE, "y's labels have 4 classes");
    CHECK(pg_fit_check_ids(frac, 3, 3, -1, 1) == 0 && pg_fit_check_ids(nan, 3, 3, -1, 1) == 0);
    CHECK(pg_fit_check_ids(neg, 2, 3, -1, 1) == 0 && pg_fit_check_ids(NULL, 0, 3, -1, 1) == 0);
    CHECK_ERR(pg_fit_check_ids(NULL, 2, 3, -1, 1), PG_STATUS_ERR_ARG, "NULL class ids");
    CHECK(pg_fit_one_based_hint(one, 3, 3) && !pg_fit_one_based_hint(one, 3, 4));
    CHECK(!pg_fit_one_based_hint(ok, 4, 2) && !pg_fit_one_based_hint(nan, 3, 9));
}

static void test_loss_codes(void)
{
    int cl = -1, pd = -1;
    CHECK(pg_fit_loss_rules(PG_FIT_LOSS_CROSS_ENTROPY, 1, &cl, &pd) == 0 &&
          cl == PG_FIT_CLASSIFY_ARGMAX);
    CHECK(pg_fit_loss_rules(PG_FIT_LOSS_BINARY_CROSS_ENTROPY, 1, &cl, &pd) == 0 &&
          cl == PG_FIT_CLASSIFY_PROBS);
    CHECK(pg_fit_loss_rules(PG_FIT_LOSS_BCE_WITH_LOGITS, 1, &cl, &pd) == 0 &&
          cl == PG_FIT_CLASSIFY_LOGITS);
    CHECK(pg_fit_loss_rules(PG_FIT_LOSS_MSE, 1, &cl, &pd) == 0 && cl == PG_FIT_CLASSIFY_NONE);
}

/* a plan's record: logits of 8 samples in batches of 4, the output given as the batch's own x */
static void test_record(void)
{
    double xv[8] = {1.0, -2.0, 0.5, -0.1, 3.0, -1.0, 0.0, 2.0}, yv[8] = {1, 0, 0, 0, 1, 1, 0, 1};
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 1, 8, xv, PG_DTYPE_F64, 1, 1);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 8, yv, PG_DTYPE_F64, 1, 1);
    pg_fit_params p = pg_fit_default_params();
    p.classify = PG_FIT_CLASSIFY_LOGITS, p.batch_size = 4, p.shuffle = 0;
    pg_fit *f = pg_fit_new(x, y, &p);
    CHECK(f && pg_fit_epoch_begin(f) == 0);
    for (int64_t b = 0; f && b < 2; b++) {
        pg_tensor *xb = NULL, *yb = NULL;
        CHECK(pg_fit_batch(f, 0, b, &xb, &yb) == 4);
        CHECK(pg_fit_record(f, 0, 1.0, xb) == 0); /* x > 0 against y: 3 + 3 hits of 8 */
        pg_tensor_release(xb);
        pg_tensor_release(yb);
    }
    pg_fit_result tr, va;
    CHECK(f && pg_fit_epoch_end(f, 1, &tr, &va) == 0);
    CHECK(tr.accuracy == 6.0 / 8.0 && tr.accuracy_unc == sqrt(0.75 * (1 - 0.75) / 7.0));
    CHECK(isnan(va.accuracy));
    pg_fit_free(f);
    p.classify = PG_FIT_CLASSIFY_PROBS;
    yv[0] = 2; /* outside [0, 1]: refused naming the loss */
    pg_tensor *y2 = pg_tensor_new(PG_DTYPE_F64, 1, 8, yv, PG_DTYPE_F64, 1, 1);
    CHECK_ERR(!pg_fit_new(x, y2, &p), PG_STATUS_ERR_VALUE,
              "ag_fit: binary_cross_entropy targets must be in [0, 1] (0/1 labels), got 2 at "
              "row 1, column 1");
    p.classify = 7;
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_VALUE, "classify code 7 is out of range");
    pg_tensor_release(x);
    pg_tensor_release(y);
    pg_tensor_release(y2);
}

/* string labels' classes (pg_labels_classes): distinct, in code-point order, NULL missing */
static void test_labels_classes(void)
{
    const char *l[6] = {"lion", NULL, "\xc3\xa9lan", "bear", "lion", "Zebra"};
    int64_t ids[6], first[6];
    CHECK(pg_labels_classes(l, 6, ids, first) == 4);
    CHECK(first[0] == 5 && first[1] == 3 && first[2] == 0 && first[3] == 2); /* Z b l \u00e9 */
    CHECK(ids[0] == 2 && ids[1] == -1 && ids[2] == 3 && ids[3] == 1 && ids[4] == 2 && ids[5] == 0);
    CHECK(pg_labels_classes(l, 0, NULL, NULL) == 0);
    CHECK(pg_labels_classes(NULL, 2, ids, first) == -PG_STATUS_ERR_ARG);
}

void test_fit_binary(void)
{
    test_labels_classes();
    test_binary_count();
    test_accuracy();
    test_check_classes();
    test_loss_codes();
    test_record();
}
