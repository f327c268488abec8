/* The model-file codec (native/codec*.c): round trip and exact bytes of
 * the writer, its failure paths (atomic: the old file stays, no temp file), then a fuzzer that
 * feeds mutated files through the reader (every truncation, every single-bit flip of the header,
 * random byte edits, huge declared lengths, deep nesting, overlapping / gapped offsets, hostile
 * JSON). Under ASan/UBSan (scripts/sanitize.sh) any bad access or leak fails the run. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static char cdir[256];

static void cpath(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", cdir, name);
}

static void put_file(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    if (n) fwrite(b, 1, n, f);
    fclose(f);
}

static unsigned char *get_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *n = 0;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long L = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)L + 1);
    *n = fread(b, 1, (size_t)L, f);
    fclose(f);
    return b;
}

static int n_dir_entries(void)
{
    DIR *d = opendir(cdir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))) n++;
    if (d) closedir(d);
    return n;
}

/* A header + data blob in memory: 8-byte length, the JSON padded, then nbody zero bytes. */
static size_t blob(unsigned char *out, size_t cap, const char *json, size_t nbody)
{
    size_t h = strlen(json), pad = (8 - h % 8) % 8, n = 8 + h + pad + nbody;
    if (n > cap) return 0;
    for (int k = 0; k < 8; k++) out[k] = (unsigned char)((uint64_t)(h + pad) >> (8 * k));
    memcpy(out + 8, json, h);
    memset(out + 8 + h, ' ', pad);
    memset(out + 8 + h + pad, 0, nbody);
    return n;
}

/* Opens path; on success reads every tensor (the on-demand path) and closes. 0 = accepted. */
static int try_open(const char *path)
{
    pg_st_file *f = (pg_st_file *)1;
    pg_clear_error();
    int rc = pg_st_open(path, &f);
    if (rc) {
        CHECK(f == NULL);
        CHECK(pg_last_error()[0] != 0);
        pg_clear_error();
        return rc;
    }
    for (int64_t i = 0; i < pg_st_count(f); i++) {
        int64_t nb = pg_st_nbytes(f, i), n = pg_st_rows(f, i) * pg_st_cols(f, i);
        CHECK(nb == n * (pg_st_dtype(f, i) == PG_ST_DTYPE_F64 ? 8 : 4));
        void *b = malloc(nb ? (size_t)nb : 1);
        double *d = malloc(n ? (size_t)n * 8 : 8);
        CHECK(pg_st_read(f, i, b, nb) == 0);
        CHECK(pg_st_read_colmajor_f64(f, i, d, n) == 0);
        free(b);
        free(d);
    }
    for (int64_t i = 0; i < pg_st_meta_count(f); i++)
        CHECK(pg_st_meta_key(f, i) && pg_st_meta_value(f, i));
    pg_st_close(f);
    return 0;
}

static void expect_refused(const char *json, size_t nbody, const char *needle)
{
    unsigned char b[4096];
    char p[300];
    size_t n = blob(b, sizeof b, json, nbody);
    cpath(p, sizeof p, "case.safetensors");
    put_file(p, b, n);
    pg_st_file *f = NULL;
    pg_clear_error();
    int rc = pg_st_open(p, &f);
    CHECK(rc == PG_STATUS_ERR_VALUE && f == NULL);
    if (!strstr(pg_last_error(), needle))
        fprintf(stderr, "codec case %s: got \"%s\", wanted \"%s\"\n", json, pg_last_error(),
                needle);
    CHECK(strstr(pg_last_error(), needle) != NULL);
    pg_clear_error();
}

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t crnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

void test_codec(void)
{
    snprintf(cdir, sizeof cdir, "/tmp/pg-codec-XXXXXX");
    if (!mkdtemp(cdir)) {
        CHECK(0);
        return;
    }
    char path[300], p2[300];
    cpath(path, sizeof path, "m.safetensors");

    /* round trip, and the exact header bytes Python's json.dumps gave */
    float a[6] = {1, 2, 3, 4, 5, 6};
    double b[2] = {0.5, -1e300};
    pg_st_tensor t[3] = {{"layer1_W", PG_ST_DTYPE_F32, 2, 2, 3, a},
                         {"caf\xc3\xa9\"", PG_ST_DTYPE_F64, 1, 2, 1, b},
                         {"empty", PG_ST_DTYPE_F32, 2, 0, 4, NULL}};
    const char *keys[2] = {"format", "config"},
               *vals[2] = {"pyggmlr.ag_model", "{\"a\": [1, 2.5]}"};
    CHECK(pg_st_write(path, t, 3, keys, vals, 2) == 0);
    CHECK(!strcmp(pg_codec_trace(), "write fsync rename fsync-dir"));
    size_t n;
    unsigned char *good = get_file(path, &n);
    const char *want =
        "{\"__metadata__\":{\"format\":\"pyggmlr.ag_model\",\"config\":\"{\\\"a\\\": [1, 2.5]}\"},"
        "\"layer1_W\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
        "\"caf\\u00e9\\\"\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[24,40]},"
        "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[40,40]}}";
    size_t wl = strlen(want), hl = (wl + 7) / 8 * 8;
    CHECK(good && n == 8 + hl + 40 && (size_t)(good[0] | good[1] << 8) == hl &&
          !memcmp(good + 8, want, wl) && good[8 + hl - 1] == (hl > wl ? ' ' : '}'));
    pg_st_file *f = NULL;
    CHECK(pg_st_open(path, &f) == 0);
    if (f) {
        CHECK(pg_st_count(f) == 3 && pg_st_meta_count(f) == 2);
        CHECK(!strcmp(pg_st_name(f, 1), "caf\xc3\xa9\"") && pg_st_dtype(f, 1) == PG_ST_DTYPE_F64);
        CHECK(pg_st_rows(f, 1) == 2 && pg_st_cols(f, 1) == 1 && pg_st_rows(f, 2) == 0 &&
              pg_st_cols(f, 2) == 4);
        CHECK(!strcmp(pg_st_meta_value(f, 1), vals[1]));
        float ra[6];
        double cm[6];
        CHECK(pg_st_read(f, 0, ra, 24) == 0 && !memcmp(ra, a, 24));
        CHECK(pg_st_read_colmajor_f64(f, 0, cm, 6) == 0 && cm[0] == 1 && cm[1] == 4 && cm[2] == 2 &&
              cm[5] == 6);
        CHECK_ERR(pg_st_read(f, 0, ra, 20) != 0, PG_STATUS_ERR_VALUE, "bytes");
        CHECK_ERR(pg_st_read(f, 7, ra, 24) != 0, PG_STATUS_ERR_ARG, "no tensor");
        CHECK(pg_st_name(f, 3) == NULL && pg_st_dtype(f, -1) == -1);
        pg_st_close(f);
    }

    /* the writer's refusals and failures: the old file stays, no temp file is left */
    pg_st_tensor dup[2] = {{"x", PG_ST_DTYPE_F32, 2, 1, 1, a}, {"x", PG_ST_DTYPE_F32, 2, 1, 1, a}};
    CHECK_ERR(pg_st_write(path, dup, 2, NULL, NULL, 0) != 0, PG_STATUS_ERR_VALUE,
              "duplicate tensor name \"x\"");
    pg_st_tensor meta_name = {"__metadata__", PG_ST_DTYPE_F32, 2, 1, 1, a};
    CHECK_ERR(pg_st_write(path, &meta_name, 1, NULL, NULL, 0) != 0, PG_STATUS_ERR_VALUE,
              "duplicate tensor name");
    pg_st_tensor badshape = {"y", PG_ST_DTYPE_F32, 3, 1, 1, a};
    CHECK_ERR(pg_st_write(path, &badshape, 1, NULL, NULL, 0) != 0, PG_STATUS_ERR_VALUE,
              "bad dtype, shape or data");
    cpath(p2, sizeof p2, "no/such/dir.safetensors");
    CHECK_ERR(pg_st_write(p2, t, 1, NULL, NULL, 0) != 0, PG_STATUS_ERR_IO, "does not exist");
    for (int stage = 1; stage <= 3; stage++) {
        pg_codec_test_fault(stage);
        CHECK_ERR(pg_st_write(path, t, 3, NULL, NULL, 0) != 0, PG_STATUS_ERR_IO,
                  "injected failure");
        size_t n2;
        unsigned char *now = get_file(path, &n2);
        CHECK(now && n2 == n && !memcmp(now, good, n));
        free(now);
        CHECK(n_dir_entries() == 1);
    }
    CHECK_ERR(pg_st_open(p2, &f) != 0, PG_STATUS_ERR_IO, "cannot open file");
    CHECK_ERR(pg_st_open(NULL, &f) != 0, PG_STATUS_ERR_ARG, "NULL");

    /* hand-made hostile headers, each with the message both front ends give */
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[4,12]}}",
                   12, "overlap");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[8,12]}}",
                   12, "gap");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]}}", 8,
                   "starts with 4 bytes");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]}}", 8,
                   "after the last tensor");
    expect_refused("{\"a\":{\"dtype\":\"I64\",\"shape\":[1,1],\"data_offsets\":[0,8]}}", 8,
                   "unsupported dtype \"I64\"");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[0,8]}}", 8,
                   "needs 12");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]}}", 8,
                   "shape must be");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[6.0,1],\"data_offsets\":[0,8]}}", 8,
                   "shape must be");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,2],\"data_offsets\":[0,8]}}", 8,
                   "shape must be");
    expect_refused(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,2],\"data_offsets\":[0,8]}}", 8,
        "needs more than");
    expect_refused(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999,1],\"data_offsets\":[0,8]}}", 8,
        "needs more than");
    expect_refused(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[18446744073709551616,4]}}", 8,
        "outside");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[-4,0]}}", 8,
                   "outside");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[8,0]}}", 8,
                   "outside");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[\"0\",8]}}", 8,
                   "two integers");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,1]}}", 8, "exactly");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8],\"x\":1}}", 8,
                   "exactly");
    /* headers refused before any body is read: the JSON, the message */
    static const char *const no_body[][2] = {
        {"{\"a\":1,\"a\":2}", "duplicate key \"a\""},
        {"{\"__metadata__\":{\"format\":3}}", "strings to strings"},
        {"{\"__metadata__\":[]}", "strings to strings"},
        {"[1,2]", "not a JSON object"},
        {"{\"a\":NaN}", "not valid JSON"},
        {"{\"a\":\"\\u0000\"}", "not valid JSON"},
        {"{\"a\":\"\\ud800\"}", "surrogate"},
        {"{\"a\":\"\x01\"}", "control character"},
        {"{\"a\":01}", "not valid JSON"},
        {"{\"a\":1,}", "not valid JSON"},
        {"{\"a\":1} x", "extra data"},
        {"{\"a\":\"\xc0\xaf\"}", "not UTF-8"},
        {"{\"a\":\"\xed\xa0\x80\"}", "not UTF-8"},
    };
    for (size_t i = 0; i < sizeof no_body / sizeof *no_body; i++)
        expect_refused(no_body[i][0], 0, no_body[i][1]);
    CHECK(try_open(path) == 0);

    /* huge declared header lengths, short files */
    unsigned char hb[64];
    uint64_t lens[5] = {UINT64_MAX, 1ull << 63, 100ull * 1024 * 1024 + 1, 57, 1};
    const char *lmsg[5] = {"exceeds", "exceeds", "exceeds", "truncated", "too small"};
    cpath(p2, sizeof p2, "h.safetensors");
    for (int k = 0; k < 5; k++) {
        for (int j = 0; j < 8; j++) hb[j] = (unsigned char)(lens[k] >> (8 * j));
        memset(hb + 8, ' ', 56);
        hb[8] = '{';
        put_file(p2, hb, 64);
        pg_clear_error();
        CHECK(pg_st_open(p2, &f) == PG_STATUS_ERR_VALUE && strstr(pg_last_error(), lmsg[k]));
    }
    put_file(p2, hb, 5);
    CHECK_ERR(pg_st_open(p2, &f) != 0, PG_STATUS_ERR_VALUE, "shorter than the 8-byte header");

    /* deep nesting: far beyond the limit, refused before any allocation */
    size_t deep = 200000;
    char *dj = malloc(deep * 2 + 8);
    strcpy(dj, "{\"a\":");
    for (size_t i = 0; i < deep; i++) dj[5 + i] = '[';
    dj[5 + deep] = 0;
    unsigned char *db = malloc(deep * 2 + 64);
    size_t dn = blob(db, deep * 2 + 64, dj, 0);
    put_file(p2, db, dn);
    CHECK_ERR(pg_st_open(p2, &f) != 0, PG_STATUS_ERR_VALUE, "nested deeper than 128");
    CHECK_ERR(pg_json_check(dj + 5, (int64_t)deep, "metadata 'config'", 0) != 0,
              PG_STATUS_ERR_VALUE, "metadata 'config' is not valid JSON");
    free(dj);
    free(db);

    /* metadata JSON: the config guard */
    const char *c1 = "{\"type\":\"linear\",\"in_features\":1000000000000,\"out_features\":2}";
    CHECK_ERR(pg_json_check(c1, (int64_t)strlen(c1), "metadata 'config'", 1000) != 0,
              PG_STATUS_ERR_VALUE, "implausible");
    const char *c2 = "{\"type\":\"linear\",\"in_features\":5000,\"out_features\":5000}";
    CHECK_ERR(pg_json_check(c2, (int64_t)strlen(c2), "metadata 'config'", 100000) != 0,
              PG_STATUS_ERR_VALUE, "implausible layer size");
    CHECK(pg_json_check(c2, (int64_t)strlen(c2), "metadata 'config'", 0) == 0);
    CHECK(pg_json_check("[1e999]", 7, "x", 0) == 0);
    CHECK_ERR(pg_json_check("[1e999]", 7, "x", 10) != 0, PG_STATUS_ERR_VALUE,
              "implausible size 1e999");
    CHECK_ERR(pg_json_check("{\"a\":{\"b\":1,\"b\":2}}", 19, "x", 0) != 0, PG_STATUS_ERR_VALUE,
              "duplicate key \"b\"");

    /* the fuzzer: every truncation, every bit of the header flipped, random edits */
    cpath(p2, sizeof p2, "fuzz.safetensors");
    int accepted = 0, refused = 0;
    unsigned char *m = malloc(n + 64);
    for (size_t L = 0; L < n; L++) {
        put_file(p2, good, L);
        CHECK(try_open(p2) != 0);
    }
    for (size_t i = 0; i < 8 + hl; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(m, good, n);
            m[i] ^= (unsigned char)(1u << bit);
            put_file(p2, m, n);
            if (try_open(p2)) refused++;
            else accepted++;
        }
    for (int c = 0; c < 4000; c++) {
        memcpy(m, good, n);
        size_t L = n;
        int kind = (int)(crnd() % 4), edits = 1 + (int)(crnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)(crnd() % (kind == 0 ? 8 : L));
            if (kind == 1) m[at] = "{}[]\":,0123456789-e. \\u"[crnd() % 24];
            else if (kind == 2 && L + 1 < n + 64) {
                memmove(m + at + 1, m + at, L - at);
                m[at] = (unsigned char)crnd();
                L++;
            } else m[at] = (unsigned char)crnd();
        }
        if (kind == 3) L = (size_t)(crnd() % (L + 1));
        put_file(p2, m, L);
        if (try_open(p2)) refused++;
        else accepted++;
    }
    free(m);
    CHECK(refused > 1000 && accepted > 0);
    free(good);
    remove(p2);
    cpath(p2, sizeof p2, "h.safetensors");
    remove(p2);
    cpath(p2, sizeof p2, "case.safetensors");
    remove(p2);
    remove(path);
    rmdir(cdir);
}
