/* .Call glue: ag_fit's set-up (the core's fit_setup.c): static / distributed, the batch sizes
 * over ranks and the run's settings, kept in the handle from the resume check to every
 * checkpoint. */
#include "r_util.h"

static pg_fit_setup *setup_get(SEXP x) { return r_get(x, R_FIT_SETUP); }

/* static: NULL, TRUE or FALSE (checked by ag_fit); loss: the loss's name ("callable") */
SEXP R_pg_fit_setup_new(SEXP stat, SEXP distributed, SEXP builtin, SEXP n, SEXP bs, SEXP nbl,
                        SEXP val_split, SEXP shuffle, SEXP loss, SEXP weighted)
{
    pg_fit_setup_params p = pg_fit_setup_default_params();
    p.static_mode = Rf_isNull(stat) ? PG_FIT_STATIC_AUTO : Rf_asLogical(stat) == 1;
    p.distributed = Rf_asLogical(distributed) == 1;
    p.builtin = Rf_asLogical(builtin) == 1;
    p.n = (int64_t)r_num(n, "ag_fit: n");
    p.batch_size = (int64_t)r_num(bs, "ag_fit: batch_size");
    p.nbatch_logical = (int64_t)r_num(nbl, "ag_fit: nbatch_logical");
    p.val_split = Rf_asReal(val_split);
    p.shuffle = Rf_asLogical(shuffle) == 1;
    p.loss = Rf_translateCharUTF8(STRING_ELT(loss, 0));
    p.weighted = Rf_asLogical(weighted) == 1;
    pg_fit_setup *s = NULL;
    r_check(pg_fit_setup_new(&p, &s));
    return r_wrap(s, R_FIT_SETUP);
}

/* list(static, auto, seed (NULL: none), has_split_state) */
SEXP R_pg_fit_setup_info(SEXP s)
{
    pg_fit_setup_info i;
    r_check(pg_fit_setup_get(setup_get(s), &i));
    static const char *const F[] = {"static", "auto", "seed", "has_split_state"};
    SEXP out = PROTECT(r_named_list(F, 4));
    SET_VECTOR_ELT(out, 0, Rf_ScalarLogical(i.static_step));
    SET_VECTOR_ELT(out, 1, Rf_ScalarLogical(i.auto_static));
    if (i.has_seed) SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(i.seed));
    SET_VECTOR_ELT(out, 3, Rf_ScalarLogical(i.has_split));
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

/* the settings' JSON text for the checkpoint's extra (R_pg_fit_ckpt_extra) */
SEXP R_pg_fit_setup_settings(SEXP s)
{
    pg_fit_setup *su = setup_get(s);
    int64_t need = pg_fit_setup_settings(su, NULL, 0);
    if (need < 0) r_fail();
    char *buf = R_alloc((size_t)need + 1, 1);
    pg_fit_setup_settings(su, buf, need + 1);
    return Rf_ScalarString(Rf_mkCharCE(buf, CE_UTF8));
}
