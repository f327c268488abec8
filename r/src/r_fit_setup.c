/* .Call glue: ag_fit's set-up (the core's fit_setup.c): static / distributed, the batch sizes
 * over ranks and the run's settings, kept in the handle from the resume check to every
 * checkpoint. */
#include <string.h>
#include "r_util.h"

static pg_fit_setup *setup_get(SEXP x) { return r_get(x, R_FIT_SETUP); }

/* a: ag_fit's settings as a named list (pg_fit_setup_params' field names, static_mode NULL, TRUE or
 * FALSE as ag_fit(static =) checked it; loss: the loss's name, "callable" for a function); a
 * field not given keeps the core's default */
static SEXP field(SEXP a, const char *name)
{
    SEXP nm = Rf_getAttrib(a, R_NamesSymbol);
    for (R_xlen_t i = 0; i < Rf_xlength(a) && !Rf_isNull(nm); i++)
        if (!strcmp(CHAR(STRING_ELT(nm, i)), name)) return VECTOR_ELT(a, i);
    return NULL;
}

SEXP R_pg_fit_setup_new(SEXP a)
{
    pg_fit_setup_params p = pg_fit_setup_default_params();
    SEXP v;
    if ((v = field(a, "static_mode")))
        p.static_mode = Rf_isNull(v) ? PG_FIT_STATIC_AUTO : Rf_asLogical(v) == 1;
    int *flags[] = {&p.distributed, &p.builtin, &p.shuffle, &p.weighted};
    const char *flag_names[] = {"distributed", "builtin", "shuffle", "weighted"};
    for (int k = 0; k < 4; k++)
        if ((v = field(a, flag_names[k]))) *flags[k] = Rf_asLogical(v) == 1;
    int64_t *counts[] = {&p.n, &p.batch_size, &p.nbatch_logical};
    const char *count_names[] = {"n", "batch_size", "nbatch_logical"};
    const char *count_what[] = {"ag_fit: n", "ag_fit: batch_size", "ag_fit: nbatch_logical"};
    for (int k = 0; k < 3; k++)
        if ((v = field(a, count_names[k]))) *counts[k] = (int64_t)r_num(v, count_what[k]);
    if ((v = field(a, "val_split"))) p.val_split = Rf_asReal(v);
    if ((v = field(a, "loss"))) p.loss = Rf_translateCharUTF8(STRING_ELT(v, 0));
    pg_fit_setup *s = NULL;
    r_check(pg_fit_setup_new(&p, &s));
    if ((v = field(a, "metrics")) && TYPEOF(v) == INTSXP) { /* ag_fit(metrics =)'s codes */
        int rc = pg_fit_setup_metrics(s, (int64_t)XLENGTH(v), INTEGER(v));
        if (rc) pg_fit_setup_free(s);
        r_check(rc);
    }
    return r_wrap(s, R_FIT_SETUP);
}

/* ag_fit(callbacks =)'s rule (pg_fit_callback_plan): value a pg_fit_cb_value code, top the
 * argument itself; "one", "items", "wrap" or "keep", or the core's refusal showing shown */
SEXP R_pg_fit_callback_plan(SEXP value, SEXP top, SEXP shown)
{
    static const char *const ACTIONS[] = {"one", "items", "wrap", "keep"};
    int action = 0;
    r_check(pg_fit_callback_plan(Rf_asInteger(value), Rf_asLogical(top) == 1,
                                 Rf_translateCharUTF8(STRING_ELT(shown, 0)), 1, &action));
    return Rf_mkString(ACTIONS[action]);
}

/* list(seed (NULL: none), has_split_state, accum); the static mode is the session's to read */
SEXP R_pg_fit_setup_info(SEXP s)
{
    pg_fit_setup_info i;
    r_check(pg_fit_setup_get(setup_get(s), &i));
    static const char *const F[] = {"seed", "has_split_state", "accum"};
    SEXP out = PROTECT(r_named_list(F, 3));
    if (i.has_seed) SET_VECTOR_ELT(out, 0, Rf_ScalarInteger(i.seed));
    SET_VECTOR_ELT(out, 1, Rf_ScalarLogical(i.has_split));
    SET_VECTOR_ELT(out, 2, Rf_ScalarReal((double)i.accum));
    UNPROTECT(1);
    return out;
}

/* distributed: MPI's world size (the batch sizes become the global batch's) */
SEXP R_pg_fit_setup_world(SEXP s, SEXP world)
{
    r_check(pg_fit_setup_world(setup_get(s), (int64_t)r_num(world, "ag_fit: world size")));
    return R_NilValue;
}

/* ag_fit(seed =) as .seed_int made it */
SEXP R_pg_fit_setup_seed(SEXP s, SEXP seed)
{
    r_check(pg_fit_setup_seed(setup_get(s), Rf_asInteger(seed)));
    return R_NilValue;
}
