/* ag_estimate_training_memory's budget and report in the core (native/memory_report.c): ggmlR's
 * man-page example to the character, R's format() of the count, the optimizer names. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

#define CHECK_STR(a, b) CHECK(strcmp((a), (b)) == 0)

static void text_of(const pg_mem_estimate *e, int what, char *out, int64_t cap)
{
    const int64_t need = pg_mem_estimate_text(e, what, NULL, 0);
    CHECK(need > 0 && need < cap);
    CHECK(pg_mem_estimate_text(e, what, out, cap) == need && (int64_t)strlen(out) == need);
}

static void test_budget(void)
{
    pg_mem_estimate e = pg_mem_estimate_default();
    CHECK(e.optim == PG_MEM_OPTIM_ADAM && e.batch == 32 && e.activation_frac == 0.01);
    e.dtype = PG_DTYPE_F64;
    e.params = 10000;
    pg_mem_budget b;
    CHECK(pg_mem_budget_of(&e, &b) == 0);
    CHECK(b.weights == 80000 && b.gradients == 80000 && b.optimizer == 160000);
    CHECK(b.activations == 25600 && b.total == 345600 && b.k == 2 && b.bytes_per_scalar == 8);
    e.optim = PG_MEM_OPTIM_SGD_PLAIN;
    e.accumulate = 1; /* one more buffer: the accumulated gradients */
    CHECK(pg_mem_budget_of(&e, &b) == 0 && b.k == 1 && b.optimizer == 80000);
    e = pg_mem_estimate_default();
    e.source = PG_MEM_SOURCE_TAPE;
    e.params = 99;
    e.weights = 400, e.gradients = 396, e.activations = 1000;
    CHECK(pg_mem_budget_of(&e, &b) == 0 && b.weights == 400 && b.optimizer == 792);
    CHECK(b.total == 400 + 396 + 792 + 1000 && b.params == 99);
    e.batch = -1;
    CHECK_ERR(pg_mem_budget_of(&e, &b), PG_STATUS_ERR_ARG, "out of range");
}

static void test_report(void)
{
    pg_mem_estimate e = pg_mem_estimate_default();
    e.dtype = PG_DTYPE_F64;
    e.params = 3 * 512 * 512;
    e.batch = 64;
    char t[2048], note[512];
    text_of(&e, 1, t, sizeof t);
    text_of(&e, 0, note, sizeof note);
    char want[2048];
    snprintf(want, sizeof want,
             "Training memory estimate (adam, batch 64)\n"
             "  parameters      : 786 432\n"
             "  weights         :     6.00 MB\n"
             "  gradients       :     6.00 MB\n"
             "  optimizer (x2)  :    12.00 MB\n"
             "  activations     :     3.84 MB\n"
             "  total           :    27.84 MB\n"
             "  note: %s",
             note);
    CHECK_STR(t, want);
    CHECK_STR(note,
              "weights, gradients and optimizer state are counted at f64, the dtype the core "
              "stores them in (8 bytes per scalar, double precision); activations are a "
              "guess: activation_frac x weights per unit of batch.");
    char small[8];
    CHECK(pg_mem_estimate_text(&e, 1, small, sizeof small) == (int64_t)strlen(want));
    CHECK_STR(small, "Trainin"); /* truncated, NUL-terminated */
    e.source = PG_MEM_SOURCE_COMPILED;
    e.batch = 5;
    text_of(&e, 0, note, sizeof note);
    CHECK(strstr(note, "from the compiled step on a batch of 5 (planned buffers") != NULL);
    /* R's format(v, big.mark = " "): scientific where narrower, fractions as %.7g */
    const double counts[] = {1e5, 1e6, 123456, 1234567, 0.5, 2.25e20, 7};
    const char *shown[] = {"1e+05", "1e+06", "123 456", "1 234 567", "0.5", "2.25e+20", "7"};
    e.source = PG_MEM_SOURCE_GUESS;
    for (int i = 0; i < 7; i++) {
        e.params = counts[i];
        text_of(&e, 1, t, sizeof t);
        char line[96];
        snprintf(line, sizeof line, "  parameters      : %s\n", shown[i]);
        CHECK(strstr(t, line) != NULL);
    }
    CHECK_ERR(pg_mem_estimate_text(&e, 2, t, sizeof t) < 0, PG_STATUS_ERR_ARG,
              "what must be 0 or 1");
}

static void test_optim_names(void)
{
    int o = -1;
    CHECK(pg_mem_optim_parse("sgd", NULL, &o) == 0 && o == PG_MEM_OPTIM_SGD); /* exact first */
    CHECK(pg_mem_model_dtypes(PG_DTYPE_F32, PG_DTYPE_F32, -1, PG_DTYPE_F32) == 0);
    CHECK(pg_mem_model_dtypes(-1, PG_DTYPE_F64, PG_DTYPE_F32, -1) == 0); /* no parameters */
    CHECK_ERR(pg_mem_model_dtypes(PG_DTYPE_F32, PG_DTYPE_F64, -1, -1), PG_STATUS_ERR_DTYPE,
              "ag_estimate_training_memory(): dtype is \"f64\" but the model's parameters are f32");
    CHECK_ERR(pg_mem_model_dtypes(PG_DTYPE_F64, PG_DTYPE_F64, -1, PG_DTYPE_F32),
              PG_STATUS_ERR_DTYPE, "y is an f32 tensor but the model's parameters are f64");
    CHECK(pg_mem_target_shape(4, 8, 4, 8) == 0);
    CHECK_ERR(pg_mem_target_shape(4, 8, 2, 8), PG_STATUS_ERR_SHAPE,
              "ag_estimate_training_memory(): y is [2x8] but the model's output is [4x8]; with "
              "the default loss_fn (ag_mse_loss) y must have the output's shape [outputs, batch]");
    CHECK(pg_mem_optim_parse("sgd_p", NULL, &o) == 0 && o == PG_MEM_OPTIM_SGD_PLAIN);
    CHECK(pg_mem_optim_parse("ad", NULL, &o) == 0 && o == PG_MEM_OPTIM_ADAM);
    CHECK_ERR(pg_mem_optim_parse("rmsprop", NULL, &o), PG_STATUS_ERR_VALUE,
              "ag_estimate_training_memory(): 'optimizer' should be one of \"adam\", \"sgd\", "
              "\"sgd_plain\", got \"rmsprop\"");
    CHECK_ERR(pg_mem_optim_parse("s", NULL, &o), PG_STATUS_ERR_VALUE,
              "got \"s\" (it begins more than one)");
    CHECK_ERR(pg_mem_optim_parse("", NULL, &o), PG_STATUS_ERR_VALUE, "got \"\"");
    CHECK_ERR(pg_mem_optim_parse(NULL, "3", &o), PG_STATUS_ERR_VALUE, ", got 3");
    CHECK(pg_mem_optim_name(2) && !strcmp(pg_mem_optim_name(2), "sgd_plain"));
    CHECK(pg_mem_optim_name(3) == NULL && pg_mem_optim_name(-1) == NULL);
}

static void test_tape_text(void)
{
    const double MB = 1024.0 * 1024.0;
    pg_memory_totals t = {
        3, (int64_t)(1.5 * MB), (int64_t)MB, (int64_t)(0.25 * MB), (int64_t)(0.25 * MB), 0};
    const char *lab[2] = {"matmul", "relu"};
    const int64_t nn[2] = {2, 1}, nb[2] = {(int64_t)(0.75 * MB), (int64_t)(0.25 * MB)};
    char out[1024];
    const int64_t need = pg_memory_report_text(&t, NULL, 0, lab, nn, nb, 2, 10, NULL, 0);
    CHECK(pg_memory_report_text(&t, NULL, 0, lab, nn, nb, 2, 10, out, sizeof out) == need);
    CHECK_STR(out,
              "Gradient tape: 3 nodes, 1.50 MB held alive\n"
              "  operands (outlive the tape)     :     0.25 MB\n"
              "  activations (freed by clearing) :     1.00 MB\n"
              "  graph-path fields (beyond those):     0.25 MB\n"
              "\n"
              "  by operation (top 2):\n"
              "    op                     nodes        MB\n"
              "    matmul                     2      0.75\n"
              "    relu                       1      0.25");
    CHECK((int64_t)strlen(out) == need);
    pg_memory_totals e = {0, 0, 0, 0, 0, 0};
    CHECK(pg_memory_report_text(&e, NULL, 0, NULL, NULL, NULL, 0, 10, out, sizeof out) > 0);
    CHECK(strstr(out, "Gradient tape: 0 nodes, 0.00 MB held alive\n  (empty -- the tape") == out);
    t.nodes = 1, t.bytes_gradients = (int64_t)(2 * MB);
    CHECK(pg_memory_report_text(&t, "opt", 2, lab, nn, nb, 2, 1, out, sizeof out) > 0);
    CHECK_STR(out,
              "Compiled graph (opt): 1 node, 1.50 MB planned, 2 dropout masks redrawn per "
              "call\n"
              "  operands (outlive the graph)    :     0.25 MB\n"
              "  activations (planned buffers)   :     1.00 MB\n"
              "  gradients (planned buffers)     :     2.00 MB\n"
              "  graph-path fields (beyond those):     0.25 MB\n"
              "\n"
              "  by operation (top 1):\n"
              "    op                     nodes        MB\n"
              "    matmul                     2      0.75");
    CHECK(pg_memory_report_text(&t, "grad", 1, lab, nn, nb, 2, 0, out, sizeof out) > 0);
    CHECK(strstr(out, "1 dropout mask redrawn per call\n") && !strstr(out, "by operation"));
    char small[10];
    CHECK(pg_memory_report_text(&t, "grad", 0, lab, nn, nb, 2, 2, small, sizeof small) > 10);
    CHECK_STR(small, "Compiled ");
    CHECK_ERR(pg_memory_report_text(&t, NULL, 0, NULL, nn, nb, 2, 2, out, sizeof out) < 0,
              PG_STATUS_ERR_ARG, "pg_memory_report_text");
}

/* input_shape's rule (issue 29: Python's _whole_dim and R's test were one rule twice) */
static void test_input_shape(void)
{
    int64_t r = 0, c = 0;
    CHECK(pg_mem_input_shape((const double[]){3, 5}, 2, 32, 0, "(3, 5)", &r, &c) == 0);
    CHECK(r == 3 && c == 5);
    CHECK(pg_mem_input_shape((const double[]){4}, 1, 7, 1, "4", &r, &c) == 0 && r == 4 && c == 7);
    CHECK(pg_mem_input_shape((const double[]){INT_MAX, 1}, 2, 0, 0, "x", &r, &c) == 0);
    CHECK(r == INT_MAX);
    const char *py = "ag_estimate_training_memory(): input_shape must be (features,) or "
                     "(features, batch) with positive whole numbers, got (2, 0.5)";
    CHECK(pg_mem_input_shape((const double[]){2, 0.5}, 2, 32, 0, "(2, 0.5)", &r, &c) != 0);
    CHECK(pg_last_status() == PG_STATUS_ERR_VALUE && strcmp(pg_last_error(), py) == 0);
    pg_clear_error();
    const char *rr = "ag_estimate_training_memory(): input_shape must be c(features) or "
                     "c(features, batch) with positive whole numbers, got Inf";
    CHECK(pg_mem_input_shape((const double[]){INFINITY}, 1, 32, 1, "Inf", &r, &c) != 0);
    CHECK(strcmp(pg_last_error(), rr) == 0);
    pg_clear_error();
    /* a batch of 0, a non-number (NaN), past R's integers, three sizes, none */
    const double bad[][3] = {{2, 0, 0}, {NAN, 2, 0}, {2, (double)INT_MAX + 1, 0}, {1, 2, 3}};
    const int64_t n[] = {1, 2, 2, 3};
    for (int i = 0; i < 4; i++)
        CHECK_ERR(pg_mem_input_shape(bad[i], n[i], 0, 0, "x", &r, &c) != 0, PG_STATUS_ERR_VALUE,
                  "with positive whole numbers, got x");
    CHECK_ERR(pg_mem_input_shape(NULL, 0, 32, 0, "()", &r, &c) != 0, PG_STATUS_ERR_VALUE, "got ()");
    CHECK_ERR(pg_mem_input_shape(NULL, 2, 32, 0, "x", &r, &c) != 0, PG_STATUS_ERR_ARG, "NULL");
}

void test_memory_report(void)
{
    test_input_shape();
    test_tape_text();
    test_budget();
    test_report();
    test_optim_names();
}
