/* A model and its optimizer to and from a model file on core objects (native/modelfile_model.c):
 * the round trip gives the same bits and optimizer state, an optimizer parameter outside the
 * model is "#<i>", the hyper-parameter comparison, and that a refused load writes nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static char dir[256];

static pg_tensor *mat(int dtype, int64_t r, int64_t c, double v0)
{
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = v0 + 0.25 * i;
    return pg_tensor_new(dtype, r, c, v0 == 0 ? NULL : v, PG_DTYPE_F64, 1, r);
}

static int same_values(pg_tensor *a, pg_tensor *b)
{
    double x[16], y[16];
    int64_t n = pg_tensor_numel(a);
    if (n != pg_tensor_numel(b) || pg_tensor_read(a, x, PG_DTYPE_F64) ||
        pg_tensor_read(b, y, PG_DTYPE_F64))
        return 0;
    return memcmp(x, y, sizeof(double) * (size_t)n) == 0;
}

static const char *PN[2] = {"W", "b"}, *BN[1] = {"rm"};

static pg_mf_model model_of(pg_tensor **p, pg_tensor **b, pg_optim *o)
{
    pg_mf_model m = pg_mf_model_default();
    m.n_params = 2, m.param_names = PN, m.params = p;
    m.n_buffers = 1, m.buffer_names = BN, m.buffers = b;
    m.optim = o;
    return m;
}

static int save(const char *path, const pg_mf_model *m)
{
    pg_mf_writer *w = NULL;
    int rc = pg_mf_writer_new(&w);
    if (!rc) rc = pg_mf_writer_add_model(w, m);
    if (!rc) rc = pg_mf_writer_commit(w, path);
    pg_mf_writer_free(w);
    return rc;
}

static pg_mf *open_checked(const char *path)
{
    pg_mf *mf = NULL;
    pg_mf_load_opts o = pg_mf_load_opts_default();
    o.have_model = 1;
    CHECK(pg_mf_open(path, "ag_load_model()", &mf) == 0);
    if (mf) CHECK(pg_mf_check_load(mf, &o) == 0);
    return mf;
}

/* a trained source model (Adam, one step; W f64, b f32), loaded into a fresh one */
static void test_round_trip(const char *path)
{
    pg_tensor *p[2] = {mat(PG_DTYPE_F64, 2, 3, 1), mat(PG_DTYPE_F32, 2, 1, -1)};
    pg_tensor *b[1] = {mat(PG_DTYPE_F64, 2, 1, 3)};
    pg_optim *o = pg_optim_new(PG_OPTIM_KIND_ADAM, p, 2, NULL);
    for (int i = 0; i < 2; i++) {
        pg_tensor *g = mat(pg_tensor_dtype(p[i]), pg_tensor_nrow(p[i]), pg_tensor_ncol(p[i]), 0.5);
        CHECK(pg_tensor_set_grad(p[i], g) == 0);
        pg_tensor_release(g);
    }
    CHECK(pg_optim_step(o, NULL) == 1);
    pg_mf_model src = model_of(p, b, o);
    CHECK(save(path, &src) == 0);

    pg_tensor *q[2] = {mat(PG_DTYPE_F64, 2, 3, 0), mat(PG_DTYPE_F32, 2, 1, 0)};
    pg_tensor *c[1] = {mat(PG_DTYPE_F64, 2, 1, 0)};
    pg_optim *o2 = pg_optim_new(PG_OPTIM_KIND_ADAM, q, 2, NULL);
    pg_mf_model dst = model_of(q, c, o2);
    pg_mf *mf = open_checked(path);
    pg_optim_hyper_diff d;
    CHECK(pg_mf_index(mf, "optimizer.m.W") >= 0 && pg_mf_index(mf, "optimizer.accum.W") < 0);
    CHECK(pg_mf_load_check(mf, &dst, &d) == 0 && d.n == 0);
    CHECK(!same_values(p[0], q[0]) && pg_optim_get(o2, "t") == 0); /* checked, not written */
    CHECK(pg_mf_load_commit(mf) == 0);
    CHECK(same_values(p[0], q[0]) && same_values(p[1], q[1]) && same_values(b[0], c[0]));
    CHECK(pg_optim_get(o2, "t") == 1);
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < 2; s++)
            CHECK(same_values(pg_optim_state(o, i, s), pg_optim_state(o2, i, s)));
    CHECK(pg_mf_load_commit(mf) == PG_STATUS_ERR_ARG); /* nothing staged any more */
    pg_clear_error();

    /* a different lr: the comparison names it; the file's value is entry's */
    pg_optim_set(o2, "lr", 0.5);
    CHECK(pg_mf_load_check(mf, &dst, &d) == 0 && d.n == 1 && !strcmp(d.name[0], "lr"));
    CHECK(d.entry[0] >= 0 && pg_mf_opt_hyper_value(mf, d.entry[0]) == pg_optim_get(o, "lr"));
    pg_mf_close(mf); /* staged, never committed: freed */

    /* refusals write nothing: a shape, an optimizer of another kind */
    pg_tensor *wrong[2] = {mat(PG_DTYPE_F64, 3, 2, 0), q[1]};
    pg_mf_model bad = model_of(wrong, c, NULL);
    mf = open_checked(path);
    CHECK(pg_mf_load_check(mf, &bad, NULL) != 0);
    CHECK(strstr(pg_last_error(), "W") != NULL);
    pg_clear_error();
    pg_optim *sgd = pg_optim_new(PG_OPTIM_KIND_SGD, q, 2, NULL);
    pg_mf_model other = model_of(q, c, sgd);
    CHECK(pg_mf_load_check(mf, &other, NULL) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "adam") != NULL);
    pg_clear_error();
    CHECK(pg_mf_load_commit(mf) == PG_STATUS_ERR_ARG);
    pg_clear_error();
    pg_mf_close(mf);
    pg_optim_free(sgd);
    pg_tensor_release(wrong[0]);
    pg_optim_free(o), pg_optim_free(o2);
    for (int i = 0; i < 2; i++) pg_tensor_release(p[i]), pg_tensor_release(q[i]);
    pg_tensor_release(b[0]), pg_tensor_release(c[0]);
}

/* an f64 value beyond the f32 range refused for an f32 tensor, naming the file and tensor; an
 * optimizer parameter outside the model is "#<i>" */
static void test_fits_and_names(const char *path)
{
    pg_tensor *p[2] = {mat(PG_DTYPE_F64, 2, 3, 1), mat(PG_DTYPE_F64, 2, 1, 1)};
    pg_tensor *b[1] = {mat(PG_DTYPE_F64, 2, 1, 3)};
    pg_tensor *extra = mat(PG_DTYPE_F64, 1, 1, 2);
    double big[2] = {1e300, 1};
    CHECK(pg_tensor_write(p[1], big, PG_DTYPE_F64, 2, 1, 1, 2) == 0);
    pg_tensor *ps[3] = {p[0], extra, p[1]};
    pg_optim *o = pg_optim_new(PG_OPTIM_KIND_SGD, ps, 3, NULL);
    pg_mf_model src = model_of(p, b, o);
    CHECK(save(path, &src) == 0);
    pg_mf *mf = open_checked(path);
    const char *om = pg_mf_meta(mf, "optimizer");
    CHECK(om && strstr(om, "\"params\":[\"W\",\"#2\",\"b\"]") != NULL);
    CHECK(om && strstr(om, "\"slots\":[\"accum\",\"velocity\"]") != NULL);
    CHECK(pg_mf_index(mf, "optimizer.velocity.#2") < 0); /* never used: listed, no tensor */
    pg_tensor *q[2] = {mat(PG_DTYPE_F64, 2, 3, 0), mat(PG_DTYPE_F32, 2, 1, 0)};
    pg_tensor *c[1] = {mat(PG_DTYPE_F64, 2, 1, 0)};
    pg_mf_model dst = model_of(q, c, NULL);
    CHECK(pg_mf_load_check(mf, &dst, NULL) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "tensor 'b' holds 1e+300 (element 1)") != NULL);
    CHECK(strncmp(pg_last_error(), path, strlen(path)) == 0);
    pg_clear_error();
    double v[6] = {1};
    CHECK(pg_tensor_read(q[0], v, PG_DTYPE_F64) == 0 && v[0] == 0); /* nothing written */
    pg_mf_close(mf);
    pg_optim_free(o);
    pg_tensor_release(extra);
    for (int i = 0; i < 2; i++) pg_tensor_release(p[i]), pg_tensor_release(q[i]);
    pg_tensor_release(b[0]), pg_tensor_release(c[0]);
}

static long file_bytes(const char *path, char *buf, long cap)
{
    FILE *f = fopen(path, "rb");
    long n = f ? (long)fread(buf, 1, (size_t)cap, f) : -1;
    if (f) fclose(f);
    return n;
}

/* pg_mf_save (both front ends' one call) writes the bytes of the writer's steps done one by
 * one; a failing step leaves no file */
static void test_save_spec(const char *path)
{
    pg_tensor *p[2] = {mat(PG_DTYPE_F64, 2, 3, 1), mat(PG_DTYPE_F32, 2, 1, -1)};
    pg_tensor *b[1] = {mat(PG_DTYPE_F64, 2, 1, 3)};
    pg_mf_model m = model_of(p, b, NULL);
    const char *cls[2] = {"a", "b"}, *names[2] = {"callback.1.p.W", "callback.1.s"};
    const double cm[6] = {1, 2, 3, 4, 5, 6};
    const double *data[2] = {cm, cm};
    int f64[2] = {1, 0}, nd[2] = {2, 0};
    int64_t dims[4] = {2, 3, 1, 1};
    char one[320];
    snprintf(one, sizeof one, "%s.one", path);
    pg_mf_writer *w = NULL;
    CHECK(pg_mf_writer_new(&w) == 0);
    CHECK(pg_mf_writer_add_model(w, &m) == 0);
    CHECK(pg_mf_writer_set(w, PG_MF_FIELD_CREATED_BY, "test") == 0);
    CHECK(pg_mf_writer_set(w, PG_MF_FIELD_EXTRA, "{\"k\":1}") == 0);
    CHECK(pg_mf_writer_set_epoch(w, 7) == 0);
    CHECK(pg_mf_writer_set_target(w, "cross_entropy", -1, 2, cls) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, names[i], f64[i], nd[i], dims + 2 * i,
                                      data[i]) == 0);
    CHECK(pg_mf_writer_commit(w, one) == 0);
    pg_mf_writer_free(w);
    pg_mf_save_spec s = pg_mf_save_spec_default();
    CHECK(s.epoch == -1 && s.n_classes == -1 && !s.model && !s.fields[0] && !s.has_target);
    s.model = &m, s.epoch = 7, s.has_target = 1, s.target_loss = "cross_entropy";
    s.fields[PG_MF_FIELD_CREATED_BY] = "test", s.fields[PG_MF_FIELD_EXTRA] = "{\"k\":1}";
    s.n_classes = 2, s.classes = cls;
    s.n_more = 2, s.more_names = names, s.more_f64 = f64, s.more_ndim = nd, s.more_dims = dims;
    s.more_data = data;
    CHECK(pg_mf_save(path, &s) == 0);
    static char x[8192], y[8192];
    long nx = file_bytes(one, x, sizeof x), ny = file_bytes(path, y, sizeof y);
    CHECK(nx > 0 && nx == ny && memcmp(x, y, (size_t)nx) == 0);
    unlink(one), unlink(path);
    CHECK_ERR(pg_mf_save(NULL, &s), PG_STATUS_ERR_ARG, "pg_mf_save(): bad arguments");
    CHECK_ERR(pg_mf_save(path, NULL), PG_STATUS_ERR_ARG, "pg_mf_save(): bad arguments");
    s.more_ndim = NULL;
    CHECK_ERR(pg_mf_save(path, &s), PG_STATUS_ERR_ARG, "pg_mf_save(): bad arguments");
    s.more_ndim = nd, s.epoch = 1000000000000LL; /* refused by the writer: no file */
    CHECK_ERR(pg_mf_save(path, &s), PG_STATUS_ERR_VALUE, "epoch");
    CHECK(access(path, F_OK) != 0);
    s.epoch = -1, s.model = NULL;
    CHECK_ERR(pg_mf_save(path, &s), PG_STATUS_ERR_ARG, "bad model description");
    CHECK(access(path, F_OK) != 0);
    for (int i = 0; i < 2; i++) pg_tensor_release(p[i]);
    pg_tensor_release(b[0]);
}

void test_modelfile_model(void)
{
    snprintf(dir, sizeof dir, "/tmp/pg-mfm-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char path[300];
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    test_round_trip(path);
    test_fits_and_names(path);
    unlink(path);
    test_save_spec(path);
    rmdir(dir);
}
