/* pyggmlr C core: public API.
 *
 * This header is fed verbatim to cffi's cdef(), so it must stay "cdef-clean": no macros, no
 * #include, no include guard. C code includes it through pg.h, which brings <stdint.h> first.
 *
 * Conventions
 *  - Tensors are column-major: ne[0] = rows (features), ne[1] = columns (batch), the layout of
 *    R matrices and ggml. ne[2] = ne[3] = 1 for now (the shape type leaves room for 4-D).
 *  - Every function that can fail returns a status (0 = ok) or NULL; the reason is in
 *    pg_last_error() / pg_last_status() (per thread). Nothing here aborts, exits or prints.
 *  - A pg_tensor* returned by an op or constructor is a NEW reference owned by the caller, who
 *    drops it with pg_tensor_release(). Pointers documented as "borrowed" are not.
 */

typedef struct pg_tensor pg_tensor;
typedef struct pg_gradmap pg_gradmap;
typedef struct pg_optim pg_optim;

enum pg_dtype {
    PG_DTYPE_F32 = 0,
    PG_DTYPE_F64 = 1,
    PG_DTYPE_I32 = 2,
    PG_DTYPE_I64 = 3,
    PG_DTYPE_U8 = 4,
    PG_DTYPE_COUNT
};

enum pg_status {
    PG_STATUS_OK = 0,
    PG_STATUS_ERR_SHAPE = 1,    /* shapes do not fit the op */
    PG_STATUS_ERR_DTYPE = 2,    /* dtype not allowed or operands disagree */
    PG_STATUS_ERR_VALUE = 3,    /* bad argument value (index out of range, negative size, ...) */
    PG_STATUS_ERR_NOMEM = 4,    /* allocation failed */
    PG_STATUS_ERR_STATE = 5,    /* call not valid now (dead handle, tape misuse, ...) */
    PG_STATUS_ERR_ARG = 6,      /* NULL or foreign pointer */
    PG_STATUS_ERR_IO = 7,       /* a file could not be opened, read or written (codec) */
    PG_STATUS_ERR_MODIFIED = 8, /* backward(): a needed tensor was overwritten after recording */
    PG_STATUS_COUNT
};

/* memory categories for accounting (pg_memory_stats) */
enum pg_mem_category {
    PG_MEM_CATEGORY_PARAM = 0, /* leaf tensors that require grad (weights) */
    PG_MEM_CATEGORY_GRAD = 1,  /* .grad of leaves and gradient maps */
    PG_MEM_CATEGORY_OPTIM = 2, /* optimizer state (moments, velocity, accumulators) */
    PG_MEM_CATEGORY_SAVED = 3, /* buffers ops keep only for backward (masks, probabilities) */
    PG_MEM_CATEGORY_OTHER = 4, /* everything else: data, activations */
    PG_MEM_CATEGORY_COUNT
};

/* unary op codes for pg_unary */
enum pg_unary_op {
    PG_UNARY_OP_RELU = 0,
    PG_UNARY_OP_SIGMOID = 1,
    PG_UNARY_OP_TANH = 2,
    PG_UNARY_OP_GELU = 3,
    PG_UNARY_OP_LOG = 4,
    PG_UNARY_OP_EXP = 5,
    PG_UNARY_OP_SOFTMAX = 6,
    PG_UNARY_OP_NEG = 7,
    PG_UNARY_OP_COUNT
};

/* optimizer kinds for pg_optim_new */
enum pg_optim_kind { PG_OPTIM_KIND_SGD = 0, PG_OPTIM_KIND_ADAM = 1, PG_OPTIM_KIND_COUNT };

/* ---- errors and build info ---- */
const char *pg_last_error(void);
int pg_last_status(void);
/* the system's errno behind the last PG_STATUS_ERR_IO (ENOENT, EACCES, ENOSPC, ...), else 0 */
int pg_last_errno(void);
void pg_clear_error(void);
const char *pg_version(void);

/* ---- GEMM backend ----
 * sgemm/dgemm: cblas_sgemm/cblas_dgemm-compatible function pointers (may be NULL: built-in
 * blocked kernel). set_threads: void (*)(int), may be NULL. name is copied (for reports). */
int pg_set_blas(void *sgemm, void *dgemm, void *set_threads, const char *name);
const char *pg_blas_name(void);
int pg_set_threads(int n);
int pg_get_threads(void);

/* ---- global defaults ---- */
int pg_default_dtype(void);
int pg_set_default_dtype(int dtype);

/* ---- tensors ---- */
/* New [nrow x ncol] tensor of `dtype` filled from `src` (NULL: zeros). src holds elements of
 * src_dtype; element (i, j) is read at src[i*rstride + j*cstride] (strides in elements), so any
 * memory order (C, Fortran, non-contiguous) is copied in one pass. */
pg_tensor *pg_tensor_new(int dtype, int64_t nrow, int64_t ncol, const void *src, int src_dtype,
                         int64_t rstride, int64_t cstride);
pg_tensor *pg_tensor_full(int dtype, int64_t nrow, int64_t ncol, double value);
pg_tensor *pg_tensor_clone(pg_tensor *t);           /* deep copy of values, new id, no grad */
pg_tensor *pg_tensor_cast(pg_tensor *t, int dtype); /* copy converted to dtype */
void pg_tensor_retain(pg_tensor *t);
void pg_tensor_release(pg_tensor *t);
int pg_tensor_check(pg_tensor *t); /* 0 if t is a live tensor */

int64_t pg_tensor_id(pg_tensor *t);
int pg_tensor_dtype(pg_tensor *t);
int64_t pg_tensor_nrow(pg_tensor *t);
int64_t pg_tensor_ncol(pg_tensor *t);
int64_t pg_tensor_numel(pg_tensor *t);
void *pg_tensor_data(pg_tensor *t); /* borrowed; contiguous column-major */
int pg_tensor_requires_grad(pg_tensor *t);
int pg_tensor_set_requires_grad(pg_tensor *t, int flag);
int pg_tensor_is_leaf(pg_tensor *t);    /* no recorded node produced it */
const char *pg_tensor_op(pg_tensor *t); /* label of the producing node, or "" */

/* Copy values out to dst (column-major, converted to dst_dtype: PG_DTYPE_F32 or PG_DTYPE_F64). */
int pg_tensor_read(pg_tensor *t, void *dst, int dst_dtype);
/* Overwrite values in place from src (same strided reading as pg_tensor_new); shape must match. */
int pg_tensor_write(pg_tensor *t, const void *src, int src_dtype, int64_t nrow, int64_t ncol,
                    int64_t rstride, int64_t cstride);

/* .grad of a tensor: borrowed pointer or NULL. set_grad(NULL) clears it. */
pg_tensor *pg_tensor_grad(pg_tensor *t);
int pg_tensor_set_grad(pg_tensor *t, pg_tensor *g);

/* ---- the tape (per thread) ----
 * begin: if no tape scope is open, the tape is emptied first (as ggmlR's with_grad_tape);
 * nested scopes keep recording onto the same tape. end: closes a scope; recording stops when
 * the outermost scope closes. Nodes stay until pg_tape_clear() or the next outermost begin. */
int pg_tape_begin(void);
int pg_tape_end(void);
void pg_tape_clear(void);
/* Positions in error messages ("at position k", "params[k]") count from base: 0 (the default,
 * Python's) or 1 (R's). Returns the previous base; other values are ignored. */
int pg_set_index_base(int base);
int pg_index_base(void);
/* How messages print a non-finite number (pg_fmt_num): 0 (the default) Python's inf / -inf /
 * nan, 1 R's Inf / -Inf / NaN / NA (R's NA_real_, a NaN with payload 1954). Returns the
 * previous style; other values are ignored. */
int pg_set_num_style(int r);
int pg_tape_depth(void);
int pg_tape_enabled(void);
int pg_tape_set_enabled(int flag); /* returns previous; for no-grad sections */
int64_t pg_tape_nodes(void);

/* ---- backward ----
 * loss must be 1x1. Walks the tape in reverse recording order, returns the gradient map (all
 * requires-grad tensors reached, loss included) and adds each leaf's gradient to its .grad once. */
pg_gradmap *pg_backward(pg_tensor *loss);
int64_t pg_gradmap_size(pg_gradmap *m);
int64_t pg_gradmap_key_id(pg_gradmap *m,
                          int64_t i); /* id of entry i's tensor (the map does not keep it alive) */
int pg_gradmap_key_is_leaf(
    pg_gradmap *m, int64_t i); /* 1 if no recorded op produced entry i's tensor, -1 out of range */
pg_tensor *pg_gradmap_value(pg_gradmap *m, int64_t i);    /* borrowed */
pg_tensor *pg_gradmap_get(pg_gradmap *m, pg_tensor *key); /* borrowed; NULL if absent (no error) */
pg_tensor *pg_gradmap_get_id(pg_gradmap *m, int64_t id);  /* borrowed; NULL if absent (no error) */
void pg_gradmap_free(pg_gradmap *m);

/* ---- ops: each returns a new tensor or NULL ---- */
pg_tensor *pg_matmul(pg_tensor *a, pg_tensor *b);
pg_tensor *pg_add(pg_tensor *a, pg_tensor *b); /* size-1 dims broadcast on either side */
pg_tensor *pg_sub(pg_tensor *a, pg_tensor *b);
pg_tensor *pg_mul(pg_tensor *a, pg_tensor *b);
pg_tensor *pg_div(pg_tensor *a, pg_tensor *b);
pg_tensor *pg_scale(pg_tensor *x, double s);
pg_tensor *pg_unary(int op, pg_tensor *x);
pg_tensor *pg_pow(pg_tensor *x, double p);
pg_tensor *pg_clamp(pg_tensor *x, double lo, double hi);
pg_tensor *pg_sum(pg_tensor *x,
                  int dim); /* dim 0: all -> 1x1; 1: per row -> [r,1]; 2: per column -> [1,c] */
pg_tensor *pg_mean(pg_tensor *x, int dim);
pg_tensor *pg_transpose(pg_tensor *x);
pg_tensor *pg_reshape(pg_tensor *x, int64_t nrow, int64_t ncol); /* one of them may be -1 */
pg_tensor *pg_mse_loss(pg_tensor *pred, pg_tensor *target);
pg_tensor *pg_cross_entropy_loss(pg_tensor *pred, pg_tensor *target);
pg_tensor *pg_softmax_ce_loss(pg_tensor *logits, pg_tensor *target); /* one-hot/soft */
pg_tensor *pg_softmax_ce_loss_idx(pg_tensor *logits, const int64_t *idx,
                                  int64_t n); /* 0-based ids */
/* Same with the 0-based class ids in a tensor (f32/f64 whole numbers, [1, B] or [B, 1]): no copy
 * through the caller, and a compiled graph reads new ids on every replay. */
pg_tensor *pg_softmax_ce_loss_ids(pg_tensor *logits, pg_tensor *ids);
/* The one rule for a target, every form of it (the front ends only turn host data into a tensor):
 * the logits' shape (not [1, B>1]) is one-hot / soft labels (kind 0), a [1, B] / [B, 1] tensor
 * holds 0-based class ids (kind 1; read as values when it requires grad), else -1. _any applies
 * the rule (NULL with a PG_STATUS_ERR_SHAPE message for kind -1). */
int pg_softmax_ce_target_kind(const pg_tensor *logits, const pg_tensor *target);
pg_tensor *pg_softmax_ce_loss_any(pg_tensor *logits, pg_tensor *target);
/* Fused linear layer act(W x + b) as one node: W [m, k], x [k, B], b [m, 1] or NULL;
 * act: -1 none, PG_UNARY_OP_RELU, PG_UNARY_OP_SIGMOID or PG_UNARY_OP_TANH. Same results as matmul -> add -> activation. */
pg_tensor *pg_linear(pg_tensor *w, pg_tensor *x, pg_tensor *b, int act);

/* ---- memory accounting ---- */
/* The allocator's counters (bytes are tensor storage). */
typedef struct pg_memory_counts {
    int64_t current[5]; /* bytes now, per pg_mem_category (PG_MEM_CATEGORY_COUNT of them) */
    int64_t total;      /* bytes now, all categories */
    int64_t peak;       /* peak of total since the last pg_memory_reset_peak */
    int64_t live_tensors;
    int64_t live_gradmaps;
    int64_t live_optims;
    int64_t tape_nodes; /* this thread's tape */
} pg_memory_counts;
int pg_memory_stats(pg_memory_counts *out);
/* Totals of a memory walk over nodes (pg_tape_memory, pg_api_memory.h;
 * pg_graph_memory_report, pg_api_graph.h). */
typedef struct pg_memory_totals {
    int64_t nodes;
    int64_t bytes_total;     /* the sum of the four below */
    int64_t bytes_snapshots; /* tape: storage only it keeps alive; graph: its planned buffers */
    int64_t bytes_fields;    /* node structs (nodes x pg_tape_node_bytes()) */
    int64_t bytes_inputs;    /* storage that outlives the tape or graph (weights, data, ...) */
    int64_t bytes_gradients; /* graph: planned gradient buffers; tape: 0 */
} pg_memory_totals;
void pg_memory_reset_peak(void);
int64_t pg_live_objects(void); /* tensors + gradient maps + optimizers */
/* Freed tensor buffers, and the core's tensor and tape-node structs, are cached per size for
 * reuse by later requests of that size (training loops allocate the same sizes every step).
 * They are not counted above; pg_memory_cached tells the bytes held. */
int64_t pg_memory_cached(void);
void pg_memory_trim(void); /* give the cached buffers back to the system */

/* ---- optimizers (optim.c) ----
 * kind: a pg_optim_kind. params are matched by identity; duplicates are dropped and counted in
 * *n_dropped. Hyper-parameters by name: "lr", "momentum", "nesterov", "weight_decay", "beta1",
 * "beta2", "eps", "accumulate_steps", "average"; counters: "t" (Adam updates applied),
 * "accum_count" (micro-steps accumulated since the last update). */
pg_optim *pg_optim_new(int kind, pg_tensor **params, int64_t n, int64_t *n_dropped);
void pg_optim_free(pg_optim *o);
int pg_optim_kind(pg_optim *o);
int64_t pg_optim_nparams(pg_optim *o);
pg_tensor *pg_optim_param(pg_optim *o, int64_t i); /* borrowed */
int pg_optim_set(pg_optim *o, const char *name, double value);
double pg_optim_get(pg_optim *o, const char *name); /* NaN + error if unknown */
/* One optimizer call, as ggmlR 0.8.6's $step(). grads: a gradient map, or NULL to read each
 * parameter's .grad. With accumulate_steps k > 1, calls 1..k-1 of a period only count (nothing
 * read or written); call k reads the gradients, divides them by k when average, applies and
 * restarts the count (the sum over micro-batches is backward()'s .grad accumulation). Returns 1
 * if weights changed, 0 if it only counted, negative on error. */
int pg_optim_step(pg_optim *o, pg_gradmap *grads);
/* The project's own accumulation: every call adds its gradients (map or .grad) into the
 * optimizer's accumulator, call k applies the sum (mean when average). Compiled graphs and
 * ag_fit hand over one map per micro-batch and use this; the result has the bits of the ggmlR
 * idiom (backward() into .grad, step(), zero_grad() after an applied step). */
int pg_optim_step_sum(pg_optim *o, pg_gradmap *grads);
int pg_optim_zero_grad(pg_optim *o); /* clear params' .grad + tape */
/* SIMD level of the elementwise kernels (Adam, exp, log, sigmoid, tanh): -1 the widest this CPU
 * runs; 0 SSE2, 1 AVX2, 2 AVX-512 (one the CPU lacks falls back to the widest below). All give
 * identical bits. Returns the level now in use. */
int pg_simd_select(int which);
/* State slots per parameter: SGD: 0 velocity, 1 accumulator; Adam: 0 m, 1 v, 2 accumulator.
 * Borrowed; NULL if the slot was never allocated. */
pg_tensor *pg_optim_state(pg_optim *o, int64_t i, int slot);
/* load_state's write, all or nothing after checking finiteness and the counts: vals[s * n + i]
 * is slot s of parameter i as column-major doubles of its shape (SGD: velocity; Adam: m, v).
 * Adam's t is set, accum_count on both; accumulators dropped. */
int pg_optim_load(pg_optim *o, const double *const *vals, int64_t n_vals, double t,
                  double accum_count);
/* A model file's optimizer state, all or nothing: vals[i * N + s] is slot s of parameter i
 * (N = 2 for SGD: velocity, accumulator; 3 for Adam: m, v, accumulator) as column-major doubles
 * of its shape, NULL for an empty slot; t and accum_count set. Every value is checked first
 * (finite, within the dtype's range, Adam's v >= 0); check_only: the checks and no write. */
int pg_optim_load_file(pg_optim *o, const double *const *vals, int64_t n_vals, double t,
                       double accum_count, int check_only);
/* 0 when n doubles fit dtype (for PG_DTYPE_F32: no finite value beyond FLT_MAX, which would become
 * Inf); else PG_STATUS_ERR_VALUE naming what. The loaders call it before writing anything. */
int pg_values_fit(const double *v, int64_t n, int dtype, const char *what);
/* A gradient map over keys -> vals (vals retained, copied by nobody: a user-built map). */
pg_gradmap *pg_gradmap_make(pg_tensor **keys, pg_tensor **vals, int64_t n);

/* clip_grad_norm: global L2 norm of the params' gradients (from grads, or .grad when grads is
 * NULL); if norm > max_norm scales them by max_norm / (norm + 1e-6). Writes the pre-clip norm. */
int pg_clip_grad_norm(pg_tensor **params, int64_t n, pg_gradmap *grads, double max_norm,
                      double *norm_out);
