/* pyggmlr C core: the image shape a tensor may carry (image.c).
 *
 * Tensors are matrices [features, batch]. An image batch is one: each column holds one image
 * as R's array dim c(W, H, C) (ggml's [W, H, C, N]; numpy's (N, C, H, W) as
 * x.reshape(N, -1).T), W fastest. A 1-D signal of length L with C channels is (L, 1, C). The
 * shape (W, H, C) rides on the tensor so that a pooling layer after a convolution needs no
 * input_shape; ops that make images set it and elementwise ops keep it. */

/* The image shape into out[3] as (W, H, C): returns 1 when t carries one, 0 when not, a
 * negative status when t is not a live tensor. */
int pg_tensor_image_shape(pg_tensor *t, int64_t *out);
/* Sets (W, H, C) on t, each a whole number >= 1 with W * H * C == nrow(t); shape NULL clears
 * it. fn names the user-facing function in the refusal. */
int pg_tensor_set_image_shape(pg_tensor *t, const int64_t *shape, const char *fn);

/* A sequence batch for the recurrent layers from n sequences of t steps of f features held in
 * doubles at data, element (i, step, feature) at data[i*st[0] + step*st[1] + feature*st[2]]
 * (strides in elements: numpy's (N, T, F) or (T, N, F), R's column-major arrays): a new
 * [f*t, n] tensor of dtype, each column one sequence with the steps' features stacked (step 0
 * first), untagged. fn names the caller in refusals. */
pg_tensor *pg_sequences(const double *data, int64_t n, int64_t t, int64_t f, const int64_t *st,
                        int dtype, const char *fn);
