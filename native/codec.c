/* The model-file reader (pg_api_codec.h): validates a safetensors file's framing and header
 * before handing out anything, then reads tensors on demand. The checks and their messages are
 * the ones both front ends had (docs/model-format.md, "Loading rules"). */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if !defined(_WIN32)
#include <fcntl.h>
#include <unistd.h>
#endif
#include "pg.h"
#include "codec_internal.h"

#define ST_MAX_HEADER (100LL * 1024 * 1024)

typedef struct {
    const char *name;
    int dtype, ndim;
    int64_t rows, cols, begin, end;
} st_entry;

struct pg_st_file {
    FILE *fp;
    int64_t base, n, n_meta;
    st_entry *t;
    const char **mk, **mv;
    pj_doc doc;
    char *text;
};

static const int ITEMSIZE[2] = {4, 8};

void pg_st_close(pg_st_file *f)
{
    if (!f) return;
    if (f->fp) fclose(f->fp);
    pj_free(&f->doc);
    free(f->text);
    free(f->t);
    free(f->mk);
    free(f->mv);
    free(f);
}

static int is_le(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static int read_all(FILE *fp, void *dst, int64_t n)
{
    return fread(dst, 1, (size_t)n, fp) == (size_t)n ? 0 : -1;
}

static int check_entry(pg_st_file *f, int64_t node, st_entry *e, int64_t dlen)
{
    const pj_doc *d = &f->doc;
    const pj_node *nd = &d->nodes[node];
    char q[400], s1[80], s2[80];
    pj_qname(d->pool + nd->kstr, q, sizeof q);
    e->name = d->pool + nd->kstr;
    int64_t dt = nd->type == PJ_OBJ ? pj_get(d, node, "dtype") : -1;
    int64_t sh = nd->type == PJ_OBJ ? pj_get(d, node, "shape") : -1;
    int64_t of = nd->type == PJ_OBJ ? pj_get(d, node, "data_offsets") : -1;
    if (dt < 0 || sh < 0 || of < 0 || nd->count != 3)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "tensor %s: entry must have exactly dtype, shape and data_offsets", q);
    const pj_node *dn = &d->nodes[dt], *sn = &d->nodes[sh], *on = &d->nodes[of];
    if (dn->type == PJ_STR && !strcmp(d->pool + dn->str, "F32")) e->dtype = PG_ST_DTYPE_F32;
    else if (dn->type == PJ_STR && !strcmp(d->pool + dn->str, "F64")) e->dtype = PG_ST_DTYPE_F64;
    else {
        pj_snippet(d, dt, 40, s1, sizeof s1);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "tensor %s: unsupported dtype %s (pyggmlr reads F32 and F64)", q, s1);
    }
    int64_t dims[2] = {1, 1}, k = 0;
    int ok = sn->type == PJ_ARR && sn->count <= 2, big = 0;
    for (int64_t c = ok ? sn->first : -1; c >= 0; c = d->nodes[c].next, k++) {
        const pj_node *x = &d->nodes[c];
        if (x->type != PJ_NUM || !x->is_int || (!x->big && x->ival < 0) ||
            (x->big && d->text[x->start] == '-'))
            ok = 0;
        else if (x->big) big = 1;
        else dims[k] = x->ival;
    }
    if (!ok) {
        pj_snippet(d, sh, 60, s1, sizeof s1);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "tensor %s: shape must be a list of at most 2 non-negative integers, got %s",
                       q, s1);
    }
    e->ndim = (int)sn->count;
    ok = on->type == PJ_ARR && on->count == 2;
    int64_t c0 = ok ? on->first : -1, c1 = ok ? d->nodes[c0].next : -1;
    if (ok &&
        !(d->nodes[c0].type == PJ_NUM && d->nodes[c0].is_int && d->nodes[c1].type == PJ_NUM &&
          d->nodes[c1].is_int))
        ok = 0;
    if (!ok) {
        pj_snippet(d, of, 60, s1, sizeof s1);
        return pg_fail(PG_STATUS_ERR_VALUE, "tensor %s: data_offsets must be two integers, got %s",
                       q, s1);
    }
    const pj_node *b = &d->nodes[c0], *en = &d->nodes[c1];
    if (b->big || en->big || b->ival < 0 || b->ival > en->ival || en->ival > dlen) {
        pj_snippet(d, c0, 30, s1, sizeof s1);
        pj_snippet(d, c1, 30, s2, sizeof s2);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "tensor %s: data_offsets [%s, %s] lie outside the %lld data bytes "
                       "(truncated or corrupt file)",
                       q, s1, s2, (long long)dlen);
    }
    /* elements * itemsize without overflow: the offsets are <= dlen < 2^63 */
    int64_t isz = ITEMSIZE[e->dtype], span = en->ival - b->ival;
    int over = big || (dims[1] && dims[0] > INT64_MAX / dims[1]);
    int64_t numel = over ? 0 : dims[0] * dims[1];
    over = over || numel > INT64_MAX / isz;
    if (over || numel * isz != span) {
        pj_snippet(d, sh, 60, s1, sizeof s1);
        if (over)
            return pg_fail(
                PG_STATUS_ERR_VALUE,
                "tensor %s: data_offsets span %lld bytes but shape %s of %s needs more than %lld",
                q, (long long)span, s1, e->dtype ? "F64" : "F32", (long long)INT64_MAX);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "tensor %s: data_offsets span %lld bytes but shape %s of %s needs %lld", q,
                       (long long)span, s1, e->dtype ? "F64" : "F32", (long long)(numel * isz));
    }
    e->rows = dims[0];
    e->cols = dims[1];
    e->begin = b->ival;
    e->end = en->ival;
    return 0;
}

static int cmp_span(const void *a, const void *b)
{
    const st_entry *x = *(st_entry *const *)a, *y = *(st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Overlaps, gaps and trailing bytes (safetensors: the data section is entirely indexed). */
static int check_spans(pg_st_file *f, int64_t dlen)
{
    if (!f->n) {
        if (dlen)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "the data section has %lld bytes but no tensor uses them",
                           (long long)dlen);
        return 0;
    }
    st_entry **s = malloc((size_t)f->n * sizeof *s);
    if (!s) return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading the header");
    for (int64_t i = 0; i < f->n; i++) s[i] = &f->t[i];
    qsort(s, (size_t)f->n, sizeof *s, cmp_span);
    char q1[400], q2[400];
    int rc = 0;
    if (s[0]->begin > 0) {
        pj_qname(s[0]->name, q1, sizeof q1);
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "the data section starts with %lld bytes no tensor uses (before tensor %s)",
                     (long long)s[0]->begin, q1);
    }
    for (int64_t i = 0; !rc && i + 1 < f->n; i++) {
        if (s[i + 1]->begin == s[i]->end) continue;
        pj_qname(s[i]->name, q1, sizeof q1);
        pj_qname(s[i + 1]->name, q2, sizeof q2);
        if (s[i + 1]->begin < s[i]->end)
            rc = pg_fail(PG_STATUS_ERR_VALUE, "tensors %s and %s overlap in the data section", q1,
                         q2);
        else
            rc = pg_fail(PG_STATUS_ERR_VALUE, "tensors %s and %s leave a gap in the data section",
                         q1, q2);
    }
    if (!rc && s[f->n - 1]->end != dlen)
        rc = pg_fail(PG_STATUS_ERR_VALUE, "the data section has %lld bytes after the last tensor",
                     (long long)(dlen - s[f->n - 1]->end));
    free(s);
    return rc;
}

static int parse_header(pg_st_file *f, int64_t hlen, int64_t dlen)
{
    char why[480];
    const char *t = f->text;
    if (!pj_utf8_ok((const unsigned char *)t, hlen))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "not a safetensors model file: the header is not UTF-8 text");
    int64_t i = 0;
    while (i < hlen && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
    if (i == hlen || t[i] != '{')
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "not a safetensors model file: the header is not a JSON object");
    int rc = pj_parse(t, hlen, NULL, &f->doc, why, sizeof why);
    if (rc == PG_STATUS_ERR_NOMEM) return pg_fail(rc, "out of memory reading the header");
    if (rc) return pg_fail(PG_STATUS_ERR_VALUE, "the header is not valid JSON (%s)", why);
    pj_doc *d = &f->doc;
    if (d->nodes[0].type != PJ_OBJ)
        return pg_fail(PG_STATUS_ERR_VALUE, "the header is not a JSON object");
    int64_t m = pj_get(d, 0, "__metadata__");
    int64_t nm = m >= 0 && d->nodes[m].type == PJ_OBJ ? d->nodes[m].count : 0;
    if (m >= 0 && d->nodes[m].type != PJ_OBJ && d->nodes[m].type != PJ_NULL)
        return pg_fail(PG_STATUS_ERR_VALUE, "__metadata__ must map strings to strings");
    int64_t nt = d->nodes[0].count - (m >= 0);
    f->mk = malloc((size_t)(nm + 1) * sizeof(char *));
    f->mv = malloc((size_t)(nm + 1) * sizeof(char *));
    f->t = calloc((size_t)(nt + 1), sizeof(st_entry));
    if (!f->mk || !f->mv || !f->t)
        return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading the header");
    for (int64_t c = nm ? d->nodes[m].first : -1; c >= 0; c = d->nodes[c].next) {
        if (d->nodes[c].type != PJ_STR)
            return pg_fail(PG_STATUS_ERR_VALUE, "__metadata__ must map strings to strings");
        f->mk[f->n_meta] = d->pool + d->nodes[c].kstr;
        f->mv[f->n_meta++] = d->pool + d->nodes[c].str;
    }
    for (int64_t c = d->nodes[0].first; c >= 0; c = d->nodes[c].next) {
        if (c == m) continue;
        if ((rc = check_entry(f, c, &f->t[f->n], dlen))) return rc;
        f->n++;
    }
    return check_spans(f, dlen);
}

int pg_st_open(const char *path, pg_st_file **out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_st_open(): out is NULL");
    *out = NULL;
    if (!path) return pg_fail(PG_STATUS_ERR_ARG, "pg_st_open(): path is NULL");
    if (!is_le()) return pg_fail(PG_STATUS_ERR_STATE, "model files need a little-endian host");
    pg_st_file *f = calloc(1, sizeof *f);
    if (!f) return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory opening '%s'", path);
    int rc = 0;
    unsigned char lb[8];
#if !defined(_WIN32)
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses anything but a
     * regular file (a FIFO, /dev/zero, a terminal would block or never end), and the open file
     * is the one checked (no race with a rename between a stat and the open) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        rc = pg_fail_io(errno, "cannot open file '%s': %s", path, strerror(errno));
        goto fail;
    }
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        rc = pg_fail(PG_STATUS_ERR_VALUE, "not a regular file (%s): model files are regular files",
                     S_ISDIR(sb.st_mode) ? "a directory" : "a FIFO, device or socket");
        goto fail;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    f->fp = fdopen(fd, "rb");
    if (!f->fp) {
        rc = pg_fail_io(errno, "cannot open file '%s': %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
#else
    f->fp = fopen(path, "rb");
    if (!f->fp) {
        rc = pg_fail_io(errno, "cannot open file '%s': %s", path, strerror(errno));
        goto fail;
    }
#endif
    int64_t size;
    if (fseeko(f->fp, 0, SEEK_END) || (size = (int64_t)ftello(f->fp)) < 0 ||
        fseeko(f->fp, 0, SEEK_SET)) {
        rc = pg_fail_io(errno, "cannot read '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (size < 8) {
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "not a safetensors model file: %lld bytes, shorter than the 8-byte header "
                     "length (truncated?)",
                     (long long)size);
        goto fail;
    }
    if (read_all(f->fp, lb, 8)) {
        rc = pg_fail_io(EIO, "cannot read '%s'", path);
        goto fail;
    }
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = hl << 8 | lb[k];
    if (hl < 2) {
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "not a safetensors model file: header length %llu is too small",
                     (unsigned long long)hl);
        goto fail;
    }
    if (hl > (uint64_t)ST_MAX_HEADER) {
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "not a safetensors model file: header length %llu exceeds the %lld-byte limit",
                     (unsigned long long)hl, (long long)ST_MAX_HEADER);
        goto fail;
    }
    if ((int64_t)hl > size - 8) {
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "truncated file: the header says %llu bytes but only %lld follow",
                     (unsigned long long)hl, (long long)(size - 8));
        goto fail;
    }
    f->text = malloc((size_t)hl + 1);
    if (!f->text) {
        rc = pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading the header of '%s'", path);
        goto fail;
    }
    if (read_all(f->fp, f->text, (int64_t)hl)) {
        rc = pg_fail_io(EIO, "cannot read '%s'", path);
        goto fail;
    }
    f->text[hl] = 0;
    f->base = 8 + (int64_t)hl;
    if ((rc = parse_header(f, (int64_t)hl, size - f->base))) goto fail;
    *out = f;
    return 0;
fail:
    pg_st_close(f);
    return rc;
}

int pg_file_kind(const char *path)
{
    struct stat sb;
    if (!path || stat(path, &sb)) return PG_FILE_KIND_MISSING; /* stat never opens a FIFO */
    return S_ISREG(sb.st_mode) ? PG_FILE_KIND_REGULAR
        : S_ISDIR(sb.st_mode)  ? PG_FILE_KIND_DIR
                               : PG_FILE_KIND_OTHER;
}

/* R serialization (gzip, bzip2 or xz compressed, or plain XDR / ASCII / binary) by its first
 * bytes; a plausible safetensors start (a header length within the file, then '{') wins */
int pg_file_is_rds(const char *path)
{
    static const unsigned char magic[][7] = {
        {2, 0x1f, 0x8b},         {3, 'B', 'Z', 'h'}, {6, 0xfd, '7', 'z', 'X', 'Z', 0},
        {5, 'X', '\n', 0, 0, 0}, {2, 'A', '\n'},     {2, 'B', '\n'}};
    unsigned char b[9];
    struct stat sb;
    if (pg_file_kind(path) != PG_FILE_KIND_REGULAR || stat(path, &sb)) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n < 6) return 0;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i];
    if (n == 9 && hl <= (uint64_t)ST_MAX_HEADER && 8 + (int64_t)hl <= (int64_t)sb.st_size &&
        b[8] == '{')
        return 0;
    for (size_t k = 0; k < sizeof magic / sizeof magic[0]; k++)
        if (!memcmp(b, magic[k] + 1, magic[k][0])) return 1;
    return 0;
}

#define VALID(f, i) ((f) && (i) >= 0 && (i) < (f)->n)
int64_t pg_st_count(const pg_st_file *f) { return f ? f->n : 0; }
const char *pg_st_name(const pg_st_file *f, int64_t i) { return VALID(f, i) ? f->t[i].name : NULL; }
int pg_st_dtype(const pg_st_file *f, int64_t i) { return VALID(f, i) ? f->t[i].dtype : -1; }
int64_t pg_st_rows(const pg_st_file *f, int64_t i) { return VALID(f, i) ? f->t[i].rows : -1; }
int64_t pg_st_cols(const pg_st_file *f, int64_t i) { return VALID(f, i) ? f->t[i].cols : -1; }
int64_t pg_st_nbytes(const pg_st_file *f, int64_t i)
{
    return VALID(f, i) ? f->t[i].end - f->t[i].begin : -1;
}
int64_t pg_st_meta_count(const pg_st_file *f) { return f ? f->n_meta : 0; }
const char *pg_st_meta_key(const pg_st_file *f, int64_t i)
{
    return f && i >= 0 && i < f->n_meta ? f->mk[i] : NULL;
}
const char *pg_st_meta_value(const pg_st_file *f, int64_t i)
{
    return f && i >= 0 && i < f->n_meta ? f->mv[i] : NULL;
}

int pg_st_read(pg_st_file *f, int64_t i, void *dst, int64_t nbytes)
{
    if (!VALID(f, i))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_st_read(): no tensor %lld", (long long)i);
    if (nbytes != f->t[i].end - f->t[i].begin || (nbytes && !dst))
        return pg_fail(PG_STATUS_ERR_VALUE, "pg_st_read(): tensor %lld has %lld bytes, not %lld",
                       (long long)i, (long long)(f->t[i].end - f->t[i].begin), (long long)nbytes);
    if (!nbytes) return 0;
    if (fseeko(f->fp, (off_t)(f->base + f->t[i].begin), SEEK_SET) || read_all(f->fp, dst, nbytes))
        return pg_fail_io(EIO, "cannot read tensor %lld of the file (changed while reading?)",
                          (long long)i);
    return 0;
}

int pg_st_read_colmajor_f64(pg_st_file *f, int64_t i, double *dst, int64_t n)
{
    if (!VALID(f, i))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_st_read_colmajor_f64(): no tensor %lld",
                       (long long)i);
    const st_entry *e = &f->t[i];
    if (n != e->rows * e->cols)
        return pg_fail(PG_STATUS_ERR_VALUE, "pg_st_read_colmajor_f64(): wrong element count");
    int64_t nb = e->end - e->begin;
    void *tmp = malloc(nb ? (size_t)nb : 1);
    if (!tmp)
        return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading tensor %lld", (long long)i);
    int rc = pg_st_read(f, i, tmp, nb);
    if (!rc)
        for (int64_t r = 0; r < e->rows; r++)
            for (int64_t c = 0; c < e->cols; c++) {
                int64_t k = r * e->cols + c;
                double v;
                if (e->dtype == PG_ST_DTYPE_F32) {
                    float x;
                    memcpy(&x, (char *)tmp + 4 * k, 4);
                    v = x;
                } else memcpy(&v, (char *)tmp + 8 * k, 8);
                dst[c * e->rows + r] = v;
            }
    free(tmp);
    return rc;
}
