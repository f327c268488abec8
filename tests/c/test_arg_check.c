/* The front ends' argument rules (native/arg_check.c, native/fit_args.c): each rule's text, the
 * kinds' statuses. */
#include <math.h>
#include <string.h>
#include "check.h"

void test_arg_check(void)
{
    const double one = 1, zero = 0, imax = 2147483647.0, neg = -5, ten = 10;
    CHECK(pg_arg_int("f", "n", 3, &one, &imax, NULL, "3", 0) == 0);
    CHECK(pg_arg_int("f", "n", 1e12, NULL, NULL, NULL, "1e12", 0) == 0); /* unbounded */
    CHECK_ERR(pg_arg_int("f", "n", 0, &one, &imax, NULL, "0", 0), PG_STATUS_ERR_VALUE,
              "f: n must be an integer >= 1, got 0");
    CHECK_ERR(pg_arg_int("f", "n", 2.5, &one, &imax, NULL, "2.5", 0), PG_STATUS_ERR_VALUE,
              "f: n must be an integer >= 1, got 2.5");
    CHECK_ERR(pg_arg_int("f", "n", NAN, &one, &imax, NULL, "NA", 0), PG_STATUS_ERR_VALUE, "got NA");
    CHECK_ERR(pg_arg_int("f", "n", 3e9, &one, &imax, NULL, "3e9", 0), PG_STATUS_ERR_VALUE,
              "f: n must be an integer >= 1 and <= 2147483647 (R's integer range), got 3e9");
    CHECK_ERR(pg_arg_int("f", "n", 11, &neg, &ten, NULL, "11", 0), PG_STATUS_ERR_VALUE,
              "f: n must be an integer in [-5, 10], got 11");
    CHECK_ERR(pg_arg_int("f", "n", 11, NULL, &ten, NULL, "11", 0), PG_STATUS_ERR_VALUE,
              "must be an integer in [-inf, 10], got 11");
    CHECK_ERR(pg_arg_int("f", "n", 0.5, NULL, NULL, NULL, "0.5", 0), PG_STATUS_ERR_VALUE,
              "must be an integer, got 0.5");
    CHECK_ERR(pg_arg_int("f", "n", 3e9, &one, &imax, "a size", "3e9", 0), PG_STATUS_ERR_VALUE,
              "f: n must be a size, got 3e9");
    CHECK_ERR(pg_arg_int("f", "n", 0, &one, &imax, NULL, "\"a\"", 1), PG_STATUS_ERR_ARG,
              "f: n must be an integer >= 1, got \"a\"");
    char big[400];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK(pg_arg_int("f", "n", 0, &one, &imax, NULL, big, 1) == PG_STATUS_ERR_ARG);
    CHECK(strlen(pg_last_error()) == 300); /* the wrong kind's text: 300 characters */
    CHECK(pg_arg_int(NULL, "n", 0, NULL, NULL, NULL, "0", 0) == PG_STATUS_ERR_ARG);

    CHECK(pg_arg_num("f", "p", 0.5, &zero, &one, 0, 1, "0.5", 0) == 0);
    CHECK(pg_arg_num("f", "p", -1e300, NULL, NULL, 0, 0, "-1e300", 0) == 0);
    CHECK_ERR(pg_arg_num("f", "p", 1, &zero, &one, 0, 1, "1", 0), PG_STATUS_ERR_VALUE,
              "f: p must be a finite number in [0, 1), got 1");
    CHECK_ERR(pg_arg_num("f", "p", 0, &zero, NULL, 1, 0, "0", 0), PG_STATUS_ERR_VALUE,
              "f: p must be a finite number > 0, got 0");
    CHECK_ERR(pg_arg_num("f", "p", INFINITY, NULL, NULL, 0, 0, "Inf", 0), PG_STATUS_ERR_VALUE,
              "f: p must be a finite number, got Inf");
    CHECK_ERR(pg_arg_num("f", "p", 2, NULL, &one, 0, 0, "2", 0), PG_STATUS_ERR_VALUE,
              "must be a finite number in [-inf, 1], got 2");
    CHECK_ERR(pg_arg_num("f", "p", 0, &zero, &one, 1, 0, "TRUE", 1), PG_STATUS_ERR_ARG,
              "f: p must be a finite number in (0, 1], got TRUE");
}

void test_fit_args(void)
{
    CHECK(pg_fit_loader_check(0, 32, 1) == 0);
    CHECK_ERR(pg_fit_loader_check(1, 8, 0), PG_STATUS_ERR_ARG,
              "ag_fit: x is an ag_dataloader, which holds the targets: pass y to "
              "ag_dataloader(x, y), not to ag_fit");
    CHECK_ERR(pg_fit_loader_check(0, 8, 1), PG_STATUS_ERR_ARG,
              "ag_fit: x is an ag_dataloader: its batch_size and shuffle are the fit's; set them "
              "on ag_dataloader(), not on ag_fit");
    /* only the defaults exactly (32, TRUE) leave the loader's settings alone: NaN is no number */
    CHECK(pg_fit_loader_check(0, 32, 0) == PG_STATUS_ERR_ARG);
    CHECK(pg_fit_loader_check(0, 32.0000001, 1) == PG_STATUS_ERR_ARG);
    CHECK(pg_fit_loader_check(0, NAN, 1) == PG_STATUS_ERR_ARG);
    pg_clear_error();

    const double ok[4] = {0, 1, 0, 4}, miss[5] = {0, 1, 0, 1, NAN}, neg[3] = {-1, -1, -1};
    CHECK(pg_fit_labels_check("cross_entropy", 5, ok, 4, 0) == 0);
    CHECK(pg_fit_labels_check("bce_with_logits", 2, ok, 2, 1) == 0);
    CHECK(pg_fit_labels_check("binary_cross_entropy", 2, NULL, 0, 0) == 0);
    CHECK_ERR(pg_fit_labels_check("binary_cross_entropy", 3, ok, 4, 0), PG_STATUS_ERR_VALUE,
              "ag_fit: labels y (strings or a Categorical) need loss = \"cross_entropy\" (or, "
              "with 2 labels, \"binary_cross_entropy\" / \"bce_with_logits\")");
    CHECK_ERR(pg_fit_labels_check("mse", 2, ok, 2, 1), PG_STATUS_ERR_VALUE,
              "ag_fit: a factor or character y needs loss = \"cross_entropy\" (or, with 2 levels, "
              "\"binary_cross_entropy\" / \"bce_with_logits\")");
    /* missing labels (NaN, R's NA, or a negative id) before the loss */
    CHECK_ERR(pg_fit_labels_check("mse", 2, miss, 5, 1), PG_STATUS_ERR_VALUE,
              "ag_fit: y has 1 missing value (NA), the first at row 1, column 5; give finite "
              "data (remove or impute those samples)");
    CHECK_ERR(pg_fit_labels_check("cross_entropy", 2, neg, 3, 0), PG_STATUS_ERR_VALUE,
              "y has 3 missing values (NA), the first at row 1, column 1;");
    CHECK_ERR(pg_fit_labels_check(NULL, 2, ok, 4, 0), PG_STATUS_ERR_ARG, "NULL loss");
    CHECK_ERR(pg_fit_labels_check("mse", 2, NULL, 3, 0), PG_STATUS_ERR_ARG, "NULL loss or labels");
    /* missing labels of y and of validation_data's y: one text, the first's column 1-based */
    CHECK(pg_fit_labels_missing(0, 0, 0) == 0 && pg_fit_labels_missing(1, 0, 0) == 0);
    CHECK_ERR(pg_fit_labels_missing(1, 1, 1), PG_STATUS_ERR_VALUE,
              "ag_fit: validation_data y has 1 missing value (NA), the first at row 1, column 2; "
              "give finite data (remove or impute those samples)");
    CHECK_ERR(pg_fit_labels_missing(0, 2, 0), PG_STATUS_ERR_VALUE,
              "ag_fit: y has 2 missing values (NA), the first at row 1, column 1; give finite "
              "data (remove or impute those samples)");
    CHECK_ERR(pg_fit_labels_missing(1, -1, 0), PG_STATUS_ERR_ARG, "negative missing-label");
    CHECK_ERR(pg_fit_labels_missing(0, 1, -1), PG_STATUS_ERR_ARG, "negative missing-label");
    /* labels coded as class ids; a label not among the classes: the first 10 shown, labels to
     * 40 code points; a missing one (NULL) shown as NA, or first refused under validation */
    const char *cls[12] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};
    const char *lab[4] = {"c", "a", "l", "c"};
    double ids[4] = {-1, -1, -1, -1};
    CHECK(pg_labels_code("f", "y", "z", lab, 4, cls, 12, 0, ids) == 0 && ids[0] == 2 &&
          ids[1] == 0 && ids[2] == 11 && ids[3] == 2);
    const char *dup[3] = {"b", "a", "b"}; /* equal names: the first wins, as R's match */
    CHECK(pg_labels_code("f", "y", "z", dup, 3, dup, 3, 1, ids) == 0 && ids[0] == 0 &&
          ids[1] == 1 && ids[2] == 0);
    CHECK_ERR(pg_labels_code("f", "y", "z", lab, 1, dup, 3, 0, ids), PG_STATUS_ERR_VALUE,
              "'c', which");
    CHECK(pg_labels_code("f", "y", "z", NULL, 0, NULL, 0, 1, NULL) == 0);
    const char *zz[2] = {"a", "zz"};
    CHECK_ERR(pg_labels_code("ag_fit", "validation_data's y", "y's labels", zz, 2, cls, 3, 1, ids),
              PG_STATUS_ERR_VALUE,
              "ag_fit: validation_data's y has the label 'zz', which is not one of y's labels "
              "('a', 'b', 'c')");
    const char *na[3] = {"a", NULL, NULL};
    CHECK_ERR(pg_labels_code("ag_evaluate", "y", "the model's classes", na, 3, cls, 12, 0, ids),
              PG_STATUS_ERR_VALUE,
              "ag_evaluate: y has the label 'NA', which is not one of the model's classes ('a', "
              "'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', ...)");
    CHECK_ERR(pg_labels_code("ag_fit", "validation_data's y", "y's labels", na, 3, cls, 3, 1, ids),
              PG_STATUS_ERR_VALUE,
              "ag_fit: validation_data y has 2 missing values (NA), the first at row 1, column 2;");
    const char *lng[1] = {/* 41 code points, 2-byte e-acute: 40 kept */
                          "\xc3\xa9"
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"};
    CHECK_ERR(pg_labels_code("ag_fit", "y", "z", lng, 1, cls, 0, 0, ids), PG_STATUS_ERR_VALUE,
              "ag_fit: y has the label '\xc3\xa9"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', which "
              "is not one of z ()");
    CHECK_ERR(pg_labels_code("f", "y", "z", NULL, 1, cls, 1, 0, ids), PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_labels_code("f", "y", "z", lab, 1, NULL, 1, 0, ids), PG_STATUS_ERR_ARG, "NULL");

    /* ag_evaluate's loss or metrics, and its reading of the outputs (pg_metric_read) */
    CHECK(pg_metric_asked("f", 1, 0) == 0 && pg_metric_asked("f", 0, 1) == 0);
    CHECK_ERR(pg_metric_asked("ag_evaluate", 0, 0), PG_STATUS_ERR_ARG,
              "ag_evaluate: give loss, metrics or both");
    int loss = 7, cl = 7;
    CHECK(pg_metric_read("ag_evaluate", NULL, 0, 1, 5, 5, &loss, &cl) == 0 && loss == -1 &&
          cl == PG_FIT_CLASSIFY_PROBS);
    CHECK(pg_metric_read("ag_evaluate", NULL, 1, 3, 5, 5, &loss, &cl) == 0 &&
          cl == PG_FIT_CLASSIFY_PROBS);
    CHECK(pg_metric_read("ag_evaluate", NULL, 0, 3, 5, 5, &loss, &cl) == 0 &&
          cl == PG_FIT_CLASSIFY_ARGMAX);
    CHECK(pg_metric_read("ag_evaluate", "mse", 0, 3, 5, 5, &loss, &cl) == 0 && loss >= 0 &&
          cl == PG_FIT_CLASSIFY_NONE);
    loss = cl = 7;
    CHECK_ERR(pg_metric_read("ag_evaluate", NULL, 0, 3, 5, 4, &loss, &cl), PG_STATUS_ERR_SHAPE,
              "ag_evaluate: x has 5 samples but y has 4");
    CHECK(loss == 7 && cl == 7);
    CHECK_ERR(pg_metric_read("ag_evaluate", "nope", 0, 3, 5, 5, &loss, &cl), PG_STATUS_ERR_VALUE,
              "ag_evaluate: ");
    CHECK_ERR(pg_metric_read(NULL, NULL, 0, 3, 5, 5, &loss, &cl), PG_STATUS_ERR_ARG, "NULL");

    /* static = None's notice in each language's spelling; return_state's refusal */
    char b[512];
    CHECK(pg_fit_static_notice("why", 0, b, sizeof b) == (int64_t)strlen(b));
    CHECK(!strcmp(b,
                  "ag_fit: static=None runs this model eagerly (its step cannot be compiled "
                  "safely: why); static=False silences this notice"));
    CHECK(pg_fit_static_notice("w", 1, NULL, 0) > 0 && pg_fit_static_notice("w", 1, b, 8) > 8);
    CHECK(pg_fit_static_notice("w", 1, b, sizeof b) > 0 &&
          strstr(b, "ag_fit: static = NULL runs") && strstr(b, "; static = FALSE silences"));
    CHECK(pg_fit_static_notice(NULL, 1, b, sizeof b) == -PG_STATUS_ERR_ARG);
    CHECK_ERR(pg_fit_return_state("ag_predict", "lstm_1"), PG_STATUS_ERR_ARG,
              "ag_predict: the model (lstm_1) has return_state set: its forward returns (output, "
              "h_n[, c_n]), not a tensor; use return_state = FALSE for this call (the same "
              "weights)");

    /* ag_fit(metrics =): accuracy is the History's own column; the rest need targets */
    int codes[3] = {PG_METRIC_AUC, PG_METRIC_ACCURACY, PG_METRIC_F1};
    CHECK(pg_fit_metric_codes_fit(codes, 3, 1) == 2 && codes[0] == PG_METRIC_AUC &&
          codes[1] == PG_METRIC_F1);
    int acc[1] = {PG_METRIC_ACCURACY};
    CHECK(pg_fit_metric_codes_fit(acc, 1, 0) == 0 && pg_fit_metric_codes_fit(NULL, 0, 0) == 0);
    CHECK_ERR(pg_fit_metric_codes_fit(codes, 2, 0) < 0, PG_STATUS_ERR_ARG,
              "ag_fit: metrics need targets y");
    CHECK(codes[0] == PG_METRIC_AUC && codes[1] == PG_METRIC_F1); /* untouched on failure */
    CHECK(pg_fit_metric_codes_fit(NULL, 2, 1) == -PG_STATUS_ERR_ARG);

    /* a count as R's as.integer (pg_arg_count): truncated toward zero, [lo, INT_MAX + 1) */
    double n = 0;
    CHECK(pg_arg_count("f", "k", 1.9, 1, "a positive integer", "1.9", 0, &n) == 0 && n == 1);
    CHECK(pg_arg_count("f", "k", 2147483647.5, 1, "r", "x", 0, &n) == 0 && n == 2147483647.0);
    CHECK(pg_arg_count("f", "k", -0.5, -1, "r", "x", 0, &n) == 0 && n == 0 && !signbit(n));
    const double no[] = {0.99, NAN, INFINITY, 2147483648.0, 1e12, -5};
    for (int i = 0; i < 6; i++)
        CHECK_ERR(pg_arg_count("optimizer_adam", "accumulate_steps", no[i], 1, "a positive integer",
                               "v", 0, &n) != 0,
                  PG_STATUS_ERR_VALUE,
                  "optimizer_adam: accumulate_steps must be a positive integer, got v");
    CHECK_ERR(pg_arg_count("f", "k", 3, 1, "a positive integer", "'a'", 1, &n) != 0,
              PG_STATUS_ERR_ARG, "f: k must be a positive integer, got 'a'");
    CHECK_ERR(pg_arg_count("f", "k", 3, 1, NULL, "x", 0, &n) != 0, PG_STATUS_ERR_ARG, "NULL");

    /* a number in ggmlR's words (pg_arg_real): ag_capture's max_grad_norm */
    CHECK(pg_arg_real("ag_capture_set", "max_grad_norm", 0.5, 0, 1, "r", "0.5", 0) == 0);
    const double nonpos[] = {0, -1, NAN, INFINITY};
    for (int i = 0; i < 4; i++)
        CHECK_ERR(pg_arg_real("ag_capture_set", "max_grad_norm", nonpos[i], 0, 1,
                              "one positive finite number", "v", 0) != 0,
                  PG_STATUS_ERR_VALUE,
                  "ag_capture_set: max_grad_norm must be one positive finite number, got v");
    CHECK(pg_arg_real("f", "a", 0, 0, 0, "r", "0", 0) == 0); /* closed at lo */
    CHECK_ERR(pg_arg_real("f", "a", 1, 0, 0, "r", "'x'", 1) != 0, PG_STATUS_ERR_ARG, "got 'x'");
    /* no shown: the value as the core prints numbers (ag_allreduce_gradients' weight) */
    CHECK_ERR(pg_arg_real("ag_allreduce_gradients", "weight", -0.5, 0, 0, "finite and >= 0", NULL,
                          0) != 0,
              PG_STATUS_ERR_VALUE,
              "ag_allreduce_gradients: weight must be finite and >= 0, got -0.5");
    CHECK_ERR(pg_arg_real("f", "w", -INFINITY, 0, 0, "r", NULL, 0) != 0, PG_STATUS_ERR_VALUE,
              "f: w must be r, got -inf");

    /* ag_multihead_attention's sizes (pg_mha_check_sizes) */
    CHECK(pg_mha_check_sizes(8, 2) == 0 && pg_mha_check_sizes(1, 1) == 0);
    CHECK_ERR(pg_mha_check_sizes(10, 4) != 0, PG_STATUS_ERR_VALUE,
              "ag_multihead_attention: d_model (10) must be divisible by n_heads (4)");
    CHECK_ERR(pg_mha_check_sizes(0, 4) != 0, PG_STATUS_ERR_VALUE, "must be >= 1, got 0 and 4");
}
