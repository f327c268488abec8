/* Indexing (pg_api_index.h): one gather by column-major element positions. Python's t[i, j],
 * slices, integer lists and boolean masks all reduce to a position list, so one op with one
 * backward covers them; the positions live in a saved f64 buffer so a replay reads the same. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include "pg.h"

static int take_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *pos = n->saved[0], *out = n->out;
    const double *ip = pg_data(pos);
    int64_t m = pg_numel(out);
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *op = pg_data(out);
        for (int64_t k = 0; k < m; k++) op[k] = xp[(int64_t)ip[k]];
    });
    return 0;
}

int pg_take_bw_strided(pg_node *n, pg_tensor *g, int64_t stride)
{
    pg_tensor *x = n->in[0], *pos = n->saved[0];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t N = pg_numel(x), m = pg_numel(g);
    const double *ip = pg_data(pos);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *gp = pg_data(g);
        if (!acc)
            for (int64_t i = 0; i < N; i++) d[i] = 0;
        for (int64_t k = 0; k < m; k++) d[k * stride + (int64_t)ip[k]] += gp[k];
    });
    return 0;
}

static int take_bw(pg_node *n, pg_tensor *g) { return pg_take_bw_strided(n, g, 0); }

pg_tensor *pg_take(pg_tensor *x, const int64_t *pos, int64_t n, int64_t nrow, int64_t ncol)
{
    if (pg_not_live(x, "indexing", "x")) return NULL;
    if (nrow < 0 || ncol < 0 || n != nrow * ncol)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "indexing: %lld positions for a [%lldx%lld] result", (long long)n,
                            (long long)nrow, (long long)ncol);
    if (n && !pos) return pg_fail_null(PG_STATUS_ERR_ARG, "indexing: positions are NULL");
    int64_t N = pg_numel(x);
    for (int64_t k = 0; k < n; k++)
        if (pos[k] < 0 || pos[k] >= N)
            return pg_fail_null(PG_STATUS_ERR_VALUE,
                                "indexing: position %lld out of range 0..%lld of %s",
                                (long long)pos[k], (long long)N - 1, pg_desc(x));
    return pg_positions_op("take", take_fw, take_bw, x, pos, n, nrow, ncol, n ? n : 1);
}

pg_tensor *pg_positions_op(const char *label, pg_fw_fn fw, pg_bw_fn bw, pg_tensor *x,
                           const int64_t *pos, int64_t n, int64_t nrow, int64_t ncol, int64_t width)
{
    pg_tensor *out = pg_new(x->dtype, nrow, ncol, PG_MEM_CATEGORY_OTHER),
              *ids = pg_new(PG_DTYPE_F64, 1, width, PG_MEM_CATEGORY_SAVED);
    if (!out || !ids) {
        if (out) pg_tensor_release(out);
        if (ids) pg_tensor_release(ids);
        return NULL;
    }
    double *ip = pg_data(ids);
    for (int64_t k = 0; k < n; k++) ip[k] = (double)pos[k];
    pg_tensor *in[1] = {x};
    return pg_op_run(label, fw, bw, out, 1, in, NULL, NULL, 1, &ids);
}
