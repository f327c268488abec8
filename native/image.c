/* pyggmlr C core: the image shape a tensor may carry (pg_api_image.h). */
#include "pg.h"

#include <string.h>

int pg_tensor_image_shape(pg_tensor *t, int64_t *out)
{
    if (pg_not_live(t, "ag_image_shape", "x")) return -PG_STATUS_ERR_ARG;
    if (t->img[0] <= 0) return 0;
    memcpy(out, t->img, sizeof t->img);
    return 1;
}

int pg_tensor_set_image_shape(pg_tensor *t, const int64_t *shape, const char *fn)
{
    if (!fn) fn = "ag_image_shape<-";
    if (pg_not_live(t, fn, "x")) return PG_STATUS_ERR_ARG;
    if (!shape) {
        memset(t->img, 0, sizeof t->img);
        return PG_STATUS_OK;
    }
    for (int i = 0; i < 3; i++)
        if (shape[i] < 1)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: shape must be three whole numbers >= 1 (W, H, C), got (%lld, "
                           "%lld, %lld)",
                           fn, (long long)shape[0], (long long)shape[1], (long long)shape[2]);
    int64_t wh, whc;
    if (__builtin_mul_overflow(shape[0], shape[1], &wh) ||
        __builtin_mul_overflow(wh, shape[2], &whc) || whc != t->ne[0])
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: shape (W %lld, H %lld, C %lld) needs W * H * C rows, but x is %s", fn,
                       (long long)shape[0], (long long)shape[1], (long long)shape[2], pg_desc(t));
    memcpy(t->img, shape, sizeof t->img);
    return PG_STATUS_OK;
}

/* the images' strided copy with C = 1, H = t, W = f (rows f + F*step), then no image tag */
pg_tensor *pg_sequences(const double *data, int64_t n, int64_t t, int64_t f, const int64_t *st,
                        int dtype, const char *fn)
{
    if (!fn) fn = "ag_sequences";
    if (!data || !st || n < 0 || t < 1 || f < 1)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: x must hold N >= 0 sequences of T >= 1 steps of F >= 1 "
                            "features, got (N %lld, T %lld, F %lld)",
                            fn, (long long)n, (long long)t, (long long)f);
    const int64_t st4[4] = {st[0], 0, st[1], st[2]};
    pg_tensor *out = pg_images(data, n, 1, t, f, st4, dtype, fn);
    if (out) memset(out->img, 0, sizeof out->img);
    return out;
}
