/* Optimizers (SGD with momentum/Nesterov/L2, Adam with decoupled weight decay) and gradient
 * clipping. One pass over each parameter per update. Accumulation as ggmlR 0.8.6: calls 1..k-1
 * of a period only count, call k reads the gradients (the summing happens in .grad, by
 * backward()); pg_optim_step_sum keeps the project's own accumulator for compiled graphs and
 * ag_fit, which hand over one map per micro-batch. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <float.h>
#include <stddef.h>
#include <tgmath.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

/* Fused Adam update, one pass: m, v, then w (decoupled decay first). c1 = 1 - beta1 and
 * c2 = 1 - beta2 come formed in double and rounded once, as PyTorch's scalars: 1 - 0.999f is
 * 9.99987e-4, which made early f32 steps 6.7e-6 too large against the double bias correction. C's sqrt() may set errno,
 * which stops the compiler from vectorising a loop that calls it; the SIMD square root gives the
 * same correctly rounded result without that and needs no build flag (R and Python alike). The
 * vector bodies (SSE2, AVX2, AVX-512: the widest the CPU has) and the scalar tail do the same
 * correctly rounded operations in the same order, with no FMA: identical results whatever the
 * width, the compiler and its flags. */
#define ADAM_SCALAR(T, SQRT)                                                                       \
    for (; k < n; k++) {                                                                           \
        T gv = unit ? g[k] : g[k] / gs;                                                            \
        m[k] = b1 * m[k] + c1 * gv;                                                                \
        v[k] = b2 * v[k] + c2 * gv * gv;                                                           \
        T den = SQRT(v[k]) * rc2 + eps;                                                            \
        if (decay != 0) w[k] -= decay * w[k];                                                      \
        w[k] -= m[k] * sc / den;                                                                   \
    }

/* The vector body, written once: V the vector type, P the intrinsic prefix (_mm, _mm256,
 * _mm512), SUF the suffix (ps / pd), W the lanes per vector. */
#define ADAM_SIMD(V, P, SUF, W)                                                                    \
    const V B1 = P##_set1_##SUF(b1), C1 = P##_set1_##SUF(c1), B2 = P##_set1_##SUF(b2),             \
            C2 = P##_set1_##SUF(c2), GS = P##_set1_##SUF(gs), SC = P##_set1_##SUF(sc),             \
            RC2 = P##_set1_##SUF(rc2), EPS = P##_set1_##SUF(eps), DEC = P##_set1_##SUF(decay);     \
    for (; k + (W) <= n; k += (W)) {                                                               \
        V gv = unit ? P##_loadu_##SUF(g + k) : P##_div_##SUF(P##_loadu_##SUF(g + k), GS);          \
        V mk = P##_add_##SUF(P##_mul_##SUF(B1, P##_loadu_##SUF(m + k)), P##_mul_##SUF(C1, gv));    \
        V vk = P##_add_##SUF(P##_mul_##SUF(B2, P##_loadu_##SUF(v + k)),                            \
                             P##_mul_##SUF(P##_mul_##SUF(C2, gv), gv));                            \
        V den = P##_add_##SUF(P##_mul_##SUF(P##_sqrt_##SUF(vk), RC2), EPS);                        \
        V wk = P##_loadu_##SUF(w + k);                                                             \
        if (decay != 0) wk = P##_sub_##SUF(wk, P##_mul_##SUF(DEC, wk));                            \
        wk = P##_sub_##SUF(wk, P##_div_##SUF(P##_mul_##SUF(mk, SC), den));                         \
        P##_storeu_##SUF(m + k, mk);                                                               \
        P##_storeu_##SUF(v + k, vk);                                                               \
        P##_storeu_##SUF(w + k, wk);                                                               \
    }

#define ADAM_ARGS(T)                                                                               \
    (T *restrict w, T *restrict m, T *restrict v, const T *restrict g, int64_t n, T b1, T c1,      \
     T b2, T c2, T eps, T gs, T sc, T rc2, T decay)
#define ADAM_FN(NAME, T, SQRT, ATTR, BODY)                                                         \
    ATTR static void NAME ADAM_ARGS(T)                                                             \
    {                                                                                              \
        int64_t k = 0;                                                                             \
        const int unit = gs == 1; /* x / 1 is x: no division unless averaging (the same bits) */   \
        BODY ADAM_SCALAR(T, SQRT)                                                                  \
    }

#if PG_X86_SIMD
ADAM_FN(adam_f32_sse2, float, sqrtf, , ADAM_SIMD(__m128, _mm, ps, 4))
ADAM_FN(adam_f64_sse2, double, sqrt, , ADAM_SIMD(__m128d, _mm, pd, 2))
ADAM_FN(adam_f32_avx2, float, sqrtf, PG_TARGET_AVX2, ADAM_SIMD(__m256, _mm256, ps, 8))
ADAM_FN(adam_f64_avx2, double, sqrt, PG_TARGET_AVX2, ADAM_SIMD(__m256d, _mm256, pd, 4))
ADAM_FN(adam_f32_avx512, float, sqrtf, PG_TARGET_AVX512, ADAM_SIMD(__m512, _mm512, ps, 16))
ADAM_FN(adam_f64_avx512, double, sqrt, PG_TARGET_AVX512, ADAM_SIMD(__m512d, _mm512, pd, 8))
#else
ADAM_FN(adam_f32_sse2, float, sqrtf, , )
ADAM_FN(adam_f64_sse2, double, sqrt, , )
#define adam_f32_avx2   adam_f32_sse2
#define adam_f64_avx2   adam_f64_sse2
#define adam_f32_avx512 adam_f32_sse2
#define adam_f64_avx512 adam_f64_sse2
#endif

static void(*const adam_f32[3]) ADAM_ARGS(float) = {adam_f32_sse2, adam_f32_avx2, adam_f32_avx512};
static void(*const adam_f64[3]) ADAM_ARGS(double) = {adam_f64_sse2, adam_f64_avx2, adam_f64_avx512};

/* One parameter's update over threads (ag_set_threads): elementwise, so any split gives the same
 * bits; in blocks of 64 elements (whole vectors), at least 16384 elements a thread (about 30 us,
 * below which a second thread does not pay). */
#define ADAM_BLOCK      64
#define ADAM_MIN_BLOCKS 256
typedef struct {
    int f32, sel;
    int64_t n;
    void *w, *m, *v;
    const void *g;
    double s[9]; /* b1, c1, b2, c2, eps, gs, sc, rc2, decay */
} adam_job;
static void adam_range(void *ctx, int64_t b0, int64_t b1)
{
    const adam_job *a = ctx;
    const double *s = a->s;
    int64_t e0 = b0 * ADAM_BLOCK, e1 = b1 * ADAM_BLOCK < a->n ? b1 * ADAM_BLOCK : a->n;
    if (a->f32)
        adam_f32[a->sel]((float *)a->w + e0, (float *)a->m + e0, (float *)a->v + e0,
                         (const float *)a->g + e0, e1 - e0, (float)s[0], (float)s[1], (float)s[2],
                         (float)s[3], (float)s[4], (float)s[5], (float)s[6], (float)s[7],
                         (float)s[8]);
    else
        adam_f64[a->sel]((double *)a->w + e0, (double *)a->m + e0, (double *)a->v + e0,
                         (const double *)a->g + e0, e1 - e0, s[0], s[1], s[2], s[3], s[4], s[5],
                         s[6], s[7], s[8]);
}

static int step_locked(pg_optim *o, pg_gradmap *grads, int sum);
static int zero_grad_locked(pg_optim *o);

#define N_SLOTS 3

struct pg_optim {
    int kind;
    int64_t n;
    pg_tensor **params;           /* owned refs */
    pg_tensor *(*state)[N_SLOTS]; /* per param: SGD velocity, accum; Adam m, v, accum */
    double lr, momentum, nesterov, weight_decay, beta1, beta2, eps;
    int64_t accumulate_steps, accum_count, t;
    int average;
};

static int acc_slot(const pg_optim *o) { return o->kind == PG_OPTIM_KIND_ADAM ? 2 : 1; }
static void drop_accumulators(pg_optim *o);

pg_optim *pg_optim_new(int kind, pg_tensor **params, int64_t n, int64_t *n_dropped)
{
    const char *name = kind == PG_OPTIM_KIND_ADAM ? "optimizer_adam" : "optimizer_sgd";
    if (kind < 0 || kind >= PG_OPTIM_KIND_COUNT)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "unknown optimizer kind %d", kind);
    if (n < 0 || (n > 0 && !params))
        return pg_fail_null(PG_STATUS_ERR_ARG, "%s: bad parameter list", name);
    for (int64_t i = 0; i < n; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "params[%lld]", (long long)(i + pg_index_base()));
        if (pg_not_live(params[i], name, arg)) return NULL;
    }
    pg_optim *o = calloc(1, sizeof *o);
    if (!o) return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", name);
    o->params = calloc((size_t)(n ? n : 1), sizeof *o->params);
    o->state = calloc((size_t)(n ? n : 1), sizeof *o->state);
    if (!o->params || !o->state) {
        free(o->params);
        free(o->state);
        free(o);
        return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", name);
    }
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; i++) {
        int dup = 0;
        for (int64_t k = 0; k < o->n && !dup; k++) dup = o->params[k] == params[i];
        if (dup) {
            dropped++;
            continue;
        }
        pg_tensor_retain(params[i]);
        o->params[o->n++] = params[i];
    }
    if (n_dropped) *n_dropped = dropped;
    o->kind = kind;
    o->lr = kind == PG_OPTIM_KIND_ADAM ? 1e-3 : 0.01;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->accumulate_steps = 1;
    o->average = 1;
    pg_count_object(1, 1);
    return o;
}

void pg_optim_free(pg_optim *o)
{
    if (!o) return;
    for (int64_t i = 0; i < o->n; i++) {
        pg_tensor_release(o->params[i]);
        for (int s = 0; s < N_SLOTS; s++) pg_tensor_release(o->state[i][s]);
    }
    free(o->params);
    free(o->state);
    free(o);
    pg_count_object(1, -1);
}

int pg_optim_kind(pg_optim *o) { return o ? o->kind : -1; }
int64_t pg_optim_nparams(pg_optim *o) { return o ? o->n : -1; }
pg_tensor *pg_optim_param(pg_optim *o, int64_t i)
{
    return (o && i >= 0 && i < o->n) ? o->params[i] : NULL;
}

/* Hyper-parameter ranges (issue 19): each refusal names the optimizer, the setting and the
 * accepted range; nothing is written on refusal. Rates and moments must be finite. */
enum { R_RATE, R_UNIT, R_POS, R_BOOL, R_STEPS, R_COUNT }; /* accepted ranges */
enum { F_DBL, F_I64, F_INT };                             /* field types in pg_optim */
static const struct setting {
    const char *name;
    size_t off;
    int field, range;
} SETTINGS[] = {
    {"lr", offsetof(pg_optim, lr), F_DBL, R_RATE},
    {"momentum", offsetof(pg_optim, momentum), F_DBL, R_UNIT},
    {"nesterov", offsetof(pg_optim, nesterov), F_DBL, R_BOOL},
    {"weight_decay", offsetof(pg_optim, weight_decay), F_DBL, R_RATE},
    {"beta1", offsetof(pg_optim, beta1), F_DBL, R_UNIT},
    {"beta2", offsetof(pg_optim, beta2), F_DBL, R_UNIT},
    {"eps", offsetof(pg_optim, eps), F_DBL, R_POS},
    {"accumulate_steps", offsetof(pg_optim, accumulate_steps), F_I64, R_STEPS},
    {"average", offsetof(pg_optim, average), F_INT, R_BOOL},
    {"t", offsetof(pg_optim, t), F_I64, R_COUNT},
    {"accum_count", offsetof(pg_optim, accum_count), F_I64, R_COUNT},
};

static const struct setting *find_setting(const char *name)
{
    for (size_t i = 0; i < sizeof SETTINGS / sizeof *SETTINGS; i++)
        if (!strcmp(name, SETTINGS[i].name)) return &SETTINGS[i];
    return NULL;
}

/* NULL when v is in the range, else the range as the refusal words it */
static const char *range_refusal(int range, double v)
{
    switch (range) {
    case R_RATE: return v >= 0 && isfinite(v) ? NULL : "a finite number >= 0";
    case R_UNIT: return v >= 0 && v < 1 ? NULL : "in [0, 1)";
    case R_POS: return v > 0 && isfinite(v) ? NULL : "a finite number > 0";
    case R_BOOL: return isnan(v) ? "TRUE or FALSE" : NULL;
    case R_STEPS: /* also keeps the int64 conversion defined */
        return v >= 1 && v == floor(v) && v <= 1e15 ? NULL : "an integer in [1, 1e15]";
    default: return v >= 0 && v <= 1e15 && v == floor(v) ? NULL : "a count in [0, 1e15]";
    }
}

int pg_optim_set(pg_optim *o, const char *name, double v)
{
    if (!o || !name) return pg_fail(PG_STATUS_ERR_ARG, "optimizer: NULL handle or name");
    const char *fn = o->kind == PG_OPTIM_KIND_ADAM ? "optimizer_adam" : "optimizer_sgd";
    const struct setting *s = find_setting(name);
    if (!s) return pg_fail(PG_STATUS_ERR_VALUE, "%s: unknown setting '%s'", fn, name);
    const char *want = range_refusal(s->range, v);
    if (want) {
        char got[32];
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s must be %s, got %s", fn, name, want,
                       pg_fmt_num(got, sizeof got, v));
    }
    double x = s->range == R_BOOL ? (v != 0) : v; /* flags are stored as 0 / 1 */
    char *p = (char *)o + s->off;
    if (s->field == F_DBL) *(double *)p = x;
    else if (s->field == F_I64) *(int64_t *)p = (int64_t)x;
    else *(int *)p = (int)x;
    return 0;
}

double pg_optim_get(pg_optim *o, const char *name)
{
    if (!o || !name) {
        pg_fail(PG_STATUS_ERR_ARG, "optimizer: NULL handle or name");
        return NAN;
    }
    const struct setting *s = find_setting(name);
    if (!s) {
        pg_fail(PG_STATUS_ERR_VALUE, "optimizer: unknown setting '%s'", name);
        return NAN;
    }
    const char *p = (const char *)o + s->off;
    if (s->field == F_DBL) return *(const double *)p;
    if (s->field == F_I64) return (double)*(const int64_t *)p;
    return *(const int *)p;
}

static pg_tensor *slot(pg_optim *o, int64_t i, int s)
{
    if (!o->state[i][s]) {
        pg_tensor *p = o->params[i];
        o->state[i][s] = pg_new_zeros(p->dtype, p->ne[0], p->ne[1], PG_MEM_CATEGORY_OPTIM);
    }
    return o->state[i][s];
}

pg_tensor *pg_optim_state(pg_optim *o, int64_t i, int s)
{
    if (!o || i < 0 || i >= o->n || s < 0 || s >= N_SLOTS) return NULL;
    return o->state[i][s];
}

/* One slot value's checks (shared by load_state and the model files): finite, within the
 * parameter dtype's range (a double beyond FLT_MAX would become Inf in an f32 slot), and >= 0
 * for Adam's second moments (their square root divides the step). */
static int check_slot(const pg_optim *o, int64_t i, int s, const double *v, const char *where)
{
    const pg_tensor *p = o->params[i];
    int64_t N = pg_numel(p);
    const char *nm = o->kind == PG_OPTIM_KIND_ADAM ? (s == 0       ? "m"
                                                          : s == 1 ? "v"
                                                                   : "accum")
                                                   : (s == 0 ? "velocity" : "accum");
    for (int64_t e = 0; e < N; e++) {
        if (!isfinite(v[e]))
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: slot '%s' of parameter %lld is not finite",
                           where, nm, (long long)i + 1);
        if (p->dtype == PG_DTYPE_F32 && fabs(v[e]) > FLT_MAX)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: slot '%s' of parameter %lld holds %s, outside the f32 range", where,
                           nm, (long long)i + 1, pg_num(v[e]));
        if (o->kind == PG_OPTIM_KIND_ADAM && s == 1 && v[e] < 0)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: slot 'v' of parameter %lld has a negative entry (%s); second "
                           "moments must be >= 0",
                           where, (long long)i + 1, pg_num(v[e]));
    }
    return 0;
}

static int is_count(double x) { return x >= 0 && x <= 1e15 && x == floor(x); }

/* Checks every value, then swaps all the slots in at once: vals[j] for slot slots[j] of
 * parameter params_of[j] (NULL: the slot is emptied). A failure changes nothing. */
static int load_slots(pg_optim *o, const double *const *vals, int64_t n_vals, int per,
                      int with_null, double t, double accum_count, int check_only,
                      const char *where)
{
    if (!(is_count(t) && is_count(accum_count)))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: t / accum_count are not counts", where);
    for (int64_t j = 0; j < n_vals; j++) {
        int64_t i = with_null ? j / per : j % o->n;
        int s = with_null ? (int)(j % per) : (int)(j / o->n);
        if (!vals[j]) {
            if (!with_null) return pg_fail(PG_STATUS_ERR_ARG, "%s: missing slot value", where);
            continue;
        }
        int rc = check_slot(o, i, s, vals[j], where);
        if (rc) return rc;
    }
    if (check_only) return 0;
    pg_tensor **fresh = calloc((size_t)(n_vals > 0 ? n_vals : 1), sizeof *fresh);
    if (!fresh) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", where);
    for (int64_t j = 0; j < n_vals; j++) {
        int64_t i = with_null ? j / per : j % o->n;
        if (!vals[j]) continue;
        pg_tensor *p = o->params[i];
        fresh[j] = pg_new(p->dtype, p->ne[0], p->ne[1], PG_MEM_CATEGORY_OPTIM);
        if (!fresh[j] ||
            pg_tensor_write(fresh[j], vals[j], PG_DTYPE_F64, p->ne[0], p->ne[1], 1, p->ne[0])) {
            for (int64_t q = 0; q <= j; q++) pg_tensor_release(fresh[q]);
            free(fresh);
            return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", where);
        }
    }
    if (!with_null) drop_accumulators(o);
    for (int64_t j = 0; j < n_vals; j++) {
        int64_t i = with_null ? j / per : j % o->n;
        int s = with_null ? (int)(j % per) : (int)(j / o->n);
        pg_tensor_release(o->state[i][s]);
        o->state[i][s] = fresh[j];
    }
    free(fresh);
    if (o->kind == PG_OPTIM_KIND_ADAM || with_null) o->t = (int64_t)t;
    o->accum_count = (int64_t)accum_count;
    return 0;
}

/* load_state's write, all or nothing: vals[s * n + i] is slot s of parameter i (column-major
 * doubles of the parameter's shape; SGD 1 slot, Adam 2). The accumulators are dropped: they are
 * not part of a state. */
int pg_optim_load(pg_optim *o, const double *const *vals, int64_t n_vals, double t,
                  double accum_count)
{
    if (!o) return pg_fail(PG_STATUS_ERR_ARG, "optimizer load_state(): NULL optimizer");
    int ns = o->kind == PG_OPTIM_KIND_ADAM ? 2 : 1;
    if (n_vals != ns * o->n || (n_vals > 0 && !vals))
        return pg_fail(PG_STATUS_ERR_ARG,
                       "optimizer load_state(): %lld slot values for %lld parameters",
                       (long long)n_vals, (long long)o->n);
    return load_slots(o, vals, n_vals, ns, 0, t, accum_count, 0, "optimizer load_state()");
}

int pg_optim_load_file(pg_optim *o, const double *const *vals, int64_t n_vals, double t,
                       double accum_count, int check_only)
{
    if (!o) return pg_fail(PG_STATUS_ERR_ARG, "optimizer state: NULL optimizer");
    int per = o->kind == PG_OPTIM_KIND_ADAM ? 3 : 2;
    if (n_vals != per * o->n || (n_vals > 0 && !vals))
        return pg_fail(PG_STATUS_ERR_ARG, "optimizer state: %lld slot values for %lld parameters",
                       (long long)n_vals, (long long)o->n);
    return load_slots(o, vals, n_vals, per, 1, t, accum_count, check_only, "optimizer state");
}

int pg_values_fit(const double *v, int64_t n, int dtype, const char *what)
{
    if (n > 0 && !v) return pg_fail(PG_STATUS_ERR_ARG, "pg_values_fit(): NULL values");
    if (dtype != PG_DTYPE_F32) return 0;
    for (int64_t e = 0; e < n; e++)
        if (isfinite(v[e]) && fabs(v[e]) > FLT_MAX)
            return pg_fail(
                PG_STATUS_ERR_VALUE,
                "%s holds %s (element %lld), outside the f32 range (magnitude at most %.8g)",
                what ? what : "the value", pg_num(v[e]), (long long)e + 1, (double)FLT_MAX);
    return 0;
}

static pg_tensor *grad_of(pg_tensor *p, pg_gradmap *grads)
{
    return grads ? pg_gradmap_get(grads, p) : p->grad;
}

/* Applies one update to parameter i with gradient g / gdiv (gdiv: k when averaging k calls, else 1;
 * ggmlR divides, and a division by 1 is exact). */
static int update(pg_optim *o, int64_t i, const pg_tensor *g, double gscale)
{
    pg_tensor *p = o->params[i];
    int64_t N = pg_numel(p);
    pg_bump(p); /* a tape recorded before this step no longer matches the weights */
    if (o->kind == PG_OPTIM_KIND_SGD) {
        pg_tensor *v = o->momentum > 0 ? slot(o, i, 0) : NULL;
        if (o->momentum > 0 && !v)
            return pg_fail(PG_STATUS_ERR_NOMEM, "optimizer_sgd: out of memory");
        PG_DISPATCH(p->dtype, {
            T *w = pg_data(p);
            const T *gp = pg_data(g);
            const T lr = (T)o->lr, wd = (T)o->weight_decay, mu = (T)o->momentum, gs = (T)gscale;
            if (!v) {
                for (int64_t k = 0; k < N; k++) w[k] -= lr * (gp[k] / gs + wd * w[k]);
            } else {
                T *vp = pg_data(v);
                int nest = o->nesterov != 0;
                for (int64_t k = 0; k < N; k++) {
                    T gk = gp[k] / gs + wd * w[k];
                    vp[k] = mu * vp[k] + gk;
                    w[k] -= lr * (nest ? gk + mu * vp[k] : vp[k]);
                }
            }
        });
    } else {
        pg_tensor *m = slot(o, i, 0), *v = slot(o, i, 1);
        if (!m || !v) return pg_fail(PG_STATUS_ERR_NOMEM, "optimizer_adam: out of memory");
        double bc1 = 1 - pow(o->beta1, (double)o->t), bc2 = 1 - pow(o->beta2, (double)o->t);
        /* w -= lr * (m / bc1) / (sqrt(v / bc2) + eps), as  w -= m * (lr / bc1) / (sqrt(v) * bc2^-1/2 + eps):
         * one square root and one division per element. */
        double sc = o->lr / bc1, rc2 = 1 / sqrt(bc2), decay = o->lr * o->weight_decay;
        adam_job a = {
            p->dtype == PG_DTYPE_F32,
            pg_simd_level(),
            N,
            pg_data(p),
            pg_data(m),
            pg_data(v),
            pg_data(g),
            {o->beta1, 1 - o->beta1, o->beta2, 1 - o->beta2, o->eps, gscale, sc, rc2, decay}};
        pg_par_for((N + ADAM_BLOCK - 1) / ADAM_BLOCK, ADAM_MIN_BLOCKS, adam_range, &a);
    }
    return 0;
}

int pg_optim_step(pg_optim *o, pg_gradmap *grads) { PG_GRAD_LOCKED(step_locked(o, grads, 0)); }

int pg_optim_step_sum(pg_optim *o, pg_gradmap *grads) { PG_GRAD_LOCKED(step_locked(o, grads, 1)); }

static void drop_accumulators(pg_optim *o)
{
    int as = acc_slot(o);
    for (int64_t i = 0; i < o->n; i++) {
        pg_tensor_release(o->state[i][as]);
        o->state[i][as] = NULL;
    }
}

static int check_grads(pg_optim *o, pg_gradmap *grads)
{
    for (int64_t i = 0; i < o->n; i++) {
        pg_tensor *g = grad_of(o->params[i], grads);
        if (g &&
            (g->ne[0] != o->params[i]->ne[0] || g->ne[1] != o->params[i]->ne[1] ||
             g->dtype != o->params[i]->dtype))
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "optimizer step: gradient %s does not match parameter %lld %s",
                           pg_desc(g), (long long)i + 1, pg_desc(o->params[i]));
    }
    return 0;
}

/* An update that would change nothing must not report success nor count (issue 19): a loss
 * computed off the tape, or another model's optimizer. Gradients for some parameters are fine
 * (frozen or unused parameters keep their values). An empty optimizer has nothing to miss. */
static int no_grads(pg_optim *o, pg_gradmap *grads)
{
    if (o->n == 0) return 0;
    for (int64_t i = 0; i < o->n; i++)
        if (grad_of(o->params[i], grads)) return 0;
    return pg_fail(
        PG_STATUS_ERR_STATE,
        "%s step(): no gradient for any of its %lld parameter(s): nothing to update (was the "
        "loss computed on a tape from these parameters, and backward() called? is this the model's "
        "optimizer?)",
        o->kind == PG_OPTIM_KIND_ADAM ? "optimizer_adam" : "optimizer_sgd", (long long)o->n);
}

/* sum: add this call's gradients into the accumulator (the first of a period is copied, so the
 * sum has the bits of backward()'s .grad sums) before counting; the k-th call applies it. */
static int step_locked(pg_optim *o, pg_gradmap *grads, int sum)
{
    if (!o) return -pg_fail(PG_STATUS_ERR_ARG, "optimizer step: NULL optimizer");
    const int64_t k = o->accumulate_steps;
    const int as = acc_slot(o);
    if (sum && k > 1) {
        if (check_grads(o, grads) || no_grads(o, grads)) return -pg_last_status();
        for (int64_t i = 0; i < o->n; i++) { /* allocate first: a failed call changes nothing */
            pg_tensor *g = grad_of(o->params[i], grads);
            if (g && !o->state[i][as] && !slot(o, i, as))
                return -pg_fail(PG_STATUS_ERR_NOMEM,
                                "optimizer: out of memory for the accumulator");
        }
        for (int64_t i = 0; i < o->n; i++) {
            pg_tensor *g = grad_of(o->params[i], grads), *a = o->state[i][as];
            if (!g) continue;
            int64_t N = pg_numel(a);
            int fresh = o->accum_count == 0;
            PG_DISPATCH(a->dtype, {
                T *ap = pg_data(a);
                const T *gp = pg_data(g);
                if (fresh) memcpy(ap, gp, (size_t)N * sizeof(T));
                else
                    for (int64_t e = 0; e < N; e++) ap[e] += gp[e];
            });
        }
    }
    if (k > 1 && o->accum_count + 1 < k) { /* ggmlR: count only, read nothing */
        o->accum_count++;
        return 0;
    }
    if (!sum && check_grads(o, grads)) return -pg_last_status();
    if (!(sum && k > 1) && no_grads(o, grads)) return -pg_last_status();
    double div = (k > 1 && o->average) ? (double)k : 1.0;
    if (o->kind == PG_OPTIM_KIND_ADAM) o->t++;
    for (int64_t i = 0; i < o->n; i++) {
        pg_tensor *g = (sum && k > 1) ? o->state[i][as] : grad_of(o->params[i], grads);
        if (g && update(o, i, g, div)) return -PG_STATUS_ERR_NOMEM;
    }
    if (k > 1) o->accum_count = 0;
    drop_accumulators(o);
    return 1;
}

int pg_optim_zero_grad(pg_optim *o) { PG_GRAD_LOCKED(zero_grad_locked(o)); }

static int zero_grad_locked(pg_optim *o)
{
    if (!o) return pg_fail(PG_STATUS_ERR_ARG, "zero_grad: NULL optimizer");
    for (int64_t i = 0; i < o->n; i++) pg_tensor_set_grad(o->params[i], NULL);
    pg_tape_clear_used();
    return 0;
}
