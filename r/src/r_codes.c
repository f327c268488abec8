/* The codes R passes to (or gets from) .Call, by name: the core's enum values and the glue's own
 * requests, read once at load (r/R/zzz.R: .pg$code), so R holds no literal codes. */
#include "r_util.h"

typedef struct {
    const char *name;
    int value;
} r_code;

static SEXP code_vector(const r_code *c, int n)
{
    SEXP out = PROTECT(Rf_allocVector(INTSXP, n)), names = PROTECT(Rf_allocVector(STRSXP, n));
    for (int i = 0; i < n; i++) {
        INTEGER(out)[i] = c[i].value;
        SET_STRING_ELT(names, i, Rf_mkChar(c[i].name));
    }
    Rf_setAttrib(out, R_NamesSymbol, names);
    UNPROTECT(2);
    return out;
}

#define GROUP(g)                                                                                   \
    {                                                                                              \
#g, g, (int)(sizeof g / sizeof g[0])                                                       \
    }

/* a named list of named integer vectors: .pg$code$dtype[["F64"]], .pg$code$tape[["DEPTH"]], ... */
SEXP R_pg_codes(void)
{
    static const r_code dtype[] = {{"F32", PG_DTYPE_F32},
                                   {"F64", PG_DTYPE_F64},
                                   {"I32", PG_DTYPE_I32},
                                   {"I64", PG_DTYPE_I64},
                                   {"U8", PG_DTYPE_U8}};
    static const r_code status[] = {{"OK", PG_STATUS_OK},
                                    {"SHAPE", PG_STATUS_ERR_SHAPE},
                                    {"DTYPE", PG_STATUS_ERR_DTYPE},
                                    {"VALUE", PG_STATUS_ERR_VALUE},
                                    {"NOMEM", PG_STATUS_ERR_NOMEM},
                                    {"STATE", PG_STATUS_ERR_STATE},
                                    {"ARG", PG_STATUS_ERR_ARG},
                                    {"IO", PG_STATUS_ERR_IO},
                                    {"MODIFIED", PG_STATUS_ERR_MODIFIED}};
    static const r_code seed[] = {
        {"NUMBER", PG_SEED_NUMBER}, {"STRING", PG_SEED_STRING}, {"OTHER", PG_SEED_OTHER}};
    static const r_code optim[] = {{"SGD", PG_OPTIM_KIND_SGD}, {"ADAM", PG_OPTIM_KIND_ADAM}};
    static const r_code sched[] = {{"STEP", PG_SCHED_KIND_STEP},
                                   {"COSINE", PG_SCHED_KIND_COSINE},
                                   {"CYCLIC", PG_SCHED_KIND_CYCLIC},
                                   {"ONECYCLE", PG_SCHED_KIND_ONECYCLE},
                                   {"WARMUP_COSINE", PG_SCHED_KIND_WARMUP_COSINE},
                                   {"WARMUP", PG_SCHED_KIND_WARMUP},
                                   {"NPAR", PG_SCHED_NPAR}};
    static const r_code build[] = {{"FORWARD", PG_GRAPH_BUILD_FORWARD},
                                   {"GRAD", PG_GRAPH_BUILD_GRAD},
                                   {"OPT", PG_GRAPH_BUILD_OPT}};
    static const r_code dist[] = {{"GRAD", PG_DIST_WHAT_GRAD}, {"VALUE", PG_DIST_WHAT_VALUE}};
    /* pg_linear's activation: none, or one of the unary kinds it fuses */
    static const r_code act[] = {{"NONE", -1},
                                 {"RELU", PG_UNARY_OP_RELU},
                                 {"SIGMOID", PG_UNARY_OP_SIGMOID},
                                 {"TANH", PG_UNARY_OP_TANH}};
    static const r_code file[] = {{"MISSING", PG_FILE_KIND_MISSING},
                                  {"REGULAR", PG_FILE_KIND_REGULAR},
                                  {"DIR", PG_FILE_KIND_DIR},
                                  {"OTHER", PG_FILE_KIND_OTHER}};
    static const r_code tape[] = {{"BEGIN", R_TAPE_BEGIN}, {"END", R_TAPE_END},
                                  {"CLEAR", R_TAPE_CLEAR}, {"DEPTH", R_TAPE_DEPTH},
                                  {"NODES", R_TAPE_NODES}, {"ENABLED", R_TAPE_ENABLED}};
    static const r_code scope[] = {{"DEPTH", R_SCOPE_DEPTH},
                                   {"END_TO", R_SCOPE_END_TO},
                                   {"STASHED", R_SCOPE_STASHED},
                                   {"UNSTASH_TO", R_SCOPE_UNSTASH_TO},
                                   {"ABORT", R_SCOPE_ABORT}};
    static const r_code scoped[] = {{"TAPE", R_SCOPED_TAPE},     {"NO_GRAD", R_SCOPED_NO_GRAD},
                                    {"STREAM", R_SCOPED_STREAM}, {"STASH", R_SCOPED_STASH},
                                    {"DTYPE", R_SCOPED_DTYPE},   {"RECORD", R_SCOPED_RECORD}};
    static const r_code ckpt[] = {
        {"STASH", R_CKPT_STASH}, {"UNSTASH", R_CKPT_UNSTASH}, {"SEED", R_CKPT_SEED}};
    /* nesting limits of model-file JSON (pg_api_codec.h): R's walks of configs and extra; the
     * bounds on requests (pg_api_bounds.h) */
    static const r_code limit[] = {{"JSON_DEPTH", PG_JSON_MAX_DEPTH},
                                   {"CONFIG_DEPTH", PG_CONFIG_MAX_DEPTH},
                                   {"MAX_THREADS", PG_MAX_THREADS},
                                   {"DP_MAX_REPLICAS", PG_DP_MAX_REPLICAS}};
    static const r_code early_stop[] = {{"CONTINUE", PG_EARLY_STOP_CONTINUE},
                                        {"IMPROVED", PG_EARLY_STOP_IMPROVED},
                                        {"STOP", PG_EARLY_STOP_STOP},
                                        {"SNAPSHOT", PG_EARLY_STOP_SNAPSHOT}};
    static const r_code state_form[] = {{"GGMLR", PG_OPTIM_STATE_FORM_GGMLR},
                                        {"LEGACY", PG_OPTIM_STATE_FORM_LEGACY},
                                        {"FILE", PG_OPTIM_STATE_FORM_FILE}};
    static const r_code mem_optim[] = {{"ADAM", PG_MEM_OPTIM_ADAM},
                                       {"SGD", PG_MEM_OPTIM_SGD},
                                       {"SGD_PLAIN", PG_MEM_OPTIM_SGD_PLAIN}};
    static const r_code mem_source[] = {{"GUESS", PG_MEM_SOURCE_GUESS},
                                        {"TAPE", PG_MEM_SOURCE_TAPE},
                                        {"COMPILED", PG_MEM_SOURCE_COMPILED}};
    static const r_code pool[] = {{"MAX", PG_POOL_KIND_MAX}, {"AVG", PG_POOL_KIND_AVG}};
    /* whose rebuild from a config failed (pg_mf_rebuild_fail) */
    static const r_code rebuild[] = {{"SAVE", PG_MF_REBUILD_SAVE},
                                     {"LOAD", PG_MF_REBUILD_LOAD},
                                     {"UNUSABLE", PG_MF_REBUILD_UNUSABLE}};
    /* why ag_save_model refuses a config or extra (pg_mf_json_refuse) */
    static const r_code json[] = {{"DEEP", PG_MF_JSON_DEEP}, {"NOT_JSON", PG_MF_JSON_NOT_JSON}};
    /* a model-file argument of the wrong kind (pg_mf_arg_fail) */
    static const r_code mf_bad[] = {
        {"OPTIMIZER", PG_MF_BAD_OPTIMIZER}, {"BUILT", PG_MF_BAD_BUILT}, {"MODEL", PG_MF_BAD_MODEL}};
    /* a config-API value of the wrong kind (pg_layer_arg_fail) */
    static const r_code layer_bad[] = {{"BUILT", PG_LAYER_BAD_BUILT},
                                       {"NO_CONFIG", PG_LAYER_BAD_NO_CONFIG}};
    static const struct {
        const char *name;
        const r_code *c;
        int n;
    } g[] = {GROUP(dtype),     GROUP(status),     GROUP(optim),      GROUP(sched),
             GROUP(build),     GROUP(dist),       GROUP(act),        GROUP(file),
             GROUP(tape),      GROUP(scope),      GROUP(scoped),     GROUP(ckpt),
             GROUP(limit),     GROUP(early_stop), GROUP(state_form), GROUP(seed),
             GROUP(mem_optim), GROUP(mem_source), GROUP(pool),       GROUP(rebuild),
             GROUP(json),      GROUP(mf_bad),     GROUP(layer_bad)};
    const int n = (int)(sizeof g / sizeof g[0]);
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n)), names = PROTECT(Rf_allocVector(STRSXP, n));
    for (int i = 0; i < n; i++) {
        SET_VECTOR_ELT(out, i, code_vector(g[i].c, g[i].n));
        SET_STRING_ELT(names, i, Rf_mkChar(g[i].name));
    }
    Rf_setAttrib(out, R_NamesSymbol, names);
    UNPROTECT(2);
    return out;
}
