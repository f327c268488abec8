/* ag_fit's rules on its data arguments that are not about numbers (pg_api_train.h), once for R
 * and Python: an ag_dataloader's precedence and class labels against the loss. */
#include <string.h>
#include "pg.h"

int pg_fit_loader_check(int has_y, int settings_given)
{
    if (has_y)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_fit: x is an ag_dataloader, which holds the targets: pass y to "
                       "ag_dataloader(x, y), not to ag_fit");
    if (settings_given)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_fit: x is an ag_dataloader: its batch_size and shuffle are the fit's; "
                       "set them on ag_dataloader(), not on ag_fit");
    return 0;
}

int pg_fit_labels_check(const char *loss, int64_t nlabels, int64_t nmissing, int64_t first,
                        int factor)
{
    if (!loss) return pg_fail(PG_STATUS_ERR_ARG, "ag_fit: NULL loss");
    if (nmissing > 0) /* worded as the core's non-finite check (pg_fit_check_finite) */
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: y has %lld missing value%s (NA), the first at row 1, column "
                       "%lld; give finite data (remove or impute those samples)",
                       (long long)nmissing, nmissing > 1 ? "s" : "", (long long)first + 1);
    /* two labels are a binary target too: the second is 1 (as glm's) */
    const int binary = (!strcmp(loss, "binary_cross_entropy") || !strcmp(loss, "bce_with_logits"))
                       && nlabels == 2;
    if (strcmp(loss, "cross_entropy") && !binary)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s need%s loss = \"cross_entropy\" (or, with 2 %s, "
                       "\"binary_cross_entropy\" / \"bce_with_logits\")",
                       factor ? "a factor y" : "labels y (strings or a Categorical)",
                       factor ? "s" : "", factor ? "levels" : "labels");
    return 0;
}
