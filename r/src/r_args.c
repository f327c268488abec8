/* .Call glue: the argument rules' texts (the core's arg_check.c), for .arg_int / .arg_num. */
#include "r_util.h"

static const char *str_or_null(SEXP s)
{
    return Rf_isNull(s) ? NULL : Rf_translateCharUTF8(STRING_ELT(s, 0));
}

/* a bound: NULL unbounded, else its value in *slot */
static const double *bound(SEXP b, double *slot)
{
    if (Rf_isNull(b)) return NULL;
    *slot = Rf_asReal(b);
    return slot;
}

/* v: the value as a double (read unless wrong_kind); lo, hi: NULL or numbers; rule: NULL or a
 * string; shown: .arg_show's text. Raises the classed refusal; NULL when v passes. */
SEXP R_pg_arg_int(SEXP fn, SEXP arg, SEXP v, SEXP lo, SEXP hi, SEXP rule, SEXP shown,
                  SEXP wrong_kind)
{
    double l, h;
    r_check(pg_arg_int(str_or_null(fn), str_or_null(arg), Rf_asReal(v), bound(lo, &l),
                       bound(hi, &h), str_or_null(rule), str_or_null(shown),
                       Rf_asLogical(wrong_kind) == 1));
    return R_NilValue;
}

SEXP R_pg_arg_num(SEXP fn, SEXP arg, SEXP v, SEXP lo, SEXP hi, SEXP lo_open, SEXP hi_open,
                  SEXP shown, SEXP wrong_kind)
{
    double l, h;
    r_check(pg_arg_num(str_or_null(fn), str_or_null(arg), Rf_asReal(v), bound(lo, &l),
                       bound(hi, &h), Rf_asLogical(lo_open) == 1, Rf_asLogical(hi_open) == 1,
                       str_or_null(shown), Rf_asLogical(wrong_kind) == 1));
    return R_NilValue;
}

/* a count truncated as as.integer (pg_arg_count): the integer, or the classed refusal. shown:
 * the text, or a function giving it, called only for a refusal (a good count costs no text:
 * optimizer_adam in every ag_fit) */
SEXP R_pg_arg_count(SEXP fn, SEXP arg, SEXP v, SEXP lo, SEXP rule, SEXP shown, SEXP wrong_kind)
{
    double out = 0;
    int wrong = Rf_asLogical(wrong_kind) == 1;
#define ARG_COUNT(text)                                                                            \
    pg_arg_count(str_or_null(fn), str_or_null(arg), Rf_asReal(v), Rf_asReal(lo),                   \
                 str_or_null(rule), text, wrong, &out)
    if (Rf_isFunction(shown)) {
        if (ARG_COUNT("") == PG_STATUS_OK) return Rf_ScalarInteger((int)out);
        shown = PROTECT(Rf_eval(PROTECT(Rf_lang1(shown)), R_GlobalEnv));
        r_check(ARG_COUNT(str_or_null(shown)));
        UNPROTECT(2);
    } else {
        r_check(ARG_COUNT(str_or_null(shown)));
    }
#undef ARG_COUNT
    return Rf_ScalarInteger((int)out);
}

/* whole-number ids (pg_arg_whole_ids): v a double vector; NULL, or the classed refusal */
SEXP R_pg_arg_whole_ids(SEXP fn, SEXP what, SEXP v)
{
    if (TYPEOF(v) != REALSXP) r_stopf(PG_STATUS_ERR_ARG, "R_pg_arg_whole_ids: v must be double");
    r_check(pg_arg_whole_ids(str_or_null(fn), str_or_null(what), REAL(v), (int64_t)XLENGTH(v)));
    return R_NilValue;
}

/* a finite number clamped and truncated (pg_arg_clamp, dp_train's verbose): the integer, or the
 * classed refusal */
SEXP R_pg_arg_clamp(SEXP fn, SEXP arg, SEXP v, SEXP lo, SEXP hi, SEXP rule, SEXP shown,
                    SEXP wrong_kind)
{
    double out = 0;
    r_check(pg_arg_clamp(str_or_null(fn), str_or_null(arg), Rf_asReal(v), Rf_asReal(lo),
                         Rf_asReal(hi), str_or_null(rule), str_or_null(shown),
                         Rf_asLogical(wrong_kind) == 1, &out));
    return Rf_ScalarInteger((int)out);
}

/* ag_linear(gain =) (pg_arg_gain): NULL, or the classed refusal */
SEXP R_pg_arg_gain(SEXP fn, SEXP gain, SEXP wrong_kind)
{
    r_check(pg_arg_gain(str_or_null(fn), Rf_asReal(gain), Rf_asLogical(wrong_kind) == 1));
    return R_NilValue;
}

/* a number in the caller's words (pg_arg_real): NULL when v passes, else the classed refusal */
SEXP R_pg_arg_real(SEXP fn, SEXP arg, SEXP v, SEXP lo, SEXP lo_open, SEXP rule, SEXP shown,
                   SEXP wrong_kind)
{
    r_check(pg_arg_real(str_or_null(fn), str_or_null(arg), Rf_asReal(v), Rf_asReal(lo),
                        Rf_asLogical(lo_open) == 1, str_or_null(rule), str_or_null(shown),
                        Rf_asLogical(wrong_kind) == 1));
    return R_NilValue;
}

/* ag_multihead_attention's sizes (pg_mha_check_sizes): NULL, or the classed refusal */
SEXP R_pg_mha_check_sizes(SEXP d_model, SEXP n_heads)
{
    r_check(pg_mha_check_sizes((int64_t)Rf_asInteger(d_model), (int64_t)Rf_asInteger(n_heads)));
    return R_NilValue;
}

/* ag_save_model(epoch=): the core's rule (pg_mf_epoch_arg), as R_pg_arg_int */
SEXP R_pg_mf_epoch_arg(SEXP v, SEXP shown, SEXP wrong_kind)
{
    r_check(pg_mf_epoch_arg(Rf_asReal(v), str_or_null(shown), Rf_asLogical(wrong_kind) == 1));
    return R_NilValue;
}
