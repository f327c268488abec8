/* pyggmlr C core: pooling of image batches (ops_pool.c), once for R and Python.
 *
 * x is [C*H*W, N]: each column one image in numpy's (C, H, W) C-order (W fastest), as
 * pg_api_image.h describes; a 1-D signal is an image with H = 1. Sizes arrive as doubles so the
 * core refuses non-integer ones with the one text both languages raise.
 *
 * Max pooling's rule for ties and NaN (torch's CPU rule): each window is scanned row by row,
 * left to right; a value replaces the running maximum when it is larger or NaN. So ties give the
 * gradient to the first maximum, and a window holding NaN outputs NaN with its gradient at the
 * last NaN. Padding is -Inf for max (never chosen) and zeros counted in the divisor for average
 * (torch's count_include_pad = True); ceil_mode is off: out = floor((in + 2p - k) / s) + 1. */

enum pg_pool_kind { PG_POOL_KIND_MAX = 0, PG_POOL_KIND_AVG = 1, PG_POOL_KIND_COUNT };

/* Max or average pooling. dims 2: shape (C, H, W) and kernel, stride, padding as (H, W);
 * dims 1: shape (C, L) and one value each. shape NULL: x's image tag (a tag with H > 1 is
 * refused by dims 1); stride NULL: the kernel. fn: the user-facing function for the messages
 * (NULL: "ag_max_pool2d_op" ...). Refused (ERR_VALUE / ERR_SHAPE, naming fn and the argument):
 * sizes that are not whole numbers (kernel, stride >= 1, padding >= 0), padding more than half
 * the kernel (torch's rule), a kernel larger than the padded input, x's rows not C*H*W, no shape
 * and no tag. The result [C*Ho*Wo, N] carries the image shape (Wo, Ho, C). Exact backward. */
pg_tensor *pg_pool(pg_tensor *x, int kind, int dims, const double *shape, const double *kernel,
                   const double *stride, const double *padding, const char *fn);

/* pg_pool's checks of kernel, stride and padding alone (a layer's constructor): 0 or the
 * status with pg_pool's text. */
int pg_pool_check(int kind, int dims, const double *kernel, const double *stride,
                  const double *padding, const char *fn);

/* Global average or max pooling over each channel's H*W values: [C*H*W, N] -> [C, N], untagged.
 * shape: (C, H, W) or NULL for x's tag; max follows pg_pool's tie and NaN rule. */
pg_tensor *pg_global_pool(pg_tensor *x, int kind, const double *shape, const char *fn);
