/* The loss options of pg_api_loss.h (issue 31): pos_weight for both BCE losses and softmax
 * cross-entropy's weight / ignore_index / label_smoothing; gradients against central
 * differences (f64), a closed form, the refusals, and nothing left alive. */
#include <math.h>
#include <string.h>
#include "check.h"

static pg_tensor *f_bcel_pw(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *t = pg_unary(PG_UNARY_OP_SIGMOID, in[1]),
              *o = pg_bce_logits_loss_pw(in[0], t, in[2]);
    REL(t);
    return o;
}

static pg_tensor *f_bce_pw(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *p = pg_unary(PG_UNARY_OP_SIGMOID, in[0]), *t = pg_unary(PG_UNARY_OP_SIGMOID, in[1]);
    pg_tensor *o = pg_bce_loss_pw(p, t, in[2]);
    REL(p);
    REL(t);
    return o;
}

/* ids 0, 2, 1, 2 with class 2 ignored: two kept columns */
static pg_tensor *f_ce_ids(pg_tensor **in, const void *c)
{
    (void)c;
    const double ids[4] = {0, 2, 1, 2};
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 4, ids, PG_DTYPE_F64, 1, 1);
    pg_tensor *o = pg_softmax_ce_loss_opt(in[0], y, 1, in[1], 1, 2, 0.2);
    REL(y);
    return o;
}

static pg_tensor *f_ce_soft(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *t = pg_unary(PG_UNARY_OP_SOFTMAX, in[1]);
    pg_tensor *o = pg_softmax_ce_loss_opt(in[0], t, 0, in[2], 0, 0, 0.3);
    REL(t);
    return o;
}

void test_loss_opt(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
        int64_t pwc[] = {3, 4, 3, 4, 3, 1}, pw1[] = {3, 4, 3, 4, 1, 1}, ce[] = {3, 4, 3, 1};
        int64_t ces[] = {3, 4, 3, 4, 3, 1};
        gradcheck("bce_with_logits pos_weight", f_bcel_pw, NULL, 3, pwc, 4, 1, dt);
        gradcheck("bce_with_logits pos_weight 1x1", f_bcel_pw, NULL, 3, pw1, 4, 1, dt);
        gradcheck("bce pos_weight", f_bce_pw, NULL, 3, pwc, 4, 1, dt);
        gradcheck("softmax_ce ids options", f_ce_ids, NULL, 2, ce, 2, 1, dt);
        gradcheck("softmax_ce soft options", f_ce_soft, NULL, 3, ces, 4, 1, dt);
    }
    /* closed form: one column, logits 0 (p = 1/2 each), id 1, weight {1, 3}, smoothing 0.5:
     * a = {0.25 * 1, 0.25 * 3 + 0.5 * 3} = {0.25, 2.25}, loss (0.25 + 2.25) log 2 / 3 */
    const double w2[2] = {1, 3}, one[1] = {1};
    pg_tensor *x = pg_tensor_full(PG_DTYPE_F64, 2, 1, 0),
              *w = pg_tensor_new(PG_DTYPE_F64, 2, 1, w2, PG_DTYPE_F64, 1, 2);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 1, one, PG_DTYPE_F64, 1, 1);
    pg_tensor *o = pg_softmax_ce_loss_opt(x, y, 1, w, 0, 0, 0.5);
    CHECK(o && fabs(read1(o) - 2.5 * log(2.0) / 3) < 1e-15);
    REL(o);
    /* refusals: the core's texts */
    pg_tensor *w3 = pg_tensor_full(PG_DTYPE_F64, 3, 1, 1),
              *neg = pg_tensor_full(PG_DTYPE_F64, 2, 1, -1);
    CHECK_ERR(!pg_softmax_ce_loss_opt(x, y, 1, w3, 0, 0, 0), PG_STATUS_ERR_SHAPE,
              "weight is [3x1] f64; give one value per class (2)");
    CHECK_ERR(!pg_softmax_ce_loss_opt(x, y, 1, neg, 0, 0, 0), PG_STATUS_ERR_VALUE,
              "weight must be finite and >= 0, got -1");
    CHECK_ERR(!pg_softmax_ce_loss_opt(x, y, 1, NULL, 0, 0, 1), PG_STATUS_ERR_VALUE,
              "label_smoothing must be a number in [0, 1), got 1");
    CHECK_ERR(!pg_softmax_ce_loss_opt(x, y, 1, NULL, 1, 0.5, 0), PG_STATUS_ERR_VALUE,
              "ignore_index must be a whole number, got 0.5");
    CHECK_ERR(!pg_softmax_ce_loss_opt(x, x, 0, NULL, 1, 0, 0), PG_STATUS_ERR_VALUE,
              "ignore_index applies to class ids");
    CHECK_ERR(!pg_bce_logits_loss_pw(x, x, w3), PG_STATUS_ERR_SHAPE,
              "give one value per row (2) or a single value");
    CHECK_ERR(!pg_bce_logits_loss_pw(x, x, neg), PG_STATUS_ERR_VALUE,
              "pos_weight must be finite and >= 0, got -1");
    REL(w3);
    REL(neg);
    REL(x);
    REL(w);
    REL(y);
}
