/* The model-file schema (native/modelfile*.c): files written with pg_st_write and a metadata
 * map, then pg_mf_open / pg_mf_check_load / pg_mf_check_info / pg_mf_match / pg_mf_opt_check,
 * their accepted values and each refusal's text, and that a refused check changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static char mdir[256];
static const double VALS[6] = {1, 2, 3, 4, 5, 6};

/* a file with tensors W 2x3, b 2x1, rm 2x1 (f64) and optimizer.m.W 2x3, and the metadata
 * pairs kv[0..2n) (NULL-terminated list) */
static void write_file(const char *path, const char **kv)
{
    pg_st_tensor t[4] = {{"W", PG_ST_DTYPE_F64, 2, 2, 3, VALS},
                         {"b", PG_ST_DTYPE_F64, 2, 2, 1, VALS},
                         {"rm", PG_ST_DTYPE_F64, 2, 2, 1, VALS},
                         {"optimizer.m.W", PG_ST_DTYPE_F64, 2, 2, 3, VALS}};
    const char *k[16], *v[16];
    int64_t n = 0;
    for (; kv[2 * n]; n++) k[n] = kv[2 * n], v[n] = kv[2 * n + 1];
    CHECK(pg_st_write(path, t, 4, k, v, n) == 0);
}

static pg_mf *open_ok(const char *path)
{
    pg_mf *mf = NULL;
    CHECK(pg_mf_open(path, "ag_load_model()", &mf) == 0);
    return mf;
}

#define GOOD_HEAD                                                                                  \
    "format", "pyggmlr.ag_model", "format_version", "1", "parameters", "[\"W\",\"b\"]", "buffers", \
        "[\"rm\"]"

/* check_load with opts on a file of kv: the status, message containing needle (status 0: ok) */
static void load_case(const char **kv, pg_mf_load_opts o, int status, const char *needle)
{
    char path[300];
    snprintf(path, sizeof path, "%s/m.safetensors", mdir);
    write_file(path, kv);
    pg_mf *mf = open_ok(path);
    if (!mf) return;
    pg_clear_error();
    int rc = pg_mf_check_load(mf, &o);
    CHECK(rc == status);
    if (status) {
        CHECK(strstr(pg_last_error(), needle) != NULL);
        if (!strstr(pg_last_error(), needle)) fprintf(stderr, "  got: %s\n", pg_last_error());
        CHECK(strncmp(pg_last_error(), path, strlen(path)) == 0 ||
              strncmp(pg_last_error(), "ag_load_model(): ", 17) == 0);
        CHECK(!pg_mf_has_names(mf, PG_MF_LIST_PARAMETERS)); /* a refusal records nothing */
        CHECK(pg_mf_epoch(mf) == -1 && !pg_mf_extra(mf) && !pg_mf_config(mf));
    }
    pg_clear_error();
    pg_mf_close(mf);
}

static void test_load_rules(void)
{
    pg_mf_load_opts o = pg_mf_load_opts_default(), m = o, r = o;
    m.have_model = 1, r.rebuild = 1;
    const char *good[] = {GOOD_HEAD, "epoch", "12", "extra", "{\"a\":[1,null]}", NULL};
    load_case(good, m, 0, "");
    const char *fmt[] = {"format", "other", NULL};
    load_case(fmt, m, PG_STATUS_ERR_VALUE, "not a pyggmlr model file (format \"other\")");
    const char *ver[] = {"format", "pyggmlr.ag_model", "format_version", "2", NULL};
    load_case(ver, m, PG_STATUS_ERR_VALUE, "unsupported model file version \"2\" (this pyggmlr");
    const char *nover[] = {"format", "pyggmlr.ag_model", NULL};
    load_case(nover, m, PG_STATUS_ERR_VALUE, "unsupported model file version None");
    const char *none[] = {NULL};
    load_case(none, o, PG_STATUS_ERR_VALUE, "(no 'format' metadata); pass model= to load");
    load_case(none, m, 0, "");
    const char *pobj[] = {"parameters", "{}", NULL};
    load_case(pobj, m, PG_STATUS_ERR_VALUE,
              "metadata 'parameters' has the wrong type (an object; an array expected)");
    const char *pdup[] = {"parameters", "[\"W\",\"W\"]", NULL};
    load_case(pdup, m, PG_STATUS_ERR_VALUE, "metadata 'parameters' must list distinct names");
    const char *pnum[] = {"buffers", "[\"W\",3]", NULL};
    load_case(pnum, m, PG_STATUS_ERR_VALUE, "metadata 'buffers' must list distinct names");
    const char *pmiss[] = {"parameters", "[\"W\",\"x\",\"y\"]", NULL};
    load_case(pmiss, m, PG_STATUS_ERR_VALUE,
              "metadata 'parameters' names tensors that are not in the file: x, y");
    const char *pbad[] = {"parameters", "[\"W\",", NULL};
    load_case(pbad, m, PG_STATUS_ERR_VALUE, "metadata 'parameters' is not valid JSON");
    const char *ep[] = {GOOD_HEAD, "epoch", "1e3", NULL};
    load_case(ep, m, PG_STATUS_ERR_VALUE,
              "metadata 'epoch' is not a non-negative integer: \"1e3\"");
    const char *ep13[] = {GOOD_HEAD, "epoch", "1234567890123", NULL};
    load_case(ep13, m, PG_STATUS_ERR_VALUE, "not a non-negative integer");
    const char *noep[] = {GOOD_HEAD, NULL};
    pg_mf_load_opts ne = m;
    ne.need_epoch = 1;
    load_case(noep, ne, PG_STATUS_ERR_VALUE, "not a training checkpoint (no epoch");
    const char *ex[] = {GOOD_HEAD, "extra", "{\"a\":1,\"a\":2}", NULL};
    load_case(ex, m, PG_STATUS_ERR_VALUE, "metadata 'extra' is not valid JSON");
    load_case(noep, r, PG_STATUS_ERR_VALUE, "the file has no architecture (metadata 'config')");
    const char *carr[] = {GOOD_HEAD, "config", "[]", NULL};
    load_case(carr, r, PG_STATUS_ERR_VALUE, "metadata 'config' has the wrong type");
    const char *cbig[] = {GOOD_HEAD, "config", "{\"a\":100000,\"b\":100000}", NULL};
    load_case(cbig, r, PG_STATUS_ERR_VALUE, "implausible layer size");
    const char *clin[] = {GOOD_HEAD, "config",
                          "{\"type\":\"sequential\",\"layers\":[{\"type\":\"linear\","
                          "\"in_features\":3,\"out_features\":4}]}",
                          NULL};
    load_case(clin, r, PG_STATUS_ERR_VALUE, "ag_load_model(): ");
    const char *cok[] = {GOOD_HEAD, "config",
                         "{\"type\":\"sequential\",\"layers\":[{\"type\":\"custom\"}]}", NULL};
    load_case(cok, r, 0, "");
}

static void test_values_and_match(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/v.safetensors", mdir);
    const char *kv[] = {GOOD_HEAD, "epoch", "007", "extra", "[1]", NULL};
    write_file(path, kv);
    pg_mf *mf = open_ok(path);
    if (!mf) return;
    pg_mf_load_opts o = pg_mf_load_opts_default();
    o.have_model = 1;
    CHECK(pg_mf_check_load(mf, &o) == 0);
    CHECK(pg_mf_name_count(mf, PG_MF_LIST_PARAMETERS) == 2);
    CHECK(!strcmp(pg_mf_name(mf, PG_MF_LIST_PARAMETERS, 1), "b"));
    CHECK(pg_mf_name(mf, PG_MF_LIST_PARAMETERS, 2) == NULL);
    CHECK(pg_mf_name(mf, 7, 0) == NULL);
    CHECK(pg_mf_epoch(mf) == 7 && !strcmp(pg_mf_extra(mf), "[1]") && !pg_mf_config(mf));
    CHECK(pg_mf_index(mf, "optimizer.m.W") == 3 && pg_mf_index(mf, "zz") == -1);
    CHECK(pg_mf_all_f64(mf) == 1);
    const char *names[2] = {"b", "W"};
    int64_t rows[2] = {2, 2}, cols[2] = {1, 3}, idx[2] = {-5, -5};
    CHECK(pg_mf_match(mf, PG_MF_LIST_PARAMETERS, 2, names, rows, cols, idx) == 0);
    CHECK(idx[0] == 1 && idx[1] == 0);
    const char *one[1] = {"W"};
    idx[0] = -5;
    CHECK_ERR(pg_mf_match(mf, PG_MF_LIST_PARAMETERS, 1, one, rows + 1, cols + 1, idx),
              PG_STATUS_ERR_VALUE,
              "parameter mismatch between saved state and model. missing in file: (none); not in "
              "model: b");
    CHECK(idx[0] == -5);
    const char *other[2] = {"W", "q"};
    CHECK_ERR(pg_mf_match(mf, PG_MF_LIST_PARAMETERS, 2, other, rows, cols, NULL),
              PG_STATUS_ERR_VALUE, "missing in file: q; not in model: b");
    int64_t c2[2] = {1, 2};
    CHECK_ERR(pg_mf_match(mf, PG_MF_LIST_PARAMETERS, 2, names, rows, c2, NULL), PG_STATUS_ERR_VALUE,
              "shape mismatch for parameter 'W': model 2x2 vs file 2x3");
    const char *rm[1] = {"rm"};
    CHECK(pg_mf_match(mf, PG_MF_LIST_BUFFERS, 1, rm, rows, cols, NULL) == 0);
    CHECK_ERR(pg_mf_match(mf, PG_MF_LIST_BUFFERS, 0, NULL, NULL, NULL, NULL), PG_STATUS_ERR_VALUE,
              "buffer mismatch between saved state and model. missing in file: (none); not in "
              "model: rm");
    CHECK_ERR(pg_mf_match(mf, 9, 0, NULL, NULL, NULL, NULL), PG_STATUS_ERR_ARG, "pg_mf_match");
    CHECK_ERR(pg_mf_match(NULL, 0, 0, NULL, NULL, NULL, NULL), PG_STATUS_ERR_ARG, "pg_mf_match");
    pg_mf_close(mf);

    /* a foreign file (no lists): the model's names when all are there, else every tensor */
    const char *bare[] = {NULL};
    write_file(path, bare);
    mf = open_ok(path);
    if (!mf) return;
    CHECK(pg_mf_check_load(mf, &o) == 0 && !pg_mf_has_names(mf, PG_MF_LIST_PARAMETERS));
    CHECK(pg_mf_match(mf, PG_MF_LIST_PARAMETERS, 2, names, rows, cols, NULL) == 0);
    CHECK_ERR(pg_mf_match(mf, PG_MF_LIST_PARAMETERS, 2, other, rows, cols, NULL),
              PG_STATUS_ERR_VALUE, "missing in file: q; not in model: b, rm, optimizer.m.W");
    CHECK(pg_mf_match(mf, PG_MF_LIST_BUFFERS, 1, one, rows + 1, cols + 1, NULL) == 0);
    pg_mf_close(mf);
    pg_mf_close(NULL);
}

static void opt_case(const char *opt, const char *kind, int status, const char *needle)
{
    char path[300];
    snprintf(path, sizeof path, "%s/o.safetensors", mdir);
    const char *kv[] = {GOOD_HEAD, "optimizer", opt, NULL};
    if (!opt) kv[8] = NULL;
    write_file(path, kv);
    pg_mf *mf = open_ok(path);
    if (!mf) return;
    const char *names[2] = {"b", "W"};
    int64_t rows[2] = {2, 2}, cols[2] = {1, 3};
    pg_clear_error();
    int rc = pg_mf_opt_check(mf, kind, 2, names, rows, cols);
    CHECK(rc == status);
    if (status) {
        CHECK(strstr(pg_last_error(), needle) != NULL);
        if (!strstr(pg_last_error(), needle)) fprintf(stderr, "  got: %s\n", pg_last_error());
        CHECK(pg_mf_opt_count(mf, 1) == 0 && pg_mf_opt_t(mf) == -1);
    }
    pg_clear_error();
    pg_mf_close(mf);
}

#define OPT_OK(rest)                                                                               \
    "{\"kind\":\"adam\",\"t\":3,\"accum_count\":0,\"params\":[\"W\",\"b\"],\"slots\":[\"m\"]" rest \
    "}"

static void test_optimizer(void)
{
    opt_case(OPT_OK(",\"hyper\":{\"lr\":0.5,\"n\":2,\"f\":true,\"z\":null}"), "adam", 0, "");
    opt_case(NULL, "adam", PG_STATUS_ERR_VALUE, "the file has no optimizer state");
    opt_case("[1]", "adam", PG_STATUS_ERR_VALUE, "metadata 'optimizer' has the wrong type");
    opt_case("{\"kind\":\"adam\",\"t\":1,\"accum_count\":0,\"params\":[1],\"slots\":[]}", "adam",
             PG_STATUS_ERR_VALUE, "optimizer metadata: params and slots must be lists of names");
    opt_case("{\"kind\":\"adam\",\"t\":1,\"accum_count\":0,\"params\":[]}", "adam",
             PG_STATUS_ERR_VALUE, "params and slots must be lists of names");
    opt_case("{\"kind\":\"adam\",\"t\":1.0,\"accum_count\":0,\"params\":[],\"slots\":[]}", "adam",
             PG_STATUS_ERR_VALUE, "optimizer metadata: t and accum_count must be integers >= 0");
    opt_case("{\"kind\":\"adam\",\"t\":1,\"accum_count\":-1,\"params\":[],\"slots\":[]}", "adam",
             PG_STATUS_ERR_VALUE, "t and accum_count must be integers >= 0");
    opt_case(OPT_OK(",\"hyper\":{\"lr\":\"x\"}"), "adam", PG_STATUS_ERR_VALUE,
             "optimizer metadata: hyper must map names to numbers");
    opt_case(OPT_OK(",\"hyper\":[]"), "adam", PG_STATUS_ERR_VALUE, "hyper must map names");
    opt_case(OPT_OK(""), "sgd", PG_STATUS_ERR_VALUE,
             "optimizer state mismatch: the file's state is for adam, this optimizer is sgd");
    opt_case("{\"kind\":5,\"t\":1,\"accum_count\":0,\"params\":[],\"slots\":[]}", "sgd",
             PG_STATUS_ERR_VALUE, "the file's state is for (unknown), this optimizer is sgd");
    opt_case("{\"kind\":\"adam\",\"t\":1,\"accum_count\":0,\"params\":[\"W\"],\"slots\":[]}",
             "adam", PG_STATUS_ERR_VALUE,
             "optimizer state mismatch: the optimizer's parameters are b, W; the file has W");

    /* the values, and a slot tensor whose shape is not the parameter's */
    char path[300];
    snprintf(path, sizeof path, "%s/o.safetensors", mdir);
    const char *kv[] = {GOOD_HEAD, "optimizer",
                        OPT_OK(",\"hyper\":{\"lr\":0.5,\"n\":2,\"z\":null}"), NULL};
    write_file(path, kv);
    pg_mf *mf = open_ok(path);
    if (!mf) return;
    const char *names[2] = {"W", "b"};
    int64_t rows[2] = {2, 2}, cols[2] = {3, 1}, bad[2] = {3, 1};
    CHECK(pg_mf_opt_check(mf, "adam", 2, names, rows, cols) == 0);
    CHECK(pg_mf_opt_t(mf) == 3 && pg_mf_opt_accum_count(mf) == 0);
    CHECK(!strcmp(pg_mf_opt_kind(mf), "adam"));
    CHECK(pg_mf_opt_count(mf, 0) == 2 && pg_mf_opt_count(mf, 2) == 1);
    CHECK(!strcmp(pg_mf_opt_name(mf, 0, 1), "n") && pg_mf_opt_hyper_value(mf, 1) == 2);
    CHECK(pg_mf_opt_hyper_type(mf, 0) == PG_MF_NUM_DOUBLE);
    CHECK(pg_mf_opt_hyper_type(mf, 1) == PG_MF_NUM_INT && pg_mf_opt_hyper_type(mf, 2) == -1);
    CHECK(!strcmp(pg_mf_opt_name(mf, 1, 1), "b") && pg_mf_opt_name(mf, 3, 0) == NULL);
    CHECK_ERR(pg_mf_opt_check(mf, "adam", 2, names, bad, cols), PG_STATUS_ERR_VALUE,
              "optimizer state 'm' for 'W' is 2x3, the parameter is 3x3");
    CHECK(pg_mf_opt_t(mf) == 3); /* the refused check left the last values */
    CHECK_ERR(pg_mf_opt_check(mf, NULL, 0, NULL, NULL, NULL), PG_STATUS_ERR_ARG, "pg_mf_opt");
    pg_mf_close(mf);
}

static void test_info_and_open(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/i.safetensors", mdir);
    const char *kv[] = {GOOD_HEAD,
                        "epoch",
                        "x",
                        "optimizer",
                        "{\"kind\":\"sgd\"}",
                        "config",
                        "{\"type\":\"sequential\"}",
                        NULL};
    write_file(path, kv);
    pg_mf *mf = open_ok(path);
    if (!mf) return;
    CHECK(pg_mf_check_info(mf) == 0);
    CHECK(pg_mf_epoch(mf) == -1 && !strcmp(pg_mf_opt_kind(mf), "sgd") && pg_mf_config(mf));
    CHECK(!strcmp(pg_mf_meta(mf, "format_version"), "1") && !pg_mf_meta(mf, "nope"));
    pg_mf_close(mf);
    const char *kv2[] = {GOOD_HEAD, "optimizer", "[]", NULL};
    write_file(path, kv2);
    mf = open_ok(path);
    if (!mf) return;
    CHECK_ERR(pg_mf_check_info(mf), PG_STATUS_ERR_VALUE, "metadata 'optimizer' has the wrong type");
    CHECK(!pg_mf_has_names(mf, PG_MF_LIST_PARAMETERS));
    pg_mf_close(mf);

    /* framing errors name the function and the file; a missing file is an I/O error */
    pg_mf *out = (pg_mf *)1;
    snprintf(path, sizeof path, "%s/junk.safetensors", mdir);
    FILE *f = fopen(path, "wb");
    if (f) fputs("junk", f), fclose(f);
    CHECK_ERR(pg_mf_open(path, "ag_model_info()", &out), PG_STATUS_ERR_VALUE, "ag_model_info(): ");
    CHECK(out == NULL);
    snprintf(path, sizeof path, "%s/none.safetensors", mdir);
    CHECK_ERR(pg_mf_open(path, NULL, &out), PG_STATUS_ERR_IO, "");
    CHECK_ERR(pg_mf_open(NULL, NULL, &out), PG_STATUS_ERR_ARG, "pg_mf_open");
    CHECK_ERR(pg_mf_check_load(NULL, NULL), PG_STATUS_ERR_ARG, "pg_mf_check_load");
    CHECK_ERR(pg_mf_check_info(NULL), PG_STATUS_ERR_ARG, "pg_mf_check_info");
}

/* the writer: what it writes loads back through the reader; its refusals change nothing */
static void test_writer(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/w.safetensors", mdir);
    pg_st_tensor W = {"W", PG_ST_DTYPE_F32, 2, 2, 3, NULL},
                 b = {"b", PG_ST_DTYPE_F64, 2, 2, 1, VALS};
    pg_st_tensor rm = {"rm", PG_ST_DTYPE_F64, 2, 2, 1, VALS},
                 cb = {"cb", PG_ST_DTYPE_F64, 1, 2, 1, VALS};
    float wf[6] = {1, 2, 3, 4, 5, 6};
    W.data = wf;
    pg_mf_writer *w = NULL;
    CHECK(pg_mf_writer_new(&w) == 0);
    if (!w) return;
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_PARAMETER, &W) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_PARAMETER, &b) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_BUFFER, &rm) == 0);
    CHECK(pg_mf_writer_check(w) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_TENSOR, &cb) == 0);
    CHECK(pg_mf_writer_set(w, PG_MF_FIELD_CREATED_BY, "test") == 0);
    CHECK(pg_mf_writer_set(w, PG_MF_FIELD_EXTRA, "{\"k\":[1,2]}") == 0);
    CHECK_ERR(pg_mf_writer_set(w, PG_MF_FIELD_EXTRA, "{\"k\":"), PG_STATUS_ERR_VALUE,
              "ag_save_model(): metadata 'extra' is not valid JSON");
    CHECK_ERR(pg_mf_writer_set_epoch(w, 1000000000000LL), PG_STATUS_ERR_VALUE,
              "ag_save_model(): epoch must be an integer in [0, 1e12) (what ag_load_model reads "
              "back), got 1000000000000");
    /* the front ends' check (pg_mf_epoch_arg): one rule and text, the value as the user wrote it */
    CHECK(pg_mf_epoch_arg(999999999999.0, "999999999999", 0) == 0);
    CHECK_ERR(pg_mf_epoch_arg(1.5, "1.5", 0), PG_STATUS_ERR_VALUE,
              "ag_save_model(): epoch must be an integer in [0, 1e12) (what ag_load_model reads "
              "back), got 1.5");
    CHECK_ERR(pg_mf_epoch_arg(-1, "-1", 0), PG_STATUS_ERR_VALUE, "got -1");
    CHECK_ERR(pg_mf_epoch_arg(0, "str 'a'", 1), PG_STATUS_ERR_ARG, "reads back), got str 'a'");
    CHECK(pg_mf_writer_set_epoch(w, 41) == 0);
    const char *hn[3] = {"lr", "n", "nesterov"}, *pn[2] = {"W", "b"};
    double hv[3] = {0.001, 5, 1};
    int ht[3] = {PG_MF_NUM_DOUBLE, PG_MF_NUM_INT, PG_MF_NUM_BOOL};
    pg_mf_opt_meta m = pg_mf_opt_meta_default();
    m.kind = "adam", m.t = 4, m.accum_count = 1;
    m.n_hyper = 3, m.hyper_names = hn, m.hyper_values = hv, m.hyper_types = ht;
    m.n_params = 2, m.params = pn;
    CHECK(pg_mf_writer_set_optimizer(w, &m) == 0);
    pg_st_tensor mw = {"", PG_ST_DTYPE_F32, 2, 2, 3, wf};
    CHECK(pg_mf_writer_add_slot(w, "m", "W", &mw) == 0);
    CHECK(pg_mf_writer_add_slot(w, "v", NULL, NULL) == 0); /* listed, no tensor */
    CHECK(pg_mf_writer_add_slot(w, "m", "W", &mw) == 0);   /* a duplicate: the commit refuses */
    CHECK_ERR(pg_mf_writer_commit(w, path), PG_STATUS_ERR_VALUE, "duplicate tensor name");
    CHECK(access(path, F_OK) != 0);
    pg_mf_writer_free(w);

    CHECK(pg_mf_writer_new(&w) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_PARAMETER, &W) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_PARAMETER, &b) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_BUFFER, &rm) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_TENSOR, &cb) == 0);
    CHECK(pg_mf_writer_set_epoch(w, 41) == 0);
    CHECK(pg_mf_writer_set(w, PG_MF_FIELD_EXTRA, "[1]") == 0);
    CHECK(pg_mf_writer_set_optimizer(w, &m) == 0);
    CHECK(pg_mf_writer_add_slot(w, "v", NULL, NULL) == 0);
    CHECK(pg_mf_writer_add_slot(w, "m", "W", &mw) == 0);
    CHECK(pg_mf_writer_commit(w, path) == 0);
    pg_mf_writer_free(w);
    pg_mf *mf = open_ok(path);
    if (!mf) return;
    pg_mf_load_opts o = pg_mf_load_opts_default();
    CHECK(pg_mf_check_load(mf, &o) == 0);
    CHECK(!strcmp(pg_mf_meta(mf, "parameters"), "[\"W\",\"b\"]"));
    CHECK(!strcmp(pg_mf_meta(mf, "format"), "pyggmlr.ag_model") && pg_mf_epoch(mf) == 41);
    CHECK(!strcmp(pg_mf_extra(mf), "[1]") && !pg_mf_meta(mf, "created_by"));
    CHECK(!strcmp(pg_mf_meta(mf, "optimizer"),
                  "{\"kind\":\"adam\",\"t\":4,\"accum_count\":1,\"hyper\":{\"lr\":0.001,"
                  "\"n\":5,\"nesterov\":true},\"params\":[\"W\",\"b\"],\"slots\":[\"m\",\"v\"]}"));
    CHECK(!strcmp(pg_st_name(pg_mf_st(mf), 3), "optimizer.m.W"));
    CHECK(!strcmp(pg_st_name(pg_mf_st(mf), 4), "cb"));
    int64_t rows[2] = {2, 2}, cols[2] = {3, 1};
    CHECK(pg_mf_opt_check(mf, "adam", 2, pn, rows, cols) == 0);
    pg_mf_close(mf);

    /* the save rules */
    CHECK(pg_mf_writer_new(&w) == 0);
    pg_st_tensor W2 = W;
    W2.name = "rm";
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_PARAMETER, &W) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_PARAMETER, &W2) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_BUFFER, &rm) == 0);
    CHECK(pg_mf_writer_add(w, PG_MF_ROLE_BUFFER, &W) == 0);
    CHECK_ERR(pg_mf_writer_check(w), PG_STATUS_ERR_VALUE,
              "ag_save_model(): names used by both a parameter and a buffer: W, rm");
    CHECK_ERR(pg_mf_writer_commit(w, path), PG_STATUS_ERR_VALUE, "both a parameter and a buffer");
    /* the same rule by the names alone, before the config (both front ends) */
    const char *pnames[2] = {"W", "rm"}, *bnames[2] = {"rm", "W"}, *other[1] = {"b"};
    pg_mf_model nm = pg_mf_model_default();
    nm.n_params = nm.n_buffers = 2, nm.param_names = pnames, nm.buffer_names = bnames;
    CHECK_ERR(pg_mf_names_check(&nm), PG_STATUS_ERR_VALUE,
              "ag_save_model(): names used by both a parameter and a buffer: W, rm");
    nm.n_buffers = 1, nm.buffer_names = other;
    CHECK(pg_mf_names_check(&nm) == 0);
    nm.buffer_names = NULL;
    CHECK_ERR(pg_mf_names_check(&nm), PG_STATUS_ERR_ARG, "pg_mf_names_check");
    CHECK_ERR(pg_mf_names_check(NULL), PG_STATUS_ERR_ARG, "pg_mf_names_check");
    CHECK_ERR(pg_mf_writer_add(w, 7, &W), PG_STATUS_ERR_ARG, "pg_mf_writer_add");
    CHECK_ERR(pg_mf_writer_set(w, 9, "x"), PG_STATUS_ERR_ARG, "pg_mf_writer_set");
    m.t = -1;
    CHECK_ERR(pg_mf_writer_set_optimizer(w, &m), PG_STATUS_ERR_VALUE, "t and accum_count");
    CHECK_ERR(pg_mf_writer_set_optimizer(w, NULL), PG_STATUS_ERR_ARG, "pg_mf_writer_set_opt");
    pg_mf_writer_free(w);
    pg_mf_writer_free(NULL);
    CHECK_ERR(pg_mf_writer_new(NULL), PG_STATUS_ERR_ARG, "pg_mf_writer_new");
    CHECK_ERR(pg_mf_writer_commit(NULL, path), PG_STATUS_ERR_ARG, "pg_mf_writer_commit");
}

/* hostile metadata: byte edits of good texts through every check; any outcome but a crash or
 * a leak (ASan) is fine, and a refusal always leaves a message */
static void test_fuzz(void)
{
    char path[300], buf[6][256];
    snprintf(path, sizeof path, "%s/f.safetensors", mdir);
    const char *base[6] = {"[\"W\",\"b\"]",
                           "[\"rm\"]",
                           "12",
                           "{\"a\":[1,null]}",
                           OPT_OK(",\"hyper\":{\"lr\":0.5}"),
                           "{\"type\":\"sequential\"}"};
    const char *keys[6] = {"parameters", "buffers", "epoch", "extra", "optimizer", "config"};
    const char *names[2] = {"W", "b"};
    int64_t rows[2] = {2, 2}, cols[2] = {3, 1};
    lcg = 29;
    for (int it = 0; it < 150; it++) {
        const char *kv[17] = {"format", "pyggmlr.ag_model", "format_version", "1"};
        for (int k = 0; k < 6; k++) {
            snprintf(buf[k], sizeof buf[k], "%s", base[k]);
            size_t L = strlen(buf[k]);
            for (int e = 0; e < 1 + it % 3; e++) {
                size_t at = (size_t)((urand() + 1) / 2 * (double)L) % L;
                buf[k][at] = "[]{}\",:0-9ae \\"[(size_t)((urand() + 1) * 7) % 14];
            }
            kv[4 + 2 * k] = keys[k], kv[5 + 2 * k] = buf[k];
        }
        kv[16] = NULL;
        write_file(path, kv);
        pg_mf *mf = NULL;
        if (pg_mf_open(path, NULL, &mf)) continue;
        pg_mf_load_opts o = pg_mf_load_opts_default();
        o.rebuild = it % 2;
        if (pg_mf_check_load(mf, &o)) CHECK(pg_last_error()[0] != 0);
        if (pg_mf_check_info(mf)) CHECK(pg_last_error()[0] != 0);
        pg_mf_match(mf, PG_MF_LIST_PARAMETERS, 2, names, rows, cols, NULL);
        pg_mf_opt_check(mf, "adam", 2, names, rows, cols);
        pg_clear_error();
        pg_mf_close(mf);
    }
}

void test_modelfile(void)
{
    snprintf(mdir, sizeof mdir, "/tmp/pg-mf-XXXXXX");
    if (!mkdtemp(mdir)) {
        CHECK(0);
        return;
    }
    test_load_rules();
    test_values_and_match();
    test_optimizer();
    test_info_and_open();
    test_writer();
    test_fuzz();
    const char *files[] = {"m", "v", "o", "i", "junk", "w", "f"};
    char path[300];
    for (int i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "%s/%s.safetensors", mdir, files[i]);
        unlink(path);
    }
    rmdir(mdir);
}
