/* pyggmlr C core: 2-D and 1-D convolution on image batches (ops_conv.c).
 *
 * x is [C*H*W, N]: each column one image in numpy's (C, H, W) C-order (W fastest; the image
 * shape a tensor carries, pg_api_image.h). w is [C_out, (C/groups)*kH*kW], torch's weight
 * (C_out, C/groups, kH, kW) reshaped (C_out, -1); b NULL or [C_out, 1]. The result is
 * [C_out*OH*OW, N], tagged (OW, OH, C_out), as torch.nn.functional.conv2d. A 1-D signal is an
 * image with H = 1. */

/* The geometry, all as numbers (the core checks they are whole and in range, naming them). */
enum pg_conv_arg {
    PG_CONV_C = 0, /* input_shape (C, H, W); PG_CONV_HAS_SHAPE 0: x's image shape instead */
    PG_CONV_H = 1,
    PG_CONV_W = 2,
    PG_CONV_HAS_SHAPE = 3,
    PG_CONV_KH = 4, /* kernel size; 0 and 0: a square kernel from w's columns (1-D: kW from them) */
    PG_CONV_KW = 5,
    PG_CONV_SH = 6, /* stride >= 1 */
    PG_CONV_SW = 7,
    PG_CONV_PH = 8, /* zero padding on each side (ignored for "same" / "valid") */
    PG_CONV_PW = 9,
    PG_CONV_DH = 10, /* dilation >= 1 */
    PG_CONV_DW = 11,
    PG_CONV_GROUPS = 12,
    PG_CONV_PAD_MODE = 13, /* enum pg_conv_pad */
    PG_CONV_OPH = 14,      /* output_padding >= 0 (the transposed convolutions only) */
    PG_CONV_OPW = 15,
    PG_CONV_NARGS = 16
};

enum pg_conv_pad {
    PG_CONV_PAD_NUMBERS = 0, /* PG_CONV_PH / PG_CONV_PW on both sides */
    PG_CONV_PAD_SAME = 1,  /* torch's "same" (stride 1 only): total d*(k-1), the extra one after */
    PG_CONV_PAD_VALID = 2, /* no padding */
    PG_CONV_PAD_COUNT
};

/* y = conv(x, w) + b; dims 2 (ag_conv2d*) or 1 (ag_conv1d*: H = 1, shapes named (C, L)); fn: the
 * user-facing function the refusals name. Backward: exact gradients of x, w and b. NULL on a
 * refusal (PG_STATUS_ERR_SHAPE / _VALUE / _ARG, naming fn, the argument and the shapes). */
pg_tensor *pg_conv(pg_tensor *x, pg_tensor *w, pg_tensor *b, const double *args, int dims,
                   const char *fn);

/* An image batch from n images of shape (c, h, w) held in doubles at data, element (i, ci, y, x)
 * at data[i*st[0] + ci*st[1] + y*st[2] + x*st[3]] (strides in elements: numpy's (N, C, H, W) or
 * (N, H, W, C) in any order, R's column-major arrays): a new [c*h*w, n] tensor of dtype tagged
 * (w, h, c). fn names the caller in refusals. */
pg_tensor *pg_images(const double *data, int64_t n, int64_t c, int64_t h, int64_t w,
                     const int64_t *st, int dtype, const char *fn);

/* torch.nn.functional.conv_transpose2d: x [C_in*H*W, N] (args' input_shape (C_in, H, W) or x's
 * tag), w [C_in, (C_out/groups)*kH*kW] (torch's weight (C_in, C_out/groups, kH, kW) reshaped
 * (C_in, -1)), b NULL or [C_out, 1]; args as pg_conv's with PG_CONV_OPH / _OPW the
 * output_padding (smaller than the stride or the dilation, as torch) and numeric padding only.
 * kernel_size 0 and 0: a square kernel with C_out from b (refused without b). The result is
 * [C_out*OH*OW, N], OH = (H-1)*sH - 2*pH + dH*(kH-1) + opH + 1, tagged (OW, OH, C_out); exact
 * backward for x, w and b. dims 2, or 1 (conv_transpose1d: H = 1, kH = 1, the L side's numbers
 * in the W slots, shapes named (C, L)). fn: the user-facing function (NULL:
 * "ag_conv_transpose2d_op" / "ag_conv_transpose1d_op"). */
pg_tensor *pg_conv_transpose(pg_tensor *x, pg_tensor *w, pg_tensor *b, const double *args, int dims,
                             const char *fn);

/* A convolution layer's constructor arguments alone (ag_conv1d, ag_conv2d, ag_conv_transpose1d,
 * ag_conv_transpose2d; transpose 1 for the last two): in_channels, out_channels, groups whole >= 1 and dividing both;
 * args' kernel_size, stride, dilation >= 1, padding >= 0 (or "same" with stride 1 / "valid";
 * transpose: numbers, and output_padding >= 0 smaller than the stride or the dilation);
 * input_shape (when PG_CONV_HAS_SHAPE) whole >= 1 with in_channels channels. 0 or the status,
 * the text naming fn and the argument (ERR_VALUE); kinds are the front ends' to check. */
int pg_conv_check(double in_channels, double out_channels, const double *args, int dims,
                  int transpose, const char *fn);
