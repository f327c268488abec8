/* A model and its optimizer against a model file, on core objects (pg_api_modelfile.h): the
 * writer copies the tensors and the optimizer's file-layout state itself, the loader checks
 * everything, stages the values and writes them in one step. Both front ends had converted
 * weights and optimizer slots to host values and back on each side of the codec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "modelfile_internal.h"

pg_mf_model pg_mf_model_default(void)
{
    pg_mf_model m;
    memset(&m, 0, sizeof m);
    return m;
}

int mf_check_model(const pg_mf_model *m, const char *fn)
{
    if (!m || m->n_params < 0 || m->n_buffers < 0 ||
        (m->n_params && (!m->param_names || !m->params)) ||
        (m->n_buffers && (!m->buffer_names || !m->buffers)))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: bad model description", fn);
    for (int k = 0; k < 2; k++) {
        int64_t n = k ? m->n_buffers : m->n_params;
        for (int64_t i = 0; i < n; i++) {
            pg_tensor *t = k ? m->buffers[i] : m->params[i];
            const char *name = k ? m->buffer_names[i] : m->param_names[i];
            if (!name || pg_tensor_check(t) ||
                (t->dtype != PG_DTYPE_F32 && t->dtype != PG_DTYPE_F64))
                return pg_fail(PG_STATUS_ERR_ARG, "%s: %s %lld is no named f32/f64 tensor", fn,
                               k ? "buffer" : "parameter", (long long)i + 1);
        }
    }
    return 0;
}

/* the file's names of the optimizer's parameters: the model's name of the same tensor, else
 * "#<i>"; the "#" names are written into buf (n_opt * 24 bytes) */
static void opt_names(const pg_mf_model *m, const char **out, char *buf)
{
    for (int64_t i = 0; i < pg_optim_nparams(m->optim); i++) {
        pg_tensor *p = pg_optim_param(m->optim, i);
        out[i] = NULL;
        for (int64_t j = 0; j < m->n_params && !out[i]; j++)
            if (m->params[j] == p) out[i] = m->param_names[j];
        if (!out[i]) {
            snprintf(buf + 24 * i, 24, "#%lld", (long long)i + 1);
            out[i] = buf + 24 * i;
        }
    }
}

/* ---- writing ---- */

/* t as a codec entry: a row-major copy in its dtype, owned by the writer */
static int add_copy(pg_mf_writer *w, int role, const char *name, pg_tensor *t, const char *slot)
{
    int64_t r = t->ne[0], c = t->ne[1];
    size_t es = t->dtype == PG_DTYPE_F64 ? 8 : 4;
    char *dst = malloc(es * (size_t)(r * c > 0 ? r * c : 1));
    if (!dst) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    const char *src = pg_data(t);
    for (int64_t a = 0; a < r; a++)
        for (int64_t b = 0; b < c; b++)
            memcpy(dst + es * (size_t)(a * c + b), src + es * (size_t)(b * r + a), es);
    int rc = mf_writer_adopt(w, dst);
    if (rc) return rc;
    pg_st_tensor e = {name, t->dtype == PG_DTYPE_F64 ? PG_ST_DTYPE_F64 : PG_ST_DTYPE_F32, 2, r, c,
                      dst};
    return slot ? pg_mf_writer_add_slot(w, slot, name, &e) : pg_mf_writer_add(w, role, &e);
}

static int add_optim(pg_mf_writer *w, const pg_mf_model *m, const char **names)
{
    pg_optim *o = m->optim;
    int kind = pg_optim_kind(o);
    const char *hn[8];
    double hv[8];
    int ht[8], nh = 0;
    for (const char *k; nh < 8 && (k = pg_optim_name(PG_OPTIM_NAMES_FILE_HYPER, kind, nh)); nh++) {
        hn[nh] = k, hv[nh] = pg_optim_get(o, k);
        ht[nh] = pg_optim_is_flag(k)         ? PG_MF_NUM_BOOL
            : !strcmp(k, "accumulate_steps") ? PG_MF_NUM_INT
                                             : PG_MF_NUM_DOUBLE;
    }
    pg_mf_opt_meta meta = pg_mf_opt_meta_default();
    meta.kind = pg_optim_kind_name(kind);
    meta.t = (int64_t)pg_optim_get(o, "t"),
    meta.accum_count = (int64_t)pg_optim_get(o, "accum_count");
    meta.n_hyper = nh, meta.hyper_names = hn, meta.hyper_values = hv, meta.hyper_types = ht;
    meta.n_params = pg_optim_nparams(o), meta.params = names;
    int rc = pg_mf_writer_set_optimizer(w, &meta);
    for (int64_t i = 0; !rc && i < pg_optim_nparams(o); i++)
        for (int s = 0; !rc && pg_optim_name(PG_OPTIM_NAMES_FILE_SLOTS, kind, s); s++) {
            const char *slot = pg_optim_name(PG_OPTIM_NAMES_FILE_SLOTS, kind, s);
            pg_tensor *v = pg_optim_state(o, i, s);
            rc = v ? add_copy(w, 0, names[i], v, slot) : pg_mf_writer_add_slot(w, slot, NULL, NULL);
        }
    return rc;
}

int pg_mf_writer_add_model(pg_mf_writer *w, const pg_mf_model *m)
{
    if (!w) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_add_model(): NULL writer");
    int rc = mf_check_model(m, "ag_save_model()");
    for (int64_t i = 0; !rc && i < m->n_params; i++)
        rc = add_copy(w, PG_MF_ROLE_PARAMETER, m->param_names[i], m->params[i], NULL);
    for (int64_t i = 0; !rc && i < m->n_buffers; i++)
        rc = add_copy(w, PG_MF_ROLE_BUFFER, m->buffer_names[i], m->buffers[i], NULL);
    if (!rc) rc = pg_mf_writer_check(w);
    if (rc || !m->optim) return rc;
    int64_t n = pg_optim_nparams(m->optim);
    const char **names = malloc(sizeof(char *) * (size_t)(n + 1));
    char *buf = malloc(24 * (size_t)(n + 1));
    if (!names || !buf) rc = pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    else {
        opt_names(m, names, buf);
        rc = add_optim(w, m, names);
    }
    /* the writer copied the optimizer's names into its JSON; slot names it made itself */
    free(names), free(buf);
    return rc;
}

/* ---- loading ---- */

struct mf_stage {
    int64_t n;            /* tensors to write */
    pg_tensor **t;        /* retained */
    void **raw;           /* each tensor's file bytes (row-major, the file's dtype) */
    int *dtype;           /* PG_DTYPE_* of raw */
    pg_optim *o;          /* NULL: no optimizer state */
    pg_optim_state_in in; /* the file's optimizer state, FILE form */
    pg_host_matrix *slots;
    pg_host_value *hyper;
    const char **hyper_names;
    double **slot_data;
    int64_t *dims;
    int64_t n_slots;
};

static void stage_free(mf_stage *s)
{
    if (!s) return;
    for (int64_t i = 0; i < s->n; i++) {
        pg_tensor_release(s->t[i]);
        free(s->raw[i]);
    }
    for (int64_t j = 0; s->slot_data && j < s->n_slots; j++) free(s->slot_data[j]);
    free(s->t), free(s->raw), free(s->dtype), free(s->slots), free(s->hyper);
    free(s->hyper_names), free(s->slot_data), free(s->dims), free(s);
}

void mf_stage_free(pg_mf *mf)
{
    if (mf) stage_free(mf->stage), mf->stage = NULL;
}

static int oom(void) { return pg_fail(PG_STATUS_ERR_NOMEM, "ag_load_model(): out of memory"); }

/* ggmlR's name-set then shape checks of one list; idx: each tensor's file index */
static int match(pg_mf *mf, int list, int64_t n, const char *const *names, pg_tensor *const *t,
                 int64_t *idx)
{
    const char **nm = malloc(sizeof(char *) * (size_t)(n + 1));
    int64_t *r = malloc(sizeof(int64_t) * (size_t)(n + 1)),
            *c = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int rc = nm && r && c ? 0 : oom();
    for (int64_t i = 0; !rc && i < n; i++) nm[i] = names[i], r[i] = t[i]->ne[0], c[i] = t[i]->ne[1];
    if (!rc) rc = pg_mf_match(mf, list, n, nm, r, c, idx);
    free(nm), free(r), free(c);
    return rc;
}

/* the file's optimizer state as pg_optim_state_load's FILE form, after pg_mf_opt_check */
static int stage_optim(pg_mf *mf, const pg_mf_model *m, mf_stage *s)
{
    pg_optim *o = m->optim;
    int kind = pg_optim_kind(o), ns = 0;
    while (pg_optim_name(PG_OPTIM_NAMES_FILE_SLOTS, kind, ns)) ns++;
    int64_t n = pg_optim_nparams(o);
    const char **names = malloc(sizeof(char *) * (size_t)(n + 1));
    char *buf = malloc(24 * (size_t)(n + 1));
    int64_t *r = malloc(sizeof(int64_t) * (size_t)(n + 1)),
            *c = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int rc = names && buf && r && c ? 0 : oom();
    if (!rc) {
        opt_names(m, names, buf);
        for (int64_t i = 0; i < n; i++)
            r[i] = pg_optim_param(o, i)->ne[0], c[i] = pg_optim_param(o, i)->ne[1];
        rc = pg_mf_opt_check(mf, pg_optim_kind_name(kind), n, names, r, c);
    }
    int64_t nh = pg_mf_opt_count(mf, 0);
    if (!rc) {
        s->n_slots = n * ns;
        s->slots = calloc((size_t)(s->n_slots + 1), sizeof *s->slots);
        s->slot_data = calloc((size_t)(s->n_slots + 1), sizeof *s->slot_data);
        s->dims = calloc((size_t)(2 * s->n_slots + 1), sizeof *s->dims);
        s->hyper = calloc((size_t)(nh + 1), sizeof *s->hyper);
        s->hyper_names = calloc((size_t)(nh + 1), sizeof *s->hyper_names);
        if (!s->slots || !s->slot_data || !s->dims || !s->hyper || !s->hyper_names) rc = oom();
    }
    for (int64_t i = 0; !rc && i < n; i++)
        for (int k = 0; !rc && k < ns; k++) {
            const char *slot = pg_optim_name(PG_OPTIM_NAMES_FILE_SLOTS, kind, k);
            int listed = 0;
            for (int64_t j = 0; j < pg_mf_opt_count(mf, 2); j++)
                listed |= !strcmp(pg_mf_opt_name(mf, 2, j), slot);
            char tn[1100];
            snprintf(tn, sizeof tn, "optimizer.%s.%s", slot, names[i]);
            int64_t fi = listed && strlen(names[i]) < 1000 ? pg_mf_index(mf, tn) : -1;
            if (fi < 0) continue;
            int64_t j = i * ns + k, e = r[i] * c[i];
            pg_host_matrix *hm = &s->slots[j];
            s->slot_data[j] = malloc(sizeof(double) * (size_t)(e > 0 ? e : 1));
            if (!s->slot_data[j]) rc = oom();
            else rc = pg_st_read_colmajor_f64(mf->st, fi, s->slot_data[j], e);
            s->dims[2 * j] = r[i], s->dims[2 * j + 1] = c[i];
            hm->present = hm->numeric = 1, hm->ndim = 2;
            hm->dims = &s->dims[2 * j], hm->data = s->slot_data[j];
        }
    for (int64_t j = 0; !rc && j < nh; j++) {
        int ty = pg_mf_opt_hyper_type(mf, j);
        s->hyper_names[j] = pg_mf_opt_name(mf, 0, j);
        s->hyper[j].kind = ty == PG_MF_NUM_BOOL ? PG_HOST_BOOL
            : ty == PG_MF_NUM_INT               ? PG_HOST_INT
                                                : PG_HOST_NUM;
        s->hyper[j].num = pg_mf_opt_hyper_value(mf, j);
    }
    if (!rc) {
        pg_optim_state_in *in = &s->in;
        *in = pg_optim_state_in_default();
        in->form = PG_OPTIM_STATE_FORM_FILE, in->is_map = 1;
        in->type.kind = PG_HOST_TEXT, in->type.text = pg_optim_kind_name(kind);
        in->t.kind = in->accum_count.kind = PG_HOST_INT;
        in->t.num = (double)pg_mf_opt_t(mf),
        in->accum_count.num = (double)pg_mf_opt_accum_count(mf);
        in->slot_len[0] = n, in->slots = s->slots, in->n_slots = s->n_slots;
        in->hyper_names = s->hyper_names, in->hyper = s->hyper, in->n_hyper = nh;
        rc = pg_optim_state_load(o, in, 1);
        if (rc == PG_STATUS_ERR_VALUE) {
            char msg[2048];
            snprintf(msg, sizeof msg, "%s", pg_last_error());
            rc = mf_bad(mf, "%s", msg);
        }
        s->o = rc ? NULL : o;
    }
    free(names), free(buf), free(r), free(c);
    return rc;
}

/* tensor t's file bytes, checked to fit its dtype (a finite double beyond the f32 range) */
static int stage_tensor(pg_mf *mf, mf_stage *s, pg_tensor *t, const char *name, int64_t fi)
{
    int64_t nb = pg_st_nbytes(mf->st, fi), i = s->n;
    int f64 = pg_st_dtype(mf->st, fi) == PG_ST_DTYPE_F64;
    s->raw[i] = malloc((size_t)(nb > 0 ? nb : 1));
    if (!s->raw[i]) return oom();
    s->t[i] = t, s->dtype[i] = f64 ? PG_DTYPE_F64 : PG_DTYPE_F32;
    pg_tensor_retain(t);
    s->n++;
    int rc = nb ? pg_st_read(mf->st, fi, s->raw[i], nb) : 0;
    if (rc || !f64 || t->dtype != PG_DTYPE_F32) return rc;
    char what[600];
    snprintf(what, sizeof what, "tensor '%.500s'", name);
    if (pg_values_fit(s->raw[i], nb / 8, PG_DTYPE_F32, what)) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", pg_last_error());
        return mf_bad(mf, "%s", msg);
    }
    return 0;
}

int pg_mf_load_check(pg_mf *mf, const pg_mf_model *m, struct pg_optim_hyper_diff *diff)
{
    if (!mf || !m) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_load_check(): NULL file or model");
    int rc = mf_check_model(m, "ag_load_model()");
    if (!rc) rc = pg_mf_built_dtype_check(mf->dtype, m->n_params, m->param_names, m->params);
    if (rc) return rc;
    mf_stage_free(mf);
    int64_t n = m->n_params + m->n_buffers;
    mf_stage *s = calloc(1, sizeof *s);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (s) {
        s->t = calloc((size_t)(n + 1), sizeof *s->t);
        s->raw = calloc((size_t)(n + 1), sizeof *s->raw);
        s->dtype = calloc((size_t)(n + 1), sizeof *s->dtype);
    }
    if (!s || !idx || !s->t || !s->raw || !s->dtype) {
        stage_free(s), free(idx);
        return oom();
    }
    rc = match(mf, PG_MF_LIST_PARAMETERS, m->n_params, m->param_names, m->params, idx);
    if (!rc)
        rc = match(mf, PG_MF_LIST_BUFFERS, m->n_buffers, m->buffer_names, m->buffers,
                   idx + m->n_params);
    if (!rc && m->optim) rc = stage_optim(mf, m, s);
    for (int64_t i = 0; !rc && i < n; i++) {
        int b = i >= m->n_params;
        rc = stage_tensor(mf, s, b ? m->buffers[i - m->n_params] : m->params[i],
                          b ? m->buffer_names[i - m->n_params] : m->param_names[i], idx[i]);
    }
    if (!rc && diff) {
        if (s->o) rc = pg_optim_hyper_diff_of(s->o, &s->in, diff);
        else memset(diff, 0, sizeof *diff);
    }
    free(idx);
    if (rc) stage_free(s);
    else mf->stage = s;
    return rc;
}

int pg_mf_load_commit(pg_mf *mf)
{
    if (!mf || !mf->stage)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_load_commit(): nothing checked to write");
    mf_stage *s = mf->stage;
    /* the optimizer first: its write is all or nothing, the tensors' cannot fail after the checks */
    int rc = s->o ? pg_optim_state_load(s->o, &s->in, 0) : 0;
    for (int64_t i = 0; !rc && i < s->n; i++)
        rc = pg_tensor_write(s->t[i], s->raw[i], s->dtype[i], s->t[i]->ne[0], s->t[i]->ne[1],
                             s->t[i]->ne[1], 1);
    mf_stage_free(mf);
    return rc;
}

pg_mf_save_spec pg_mf_save_spec_default(void)
{
    pg_mf_save_spec s;
    memset(&s, 0, sizeof s);
    s.epoch = s.n_classes = -1;
    return s;
}

int pg_mf_save(const char *path, const pg_mf_save_spec *s)
{
    if (!s || !path || s->n_more < 0 ||
        (s->n_more &&
         (!s->more_names || !s->more_f64 || !s->more_ndim || !s->more_dims || !s->more_data)))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_save(): bad arguments");
    pg_mf_writer *w = NULL;
    int rc = pg_mf_writer_new(&w);
    if (!rc) rc = pg_mf_writer_add_model(w, s->model);
    for (int i = 0; !rc && i < PG_MF_FIELD_COUNT; i++)
        if (s->fields[i]) rc = pg_mf_writer_set(w, i, s->fields[i]);
    if (!rc && s->epoch >= 0) rc = pg_mf_writer_set_epoch(w, s->epoch);
    if (!rc && s->has_target)
        rc = pg_mf_writer_set_target(w, s->target_loss, -1, s->n_classes, s->classes);
    for (int64_t i = 0; !rc && i < s->n_more; i++) /* the core lays the columns out as rows */
        rc = pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, s->more_names[i], s->more_f64[i],
                                     s->more_ndim[i], s->more_dims + 2 * i, s->more_data[i]);
    if (!rc) rc = pg_mf_writer_commit(w, path);
    pg_mf_writer_free(w);
    return rc;
}
