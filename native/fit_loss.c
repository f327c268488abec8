/* ag_fit's loss table: the names both front ends accept for `loss`, and the op each one runs,
 * so a name means the same loss in R and Python (and in a checkpoint's settings); and its
 * optimizer names. */
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

static const char *const NAMES[PG_FIT_LOSS_COUNT] = {
    "cross_entropy",   "mse",   "mean", "sum", "binary_cross_entropy",
    "bce_with_logits", "huber", "mae"};

const char *pg_fit_loss_name(int loss)
{
    return loss >= 0 && loss < PG_FIT_LOSS_COUNT ? NAMES[loss] : NULL;
}

int pg_fit_loss_parse(const char *name, int *loss)
{
    if (!loss) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_loss_parse(): loss is NULL");
    for (int i = 0; name && i < PG_FIT_LOSS_COUNT; i++)
        if (!strcmp(name, NAMES[i])) return *loss = i, 0;
    char list[256] = "";
    for (int i = 0; i < PG_FIT_LOSS_COUNT; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
                 NAMES[i]);
    char shown[64];
    if (name) pj_qname(name, shown, sizeof shown);
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "ag_fit: unknown loss %s; use %s or a function(output, y) returning a 1x1 "
                   "tensor",
                   name ? shown : "(none)", list);
}

int pg_fit_loss_rules(int loss, int has_y, int *classify, int *per_datapoint)
{
    if (!classify || !per_datapoint) return pg_fail(PG_STATUS_ERR_ARG, "ag_fit: NULL output");
    if (loss < -1 || loss >= PG_FIT_LOSS_COUNT)
        return pg_fail(PG_STATUS_ERR_VALUE, "ag_fit: loss code %d is out of range", loss);
    if (loss >= 0 && loss != PG_FIT_LOSS_MEAN && loss != PG_FIT_LOSS_SUM && !has_y)
        return pg_fail(PG_STATUS_ERR_VALUE, "ag_fit: loss \"%s\" needs targets y", NAMES[loss]);
    *classify = loss == PG_FIT_LOSS_CROSS_ENTROPY  ? PG_FIT_CLASSIFY_ARGMAX
        : loss == PG_FIT_LOSS_BINARY_CROSS_ENTROPY ? PG_FIT_CLASSIFY_PROBS
        : loss == PG_FIT_LOSS_BCE_WITH_LOGITS      ? PG_FIT_CLASSIFY_LOGITS
                                                   : PG_FIT_CLASSIFY_NONE;
    *per_datapoint = loss != PG_FIT_LOSS_SUM;
    return 0;
}

int pg_fit_optim_parse(const char *name, const char *shown, int *kind)
{
    static const struct {
        const char *name;
        int kind;
    } OPT[] = {
        {"adamw", PG_OPTIM_KIND_ADAM}, {"adam", PG_OPTIM_KIND_ADAM}, {"sgd", PG_OPTIM_KIND_SGD}};
    if (!kind) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_optim_parse(): kind is NULL");
    char low[16] = "";
    for (size_t i = 0; name && name[i] && i + 1 < sizeof low; i++)
        low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    for (size_t i = 0; name && strlen(name) < sizeof low && i < sizeof OPT / sizeof OPT[0]; i++)
        if (!strcmp(low, OPT[i].name)) return *kind = OPT[i].kind, 0;
    char q[64];
    if (name) pj_qname(name, q, sizeof q);
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "ag_fit: unknown optimizer %s; use \"adamw\", \"sgd\" or an optimizer object",
                   name ? q : (shown ? shown : "(none)"));
}

pg_tensor *pg_fit_loss(int loss, pg_tensor *out, pg_tensor *y)
{
    if (!out || ((loss != PG_FIT_LOSS_MEAN && loss != PG_FIT_LOSS_SUM) && !y)) {
        pg_fail(PG_STATUS_ERR_ARG, "ag_fit: the %s loss needs the output and the targets",
                pg_fit_loss_name(loss) ? pg_fit_loss_name(loss) : "?");
        return NULL;
    }
    switch (loss) {
    case PG_FIT_LOSS_CROSS_ENTROPY: return pg_softmax_ce_loss_any(out, y);
    case PG_FIT_LOSS_MSE: return pg_mse_loss(out, y);
    case PG_FIT_LOSS_MEAN: return pg_mean(out, 0);
    case PG_FIT_LOSS_SUM: return pg_sum(out, 0);
    case PG_FIT_LOSS_BINARY_CROSS_ENTROPY: return pg_bce_loss(out, y);
    case PG_FIT_LOSS_BCE_WITH_LOGITS: return pg_bce_logits_loss(out, y);
    case PG_FIT_LOSS_HUBER: return pg_huber_loss(out, y, 1.0);
    case PG_FIT_LOSS_MAE: return pg_mae_loss(out, y);
    default:
        pg_fail(PG_STATUS_ERR_VALUE, "pg_fit_loss(): loss %d is not in [0, %d)", loss,
                PG_FIT_LOSS_COUNT);
        return NULL;
    }
}

/* ag_fit's opt_params(epoch): checked whole before the first is set, and any set undone when a
 * later one is refused, so a refused epoch's hyper-parameters are the previous ones */
int pg_fit_opt_params(pg_optim *o, int64_t n, const char *const *names, const pg_host_value *v,
                      int64_t epoch)
{
    if (!o || n < 0 || (n && (!names || !v)))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_opt_params(): bad arguments");
    if (n > 64)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: opt_params returned %lld entries at epoch %lld (at most 64)",
                       (long long)n, (long long)epoch);
    int kind = pg_optim_kind(o);
    const char *fn = kind == PG_OPTIM_KIND_ADAM ? "optimizer_adam" : "optimizer_sgd";
    const char *canon[64];
    double old[64];
    for (int64_t i = 0; i < n; i++) {
        const char *k = names[i] ? names[i] : "";
        canon[i] = !strcmp(k, "alpha") ? "lr" : !strcmp(k, "wd") ? "weight_decay" : k;
        int known = 0;
        for (int j = 0; pg_optim_name(PG_OPTIM_NAMES_FILE_HYPER, kind, j); j++)
            known |= !strcmp(canon[i], pg_optim_name(PG_OPTIM_NAMES_FILE_HYPER, kind, j));
        char q[80];
        snprintf(q, sizeof q, "'%.60s'", k);
        if (!known)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "ag_fit: opt_params returned unknown hyper-parameter %s for %s", q, fn);
        int flag = pg_optim_is_flag(canon[i]);
        if (!(v[i].kind == PG_HOST_NUM || v[i].kind == PG_HOST_INT ||
              (flag && v[i].kind == PG_HOST_BOOL)))
            return pg_fail(PG_STATUS_ERR_ARG,
                           "ag_fit: opt_params returned %s = %s at epoch %lld; it must be %s", q,
                           v[i].text ? v[i].text : "?", (long long)epoch,
                           flag ? "TRUE or FALSE" : "one number");
        old[i] = pg_optim_get(o, canon[i]);
    }
    for (int64_t i = 0; i < n; i++)
        if (pg_optim_set(o, canon[i], v[i].num)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", pg_last_error());
            for (int64_t j = 0; j < i; j++) pg_optim_set(o, canon[j], old[j]);
            return pg_fail(PG_STATUS_ERR_VALUE, "ag_fit: opt_params at epoch %lld: %s",
                           (long long)epoch, msg);
        }
    return 0;
}
