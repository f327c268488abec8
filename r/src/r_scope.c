/* Scope repair for R's exit paths (interrupts, restarts, callCC, caught conditions unwinding
 * through a scope): the R side reads a depth on entry, registers on.exit before opening, and
 * closes back to that depth here. Every close tolerates being the second one. */
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
