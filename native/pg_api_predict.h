/* pyggmlr C core: ag_predict(type =) (predict.c): a model's outputs read the way ag_fit's loss
 * reads them (enum pg_fit_classify, pg_api_train.h), once for R and Python. cdef-clean like
 * pg_api.h. The outputs are [rows, n] column-major doubles (samples are columns). */
enum pg_predict_type {
    PG_PREDICT_RESPONSE = 0, /* the outputs as they are */
    PG_PREDICT_PROB = 1,     /* probabilities: softmax over rows / sigmoid / as they are */
    PG_PREDICT_CLASS = 2,    /* 0-based class ids: arg-max, or the threshold's side */
    PG_PREDICT_COUNT
};
/* type: "response", "prob" or "class"; shown: how the front end shows a type that is not a
 * string (type NULL). PG_STATUS_ERR_VALUE names fn and type. */
int pg_predict_type_parse(const char *fn, const char *type, const char *shown, int *out);
/* A pg_fit_classify kind's name in model files: "none", "argmax", "probs", "logits" (NULL out
 * of range); pg_fit_classify_parse is its inverse (-1 for another name). */
const char *pg_fit_classify_name(int classify);
int pg_fit_classify_parse(const char *name);
/* How a loss name's outputs are read (ag_predict(loss =), a model's recorded loss): one of
 * ag_fit's loss names, else PG_STATUS_ERR_VALUE naming fn and loss; no loss (NULL) reads none
 * (PG_FIT_CLASSIFY_NONE: pg_predict_transform then says how to give one). */
int pg_predict_classify(const char *fn, const char *loss, int *classify);
/* out [rows, n] -> res (rows * n doubles), *res_rows its rows. PROB: softmax over each column
 * (ARGMAX: cross_entropy's logits), sigmoid (LOGITS), a copy (PROBS). CLASS: ARGMAX [1, n] the
 * first maximum's row; PROBS / LOGITS [rows, n] 1 above the threshold (0.5 / 0) else 0 (one
 * row: binary, more: multi-label). A column holding NaN gives NaN. n_classes (-1: no labels)
 * must fit the outputs: rows labels for ARGMAX, 2 for a 1-output PROBS / LOGITS model. classify
 * NONE (a regression, or no known loss: loss NULL) is PG_STATUS_ERR_VALUE saying how to give
 * the loss; all errors name fn. RESPONSE copies. */
int pg_predict_transform(const char *fn, const double *out, int64_t rows, int64_t n, int type,
                         int classify, const char *loss, int64_t n_classes, double *res,
                         int64_t *res_rows);
/* ag_predict's batches (one forward each): a later batch's output must keep the first batch's
 * rows (rows0), else PG_STATUS_ERR_SHAPE naming fn (the outputs are bound column by column). */
int pg_predict_batch_rows(const char *fn, int64_t rows0, int64_t rows, int64_t batch_size);
/* ag_predict's batch of n samples (every one): the model's output [rows, cols] must have one
 * column per sample (cols == n; the package's [features, batch] layout, recurrent and image layers
 * included), else PG_STATUS_ERR_SHAPE naming fn, the output's shape and n. */
int pg_predict_batch_cols(const char *fn, int64_t rows, int64_t cols, int64_t n,
                          int64_t batch_size);
