/* ag_save_model / ag_load_model's argument rules that call no user code (pg_api_modelfile.h):
 * the builder arguments and result, the optimizer's kind, the dtype to load in and the built model's
 * dtype, with one text for both front ends (they only say what kind each value is). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "modelfile_internal.h"

static const char *const FN[] = {"ag_save_model()", "ag_load_model()"};

int pg_mf_builder_args(int fn, int model_fn, int have_model)
{
    if (fn < PG_MF_FN_SAVE || fn > PG_MF_FN_LOAD || model_fn < PG_MF_ARG_NONE ||
        model_fn > PG_MF_ARG_OTHER)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_builder_args(): bad arguments");
    if (model_fn == PG_MF_ARG_OTHER) /* ggmlR's text (s9.3), for both */
        return pg_fail(PG_STATUS_ERR_ARG, "%s: `model_fn` must be a function or NULL.", FN[fn]);
    if (fn == PG_MF_FN_LOAD && have_model && model_fn == PG_MF_ARG_FUNCTION)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_load_model(): give `model` or `model_fn`, not both");
    return PG_STATUS_OK;
}

int pg_mf_arg_fail(int fn, int what, const char *shown)
{
    const char *got = shown ? shown : "?";
    if (fn < PG_MF_FN_SAVE || fn > PG_MF_FN_LOAD || what < PG_MF_BAD_OPTIMIZER ||
        what > PG_MF_BAD_MODEL)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_arg_fail(): bad arguments");
    if (what == PG_MF_BAD_MODEL)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: `model` must be an ag_sequential or ag_* layer (an object with "
                       "parameters()), got %s",
                       FN[fn], got);
    if (what == PG_MF_BAD_BUILT) /* ggmlR's text */
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: `model_fn` must return an ag_sequential or ag_* layer (got class: %s).",
                       FN[fn], got);
    return pg_fail(PG_STATUS_ERR_ARG, "%s: optimizer must be an optimizer object, got %s", FN[fn],
                   got);
}

/* R's match.arg (ggmlR's): the exact name, else the one name it starts */
static int match_dtype(const char *s)
{
    static const char *const names[] = {"f32", "f64", "f16", "bf16"};
    size_t n = strlen(s);
    int hit = -1;
    for (int i = 0; i < 4; i++) {
        if (!strcmp(s, names[i])) return i;
        if (n && !strncmp(s, names[i], n)) hit = hit == -1 ? i : -2;
    }
    return hit;
}

int pg_mf_load_dtype(const char *dtype, const char *shown, int *out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_load_dtype(): NULL out");
    int i = dtype ? match_dtype(dtype) : -1;
    if (i == 0 || i == 1) {
        *out = i == 0 ? PG_DTYPE_F32 : PG_DTYPE_F64;
        return PG_STATUS_OK;
    }
    if (i >= 2) /* ggmlR's half precisions are metadata there; the CPU engine keeps none */
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_load_model(): dtype \"%s\" is not supported by the CPU engine; use "
                       "\"f32\" or \"f64\"",
                       i == 2 ? "f16" : "bf16");
    if (!dtype) /* not a single string: the front end's rendering of the value */
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_load_model(): 'dtype' should be one of \"f32\", \"f64\", \"f16\", "
                       "\"bf16\", got %s",
                       shown ? shown : "?");
    char q[80]; /* the value quoted, long ones cut */
    size_t k = 0;
    const char *c = dtype;
    for (; *c && k < sizeof q - 8; c++) {
        if (*c == '"' || *c == '\\') q[k++] = '\\';
        q[k++] = *c;
    }
    q[k] = '\0';
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "ag_load_model(): 'dtype' should be one of \"f32\", \"f64\", \"f16\", \"bf16\", "
                   "got \"%s%s\"",
                   q, *c ? "..." : "");
}

int pg_mf_build_dtype(int asked, int all_f64)
{
    if (asked == PG_DTYPE_F32 || asked == PG_DTYPE_F64) return asked;
    return all_f64 ? PG_DTYPE_F64 : PG_DTYPE_F32;
}

static const char *dtype_name(int d)
{
    return d == PG_DTYPE_F32 ? "f32" : d == PG_DTYPE_F64 ? "f64" : "?";
}

int pg_mf_built_dtype_check(int asked, int64_t n, const char *const *names,
                            pg_tensor *const *params)
{
    if (asked < 0) return PG_STATUS_OK; /* nothing asked: the builder's own */
    if (n < 0 || (n > 0 && (!names || !params)))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_built_dtype_check(): bad arguments");
    for (int64_t i = 0; i < n; i++)
        if (params[i] && params[i]->dtype != asked) /* a builder may hard-code its own dtype */
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "ag_load_model(): dtype = \"%s\" was asked for, but the model's "
                           "parameter '%s' is %s (does model_fn fix its own dtype?)",
                           dtype_name(asked), names[i] ? names[i] : "?",
                           dtype_name(params[i]->dtype));
    return PG_STATUS_OK;
}

int pg_mf_path_check(const char *path, const char *shown, const char *fn, int r_text)
{
    struct stat sb;
    if (!path || !shown || !fn)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_path_check(): NULL argument");
    int err = stat(path, &sb) ? errno : S_ISDIR(sb.st_mode) ? EISDIR : 0;
    /* Python's OSError adds the path to its text: "[Errno 2] <fn>: No such file or directory: 'p'" */
    if (err && !r_text) return pg_fail_io(err, "%s: %s", fn, strerror(err));
    if (err == EISDIR) return pg_fail_io(err, "%s: '%s' is a directory", fn, shown);
    if (err) return pg_fail_io(err, "%s: cannot open file '%s': %s", fn, shown, strerror(err));
    if (!S_ISREG(sb.st_mode)) /* reading a FIFO or device would block or never end */
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: %s: not a regular file (a FIFO, device or socket): model files are "
                       "regular files",
                       fn, shown);
    return PG_STATUS_OK;
}

const char *pg_mf_no_config_note(const char *why, int r_text)
{
    static _Thread_local char buf[4096];
    snprintf(buf, sizeof buf,
             "ag_save_model(): saving the weights without the architecture (%s); load with "
             "ag_load_model(path, model%s...)",
             why ? why : "", r_text ? " = " : "=");
    return buf;
}
