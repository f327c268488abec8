/* Scope repair for R's exit paths (interrupts, restarts, callCC, caught conditions unwinding
 * through a scope): the R side reads a depth on entry, registers on.exit before opening, and
 * closes back to that depth here. Every close tolerates being the second one. */
#include "r_util.h"

/* what: 0 tape depth; 1 close tape scopes down to n; 2 stashed tapes; 3 give stashed tapes back
 * down to n; 4 abort a compile recording opened above depth n (nothing when none is open). */
SEXP R_pg_scope(SEXP what, SEXP n)
{
    int k = Rf_asInteger(n);
    switch (Rf_asInteger(what)) {
    case 0: return Rf_ScalarInteger(pg_tape_depth());
    case 1: return Rf_ScalarInteger(pg_tape_end_to(k));
    case 2: return Rf_ScalarInteger(pg_tape_stash_depth());
    case 3: r_check(pg_tape_unstash_to(k)); break;
    case 4:
        if (pg_tape_record_all(-1) && pg_tape_depth() > k) pg_graph_record_abort();
        break;
    default: Rf_error("bad scope request");
    }
    return R_NilValue;
}
