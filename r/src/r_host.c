/* ag_checkpoint's host node (native/host.c) for R: the core calls back into R during backward()
 * to replay the segment. R code may long-jump (an error, an interrupt, a restart): the jump is
 * caught with R_UnwindProtect, the callback returns a failure so the core restores its state
 * (private tape dropped, backward's scratch freed), and the jump resumes with R_ContinueUnwind
 * from the .Call that started the core (backward() or a nested replay). No core frame is skipped. */
#include <setjmp.h>
#include "r_util.h"

static SEXP token; /* preserved unwind continuation: carries a caught jump to where it resumes */
static int jumped; /* a caught jump waits in token */

/* A pending jump resumes here (does not return when one is pending). */
static void rethrow(void)
{
    if (!jumped) return;
    jumped = 0;
    R_ContinueUnwind(token);
}

static SEXP replay_body(void *seg)
{
    SEXP fun = PROTECT(Rf_findVarInFrame((SEXP)seg, Rf_install("replay")));
    SEXP call = PROTECT(Rf_lang1(fun));
    Rf_eval(call, R_GlobalEnv);
    UNPROTECT(2);
    return R_NilValue;
}

static void replay_clean(void *jb, Rboolean jump)
{
    if (jump) longjmp(*(jmp_buf *)jb, 1); /* back into host_bw, below the core's frames */
}

static int host_bw(void *seg)
{
    jmp_buf jb;
    if (setjmp(jb)) {
        jumped = 1;
        return pg_host_fail(PG_STATUS_ERR_STATE,
                            "ag_checkpoint: the segment failed when replayed in backward()");
    }
    R_UnwindProtect(replay_body, seg, replay_clean, &jb, token);
    return 0;
}

static void host_free(void *seg) { R_ReleaseObject((SEXP)seg); }

/* ag_checkpoint's node: value = fn's result, inputs = a list of the tensor arguments' handles,
 * seg = the segment's environment (fn, args, random state, `replay`), kept until the node goes. */
SEXP R_pg_ckpt_record(SEXP value, SEXP inputs, SEXP seg)
{
    if (!token) {
        token = R_MakeUnwindCont();
        R_PreserveObject(token);
    }
    pg_tensor *v = r_get(r_handle(value), R_TENSOR);
    pg_tensor **in = r_handle_array(inputs, "ag_checkpoint");
    if (TYPEOF(seg) != ENVSXP) Rf_error("ag_checkpoint: internal: segment must be an environment");
    R_PreserveObject(seg); /* released by host_free, also when recording fails */
    pg_tensor *out = pg_host_record(v, in, XLENGTH(inputs), "checkpoint", host_bw, seg, host_free);
    return r_wrap_tensor(out);
}

/* Inside the replay: walk the private tape from the segment's value. */
SEXP R_pg_ckpt_replay(SEXP y)
{
    pg_tensor *t = r_get(r_handle(y), R_TENSOR);
    if (pg_host_replay(t)) {
        rethrow(); /* a nested segment's R error resumes on its way out */
        r_fail();
    }
    return R_NilValue;
}

/* backward() with a pending jump from a replay resumes it; otherwise the core's error. */
void r_host_rethrow(void) { rethrow(); }

/* what (enum r_ckpt_req): stash the tape, give it back, make .Random.seed exist as a draw would
 * (no draw) */
SEXP R_pg_ckpt_tape(SEXP what)
{
    switch (Rf_asInteger(what)) {
    case R_CKPT_STASH: r_check(pg_tape_stash()); break;
    case R_CKPT_UNSTASH: r_check(pg_tape_unstash()); break;
    case R_CKPT_SEED:
        if (Rf_findVarInFrame(R_GlobalEnv, Rf_install(".Random.seed")) == R_UnboundValue) {
            GetRNGstate();
            PutRNGstate();
        }
        break;
    default: Rf_error("bad checkpoint request");
    }
    return R_NilValue;
}

/* pg_ckpt_fail's refusal raised classed: shown NULL (no function), or what fn returned */
SEXP R_pg_ckpt_fail(SEXP shown, SEXP replayed)
{
    r_check(pg_ckpt_fail(Rf_isNull(shown) ? NULL : Rf_translateCharUTF8(STRING_ELT(shown, 0)),
                         Rf_asLogical(replayed) == TRUE));
    return R_NilValue;
}
