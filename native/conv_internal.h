/* Shared by the convolutions (ops_conv.c, ops_convt.c): the geometry of one convolution, its
 * packing into a node, im2col / col2im of one sample and group, and the argument checks. */
#ifndef PG_CONV_INTERNAL_H
#define PG_CONV_INTERNAL_H
#include "pg.h"

typedef struct {
    int64_t C, H, W, Co, kh, kw, sh, sw, ph0, ph1, pw0, pw1, dh, dw, g, OH, OW;
} pg_conv_geom;

/* sizes in p[0..3] (exact in a double), the small numbers in ip[0..2] (16 bits each) */
void pg_conv_geom_pack(const pg_conv_geom *q, double *p, int64_t *ip);
void pg_conv_geom_unpack(const pg_node *n, pg_conv_geom *q); /* OH, OW left to the caller */
void pg_conv_geom_out(pg_conv_geom *q);                      /* OH, OW of a convolution */

/* one sample's group gi as col [OH*OW, Kg] (column k = (ci*kh + ky)*kw + kx); add: col2im,
 * adding col back into xs (whose channels are q->C, of q->H x q->W) */
void pg_im2col_f32(const pg_conv_geom *q, int64_t gi, float *xs, float *col, int add);
void pg_im2col_f64(const pg_conv_geom *q, int64_t gi, double *xs, double *col, int add);
#define PG_IM2COL(q, gi, xs, col, add)                                                             \
    _Generic((col), float * : pg_im2col_f32, double * : pg_im2col_f64)(q, gi, xs, col, add)

/* a 1x1 kernel, stride 1, no padding: the sample itself is the column matrix */
int pg_conv_pointwise(const pg_conv_geom *q);

/* per output channel c of dy [Co*P, N]: the sum over samples and positions into db (8 lanes, a
 * fixed order); acc: add to db */
void pg_conv_bias_grad(int dtype, const void *dy, int64_t N, int64_t Co, int64_t P, void *db,
                       int acc);

/* argument i of a (enum pg_conv_arg) whole and >= lo (else the refusal naming fn and it) */
int pg_conv_whole(const char *fn, const double *a, int i, double lo, int64_t *v);
/* (C, H, W) of x from a's input_shape or x's tag; dims 1: (C, L) texts, H must be 1 */
int pg_conv_input(const char *fn, pg_tensor *x, const double *a, int dims, pg_conv_geom *q);
#endif
