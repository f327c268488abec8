/* .Call glue: ag_fit's training session (the core's fit_session.c). The session's calls that may
 * draw (an epoch's shuffle, a compiled step's dropout) run between r_draw_enter and r_draw_leave;
 * an eager step of the package's optimizer runs here, calling the model and the loss (R code)
 * from C, so R's loop sees only the events that need R. */
#include <math.h>
#include <string.h>
#include "r_util.h"

extern SEXP R_pg_tape(SEXP);

/* the session's handle keeps (plan, compiled steps...) alive in its prot slot */
static pg_session *sess_get(SEXP x) { return r_get(x, R_SESSION); }

/* setup: the run's (the core reads its static mode and loss rule; the fallback notice is said
 * in R's words) */
SEXP R_pg_session_new(SEXP plan, SEXP setup, SEXP nepoch, SEXP first_epoch, SEXP batch_events)
{
    pg_session_params p = pg_session_default_params();
    p.setup = r_get(setup, R_FIT_SETUP), p.r_spelling = 1;
    p.nepoch = (int64_t)r_num(nepoch, "ag_fit: nepoch");
    p.first_epoch = (int64_t)r_num(first_epoch, "ag_fit: first epoch");
    p.batch_events = Rf_asLogical(batch_events) == 1;
    pg_session *s = pg_session_new(r_get(plan, R_FIT), &p);
    SEXP out = r_wrap_keep(s, R_SESSION, PROTECT(Rf_cons(plan, R_NilValue)));
    UNPROTECT(1);
    return out;
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
 * gather batch b, call fwd(x) and lossfn(out, y) (R code) inside a tape scope that C closes on
 * every exit (R_UnwindProtect, as with_grad_tape), then pg_fit_train_step: the R loop's results,
 * bit for bit, without R's per-batch loop. */
struct eager {
    SEXP fwd, lossfn, x, y; /* lossfn: an R function, or a built-in loss's code (integer) */
    pg_tensor *w;           /* the batch's weight row (sample_weight / class_weight) or NULL */
    int depth;
    pg_tensor *loss; /* a built-in loss, made in C (no R wrapper per step) */
};

static SEXP eager_eval(void *data)
{
    struct eager *e = data;
    SEXP c1 = PROTECT(Rf_lang2(e->fwd, e->x));
    SEXP out = PROTECT(Rf_eval(c1, R_GlobalEnv));
    if (TYPEOF(r_handle(out)) != EXTPTRSXP) /* a number would reach the loss as a constant */
        r_stopf(PG_STATUS_ERR_ARG, "ag_fit: model forward returned a %s, not a tensor",
                class_name(out));
    SEXP c2 = PROTECT(TYPEOF(e->lossfn) == INTSXP ? R_NilValue : Rf_lang3(e->lossfn, out, e->y));
    SEXP lv = R_NilValue;
    if (TYPEOF(e->lossfn) == INTSXP) { /* a built-in loss: the core's op on the tape */
        pg_tensor *yt = Rf_isNull(e->y) ? NULL : r_get(r_handle(e->y), R_TENSOR);
        e->loss =
            pg_fit_loss_weighted(INTEGER(e->lossfn)[0], r_get(r_handle(out), R_TENSOR), yt, e->w);
        if (!e->loss) r_fail();
    } else {
        lv = Rf_eval(c2, R_GlobalEnv);
    }
    PROTECT(lv);
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

static void eager_step(pg_fit *f, int64_t b, SEXP fwd, SEXP lossfn, pg_optim *o)
{
    pg_tensor *xb = NULL, *yb = NULL;
    if (pg_fit_batch(f, 0, b, &xb, &yb) < 0) r_fail();
    SEXP x = PROTECT(r_wrap_tensor(xb));
    SEXP y = yb ? r_wrap_tensor(yb) : R_NilValue;
    PROTECT(y);
    pg_tensor *wb = pg_fit_batch_weights(f); /* borrowed below: the plan keeps it alive */
    pg_tensor_release(wb);
    struct eager e = {fwd, lossfn, x, y, wb, pg_tape_depth(), NULL};
    SEXP cont = PROTECT(R_MakeUnwindCont());
    R_pg_tape(PROTECT(Rf_ScalarInteger(R_TAPE_BEGIN)));
    UNPROTECT(1);
    SEXP res = PROTECT(R_UnwindProtect(eager_eval, &e, eager_close, &e, cont));
    SEXP out = VECTOR_ELT(res, 0), lv = VECTOR_ELT(res, 1), lh = r_handle(lv);
    if (!e.loss && TYPEOF(lh) != EXTPTRSXP)
        r_check(pg_fit_kind_fail(PG_FIT_KIND_LOSS_VALUE, class_name(lv), 0, 1));
    double v;
    pg_tensor *lt = e.loss ? e.loss : r_get(lh, R_TENSOR);
    const int rc = pg_fit_train_step(f, lt, r_get(r_handle(out), R_TENSOR), o, &v);
    pg_tensor_release(e.loss);
    if (rc) {
        r_host_rethrow(); /* an R error in an ag_checkpoint replay goes on unchanged */
        r_fail();
    }
    UNPROTECT(4);
}

/* The next event by its core name ("epoch_begin", ...: R switches on it). With fwd, lossfn and opt (an optimizer of
 * the package, eager), training batches are answered here and never returned. */
SEXP R_pg_session_next(SEXP sp, SEXP fwd, SEXP lossfn, SEXP opt)
{
    pg_session *s = sess_get(sp);
    pg_fit *f = r_get(CAR(R_ExternalPtrProtected(sp)), R_FIT);
    pg_optim *o = Rf_isNull(fwd) ? NULL : r_get(opt, R_OPTIM);
    int ev = 0, drawing = 1;
    for (;;) {
        int rc;
        if (drawing) {
            r_draw c = r_draw_enter();
            rc = pg_session_next(s, &ev);
            r_draw_leave(c, rc == 0);
        } else {
            rc = pg_session_next(s, &ev);
        }
        if (rc) r_fail();
        if (ev != PG_SESSION_TRAIN_BATCH || !o) break;
        pg_session_pos at;
        r_check(pg_session_where(s, &at));
        eager_step(f, at.batch, fwd, lossfn, o);
        drawing = 0; /* after an eager batch the next event draws nothing (no shuffle, no replay) */
    }
    return Rf_mkString(pg_session_event_name(ev));
}

/* c(epoch, batch (0-based), step, stopped_epoch, loss, other (the probe's other batch)) */
SEXP R_pg_session_where(SEXP sp)
{
    pg_session_pos at;
    r_check(pg_session_where(sess_get(sp), &at));
    SEXP v = PROTECT(Rf_allocVector(REALSXP, 6));
    double *d = REAL(v);
    d[0] = (double)at.epoch, d[1] = (double)at.batch, d[2] = (double)at.step;
    d[3] = (double)at.stopped_epoch, d[4] = at.loss, d[5] = (double)at.other;
    UNPROTECT(1);
    return v;
}

/* list(x, y, w) of the event's batch as ag_tensors (the plan's reused tensors); y NULL without
 * targets, w the training batch's weight row of a weighted run, else NULL */
SEXP R_pg_session_batch(SEXP sp)
{
    pg_tensor *t[3];
    if (pg_session_batch(sess_get(sp), &t[0], &t[1], &t[2]) < 0) r_fail();
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
    for (int i = 0; i < 3; i++)
        if (t[i]) SET_VECTOR_ELT(out, i, r_wrap_tensor(t[i]));
    UNPROTECT(1);
    return out;
}

SEXP R_pg_session_set_lr(SEXP sp, SEXP lr)
{
    r_check(pg_session_set_lr(sess_get(sp), Rf_length(lr) == 1 ? Rf_asReal(lr) : NAN));
    return R_NilValue;
}

/* a compiled step (its graph handle and output tensor) for the session; both kept alive by it */
SEXP R_pg_session_set_static(SEXP sp, SEXP val, SEXP width, SEXP gp, SEXP out)
{
    r_check(pg_session_set_static(sess_get(sp), Rf_asLogical(val) == 1,
                                  (int64_t)r_num(width, "ag_fit: width"), r_get(gp, R_GRAPH),
                                  r_get(r_handle(out), R_TENSOR)));
    SEXP keep = R_ExternalPtrProtected(sp);
    SETCDR(keep, PROTECT(Rf_cons(gp, PROTECT(Rf_cons(out, CDR(keep))))));
    UNPROTECT(2);
    return R_NilValue;
}

/* the epoch's logs as ag_fit's list (epoch, then the session's columns: lr, time_train, loss ...
 * time_val, the metrics), with the divergence warning (or NULL) as attribute "diverged" */
SEXP R_pg_session_logs(SEXP sp)
{
    pg_session *s = sess_get(sp);
    const int64_t n = pg_session_log_count(s);
    double *v = (double *)R_alloc((size_t)(n ? n : 1), sizeof *v);
    const char **names = (const char **)R_alloc((size_t)n + 1, sizeof *names);
    char msg[512];
    pg_session_pos at;
    const int rc = pg_session_epoch_logs(s, v, n, msg, sizeof msg);
    if (rc < 0) r_fail();
    r_check(pg_session_where(s, &at));
    names[0] = "epoch";
    for (int64_t i = 0; i < n; i++) names[i + 1] = pg_session_log_name(s, i);
    SEXP out = PROTECT(r_named_list(names, (int)n + 1));
    SET_VECTOR_ELT(out, 0, Rf_ScalarInteger((int)at.epoch));
    for (int64_t i = 0; i < n; i++) SET_VECTOR_ELT(out, i + 1, Rf_ScalarReal(v[i]));
    if (rc) Rf_setAttrib(out, Rf_install("diverged"), Rf_mkString(msg));
    UNPROTECT(1);
    return out;
}

/* the probe's losses c(eager, replay) for the session's verdict */
SEXP R_pg_session_probe(SEXP sp, SEXP losses)
{
    if (TYPEOF(losses) != REALSXP || XLENGTH(losses) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "ag_fit: the probe gives two losses");
    r_check(pg_session_probe(sess_get(sp), REAL(losses)[0], REAL(losses)[1]));
    return R_NilValue;
}

/* a compiled step's recording failed with text why: TRUE when R raises that error */
SEXP R_pg_session_static_fail(SEXP sp, SEXP why)
{
    const int rc = pg_session_static_fail(sess_get(sp), Rf_translateCharUTF8(STRING_ELT(why, 0)));
    if (rc < 0) r_fail();
    return Rf_ScalarLogical(rc == 1);
}

/* the fallback notice (static = NULL ran eagerly), the core's text */
SEXP R_pg_session_notice(SEXP sp)
{
    char buf[1024];
    if (pg_session_notice(sess_get(sp), buf, sizeof buf) < 0) r_fail();
    return Rf_mkString(buf);
}

SEXP R_pg_session_stop(SEXP sp)
{
    r_check(pg_session_stop(sess_get(sp)));
    return R_NilValue;
}
