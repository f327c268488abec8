/* pyggmlr C core: ag_gradcheck's arithmetic (gradcheck.c), once for R and Python; the front ends
 * only call the user's function. cdef-clean like pg_api.h. */

/* Defaults by the checked tensors' dtype: f64 gets ggmlR's (eps 1e-5, atol 1e-4, rtol 0); f32
 * gets eps 5e-3 (about the cube root of its epsilon, the best step for central differences)
 * and atol 1e-3, rtol 1e-2, which pass correct f32 gradients and fail wrong ones. */
int pg_gradcheck_defaults(int dtype, double *eps, double *atol, double *rtol);
/* The perturbed points x0 + eps and x0 - eps as a tensor of dtype stores them; the difference
 * quotient divides by their true distance, not by 2 eps. eps must be finite and > 0. */
int pg_gradcheck_points(int dtype, double x0, double eps, double *xp, double *xm);
/* Judge n elements: num[i] = (fp[i] - fm[i]) / (xp[i] - xm[i]); element i passes iff
 * |a[i] - num[i]| <= atol + rtol |num[i]| + the rounding noise of the two loss values
 * (32 u (|fp| + |fm|) / (xp - xm), u the dtype's unit roundoff); NaN fails. a == NULL (no
 * analytical gradient) fails. *max_err = max |a - num| (Inf without a). Returns 1 pass, 0 fail,
 * < 0 on bad arguments. */
int pg_gradcheck_judge(int dtype, const double *a, const double *fp, const double *fm,
                       const double *xp, const double *xm, int64_t n, double atol, double rtol,
                       double *num, double *max_err);
