/* .Call glue: ag_fit's data plan (the core's fit.c). Draws (the split, each epoch's shuffle) run
 * between r_draw_enter and r_draw_leave, so they come from R's .Random.seed or the run stream. */
#include <string.h>
#include "r_util.h"

extern SEXP R_pg_tape(SEXP);

static pg_fit *fit_get(SEXP x) { return r_get(x, R_FIT); }

SEXP R_pg_fit_new(SEXP x, SEXP y, SEXP classify, SEXP bs, SEXP nbl, SEXP val_split, SEXP shuffle,
                  SEXP split_state)
{
    pg_tensor *xt = r_get(x, R_TENSOR), *yt = Rf_isNull(y) ? NULL : r_get(y, R_TENSOR);
    const int32_t *st = NULL;
    if (!Rf_isNull(split_state)) {
        if (TYPEOF(split_state) != INTSXP || XLENGTH(split_state) != PG_RNG_STATE_LEN) {
            pg_fail(PG_STATUS_ERR_VALUE, "ag_fit: the checkpoint's split state must be %d integers",
                    (int)PG_RNG_STATE_LEN);
            r_fail(); /* classed, as every core error */
        }
        st = (const int32_t *)INTEGER(split_state);
    }
    pg_fit_params p = pg_fit_default_params();
    p.classify = Rf_asLogical(classify) == 1;
    p.batch_size = (int64_t)r_num(bs, "ag_fit: batch_size");
    p.nbatch_logical = (int64_t)r_num(nbl, "ag_fit: nbatch_logical");
    p.val_split = r_num(val_split, "ag_fit: val_split");
    p.shuffle = Rf_asLogical(shuffle) == 1;
    p.split_state = st;
    r_draw c = r_draw_enter();
    pg_fit *f = pg_fit_new(xt, yt, &p);
    r_draw_leave(c, f != NULL);
    return r_wrap(f, R_FIT);
}

/* c(n, n_train, n_val, training batches, micro-batches per logical batch, validation batches) */
SEXP R_pg_fit_sizes(SEXP fp)
{
    pg_fit_dims d;
    r_check(pg_fit_sizes(fit_get(fp), &d));
    const int64_t s[6] = {d.n, d.n_train, d.n_val, d.n_batches, d.accum, d.n_val_batches};
    return r_counts(s, 6);
}

SEXP R_pg_fit_split_state(SEXP fp)
{
    SEXP v = PROTECT(Rf_allocVector(INTSXP, PG_RNG_STATE_LEN));
    r_check(pg_fit_split_state(fit_get(fp), (int32_t *)INTEGER(v)));
    UNPROTECT(1);
    return v;
}

SEXP R_pg_fit_epoch_begin(SEXP fp)
{
    pg_fit *f = fit_get(fp);
    r_draw c = r_draw_enter();
    int rc = pg_fit_epoch_begin(f);
    r_draw_leave(c, rc == 0);
    if (rc) r_fail();
    return R_NilValue;
}

/* list(x, y) of batch b (0-based) as ag_tensors (the plan's reused tensors); y NULL without */
SEXP R_pg_fit_batch(SEXP fp, SEXP val, SEXP b)
{
    pg_tensor *xb = NULL, *yb = NULL;
    if (pg_fit_batch(fit_get(fp), Rf_asLogical(val) == 1, (int64_t)r_num(b, "ag_fit: batch"), &xb,
                     &yb) < 0)
        r_fail();
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SET_VECTOR_ELT(out, 0, r_wrap_tensor(xb));
    if (yb) SET_VECTOR_ELT(out, 1, r_wrap_tensor(yb));
    UNPROTECT(1);
    return out;
}

SEXP R_pg_fit_record(SEXP fp, SEXP val, SEXP loss, SEXP out)
{
    pg_tensor *o = r_get(r_handle(out), R_TENSOR);
    r_check(pg_fit_record(fit_get(fp), Rf_asLogical(val) == 1, r_num(loss, "ag_fit: loss"), o));
    return R_NilValue;
}

/* one eager micro-batch after the host's forward and loss, in the core: the loss value */
SEXP R_pg_fit_train_step(SEXP fp, SEXP loss, SEXP out, SEXP opt)
{
    pg_fit *f = fit_get(fp);
    pg_tensor *lt = r_get(r_handle(loss), R_TENSOR), *ot = r_get(r_handle(out), R_TENSOR);
    double v;
    if (pg_fit_train_step(f, lt, ot, r_get(opt, R_OPTIM), &v)) {
        r_host_rethrow(); /* an R error in an ag_checkpoint replay goes on unchanged */
        r_fail();
    }
    return Rf_ScalarReal(v);
}

/* class(x)[[1]] as R prints it, for messages */
static const char *class_name(SEXP x)
{
    SEXP k = Rf_getAttrib(x, R_ClassSymbol);
    if (TYPEOF(k) == STRSXP && XLENGTH(k) > 0) return CHAR(STRING_ELT(k, 0));
    if (Rf_length(Rf_getAttrib(x, R_DimSymbol)) == 2) return "matrix";
    switch (TYPEOF(x)) {
    case REALSXP: return "numeric";
    case INTSXP: return "integer";
    case LGLSXP: return "logical";
    case STRSXP: return "character";
    case VECSXP: return "list";
    case CLOSXP:
    case BUILTINSXP:
    case SPECIALSXP: return "function";
    default: return Rf_type2char(TYPEOF(x));
    }
}

/* ---- one eager micro-batch with the host's code called from C ----
 * ag_fit's eager loop for an optimizer of the package: gather batch b, call fwd(x) and
 * lossfn(out, y) (R code) inside a tape scope that C closes on every exit (R_UnwindProtect, as
 * with_grad_tape), then pg_fit_train_step. What was most of R's step (the loop body's R code)
 * runs here; the results are the R loop's, bit for bit. */
struct eager {
    SEXP fwd, lossfn, x, y;
    int depth;
};

static SEXP eager_eval(void *data)
{
    struct eager *e = data;
    SEXP c1 = PROTECT(Rf_lang2(e->fwd, e->x));
    SEXP out = PROTECT(Rf_eval(c1, R_GlobalEnv));
    if (TYPEOF(r_handle(out)) != EXTPTRSXP) /* a number would reach the loss as a constant */
        r_stopf(PG_STATUS_ERR_ARG, "ag_fit: model forward returned a %s, not a tensor",
                class_name(out));
    SEXP c2 = PROTECT(Rf_lang3(e->lossfn, out, e->y));
    SEXP lv = PROTECT(Rf_eval(c2, R_GlobalEnv));
    SEXP res = Rf_allocVector(VECSXP, 2);
    SET_VECTOR_ELT(res, 0, out);
    SET_VECTOR_ELT(res, 1, lv);
    UNPROTECT(4);
    return res;
}

static void eager_close(void *data, Rboolean jump)
{
    (void)jump;
    pg_tape_end_to(((struct eager *)data)->depth);
}

/* the loss value, as R_pg_fit_train_step */
SEXP R_pg_fit_eager_step(SEXP fp, SEXP b, SEXP fwd, SEXP lossfn, SEXP opt)
{
    pg_fit *f = fit_get(fp);
    pg_optim *o = r_get(opt, R_OPTIM);
    pg_tensor *xb = NULL, *yb = NULL;
    if (pg_fit_batch(f, 0, (int64_t)r_num(b, "ag_fit: batch"), &xb, &yb) < 0) r_fail();
    SEXP x = PROTECT(r_wrap_tensor(xb));
    SEXP y = yb ? r_wrap_tensor(yb) : R_NilValue;
    PROTECT(y);
    struct eager e = {fwd, lossfn, x, y, pg_tape_depth()};
    SEXP cont = PROTECT(R_MakeUnwindCont());
    R_pg_tape(PROTECT(Rf_ScalarInteger(R_TAPE_BEGIN)));
    UNPROTECT(1);
    SEXP res = PROTECT(R_UnwindProtect(eager_eval, &e, eager_close, &e, cont));
    SEXP out = VECTOR_ELT(res, 0), lv = VECTOR_ELT(res, 1), lh = r_handle(lv);
    if (TYPEOF(lh) != EXTPTRSXP)
        r_stopf(PG_STATUS_ERR_VALUE, "ag_fit: the loss must be a 1x1 ag_tensor, got %s",
                class_name(lv));
    double v;
    if (pg_fit_train_step(f, r_get(lh, R_TENSOR), r_get(r_handle(out), R_TENSOR), o, &v)) {
        r_host_rethrow(); /* an R error in an ag_checkpoint replay goes on unchanged */
        r_fail();
    }
    UNPROTECT(4);
    return Rf_ScalarReal(v);
}

SEXP R_pg_fit_running(SEXP fp)
{
    SEXP v = PROTECT(Rf_allocVector(REALSXP, 2));
    r_check(pg_fit_running(fit_get(fp), REAL(v), REAL(v) + 1));
    UNPROTECT(1);
    return v;
}

/* c(loss, loss_unc, accuracy, accuracy_unc, val_loss, val_loss_unc, val_accuracy, val_accuracy_unc) */
SEXP R_pg_fit_epoch_end(SEXP fp, SEXP per_datapoint)
{
    SEXP v = PROTECT(Rf_allocVector(REALSXP, 8));
    pg_fit_result r[2];
    r_check(pg_fit_epoch_end(fit_get(fp), Rf_asLogical(per_datapoint) == 1, &r[0], &r[1]));
    for (int k = 0; k < 2; k++) {
        REAL(v)[4 * k] = r[k].loss;
        REAL(v)[4 * k + 1] = r[k].loss_unc;
        REAL(v)[4 * k + 2] = r[k].accuracy;
        REAL(v)[4 * k + 3] = r[k].accuracy_unc;
    }
    UNPROTECT(1);
    return v;
}

/* the core's warning (a string) when the epoch's loss is NaN or infinite, else NULL */
SEXP R_pg_fit_loss_diverged(SEXP fp, SEXP per_datapoint, SEXP epoch)
{
    char msg[512];
    int rc = pg_fit_loss_diverged(fit_get(fp), Rf_asLogical(per_datapoint) == 1,
                                  (int64_t)r_num(epoch, "ag_fit: epoch"), msg, sizeof msg);
    if (rc < 0) r_check(-rc);
    return rc ? Rf_ScalarString(Rf_mkCharCE(msg, CE_UTF8)) : R_NilValue;
}

/* batches b0 .. b1 - 1 (0-based) through a compiled step recorded on the plan's batch tensors, in
 * C; the replays' dropout draws come from R's stream (or the run stream) */
SEXP R_pg_fit_run_static(SEXP fp, SEXP val, SEXP b0, SEXP b1, SEXP gp, SEXP out)
{
    pg_fit *f = fit_get(fp);
    pg_graph *g = r_get(gp, R_GRAPH);
    pg_tensor *o = r_get(r_handle(out), R_TENSOR);
    const int64_t lo = (int64_t)r_num(b0, "ag_fit: batch"),
                  hi = (int64_t)r_num(b1, "ag_fit: batch");
    r_draw c = r_draw_enter();
    int64_t n = pg_fit_run_static(f, Rf_asLogical(val) == 1, lo, hi, g, o);
    r_draw_leave(c, n >= 0);
    if (n < 0) r_fail();
    return Rf_ScalarReal((double)n);
}

/* data parallelism: this rank's chunk of every training batch; the epoch's statistics as sums */
SEXP R_pg_fit_shard(SEXP fp, SEXP rank, SEXP world)
{
    r_check(pg_fit_shard(fit_get(fp), (int64_t)r_num(rank, "ag_fit: rank"),
                         (int64_t)r_num(world, "ag_fit: world")));
    return R_NilValue;
}

SEXP R_pg_fit_stats_get(SEXP fp)
{
    pg_fit *f = fit_get(fp);
    const int64_t n = pg_fit_stats_len(f);
    if (n < 0) r_fail();
    SEXP v = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n));
    r_check(pg_fit_stats_export(f, REAL(v), n));
    UNPROTECT(1);
    return v;
}

SEXP R_pg_fit_stats_set(SEXP fp, SEXP buf)
{
    if (TYPEOF(buf) != REALSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_fit: the reduced statistics must be doubles");
    r_check(pg_fit_stats_import(fit_get(fp), REAL(buf), XLENGTH(buf)));
    return R_NilValue;
}

/* ag_accuracy's count in the core: out [classes, n] and y (ids [1, n] or one-hot) as doubles */
SEXP R_pg_accuracy_count(SEXP out, SEXP y)
{
    SEXP od = Rf_getAttrib(out, R_DimSymbol), yd = Rf_getAttrib(y, R_DimSymbol);
    if (TYPEOF(out) != REALSXP || TYPEOF(y) != REALSXP || XLENGTH(od) != 2 || XLENGTH(yd) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "ag_accuracy: outputs and targets must be double matrices");
    const int64_t c = INTEGER(od)[0], n = INTEGER(od)[1], k = INTEGER(yd)[0];
    if ((int64_t)INTEGER(yd)[1] != n || XLENGTH(out) != c * n || XLENGTH(y) != k * n)
        r_stopf(PG_STATUS_ERR_SHAPE,
                "ag_accuracy: outputs and targets disagree in their number of samples");
    int64_t hit = 0;
    r_check(pg_accuracy_count(REAL(out), c, n, REAL(y), k, &hit));
    return Rf_ScalarReal((double)hit);
}

/* validation_data: the plan was made unshuffled; its training part reshuffles per epoch from now */
SEXP R_pg_fit_set_shuffle(SEXP fp, SEXP shuffle)
{
    r_check(pg_fit_set_shuffle(fit_get(fp), Rf_asLogical(shuffle) == 1));
    return R_NilValue;
}

/* ag_dataloader's batch count (the core's rule, pg_batch_count): n / batch_size with drop_last,
 * else ceil(n / batch_size) */
SEXP R_pg_batch_count(SEXP n, SEXP batch_size, SEXP drop_last)
{
    const int64_t c = pg_batch_count("ag_dataloader", (int64_t)r_num(n, "ag_dataloader: n"),
                                     (int64_t)r_num(batch_size, "ag_dataloader: batch_size"),
                                     Rf_asLogical(drop_last) == TRUE);
    if (c < 0) r_fail();
    return Rf_ScalarInteger((int)c);
}
