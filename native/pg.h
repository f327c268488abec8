/* pyggmlr C core: internal definitions shared by the C files in native/. */
#ifndef PG_H
#define PG_H

#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include "pg_api.h"
#include "pg_api_layers.h"
#include "pg_api_memory.h"
#include "pg_api_dist.h"
#include "pg_api_graph.h"
#include "pg_api_gemm.h"
#include "pg_api_rng.h"
#include "pg_api_select.h"
#include "pg_api_sched.h"
#include "pg_api_train.h"
#include "pg_api_train_metrics.h"
#include "pg_api_optim_state.h"
#include "pg_api_state_dict.h"
#include "pg_api_train_stop.h"
#include "pg_api_train_setup.h"
#include "pg_api_train_session.h"
#include "pg_api_train_weight.h"
#include "pg_api_predict.h"
#include "pg_api_layer_config.h"
#include "pg_api_layer_shape.h"
#include "pg_api_gradcheck.h"
#include "pg_api_loss.h"
#include "pg_api_attention.h"
#include "pg_api_host.h"
#include "pg_api_codec.h"
#include "pg_api_modelfile.h"
#include "pg_api_bounds.h"
#include "pg_api_args.h"
#include "pg_api_version.h"
#include "pg_api_index.h"
#include "pg_api_metrics.h"
#include "pg_api_image.h"
#include "pg_api_pool.h"
#include "pg_api_resize.h"
#include "pg_api_rnn.h"
#include "pg_api_conv.h"

#define PG_TENSOR_MAGIC 0x50475431u /* "PGT1": live tensor */
#define PG_DEAD_MAGIC   0xDEADDEADu
#define PG_MAX_IN       5
#define PG_MAX_SAVED    4

/* Shared, reference-counted buffer. Category drives the memory accounting. */
typedef struct pg_storage {
    int64_t refcount;
    size_t nbytes;
    int category;
    void *data;
    /* version: bumped by every write after creation (pg_bump); the tape records it per input
     * and backward refuses a node whose input changed since. exposed: a front end handed out a
     * writable view (numpy; a count of live views), whose writes the core cannot see: hash,
     * taken when observed, stands in for them (version.c, pg_version_observe). */
    uint64_t version;
    uint64_t hash;
    int exposed, hash_ok;
} pg_storage;

typedef struct pg_node pg_node;

struct pg_tensor {
    uint32_t magic;
    int32_t dtype; /* PG_DTYPE_F32 or PG_DTYPE_F64 */
    int64_t refcount;
    int64_t id; /* process-wide, from 1; 0 for internal buffers */
    int64_t ne[4];
    /* image shape (W, H, C) with W*H*C == ne[0], or zeros: set by the image ops (conv, pool)
     * and ag_image_shape<-, kept by pg_new_like, so layers after them need no input_shape */
    int64_t img[3];
    pg_storage *st;
    int requires_grad;
    pg_node *node;     /* producing tape node (not owned); cleared when the tape is */
    pg_tensor *grad;   /* owned; leaf gradient accumulated across backward calls */
    uint64_t bw_epoch; /* backward scratch: bw_grad is valid iff bw_epoch == current */
    pg_tensor *bw_grad;
    uint64_t bw_fresh; /* static graphs: bw_grad is a planned buffer to overwrite iff == epoch */
};

/* Backward rule: read gout (gradient of n->out), add contributions to the inputs' slots. */
typedef int (*pg_bw_fn)(pg_node *n, pg_tensor *gout);
/* Forward rule: compute n->out (and n->saved buffers) from n->in and the node's scalars. Eager
 * ops run it once; a compiled graph (graph.c) replays it. */
typedef int (*pg_fw_fn)(pg_node *n);

struct pg_node {
    const char *op; /* label for reports: "matmul", "add", ... */
    pg_bw_fn bw;
    pg_fw_fn fw; /* NULL: the op cannot be replayed by a compiled graph */
    int n_in;
    pg_tensor *in[PG_MAX_IN]; /* owned refs (NULL allowed for absent optional inputs) */
    pg_tensor *out;           /* owned ref */
    int n_saved;
    pg_tensor *saved[PG_MAX_SAVED]; /* owned refs to buffers kept for backward */
    double p[4];
    int64_t ip[4];
    struct pg_host *host; /* host nodes only (host.c): the front end's backward; NULL otherwise */
    const void *tape;     /* the (thread's) tape that recorded it */
    uint64_t ver[PG_MAX_IN + 1]; /* storage versions of in[] and (last) out when recorded */
    unsigned ver_skip; /* bit i: backward never reads in[i] (batch norm's running buffers) */
};

/* ---- error.c ---- */
int pg_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the byte length of s's first max code points (UTF-8): labels in texts are cut to 40 (fit_args.c) */
size_t pg_utf8_prefix(const char *s, int max);
/* bytes the kernel can still back now (bounds.c: MemAvailable, else free pages) */
double pg_mem_available(void);
/* PG_STATUS_ERR_IO with the system's errno kept for pg_last_errno (a front end raises the
 * language's own error for it: FileNotFoundError, PermissionError, ...) */
int pg_fail_io(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *pg_fail_null(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *pg_dtype_name(int dtype);
/* a number for messages as the host prints it (pg_set_num_style): inf / nan in Python, Inf / NaN
 * / NA in R; else %g (a whole number %g rounds: its digits); returns buf */
const char *pg_fmt_num(char *buf, size_t n, double v);
/* pg_fmt_num with %.15g for the finite (the values a user gave, as the shape texts show them) */
const char *pg_fmt_num15(char *buf, size_t n, double v);
/* pg_fmt_num into one of 4 per-thread buffers (up to 4 numbers in one message) */
const char *pg_num(double v);
/* A text written piecewise into cap bytes, the texts both front ends print (History, progress,
 * memory reports): len counts what the whole needs, as snprintf's return; buf (NULL: measure
 * only) stays NUL-terminated. One piece is at most 511 bytes. */
typedef struct pg_text {
    char *buf;
    int64_t cap, len;
} pg_text;
void pg_text_put(pg_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "[2x3] f32" description of a tensor for messages; rotates through a few static buffers */
const char *pg_desc(const pg_tensor *t);
/* ag_fit's rule that nbatch_logical is a multiple of batch_size (fit_setup.c): 0 or the refusal */
int pg_fit_batches_check(int64_t batch_size, int64_t nbatch_logical);

/* ---- tensor.c ---- */
void *pg_alloc(size_t nbytes, int category); /* counted, 64-byte aligned */
void pg_free(void *p, size_t nbytes, int category);
pg_tensor *pg_new(int dtype, int64_t nrow, int64_t ncol, int category); /* uninitialised */
pg_tensor *pg_new_zeros(int dtype, int64_t nrow, int64_t ncol, int category);
pg_tensor *pg_new_like(const pg_tensor *t, int category);
void pg_set_category(pg_tensor *t, int category);
/* non-zero (PG_STATUS_ERR_ARG, naming op and arg) when t is NULL or not a live tensor; 0 when usable */
int pg_not_live(const pg_tensor *t, const char *op, const char *arg);
int pg_same_dtype(const char *op, const char *an, const pg_tensor *a, const char *bn,
                  const pg_tensor *b);
size_t pg_dtype_size(int dtype);
void pg_count_object(int kind, int delta); /* 0 gradmap, 1 optim */
void pg_count_nodes(int64_t delta);

static inline int64_t pg_nrow(const pg_tensor *t) { return t->ne[0]; }
static inline int64_t pg_ncol(const pg_tensor *t) { return t->ne[1]; }
static inline int64_t pg_numel(const pg_tensor *t)
{
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}
static inline void *pg_data(const pg_tensor *t) { return t->st->data; }

/* free() each block a struct owns, the struct itself last: PG_FREE_ALL(g->a, g->b, g) */
static inline void pg_free_n(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++) free(p[i]);
}
#define PG_FREE_ALL(...)                                                                           \
    pg_free_n((void *[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))

/* ---- pool.c: freed buffers of one size reused (NULL / 0 when not pooled) ---- */
void *pg_pool_get(size_t sz);
int pg_pool_put(void *p, size_t sz);
/* x86-64 SIMD levels, for kernels picked at run time by CPU (gemm_ukernel.c, optim.c, vmath.c) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PG_X86_SIMD 1
#include <immintrin.h>
#define PG_TARGET_AVX2   __attribute__((target("avx2,fma")))
#define PG_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define PG_X86_SIMD 0
#endif
int pg_cpu_simd(int want); /* the widest level <= want the CPU runs: 2 AVX-512F, 1 AVX2 + FMA, 0 */
extern int pg_simd_sel;    /* the level pg_simd_select (pg_api.h) chose; -1 before the first call */
static inline int pg_simd_level(void) { return pg_simd_sel < 0 ? pg_simd_select(-1) : pg_simd_sel; }
/* y[i] = f(x[i]) for i < n, vectorised (vmath.c); x and y may be the same buffer */
void pg_vexp(int dtype, const void *x, void *y, int64_t n);
void pg_vsigmoid(int dtype, const void *x, void *y, int64_t n);
void pg_vtanh(int dtype, const void *x, void *y, int64_t n);
void pg_verfc(int dtype, const void *x, void *y, int64_t n);
void pg_vgelu(int dtype, const void *x, void *y, int64_t n); /* x/2 (1 + erf(x / sqrt2)) */
/* d = g * gelu'(x) over n elements, or d += it when acc (vmath.c) */
void pg_vgelu_bw(int dtype, const void *g, const void *x, void *d, int64_t n, int acc);
/* one LSTM step of one column (ops_rnn.c): a [4H] = act((a + bb) + q) (bb may be NULL), c =
 * f * cp + i * g (cp may be NULL: 0 + i * g), tc = tanh(c), h = hb = o * tc (vmath.c) */
void pg_vlstm_cell(int dtype, void *a, const void *bb, const void *q, const void *cp, void *c,
                   void *tc, void *h, void *hb, int64_t H);
/* 1 when pg_gemm runs the built-in kernel for dtype (no BLAS handed in): its summation order */
int pg_gemm_builtin(int dtype);
/* ops_unary.c: y = act(x) over n elements for the activations a fused layer applies (relu,
 * sigmoid, tanh; y may be x); 1, or 0 leaving y alone for any other op */
int pg_unary_act(int dtype, int op, const void *x, void *y, int64_t n);
void pg_vlog(int dtype, const void *x, void *y, int64_t n);
double pg_vsum(int dtype, const void *x, int64_t n); /* in double, in a fixed order (vmath.c) */
/* vew.c: elementwise loops per SIMD level, the same bits on each. o = x op y over C columns of R
 * (op: 0 add, 1 sub, 2 mul, 3 div; x's and y's columns xs and ys elements apart, 0 for a
 * broadcast column; mode: both vectors, y one value, x one value; o never x or y); d (+)= +-g;
 * d += +-g's C columns of R, in order; ReLU (y may be x) and its gradient from the output o */
enum { PG_EW_VV, PG_EW_VS, PG_EW_SV };
void pg_ew_bin(int dtype, int op, const void *x, int64_t xs, const void *y, int64_t ys, void *o,
               int64_t R, int64_t C, int mode);
void pg_ew_rows(int dtype, const void *g, void *d, int64_t R, int64_t C, int neg);
void pg_ew_acc(int dtype, const void *g, void *d, int64_t n, int acc, int neg);
void pg_ew_relu(int dtype, const void *x, void *y, int64_t n);
void pg_ew_relu_bw(int dtype, const void *o, const void *g, void *d, int64_t n, int acc);
/* rows [r0, r0 + nr) of a [Rd, C] matrix (+)= src [nr, C], and dst [nr, C] (+)= rows [r0,
 * r0 + nr) of src [Rs, C] (acc 0: store): ag_slice_rows / ag_concat_rows and the attention
 * heads (ops_rows.c) */
void pg_rows_add(int dtype, void *dst, int64_t Rd, int64_t r0, const void *src, int64_t nr,
                 int64_t C, int acc);
void pg_rows_get(int dtype, void *dst, const void *src, int64_t Rs, int64_t r0, int64_t nr,
                 int64_t C, int acc);
/* column softmax of x [R, C] into p (ops_unary.c); _lse also gives each column's max and the log
 * of its sum of exps (either may be NULL) */
void pg_softmax_cols(int dtype, const void *x, void *p, int64_t R, int64_t C);
/* its backward: d (+)= p * (g - sum(p * g)) per column (acc: add), softmax's rule and MHA's */
void pg_softmax_cols_bw(int dtype, const void *p, const void *g, void *d, int64_t R, int64_t C,
                        int acc);
void pg_softmax_cols_lse(int dtype, const void *x, void *p, int64_t R, int64_t C, double *mx,
                         double *lsum);
void *pg_obj_new(size_t sz); /* zeroed; sizes share the buffer cache */
void pg_obj_free(void *p, size_t sz);

/* ---- memory.c: the gradient lock ----
 * backward, .grad updates, optimizer steps and graph replays run one at a time, process-wide
 * (recursive, so zero_grad may call set_grad). */
void pg_grad_lock(void);
void pg_grad_unlock(void);
/* the body of a public entry point that runs `call` (an int) under the gradient lock */
#define PG_GRAD_LOCKED(call)                                                                       \
    do {                                                                                           \
        pg_grad_lock();                                                                            \
        int pg_rc_ = (call);                                                                       \
        pg_grad_unlock();                                                                          \
        return pg_rc_;                                                                             \
    } while (0)

/* ---- versions (version.c) ----
 * pg_bump: t's values were overwritten in place (every write path into an existing tensor calls
 * it). pg_version_observe: t's version now, first counting a write through an exposed view. */
static inline void pg_bump(pg_tensor *t)
{
    __atomic_add_fetch(&t->st->version, 1, __ATOMIC_RELAXED);
    t->st->hash_ok = 0;
}
uint64_t pg_version_observe(pg_tensor *t);

/* ---- tape.c ---- */
/* Sets out->requires_grad from the inputs and, when the tape records and some input requires
 * grad, appends a node owning refs to inputs and out. Returns the node, NULL when nothing was
 * recorded; *err is set to 1 if recording failed (out of memory). */
pg_node *pg_record(const char *op, pg_bw_fn bw, pg_tensor *out, int n_in, pg_tensor **in, int *err);
int pg_node_save(pg_node *n, pg_tensor *t); /* node takes a new ref to t */
/* The usual shape of an op: `out` (and `saved` buffers) allocated by the caller; runs fw on a
 * node holding in/p/ip/saved, then records it (with fw) when the tape wants it. Takes over the
 * refs to out and saved[] (releases them on failure / when not recorded); returns out or NULL. */
pg_tensor *pg_op_run(const char *op, pg_fw_fn fw, pg_bw_fn bw, pg_tensor *out, int n_in,
                     pg_tensor **in, const double *p, const int64_t *ip, int n_saved,
                     pg_tensor **saved);
/* Thread-local scratch of at least nbytes, uninitialised; reused (grows only); NULL on failure.
 * One user at a time: valid until the next pg_scratch call. */
void *pg_scratch(size_t nbytes);
/* Record every op, even those no gradient needs (compiled graphs replay them); returns the
 * previous setting; flag < 0 only reads it. */
int pg_tape_record_all(int flag);
void pg_tape_clear_used(void); /* zero_grad: clear unless recorded since the last backward */
/* Gradient buffer of t in the running backward: *acc = 1 when it already holds a partial sum
 * (add into it), 0 when fresh (overwrite it). NULL on allocation failure. */
void *pg_grad_slot(pg_tensor *t, int *acc);
/* adds g (t's element count and dtype, any shape) into t's gradient slot; -1 out of memory */
int pg_grad_add(pg_tensor *t, const pg_tensor *g);
/* the same with each element of g times m's (m as g; NULL: none): an elementwise product's rule */
int pg_grad_add_times(pg_tensor *t, const pg_tensor *g, const pg_tensor *m);
/* ops_index.c: the backward of a read of x at stride * k + pos[k] (pos: the node's saved[0]):
 * x's gradient is zero but for g's element k added there, in k order */
int pg_take_bw_strided(pg_node *n, pg_tensor *g, int64_t stride);
/* ops_index.c: op `label` on x into a new [nrow, ncol] result, its n positions (checked by the
 * caller) saved as a [1, width] f64 buffer so a replay reads the same; NULL out of memory */
pg_tensor *pg_positions_op(const char *label, pg_fw_fn fw, pg_bw_fn bw, pg_tensor *x,
                           const int64_t *pos, int64_t n, int64_t nrow, int64_t ncol,
                           int64_t width);
static inline int pg_wants_grad(const pg_tensor *t) { return t != NULL && t->requires_grad; }
/* The start of most backward rules: 1 with x's gradient slot in *slot (and *acc, as
 * pg_grad_slot); 0 when x wants no gradient; -1 out of memory. */
static inline int pg_grad_slot_for(pg_tensor *x, void **slot, int *acc)
{
    if (!pg_wants_grad(x)) return 0;
    *slot = pg_grad_slot(x, acc);
    return *slot ? 1 : -1;
}
pg_node *pg_tape_node(int64_t i);
void pg_node_free(pg_node *n);
pg_node **pg_tape_take(int64_t *n); /* graph.c: take over the recorded nodes */
uint64_t pg_tape_new_epoch(void);   /* graph.c: start a backward pass */
/* host.c support: record even when no input requires grad (out then requires grad); walk the
 * current tape seeded with gout at out, into the running backward; drop from the walk's reached
 * set the entries from index r0 on whose tensors were made at or after id `mark`. */
pg_node *pg_record_forced(const char *op, pg_bw_fn bw, pg_tensor *out, int n_in, pg_tensor **in,
                          int *err);
int pg_tape_walk_from(pg_tensor *out, pg_tensor *gout);
int64_t pg_reached_count(void);
void pg_reached_drop_since(int64_t r0, int64_t mark);
int64_t pg_tensor_next_id(void);      /* tensor.c: the id the next tensor gets */
void pg_host_free(struct pg_host *h); /* host.c: called by pg_node_free */
int pg_host_check_versions(
    const pg_node *n); /* host.c: the further inputs' versions (tape.c's walk) */
int pg_version_mismatch(const pg_node *n, pg_tensor *t, uint64_t want,
                        int64_t slot); /* version.c: 0 or the error */
int pg_node_check_versions(
    const pg_node *n); /* version.c: every input and the output as recorded */
/* version.c: a checkpoint segment's parameter log (begun/ended by stash/unstash at that depth,
 * fed by every op while its tape is current, taken by pg_host_record, dropped by clear) */
void pg_seg_log_begin(int depth);
void pg_seg_log_end(int depth);
void pg_seg_log_drop(void);
void pg_seg_log_unclaimed_drop(void);
void pg_seg_touch(pg_tensor **in, int n_in, int depth);
int64_t pg_seg_log_take(pg_tensor ***t, uint64_t **ver);
int64_t pg_node_n_inputs(const pg_node *n); /* n_in plus a host node's further inputs */
pg_tensor *pg_node_input(const pg_node *n, int64_t i);
/* memory.c: a node's tensors in walk order (inputs, saved, output; entries may be NULL), and the
 * one walk behind the memory reports: fn gives the bytes to charge to the node for each tensor
 * (-1: out of memory; input: one of its inputs); rows as pg_tape_memory. nodes NULL: the tape's.
 * Returns the number of labels, -1 out of memory. */
int64_t pg_node_n_tensors(const pg_node *n);
pg_tensor *pg_node_tensor(const pg_node *n, int64_t j);
typedef int64_t (*pg_walk_charge)(void *ctx, pg_tensor *t, int input);
int64_t pg_memory_walk(pg_node *const *nodes, int64_t nn, pg_walk_charge fn, void *ctx,
                       const char **op_label, int64_t *op_nodes, int64_t *op_bytes,
                       int64_t max_ops);
pg_gradmap *pg_gradmap_make(pg_tensor **keys, pg_tensor **vals, int64_t n);
pg_tensor *pg_gradmap_get_own(pg_gradmap *m, pg_tensor *key); /* unshared from .grad first */
pg_tensor *pg_gradmap_own_value(pg_gradmap *m, pg_tensor *g); /* same, for a value in hand */
pg_tensor *pg_grad_own(pg_tensor *t);                         /* .grad unshared from maps first */

/* ---- gemm.c ----
 * C[m,n] = alpha * op(A) op(B) + beta * C, column-major, op = transpose when ta/tb. */
void pg_gemm(int dtype, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
             const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
             int64_t ldc);
/* The built-in kernel (gemm_kernel.c, gemm_ukernel.c, gemm_pool.c): gemm_internal.h; its
 * selectors for tests and benchmarks: pg_api_gemm.h. */
/* fn(ctx, i0, i1) over [0, n) in ranges run on up to ag_set_threads(n) threads (gemm_pool.c),
 * at least min_items per thread (else fewer threads; all of it on the caller below 2 min_items).
 * The ranges are disjoint and the caller waits for all: fn must give, for each item, a result
 * that depends on the item alone (never on the range's bounds), so that every thread count
 * gives the same bits. A fn that itself asks for threads runs single-threaded. */
void pg_par_for(int64_t n, int64_t min_items, void (*fn)(void *ctx, int64_t i0, int64_t i1),
                void *ctx);

/* Per-epoch training statistics (stats.c, for pg_fit_epoch_end). pg_loss_stats: *loss = mean of
 * the n per-batch losses v weighted by w (the total of v when per_datapoint is 0), *unc = its
 * standard error from the unweighted per-batch values (NaN below two batches); pg_acc_stats:
 * accuracy and its standard error from counts (NaN when ndata == 0). */
int pg_loss_stats(const double *v, const double *w, int64_t n, int per_datapoint, double *loss,
                  double *unc);
int pg_acc_stats(int64_t ncorrect, int64_t ndata, double *acc, double *unc);

/* A plan as the training session (fit_session.c) sees it (fit.c): how many batches of a part
 * this epoch has recorded (*last: the last one's loss, NaN before any) and the width batch b of
 * a part has (0 when out of range). */
int64_t pg_fit_nrecorded(const pg_fit *f, int val, double *last);
int64_t pg_fit_width(const pg_fit *f, int val, int64_t b);
/* fit_weight.c's view of the plan: its x, y, the samples the caller gave (x's own columns,
 * without validation_data's) and the slot of its weight row */
pg_tensor **pg_fit_weight_slot(pg_fit *f, pg_tensor **x, pg_tensor **y, int64_t *n_given);
/* ag_fit's data are finite (fit_val.c): PG_STATUS_ERR_VALUE naming the count and the first
 * (row, column); columns from n_main on are validation_data's and named as such. */
int pg_fit_check_finite(const pg_tensor *t, const char *what, int64_t n_main);
/* pg_fit_new's plan on x / y as given (fit.c); pg_fit_new (fit_data.c) appends validation_data */
pg_fit *pg_fit_new_cols(pg_tensor *x, pg_tensor *y, const pg_fit_params *params);
/* ag_fit's binary accuracy (fit_binary.c) for classify PG_FIT_CLASSIFY_PROBS / _LOGITS:
 * pg_fit_binary_targets refuses BCE targets outside [0, 1] naming the loss, row and column
 * (columns from n_main on: validation_data's, named as such);
 * pg_fit_binary_hits counts the elements of out [k, w] on the right side of the threshold
 * against y's columns idx[0 .. w-1] (PG_STATUS_ERR_SHAPE when out is not [k, w]). */
int pg_fit_binary_targets(const pg_tensor *y, int classify, int64_t n_main);
/* ag_fit(metrics =)'s epoch outputs and targets (fit_metrics.c): made by pg_fit_metrics; add
 * appends out [k, w] and y's columns idx (any dtype); clear at each epoch's start. */
typedef struct pg_fit_keep pg_fit_keep;
pg_fit_keep *pg_fit_keep_new(int64_t n, const int *codes, int classify);
void pg_fit_keep_free(pg_fit_keep *k);
void pg_fit_keep_clear(pg_fit_keep *k);
int pg_fit_keep_add(pg_fit_keep *k, int val, const pg_tensor *out, const pg_tensor *y,
                    const int64_t *idx, int64_t w);
int pg_fit_keep_values(const pg_fit_keep *k, int val, double *values);
/* bit c set for each kept metric code c (0 for NULL) */
int pg_fit_keep_mask(const pg_fit_keep *k);
/* the codes kept (n of them, in ag_fit(metrics =)'s order; none for NULL) */
int64_t pg_fit_keep_codes(const pg_fit_keep *k, const int **codes);
int pg_fit_binary_hits(const pg_tensor *out, const pg_tensor *y, const int64_t *idx, int64_t w,
                       int classify, int64_t *hit);

/* Run the block once with T = float and once with T = double, picking by dtype at run time. */
#define PG_DISPATCH(dt, ...)                                                                       \
    do {                                                                                           \
        if ((dt) == PG_DTYPE_F32) {                                                                \
            typedef float T;                                                                       \
            __VA_ARGS__                                                                            \
        } else {                                                                                   \
            typedef double T;                                                                      \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } while (0)

/* The first value of a tensor (a 1x1 loss) written / read as a double, in its dtype. */
static inline void pg_scalar_set(pg_tensor *t, double v)
{
    PG_DISPATCH(t->dtype, { *(T *)pg_data(t) = (T)v; });
}
static inline double pg_scalar_get(const pg_tensor *t)
{
    return t->dtype == PG_DTYPE_F32 ? (double)*(const float *)pg_data(t)
                                    : *(const double *)pg_data(t);
}

/* v is finite and has no fraction (every finite double beyond 2^53 is whole) */
static inline int pg_is_whole(double v)
{
    if (!(v - v == 0)) return 0; /* NaN, Inf */
    return v > 9e15 || v < -9e15 || v == (double)(int64_t)v;
}

/* Ids (f32 or f64 values) checked as 0-based classes of `of`: 0 when the first n are whole
 * numbers in [0, k), else the error "op: <idw> v at position p is out of range [0, k) for <ofw>
 * <of><tail>" for the first that is not ("is not a whole number in [0, k)" for 2.5, NaN, Inf). */
static inline int pg_ids_check(const pg_tensor *ids, int64_t n, int64_t k, const char *op,
                               const char *idw, const pg_tensor *of, const char *ofw,
                               const char *tail)
{
    PG_DISPATCH(ids->dtype, {
        const T *id = pg_data(ids);
        for (int64_t j = 0; j < n; j++) {
            T v = id[j];
            char num[32];
            if (!(v >= 0 && v < (T)k) || v != (T)(int64_t)v)
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: %s %s at position %lld is %s [0, %lld) for %s %s%s", op, idw,
                               pg_fmt_num(num, sizeof num, (double)v),
                               (long long)(j + pg_index_base()),
                               pg_is_whole((double)v) ? "out of range" : "not a whole number in",
                               (long long)k, ofw, pg_desc(of), tail);
        }
    });
    return 0;
}

/* dst[i] (+)= expr for i in [0, n): two loops so each vectorises. */
#define PG_STORE_LOOP(acc, n, dst, expr)                                                           \
    do {                                                                                           \
        if (acc) {                                                                                 \
            for (int64_t i = 0; i < (n); i++) (dst)[i] += (expr);                                  \
        } else {                                                                                   \
            for (int64_t i = 0; i < (n); i++) (dst)[i] = (expr);                                   \
        }                                                                                          \
    } while (0)

/* An image op's (C, H, W) into chw from shape (dims + 1 values, torch order (C, H, W) or
 * (C, L)) or else x's image tag, checked against x's rows; the texts name fn (ops_pool.c). */
int pg_image_of(pg_tensor *x, const double *shape, int dims, const char *fn, int64_t *chw);

/* A text written into out[0..cap) while it fits; len counts what the whole needs (the
 * measure-then-write texts of fit_setup.c and fit_cb.c). pg_sbuf_printf appends (fit_setup.c). */
typedef struct {
    char *out;
    int64_t cap, len;
} pg_sbuf;
void pg_sbuf_printf(pg_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
