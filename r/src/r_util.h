/* R glue for the pyggmlr C core: external pointers, conversions and the error bridge. */
#ifndef R_UTIL_H
#define R_UTIL_H

#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "pg.h"

/* kinds of handle wrapped in an external pointer (the tag says which); every kind is made by
 * r_wrap / r_wrap_keep and read by r_get, and freed by the one finalizer (r_util.c's table) */
enum r_kind {
    R_TENSOR,
    R_GRADMAP,
    R_OPTIM,
    R_EARLY_STOP,
    R_FIT,
    R_CHECKPOINT,
    R_GRAPH,     /* a compiled step (pg_graph) */
    R_RNG,       /* a run stream (pg_rng) */
    R_SESSION,   /* ag_fit's training session (pg_session) */
    R_MODELFILE, /* an open model file (pg_mf) */
    R_FIT_SETUP, /* ag_fit's set-up (pg_fit_setup) */
    R_KIND_COUNT
};

/* requests of the glue's multiplexed entry points (R_pg_tape, R_pg_scope, R_pg_ckpt_tape), and
 * pg_optim_new's kinds and pg_file_kind's results, which the core documents without an enum;
 * R reads all of them by name (R_pg_codes, r_codes.c) */
enum r_tape_req {
    R_TAPE_BEGIN,
    R_TAPE_END,
    R_TAPE_CLEAR,
    R_TAPE_DEPTH,
    R_TAPE_NODES,
    R_TAPE_ENABLED
};
enum r_scope_req {
    R_SCOPE_DEPTH,
    R_SCOPE_END_TO,
    R_SCOPE_STASHED,
    R_SCOPE_UNSTASH_TO,
    R_SCOPE_ABORT
};
/* R_pg_scoped's scopes (r_scope.c): opened, the expression evaluated, closed in C */
enum r_scoped_req {
    R_SCOPED_TAPE,
    R_SCOPED_NO_GRAD,
    R_SCOPED_STREAM,
    R_SCOPED_STASH,
    R_SCOPED_DTYPE,
    R_SCOPED_RECORD
};
enum r_ckpt_req { R_CKPT_STASH, R_CKPT_UNSTASH, R_CKPT_SEED };

/* the one creator: wraps a NEW reference (ownership passes to R); NULL p -> R error with the
 * core's message */
SEXP r_wrap(void *p, int kind);
/* r_wrap, with `keep` held by the pointer (its prot slot) for as long as the handle lives: a
 * compiled graph keeps its optimizer's handle alive this way */
SEXP r_wrap_keep(void *p, int kind, SEXP keep);
/* the one getter: checks type and tag (pyggmlr_argument_error); a cleared (e.g. unserialized)
 * pointer is a pyggmlr_state_error */
void *r_get(SEXP x, int kind);
/* free a handle's object now (its finalizer's work; the handle reads as dead after); a NULL or
 * already freed handle is left alone */
void r_free_now(SEXP x, int kind);
/* raise the core's last error as an R error (long-jumps) */
void r_fail(void) __attribute__((noreturn));
/* r_fail with "; <hint(ctx)>" appended when hint gives one (read once the core's error is kept) */
void r_fail_hint(const char *(*hint)(void *), void *ctx) __attribute__((noreturn));
/* a glue check's error, classed by its core status as the core's are (r_guard.c) */
void r_stopf(int status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* an R double as int64_t: NaN or past int64's range gives INT64_MIN (what x86's conversion
 * gives; C leaves such a cast undefined), which every core check refuses as out of range */
static inline int64_t r_i64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
static inline void r_check(int rc)
{
    if (rc != 0) r_fail();
}
/* r_host.c: resume an R jump caught in an ag_checkpoint replay, if one is pending */
void r_host_rethrow(void);

/* A tensor for an operand: an ag_tensor handle (borrowed) or R numbers (a temporary tensor of
 * `dtype`, *tmp set so the caller releases it). Never long-jumps: returns NULL with the core's
 * error set on bad input. */
pg_tensor *r_operand(SEXP x, int dtype, const char *op, const char *arg, int *tmp);
/* the dtype of x when it is a live tensor handle or ag_tensor (what R numbers beside it take),
 * else -1; never raises */
int r_operand_dtype(SEXP x);
/* a new tensor from R numbers (vector -> [n,1], matrix as is) */
pg_tensor *r_new_tensor(SEXP x, int dtype, const char *op);
/* values of a tensor as an R double matrix */
SEXP r_matrix(pg_tensor *t);
double r_num(SEXP x, const char *what);
/* borrowed tensor pointers of an R list of tensor handles; R_alloc'd (freed by R at .Call exit) */
pg_tensor **r_handle_array(SEXP lst, const char *op);
/* an unnamed list of the n values in items (each kept protected by the caller) */
SEXP r_list(int n, const SEXP *items);
/* a list of n NULLs named names[i], for the caller to fill */
SEXP r_named_list(const char *const *names, int n);
/* an R double vector of the n counts in v (exact up to 2^53); named: names[i] on v[i] */
SEXP r_counts(const int64_t *v, R_xlen_t n);
SEXP r_named_counts(const int64_t *v, const char *const *names, int n);
/* v's dims as the core reads them (its dim attribute, else its length: one dim), R_alloc'd; *nd
 * their count. A dim the core cannot hold (NA, negative) reads -1. */
int64_t *r_dims(SEXP v, int *nd);
/* a character vector of a core name table: name(0), name(1), ... up to its NULL */
SEXP r_name_table(const char *(*name)(int));
/* r_memory.c: the names of enum pg_mem_category, in its order */
extern const char *const r_mem_categories[PG_MEM_CATEGORY_COUNT];

/* ag_tensor environments, built here rather than in R (R-side construction was most of a small
 * model's training step): one binding, `.ptr`; the fields are served by r_tensor_field.
 * r_tensor_env: the environment around a tensor handle (an environment passes through); r_wrap_tensor: r_wrap + r_tensor_env of a NEW
 * reference; r_handle: an ag_tensor environment's `.ptr`, anything else unchanged. */
SEXP r_tensor_env(SEXP ptr);
SEXP r_wrap_tensor(pg_tensor *t);
SEXP r_handle(SEXP x);
/* `$`/`[[` of an ag_tensor; r_tensor_field_is_computed: 1 data, 2 grad, 3 requires_grad, else 0 */
SEXP r_tensor_field(SEXP x, SEXP name);
int r_tensor_field_is_computed(SEXP name);
/* the core map of backward()'s environment (or of a map handle); NULL for NULL; R error else */
pg_gradmap *r_map_arg(SEXP grads, const char *where);
/* backward()'s gradient environment (class ag_grads): `.map` plus one active binding per leaf
 * tensor id; op results' gradients are read through `[[.ag_grads` */
SEXP r_grad_env(SEXP map);
/* r_rng.c: core calls that draw from the current stream themselves (the dropout op, a compiled
 * graph's replay) run between r_draw_enter and r_draw_leave: R's .Random.seed is loaded into the
 * stream made current (or a run stream is used as it is) and written back after; ok == 0: the
 * call failed before drawing. r_draw_enter may raise an R error (nothing to free yet). */
typedef struct {
    pg_rng *r;
    int mode;
    pg_rng *prev;
} r_draw;
r_draw r_draw_enter(void);
void r_draw_leave(r_draw c, int ok);

/* r_guard.c: raise msg as a classed R error for a core status (pyggmlr_<kind>_error,
 * pyggmlr_error, simpleError); a matrix's dims checked against its length (0, or -1 with the
 * core's error set); a full collection when the core's live bytes outgrew the limit */
void r_stop_status(int status, const char *msg) __attribute__((noreturn));
int r_matrix_dims(SEXP x, const char *op, const char *arg, int64_t *nr, int64_t *nc);
void r_gc_pressure(void);

/* r_codec.c: list(status, message, errno) of the core's last error (then cleared); a codec
 * file's list(tensors, meta) as R_pg_st_read gives it (close: f is closed there) */
SEXP r_status_list(int rc);
SEXP r_st_contents(pg_st_file *f, int close);
void r_st_tensor(SEXP v, int f64, const char *name, pg_st_tensor *t);
/* r_optim_state.c: x's numbers as doubles (x itself, or an R_alloc'd copy of integers, NA as
 * NaN); the core's hyper-parameter comparison as R's list(message, name, entry (1-based, 0: the
 * default), default, is_flag[, state = the state's values when given]), NULL when none differ */
const double *r_doubles(SEXP x);
/* list(value, text) (optim_state.R's .st_val) as the core's host value (strings R-owned) */
void r_host_value(SEXP pair, pg_host_value *v);
SEXP r_hyper_diff(const pg_optim_hyper_diff *d, SEXP state);
/* r_modelfile_model.c: list(param names, params, buffer names, buffers, optimizer or NULL) as
 * the core's model description (R_alloc'd) */
pg_mf_model r_mf_model(SEXP m);
/* r_modelfile_args.c: "f32" / "f64" as the core's dtype code; NULL (nothing asked): -1 */
int r_dtype_of(SEXP x);

#endif
