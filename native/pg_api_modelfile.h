/* pyggmlr C core: the model-file schema (docs/model-format.md) on top of the codec
 * (pg_api_codec.h), one implementation for both front ends: modelfile.c reads and checks the
 * metadata (format, name lists, epoch, config, extra, optimizer) and matches a model against
 * the file. cdef-clean like pg_api.h. Messages name the file as the front ends did:
 * "<fn>: <path>: ..." for the framing, "<path>: ..." for the content, none for a mismatch
 * between the model and the file (ggmlR's texts). */

typedef struct pg_mf pg_mf;

/* which name list of the metadata */
enum pg_mf_list { PG_MF_LIST_PARAMETERS = 0, PG_MF_LIST_BUFFERS = 1, PG_MF_LIST_COUNT };

/* A hyper-parameter's JSON type (so the front ends give back an int as an int) */
enum pg_mf_num { PG_MF_NUM_DOUBLE = 0, PG_MF_NUM_INT = 1, PG_MF_NUM_BOOL = 2, PG_MF_NUM_COUNT };

/* What a load checks (pg_mf_check_load). model_arg: how the front end spells the argument that
 * loads into a given model, in the hints ("model=", "model = (or model_fn =)"). */
typedef struct {
    int have_model; /* a model (or a builder) is given: a file without 'format' loads by name */
    int need_epoch; /* a training checkpoint: the epoch must be there */
    int rebuild;    /* the model is rebuilt from the file: config checked and matched */
    const char *model_arg;
    int dtype; /* the dtype asked for (PG_DTYPE_F32 / F64; -1, the default: none) */
} pg_mf_load_opts;
pg_mf_load_opts pg_mf_load_opts_default(void);

/* Opens path with pg_st_open. fn names the user's function in framing errors ("ag_load_model():
 * <path>: header length ..."; NOMEM "<fn>: ..."). PG_STATUS_ERR_IO as pg_st_open. */
int pg_mf_open(const char *path, const char *fn, pg_mf **out);
void pg_mf_close(pg_mf *mf);
pg_st_file *pg_mf_st(pg_mf *mf); /* the open codec file (borrowed): tensors, raw metadata */

/* The load's metadata rules, in the loaders' order: format and format_version, a file without
 * format needs a model, the parameter and buffer lists, epoch (need_epoch), extra, and with
 * rebuild the config (an object within the size budget 16 * elements + 65536, then
 * pg_config_match against the listed tensors). */
int pg_mf_check_load(pg_mf *mf, const pg_mf_load_opts *opts);
/* ag_model_info's: the name lists, optimizer (an object), config (an object), extra. */
int pg_mf_check_info(pg_mf *mf);
/* pg_mf_check_info, then ag_model_info()'s answer as a JSON object (owned by mf, valid until the
 * next call or pg_mf_close): format, format_version, parameters and buffers ({name: {"shape":
 * [rows, cols], "dtype": "f32"|"f64"}}, {} without a list), config, epoch, optimizer (its kind),
 * extra (the file's texts; null when absent) and target ({"loss", "classify", "classes"} as the
 * loader reads it: classify the loss's when absent, null loss or classes for none; null without). */
int pg_mf_info_json(pg_mf *mf, const char **out);

/* After a check: the values (NULL / -1 when absent or not checked). */
const char *pg_mf_meta(const pg_mf *mf, const char *key); /* a raw metadata value */
int pg_mf_has_names(const pg_mf *mf, int list);
int64_t pg_mf_name_count(const pg_mf *mf, int list);
const char *pg_mf_name(const pg_mf *mf, int list, int64_t i);
int64_t pg_mf_epoch(const pg_mf *mf);      /* -1: none (or, for info, not 1-12 digits) */
const char *pg_mf_config(const pg_mf *mf); /* checked JSON object text, or NULL */
const char *pg_mf_extra(const pg_mf *mf);  /* checked JSON text, or NULL */
int64_t pg_mf_index(const pg_mf *mf, const char *name); /* tensor index, -1 none */
/* metadata 'target' after a check: 1 when the file has it; its loss (NULL none), classify kind
 * (PG_FIT_CLASSIFY_NONE without), label count (-1: none) and label i */
int pg_mf_has_target(const pg_mf *mf);
const char *pg_mf_target_loss(const pg_mf *mf);
int pg_mf_target_classify(const pg_mf *mf);
int64_t pg_mf_class_count(const pg_mf *mf);
const char *pg_mf_class(const pg_mf *mf, int64_t i);
/* 1 when every listed parameter (all tensors when there is no list) is F64 */
int pg_mf_all_f64(const pg_mf *mf);
/* after pg_mf_check_load: the default dtype the model is built in, the one asked for, else the
 * file's (pg_mf_build_dtype) */
int pg_mf_dtype(const pg_mf *mf);

/* ggmlR's checks of a model's parameters (or buffers) against the file: the same name sets,
 * then the same shapes (in the model's order). A file without the list takes the model's
 * names (parameters: those in the file when all are, else every tensor; buffers: those in the
 * file). index_out[i] (n entries): the file tensor for the model's names[i]. */
int pg_mf_match(pg_mf *mf, int list, int64_t n, const char **names, const int64_t *rows,
                const int64_t *cols, int64_t *index_out);

/* The optimizer metadata (kind, t, accum_count, hyper, params, slots), then the optimizer
 * against it: kind, the set of parameter names, each slot tensor optimizer.<slot>.<name>'s
 * shape. names/rows/cols: the optimizer's parameters in its order. */
int pg_mf_opt_check(pg_mf *mf, const char *kind, int64_t n, const char **names, const int64_t *rows,
                    const int64_t *cols);
const char *pg_mf_opt_kind(const pg_mf *mf); /* a string kind (info too), or NULL */
int64_t pg_mf_opt_t(const pg_mf *mf);
int64_t pg_mf_opt_accum_count(const pg_mf *mf);
int64_t pg_mf_opt_count(const pg_mf *mf, int what); /* 0 hyper (non-null), 1 params, 2 slots */
const char *pg_mf_opt_name(const pg_mf *mf, int what, int64_t i);
double pg_mf_opt_hyper_value(const pg_mf *mf, int64_t i);
int pg_mf_opt_hyper_type(const pg_mf *mf, int64_t i); /* enum pg_mf_num */

/* ---- writing (modelfile_write.c): a builder that owns the save rules ---- */
typedef struct pg_mf_writer pg_mf_writer;

/* a tensor's role: a model parameter or buffer (listed in the metadata), or one more tensor
 * (ag_fit's callback arrays) written after the optimizer's */
enum pg_mf_role {
    PG_MF_ROLE_PARAMETER = 0,
    PG_MF_ROLE_BUFFER = 1,
    PG_MF_ROLE_TENSOR = 2,
    PG_MF_ROLE_COUNT
};
/* a metadata text the writer takes as given (checked where it is JSON) */
enum pg_mf_field {
    PG_MF_FIELD_CREATED_BY = 0,
    PG_MF_FIELD_CONFIG = 1, /* the architecture (the front end checks that it rebuilds) */
    PG_MF_FIELD_EXTRA = 2,  /* JSON the loader must read back */
    PG_MF_FIELD_TARGET = 3, /* 'target' (pg_mf_writer_set_target makes it; checked as read) */
    PG_MF_FIELD_COUNT
};

/* The optimizer's metadata: kind, step count, accumulation count, hyper-parameters (values of
 * enum pg_mf_num types; a non-finite value is written as null) and the names its parameters
 * have in the file, in the optimizer's order. Slots: from pg_mf_writer_add_slot. */
typedef struct {
    const char *kind;
    int64_t t, accum_count;
    int64_t n_hyper;
    const char **hyper_names;
    const double *hyper_values;
    const int *hyper_types;
    int64_t n_params;
    const char **params;
} pg_mf_opt_meta;
pg_mf_opt_meta pg_mf_opt_meta_default(void);

/* Tensors and texts are copied by reference: names and data must outlive the commit. */
int pg_mf_writer_new(pg_mf_writer **out);
void pg_mf_writer_free(pg_mf_writer *w);
int pg_mf_writer_add(pg_mf_writer *w, int role, const pg_st_tensor *t);
/* A host's array of doubles in column-major order (R's matrix, a Fortran-ordered numpy array)
 * as role's tensor `name`: copied (name too) into the file's row-major layout, F64, else
 * narrowed to F32. ndim 0-2 with dims[ndim] (rows, cols as pg_st_tensor); more dimensions are
 * PG_STATUS_ERR_VALUE "ag_save_model(): tensor '<name>' has <ndim> dimensions (at most 2)". */
int pg_mf_writer_add_values(pg_mf_writer *w, int role, const char *name, int f64, int ndim,
                            const int64_t *dims, const double *colmajor);
/* the optimizer's slot for one of its parameters: tensor optimizer.<slot>.<param>; t NULL:
 * the slot is listed without a tensor (param may be NULL then) */
int pg_mf_writer_add_slot(pg_mf_writer *w, const char *slot, const char *param,
                          const pg_st_tensor *t);
int pg_mf_writer_set(pg_mf_writer *w, int field, const char *text);
int pg_mf_writer_set_epoch(pg_mf_writer *w, int64_t epoch); /* [0, 1e12): what loads back */
/* ag_save_model(epoch=)'s rule and text, once for both front ends (pg_arg_int's checks: shown
 * is the value as the user wrote it, wrong_kind for a non-number) */
int pg_mf_epoch_arg(double v, const char *shown, int wrong_kind);
int pg_mf_writer_set_optimizer(pg_mf_writer *w, const pg_mf_opt_meta *m);
/* metadata 'target' (docs/model-format.md): how the model's outputs are read and its class
 * labels, so that a file alone turns new data into labels. loss: one of ag_fit's loss names, or
 * NULL (none known); classify: its pg_fit_classify kind (must be the loss's; with loss NULL any
 * kind), -1: the loss's own (pg_predict_classify, naming ag_save_model(); NONE without a loss);
 * classes: n_classes distinct UTF-8 labels, in class-id order (-1: none). Written as
 * {"loss": ..., "classify": "argmax", "classes": [...]}. */
int pg_mf_writer_set_target(pg_mf_writer *w, const char *loss, int classify, int64_t n_classes,
                            const char *const *classes);
/* The save rules on what was added: no name is both a parameter and a buffer. */
int pg_mf_writer_check(pg_mf_writer *w);
/* The save rules (no name both a parameter and a buffer), the metadata (format, version,
 * created_by, parameters, buffers, config, epoch, optimizer, extra), then pg_st_write. */
int pg_mf_writer_commit(pg_mf_writer *w, const char *path);

/* ---- a model and its optimizer, straight from and into core objects (modelfile_model.c) ----
 * Neither front end converts weights or optimizer state to host values: it names the model's
 * tensors and hands over its optimizer. An optimizer parameter that is none of the model's
 * parameters is named "#<i>" (1-based); a tensor under two names takes the first. */
typedef struct {
    int64_t n_params, n_buffers;
    const char *const *param_names;
    pg_tensor *const *params;
    const char *const *buffer_names;
    pg_tensor *const *buffers;
    pg_optim *optim; /* NULL: none */
} pg_mf_model;

/* ag_save_model's refusal of a name used by both a parameter and a buffer (as the write's, by
 * the names alone: the tensors are not read), before the config is checked */
int pg_mf_names_check(const pg_mf_model *m);
pg_mf_model pg_mf_model_default(void);

/* The model's parameters and buffers (copied now, row-major in their own dtype), the save rules
 * (pg_mf_writer_check), and with an optimizer its state in the file layout: kind, t,
 * accum_count, every hyper-parameter (PG_OPTIM_NAMES_FILE_HYPER), each parameter's slots
 * (optimizer.<slot>.<name>; a slot never used is listed without a tensor). */
int pg_mf_writer_add_model(pg_mf_writer *w, const pg_mf_model *m);

/* ag_save_model's whole write in one call, for both front ends: the model and its optimizer
 * (pg_mf_writer_add_model), the metadata texts (fields[i] NULL: not set), the epoch (-1: none),
 * the 'target' (has_target: pg_mf_writer_set_target with the loss's own classify kind), then
 * ag_fit's callback arrays (column-major doubles, pg_mf_writer_add_values: more_ndim[i] 0-2, two
 * dims each in more_dims) and the commit. Nothing is written when a step fails. */
typedef struct {
    const pg_mf_model *model;
    const char *fields[PG_MF_FIELD_COUNT];
    int64_t epoch;
    int has_target;
    const char *target_loss; /* NULL: none known */
    int64_t n_classes;       /* -1: no labels */
    const char *const *classes;
    int64_t n_more;
    const char *const *more_names;
    const int *more_f64, *more_ndim;
    const int64_t *more_dims;
    const double *const *more_data;
} pg_mf_save_spec;
pg_mf_save_spec pg_mf_save_spec_default(void); /* nothing set, epoch -1, n_classes -1 */
int pg_mf_save(const char *path, const pg_mf_save_spec *s);

/* Loading into a model, in two steps so that the host can warn between them and a failed load
 * changes nothing. pg_mf_load_check: after pg_mf_check_load, the parameters' dtype against the
 * load's opts.dtype (pg_mf_built_dtype_check), ggmlR's name and shape checks of
 * the parameters and buffers (pg_mf_match), with an optimizer its metadata and slot shapes
 * (pg_mf_opt_check) and values (pg_optim_state_load's checks), then that every value fits its
 * tensor's dtype ("<path>: tensor 'w' holds ..."); the values are staged. diff (may be NULL):
 * the optimizer's hyper-parameters that differ from the file's (entry[k] indexes
 * pg_mf_opt_hyper_value), for the host's warning. pg_mf_load_commit writes what the check
 * staged: the optimizer's state, then every tensor. */
int pg_mf_load_check(pg_mf *mf, const pg_mf_model *m, struct pg_optim_hyper_diff *diff);
int pg_mf_load_commit(pg_mf *mf);

/* ---- ag_save_model's check that the config it writes loads back (modelfile_check.c) ----
 * The front end rebuilds the model from the config between begin and end (the layers'
 * constructors are the language's; the random stream put back after, so a save draws nothing).
 * Refusals: PG_STATUS_ERR_VALUE "ag_save_model(): the model's architecture config would not load
 * back (<why>); nothing was written". m->optim is not read. */
/* *checked = 1: this text with these parameter and buffer names, shapes and dtypes passed
 * already (the 16 newest are kept: ag_fit's checkpoints save one architecture every epoch);
 * nothing more to do. Else 0 after the loader's plausibility checks (pg_json_check with its
 * budget 16 * elements + 65536); *dtype: the default dtype to rebuild in (PG_DTYPE_F64 when
 * every parameter is f64, else PG_DTYPE_F32). */
int pg_mf_config_check_begin(const char *text, const pg_mf_model *m, int *checked, int *dtype);
/* The rebuilt model's parameter and buffer names and shapes against the model's (in any order);
 * equal: remembered as checked. Else "...: it rebuilds parameters 'w' 3x4, 'b' 1x4, the model
 * has 'w' 3x5, 'b' 1x4; nothing was written" (buffers likewise; "none" for an empty list). */
int pg_mf_config_check_end(const char *text, const pg_mf_model *m, const pg_mf_model *built);
void pg_mf_config_cache_clear(void); /* forget every checked config (tests) */

/* A front end's rebuild from a config failed with why (the language's error text): the refusal
 * as PG_STATUS_ERR_VALUE (always returned). SAVE: ag_save_model's text above (mf NULL); LOAD
 * "<path>: cannot rebuild the model from its architecture config: <why>"; UNUSABLE "<path>: the
 * rebuilt model is not usable: <why>" (the rebuilt model's parameters refused). */
enum { PG_MF_REBUILD_SAVE = 0, PG_MF_REBUILD_LOAD = 1, PG_MF_REBUILD_UNUSABLE = 2 };
int pg_mf_rebuild_fail(const pg_mf *mf, int what, const char *why);

/* ag_save_model's refusals of a config or extra (what: "extra", "the model's architecture
 * config") that the front end's walk found unwritable, always returned: DEEP, PG_STATUS_ERR_VALUE
 * "ag_save_model(): <what> is nested deeper than 128 levels (what ag_load_model reads)" (the
 * parser's PG_JSON_MAX_DEPTH); NOT_JSON, PG_STATUS_ERR_ARG "ag_save_model(): <what> must be
 * JSON-serialisable (<detail>)" (detail: the language's reason). */
enum { PG_MF_JSON_DEEP = 0, PG_MF_JSON_NOT_JSON = 1 };
int pg_mf_json_refuse(int why, const char *what, const char *detail);

/* ag_save_model's warning when the model's to_config() fails (why: the language's text of the
 * failure; r_text: R's spelling "model = ..."): the weights are saved without the architecture,
 * "ag_save_model(): saving the weights without the architecture (<why>); load with
 * ag_load_model(path, model=...)". Valid until the next call on this thread. */
const char *pg_mf_no_config_note(const char *why, int r_text);

/* ---- ag_save_model / ag_load_model's argument rules (modelfile_args.c) ----
 * The front ends say what kind each value is; the rules and texts are these, for both. */
enum { PG_MF_FN_SAVE = 0, PG_MF_FN_LOAD = 1 };
/* model_fn: not given, a function, or anything else */
enum { PG_MF_ARG_NONE = 0, PG_MF_ARG_FUNCTION = 1, PG_MF_ARG_OTHER = 2 };
/* fn: PG_MF_FN_*; have_model: ag_load_model's model (after the front end took a model object
 * given as model_fn as the model). PG_STATUS_ERR_ARG "<fn>: `model_fn` must be a function or
 * NULL." (ggmlR's), then for a load "ag_load_model(): give `model` or `model_fn`, not both". */
int pg_mf_builder_args(int fn, int model_fn, int have_model);
/* A value of the wrong kind (shown: the language's name of its type), always PG_STATUS_ERR_ARG:
 * OPTIMIZER "<fn>: optimizer must be an optimizer object, got <shown>"; BUILT, what model_fn
 * returned, "<fn>: `model_fn` must return an ag_sequential or ag_* layer (got class: <shown>)."
 * (ggmlR's); MODEL, a model without parameters(), "<fn>: `model` must be an ag_sequential or
 * ag_* layer (an object with parameters()), got <shown>". */
enum { PG_MF_BAD_OPTIMIZER = 0, PG_MF_BAD_BUILT = 1, PG_MF_BAD_MODEL = 2 };
int pg_mf_arg_fail(int fn, int what, const char *shown);
/* ag_load_model's dtype, given (NULL is the front end's, not asked): dtype the string, or NULL
 * for a value that is no single string (shown: the front end's rendering of it). R's match.arg
 * (an exact name or the one name it starts) over "f32", "f64", "f16", "bf16"; *out PG_DTYPE_F32
 * or PG_DTYPE_F64. Refusals: PG_STATUS_ERR_VALUE "ag_load_model(): dtype \"f16\" is not
 * supported by the CPU engine; use \"f32\" or \"f64\""; "ag_load_model(): 'dtype' should be one
 * of \"f32\", \"f64\", \"f16\", \"bf16\", got \"x\"" (PG_STATUS_ERR_ARG for no string). */
int pg_mf_load_dtype(const char *dtype, const char *shown, int *out);
/* path (shown as `shown`) as a model file to read, before anything opens it: 0 for a regular
 * file; PG_STATUS_ERR_IO with the errno (pg_last_errno) when stat fails or it is a directory
 * (EISDIR), its text "<fn>: <system text>" (r_text 0: Python's OSError adds the path) or R's ("<fn>:
 * cannot open file '<shown>': <system text>", "<fn>: '<shown>' is a directory");
 * PG_STATUS_ERR_VALUE "<fn>: <shown>: not a regular file (a FIFO, device or socket): ..." */
int pg_mf_path_check(const char *path, const char *shown, const char *fn, int r_text);
/* the default dtype a model is built in for a load: asked (PG_DTYPE_F32 / F64), else (-1)
 * PG_DTYPE_F64 when every parameter of the file is f64 (all_f64), else PG_DTYPE_F32 */
int pg_mf_build_dtype(int asked, int all_f64);
/* a built model's parameters (names, tensors) must all be in the dtype asked (-1: none asked; a
 * builder may hard-code its own): PG_STATUS_ERR_VALUE "ag_load_model(): dtype = \"f64\" was asked
 * for, but the model's parameter 'w' is f32 (does model_fn fix its own dtype?)". pg_mf_load_check
 * and pg_state_dict_load_file apply it first (the load's opts.dtype) and last (before the writes). */
int pg_mf_built_dtype_check(int asked, int64_t n, const char *const *names,
                            pg_tensor *const *params);
