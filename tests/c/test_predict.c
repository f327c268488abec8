/* ag_predict's reading of outputs (native/predict.c) and a model file's 'target' metadata
 * (native/modelfile_target.c): values against closed forms, the refusals' texts, and a
 * written target read back. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static void transform(void)
{
    const double out[6] = {1, 2, 3, -1, 0, -1}; /* [3, 2] column-major */
    double r[6];
    int64_t rows = 0;
    CHECK(pg_predict_transform("f", out, 3, 2, PG_PREDICT_PROB, PG_FIT_CLASSIFY_ARGMAX, NULL, -1, r,
                               &rows) == 0);
    const double s = exp(-2.0) + exp(-1.0) + 1.0;
    CHECK(rows == 3 && fabs(r[2] - 1.0 / s) < 1e-15 && fabs(r[0] - exp(-2.0) / s) < 1e-15);
    CHECK(pg_predict_transform("f", out, 3, 2, PG_PREDICT_CLASS, PG_FIT_CLASSIFY_ARGMAX, NULL, 3, r,
                               &rows) == 0);
    CHECK(rows == 1 && r[0] == 2 && r[1] == 1); /* the first maximum (column 2: rows 1 and 3 tie) */
    const double lg[3] = {-1000, 0, 2};
    CHECK(pg_predict_transform("f", lg, 1, 3, PG_PREDICT_PROB, PG_FIT_CLASSIFY_LOGITS, NULL, -1, r,
                               &rows) == 0);
    CHECK(r[0] == 0 && r[1] == 0.5 && fabs(r[2] - 1 / (1 + exp(-2.0))) < 1e-16);
    CHECK(pg_predict_transform("f", lg, 1, 3, PG_PREDICT_CLASS, PG_FIT_CLASSIFY_LOGITS, NULL, 2, r,
                               &rows) == 0);
    CHECK(r[0] == 0 && r[1] == 0 && r[2] == 1);
    const double nanv[2] = {NAN, 1};
    CHECK(pg_predict_transform("f", nanv, 2, 1, PG_PREDICT_CLASS, PG_FIT_CLASSIFY_ARGMAX, NULL, -1,
                               r, &rows) == 0);
    CHECK(isnan(r[0]));
    CHECK_ERR(pg_predict_transform("ag_predict", out, 3, 2, PG_PREDICT_PROB, PG_FIT_CLASSIFY_NONE,
                                   "mse", -1, r, &rows),
              PG_STATUS_ERR_VALUE, "ag_predict: type = \"prob\" needs a classifier");
    CHECK_ERR(pg_predict_transform("ag_predict", out, 3, 2, PG_PREDICT_CLASS, PG_FIT_CLASSIFY_NONE,
                                   NULL, -1, r, &rows),
              PG_STATUS_ERR_VALUE, "give loss =");
    CHECK_ERR(pg_predict_transform("ag_predict", lg, 1, 3, PG_PREDICT_CLASS, PG_FIT_CLASSIFY_PROBS,
                                   NULL, 3, r, &rows),
              PG_STATUS_ERR_VALUE, "1 output but 3 class labels");
    int k = -1;
    CHECK(pg_predict_type_parse("ag_predict", "class", NULL, &k) == 0 && k == PG_PREDICT_CLASS);
    CHECK_ERR(pg_predict_type_parse("ag_predict", "x", NULL, &k), PG_STATUS_ERR_VALUE,
              "type must be \"response\", \"prob\" or \"class\", got \"x\"");
    CHECK(pg_predict_classify("f", "binary_cross_entropy", &k) == 0 && k == PG_FIT_CLASSIFY_PROBS);
    CHECK(pg_predict_classify("f", NULL, &k) == 0 && k == PG_FIT_CLASSIFY_NONE); /* no loss */
    CHECK_ERR(pg_predict_classify("ag_predict", "hinge", &k), PG_STATUS_ERR_VALUE,
              "unknown loss \"hinge\"");
    CHECK(pg_predict_batch_cols("ag_predict", 2, 5, 5, 256) == 0);
    CHECK_ERR(pg_predict_batch_cols("ag_accuracy", 2, 10, 5, 256), PG_STATUS_ERR_SHAPE,
              "ag_accuracy: the model returned [2x10] for a batch of 5 samples (batch_size 256); "
              "it must return one column per sample ([outputs x 5])");
    char nb[40]; /* each host's names of the non-finite numbers; whole numbers keep their digits */
    CHECK(!strcmp(pg_fmt_num(nb, sizeof nb, INFINITY), "inf"));
    CHECK(!strcmp(pg_fmt_num(nb, sizeof nb, 1180591620717411303424.0), "1180591620717411303424"));
    CHECK(!strcmp(pg_fmt_num(nb, sizeof nb, 1e300), "1e+300"));
    CHECK(!strcmp(pg_fmt_num(nb, sizeof nb, 0.25), "0.25"));
    CHECK(!strcmp(pg_fmt_num15(nb, sizeof nb, 1.23456789), "1.23456789"));
    CHECK(!strcmp(pg_fmt_num15(nb, sizeof nb, 1180591620717411303424.0), "1180591620717411303424"));
    CHECK(!strcmp(pg_fmt_num15(nb, sizeof nb, -INFINITY), "-inf"));
    CHECK(pg_set_num_style(1) == 0);
    CHECK(!strcmp(pg_fmt_num15(nb, sizeof nb, NAN), "NaN"));
    const uint64_t na_bits = 0x7FF00000000007A2ull; /* R's NA_real_ */
    double na;
    memcpy(&na, &na_bits, sizeof na);
    CHECK(!strcmp(pg_fmt_num(nb, sizeof nb, -INFINITY), "-Inf"));
    CHECK(!strcmp(pg_fmt_num(nb, sizeof nb, NAN), "NaN"));
    CHECK(!strcmp(pg_fmt_num(nb, sizeof nb, na), "NA"));
    CHECK(pg_set_num_style(0) == 1 && !strcmp(pg_fmt_num(nb, sizeof nb, na), "nan"));
    CHECK(pg_fit_classify_parse("logits") == PG_FIT_CLASSIFY_LOGITS);
    CHECK(!strcmp(pg_fit_classify_name(PG_FIT_CLASSIFY_NONE), "none"));
}

static void target_file(void)
{
    char dir[] = "/tmp/pg-pred-XXXXXX", path[300];
    if (!mkdtemp(dir)) return;
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    static const double V[2] = {1, 2};
    pg_st_tensor t = {"W", PG_ST_DTYPE_F64, 2, 1, 2, V};
    const char *labels[2] = {"no", "\xc3\xa9\"q"}; /* UTF-8 and a quote: escaped in JSON */
    pg_mf_writer *w = NULL;
    CHECK(pg_mf_writer_new(&w) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_PARAMETER, &t) == 0);
    CHECK_ERR(pg_mf_writer_set_target(w, "mse", PG_FIT_CLASSIFY_ARGMAX, -1, NULL),
              PG_STATUS_ERR_VALUE, "is not how loss \"mse\" reads outputs");
    const char *dup[2] = {"a", "a"};
    CHECK_ERR(pg_mf_writer_set_target(w, NULL, 0, 2, dup), PG_STATUS_ERR_VALUE, "twice");
    CHECK(pg_mf_writer_set_target(w, "bce_with_logits", PG_FIT_CLASSIFY_LOGITS, 2, labels) == 0);
    CHECK(pg_mf_writer_commit(w, path) == 0);
    pg_mf_writer_free(w);
    pg_mf *mf = NULL;
    CHECK(pg_mf_open(path, "ag_load_model()", &mf) == 0);
    if (mf) {
        CHECK(!pg_mf_has_target(mf) && pg_mf_class_count(mf) == -1); /* before a check */
        CHECK(pg_mf_check_info(mf) == 0);
        CHECK(pg_mf_has_target(mf) && !strcmp(pg_mf_target_loss(mf), "bce_with_logits"));
        CHECK(pg_mf_target_classify(mf) == PG_FIT_CLASSIFY_LOGITS && pg_mf_class_count(mf) == 2);
        CHECK(!strcmp(pg_mf_class(mf, 1), labels[1]) && !pg_mf_class(mf, 2));
        pg_mf_close(mf);
    }
    unlink(path);
    rmdir(dir);
}

void test_predict(void)
{
    transform();
    target_file();
}
