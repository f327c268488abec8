/* ag_fit's data and display arguments (fit_data.c): validation_data appended by pg_fit_new, the
 * verbose levels, the distributed / static flags and resume_from's text. */
#include <string.h>
#include "check.h"

static int64_t live(void)
{
    pg_memory_counts m;
    return pg_memory_stats(&m) == 0 ? m.live_tensors : -1;
}

static void test_join_plan(void)
{
    double xd[2 * 8], yd[8], xvd[2 * 3], yvd[3];
    for (int i = 0; i < 16; i++) xd[i] = i;
    for (int i = 0; i < 8; i++) yd[i] = i;
    for (int i = 0; i < 6; i++) xvd[i] = 100 + i;
    for (int i = 0; i < 3; i++) yvd[i] = 8 + i;
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 2, 8, xd, PG_DTYPE_F64, 1, 2);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 8, yd, PG_DTYPE_F64, 1, 1);
    pg_tensor *xv = pg_tensor_new(PG_DTYPE_F64, 2, 3, xvd, PG_DTYPE_F64, 1, 2);
    pg_tensor *yv = pg_tensor_new(PG_DTYPE_F64, 1, 3, yvd, PG_DTYPE_F64, 1, 1);
    pg_rng *r = pg_rng_new_seeded(3);
    pg_fit_params p = pg_fit_default_params();
    CHECK(p.xv == NULL && p.yv == NULL);
    double vs = 0;
    int64_t sx[2] = {2, 8}, sy[2] = {1, 8}, sxv[2] = {2, 3}, syv[2] = {1, 3};
    CHECK(pg_fit_val_join(sx, sy, sxv, syv, 0, &vs) == 0);
    p.batch_size = 2, p.val_split = vs, p.rng = r, p.xv = xv, p.yv = yv;
    const int64_t before = live();
    int32_t s0[PG_RNG_STATE_LEN], s1[PG_RNG_STATE_LEN];
    CHECK(pg_rng_get_state(r, s0) == 0);
    pg_fit *f = pg_fit_new(x, y, &p);
    CHECK(f && pg_rng_get_state(r, s1) == 0 && !memcmp(s0, s1, sizeof s0)); /* split fixed */
    pg_fit_dims d;
    CHECK(pg_fit_sizes(f, &d) == 0 && d.n == 11 && d.n_train == 8 && d.n_val == 3);
    CHECK(d.n_val_batches == 2 && d.n_batches == 4);
    pg_tensor *xb = NULL, *yb = NULL;
    CHECK(pg_fit_epoch_begin(f) == 0 && pg_fit_batch(f, 1, 0, &xb, &yb) == 2);
    const double *v = pg_data(xb), *w = pg_data(yb);
    CHECK(v[0] == 100 && v[1] == 101 && v[2] == 102 && v[3] == 103 && w[0] == 8 && w[1] == 9);
    REL(xb), REL(yb);
    CHECK(pg_fit_batch(f, 1, 1, &xb, &yb) == 1);
    v = pg_data(xb), w = pg_data(yb);
    CHECK(v[0] == 104 && v[1] == 105 && w[0] == 10);
    REL(xb), REL(yb);
    pg_fit_free(f);
    CHECK(live() == before); /* the joined tensors go with the plan */
    /* failures: the val_join rules on the tensors, the dtype; nothing made, the inputs alike */
    p.yv = NULL;
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_ARG,
              "ag_fit: validation_data needs targets exactly when the training data have them "
              "(training y given, validation y absent)");
    pg_tensor *xv1 = pg_tensor_new(PG_DTYPE_F64, 3, 3, NULL, PG_DTYPE_F64, 1, 3);
    p.xv = xv1, p.yv = yv;
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_SHAPE,
              "ag_fit: validation_data x has 3 features (rows), x has 2");
    pg_tensor *xv32 = pg_tensor_new(PG_DTYPE_F32, 2, 3, xvd, PG_DTYPE_F64, 1, 2);
    p.xv = xv32;
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_DTYPE,
              "ag_fit: validation_data is [2x3] f32 but x is [2x8] f64; give both in the model's "
              "dtype");
    REL(xv1), REL(xv32);
    CHECK(live() == before);
    CHECK(((const double *)pg_data(x))[15] == 15 && pg_tensor_check(x) == 0);
    /* no targets: x alone joined; the non-finite check names validation_data's columns */
    xvd[5] = 1.0 / 0.0;
    pg_tensor *xvi = pg_tensor_new(PG_DTYPE_F64, 2, 3, xvd, PG_DTYPE_F64, 1, 2);
    p.xv = xvi, p.yv = NULL;
    CHECK_ERR(!pg_fit_new(x, NULL, &p), PG_STATUS_ERR_VALUE,
              "ag_fit: validation_data x has 1 non-finite value (NaN or Inf), the first at row 2, "
              "column 3");
    p.xv = xv;
    f = pg_fit_new(x, NULL, &p);
    CHECK(f && pg_fit_sizes(f, &d) == 0 && d.n == 11 && d.n_val == 3);
    pg_fit_free(f);
    REL(xvi), REL(x), REL(y), REL(xv), REL(yv);
    pg_rng_free(r);
}

static void test_verbosity(void)
{
    int m = -1;
    CHECK(pg_fit_verbosity(1, 0, "0", 0, &m) == 0 && m == 0);
    CHECK(pg_fit_verbosity(1, 1, "1", 1, &m) == 0 && m == 1);
    CHECK(pg_fit_verbosity(1, 2.0, "2", 0, &m) == 0 && m == 2);
    m = 7;
    CHECK_ERR(pg_fit_verbosity(1, 3, "3", 0, &m), PG_STATUS_ERR_VALUE,
              "ag_fit: verbose must be 0 (silent), 1 (progress bar), 2 (one line per epoch), "
              "\"auto\" or None, got 3");
    CHECK(m == 7);
    CHECK_ERR(pg_fit_verbosity(1, 1.5, "1.5", 1, &m), PG_STATUS_ERR_VALUE, "or NULL, got 1.5");
    CHECK_ERR(pg_fit_verbosity(1, 0.0 / 0.0, "NaN", 0, &m), PG_STATUS_ERR_VALUE, "got NaN");
    CHECK_ERR(pg_fit_verbosity(0, 1, "'1'", 0, &m), PG_STATUS_ERR_VALUE, "got '1'");
    CHECK_ERR(pg_fit_verbosity(1, 1, "1", 0, NULL), PG_STATUS_ERR_ARG, "NULL");
    CHECK(m == 7);
}

static void test_flags(void)
{
    CHECK(pg_fit_flags_check(1, 1, 0) == 0);
    CHECK_ERR(pg_fit_flags_check(0, 0, 0), PG_STATUS_ERR_ARG,
              "ag_fit: distributed must be True or False");
    CHECK(pg_fit_flags_check(0, 1, 1) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(), "ag_fit: distributed must be TRUE or FALSE"));
    CHECK(pg_fit_flags_check(1, 0, 0) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(), "ag_fit: static must be True, False or None"));
    CHECK(pg_fit_flags_check(1, 0, 1) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(), "ag_fit: static must be TRUE, FALSE or NULL"));
    CHECK(pg_fit_resume_from_fail("int 3") == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(), "ag_fit: resume_from must be a file name, got int 3"));
    CHECK(pg_fit_resume_from_fail(NULL) == PG_STATUS_ERR_ARG);
    pg_clear_error();
}

static void test_kind_fail(void)
{
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_VALIDATION_DATA, "list", 0, 0) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(),
                  "ag_fit: validation_data must be a tuple (x_val, y_val), "
                  "(x_val,) or an ag_dataloader, got list"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_VALIDATION_DATA, "numeric", 0, 1) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(),
                  "ag_fit: validation_data must be a list (x_val, y_val), "
                  "(x_val) or an ag_dataloader, got numeric"));
    CHECK(
        pg_fit_kind_fail(PG_FIT_KIND_LOSS, "3", 0, 0) == PG_STATUS_ERR_VALUE &&
        !strcmp(pg_last_error(),
                "ag_fit: loss must be a loss name such as 'mse' or a callable(output, y), got 3"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_LOSS, "NA", 0, 1) == PG_STATUS_ERR_VALUE &&
          !strcmp(pg_last_error(),
                  "ag_fit: loss must be a loss name such as \"mse\" or a "
                  "function(output, y), got NA"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_OPT_PARAMS, "list", 4, 0) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(),
                  "ag_fit: opt_params(epoch) must return a dict, got list at "
                  "epoch 4"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_OPT_PARAMS, "numeric", 2, 1) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(),
                  "ag_fit: opt_params(epoch) must return a named list, got "
                  "numeric at epoch 2"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_OPT_PARAMS_FN, "", 0, 0) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(), "ag_fit: opt_params must be a callable(epoch) -> dict or None"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_MODEL, "list", 0, 1) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(), "ag_fit: model must have parameters(), got list"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_NO_PARAMS, "", 0, 0) == PG_STATUS_ERR_VALUE &&
          !strcmp(pg_last_error(), "ag_fit: the model has no parameters to train"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_CALLBACKS, "int", 0, 0) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(),
                  "ag_fit: callbacks must be a list of callbacks or functions, got int"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_CALLBACK, "int", 0, 0) == PG_STATUS_ERR_ARG &&
          !strcmp(pg_last_error(),
                  "ag_fit: callbacks must be Callback objects or functions, got int"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_CALLBACK, "numeric", 0, 1) == PG_STATUS_ERR_ARG &&
          strstr(pg_last_error(), "ag_early_stopping() objects, lists/environments with"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_LOSS_VALUE, "float", 0, 0) == PG_STATUS_ERR_VALUE &&
          !strcmp(pg_last_error(), "ag_fit: the loss must be a 1x1 ag_tensor, got float"));
    CHECK(pg_fit_kind_fail(PG_FIT_KIND_LOSS_VALUE, "numeric", 0, 1) == PG_STATUS_ERR_VALUE &&
          !strcmp(pg_last_error(), "ag_fit: the loss must be a 1x1 ag_tensor, got numeric"));
    CHECK_ERR(pg_fit_kind_fail(9, NULL, 0, 0), PG_STATUS_ERR_ARG, "unknown argument kind 9");
}

/* the [features, n] rule (pg_fit_cols) and ag_fit's targets (pg_fit_targets) */
static void test_cols_targets(void)
{
    int64_t d[3] = {2, 3, 4}, r = 0, n = 0;
    CHECK(pg_fit_cols("ag_fit", "x", d, 1, 1, &r, &n) == 0 && r == 1 && n == 2);
    CHECK(pg_fit_cols("ag_fit", "x", d, 2, 1, &r, &n) == 0 && r == 2 && n == 3);
    const int64_t none[2] = {2, 0};
    CHECK(pg_fit_cols("ag_fit", "x", none, 2, 0, &r, &n) == 0 && r == 2 && n == 0);
    CHECK_ERR(pg_fit_cols("ag_predict", "x", none, 2, 1, &r, &n), PG_STATUS_ERR_SHAPE,
              "ag_predict: x has no samples");
    CHECK_ERR(pg_fit_cols("ag_predict", "x", d, 3, 0, &r, &n), PG_STATUS_ERR_SHAPE,
              "ag_predict: x must be a [features, n] matrix (samples are columns), got a 2x3x4 "
              "array");
    CHECK_ERR(pg_fit_cols("ag_fit", "y", d, 0, 0, &r, &n), PG_STATUS_ERR_SHAPE,
              "ag_fit: y must be a [features, n] matrix (samples are columns), got a scalar");
    const int64_t col[2] = {3, 1}, mat[2] = {2, 3};
    CHECK(pg_labels_shape(d, 1) == 0 && pg_labels_shape(col, 2) == 0);
    CHECK_ERR(pg_labels_shape(mat, 2), PG_STATUS_ERR_VALUE,
              "ag_fit: labels y must be one label per sample (a vector), got a 2x3 array");
    CHECK_ERR(pg_labels_shape(d, 0), PG_STATUS_ERR_VALUE, "got a scalar");
    const double ids[3] = {0, 2, 4}, one[3] = {1, 2, 3};
    CHECK(pg_fit_targets(2, 3, 1, 3, ids, PG_FIT_CLASSIFY_ARGMAX, -1, -1, 0, "x.T", "y.T", NULL) ==
          0);
    CHECK(pg_fit_targets(2, 3, 1, 3, ids, PG_FIT_CLASSIFY_NONE, 3, -1, 0, "x.T", "y.T", NULL) == 0);
    CHECK_ERR(pg_fit_targets(2, 3, 1, 3, ids, PG_FIT_CLASSIFY_ARGMAX, 3, -1, 0, "x.T", "y.T", NULL),
              PG_STATUS_ERR_VALUE, "ag_fit:");
    CHECK_ERR(
        pg_fit_targets(2, 3, 1, 3, one, PG_FIT_CLASSIFY_ARGMAX, 3, -1, 1, "t(x)", "t(y)", NULL),
        PG_STATUS_ERR_VALUE, "y holds class ids 1..3 but the model has 3 outputs");
    CHECK_ERR(pg_fit_targets(2, 3, 1, 2, ids, PG_FIT_CLASSIFY_ARGMAX, 3, -1, 0, "x.T", "y.T", NULL),
              PG_STATUS_ERR_SHAPE, "ag_fit:"); /* the samples first */
    /* class_weight's classes: the outputs when known, else the labels', else -1 (y's) */
    int64_t k = 0;
    const double lab[3] = {0, 1, 1};
    CHECK(pg_fit_targets(2, 3, 1, 3, lab, PG_FIT_CLASSIFY_ARGMAX, 4, -1, 0, "x.T", "y.T", &k) ==
              0 &&
          k == 4);
    CHECK(pg_fit_targets(2, 3, 1, 3, lab, PG_FIT_CLASSIFY_ARGMAX, -1, 2, 0, "x.T", "y.T", &k) ==
              0 &&
          k == 2);
    CHECK(pg_fit_targets(2, 3, 1, 3, lab, PG_FIT_CLASSIFY_NONE, -1, -1, 0, "x.T", "y.T", &k) == 0 &&
          k == -1);
    /* y's rows against the outputs for a built-in loss compared element by element */
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_MSE, NULL, 0, 3, NULL, 0, 3) == 0);
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_MSE, NULL, 0, 1, NULL, 0, -1) ==
          0);                                                     /* outputs unknown */
    CHECK(pg_fit_outputs_check(-1, NULL, 0, 1, NULL, 0, 3) == 0); /* a loss function */
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_MEAN, NULL, 0, 1, NULL, 0, 3) == 0); /* y unused */
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_SUM, NULL, 0, 2, NULL, 0, 3) == 0);
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, NULL, 0, 1, NULL, 0, 3) ==
          0); /* class ids */
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, NULL, 0, 3, NULL, 0, 3) ==
          0); /* one-hot */
    CHECK_ERR(pg_fit_outputs_check(PG_FIT_LOSS_MSE, NULL, 0, 1, NULL, 0, 3), PG_STATUS_ERR_SHAPE,
              "ag_fit: y has 1 row but the model gives 3 outputs per sample; the \"mse\" loss "
              "needs y as [3, n] (one row per output)");
    CHECK_ERR(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, NULL, 0, 2, NULL, 0, 3),
              PG_STATUS_ERR_SHAPE,
              "the \"cross_entropy\" loss needs class ids (one row) or y as [3, n]");
    CHECK_ERR(pg_fit_outputs_check(PG_FIT_LOSS_BCE_WITH_LOGITS, NULL, 0, 2, NULL, 0, 1),
              PG_STATUS_ERR_SHAPE, "y has 2 rows but the model gives 1 output per sample");
    /* the metrics that compare element by element, whatever the loss (ids, a function) */
    const int reg[2] = {PG_METRIC_AUC, PG_METRIC_RMSE}, cls[1] = {PG_METRIC_F1};
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, cls, 1, 1, NULL, 0, 3) == 0);
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, reg, 2, 1, NULL, 0, -1) ==
          0); /* unknown */
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_MSE, reg, 2, 3, NULL, 0, 3) == 0);
    CHECK_ERR(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, reg, 2, 1, NULL, 0, 3),
              PG_STATUS_ERR_SHAPE,
              "ag_fit: y has 1 row but the model gives 3 outputs per sample; the \"rmse\" metric "
              "needs y as [3, n] (one row per output)");
    CHECK_ERR(pg_fit_outputs_check(-1, reg, 2, 2, NULL, 0, 3), PG_STATUS_ERR_SHAPE,
              "\"rmse\" metric");
    CHECK_ERR(pg_fit_outputs_check(PG_FIT_LOSS_MAE, reg, 2, 2, NULL, 0, 3), PG_STATUS_ERR_SHAPE,
              "\"mae\" loss"); /* the loss first */
    CHECK_ERR(pg_fit_outputs_check(0, NULL, 1, 1, NULL, 0, 3), PG_STATUS_ERR_ARG,
              "NULL metric codes or ids");
    for (int c = 1; c <= PG_METRIC_R2; c++) CHECK(pg_metric_regression(c) == (c >= PG_METRIC_MAE));
    for (int l = PG_FIT_LOSS_BINARY_CROSS_ENTROPY; l < PG_FIT_LOSS_COUNT; l++)
        CHECK(pg_fit_outputs_check(l, NULL, 0, 2, NULL, 0, 3) == PG_STATUS_ERR_SHAPE);
    /* a binary loss's per-class metrics read one output; binary_accuracy and accuracy any */
    const int prec[1] = {PG_METRIC_PRECISION},
              acc[2] = {PG_METRIC_ACCURACY, PG_METRIC_BINARY_ACCURACY};
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_BINARY_CROSS_ENTROPY, prec, 1, 1, NULL, 0, 1) == 0);
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_BCE_WITH_LOGITS, acc, 2, 2, NULL, 0, 2) == 0);
    CHECK_ERR(pg_fit_outputs_check(PG_FIT_LOSS_BCE_WITH_LOGITS, prec, 1, 2, NULL, 0, 2),
              PG_STATUS_ERR_SHAPE,
              "ag_fit: metrics: \"precision\" needs a 1-output binary model and 0/1 targets [1, "
              "n]; the model gives 2 outputs per sample");
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, prec, 1, 1, NULL, 0, 3) == 0);
    /* validation_data's class ids against the outputs (the first at or past them) */
    const double vid[4] = {0, 2, 2.5, 4}, vok[2] = {0, 2};
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, NULL, 0, 1, vok, 2, 3) == 0);
    CHECK(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, NULL, 0, 1, vid, 4, -1) == 0);
    CHECK_ERR(pg_fit_outputs_check(PG_FIT_LOSS_CROSS_ENTROPY, NULL, 0, 1, vid, 4, 3),
              PG_STATUS_ERR_VALUE,
              "ag_fit: validation_data y holds class id 4 (sample 4) but the model has 3 outputs; "
              "ids are 0-based, in [0, 3)");
    /* an optimizer object updating none of the model's parameters (another model's) */
    pg_tensor *a = pg_tensor_full(PG_DTYPE_F64, 2, 2, 1),
              *b = pg_tensor_full(PG_DTYPE_F64, 2, 1, 1);
    pg_tensor *pa[1] = {a}, *pb[1] = {b}, *pab[2] = {b, a};
    pg_optim *o = pg_optim_new(PG_OPTIM_KIND_SGD, pa, 1, NULL);
    CHECK(pg_fit_optim_check(o, pab, 2) == 0); /* one of them is enough */
    CHECK_ERR(pg_fit_optim_check(o, pb, 1), PG_STATUS_ERR_VALUE,
              "ag_fit: the optimizer updates none of the model's parameters (its 1 are not among "
              "the model's 1); build it on this model's parameters");
    CHECK_ERR(pg_fit_optim_check(NULL, pb, 1), PG_STATUS_ERR_ARG, "NULL optimizer");
    pg_optim_free(o), pg_tensor_release(a), pg_tensor_release(b);
    /* nbatch_logical a multiple of batch_size, before the optimizer is told to accumulate */
    CHECK(pg_fit_batches_check(5, 10) == 0 && pg_fit_batches_check(0, 3) == 0);
    CHECK_ERR(pg_fit_batches_check(5, 3), PG_STATUS_ERR_VALUE,
              "ag_fit: nbatch_logical (3) must be a multiple of batch_size (5)");
}

void test_fit_data(void)
{
    test_join_plan();
    test_verbosity();
    test_flags();
    test_kind_fail();
    test_cols_targets();
}
