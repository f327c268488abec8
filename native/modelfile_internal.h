/* pyggmlr C core: the model-file reader's state, shared by modelfile.c (open, metadata checks,
 * accessors) and modelfile_match.c (a model and an optimizer against the file). Not cdef'd. */
#ifndef PG_MODELFILE_INTERNAL_H
#define PG_MODELFILE_INTERNAL_H
#include "pg.h"
#include "codec_internal.h"

#define MF_FORMAT  "pyggmlr.ag_model"
#define MF_VERSION "1"

typedef struct {
    int present;
    int64_t n;
    const char **v; /* into doc's pool */
    int64_t *idx;   /* each name's tensor index */
    pj_doc doc;
} mf_names;

/* what pg_mf_load_check staged for pg_mf_load_commit (modelfile_model.c) */
typedef struct mf_stage mf_stage;

struct pg_mf {
    pg_st_file *st;
    char *path;
    int64_t n;       /* tensors */
    int64_t *sorted; /* tensor indices sorted by name, for pg_mf_index */
    mf_names names[PG_MF_LIST_COUNT];
    int64_t epoch;
    int dtype;                  /* the load's opts.dtype */
    const char *config, *extra; /* checked metadata texts (the codec's strings) */
    /* the optimizer metadata: kind (info and opt_check), the rest after pg_mf_opt_check */
    int opt_checked;
    char *opt_kind;
    int64_t opt_t, opt_ac;
    int64_t n_hyper;
    const char **hyper_name;
    double *hyper_value;
    int *hyper_type;
    const char **opt_list[2]; /* params, slots (into opt_doc's pool) */
    int64_t opt_n[2];
    pj_doc opt_doc;
    mf_stage *stage;
    /* metadata 'target' (modelfile_target.c), read by the checks */
    int target_present, target_classify;
    const char *target_loss; /* into target_doc's pool; NULL: none */
    int64_t n_classes;       /* -1: no labels */
    const char **classes;    /* into target_doc's pool */
    pj_doc target_doc;
    char *info; /* pg_mf_info_json's text */
};

/* PG_STATUS_ERR_VALUE "<path>: <formatted text>" */
int mf_bad(const pg_mf *mf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Metadata key as JSON: 0 with *present = 0 when absent; else parsed into doc (freed by the
 * caller) and checked to be of type want (-1: any) with the loaders' texts. */
int mf_json(const pg_mf *mf, const char *key, int want, int64_t budget, pj_doc *doc, int *present);
void mf_opt_clear(pg_mf *mf);
/* metadata 'target' checked (the schema's texts) and recorded on mf; absent: none recorded */
int mf_target_read(pg_mf *mf);
void mf_target_free(pg_mf *mf);
/* the writer's check of a 'target' text (the reader's schema): 0, or a status naming ag_save_model */
int mf_target_check(const char *text);
/* the writer frees data with itself (freed at once when it cannot be kept) */
int mf_writer_adopt(pg_mf_writer *w, void *data);
void mf_stage_free(pg_mf *mf); /* what pg_mf_load_check staged */
/* m names only f32 / f64 tensors (modelfile_model.c): 0, else PG_STATUS_ERR_ARG naming fn */
int mf_check_model(const pg_mf_model *m, const char *fn);

/* A growing message text (for name lists); mf_str_add appends, sep between items. */
typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} mf_str;
void mf_str_add(mf_str *b, const char *s);
void mf_str_quote(mf_str *b, const char *s); /* s as a JSON string (pj_quoted); NULL: null */
#endif
