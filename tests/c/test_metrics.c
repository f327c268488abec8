/* ag_fit / ag_evaluate metrics in the core (native/metrics.c, issue 31): names and task checks,
 * ROC AUC with ties, precision / recall / f1 averages with a class never predicted, the confusion
 * matrix's orientation and the regression metrics, against scikit-learn 1.9's values. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-12)

static double val(int code, int classify, const double *out, int64_t k, int64_t n, const double *y,
                  int64_t yrows)
{
    double v = -1;
    CHECK(pg_metric_value("ag_evaluate", code, classify, NAN, out, k, n, y, yrows, &v) == 0);
    return v;
}

static void test_names(void)
{
    CHECK(pg_metric_code("ag_fit", "auc", PG_FIT_CLASSIFY_PROBS, 1) == PG_METRIC_AUC);
    CHECK(pg_metric_code("ag_fit", "r2", PG_FIT_CLASSIFY_NONE, 1) == PG_METRIC_R2);
    CHECK(strcmp(pg_metric_name(PG_METRIC_F1_MICRO), "f1_micro") == 0);
    CHECK(pg_metric_mode("val_auc") == 1 && pg_metric_mode("rmse") == -1);
    CHECK(pg_metric_mode("loss") == 0 && pg_metric_mode("confusion_matrix") == 0);
    CHECK(pg_metric_code("ag_fit", "AUC", 1, 1) == -PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(),
                 "ag_fit: metrics has an unknown name \"AUC\"; valid: "
                 "accuracy, binary_accuracy, auc,") != NULL);
    CHECK_ERR(-pg_metric_code("ag_fit", "auc", PG_FIT_CLASSIFY_NONE, 1), PG_STATUS_ERR_VALUE,
              "ag_fit: metrics: \"auc\" needs a classification loss");
    CHECK_ERR(-pg_metric_code("ag_fit", "confusion_matrix", 1, 1), PG_STATUS_ERR_VALUE,
              "not a History column");
    CHECK(pg_metric_code("ag_evaluate", "confusion_matrix", 1, 0) == PG_METRIC_CONFUSION_MATRIX);
}

static void test_binary(void)
{
    /* roc_auc_score([1,0,1,0,0,1,0], s) = 0.75 with the three tied 0.5 scores */
    const double s[7] = {0.9, 0.2, 0.5, 0.7, 0.1, 0.5, 0.5}, y[7] = {1, 0, 1, 0, 0, 1, 0};
    CHECK(NEAR(val(PG_METRIC_AUC, PG_FIT_CLASSIFY_PROBS, s, 1, 7, y, 1), 0.75));
    CHECK(NEAR(val(PG_METRIC_PRECISION, PG_FIT_CLASSIFY_PROBS, s, 1, 7, y, 1), 0.5));
    CHECK(NEAR(val(PG_METRIC_RECALL, PG_FIT_CLASSIFY_PROBS, s, 1, 7, y, 1), 1.0 / 3));
    CHECK(NEAR(val(PG_METRIC_F1, PG_FIT_CLASSIFY_PROBS, s, 1, 7, y, 1), 0.4));
    CHECK(NEAR(val(PG_METRIC_F1_MACRO, PG_FIT_CLASSIFY_PROBS, s, 1, 7, y, 1), 0.8 * 2 / 3));
    CHECK(NEAR(val(PG_METRIC_ACCURACY, PG_FIT_CLASSIFY_PROBS, s, 1, 7, y, 1), 4.0 / 7));
    int64_t cm[4];
    CHECK(pg_confusion_matrix("ag_evaluate", PG_FIT_CLASSIFY_PROBS, NAN, s, 1, 7, y, 1, cm) == 0);
    CHECK(cm[0] == 3 && cm[1] == 2 && cm[2] == 1 && cm[3] == 1); /* rows true, columns predicted */
    const double one[2] = {1, 1};
    CHECK(isnan(val(PG_METRIC_AUC, PG_FIT_CLASSIFY_PROBS, s, 1, 2, one, 1))); /* one class only */
    const double bad[2] = {1, 2};
    double v;
    CHECK_ERR(pg_metric_value("ag_evaluate", PG_METRIC_F1, 2, NAN, s, 1, 2, bad, 1, &v),
              PG_STATUS_ERR_VALUE, "binary targets must be in [0, 1]");
}

static void test_multiclass(void)
{
    /* y_true [0,1,2,2,0], y_pred [0,2,2,2,0]: class 1 never predicted (its precision 0/0 = 0) */
    const double out[15] = {3, 1, 0, 0, 1, 2, 0, 0, 5, 1, 2, 3, 9, 0, 0};
    const double ids[5] = {0, 1, 2, 2, 0};
    const int A = PG_FIT_CLASSIFY_ARGMAX;
    CHECK(NEAR(val(PG_METRIC_PRECISION, A, out, 3, 5, ids, 1), 5.0 / 9));
    CHECK(NEAR(val(PG_METRIC_RECALL_MACRO, A, out, 3, 5, ids, 1), 2.0 / 3));
    CHECK(NEAR(val(PG_METRIC_F1, A, out, 3, 5, ids, 1), 0.6));
    CHECK(NEAR(val(PG_METRIC_F1_MICRO, A, out, 3, 5, ids, 1), 0.8));
    int64_t cm[9];
    CHECK(pg_confusion_matrix("ag_evaluate", A, NAN, out, 3, 5, ids, 1, cm) == 0);
    CHECK(cm[0] == 2 && cm[1 + 3 * 2] == 1 && cm[2 + 3 * 2] == 2 && cm[1 + 3 * 1] == 0);
    const double bad[5] = {0, 1, 3, 2, 0};
    double v;
    CHECK_ERR(pg_metric_value("ag_evaluate", PG_METRIC_F1, A, NAN, out, 3, 5, bad, 1, &v),
              PG_STATUS_ERR_VALUE, "y must be 0-based class ids in [0, 3), sample 3 has 3");
}

static void test_regression(void)
{
    /* y [[1,2],[2,2],[3,2]] (samples as columns), predictions [[1.5,2],[2,2],[2,2]] */
    const double y[6] = {1, 2, 2, 2, 3, 2}, p[6] = {1.5, 2, 2, 2, 2, 2};
    const int N = PG_FIT_CLASSIFY_NONE;
    CHECK(NEAR(val(PG_METRIC_R2, N, p, 2, 3, y, 2), 0.6875));
    CHECK(NEAR(val(PG_METRIC_MAE, N, p, 2, 3, y, 2), 0.25));
    CHECK(NEAR(val(PG_METRIC_MSE, N, p, 2, 3, y, 2), 1.25 / 6));
    CHECK(NEAR(val(PG_METRIC_RMSE, N, p, 2, 3, y, 2), sqrt(1.25 / 3) / 2));
    double v;
    CHECK_ERR(pg_metric_value("ag_evaluate", PG_METRIC_MSE, N, NAN, p, 2, 3, y, 1, &v),
              PG_STATUS_ERR_SHAPE, "mse compares outputs [2x3]");
}

/* a plan keeps the epoch's outputs and targets: the AUC of 8 logits in two batches is the AUC
 * of all 8 (not the mean of the batches'), NaN for validation, cleared each epoch; refused when
 * sharded (distributed) */
static void test_fit_keep(void)
{
    double xv[8] = {1.0, -2.0, 0.5, -0.1, 3.0, -1.0, 0.0, 2.0}, yv[8] = {1, 0, 0, 0, 1, 1, 0, 1};
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 1, 8, xv, PG_DTYPE_F64, 1, 1);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 8, yv, PG_DTYPE_F64, 1, 1);
    pg_fit_params p = pg_fit_default_params();
    p.classify = PG_FIT_CLASSIFY_LOGITS, p.batch_size = 4, p.shuffle = 0;
    pg_fit *f = pg_fit_new(x, y, &p);
    const int codes[2] = {PG_METRIC_AUC, PG_METRIC_F1};
    CHECK(f && pg_fit_monitor_mask(f) == 1);
    CHECK(f && pg_fit_metrics(f, 2, codes) == 0);
    /* the monitors' mask: accuracy counted (bit 0), then one bit per metric column */
    CHECK(pg_fit_monitor_mask(f) == (1 | 1 << PG_METRIC_AUC | 1 << PG_METRIC_F1));
    double whole[2], v[2], vv[2];
    CHECK(pg_metric_value("t", PG_METRIC_AUC, p.classify, NAN, xv, 1, 8, yv, 1, &whole[0]) == 0);
    CHECK(pg_metric_value("t", PG_METRIC_F1, p.classify, NAN, xv, 1, 8, yv, 1, &whole[1]) == 0);
    for (int epoch = 0; f && epoch < 2; epoch++) {
        CHECK(pg_fit_epoch_begin(f) == 0);
        for (int64_t b = 0; b < 2; b++) {
            pg_tensor *xb = NULL, *yb = NULL;
            CHECK(pg_fit_batch(f, 0, b, &xb, &yb) == 4);
            CHECK(pg_fit_record(f, 0, 1.0, xb) == 0);
            pg_tensor_release(xb);
            pg_tensor_release(yb);
        }
        CHECK(pg_fit_metrics_epoch(f, 0, v) == 0 && v[0] == whole[0] && v[1] == whole[1]);
        CHECK(pg_fit_metrics_epoch(f, 1, vv) == 0 && isnan(vv[0]) && isnan(vv[1]));
    }
    CHECK(whole[0] == 13.0 / 16.0); /* pairs positive above negative */
    CHECK_ERR(pg_fit_shard(f, 0, 2), PG_STATUS_ERR_VALUE,
              "ag_fit: metrics cannot be combined with distributed training");
    const int cm = PG_METRIC_CONFUSION_MATRIX;
    CHECK_ERR(pg_fit_metrics(f, 1, &cm), PG_STATUS_ERR_VALUE, "has no History column");
    CHECK(pg_fit_metrics(f, 0, NULL) == 0 && pg_fit_shard(f, 0, 2) == 0);
    CHECK(pg_fit_monitor_mask(f) == 1);
    CHECK_ERR(pg_fit_monitor_mask(NULL) < 0, PG_STATUS_ERR_ARG, "NULL fit");
    CHECK_ERR(pg_fit_metrics(f, 2, codes), PG_STATUS_ERR_VALUE, "distributed");
    pg_fit_free(f);
    pg_tensor_release(x);
    pg_tensor_release(y);
}

/* early stopping on a metric column: parsed by name, mode auto maximizes auc and minimizes
 * rmse, refused when ag_fit's metrics lack it or without validation data */
static void test_monitor(void)
{
    int m = -1;
    CHECK(pg_fit_log_parse("ag_early_stopping", "monitor", "val_auc", &m) == 0);
    CHECK(m == PG_FIT_LOG_COUNT + 2 * (PG_METRIC_AUC - 1) + 1);
    CHECK(strcmp(pg_fit_log_name(m), "val_auc") == 0);
    int acc = -1;
    CHECK(pg_fit_log_parse("f", "monitor", "accuracy", &acc) == 0 && acc == PG_FIT_LOG_ACCURACY);
    CHECK_ERR(pg_fit_log_parse("ag_early_stopping", "monitor", "val_aucc", &acc),
              PG_STATUS_ERR_VALUE, "(or an ag_fit(metrics =) column such as \"auc\"");
    pg_early_stop_params p = pg_early_stop_default_params();
    p.monitor = m, p.patience = 2;
    pg_early_stop *es = pg_early_stop_new(&p);
    CHECK(es != NULL);
    CHECK_ERR(pg_early_stop_begin(es, 1, 1), PG_STATUS_ERR_VALUE,
              "monitor \"val_auc\" is measured only when ag_fit's metrics names \"auc\"");
    CHECK_ERR(pg_early_stop_begin(es, 0, 1 | (1 << PG_METRIC_AUC)), PG_STATUS_ERR_VALUE,
              "only with validation data");
    CHECK(pg_early_stop_begin(es, 1, 1 | (1 << PG_METRIC_AUC)) == 0);
    double logs[PG_FIT_LOG_ALL];
    for (int i = 0; i < PG_FIT_LOG_ALL; i++) logs[i] = NAN;
    int act = -1;
    logs[m] = 0.7;
    CHECK(pg_early_stop_update(es, 1, logs, &act) == 0 && act == PG_EARLY_STOP_SNAPSHOT);
    logs[m] = 0.8; /* larger is better for auc */
    CHECK(pg_early_stop_update(es, 2, logs, &act) == 0 && act == PG_EARLY_STOP_SNAPSHOT);
    pg_early_stop_free(es);
    CHECK(pg_fit_log_parse("f", "monitor", "rmse", &p.monitor) == 0);
    es = pg_early_stop_new(&p);
    CHECK(es && pg_early_stop_begin(es, 0, -1) == 0);
    logs[p.monitor] = 0.5;
    CHECK(pg_early_stop_update(es, 1, logs, &act) == 0 && act == PG_EARLY_STOP_SNAPSHOT);
    logs[p.monitor] = 0.6; /* smaller is better for rmse */
    CHECK(pg_early_stop_update(es, 2, logs, &act) == 0 && act == PG_EARLY_STOP_CONTINUE);
    pg_early_stop_free(es);
}

static void test_metrics_format(void)
{
    const char *names[2] = {"auc", "val_precision_macro"};
    const double v[4] = {0.5, 0.75, NAN, 1.0 / 3}, ep[2] = {1, 2};
    char buf[256];
    const int64_t need = pg_fit_metrics_format(2, names, v, ep, 2, NULL, 0);
    CHECK(need > 0 && pg_fit_metrics_format(2, names, v, ep, 2, buf, sizeof buf) == need);
    CHECK(strcmp(buf,
                 "epoch       auc  val_precision_macro\n"
                 "    1    0.5000                    -\n"
                 "    2    0.7500               0.3333") == 0);
    CHECK(pg_fit_metrics_format(0, NULL, NULL, NULL, 0, buf, sizeof buf) == 0 && !*buf);
}

/* pg_evaluate assembles ag_evaluate's results as R and Python show them; pg_metric_codes */
static void test_evaluate(void)
{
    const double s[7] = {0.9, 0.2, 0.5, 0.7, 0.1, 0.5, 0.5}, y[7] = {1, 0, 1, 0, 0, 1, 0};
    const char *names[4] = {"auc", "confusion_matrix", "auc", "f1"};
    int codes[4];
    double vals[4], lv = 0;
    int64_t cm[4];
    CHECK(pg_evaluate("ag_evaluate", "binary_cross_entropy", 0, NAN, names, 4, s, 1, 7, y, 1, 7,
                      &lv, codes, vals, cm, 4) == 3);
    CHECK(codes[0] == PG_METRIC_AUC && codes[1] == PG_METRIC_CONFUSION_MATRIX &&
          codes[2] == PG_METRIC_F1 && NEAR(vals[0], 0.75) && vals[1] == 2 && NEAR(vals[2], 0.4));
    CHECK(cm[0] == 3 && cm[1] == 2 && cm[2] == 1 && cm[3] == 1 && lv > 0);
    CHECK(pg_evaluate(NULL, NULL, 0, NAN, names, 1, s, 1, 7, y, 1, 7, &lv, codes, vals, NULL, 0) ==
              1 &&
          isnan(lv)); /* no loss: probabilities for one output */
    CHECK(pg_evaluate("ag_evaluate", NULL, 0, NAN, names, 2, s, 1, 7, y, 1, 7, &lv, codes, vals, cm,
                      3) == -PG_STATUS_ERR_ARG);
    CHECK(strstr(pg_last_error(), "ag_evaluate: room for 3 counts, 4 needed") != NULL);
    CHECK(pg_evaluate("ag_evaluate", NULL, 0, NAN, names, 1, s, 1, 7, y, 1, 6, &lv, codes, vals,
                      NULL, 0) == -PG_STATUS_ERR_SHAPE); /* pg_metric_read's samples */
    const char *bad[2] = {"f1", NULL};
    CHECK(pg_metric_codes("ag_fit", bad, 2, PG_FIT_CLASSIFY_PROBS, 1, codes) == -PG_STATUS_ERR_ARG);
    CHECK(strstr(pg_last_error(), "ag_fit: metrics holds a missing name") != NULL);
}

void test_metrics(void)
{
    test_evaluate();
    test_metrics_format();
    test_monitor();
    test_fit_keep();
    test_names();
    test_binary();
    test_multiclass();
    test_regression();
}
