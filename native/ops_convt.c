/* Transposed convolution (pg_api_conv.h's pg_conv_transpose) and the layers' constructor check
 * (pg_conv_check). A transposed convolution is the adjoint of the convolution from its output
 * back to its input: the node keeps that convolution's geometry (C = C_out, H x W = the output,
 * Co = C_in, OH x OW = the input), so forward is conv's input gradient (GEMM, then col2im) and
 * backward is conv's forward (dx) and weight gradient (dW), exactly. */
#include "pg_fp.h" /* first: no FMA contraction, one vectoriser model (R = Python bits) */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "conv_internal.h"

typedef pg_conv_geom geom;

/* ip[3] holds the input's H and W (each < 2^31) */
static geom unpack(const pg_node *n)
{
    geom q;
    pg_conv_geom_unpack(n, &q);
    q.OH = n->ip[3] >> 32, q.OW = n->ip[3] & 0xffffffff;
    return q;
}

static int convt_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2], *out = n->out;
    const geom q = unpack(n);
    const int64_t N = x->ne[1], Cig = q.Co / q.g, Cog = q.C / q.g, P = q.OH * q.OW;
    const int64_t Kg = Cog * q.kh * q.kw, Y = q.C * q.H * q.W, pw = pg_conv_pointwise(&q);
    PG_DISPATCH(x->dtype, {
        T *col = pw ? NULL : pg_scratch((size_t)(P * Kg) * sizeof(T));
        if (!pw && !col) return -1;
        const T *wp = pg_data(w), *bp = b ? pg_data(b) : NULL;
        for (int64_t j = 0; j < N; j++) {
            T *xs = (T *)pg_data(x) + j * q.Co * P, *ys = (T *)pg_data(out) + j * Y;
            if (!pw) memset(ys, 0, (size_t)Y * sizeof(T));
            for (int64_t gi = 0; gi < q.g; gi++) { /* col = X_g W_g, folded onto the output */
                T *dst = pw ? ys + gi * Cog * P : col;
                pg_gemm(x->dtype, 0, 0, P, Kg, Cig, 1.0, xs + gi * Cig * P, P, wp + gi * Cig, q.Co,
                        0.0, dst, P);
                if (!pw) PG_IM2COL(&q, gi, ys, col, 1);
            }
            for (int64_t c = 0; bp && c < q.C; c++) {
                T *yc = ys + c * q.H * q.W, bc = bp[c];
                for (int64_t i = 0; i < q.H * q.W; i++) yc[i] += bc;
            }
        }
    });
    return 0;
}

static int convt_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2];
    const geom q = unpack(n);
    const int64_t N = x->ne[1], Cig = q.Co / q.g, Cog = q.C / q.g, P = q.OH * q.OW;
    const int64_t Kg = Cog * q.kh * q.kw, Y = q.C * q.H * q.W, pw = pg_conv_pointwise(&q);
    void *sx = NULL, *sw = NULL, *sb = NULL;
    int ax = 0, aw = 0, ab = 0;
    int wx = pg_grad_slot_for(x, &sx, &ax), ww = pg_grad_slot_for(w, &sw, &aw);
    int wb = b ? pg_grad_slot_for(b, &sb, &ab) : 0;
    if (wx < 0 || ww < 0 || wb < 0) return -1;
    if (wb > 0) pg_conv_bias_grad(x->dtype, pg_data(g), N, q.C, q.H * q.W, sb, ab);
    if (wx <= 0 && ww <= 0) return 0;
    PG_DISPATCH(x->dtype, {
        const T *wp = pg_data(w);
        if (ww > 0 && !aw) memset(sw, 0, (size_t)(q.Co * Kg) * sizeof(T));
        T *col = pw ? NULL : pg_scratch((size_t)(P * Kg) * sizeof(T));
        if (!pw && !col) return -1;
        for (int64_t j = 0; j < N; j++) {
            T *gs = (T *)pg_data(g) + j * Y, *xs = (T *)pg_data(x) + j * q.Co * P;
            for (int64_t gi = 0; gi < q.g; gi++) {
                const T *a = pw ? gs + gi * Cog * P : col;
                if (!pw) PG_IM2COL(&q, gi, gs, col, 0);
                if (wx > 0) /* dX_g = col(dY)_g W_g^T */
                    pg_gemm(x->dtype, 0, 1, P, Cig, Kg, 1.0, a, P, wp + gi * Cig, q.Co,
                            ax ? 1.0 : 0.0, (T *)sx + j * q.Co * P + gi * Cig * P, P);
                if (ww > 0) /* dW_g += X_g^T col(dY)_g */
                    pg_gemm(x->dtype, 1, 0, Cig, Kg, P, 1.0, xs + gi * Cig * P, P, a, P, 1.0,
                            (T *)sw + gi * Cig, q.Co);
            }
        }
    });
    return 0;
}

/* ---- arguments ---- */

static int big(const char *fn, const geom *q)
{
    const int64_t v[] = {q->kh, q->kw, q->sh, q->sw, q->ph0, q->pw0, q->dh, q->dw};
    for (int i = 0; i < 8; i++)
        if (v[i] > 65535)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: kernel_size, stride, padding and dilation must be at most 65535",
                           fn);
    return 0;
}

/* stride, padding, dilation, output_padding of a; torch's rule: output_padding smaller than
 * the stride or the dilation */
static int steps(const char *fn, const double *a, int dims, geom *q, int64_t *oph, int64_t *opw)
{
    if (pg_conv_whole(fn, a, PG_CONV_SH, 1, &q->sh) ||
        pg_conv_whole(fn, a, PG_CONV_SW, 1, &q->sw) ||
        pg_conv_whole(fn, a, PG_CONV_DH, 1, &q->dh) ||
        pg_conv_whole(fn, a, PG_CONV_DW, 1, &q->dw) ||
        pg_conv_whole(fn, a, PG_CONV_PH, 0, &q->ph0) ||
        pg_conv_whole(fn, a, PG_CONV_PW, 0, &q->pw0) || pg_conv_whole(fn, a, PG_CONV_OPH, 0, oph) ||
        pg_conv_whole(fn, a, PG_CONV_OPW, 0, opw))
        return -1;
    if (a[PG_CONV_PAD_MODE] != PG_CONV_PAD_NUMBERS)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: padding must be numbers (torch's "
                       "ConvTranspose%dd takes no \"same\" or \"valid\")",
                       fn, dims);
    q->ph1 = q->ph0, q->pw1 = q->pw0;
    if (dims == 1 && *opw >= q->sw && *opw >= q->dw) /* H is 1: only the L side is the user's */
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: output_padding (%lld) must be smaller than the stride (%lld) or the "
                       "dilation (%lld)",
                       fn, (long long)*opw, (long long)q->sw, (long long)q->dw);
    if ((*oph >= q->sh && *oph >= q->dh) || (*opw >= q->sw && *opw >= q->dw))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: output_padding (%lld, %lld) must be smaller than the stride (%lld, "
                       "%lld) or the dilation (%lld, %lld)",
                       fn, (long long)*oph, (long long)*opw, (long long)q->sh, (long long)q->sw,
                       (long long)q->dh, (long long)q->dw);
    return big(fn, q);
}

/* x (C_in, H, W) -> the adjoint convolution's geometry (see the top); dims 1: H = 1 and kH = 1,
 * the texts in (C, L) */
static int geometry(const char *fn, pg_tensor *x, pg_tensor *w, pg_tensor *b, const double *a,
                    int dims, geom *q)
{
    geom in;
    int64_t oph, opw;
    memset(q, 0, sizeof *q);
    memset(&in, 0, sizeof in);
    const char *kd = dims == 1 ? "k" : "kH * kW";
    if (pg_conv_input(fn, x, a, dims, &in) || pg_conv_whole(fn, a, PG_CONV_GROUPS, 1, &q->g) ||
        steps(fn, a, dims, q, &oph, &opw))
        return -1;
    const int64_t Ci = in.C, cols = w->ne[1];
    if (Ci % q->g)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: groups = %lld must divide the input channels (%lld)", fn,
                       (long long)q->g, (long long)Ci);
    if (w->ne[0] != Ci)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: weight %s must have C_in = %lld rows ([C_in, (C_out / groups) * %s], "
                       "torch's weight reshaped (C_in, -1)) for x of %lld channels",
                       fn, pg_desc(w), (long long)Ci, kd, (long long)Ci);
    int given = a[PG_CONV_KH] != 0 || a[PG_CONV_KW] != 0;
    if (given) {
        if (pg_conv_whole(fn, a, PG_CONV_KH, 1, &q->kh) ||
            pg_conv_whole(fn, a, PG_CONV_KW, 1, &q->kw))
            return -1;
    } else if (b && b->ne[0] > 0 && b->ne[0] % q->g == 0 && cols % (b->ne[0] / q->g) == 0) {
        int64_t kk = cols / (b->ne[0] / q->g), k = (int64_t)llround(sqrt((double)kk));
        q->kh = dims == 1 ? 1 : k, q->kw = dims == 1 ? kk : k; /* C_out from the bias */
    } else {
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: give kernel_size: weight %s [C_in, (C_out / groups) * %s] does "
                       "not tell C_out from the kernel without a bias",
                       fn, pg_desc(w), kd);
    }
    if (big(fn, q)) return -1;
    if (cols == 0 || cols % (q->kh * q->kw)) {
        char k[64];
        if (dims == 1) snprintf(k, sizeof k, "%lld", (long long)q->kw);
        else snprintf(k, sizeof k, "%lld * %lld", (long long)q->kh, (long long)q->kw);
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: weight %s must be [C_in, (C_out / groups) * %s] = [%lld, "
                       "(C_out / %lld) * %s]",
                       fn, pg_desc(w), kd, (long long)Ci, (long long)q->g, k);
    }
    q->C = cols / (q->kh * q->kw) * q->g, q->Co = Ci, q->OH = in.H, q->OW = in.W;
    if (b && (b->ne[0] != q->C || b->ne[1] != 1))
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: bias %s must be [%lldx1], one per output channel",
                       fn, pg_desc(b), (long long)q->C);
    q->H = (in.H - 1) * q->sh - 2 * q->ph0 + q->dh * (q->kh - 1) + oph + 1;
    q->W = (in.W - 1) * q->sw - 2 * q->pw0 + q->dw * (q->kw - 1) + opw + 1;
    if (dims == 1 && q->W < 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: the output (L %lld) would be empty: input (C %lld, L %lld) with "
                       "padding %lld is too small for the kernel",
                       fn, (long long)q->W, (long long)Ci, (long long)in.W, (long long)q->pw0);
    if (q->H < 1 || q->W < 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: the output (H %lld, W %lld) would be empty: input (C %lld, H %lld, W "
                       "%lld) with padding (%lld, %lld) is too small for the kernel",
                       fn, (long long)q->H, (long long)q->W, (long long)Ci, (long long)in.H,
                       (long long)in.W, (long long)q->ph0, (long long)q->pw0);
    return 0;
}

pg_tensor *pg_conv_transpose(pg_tensor *x, pg_tensor *w, pg_tensor *b, const double *args, int dims,
                             const char *fn)
{
    if (!fn) fn = dims == 1 ? "ag_conv_transpose1d_op" : "ag_conv_transpose2d_op";
    if (pg_not_live(x, fn, "x") || pg_not_live(w, fn, "weight") ||
        (b && pg_not_live(b, fn, "bias")) || pg_same_dtype(fn, "x", x, "weight", w) ||
        (b && pg_same_dtype(fn, "x", x, "bias", b)))
        return NULL;
    if (!args || (dims != 1 && dims != 2))
        return pg_fail_null(PG_STATUS_ERR_ARG, "%s: bad arguments (args %p, dims %d)", fn,
                            (const void *)args, dims);
    geom q;
    if (geometry(fn, x, w, b, args, dims, &q)) return NULL;
    int64_t hw, rows;
    if (__builtin_mul_overflow(q.H, q.W, &hw) || __builtin_mul_overflow(hw, q.C, &rows) ||
        q.H > 2147483647 || q.W > 2147483647)
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "%s: the output is too large", fn);
    pg_tensor *out = pg_new(x->dtype, rows, x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    out->img[0] = q.W, out->img[1] = q.H, out->img[2] = q.C;
    double p[4];
    int64_t ip[4];
    pg_conv_geom_pack(&q, p, ip);
    ip[3] = q.OH << 32 | q.OW;
    pg_tensor *in[3] = {x, w, b};
    return pg_op_run(dims == 1 ? "conv_transpose1d" : "conv_transpose2d", convt_fw, convt_bw, out,
                     3, in, p, ip, 0, NULL);
}

/* ---- the layers' constructor check ---- */

static int whole(const char *fn, const char *arg, double v, double lo)
{
    char num[32];
    if (pg_is_whole(v) && v >= lo && v <= 2147483647.0) return 0;
    return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s must be an integer >= %g%s, got %s", fn, arg, lo,
                   pg_is_whole(v) && v > 2147483647.0 ? " and <= 2147483647 (R's integer range)"
                                                      : "",
                   pg_fmt_num(num, sizeof num, v));
}

int pg_conv_check(double in_channels, double out_channels, const double *a, int dims, int transpose,
                  const char *fn)
{
    static const struct {
        int i;
        double lo;
        const char *name;
    } P[] = {{PG_CONV_KH, 1, "kernel_size"},     {PG_CONV_KW, 1, "kernel_size"},
             {PG_CONV_SH, 1, "stride"},          {PG_CONV_SW, 1, "stride"},
             {PG_CONV_PH, 0, "padding"},         {PG_CONV_PW, 0, "padding"},
             {PG_CONV_DH, 1, "dilation"},        {PG_CONV_DW, 1, "dilation"},
             {PG_CONV_OPH, 0, "output_padding"}, {PG_CONV_OPW, 0, "output_padding"}};
    if (!fn)
        fn = transpose  ? (dims == 1 ? "ag_conv_transpose1d" : "ag_conv_transpose2d")
            : dims == 1 ? "ag_conv1d"
                        : "ag_conv2d";
    if (!a || (dims != 1 && dims != 2))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: bad arguments (dims %d)", fn, dims);
    if (whole(fn, "in_channels", in_channels, 1) || whole(fn, "out_channels", out_channels, 1) ||
        whole(fn, "groups", a[PG_CONV_GROUPS], 1))
        return pg_last_status();
    int64_t ci = (int64_t)in_channels, co = (int64_t)out_channels, g = (int64_t)a[PG_CONV_GROUPS];
    if (ci % g || co % g)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: in_channels (%lld) and out_channels (%lld) must be divisible by "
                       "groups (%lld)",
                       fn, (long long)ci, (long long)co, (long long)g);
    const int mode = (int)a[PG_CONV_PAD_MODE];
    for (int k = 0; k < 10; k++) {
        if ((P[k].i == PG_CONV_PH || P[k].i == PG_CONV_PW) && mode != PG_CONV_PAD_NUMBERS) continue;
        if ((P[k].i == PG_CONV_OPH || P[k].i == PG_CONV_OPW) && !transpose) continue;
        if (whole(fn, P[k].name, a[P[k].i], P[k].lo)) return pg_last_status();
        if (P[k].i != PG_CONV_OPH && P[k].i != PG_CONV_OPW &&
            a[P[k].i] > 65535) /* the op's limit */
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: kernel_size, stride, padding and dilation must be at most 65535",
                           fn);
    }
    if (mode == PG_CONV_PAD_SAME && (a[PG_CONV_SH] != 1 || a[PG_CONV_SW] != 1)) {
        char s[64];
        if (dims == 1 || a[PG_CONV_SH] == a[PG_CONV_SW])
            snprintf(s, sizeof s, "%.15g", a[PG_CONV_SW]);
        else snprintf(s, sizeof s, "(%.15g, %.15g)", a[PG_CONV_SH], a[PG_CONV_SW]);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: padding = \"same\" needs stride 1 (as torch), got stride %s", fn, s);
    }
    if (transpose) {
        geom q;
        int64_t oph, opw;
        memset(&q, 0, sizeof q);
        if (steps(fn, a, dims, &q, &oph, &opw)) return pg_last_status();
    }
    if (a[PG_CONV_HAS_SHAPE] != 0) {
        for (int i = 0; i < 3; i++)
            if (whole(fn, "input_shape", a[i], 1)) return pg_last_status();
        if ((int64_t)a[PG_CONV_C] != ci) {
            char s[96];
            if (dims == 1) snprintf(s, sizeof s, "(%.15g, %.15g)", a[PG_CONV_C], a[PG_CONV_W]);
            else
                snprintf(s, sizeof s, "(%.15g, %.15g, %.15g)", a[PG_CONV_C], a[PG_CONV_H],
                         a[PG_CONV_W]);
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: input_shape %s has %lld channels but in_channels = %lld", fn, s,
                           (long long)a[PG_CONV_C], (long long)ci);
        }
    }
    return 0;
}
