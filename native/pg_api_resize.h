/* pyggmlr C core: padding and upsampling of image batches (ops_resize.c), once for R and Python.
 *
 * x is [C*H*W, N] (pg_api_image.h); a 1-D signal is an image with H = 1. Sizes arrive as doubles
 * and modes as strings so the core refuses bad ones with the one text both languages raise.
 *
 * Padding (torch's F.pad on the last two dims): mode "constant" fills `value`; "reflect" mirrors
 * without repeating the edge (each side's padding must be less than that dimension, torch's
 * rule); "replicate" repeats the edge. A negative pad crops that side, in every mode (as torch
 * 2.13's: the mirror and the edge stay the input's own). Upsampling (torch's nn.Upsample, integer scale factors):
 * "nearest" copies input (oh / sh, ow / sw); "bilinear" (align_corners False) reads the source
 * coordinate max(0, (o + 0.5) / s - 0.5), as torch's with scale_factor given. */

/* Pads x. dims 2: shape (C, H, W), padding npad = 1 (every side), 2 ((H, W): top and bottom H,
 * left and right W) or 4 (left, right, top, bottom: torch's order); dims 1: shape (C, L),
 * padding npad = 1 or 2 (left, right). mode NULL: "constant". shape NULL: x's image tag. fn:
 * the user-facing function for the messages (NULL: "ag_pad2d_op" / "ag_pad1d_op"). Refused
 * (ERR_VALUE / ERR_SHAPE, naming fn and the argument): padding not whole numbers, a bad
 * count or mode, a non-finite value, a nonzero value with another mode than "constant", reflect
 * padding not less than the input size, x's rows not C*H*W, an output with a dimension < 1, or
 * ("constant", torch's rule) crops that together exceed the input's dimension. The result [C*Ho*Wo, N] carries the
 * image shape (Wo, Ho, C). Exact backward (value is a constant: no gradient). */
pg_tensor *pg_pad2d(pg_tensor *x, int dims, const double *shape, const double *padding, int npad,
                    double value, const char *mode, const char *fn);

/* pg_pad2d's checks of padding, value and mode alone (a layer's constructor): 0 or the status
 * with pg_pad2d's text. lrtb (NULL: not wanted) receives the padding as (left, right, top,
 * bottom), the form the layers keep (pad1d: the first two). */
int pg_pad2d_check(int dims, const double *padding, int npad, double value, const char *mode,
                   const char *fn, double *lrtb);

/* Upsamples x by whole scale factors: dims 2: shape (C, H, W), scale (H, W); dims 1: shape
 * (C, L), scale one value. mode NULL: "nearest"; "bilinear" (dims 1: "linear", along L). fn NULL:
 * "ag_upsample2d_op" / "ag_upsample1d_op". The result [C*(H*sh)*(W*sw), N] is tagged. */
pg_tensor *pg_upsample2d(pg_tensor *x, int dims, const double *shape, const double *scale,
                         const char *mode, const char *fn);

/* pg_upsample2d's checks of scale and mode alone: 0 or the status with its text. */
int pg_upsample2d_check(int dims, const double *scale, const char *mode, const char *fn);
