/* The model-file writer (pg_api_codec.h): the header both front ends wrote (compact JSON,
 * __metadata__ first, tensors back to back in the given order, non-ASCII escaped as Python's
 * json.dumps does), written atomically: a temporary file next to the target, fsync, rename,
 * fsync of the directory. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifdef _WIN32
#include <io.h>
#include <windows.h>
#define fsync _commit
#else
#include <unistd.h>
#endif
#include "pg.h"
#include "codec_internal.h"

#define ST_MAX_HEADER (100LL * 1024 * 1024)

static _Thread_local int fault_stage; /* test hooks: per thread, as the errors are */
static _Thread_local char trace[128];

void pg_codec_test_fault(int stage) { fault_stage = stage; }
const char *pg_codec_trace(void) { return trace; }

static void step(const char *s)
{
    size_t n = strlen(trace);
    snprintf(trace + n, sizeof trace - n, "%s%s", n ? " " : "", s);
}

typedef struct {
    char *b;
    int64_t n, cap;
    int oom;
} buf;

static void add(buf *o, const char *s, int64_t n)
{
    if (o->oom) return;
    if (o->n + n + 1 > o->cap) {
        int64_t cap = (o->n + n + 1) * 2;
        char *nb = realloc(o->b, (size_t)cap);
        if (!nb) {
            o->oom = 1;
            return;
        }
        o->b = nb;
        o->cap = cap;
    }
    memcpy(o->b + o->n, s, (size_t)n);
    o->n += n;
}

static void add_str(buf *o, const char *s)
{
    char *q = pj_quoted(s);
    if (q) add(o, q, (int64_t)strlen(q));
    else o->oom = 1;
    free(q);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_inputs(const pg_st_tensor *t, int64_t n, const char **keys, const char **values,
                        int64_t n_meta)
{
    if (n < 0 || n_meta < 0 || (n && !t) || (n_meta && (!keys || !values)))
        return pg_fail(PG_STATUS_ERR_ARG, "ag_save_model(): bad tensor or metadata list");
    for (int64_t i = 0; i < n_meta; i++)
        if (!keys[i] || !values[i] ||
            !pj_utf8_ok((const unsigned char *)keys[i], (int64_t)strlen(keys[i])) ||
            !pj_utf8_ok((const unsigned char *)values[i], (int64_t)strlen(values[i])))
            return pg_fail(PG_STATUS_ERR_VALUE, "ag_save_model(): metadata must be UTF-8 strings");
    const char **names = malloc((size_t)(n + 1) * sizeof(char *));
    if (!names) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    names[0] = "__metadata__";
    int rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        const pg_st_tensor *x = &t[i];
        names[i + 1] = x->name;
        if (!x->name || !pj_utf8_ok((const unsigned char *)x->name, (int64_t)strlen(x->name)))
            rc =
                pg_fail(PG_STATUS_ERR_VALUE, "ag_save_model(): tensor names must be UTF-8 strings");
        else if ((x->dtype != PG_ST_DTYPE_F32 && x->dtype != PG_ST_DTYPE_F64) || x->ndim < 0 ||
                 x->ndim > 2 || x->rows < 0 || x->cols < 0 || (x->ndim < 2 && x->cols != 1) ||
                 (x->ndim == 0 && x->rows != 1) || (x->cols && x->rows > INT64_MAX / 8 / x->cols) ||
                 (x->rows * x->cols != 0 && !x->data))
            rc = pg_fail(PG_STATUS_ERR_VALUE,
                         "ag_save_model(): tensor '%s': bad dtype, shape or data", x->name);
    }
    if (!rc) {
        qsort(names, (size_t)(n + 1), sizeof(char *), cmp_name);
        for (int64_t i = 1; i <= n && !rc; i++)
            if (!strcmp(names[i - 1], names[i])) {
                char q[400];
                pj_qname(names[i], q, sizeof q);
                rc = pg_fail(PG_STATUS_ERR_VALUE, "ag_save_model(): duplicate tensor name %s", q);
            }
    }
    free(names);
    return rc;
}

static int64_t nbytes_of(const pg_st_tensor *x)
{
    return x->rows * x->cols * (x->dtype == PG_ST_DTYPE_F64 ? 8 : 4);
}

static int header(buf *o, const pg_st_tensor *t, int64_t n, const char **keys, const char **values,
                  int64_t n_meta)
{
    char tmp[160];
    add(o, "{\"__metadata__\":{", 17);
    for (int64_t i = 0; i < n_meta; i++) {
        if (i) add(o, ",", 1);
        add_str(o, keys[i]);
        add(o, ":", 1);
        add_str(o, values[i]);
    }
    add(o, "}", 1);
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        const pg_st_tensor *x = &t[i];
        add(o, ",", 1);
        add_str(o, x->name);
        int64_t nb = nbytes_of(x);
        char shape[64];
        if (x->ndim == 2)
            snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)x->rows, (long long)x->cols);
        else if (x->ndim == 1) snprintf(shape, sizeof shape, "[%lld]", (long long)x->rows);
        else snprintf(shape, sizeof shape, "[]");
        int k = snprintf(tmp, sizeof tmp,
                         ":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%lld,%lld]}",
                         x->dtype == PG_ST_DTYPE_F64 ? "F64" : "F32", shape, (long long)off,
                         (long long)(off + nb));
        add(o, tmp, k);
        if (nb > INT64_MAX - off)
            return pg_fail(PG_STATUS_ERR_VALUE, "ag_save_model(): the tensors are too large");
        off += nb;
    }
    add(o, "}", 1);
    while (!o->oom && o->n % 8) add(o, " ", 1);
    if (o->oom)
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory building the header");
    if (o->n > ST_MAX_HEADER)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_save_model(): the header would be %lld bytes, over the %lld-byte limit "
                       "readers accept",
                       (long long)o->n, (long long)ST_MAX_HEADER);
    return 0;
}

static _Thread_local int nwrites, write_fault;

static int write_all(int fd, const void *p, int64_t n)
{
    if (write_fault && ++nwrites == 3) {
        errno = ENOSPC;
        return -2;
    }
    const char *c = p;
    while (n > 0) {
        size_t chunk = n > (1 << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t w = write(fd, c, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= w;
    }
    return 0;
}

static void fsync_dir(const char *dir)
{
#ifndef _WIN32
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return;
    fsync(fd); /* best effort: some filesystems refuse it on directories */
    close(fd);
#else
    (void)dir;
#endif
}

/* Saving through a symbolic link writes its target (as editors and cp do): the rename replaces
 * the file the link names, and the link stays. Dangling links name the file to create. */
static char *resolve_links(const char *path)
{
    char *cur = strdup(path);
#ifndef _WIN32
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat ls;
        if (lstat(cur, &ls) || !S_ISLNK(ls.st_mode)) break;
        char link[4096];
        ssize_t k = readlink(cur, link, sizeof link - 1);
        if (k <= 0) break;
        link[k] = 0;
        const char *sl = strrchr(cur, '/');
        size_t dl = link[0] == '/' || !sl ? 0 : (size_t)(sl - cur) + 1;
        char *next = malloc(dl + (size_t)k + 1);
        if (!next) {
            free(cur);
            return NULL;
        }
        memcpy(next, cur, dl);
        memcpy(next + dl, link, (size_t)k + 1);
        free(cur);
        cur = next;
    }
#endif
    return cur;
}

/* The temporary file gets the replaced file's permission bits (a new file keeps what open()
 * gave it: 0666 less the umask), so a save never widens or narrows who can read the model. */
static void keep_mode(int fd, const char *path)
{
#ifndef _WIN32
    struct stat st;
    if (!stat(path, &st) && S_ISREG(st.st_mode)) (void)fchmod(fd, st.st_mode & 07777);
#else
    (void)fd;
    (void)path;
#endif
}

int pg_st_write(const char *path, const pg_st_tensor *t, int64_t n, const char **keys,
                const char **values, int64_t n_meta)
{
    int stage = fault_stage, rc;
    fault_stage = 0;
    trace[0] = 0;
    if (!path || !*path)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_save_model(): path must be a single file name");
    if ((rc = check_inputs(t, n, keys, values, n_meta))) return rc;
    buf h = {0};
    if ((rc = header(&h, t, n, keys, values, n_meta))) {
        free(h.b);
        return rc;
    }
    const char *given = path;
    char *target = resolve_links(path);
    if (!target) {
        free(h.b);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    }
    path = target;
    size_t L = strlen(path);
    const char *slash = strrchr(path, '/');
#ifdef _WIN32
    const char *bs = strrchr(path, '\\');
    if (bs && (!slash || bs > slash)) slash = bs;
#endif
    char *dir = malloc(L + 2), *tmp = malloc(L + 48);
    if (!dir || !tmp) {
        free(dir);
        free(tmp);
        free(h.b);
        free(target);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    }
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    if (dl) memcpy(dir, path, dl);
    else {
        dir[0] = '.';
        dir[1] = '/';
        dl = 2;
    }
    dir[dl] = 0;
    struct stat st;
    int bad_dir = stat(dir, &st) ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (bad_dir) {
        dir[dl > 1 ? dl - 1 : dl] = 0;
        rc = bad_dir == ENOENT || bad_dir == ENOTDIR
            ? pg_fail_io(bad_dir, "ag_save_model(): directory '%s' does not exist", dir)
            : pg_fail_io(bad_dir, "ag_save_model(): directory '%s' cannot be reached: %s", dir,
                         strerror(bad_dir));
        free(dir);
        free(tmp);
        free(h.b);
        free(target);
        return rc;
    }
    /* renaming over a FIFO, a device or a directory would replace it (or fail late): refuse */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "ag_save_model(): '%s' exists and is not a regular file (%s)", path,
                     S_ISDIR(st.st_mode) ? "a directory" : "a FIFO, device or socket");
        free(dir);
        free(tmp);
        free(h.b);
        return rc;
    }
    const char *base = slash ? slash + 1 : path;
    int fd = -1;
    static unsigned long counter;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        unsigned long r = (unsigned long)time(NULL) * 2654435761u ^ (unsigned long)(uintptr_t)&h ^
            (++counter * 40503u);
#ifndef _WIN32
        r ^= (unsigned long)getpid() << 16;
#endif
        snprintf(tmp, L + 48, "%.*s.%s.%08lx.tmp", (int)(slash ? dl : 0), path, base,
                 r & 0xffffffffUL);
        fd = open(tmp,
                  O_WRONLY | O_CREAT | O_EXCL
#ifdef O_BINARY
                      | O_BINARY
#endif
                  ,
                  0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        rc = pg_fail_io(e, "ag_save_model(): cannot create a temporary file next to '%s': %s",
                        given, strerror(e));
        free(dir);
        free(tmp);
        free(h.b);
        free(target);
        return rc;
    }
    keep_mode(fd, path);
    unsigned char lb[8];
    for (int k = 0; k < 8; k++) lb[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
    nwrites = 0;
    write_fault = stage == 1;
    const char *fail = NULL;
    int err = 0; /* the errno behind fail (an injected failure: the one a real one would give) */
    int w = write_all(fd, lb, 8);
    if (!w) w = write_all(fd, h.b, h.n);
    for (int64_t i = 0; i < n && !w; i++) w = write_all(fd, t[i].data, nbytes_of(&t[i]));
    if (w) {
        err = w == -2 ? ENOSPC : errno ? errno : EIO;
        fail = w == -2 ? "injected failure in write (disk full)" : strerror(err);
    } else step("write");
    if (!fail && (stage == 2 || fsync(fd))) {
        err = stage == 2 ? EIO : errno;
        fail = stage == 2 ? "injected failure in fsync" : strerror(err);
    } else if (!fail) step("fsync");
    if (close(fd) && !fail) fail = strerror(err = errno);
    if (!fail) {
#ifdef _WIN32
        int bad = stage == 3 ||
            !MoveFileExA(tmp, path, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
#else
        int bad = stage == 3 || rename(tmp, path) != 0;
#endif
        if (bad) {
            err = stage == 3 ? EIO : errno;
            fail = stage == 3 ? "injected failure in replace" : strerror(err);
        } else step("rename");
    }
    if (fail) {
        rc = pg_fail_io(err, "ag_save_model(): writing '%s' failed (%s)", given, fail);
        remove(tmp);
    } else {
        fsync_dir(dir);
        step("fsync-dir");
    }
    free(dir);
    free(tmp);
    free(h.b);
    free(target);
    return rc;
}
