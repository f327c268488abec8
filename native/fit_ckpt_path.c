/* ag_model_checkpoint's path rule, once for both front ends (R substituted only "{epoch}" and
 * kept "{{" as two braces; Python ran str.format): "{epoch}" (or "{epoch:<width>d}", zero-padded
 * with a leading 0) is the epoch, "{{" and "}}" are literal braces, anything else in braces is
 * refused; the directory of the first epoch's file must exist and be writable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <io.h>
#define access _access
#define W_OK   2
#define X_OK   0 /* no search bit on Windows */
#else
#include <unistd.h>
#endif
#include "pg.h"

static const char *const OP = "ag_model_checkpoint";

static int bad(const char *path)
{
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: path '%s' has a placeholder other than {epoch} (write a literal brace as "
                   "{{ or }})",
                   OP, path);
}

/* "{epoch}" / "{epoch:d}" / "{epoch:5d}" / "{epoch:03d}" at p (just after '{'): the width and the
 * zero flag; the length up to and including '}', or 0 when it is no epoch placeholder */
static size_t epoch_field(const char *p, int *zero, int *width)
{
    *zero = *width = 0;
    if (strncmp(p, "epoch", 5) != 0) return 0;
    const char *q = p + 5;
    if (*q == ':') {
        q++;
        if (*q == '0') *zero = 1, q++;
        while (*q >= '0' && *q <= '9' && *width < 1000) *width = *width * 10 + (*q++ - '0');
        if (*q++ != 'd') return 0;
    }
    return *q == '}' ? (size_t)(q - p + 1) : 0;
}

int64_t pg_checkpoint_path(const char *path, int64_t epoch, char *out, int64_t cap)
{
    if (!path || (cap > 0 && !out) || cap < 0)
        return -pg_fail(PG_STATUS_ERR_ARG, "%s: NULL path or output", OP);
    int64_t n = 0;
    char num[1100];
    for (const char *p = path; *p;) {
        const char *piece = p;
        size_t len = 1;
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            p += 2; /* one literal brace */
        } else if (p[0] == '}') {
            return -bad(path);
        } else if (p[0] == '{') {
            int zero, width;
            const size_t k = epoch_field(p + 1, &zero, &width);
            if (!k) return -bad(path);
            snprintf(num, sizeof num, zero ? "%0*lld" : "%*lld", width, (long long)epoch);
            piece = num;
            len = strlen(num);
            p += 1 + k;
        } else {
            p++;
        }
        for (size_t i = 0; i < len; i++, n++)
            if (n + 1 < cap) out[n] = piece[i];
    }
    if (cap > 0) out[n + 1 < cap ? n : cap - 1] = 0;
    return n;
}

int pg_checkpoint_path_check(const char *path)
{
    char first[4096];
    const int64_t n = pg_checkpoint_path(path, 1, first, sizeof first);
    if (n < 0) return (int)-n;
    if (!*path) return pg_fail(PG_STATUS_ERR_VALUE, "%s: path must be a file name, got ''", OP);
    if (n >= (int64_t)sizeof first)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: path '%.200s...' is too long", OP, path);
    char *slash = strrchr(first, '/'); /* the directory as Python's os.path.dirname (POSIX) */
    const char *dir = ".";
    if (slash == first) dir = "/";
    else if (slash) *slash = 0, dir = first;
    if (pg_file_kind(dir) != PG_FILE_KIND_DIR)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: directory '%s' of path '%s' does not exist", OP,
                       dir, path);
    if (access(dir, W_OK | X_OK) != 0)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: directory '%s' of path '%s' is not writable", OP,
                       dir, path);
    return 0;
}
