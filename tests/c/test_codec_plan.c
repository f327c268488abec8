/* pg_config_match (native/codec_plan.c): an architecture config against a file's tensors, and
 * pg_last_errno after a refused write (issue 28). Under ASan/UBSan: deep and odd configs. Then
 * pj_quoted, the one quoting helper of the JSON the core writes (issue 29). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "codec_internal.h"

static int match(const char *cfg, int64_t n, const char **names, const int64_t *r, const int64_t *c)
{
    return pg_config_match(cfg, (int64_t)strlen(cfg), n, names, r, c);
}

/* s quoted by pj_quoted is want (Python's json.dumps(s) with ensure_ascii, byte for byte) */
static int quoted_is(const char *s, const char *want)
{
    char *q = pj_quoted(s);
    int ok = q && strcmp(q, want) == 0;
    if (!ok) fprintf(stderr, "pj_quoted: got %s, want %s\n", q ? q : "(oom)", want);
    free(q);
    return ok;
}

static void test_quoted(void)
{
    CHECK(quoted_is("", "\"\""));
    CHECK(quoted_is(NULL, "null"));
    CHECK(quoted_is("plain text 123", "\"plain text 123\""));
    CHECK(quoted_is("a\"b\\c/d", "\"a\\\"b\\\\c/d\""));
    CHECK(quoted_is("\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\""));
    CHECK(quoted_is("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""));
    CHECK(quoted_is("\xc3\xa9", "\"\\u00e9\""));                /* 2-byte UTF-8 */
    CHECK(quoted_is("\xe2\x82\xac!", "\"\\u20ac!\""));          /* 3-byte */
    CHECK(quoted_is("\xf0\x9f\x98\x80", "\"\\ud83d\\ude00\"")); /* 4-byte: a surrogate pair */
}

void test_codec_plan(void)
{
    test_quoted();
    const char *nm[] = {"layer1_W_q", "layer1_W_k", "layer1_W_v", "layer1_W_o", "layer1_b_o"};
    const int64_t r[] = {4, 4, 4, 4, 4}, c[] = {4, 4, 4, 4, 1};
    const char *ok = "{\"type\":\"sequential\",\"layers\":[{\"type\":\"multihead_attention\","
                     "\"d_model\":4,\"n_heads\":2}]}";
    CHECK(match(ok, 5, nm, r, c) == 0);
    const char *big = "{\"type\":\"sequential\",\"layers\":[{\"type\":\"multihead_attention\","
                      "\"d_model\":11585,\"n_heads\":5}]}";
    CHECK(match(big, 5, nm, r, c) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "'layer1_W_q' [11585x11585]") != NULL);
    CHECK(match(ok, 3, nm, r, c) == PG_STATUS_ERR_VALUE); /* W_o missing */
    CHECK(strstr(pg_last_error(), "which the file does not hold") != NULL);
    const char *nobias = "{\"type\":\"sequential\",\"layers\":[{\"type\":\"multihead_attention\","
                         "\"d_model\":4,\"n_heads\":2,\"bias\":false}]}";
    CHECK(match(nobias, 4, nm, r, c) == 0);
    /* unknown types, malformed fields and dropout need nothing; the builders refuse them */
    CHECK(match("{\"type\":\"custom\",\"n\":99999999}", 0, NULL, NULL, NULL) == 0);
    CHECK(match("{\"type\":\"linear\",\"in_features\":\"x\"}", 0, NULL, NULL, NULL) == 0);
    CHECK(match("[1,2]", 0, NULL, NULL, NULL) == 0);
    CHECK(match("{\"type\":\"linear\",\"in_features\":3e7,\"out_features\":1}", 0, NULL, NULL,
                NULL) == PG_STATUS_ERR_VALUE);
    const char *W[] = {"W", "b"};
    const int64_t wr[] = {2, 2}, wc[] = {3, 1};
    CHECK(match("{\"type\":\"linear\",\"in_features\":3,\"out_features\":2}", 2, W, wr, wc) == 0);
    /* nesting: 70 sequentials is refused by the walk, 200 by the parser, never a crash */
    for (int depth = 60; depth <= 200; depth += 70) {
        char *s = malloc((size_t)depth * 40 + 64), *p = s;
        for (int i = 0; i < depth; i++) p += sprintf(p, "{\"type\":\"sequential\",\"layers\":[");
        p += sprintf(p, "{\"type\":\"dropout\",\"rate\":0.1}");
        for (int i = 0; i < depth; i++) p += sprintf(p, "]}");
        CHECK(match(s, 0, NULL, NULL, NULL) == (depth <= 60 ? 0 : PG_STATUS_ERR_VALUE));
        free(s);
    }
    CHECK(pg_config_match(NULL, 0, 0, NULL, NULL, NULL) == PG_STATUS_ERR_ARG);
    /* a refused write keeps its errno */
    pg_st_tensor t = {"w", PG_ST_DTYPE_F32, 2, 1, 1, &(float){1.0f}};
    CHECK(pg_st_write("/nonexistent-dir-pyggmlr/x.st", &t, 1, NULL, NULL, 0) == PG_STATUS_ERR_IO);
    CHECK(pg_last_errno() == ENOENT);
    pg_clear_error();
    CHECK(pg_last_errno() == 0);
}
