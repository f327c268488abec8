/* .Call glue for the tape stash (ag_estimate_training_memory(model =) measures on a private
 * tape and gives the caller's back): on TRUE sets this thread's tape aside, FALSE restores it. */
#include "r_util.h"

SEXP R_pg_tape_stash(SEXP on)
{
    r_check(Rf_asLogical(on) == TRUE ? pg_tape_stash() : pg_tape_unstash());
    return R_NilValue;
}
