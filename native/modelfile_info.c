/* ag_model_info()'s answer as one JSON text (pg_api_modelfile.h), composed once for both front
 * ends: the format fields, each listed parameter's and buffer's shape and dtype, the raw config
 * and extra texts, the epoch, the optimizer's kind and the target as read (its three keys). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "modelfile_internal.h"

static void put_key(mf_str *b, const char *key)
{
    mf_str_add(b, b->n > 1 ? ", " : "");
    mf_str_quote(b, key);
    mf_str_add(b, ": ");
}

/* {name: {"shape": [rows, cols], "dtype": "f32"|"f64"}} for a name list ({} without one) */
static void put_list(mf_str *b, const pg_mf *mf, int list)
{
    char s[96];
    mf_str_add(b, "{");
    for (int64_t i = 0; i < pg_mf_name_count(mf, list); i++) {
        const char *nm = pg_mf_name(mf, list, i);
        int64_t k = pg_mf_index(mf, nm);
        if (i) mf_str_add(b, ", ");
        mf_str_quote(b, nm);
        snprintf(s, sizeof s, ": {\"shape\": [%lld, %lld], \"dtype\": \"%s\"}",
                 (long long)pg_st_rows(mf->st, k), (long long)pg_st_cols(mf->st, k),
                 pg_st_dtype(mf->st, k) == PG_ST_DTYPE_F64 ? "f64" : "f32");
        mf_str_add(b, s);
    }
    mf_str_add(b, "}");
}

/* metadata 'target' as the loader reads it: {"loss", "classify", "classes"}, null for none */
static void put_target(mf_str *b, const pg_mf *mf)
{
    if (!pg_mf_has_target(mf)) {
        mf_str_add(b, "null");
        return;
    }
    mf_str_add(b, "{\"loss\": "), mf_str_quote(b, pg_mf_target_loss(mf));
    mf_str_add(b, ", \"classify\": "),
        mf_str_quote(b, pg_fit_classify_name(pg_mf_target_classify(mf)));
    mf_str_add(b, ", \"classes\": ");
    int64_t n = pg_mf_class_count(mf);
    mf_str_add(b, n < 0 ? "null" : "[");
    for (int64_t i = 0; i < n; i++)
        mf_str_add(b, i ? ", " : ""), mf_str_quote(b, pg_mf_class(mf, i));
    mf_str_add(b, n < 0 ? "}" : "]}");
}

int pg_mf_info_json(pg_mf *mf, const char **out)
{
    if (!mf || !out) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_info_json(): NULL argument");
    int rc = pg_mf_check_info(mf);
    if (rc) return rc;
    mf_str b = {NULL, 0, 0, 0};
    char num[32];
    const char *raw[2] = {mf->config, mf->extra};
    mf_str_add(&b, "{");
    put_key(&b, "format"), mf_str_quote(&b, pg_mf_meta(mf, "format"));
    put_key(&b, "format_version"), mf_str_quote(&b, pg_mf_meta(mf, "format_version"));
    put_key(&b, "parameters"), put_list(&b, mf, PG_MF_LIST_PARAMETERS);
    put_key(&b, "buffers"), put_list(&b, mf, PG_MF_LIST_BUFFERS);
    put_key(&b, "config"), mf_str_add(&b, raw[0] ? raw[0] : "null");
    snprintf(num, sizeof num, "%lld", (long long)mf->epoch);
    put_key(&b, "epoch"), mf_str_add(&b, mf->epoch < 0 ? "null" : num);
    put_key(&b, "optimizer"), mf_str_quote(&b, mf->opt_kind);
    put_key(&b, "extra"), mf_str_add(&b, raw[1] ? raw[1] : "null");
    put_key(&b, "target"), put_target(&b, mf);
    mf_str_add(&b, "}");
    if (b.oom) {
        free(b.s);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_model_info(): out of memory");
    }
    free(mf->info);
    *out = mf->info = b.s;
    return 0;
}
