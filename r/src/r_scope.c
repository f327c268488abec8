/* Scope repair for R's exit paths (interrupts, restarts, callCC, caught conditions unwinding
 * through a scope): R_pg_scoped opens a scope, evaluates the user's expression and closes it in
 * C; R_pg_scope serves the scopes still closed from R (a depth read on entry, on.exit registered
 * before opening, closed back to that depth). Every close tolerates being the second one. */
#include "r_util.h"

/* what (enum r_scope_req): the tape depth; close tape scopes down to n; the stashed tapes; give
 * stashed tapes back down to n; abort a compile recording opened above depth n (if one is). */
SEXP R_pg_scope(SEXP what, SEXP n)
{
    int k = Rf_asInteger(n);
    switch (Rf_asInteger(what)) {
    case R_SCOPE_DEPTH: return Rf_ScalarInteger(pg_tape_depth());
    case R_SCOPE_END_TO: return Rf_ScalarInteger(pg_tape_end_to(k));
    case R_SCOPE_STASHED: return Rf_ScalarInteger(pg_tape_stash_depth());
    case R_SCOPE_UNSTASH_TO: r_check(pg_tape_unstash_to(k)); break;
    case R_SCOPE_ABORT:
        if (pg_tape_record_all(-1) && pg_tape_depth() > k) pg_graph_record_abort();
        break;
    default: Rf_error("bad scope request");
    }
    return R_NilValue;
}

/* ---- scopes whose close R cannot interrupt (issue 28) ----
 * with_grad_tape, ag_no_grad, a stream switch, ag_checkpoint's stashed tape and ag_compile's
 * recording open here, evaluate the user's expression under R_UnwindProtect and close in C:
 * an on.exit handler is R code, and an interrupt arriving while it runs abandons it (the tape
 * stayed open in about one Ctrl-C of ten). The cleanup runs on every exit, normal or a jump
 * (error, interrupt, restart, callCC), and evaluates no R code. */
struct scoped {
    int what;  /* enum r_scoped_req */
    int depth; /* tape depth or stash depth seen on entry */
    int prev;  /* tape recording flag or default dtype before the switch */
    SEXP stream, expr, env;
};

extern SEXP R_pg_tape(SEXP);
extern SEXP R_pg_rng_use(SEXP);

static SEXP scoped_eval(void *data)
{
    struct scoped *s = data;
    return Rf_eval(s->expr, s->env);
}

static void scoped_close(void *data, Rboolean jump)
{
    struct scoped *s = data;
    switch (s->what) {
    case R_SCOPED_TAPE: pg_tape_end_to(s->depth); break;
    case R_SCOPED_NO_GRAD: pg_tape_set_enabled(s->prev); break;
    case R_SCOPED_STREAM: R_pg_rng_use(s->stream); break;
    case R_SCOPED_STASH: pg_tape_unstash_to(s->depth); break;
    case R_SCOPED_DTYPE: pg_set_default_dtype(s->prev); break;
    case R_SCOPED_RECORD: /* a normal return leaves the recording for R_pg_graph_record_end */
        if (jump && pg_tape_record_all(-1) && pg_tape_depth() > s->depth) pg_graph_record_abort();
        break;
    default: break;
    }
}

/* Evaluate expr in env inside the scope `what` opens (arg: the stream of R_SCOPED_STREAM, the
 * dtype code of R_SCOPED_DTYPE); the value of expr, the scope closed. */
SEXP R_pg_scoped(SEXP what, SEXP arg, SEXP expr, SEXP env)
{
    struct scoped s = {Rf_asInteger(what), 0, 0, R_NilValue, expr, env};
    if (!Rf_isEnvironment(env)) Rf_error("R_pg_scoped: env must be an environment");
    SEXP cont = PROTECT(R_MakeUnwindCont());
    switch (s.what) { /* open: a failure here opened nothing */
    case R_SCOPED_TAPE:
        s.depth = pg_tape_depth();
        R_pg_tape(PROTECT(Rf_ScalarInteger(R_TAPE_BEGIN)));
        UNPROTECT(1);
        break;
    case R_SCOPED_NO_GRAD: s.prev = pg_tape_set_enabled(0); break;
    case R_SCOPED_STREAM:
        if (Rf_isNull(arg)) s.what = -1;            /* NULL: the current stream stays */
        else s.stream = PROTECT(R_pg_rng_use(arg)); /* the previous one, kept until put back */
        break;
    case R_SCOPED_STASH:
        s.depth = pg_tape_stash_depth();
        r_check(pg_tape_stash());
        break;
    case R_SCOPED_DTYPE:
        s.prev = pg_default_dtype();
        if (pg_set_default_dtype(Rf_asInteger(arg)) < 0) r_fail();
        break;
    case R_SCOPED_RECORD:
        s.depth = pg_tape_depth();
        r_check(pg_graph_record_begin());
        break;
    default: Rf_error("bad scoped request");
    }
    SEXP out = R_UnwindProtect(scoped_eval, &s, scoped_close, &s, cont);
    UNPROTECT(s.what == R_SCOPED_STREAM ? 2 : 1);
    return out;
}
