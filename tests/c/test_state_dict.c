/* ag_load_state_dict()'s rules and write (state_dict.c): the model's names, the strict
 * comparison, each used value's shape and finiteness, the f32 range, in that order with the
 * texts both front ends raise; strict = FALSE uses the shared names; a refused load writes
 * nothing, a good one writes every used value into the same tensors. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

#define C "ag_load_state_dict()"

static const int64_t D22[2] = {2, 2}, D21[2] = {2, 1}, D33[2] = {3, 3}, D2[1] = {2};

/* a model W [2x2] f32, b [2x1] f64, buffer mean [2x1] f32, and a state with the same names */
typedef struct {
    pg_tensor *t[3];
    const char *mn[3], *sn[3];
    double v[3][4];
    pg_host_matrix m[3];
    pg_state_dict_side model[2], state[2];
} fixture;

static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->t[0] = pg_tensor_full(PG_DTYPE_F32, 2, 2, 0.5);
    f->t[1] = pg_tensor_full(PG_DTYPE_F64, 2, 1, 0.5);
    f->t[2] = pg_tensor_full(PG_DTYPE_F32, 2, 1, 0.5);
    const char *names[3] = {"W", "b", "mean"};
    for (int j = 0; j < 3; j++) {
        f->mn[j] = f->sn[j] = names[j];
        for (int e = 0; e < 4; e++) f->v[j][e] = j + 0.25 * e;
        f->m[j] = (pg_host_matrix){1, 1, 2, j ? D21 : D22, f->v[j]};
    }
    f->model[0] = (pg_state_dict_side){2, f->mn, f->t, NULL};
    f->model[1] = (pg_state_dict_side){1, f->mn + 2, f->t + 2, NULL};
    f->state[0] = (pg_state_dict_side){2, f->sn, NULL, f->m};
    f->state[1] = (pg_state_dict_side){1, f->sn + 2, NULL, f->m + 2};
}

static void teardown(fixture *f)
{
    for (int j = 0; j < 3; j++) REL(f->t[j]);
}

/* every model value still 0.5: nothing was written */
static int untouched(fixture *f)
{
    for (int j = 0; j < 3; j++)
        for (int64_t e = 0; e < pg_tensor_numel(f->t[j]); e++) {
            double v[4];
            pg_tensor_read(f->t[j], v, PG_DTYPE_F64);
            if (v[e] != 0.5) return 0;
        }
    return 1;
}

static void refused(fixture *f, int strict, int status, const char *msg)
{
    pg_clear_error();
    CHECK(pg_state_dict_load(C, f->model, f->state, strict) == status);
    int ok = !strcmp(pg_last_error(), msg);
    if (!ok) fprintf(stderr, "expected '%s', got '%s'\n", msg, pg_last_error());
    CHECK(ok);
    CHECK(untouched(f));
    pg_clear_error();
}

static void test_names(void)
{
    fixture f;
    setup(&f);
    f.mn[1] = "W";
    refused(&f, 1, PG_STATUS_ERR_VALUE,
            C ": the model's parameters need distinct names to be matched with a state (got W, W)");
    f.mn[1] = "";
    refused(&f, 0, PG_STATUS_ERR_VALUE,
            C ": the model's parameters need distinct names to be matched with a state (got W, )");
    f.mn[1] = NULL;
    refused(&f, 0, PG_STATUS_ERR_VALUE,
            C
            ": the model's parameters need distinct names to be matched with a state (got W, NA)");
    f.mn[1] = "b";
    f.model[1].names = NULL;
    refused(&f, 0, PG_STATUS_ERR_VALUE,
            C ": the model's buffers need distinct names to be matched with a state (got an "
              "unnamed list)");
    f.model[1].names = f.mn + 2;
    /* the parameters' strict check comes before the buffers' names */
    f.sn[0] = f.sn[1] = "x"; /* x twice: shown once (R's setdiff) */
    refused(
        &f, 1, PG_STATUS_ERR_VALUE,
        C ": parameter names differ (strict = TRUE)\n  missing in state: W, b\n  not in model: x");
    f.sn[0] = "W", f.sn[1] = "b";
    f.state[1].names = NULL; /* an unnamed state list: its names read as "" */
    refused(&f, 1, PG_STATUS_ERR_VALUE,
            C ": buffer names differ (strict = TRUE)\n  missing in state: mean\n  not in model: ");
    teardown(&f);
}

static void test_values(void)
{
    fixture f;
    setup(&f);
    f.m[1].dims = D33; /* the first entry is fine, the second not: still nothing written */
    refused(&f, 1, PG_STATUS_ERR_SHAPE, C ": shape mismatch for 'b': model 2x1, state 3x3");
    f.m[1] = (pg_host_matrix){1, 1, 1, D2, NULL};
    refused(&f, 1, PG_STATUS_ERR_SHAPE, C ": shape mismatch for 'b': model 2x1, state 2");
    f.m[1] = (pg_host_matrix){1, 0, 2, D21, NULL};
    refused(&f, 1, PG_STATUS_ERR_SHAPE, C ": shape mismatch for 'b': model 2x1, state 2x1");
    f.m[1] = (pg_host_matrix){1, 1, 0, NULL, NULL};
    refused(&f, 1, PG_STATUS_ERR_SHAPE, C ": shape mismatch for 'b': model 2x1, state 1");
    f.m[1] = (pg_host_matrix){1, 1, 2, D21, f.v[1]};
    f.v[2][1] = NAN;
    refused(&f, 1, PG_STATUS_ERR_VALUE, C ": 'mean' contains NA, NaN or Inf");
    f.v[2][1] = 1;
    /* shape before finite, entry by entry: the NaN in W comes before the shape of b */
    f.v[0][3] = INFINITY;
    f.m[1].dims = D33;
    refused(&f, 1, PG_STATUS_ERR_VALUE, C ": 'W' contains NA, NaN or Inf");
    f.v[0][3] = 1;
    f.m[1].dims = D21;
    /* the range after every shape: 1e300 fits b (f64) but not the f32 buffer */
    f.v[1][0] = 1e300;
    f.v[2][0] = -1e300;
    refused(&f, 1, PG_STATUS_ERR_VALUE,
            C ": 'mean' holds -1e+300 (element 1), outside the f32 range (magnitude at most "
              "3.4028235e+38)");
    f.v[2][0] = 2;
    pg_clear_error();
    CHECK(pg_state_dict_load(C, f.model, f.state, 1) == 0);
    double w[4], b[2], m[2];
    pg_tensor_read(f.t[0], w, PG_DTYPE_F64);
    pg_tensor_read(f.t[1], b, PG_DTYPE_F64);
    pg_tensor_read(f.t[2], m, PG_DTYPE_F64);
    CHECK(w[0] == 0 && w[3] == 1 && b[0] == 1e300 && b[1] == 1.25 && m[0] == 2 && m[1] == 1);
    teardown(&f);
}

static void test_not_strict(void)
{
    fixture f;
    setup(&f);
    const char *shared[3] = {"x", "b", "b"};
    f.state[0].names = shared; /* b twice: the first is used; x is skipped, W kept */
    f.state[0].n = 3;
    f.m[0].dims = D33; /* x's value: never looked at */
    refused(&f, 1, PG_STATUS_ERR_VALUE,
            C ": parameter names differ (strict = TRUE)\n  missing in state: W\n  not in model: x");
    CHECK(pg_state_dict_load(C, f.model, f.state, 0) == 0);
    double w[4], b[2];
    pg_tensor_read(f.t[0], w, PG_DTYPE_F64);
    pg_tensor_read(f.t[1], b, PG_DTYPE_F64);
    CHECK(w[0] == 0.5 && w[3] == 0.5 && b[0] == 1 && b[1] == 1.25);
    teardown(&f);
}

/* a long list of names ends with "... (N more)": the core's error text (1024 bytes) keeps the
 * message's tail */
static void test_long_lists(void)
{
    fixture f;
    setup(&f);
    char names[100][32];
    const char *mn[100];
    pg_tensor *t[100];
    for (int j = 0; j < 100; j++) {
        snprintf(names[j], sizeof names[j], "parameter_number_%03d", j);
        mn[j] = names[j], t[j] = f.t[0];
    }
    f.model[0] = (pg_state_dict_side){100, mn, t, NULL};
    f.state[0].n = 0;
    pg_clear_error();
    CHECK(pg_state_dict_load(C, f.model, f.state, 1) == PG_STATUS_ERR_VALUE);
    const char *e = pg_last_error();
    CHECK(!strncmp(e,
                   C ": parameter names differ (strict = TRUE)\n  missing in state: "
                     "parameter_number_000, parameter_number_001, ",
                   110));
    CHECK(strstr(e, ", ... (") && strstr(e, " more)\n  not in model: ") && strlen(e) < 1000);
    mn[99] = mn[0];
    pg_clear_error();
    CHECK(pg_state_dict_load(C, f.model, f.state, 1) == PG_STATUS_ERR_VALUE);
    e = pg_last_error();
    CHECK(strstr(e, "need distinct names") && strstr(e, " more)") && e[strlen(e) - 1] == ')');
    CHECK(untouched(&f));
    pg_clear_error();
    teardown(&f);
}

static void test_bad_calls(void)
{
    fixture f;
    setup(&f);
    CHECK_ERR(pg_state_dict_load(C, NULL, f.state, 1) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              "NULL model or state");
    f.state[1].values = NULL;
    CHECK_ERR(pg_state_dict_load(C, f.model, f.state, 1) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              "buffers without their tensors or values");
    f.state[1].values = f.m + 2;
    f.m[2].data = NULL;
    CHECK_ERR(pg_state_dict_load(C, f.model, f.state, 1) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              "'mean' has no values");
    CHECK(untouched(&f));
    teardown(&f);
}

/* the arguments' checks, in order, with the front ends' texts */
static void test_args(void)
{
    CHECK(!strcmp(pg_state_dict_format(), "ggmlR.ag_state_dict"));
    CHECK(pg_state_dict_check_args(C, 1, 1, 1) == 0);
    CHECK_ERR(pg_state_dict_check_args(C, 0, 0, 0) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              C ": `state` is not a state dict (no $parameters)");
    CHECK_ERR(pg_state_dict_check_args(C, 1, 0, 0) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              C ": `strict` must be TRUE or FALSE");
    CHECK_ERR(pg_state_dict_check_args(NULL, 1, 1, 0) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              C ": `state` is not a state dict ($buffers is not a list)");
    /* the model's refusals (the front ends walk it) */
    CHECK_ERR(pg_state_dict_model_fail(C, 0, NULL, NULL) == PG_STATUS_ERR_ARG, PG_STATUS_ERR_ARG,
              C ": `model` has no parameters() / params() method");
    CHECK_ERR(pg_state_dict_model_fail(C, -1, NULL, "int") != 0, PG_STATUS_ERR_ARG,
              C ": parameters() returned a int, not a list of ag_tensors");
    CHECK_ERR(pg_state_dict_model_fail(NULL, 2, "b", "numeric") != 0, PG_STATUS_ERR_ARG,
              "ag_state_dict(): parameter 2 (b) is a numeric, not an ag_tensor");
    CHECK_ERR(pg_state_dict_model_fail(C, 1, "", "str") != 0, PG_STATUS_ERR_ARG,
              C ": parameter 1 (unnamed) is a str, not an ag_tensor");
}

/* ag_load_model()'s container (pg_state_dict_load_file): the parameters' names must match, the
 * buffers' need not; ggmlR's texts, all value errors; the parameters' dtype last, nothing written */
#define F "ag_load_model()"
static void file_refused(fixture *f, const char *msg)
{
    CHECK_ERR(pg_state_dict_load_file(NULL, f->model, f->state, -1) == PG_STATUS_ERR_VALUE,
              PG_STATUS_ERR_VALUE, msg);
    CHECK(untouched(f));
}

static void test_file(void)
{
    fixture f;
    setup(&f);
    const char *other[2] = {"W", "c"};
    f.state[0].names = other;
    file_refused(&f,
                 F ": parameter mismatch between saved state and rebuilt model.\n  missing in "
                   "file: b\n  not in model: c\nThe `model_fn` architecture must match the "
                   "saved one.");
    f.state[0].names = f.sn;
    f.m[1].dims = D33;
    file_refused(&f, F ": shape mismatch for parameter 'b': model 2x1 vs file 3x3.");
    f.m[1] = (pg_host_matrix){1, 1, 1, D2, NULL};
    file_refused(&f, F ": shape mismatch for parameter 'b': model 2x1 vs file 2.");
    f.m[1] = (pg_host_matrix){1, 1, 2, D21, f.v[1]};
    f.v[2][1] = NAN;
    file_refused(&f, F ": buffer 'mean' in the file contains NA, NaN or Inf");
    f.v[2][1] = 1e300; /* beyond the f32 buffer's range */
    file_refused(&f, F ": 'mean' holds 1e+300 (element 2), outside the f32 range");
    f.v[2][1] = 1;
    CHECK_ERR(pg_state_dict_load_file(F, f.model, f.state, PG_DTYPE_F64) == PG_STATUS_ERR_VALUE,
              PG_STATUS_ERR_VALUE,
              F ": dtype = \"f64\" was asked for, but the model's parameter 'W' is f32 (does "
                "model_fn fix its own dtype?)");
    CHECK(untouched(&f));
    f.state[1].n = 0; /* a buffer missing in the file: skipped, as ggmlR */
    CHECK(pg_state_dict_load_file(F, f.model, f.state, -1) == 0);
    double w[4], m[2];
    pg_tensor_read(f.t[0], w, PG_DTYPE_F64);
    pg_tensor_read(f.t[2], m, PG_DTYPE_F64);
    CHECK(w[0] == 0 && w[3] == 0.75 && m[0] == 0.5 && m[1] == 0.5);
    teardown(&f);
}

/* the container's checks before anything is built, in ggmlR's order with its texts */
static void test_container(void)
{
    int asked = 0, build = 0;
    pg_state_dict_container c = {.path = "m.rds",
                                 .format = "ggmlR.ag_state",
                                 .is_list = 1,
                                 .version_ok = 1,
                                 .stored_fn = 1,
                                 .trust = 1,
                                 .params_list = 1};
    CHECK(pg_state_dict_container_check(&c, &asked, &build) == 0 && asked == -1 &&
          build == PG_DTYPE_F32);
    c.all_f64 = 1, c.have_dtype = 1, c.dtype = "f32";
    CHECK(pg_state_dict_container_check(&c, &asked, &build) == 0 && asked == PG_DTYPE_F32 &&
          build == PG_DTYPE_F32);
    c.have_dtype = 0;
    CHECK(pg_state_dict_container_check(&c, &asked, &build) == 0 && build == PG_DTYPE_F64);
    c.params_list = 0;
    CHECK_ERR(pg_state_dict_container_check(&c, &asked, &build), PG_STATUS_ERR_VALUE,
              F ": the container's parameters are not a list");
    c.have_dtype = 1, c.dtype = "f16";
    CHECK_ERR(pg_state_dict_container_check(&c, &asked, &build), PG_STATUS_ERR_VALUE,
              F ": dtype \"f16\" is not supported by the CPU engine; use \"f32\" or \"f64\"");
    c.stored_fn = 0;
    CHECK_ERR(pg_state_dict_container_check(&c, &asked, &build), PG_STATUS_ERR_VALUE,
              F ": no `model_fn` available. Pass one via the `model_fn` argument, or re-save the "
                "model with `model_fn` so it is stored in the file.");
    c.stored_fn = 1, c.trust = 0;
    CHECK(pg_state_dict_container_check(&c, &asked, &build) == PG_STATUS_ERR_STATE &&
          strstr(pg_last_error(), "m.rds stores its model_fn as R code") != NULL);
    c.version_ok = 0, c.version = "2";
    CHECK_ERR(pg_state_dict_container_check(&c, &asked, &build), PG_STATUS_ERR_VALUE,
              F ": unsupported container version 2 (this ggmlR supports version 1).");
    c.format = "other";
    CHECK_ERR(pg_state_dict_container_check(&c, &asked, &build), PG_STATUS_ERR_VALUE,
              F ": file is not a ggmlR ag_state container. (m.rds: an R data file without format "
                "\"ggmlR.ag_state\")");
    CHECK(pg_state_dict_container_check(NULL, &asked, &build) == PG_STATUS_ERR_ARG);
    pg_clear_error();
}

void test_state_dict(void)
{
    test_file();
    test_container();
    test_args();
    test_names();
    test_values();
    test_not_strict();
    test_long_lists();
    test_bad_calls();
}
