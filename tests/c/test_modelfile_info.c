/* ag_model_info()'s JSON (pg_mf_info_json): its layout and values (the target as read: classify
 * filled in, other keys dropped), a refused file's status and text with nothing handed out; pg_mf_writer_add_values (a host's column-major doubles in the
 * file's row-major layout, F32 narrowed, its refusals); pg_mf_path_check's rules and both languages' texts; and
 * pg_file_is_rds, R's sniff for ggmlR's RDS containers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"

static const double V[6] = {1, 2, 3, 4, 5, 6};

static void put(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) fwrite(bytes, 1, n, f), fclose(f);
}

static void test_info(const char *dir)
{
    char path[300];
    snprintf(path, sizeof path, "%s/i.safetensors", dir);
    pg_st_tensor t[2] = {{"W", PG_ST_DTYPE_F64, 2, 2, 3, V}, {"rm", PG_ST_DTYPE_F32, 2, 2, 1, V}};
    const char *k[] = {"format",    "format_version", "parameters", "buffers", "epoch",
                       "optimizer", "config",         "extra",      "target"};
    const char *v[] = {"pyggmlr.ag_model",
                       "1",
                       "[\"W\"]",
                       "[\"rm\"]",
                       "7",
                       "{\"kind\":\"adam\"}",
                       "{\"type\":\"linear\"}",
                       "[1,null]",
                       "{\"loss\":\"cross_entropy\",\"classes\":[\"b\",\"a\"],\"x\":1}"};
    CHECK(pg_st_write(path, t, 2, k, v, 9) == 0);
    pg_mf *mf = NULL;
    const char *js = NULL;
    CHECK(pg_mf_open(path, "ag_model_info()", &mf) == 0);
    CHECK(pg_mf_info_json(mf, &js) == 0);
    CHECK(js &&
          !strcmp(js,
                  "{\"format\": \"pyggmlr.ag_model\", \"format_version\": \"1\", "
                  "\"parameters\": {\"W\": {\"shape\": [2, 3], \"dtype\": \"f64\"}}, "
                  "\"buffers\": {\"rm\": {\"shape\": [2, 1], \"dtype\": \"f32\"}}, "
                  "\"config\": {\"type\":\"linear\"}, \"epoch\": 7, \"optimizer\": "
                  "\"adam\", \"extra\": [1,null], \"target\": {\"loss\": "
                  "\"cross_entropy\", \"classify\": \"argmax\", \"classes\": [\"b\", \"a\"]}}"));
    CHECK_ERR(pg_mf_info_json(NULL, &js), PG_STATUS_ERR_ARG, "pg_mf_info_json(): NULL argument");
    CHECK_ERR(pg_mf_info_json(mf, NULL), PG_STATUS_ERR_ARG, "pg_mf_info_json(): NULL argument");
    pg_mf_close(mf);

    /* no lists, no optional fields: {} and nulls */
    const char *k2[] = {"format"}, *v2[] = {"pyggmlr.ag_model"};
    CHECK(pg_st_write(path, t, 1, k2, v2, 1) == 0);
    CHECK(pg_mf_open(path, "ag_model_info()", &mf) == 0);
    CHECK(pg_mf_info_json(mf, &js) == 0);
    CHECK(js &&
          !strcmp(js,
                  "{\"format\": \"pyggmlr.ag_model\", \"format_version\": null, "
                  "\"parameters\": {}, \"buffers\": {}, \"config\": null, \"epoch\": "
                  "null, \"optimizer\": null, \"extra\": null, \"target\": null}"));
    pg_mf_close(mf);

    /* a refused file: pg_mf_check_info's status and text, nothing handed out */
    const char *k3[] = {"format", "config"}, *v3[] = {"pyggmlr.ag_model", "[1]"};
    CHECK(pg_st_write(path, t, 1, k3, v3, 2) == 0);
    CHECK(pg_mf_open(path, "ag_model_info()", &mf) == 0);
    js = "unchanged";
    CHECK_ERR(pg_mf_info_json(mf, &js), PG_STATUS_ERR_VALUE,
              "metadata 'config' has the wrong type");
    CHECK(!strcmp(js, "unchanged"));
    pg_mf_close(mf);
    unlink(path);
}

static void test_rds(const char *dir)
{
    char path[300];
    snprintf(path, sizeof path, "%s/r.bin", dir);
    const unsigned char gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0}, bz[] = "BZh91AY",
                        xz[] = {0xfd, '7', 'z', 'X', 'Z', 0, 0, 0}, x[] = "X\n\0\0\0\3\0",
                        a[] = "A\n3\n2\n", b[] = "B\n3\n2\n";
    const unsigned char *yes[] = {gz, bz, xz, x, a, b};
    size_t len[] = {8, 7, 8, 7, 6, 6};
    for (int i = 0; i < 6; i++) {
        put(path, yes[i], len[i]);
        CHECK(pg_file_is_rds(path) == 1);
    }
    put(path, "B\n", 2); /* too short to tell */
    CHECK(pg_file_is_rds(path) == 0);
    put(path, "{\"a\": 1}", 8);
    CHECK(pg_file_is_rds(path) == 0);
    /* a safetensors start (header length 2 within the file, then '{') wins, even over a magic */
    unsigned char st[12] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}', 0, 0};
    put(path, st, 10);
    CHECK(pg_file_is_rds(path) == 0);
    unsigned char st_gz[12] = {0x1f, 0x8b, 0, 0, 0, 0, 0, 0, '{', '}', 0, 0}; /* length too big */
    put(path, st_gz, 12);
    CHECK(pg_file_is_rds(path) == 1);
    unlink(path);
    CHECK(pg_file_is_rds(path) == 0); /* missing */
    CHECK(pg_file_is_rds(dir) == 0);  /* a directory */
    CHECK(pg_file_is_rds(NULL) == 0);
}

static void test_path(const char *dir)
{
    char path[300], fifo[300], want[400];
    snprintf(path, sizeof path, "%s/p.bin", dir);
    put(path, "x", 1);
    CHECK(pg_mf_path_check(path, "shown", "ag_load_model()", 0) == 0);
    CHECK(pg_mf_path_check(path, "shown", "ag_load_model()", 1) == 0);
    unlink(path);
    /* missing: the errno; both texts name the function (Python's OSError adds the path) */
    snprintf(want, sizeof want, "f(): %s", strerror(ENOENT));
    CHECK_ERR(pg_mf_path_check(path, "p", "f()", 0) && pg_last_errno() == ENOENT, PG_STATUS_ERR_IO,
              want);
    CHECK_ERR(pg_mf_path_check(path, "~/p", "ag_model_info()", 1), PG_STATUS_ERR_IO,
              "ag_model_info(): cannot open file '~/p': No such file or directory");
    CHECK_ERR(pg_mf_path_check(dir, "d", "f()", 0) && pg_last_errno() == EISDIR, PG_STATUS_ERR_IO,
              "f(): Is a directory");
    CHECK_ERR(pg_mf_path_check(dir, "d", "ag_load_model()", 1) && pg_last_errno() == EISDIR,
              PG_STATUS_ERR_IO, "ag_load_model(): 'd' is a directory");
    /* a FIFO: refused before anything opens it, one text for both */
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    snprintf(want, sizeof want,
             "ag_load_model(): %s: not a regular file (a FIFO, device or socket): model files are "
             "regular files",
             fifo);
    for (int r = 0; r < 2; r++)
        CHECK_ERR(pg_mf_path_check(fifo, fifo, "ag_load_model()", r), PG_STATUS_ERR_VALUE, want);
    unlink(fifo);
    CHECK_ERR(pg_mf_path_check(NULL, "p", "f()", 0), PG_STATUS_ERR_ARG, "pg_mf_path_check()");
    CHECK_ERR(pg_mf_path_check(path, NULL, "f()", 0), PG_STATUS_ERR_ARG, "pg_mf_path_check()");
}

static void test_add_values(const char *dir)
{
    char path[300];
    snprintf(path, sizeof path, "%s/v.safetensors", dir);
    const double cm[6] = {1, 2, 3, 4, 5, 6.1}; /* 2x3, column-major: rows (1 3 5) (2 4 6.1) */
    const int64_t d23[2] = {2, 3}, d3[3] = {1, 1, 1}, dneg[2] = {-1, 2}, d0[2] = {0, 4};
    pg_mf_writer *w = NULL;
    CHECK(pg_mf_writer_new(&w) == 0);
    if (!w) return;
    char name[8] = "cb.W";
    CHECK(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, name, 1, 2, d23, cm) == 0);
    name[3] = 'X'; /* the writer keeps its own copy of the name */
    CHECK(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, "cb.f", 0, 2, d23, cm) == 0);
    CHECK(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, "cb.s", 1, 0, NULL, cm + 5) == 0);
    CHECK(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, "cb.e", 0, 2, d0, NULL) == 0);
    /* refusals add nothing */
    CHECK_ERR(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, "x3", 1, 3, d3, cm),
              PG_STATUS_ERR_VALUE, "ag_save_model(): tensor 'x3' has 3 dimensions (at most 2)");
    CHECK_ERR(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, "n", 1, 2, dneg, cm), PG_STATUS_ERR_ARG,
              "pg_mf_writer_add_values(): bad arguments");
    CHECK_ERR(pg_mf_writer_add_values(w, PG_MF_ROLE_TENSOR, "n", 1, 2, d23, NULL),
              PG_STATUS_ERR_ARG, "pg_mf_writer_add_values(): bad arguments");
    CHECK_ERR(pg_mf_writer_add_values(w, 99, "n", 1, 2, d23, cm), PG_STATUS_ERR_ARG,
              "pg_mf_writer_add_values(): bad arguments");
    CHECK_ERR(pg_mf_writer_add_values(NULL, PG_MF_ROLE_TENSOR, "n", 1, 2, d23, cm),
              PG_STATUS_ERR_ARG, "pg_mf_writer_add_values(): bad arguments");
    CHECK(pg_mf_writer_commit(w, path) == 0);
    pg_mf_writer_free(w);
    pg_st_file *f = NULL;
    CHECK(pg_st_open(path, &f) == 0);
    if (!f) return;
    CHECK(pg_st_count(f) == 4);
    double rm[6] = {0};
    float rf[6] = {0};
    int64_t k = -1;
    for (int64_t i = 0; i < pg_st_count(f); i++)
        if (!strcmp(pg_st_name(f, i), "cb.W")) k = i;
    CHECK(k >= 0 && pg_st_dtype(f, k) == PG_ST_DTYPE_F64 && pg_st_rows(f, k) == 2 &&
          pg_st_cols(f, k) == 3 && pg_st_read(f, k, rm, sizeof rm) == 0);
    CHECK(rm[0] == 1 && rm[1] == 3 && rm[2] == 5 && rm[3] == 2 && rm[4] == 4 && rm[5] == 6.1);
    for (int64_t i = 0; i < pg_st_count(f); i++) {
        if (!strcmp(pg_st_name(f, i), "cb.f")) {
            CHECK(pg_st_dtype(f, i) == PG_ST_DTYPE_F32 && pg_st_read(f, i, rf, sizeof rf) == 0);
            CHECK(rf[1] == 3 && rf[5] == (float)6.1);
        }
        if (!strcmp(pg_st_name(f, i), "cb.s"))
            CHECK(pg_st_rows(f, i) == 1 && pg_st_cols(f, i) == 1);
        if (!strcmp(pg_st_name(f, i), "cb.e"))
            CHECK(pg_st_rows(f, i) == 0 && pg_st_cols(f, i) == 4);
    }
    pg_st_close(f);
    unlink(path);
}

void test_modelfile_info(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/pg-mfi-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    test_info(dir);
    test_rds(dir);
    test_path(dir);
    test_add_values(dir);
    rmdir(dir);
}
