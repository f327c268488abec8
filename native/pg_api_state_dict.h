/* pyggmlr C core: ag_load_state_dict()'s rules and its write (state_dict.c), once for R and
 * Python. The front ends check their own objects (the state a dict / list with "parameters", strict
 * a flag), walk the model for its named tensors and describe the state's entries as host data
 * (pg_host_matrix, pg_api_optim_state.h); the rules, in ggmlR's order with its texts, and the
 * all-or-nothing write are here. Named to sort after pg_api_optim_state.h (cffi reads the headers
 * in name order, and pg_host_matrix comes from there). */

/* the two kinds a state holds, in the order they are checked */
enum pg_state_dict_kind { PG_STATE_DICT_PARAMETERS = 0, PG_STATE_DICT_BUFFERS = 1 };

/* One kind on one side. names: n names, a NULL entry for R's NA; names NULL (n > 0): an unnamed
 * list (the model's side refuses it, the state's reads every name as ""). tensors: the model's n
 * tensors (borrowed; NULL on the state's side). values: the state's n values (NULL on the model's
 * side); a value needs data only when a model tensor uses it with its shape. */
typedef struct pg_state_dict_side {
    int64_t n;
    const char *const *names;
    pg_tensor *const *tensors;
    const pg_host_matrix *values;
} pg_state_dict_side;

/* model[k], state[k] for k in pg_state_dict_kind. For parameters, then buffers: the model's names
 * distinct and non-empty; under strict the same names on both sides. Then each used entry (model
 * order, the names on both sides; parameters first): numbers of the model's shape
 * (PG_STATUS_ERR_SHAPE), finite; then every used value fits its tensor's dtype (pg_values_fit).
 * Only then every value is written into its tensor (pg_tensor_write): a refused load writes
 * nothing. Messages start with caller ("ag_load_state_dict()"); refusals are PG_STATUS_ERR_VALUE
 * but for the shape; a malformed description (NULL where values are needed) is
 * PG_STATUS_ERR_ARG. */
int pg_state_dict_load(const char *caller, const pg_state_dict_side *model,
                       const pg_state_dict_side *state, int strict);

/* ag_state_dict()'s format tag, "ggmlR.ag_state_dict" (its version is 1) */
const char *pg_state_dict_format(void);

/* ag_load_state_dict()'s checks of its arguments, before the model is walked, in order with
 * their texts (PG_STATUS_ERR_ARG, "caller: ..."): state_ok, the state is a dict / list whose
 * "parameters" is one; strict_ok, strict is one flag; buffers_ok, its "buffers" is absent or a
 * dict / list. Returns 0 when all hold. */
int pg_state_dict_check_args(const char *caller, int state_ok, int strict_ok, int buffers_ok);

/* ag_state_dict() / ag_load_state_dict()'s refusals of the model's parameters, once for both
 * front ends (PG_STATUS_ERR_ARG, "caller: ..."), which walk the model (its methods are user code):
 * index 0, the model has no parameters() / params() method; -1, parameters() returned `shown`,
 * no list; i > 0, parameter i (`name`, NULL or "": "unnamed") is a `shown`, not an ag_tensor.
 * Returns PG_STATUS_ERR_ARG (the error set). */
int pg_state_dict_model_fail(const char *caller, int64_t index, const char *name,
                             const char *shown);

/* ag_load_model()'s ggmlR container (an R data file) with pg_state_dict_load's rules and ggmlR's
 * texts, all PG_STATUS_ERR_VALUE: the parameters' names must match ("parameter mismatch between
 * saved state and rebuilt model." + "missing in file:" / "not in model:" lines); buffers on both
 * sides are used, the others skipped; each used value numbers of the model's shape ("shape
 * mismatch for parameter 'W': model 2x2 vs file 3x3."), finite; every value fits its dtype; the
 * model's parameters are in dtype (pg_mf_built_dtype_check; -1: any). Then the writes, all or
 * nothing. caller NULL: "ag_load_model()". */
int pg_state_dict_load_file(const char *caller, const pg_state_dict_side *model,
                            const pg_state_dict_side *state, int dtype);

/* ag_load_model()'s ggmlR container, before anything is built: ggmlR's checks in order, with its
 * texts. The front end read the file (an R data file) and says what it holds and what was given.
 * is_list: the file holds a list; format: its "format" when one string (NULL else), which must be
 * "ggmlR.ag_state"; version_ok: its "version" is the integer 1 (version: as the front end prints
 * it); have_model, have_model_fn: model =, model_fn = given; stored_fn: the file's model_fn is a
 * function (code from the file, run only with trust); dtype / dtype_shown: ag_load_model's dtype
 * when have_dtype (pg_mf_load_dtype's rule); params_list: its "parameters" are a list; all_f64:
 * its parameters are labelled f64 (the dtype built in when none is asked). Refusals
 * PG_STATUS_ERR_VALUE naming path; PG_STATUS_ERR_STATE for a stored model_fn without trust
 * (the front end's untrusted condition); a dtype that is no string PG_STATUS_ERR_ARG. On success
 * *asked: the dtype asked (-1: none), *build: the one the model is built in. */
typedef struct {
    const char *path, *format, *version, *dtype, *dtype_shown;
    int is_list, version_ok, have_model, have_model_fn, stored_fn, trust, have_dtype;
    int params_list, all_f64;
} pg_state_dict_container;
int pg_state_dict_container_check(const pg_state_dict_container *c, int *asked, int *build);
