/* .Call glue for hostile input (issue 19): classed errors by core status, matrices whose dim
 * disagrees with their length, R's collector made to see the core's bytes, what a path is, and
 * bounds on counts. */
#include "r_util.h"
#include <R_ext/Memory.h>

/* ---- classed errors: c("pyggmlr_<kind>_error", "pyggmlr_error", "simpleError", "error",
 * "condition"), the kind from the core status (as Python's typed exceptions), call NULL ---- */
static const char *status_class[] = {[PG_STATUS_ERR_SHAPE] = "pyggmlr_shape_error",
                                     [PG_STATUS_ERR_DTYPE] = "pyggmlr_dtype_error",
                                     [PG_STATUS_ERR_VALUE] = "pyggmlr_value_error",
                                     [PG_STATUS_ERR_NOMEM] = "pyggmlr_memory_error",
                                     [PG_STATUS_ERR_STATE] = "pyggmlr_state_error",
                                     [PG_STATUS_ERR_ARG] = "pyggmlr_argument_error",
                                     [PG_STATUS_ERR_IO] = "pyggmlr_io_error",
                                     [PG_STATUS_ERR_MODIFIED] = "pyggmlr_modified_error"};

void r_stop_status(int status, const char *msg)
{
    const int n_class = (int)(sizeof status_class / sizeof status_class[0]);
    const char *k = status > PG_STATUS_OK && status < n_class ? status_class[status] : NULL;
    SEXP cond = PROTECT(Rf_allocVector(VECSXP, 2));
    SET_VECTOR_ELT(cond, 0, Rf_mkString(msg));
    SEXP nm = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_STRING_ELT(nm, 0, Rf_mkChar("message"));
    SET_STRING_ELT(nm, 1, Rf_mkChar("call"));
    Rf_setAttrib(cond, R_NamesSymbol, nm);
    int n = k ? 5 : 4, i = 0;
    SEXP cl = PROTECT(Rf_allocVector(STRSXP, n));
    if (k) SET_STRING_ELT(cl, i++, Rf_mkChar(k));
    const char *rest[] = {"pyggmlr_error", "simpleError", "error", "condition"};
    for (int j = 0; j < 4; j++) SET_STRING_ELT(cl, i++, Rf_mkChar(rest[j]));
    Rf_setAttrib(cond, R_ClassSymbol, cl);
    SEXP call = PROTECT(Rf_lang2(Rf_install("stop"), cond));
    Rf_eval(call, R_BaseEnv);
    UNPROTECT(4);
    Rf_error("%s", msg); /* not reached: stop() does not return */
}

/* ---- dims: a matrix made by unserialize() of a tampered payload (or structure() hacks) may
 * carry a dim that disagrees with its length; reading nrow * ncol values would run past the
 * end. 0 with *nr, *nc set, or -1 with the core's error set (PG_STATUS_ERR_SHAPE, naming op/arg). */
int r_matrix_dims(SEXP x, const char *op, const char *arg, int64_t *nr, int64_t *nc)
{
    R_xlen_t len = XLENGTH(x);
    *nr = (int64_t)len;
    *nc = 1;
    SEXP dim = Rf_getAttrib(x, R_DimSymbol);
    if (Rf_isNull(dim)) return 0;
    R_xlen_t nd = XLENGTH(dim);
    if (TYPEOF(dim) != INTSXP || nd < 1) {
        pg_fail(PG_STATUS_ERR_SHAPE,
                "%s: argument '%s' has a corrupt dim attribute (%s of length %lld; a damaged "
                "saveRDS/serialize object?)",
                op, arg, Rf_type2char(TYPEOF(dim)), (long long)nd);
        return -1;
    }
    if (nd > 2) { /* the shape named as Python names it (issue 29): "got a 2x1x4x4 array" */
        char shp[96] = "";
        size_t at = 0;
        for (R_xlen_t i = 0; i < nd && at < sizeof shp - 16; i++)
            at += (size_t)snprintf(shp + at, sizeof shp - at, i ? "x%d" : "%d", INTEGER(dim)[i]);
        pg_fail(PG_STATUS_ERR_SHAPE,
                "%s: tensors are 2-D matrices [features, batch]; got a %s array", op, shp);
        return -1;
    }
    const int *d = INTEGER(dim);
    double prod = 1;
    for (R_xlen_t i = 0; i < nd; i++) {
        if (d[i] == NA_INTEGER || d[i] < 0) {
            pg_fail(PG_STATUS_ERR_SHAPE,
                    "%s: argument '%s' has a corrupt dim attribute (entry %d is %s; a damaged "
                    "saveRDS/serialize object?)",
                    op, arg, (int)i + 1, d[i] == NA_INTEGER ? "NA" : "negative");
            return -1;
        }
        prod *= (double)d[i];
    }
    if (prod != (double)len) {
        char buf[64];
        if (nd == 2) snprintf(buf, sizeof buf, "c(%d, %d)", d[0], d[1]);
        else snprintf(buf, sizeof buf, "%d", d[0]);
        pg_fail(PG_STATUS_ERR_SHAPE,
                "%s: argument '%s' has dim %s but %lld values: length != prod(dim) (a damaged "
                "saveRDS/serialize object?)",
                op, arg, buf, (long long)len);
        return -1;
    }
    if (nd == 2) {
        *nr = d[0];
        *nc = d[1];
    }
    return 0;
}

/* R-level check for data arguments handled in R before they reach the core (ag_dataloader,
 * ag_fit, ...): R's own `[` trusts dim too. NULL, or a classed error. */
SEXP R_pg_check_dims(SEXP x, SEXP op, SEXP arg)
{
    if (!Rf_isVectorAtomic(x) && !Rf_isVectorList(x)) return R_NilValue;
    int64_t nr, nc;
    const char *o = Rf_isString(op) && XLENGTH(op) == 1 ? CHAR(STRING_ELT(op, 0)) : "pyggmlr";
    const char *a = Rf_isString(arg) && XLENGTH(arg) == 1 ? CHAR(STRING_ELT(arg, 0)) : "x";
    if (r_matrix_dims(x, o, a, &nr, &nc)) {
        /* arrays of more dims are the callers' business (they refuse or reshape them); only the
         * length mismatch is checked here */
        SEXP dim = Rf_getAttrib(x, R_DimSymbol);
        if (TYPEOF(dim) == INTSXP && XLENGTH(dim) > 2) {
            double prod = 1;
            int ok = 1;
            for (R_xlen_t i = 0; i < XLENGTH(dim); i++) {
                if (INTEGER(dim)[i] == NA_INTEGER || INTEGER(dim)[i] < 0) ok = 0;
                prod *= (double)INTEGER(dim)[i];
            }
            if (ok && prod == (double)XLENGTH(x)) {
                pg_clear_error();
                return R_NilValue;
            }
            pg_fail(PG_STATUS_ERR_SHAPE,
                    "%s: argument '%s' has a dim attribute that disagrees with its %lld values: "
                    "length != prod(dim) (a damaged saveRDS/serialize object?)",
                    o, a, (long long)XLENGTH(x));
        }
        r_fail();
    }
    return R_NilValue;
}

/* ---- R's collector and the core's bytes ----
 * R frees a tensor only when its collector runs, which it does on R's own allocations; a loop
 * making tensors outside any tape (h <- ag_relu(x) with a large x) allocates little R memory
 * but much core memory, and grew without bound. Every new tensor handle checks the core's live
 * bytes: past a limit, a full collection runs (finalizers release unreachable tensors), and the
 * limit becomes what is still live plus max(room, that) (doubling: the cost stays amortised,
 * a collection per `room` bytes at least). */
static int64_t gc_room = (int64_t)256 << 20, gc_limit = -1;

static int64_t core_live(void)
{
    pg_memory_counts c = {{0}};
    pg_memory_stats(&c);
    return c.total;
}

void r_gc_pressure(void)
{
    int64_t now = core_live();
    if (gc_limit < 0) gc_limit = now + gc_room;
    if (now <= gc_limit) return;
    R_gc();
    int64_t after = core_live();
    gc_limit = after + (after > gc_room ? after : gc_room);
}

/* tests and tuning: set the room (bytes, >= 1 MiB), return the previous one; NULL reads it */
SEXP R_pg_gc_room(SEXP bytes)
{
    double prev = (double)gc_room;
    if (!Rf_isNull(bytes)) {
        double b = r_num(bytes, "gc room");
        if (!(b >= 1048576.0 && b <= 9e18))
            r_stopf(PG_STATUS_ERR_VALUE, "gc room must be between 1 MiB and 9e18 bytes");
        gc_room = (int64_t)b;
        gc_limit = core_live() + gc_room;
    }
    return Rf_ScalarReal(prev);
}

/* ---- paths and counts ---- */
SEXP R_pg_file_kind(SEXP path)
{
    if (!Rf_isString(path) || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
        return Rf_ScalarInteger(-1);
    return Rf_ScalarInteger(pg_file_kind(R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)))));
}

SEXP R_pg_file_is_rds(SEXP path)
{
    if (!Rf_isString(path) || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
        return Rf_ScalarLogical(0);
    return Rf_ScalarLogical(
        pg_file_is_rds(R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)))));
}

/* a layer of n values (R's double copy and the tensor: 16 bytes each) must fit in the memory
 * available: pyggmlr_memory_error "<fn>: out of memory <what> (... GiB needed, ...)" */
SEXP R_pg_check_alloc(SEXP fn, SEXP what, SEXP n)
{
    r_check(pg_check_alloc(CHAR(STRING_ELT(fn, 0)), CHAR(STRING_ELT(what, 0)), Rf_asReal(n), 16));
    return R_NilValue;
}

/* R counts positions from 1: the core's messages say "at position 1" for the first entry */
SEXP R_pg_set_index_base(SEXP base)
{
    return Rf_ScalarInteger(pg_set_index_base(Rf_asInteger(base)));
}
