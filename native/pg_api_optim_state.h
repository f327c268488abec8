/* pyggmlr C core: optimizer state() / load_state() in ggmlR 0.8.6's layout, and this project's
 * model-file layout (optim_state.c), once for R and Python. The front ends walk their own state
 * structure (dict / named list), describe it here as flat host data and raise or warn in their
 * language; the tables, the checks (in ggmlR's order, ggmlR's texts), the hyper-parameter
 * comparison and its message, and the all-or-nothing write are here. */

/* The name tables (pg_optim_name): which slots and hyper-parameters each layout holds. */
enum pg_optim_names {
    PG_OPTIM_NAMES_SLOTS = 0,      /* ggmlR state()'s slots: SGD velocity; Adam m, v */
    PG_OPTIM_NAMES_HYPER = 1,      /* ggmlR state()'s hyper-parameters */
    PG_OPTIM_NAMES_EXTRA = 2,      /* this project's extras: in a state only when not at default */
    PG_OPTIM_NAMES_FILE_SLOTS = 3, /* model files (and pyggmlr's earlier state()): + accumulator */
    PG_OPTIM_NAMES_FILE_HYPER = 4, /* model files: every hyper-parameter */
    PG_OPTIM_NAMES_COUNT
};
/* entry j of table for kind (a pg_optim_kind); NULL past the end or for a bad table / kind */
const char *pg_optim_name(int table, int kind, int j);
/* the default of PG_OPTIM_NAMES_EXTRA's entry j (NaN out of range); flags are 0 / 1 */
double pg_optim_extra_default(int kind, int j);
/* 1 when hyper-parameter `name` is a flag (TRUE / FALSE: nesterov, average), else 0 */
int pg_optim_is_flag(const char *name);
const char *pg_optim_kind_name(int kind); /* "sgd", "adam"; NULL out of range */
const char *pg_optim_state_format(void);  /* "ggmlR.ag_opt_state" */

/* A number as R's format() writes it (7 significant digits, fixed unless scientific is
 * narrower; NaN, Inf, -Inf). Returns buf. */
const char *pg_format_r(char *buf, int64_t n, double v);
/* the same with `digits` significant digits (1..15): 15 is R's as.character(), a factor's level */
const char *pg_format_r_digits(char *buf, int64_t n, double v, int digits);

/* One host value as the checks see it. text: for TEXT the string, for OTHER the host's display
 * of it; when given for the other kinds it is the display too (the type's message shows what
 * the host language shows). Messages show numbers as pg_format_r, flags as TRUE / FALSE. */
enum pg_host_kind {
    PG_HOST_ABSENT = 0, /* not there (None / NULL) */
    PG_HOST_NUM = 1,    /* a real number */
    PG_HOST_INT = 2,    /* an integer-typed number (Python int, R integer) */
    PG_HOST_BOOL = 3,   /* a flag, num 0 / 1 */
    PG_HOST_TEXT = 4,   /* a string */
    PG_HOST_OTHER = 5,  /* anything else (a list, a vector of several, ...) */
    PG_HOST_KIND_COUNT
};
typedef struct pg_host_value {
    int kind;
    double num;
    const char *text;
} pg_host_value;

/* One slot's value: absent, or its dims and (when numbers in 2 dims) column-major doubles. */
typedef struct pg_host_matrix {
    int present;
    int numeric; /* numbers (not flags, strings or objects) */
    int ndim;
    const int64_t *dims; /* ndim entries */
    const double *data;  /* dims[0] * dims[1] doubles when numeric and ndim == 2, else NULL */
} pg_host_matrix;

enum pg_optim_state_form {
    PG_OPTIM_STATE_FORM_GGMLR = 0,  /* ggmlR 0.8.6's state() */
    PG_OPTIM_STATE_FORM_LEGACY = 1, /* pyggmlr's state() before it: kind, params (file layout) */
    PG_OPTIM_STATE_FORM_FILE = 2,   /* a model file's (shapes checked by the reader) */
    PG_OPTIM_STATE_FORM_COUNT
};

/* A state as flat host data. slots: GGMLR slot-major (slots[s * n + i], n_slots = S * n, S from
 * PG_OPTIM_NAMES_SLOTS); LEGACY and FILE parameter-major over PG_OPTIM_NAMES_FILE_SLOTS
 * (slots[i * S + s]). n_params: the state's parameter count (GGMLR: per slot, slot_len[s];
 * LEGACY: slot_len[0]). names: given when names_given; names_bad: NULL, or the host's type name
 * of a names entry that is no list of names. opt_names: the optimizer's (NULL: unnamed). hyper:
 * the state's hyper-parameters by name (ABSENT values count as not there). */
typedef struct pg_optim_state_in {
    int form;   /* pg_optim_state_form */
    int is_map; /* a dict / list with names */
    pg_host_value format, version, type, t, accum_count;
    int64_t slot_len[3];
    const char *names_bad;
    int names_given;
    const char *const *names;
    int64_t n_names;
    const char *const *opt_names;
    int64_t n_opt_names;
    const pg_host_matrix *slots;
    int64_t n_slots;
    const char *const *hyper_names;
    const pg_host_value *hyper;
    int64_t n_hyper;
} pg_optim_state_in;
/* A state's form, one rule for both hosts: LEGACY (pyggmlr's state() before ggmlR 0.8.6's
 * layout) when it has no type but a kind and a list of params, else GGMLR. has_*: the key is there
 * with a value; a key whose value is NULL / None counts as absent (R's reading, and how a JSON null
 * arrives in R). */
int pg_optim_state_form_of(int has_type, int has_kind, int params_is_list);
/* all fields zero / absent, form GGMLR */
pg_optim_state_in pg_optim_state_in_default(void);

/* load_state() and the model files' load: the checks in ggmlR's order (PG_STATUS_ERR_VALUE,
 * "optimizer load_state(): ..."), then, unless check_only, the write, all or nothing (the value
 * checks of pg_optim_load / pg_optim_load_file first). Hosts run it with check_only, warn with
 * pg_optim_hyper_diff's message, then run it again to write. */
int pg_optim_state_load(pg_optim *o, const pg_optim_state_in *in, int check_only);

/* at most 8 hyper-parameters differ (PG_OPTIM_NAMES_FILE_HYPER has 7) */
/* The hyper-parameters that differ between the optimizer and the state (R's all.equal), in
 * ggmlR's order: its own when the state has them, the extras against their default when it has
 * not. entry[k]: index into in->hyper, -1 when the default was compared (default_value[k]). */
typedef struct pg_optim_hyper_diff {
    int n;
    const char *name[8];
    int64_t entry[8];
    double default_value[8];
    int is_flag[8];
    char message[2048]; /* the warning's text when n > 0, else "" */
} pg_optim_hyper_diff;
int pg_optim_hyper_diff_of(pg_optim *o, const pg_optim_state_in *in, pg_optim_hyper_diff *out);

/* load_state()'s first half, once for both front ends: pg_optim_state_load's checks
 * (check_only), then pg_optim_hyper_diff_of into diff. Hosts warn with diff, then write with
 * pg_optim_state_load. diff is untouched when a check fails. */
int pg_optim_state_check(pg_optim *o, const pg_optim_state_in *in, pg_optim_hyper_diff *diff);

/* state() in ggmlR 0.8.6's layout but for the slot values and the names (the host's own
 * containers): format, version 1, type, t (Adam's; ggmlR stores 0 for SGD), accum_count, the
 * slot names, and the hyper-parameters (ggmlR's, then the extras not at their default, in order;
 * flags 0 / 1). has_note: taken mid-accumulation, and note is the warning state() gives. */
typedef struct pg_optim_state_out {
    const char *format;
    int version;
    const char *type;
    int64_t t, accum_count;
    int n_slots;
    const char *slot[3];
    int n_hyper;
    const char *hyper_name[8];
    double hyper_value[8];
    int hyper_is_flag[8];
    int has_note;
    char note[512];
} pg_optim_state_out;
int pg_optim_state_of(pg_optim *o, pg_optim_state_out *out);
