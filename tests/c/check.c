/* The shared checks and value helpers of the C test driver (declared in check.h): counters,
 * a deterministic generator, random tensors and the finite-difference gradient check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

int n_checks, n_failed;

void check_(int ok, const char *what, const char *file, int line)
{
    n_checks++;
    if (!ok) {
        n_failed++;
        fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", file, line, what,
                pg_last_error());
    }
}

/* deterministic values in [-1, 1] */
uint64_t lcg = 42;
double urand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

pg_tensor *rnd(int dtype, int64_t r, int64_t c, double lo_abs)
{
    int64_t n = r * c;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        double x = urand();
        v[i] = x >= 0 ? x + lo_abs : x - lo_abs; /* keep away from 0 when asked (div, log, pow) */
    }
    pg_tensor *t = pg_tensor_new(dtype, r, c, v, PG_DTYPE_F64, 1, r);
    free(v);
    return t;
}

pg_tensor *rnd_pos(int dtype, int64_t r, int64_t c)
{
    pg_tensor *t = rnd(PG_DTYPE_F64, r, c, 0.2);
    double *d = pg_tensor_data(t);
    for (int64_t i = 0; i < r * c; i++) d[i] = fabs(d[i]) + 0.1;
    pg_tensor *o = pg_tensor_cast(t, dtype);
    REL(t);
    return o;
}

double read1(pg_tensor *t)
{
    double v = NAN;
    pg_tensor_read(t, &v, PG_DTYPE_F64);
    return v;
}

static pg_tensor *weighted_loss(op_fn f, pg_tensor **in, const void *ctx, pg_tensor *w)
{
    pg_tensor *out = f(in, ctx);
    if (!out) return NULL;
    pg_tensor *prod = pg_mul(out, w);
    REL(out);
    if (!prod) return NULL;
    pg_tensor *loss = pg_sum(prod, 0);
    REL(prod);
    return loss;
}

/* Forward + backward in the given dtype; in f64 also compare the gradient of every input
 * that requires grad with central differences. shapes: n_in pairs (rows, cols); pos: inputs
 * drawn positive (log, pow, div). */
void gradcheck(const char *name, op_fn f, const void *ctx, int n_in, const int64_t *shapes,
               unsigned pos_mask, unsigned grad_mask, int dtype)
{
    pg_tensor *in[PG_MAX_IN] = {0};
    for (int i = 0; i < n_in; i++) {
        in[i] = (pos_mask >> i & 1) ? rnd_pos(dtype, shapes[2 * i], shapes[2 * i + 1])
                                    : rnd(dtype, shapes[2 * i], shapes[2 * i + 1], 0.05);
        if (grad_mask >> i & 1) pg_tensor_set_requires_grad(in[i], 1);
    }
    pg_tensor *probe = f(in, ctx);
    if (!probe) {
        fprintf(stderr, "%s: forward failed: %s\n", name, pg_last_error());
        CHECK(0);
        goto done;
    }
    pg_tensor *w = rnd(dtype, pg_tensor_nrow(probe), pg_tensor_ncol(probe), 0.0);
    REL(probe);

    CHECK(pg_tape_begin() == 0);
    pg_tensor *loss = weighted_loss(f, in, ctx, w);
    CHECK(pg_tape_end() == 0);
    CHECK(loss != NULL);
    pg_gradmap *gm = loss ? pg_backward(loss) : NULL;
    CHECK(gm != NULL);
    if (gm && dtype == PG_DTYPE_F64) {
        int old = pg_tape_set_enabled(0);
        for (int i = 0; i < n_in; i++) {
            if (!(grad_mask >> i & 1)) continue;
            pg_tensor *g = pg_gradmap_get(gm, in[i]);
            int64_t n = pg_tensor_numel(in[i]);
            if (n == 0) continue;
            if (!g) fprintf(stderr, "%s: no gradient for input %d\n", name, i);
            CHECK(g != NULL);
            if (!g) continue;
            CHECK(pg_gradmap_get_id(gm, pg_tensor_id(in[i])) == g);
            double *x = pg_tensor_data(in[i]);
            const double *ga = pg_tensor_data(g);
            double worst = 0;
            for (int64_t k = 0; k < n; k++) {
                double h = 1e-6, x0 = x[k];
                x[k] = x0 + h;
                pg_tensor *lp = weighted_loss(f, in, ctx, w);
                x[k] = x0 - h;
                pg_tensor *lm = weighted_loss(f, in, ctx, w);
                x[k] = x0;
                double num = (read1(lp) - read1(lm)) / (2 * h);
                REL(lp);
                REL(lm);
                double err = fabs(num - ga[k]) / (1.0 + fabs(num));
                if (err > worst) worst = err;
            }
            if (!(worst < 1e-5))
                fprintf(stderr, "%s: input %d gradient error %g\n", name, i, worst);
            CHECK(worst < 1e-5);
        }
        pg_tape_set_enabled(old);
    }
    /* backward twice on the same tape: the same gradients again, .grad accumulates */
    if (gm) {
        pg_gradmap *gm2 = pg_backward(loss);
        CHECK(gm2 != NULL);
        CHECK(pg_gradmap_size(gm2) == pg_gradmap_size(gm));
        pg_gradmap_free(gm2);
    }
    pg_gradmap_free(gm);
    REL(loss);
    REL(w);
    pg_tape_clear();
done:
    for (int i = 0; i < n_in; i++) REL(in[i]);
}
