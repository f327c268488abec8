/* ag_save_model / ag_load_model's argument rules (native/modelfile_args.c): each rule's status
 * and its one text for both front ends. */
#include <string.h>
#include <stdio.h>
#include "check.h"

/* the refusal's whole text */
static int says(int rc, int status, const char *text)
{
    return rc == status && pg_last_status() == status && !strcmp(pg_last_error(), text);
}

static void test_builder(void)
{
    CHECK(pg_mf_builder_args(PG_MF_FN_SAVE, PG_MF_ARG_NONE, 0) == PG_STATUS_OK);
    CHECK(pg_mf_builder_args(PG_MF_FN_SAVE, PG_MF_ARG_FUNCTION, 0) == PG_STATUS_OK);
    CHECK(says(pg_mf_builder_args(PG_MF_FN_SAVE, PG_MF_ARG_OTHER, 0), PG_STATUS_ERR_ARG,
               "ag_save_model(): `model_fn` must be a function or NULL."));
    CHECK(pg_mf_builder_args(PG_MF_FN_LOAD, PG_MF_ARG_FUNCTION, 0) == PG_STATUS_OK);
    CHECK(pg_mf_builder_args(PG_MF_FN_LOAD, PG_MF_ARG_NONE, 1) == PG_STATUS_OK);
    CHECK(says(pg_mf_builder_args(PG_MF_FN_LOAD, PG_MF_ARG_OTHER, 0), PG_STATUS_ERR_ARG,
               "ag_load_model(): `model_fn` must be a function or NULL."));
    /* the kind comes first, then the pair */
    CHECK(says(pg_mf_builder_args(PG_MF_FN_LOAD, PG_MF_ARG_OTHER, 1), PG_STATUS_ERR_ARG,
               "ag_load_model(): `model_fn` must be a function or NULL."));
    CHECK(says(pg_mf_builder_args(PG_MF_FN_LOAD, PG_MF_ARG_FUNCTION, 1), PG_STATUS_ERR_ARG,
               "ag_load_model(): give `model` or `model_fn`, not both"));
    CHECK(pg_mf_builder_args(7, PG_MF_ARG_NONE, 0) == PG_STATUS_ERR_ARG);
    /* values of the wrong kind: the language names the type */
    CHECK(says(pg_mf_arg_fail(PG_MF_FN_SAVE, PG_MF_BAD_OPTIMIZER, "list"), PG_STATUS_ERR_ARG,
               "ag_save_model(): optimizer must be an optimizer object, got list"));
    CHECK(says(pg_mf_arg_fail(PG_MF_FN_LOAD, PG_MF_BAD_OPTIMIZER, "str"), PG_STATUS_ERR_ARG,
               "ag_load_model(): optimizer must be an optimizer object, got str"));
    CHECK(says(pg_mf_arg_fail(PG_MF_FN_LOAD, PG_MF_BAD_BUILT, "numeric"), PG_STATUS_ERR_ARG,
               "ag_load_model(): `model_fn` must return an ag_sequential or ag_* layer (got "
               "class: numeric)."));
    CHECK(says(pg_mf_arg_fail(2, PG_MF_BAD_OPTIMIZER, "x"), PG_STATUS_ERR_ARG,
               "pg_mf_arg_fail(): bad arguments"));
    CHECK(says(pg_mf_arg_fail(PG_MF_FN_LOAD, PG_MF_BAD_MODEL, "int"), PG_STATUS_ERR_ARG,
               "ag_load_model(): `model` must be an ag_sequential or ag_* layer (an object with "
               "parameters()), got int"));
    CHECK(says(pg_mf_arg_fail(PG_MF_FN_LOAD, 3, "x"), PG_STATUS_ERR_ARG,
               "pg_mf_arg_fail(): bad arguments"));
    pg_clear_error();
}

static void test_dtype(void)
{
    int d = -1;
    CHECK(pg_mf_load_dtype("f32", NULL, &d) == PG_STATUS_OK && d == PG_DTYPE_F32);
    CHECK(pg_mf_load_dtype("f64", NULL, &d) == PG_STATUS_OK && d == PG_DTYPE_F64);
    CHECK(pg_mf_load_dtype("f6", NULL, &d) == PG_STATUS_OK && d == PG_DTYPE_F64); /* match.arg */
    CHECK(says(pg_mf_load_dtype("f16", NULL, &d), PG_STATUS_ERR_VALUE,
               "ag_load_model(): dtype \"f16\" is not supported by the CPU engine; use \"f32\" or "
               "\"f64\""));
    CHECK(says(pg_mf_load_dtype("b", NULL, &d), PG_STATUS_ERR_VALUE,
               "ag_load_model(): dtype \"bf16\" is not supported by the CPU engine; use \"f32\" "
               "or \"f64\""));
    const char *bad = "ag_load_model(): 'dtype' should be one of \"f32\", \"f64\", \"f16\", "
                      "\"bf16\", got ";
    char want[256];
    snprintf(want, sizeof want, "%s\"f8\"", bad);
    CHECK(says(pg_mf_load_dtype("f8", NULL, &d), PG_STATUS_ERR_VALUE, want));
    snprintf(want, sizeof want, "%s\"f\"", bad); /* ambiguous */
    CHECK(says(pg_mf_load_dtype("f", NULL, &d), PG_STATUS_ERR_VALUE, want));
    snprintf(want, sizeof want, "%s\"\"", bad);
    CHECK(says(pg_mf_load_dtype("", NULL, &d), PG_STATUS_ERR_VALUE, want));
    snprintf(want, sizeof want, "%s\"a\\\"b\"", bad); /* quoted */
    CHECK(says(pg_mf_load_dtype("a\"b", NULL, &d), PG_STATUS_ERR_VALUE, want));
    snprintf(want, sizeof want, "%s3", bad); /* no string: the front end's rendering */
    CHECK(says(pg_mf_load_dtype(NULL, "3", &d), PG_STATUS_ERR_ARG, want));
    char longv[200];
    memset(longv, 'x', sizeof longv - 1), longv[sizeof longv - 1] = '\0';
    CHECK(pg_mf_load_dtype(longv, NULL, &d) == PG_STATUS_ERR_VALUE &&
          strstr(pg_last_error(), "xxx...\"") != NULL);
    CHECK(pg_mf_load_dtype("f32", NULL, NULL) == PG_STATUS_ERR_ARG);
    pg_clear_error();
}

static void test_built(void)
{
    CHECK(pg_mf_build_dtype(PG_DTYPE_F32, 1) == PG_DTYPE_F32);
    CHECK(pg_mf_build_dtype(PG_DTYPE_F64, 0) == PG_DTYPE_F64);
    CHECK(pg_mf_build_dtype(-1, 1) == PG_DTYPE_F64);
    CHECK(pg_mf_build_dtype(-1, 0) == PG_DTYPE_F32);

    const char *names[2] = {"layer1_W", "layer1_b"};
    pg_tensor *w64 = pg_tensor_full(PG_DTYPE_F64, 2, 2, 0),
              *b64 = pg_tensor_full(PG_DTYPE_F64, 2, 1, 0),
              *b32 = pg_tensor_full(PG_DTYPE_F32, 2, 1, 0);
    pg_tensor *same[2] = {w64, b64}, *mixed[2] = {w64, b32};
    CHECK(pg_mf_built_dtype_check(-1, 2, names, mixed) == PG_STATUS_OK); /* nothing asked */
    CHECK(pg_mf_built_dtype_check(PG_DTYPE_F64, 2, names, same) == PG_STATUS_OK);
    CHECK(pg_mf_built_dtype_check(PG_DTYPE_F64, 0, NULL, NULL) == PG_STATUS_OK);
    CHECK(says(pg_mf_built_dtype_check(PG_DTYPE_F64, 2, names, mixed), PG_STATUS_ERR_VALUE,
               "ag_load_model(): dtype = \"f64\" was asked for, but the model's parameter "
               "'layer1_b' is f32 (does model_fn fix its own dtype?)"));
    CHECK(says(pg_mf_built_dtype_check(PG_DTYPE_F32, 2, names, same), PG_STATUS_ERR_VALUE,
               "ag_load_model(): dtype = \"f32\" was asked for, but the model's parameter "
               "'layer1_W' is f64 (does model_fn fix its own dtype?)"));
    CHECK(pg_mf_built_dtype_check(PG_DTYPE_F32, 2, NULL, same) == PG_STATUS_ERR_ARG);
    pg_tensor_release(w64), pg_tensor_release(b64), pg_tensor_release(b32);
    pg_clear_error();
    CHECK(!strcmp(pg_mf_no_config_note("no to_config", 0),
                  "ag_save_model(): saving the weights without the architecture (no to_config); "
                  "load with ag_load_model(path, model=...)"));
    CHECK(strstr(pg_mf_no_config_note(NULL, 1), "(); load with ag_load_model(path, model = ...)"));
}

void test_modelfile_args(void)
{
    test_builder();
    test_dtype();
    test_built();
}
