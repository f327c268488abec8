/* ag_save_model's config check (native/modelfile_check.c): the loader's budget, the rebuilt
 * names and shapes against the model's with one text for both front ends, the cache of checked
 * configs (a refusal remembers nothing), the rebuild-failure texts, the refusals of a config or
 * extra JSON cannot hold, and metadata 'target' with the loss's own classify kind. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static const char *CFG = "{\"type\": \"linear\", \"in_features\": 3, \"out_features\": 2}";
static const char *PN[2] = {"W", "b"}, *PN_SWAP[2] = {"b", "W"}, *BN[1] = {"rm"};

static pg_mf_model two(const char **pn, pg_tensor **p, int64_t nb, pg_tensor **b)
{
    pg_mf_model m = pg_mf_model_default();
    m.n_params = 2, m.param_names = pn, m.params = p;
    m.n_buffers = nb, m.buffer_names = BN, m.buffers = b;
    return m;
}

static int begin(const char *text, const pg_mf_model *m, int *dtype)
{
    int checked = -1;
    int rc = pg_mf_config_check_begin(text, m, &checked, dtype);
    return rc ? -1 : checked;
}

static void test_compare(void)
{
    pg_tensor *p[2] = {pg_tensor_new(PG_DTYPE_F32, 2, 3, NULL, PG_DTYPE_F64, 1, 2),
                       pg_tensor_new(PG_DTYPE_F64, 2, 1, NULL, PG_DTYPE_F64, 1, 2)};
    pg_tensor *b[1] = {pg_tensor_new(PG_DTYPE_F64, 2, 1, NULL, PG_DTYPE_F64, 1, 2)};
    pg_tensor *w4 = pg_tensor_new(PG_DTYPE_F32, 2, 4, NULL, PG_DTYPE_F64, 1, 2);
    pg_mf_model m = two(PN, p, 1, b);
    int dt = -1;
    pg_mf_config_cache_clear();
    CHECK(begin(CFG, &m, &dt) == 0 && dt == PG_DTYPE_F32); /* one parameter is f32 */

    /* another shape: refused with both lists, nothing remembered */
    pg_tensor *q[2] = {w4, p[1]};
    pg_mf_model built = two(PN, q, 1, b);
    CHECK_ERR(pg_mf_config_check_end(CFG, &m, &built), PG_STATUS_ERR_VALUE,
              "ag_save_model(): the model's architecture config would not load back: it rebuilds "
              "parameters 'W' 2x4, 'b' 2x1, the model has 'W' 2x3, 'b' 2x1; nothing was written");
    CHECK(begin(CFG, &m, &dt) == 0);
    /* a buffer missing: "none" */
    built = two(PN, p, 0, NULL);
    CHECK_ERR(pg_mf_config_check_end(CFG, &m, &built), PG_STATUS_ERR_VALUE,
              "it rebuilds buffers none, the model has 'rm' 2x1; nothing was written");
    /* another name */
    const char *other[2] = {"W", "c"};
    built = two(other, p, 1, b);
    CHECK_ERR(pg_mf_config_check_end(CFG, &m, &built), PG_STATUS_ERR_VALUE,
              "it rebuilds parameters 'W' 2x3, 'c' 2x1, the model has");
    CHECK(begin(CFG, &m, &dt) == 0);

    /* the same names and shapes in another order: passes, then remembered */
    pg_tensor *sw[2] = {p[1], p[0]};
    built = two(PN_SWAP, sw, 1, b);
    CHECK(pg_mf_config_check_end(CFG, &m, &built) == 0);
    CHECK(begin(CFG, &m, &dt) == 1);
    CHECK(begin("{\"type\": \"linear\"}", &m, &dt) == 0); /* another text */
    pg_tensor *p64[2] = {pg_tensor_new(PG_DTYPE_F64, 2, 3, NULL, PG_DTYPE_F64, 1, 2), p[1]};
    pg_mf_model m64 = two(PN, p64, 1, b);
    CHECK(begin(CFG, &m64, &dt) == 0 && dt == PG_DTYPE_F64); /* another dtype: not the same key */
    pg_mf_model none = pg_mf_model_default();
    CHECK(begin(CFG, &none, &dt) == 0 && dt == PG_DTYPE_F32); /* no parameters: f32 */

    /* the 16 newest are kept */
    char text[64];
    for (int i = 0; i < 16; i++) {
        snprintf(text, sizeof text, "{\"type\": \"t%d\"}", i);
        CHECK(pg_mf_config_check_end(text, &m, &m) == 0);
    }
    CHECK(begin(CFG, &m, &dt) == 0);
    CHECK(begin("{\"type\": \"t0\"}", &m, &dt) == 1 && begin("{\"type\": \"t15\"}", &m, &dt) == 1);
    pg_mf_config_cache_clear();
    CHECK(begin("{\"type\": \"t15\"}", &m, &dt) == 0);

    /* a long list is cut, within the message buffer */
    enum { N = 100 };
    pg_tensor *many[N];
    const char *names[N];
    char nbuf[N][24];
    for (int i = 0; i < N; i++) {
        snprintf(nbuf[i], sizeof nbuf[i], "layer%d_weight", i);
        names[i] = nbuf[i], many[i] = p[0];
    }
    pg_mf_model big = pg_mf_model_default();
    big.n_params = N, big.param_names = names, big.params = many;
    CHECK_ERR(pg_mf_config_check_end(CFG, &big, &m), PG_STATUS_ERR_VALUE, "(100 in all); nothing");

    /* bad arguments */
    int c = 0;
    CHECK_ERR(pg_mf_config_check_begin(NULL, &m, &c, &dt), PG_STATUS_ERR_ARG, "NULL config");
    CHECK_ERR(pg_mf_config_check_begin(CFG, &m, NULL, &dt), PG_STATUS_ERR_ARG, "NULL out");
    CHECK_ERR(pg_mf_config_check_end(CFG, &m, NULL), PG_STATUS_ERR_ARG, "bad model");
    pg_tensor *nul[2] = {p[0], NULL};
    pg_mf_model bad = two(PN, nul, 0, NULL);
    CHECK_ERR(pg_mf_config_check_begin(CFG, &bad, &c, &dt), PG_STATUS_ERR_ARG, "parameter 2");
    REL(p[0]), REL(p[1]), REL(b[0]), REL(w4), REL(p64[0]);
}

/* the loader's plausibility checks with its budget: refused, nothing remembered */
static void test_budget(void)
{
    pg_tensor *p[2] = {pg_tensor_new(PG_DTYPE_F64, 2, 3, NULL, PG_DTYPE_F64, 1, 2),
                       pg_tensor_new(PG_DTYPE_F64, 2, 1, NULL, PG_DTYPE_F64, 1, 2)};
    pg_mf_model m = two(PN, p, 0, NULL);
    int dt = -1;
    pg_mf_config_cache_clear();
    /* 8 elements: the budget is 16 * 8 + 65536 = 65664 */
    const char *huge = "{\"type\": \"linear\", \"in_features\": 300, \"out_features\": 300}";
    CHECK_ERR(begin(huge, &m, &dt) < 0, PG_STATUS_ERR_VALUE,
              "ag_save_model(): the model's architecture config would not load back (architecture "
              "config has an implausible layer size");
    CHECK_ERR(begin("{\"type\": ", &m, &dt) < 0, PG_STATUS_ERR_VALUE, "); nothing was written");
    CHECK(begin("{\"type\": \"linear\", \"in_features\": 256, \"out_features\": 256}", &m, &dt) ==
              0 &&
          dt == PG_DTYPE_F64); /* 65536: within */
    CHECK(pg_mf_config_check_end(huge, &m, &m) == 0);
    CHECK(begin(huge, &m, &dt) == 1); /* checked before: no second look (as the front ends did) */
    pg_mf_config_cache_clear();
    REL(p[0]), REL(p[1]);
}

static void test_rebuild_fail(const char *path)
{
    CHECK_ERR(pg_mf_rebuild_fail(NULL, PG_MF_REBUILD_SAVE, "KeyError: 'units'"),
              PG_STATUS_ERR_VALUE,
              "ag_save_model(): the model's architecture config would not load back (KeyError: "
              "'units'); nothing was written");
    CHECK_ERR(pg_mf_rebuild_fail(NULL, PG_MF_REBUILD_LOAD, "x"), PG_STATUS_ERR_ARG,
              "bad arguments");
    pg_tensor *t = pg_tensor_new(PG_DTYPE_F32, 1, 1, NULL, PG_DTYPE_F64, 1, 1);
    pg_mf_model m = pg_mf_model_default();
    const char *nm[1] = {"w"};
    m.n_params = 1, m.param_names = nm, m.params = &t;
    pg_mf_writer *w = NULL;
    CHECK(pg_mf_writer_new(&w) == 0);
    CHECK(pg_mf_writer_add_model(w, &m) == 0);
    /* metadata 'target': classify -1 takes the loss's own kind; an unknown loss names the save */
    CHECK_ERR(pg_mf_writer_set_target(w, "nope", -1, -1, NULL), PG_STATUS_ERR_VALUE,
              "ag_save_model()");
    CHECK(pg_mf_writer_set_target(w, "cross_entropy", -1, -1, NULL) == 0);
    CHECK(pg_mf_writer_commit(w, path) == 0);
    pg_mf_writer_free(w);
    pg_mf *mf = NULL;
    CHECK(pg_mf_open(path, "ag_load_model()", &mf) == 0);
    if (mf) {
        CHECK(pg_mf_check_info(mf) == 0);
        CHECK(pg_mf_target_classify(mf) == PG_FIT_CLASSIFY_ARGMAX);
        char want[512];
        snprintf(want, sizeof want,
                 "%s: cannot rebuild the model from its architecture config: ValueError: bad",
                 path);
        CHECK_ERR(pg_mf_rebuild_fail(mf, PG_MF_REBUILD_LOAD, "ValueError: bad"),
                  PG_STATUS_ERR_VALUE, want);
        snprintf(want, sizeof want, "%s: the rebuilt model is not usable: no parameters()", path);
        CHECK_ERR(pg_mf_rebuild_fail(mf, PG_MF_REBUILD_UNUSABLE, "no parameters()"),
                  PG_STATUS_ERR_VALUE, want);
        CHECK_ERR(pg_mf_rebuild_fail(mf, 7, "x"), PG_STATUS_ERR_ARG, "bad arguments");
        pg_mf_close(mf);
    }
    /* no loss: any kind, -1 is NONE */
    CHECK(pg_mf_writer_new(&w) == 0);
    const char *labels[2] = {"a", "b"};
    CHECK(pg_mf_writer_set_target(w, NULL, -1, 2, labels) == 0);
    pg_mf_writer_free(w);
    REL(t);
}

static void test_json_refuse(void)
{
    CHECK_ERR(pg_mf_json_refuse(PG_MF_JSON_DEEP, "extra", NULL), PG_STATUS_ERR_VALUE,
              "ag_save_model(): extra is nested deeper than 128 levels (what ag_load_model reads)");
    CHECK_ERR(pg_mf_json_refuse(PG_MF_JSON_NOT_JSON, "the model's architecture config",
                                "Object of type function is not JSON serializable"),
              PG_STATUS_ERR_ARG,
              "ag_save_model(): the model's architecture config must be JSON-serialisable (Object "
              "of type function is not JSON serializable)");
    CHECK_ERR(pg_mf_json_refuse(PG_MF_JSON_NOT_JSON, NULL, NULL), PG_STATUS_ERR_ARG,
              "ag_save_model(): a value must be JSON-serialisable (?)");
    CHECK_ERR(pg_mf_json_refuse(9, "extra", NULL), PG_STATUS_ERR_ARG, "bad arguments");
}

void test_modelfile_check(void)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/pg_test_mfcheck_%d.st", (int)getpid());
    test_compare();
    test_budget();
    test_rebuild_fail(path);
    test_json_refuse();
    unlink(path);
}
