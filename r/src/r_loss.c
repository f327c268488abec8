/* .Call glue for the losses of native/ops_loss2.c: pred is an ag_tensor or R numbers, target
 * and weight become constants of pred's dtype. Temporaries are released before any R error. */
#include "r_util.h"

typedef struct {
    pg_tensor *t[3];
    int tmp[3];
    int n;
} r_ops3;

static void ops_release(r_ops3 *o)
{
    for (int i = 0; i < o->n; i++)
        if (o->tmp[i]) pg_tensor_release(o->t[i]);
}

/* operands in order; the first tensor operand's dtype (else the default) for R numbers */
static void ops_get(r_ops3 *o, SEXP *x, const char **names, int n, const char *op)
{
    int d = -1;
    for (int i = 0; i < n && d < 0; i++) d = r_operand_dtype(x[i]);
    if (d < 0) d = pg_default_dtype();
    o->n = 0;
    for (int i = 0; i < n; i++) {
        o->t[i] = r_operand(x[i], d, op, names[i], &o->tmp[i]);
        if (o->t[i] == NULL) {
            ops_release(o);
            r_fail();
        }
        o->n = i + 1;
    }
}

static SEXP done(r_ops3 *o, pg_tensor *out)
{
    ops_release(o);
    return r_wrap_tensor(out);
}

static const char *PT[3] = {"pred", "target", "weight"};
static const char *LT[2] = {"logits", "target"};

typedef pg_tensor *(*loss2_fn)(pg_tensor *, pg_tensor *);

/* a loss of two operands: a, b as operands named names[0], names[1] */
static SEXP loss2(SEXP a, SEXP b, const char **names, const char *op, loss2_fn f)
{
    SEXP x[2] = {a, b};
    r_ops3 o;
    ops_get(&o, x, names, 2, op);
    return done(&o, f(o.t[0], o.t[1]));
}

SEXP R_pg_bce_loss(SEXP p, SEXP t)
{
    return loss2(p, t, PT, "ag_binary_cross_entropy_loss", pg_bce_loss);
}

SEXP R_pg_bce_logits_loss(SEXP l, SEXP t)
{
    return loss2(l, t, LT, "ag_bce_with_logits_loss", pg_bce_logits_loss);
}

SEXP R_pg_huber_loss(SEXP p, SEXP t, SEXP delta)
{
    SEXP x[2] = {p, t};
    r_ops3 o;
    ops_get(&o, x, PT, 2, "ag_huber_loss");
    return done(&o, pg_huber_loss(o.t[0], o.t[1], Rf_asReal(delta)));
}

SEXP R_pg_mae_loss(SEXP p, SEXP t) { return loss2(p, t, PT, "ag_mae_loss", pg_mae_loss); }

SEXP R_pg_weighted_mse_loss(SEXP p, SEXP t, SEXP w)
{
    SEXP x[3] = {p, t, w};
    r_ops3 o;
    ops_get(&o, x, PT, 3, "ag_weighted_mse_loss");
    return done(&o, pg_weighted_mse_loss(o.t[0], o.t[1], o.t[2]));
}

/* the BCE losses with pos_weight (pg_bce_loss_pw / pg_bce_logits_loss_pw): pos_weight an ag_tensor
 * or R numbers (a vector becomes a column of pred's dtype) */
static const char *PTW[3] = {"pred", "target", "pos_weight"};
static const char *LTW[3] = {"logits", "target", "pos_weight"};

SEXP R_pg_bce_loss_pw(SEXP p, SEXP t, SEXP w)
{
    SEXP x[3] = {p, t, w};
    r_ops3 o;
    ops_get(&o, x, PTW, 3, "ag_binary_cross_entropy_loss");
    return done(&o, pg_bce_loss_pw(o.t[0], o.t[1], o.t[2]));
}

SEXP R_pg_bce_logits_loss_pw(SEXP l, SEXP t, SEXP w)
{
    SEXP x[3] = {l, t, w};
    r_ops3 o;
    ops_get(&o, x, LTW, 3, "ag_bce_with_logits_loss");
    return done(&o, pg_bce_logits_loss_pw(o.t[0], o.t[1], o.t[2]));
}
