/* Per-thread last error: the core never aborts or prints; callers read the message. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

static _Thread_local char err_msg[1024];
static _Thread_local int err_status;
static _Thread_local int err_errno; /* the system's errno of the last PG_STATUS_ERR_IO, or 0 */

const char *pg_last_error(void) { return err_msg; }
int pg_last_status(void) { return err_status; }
int pg_last_errno(void) { return err_errno; }
void pg_clear_error(void)
{
    err_msg[0] = 0;
    err_status = 0;
    err_errno = 0;
}
const char *pg_version(void) { return "0.1.0"; }

static void set_error(int status, const char *fmt, va_list ap)
{
    err_status = status;
    err_errno = 0;
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
}

int pg_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(status, fmt, ap);
    va_end(ap);
    return status;
}

int pg_fail_io(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(PG_STATUS_ERR_IO, fmt, ap);
    va_end(ap);
    err_errno = err;
    return PG_STATUS_ERR_IO;
}

void *pg_fail_null(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(status, fmt, ap);
    va_end(ap);
    return NULL;
}

/* the first position messages print: 0 (Python), 1 (R sets it at load: each language has its
 * own copy of the core) */
static int index_base;
int pg_set_index_base(int base)
{
    int prev = index_base;
    if (base == 0 || base == 1) index_base = base;
    return prev;
}
int pg_index_base(void) { return index_base; }

static int num_style; /* 1: R's names of the non-finite numbers (each language its own core) */
int pg_set_num_style(int r)
{
    int prev = num_style;
    if (r == 0 || r == 1) num_style = r;
    return prev;
}

/* R's NA_real_: a NaN whose low word is 1954 (R_IsNA's test) */
static int r_na(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (uint32_t)b == 1954;
}

static const char *fmt_num(char *buf, size_t n, double v, int prec)
{
    const int r = num_style;
    if (v != v) snprintf(buf, n, "%s", !r ? "nan" : r_na(v) ? "NA" : "NaN");
    else if (v > 1.7976931348623157e308) snprintf(buf, n, "%s", r ? "Inf" : "inf");
    else if (v < -1.7976931348623157e308) snprintf(buf, n, "%s", r ? "-Inf" : "-inf");
    else {
        snprintf(buf, n, "%.*g", prec, v);
        /* a whole number %g rounds (2^70: 1.18059e+21) keeps its value: every digit below 1e22
         * (Python's int of it), else the fewest digits that read back as v */
        if (v == floor(v) && strtod(buf, NULL) != v) {
            if (fabs(v) < 1e22) snprintf(buf, n, "%.0f", v);
            else
                for (int p = 7; p <= 17; p++) {
                    snprintf(buf, n, "%.*g", p, v);
                    if (strtod(buf, NULL) == v) break;
                }
        }
    }
    return buf;
}

const char *pg_fmt_num(char *buf, size_t n, double v) { return fmt_num(buf, n, v, 6); }

const char *pg_fmt_num15(char *buf, size_t n, double v) { return fmt_num(buf, n, v, 15); }

const char *pg_num(double v)
{
    static _Thread_local char buf[4][40];
    static _Thread_local int k;
    return pg_fmt_num(buf[k++ & 3], sizeof buf[0], v);
}

void pg_text_put(pg_text *t, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof tmp) n = (int)sizeof tmp - 1;
    if (t->buf && t->len < t->cap - 1) {
        const int64_t room = t->cap - 1 - t->len, k = n < room ? n : room;
        memcpy(t->buf + t->len, tmp, (size_t)k);
        t->buf[t->len + k] = '\0';
    }
    t->len += n;
}

const char *pg_dtype_name(int dtype)
{
    switch (dtype) {
    case PG_DTYPE_F32: return "f32";
    case PG_DTYPE_F64: return "f64";
    case PG_DTYPE_I32: return "i32";
    case PG_DTYPE_I64: return "i64";
    case PG_DTYPE_U8: return "u8";
    default: return "?";
    }
}

const char *pg_desc(const pg_tensor *t)
{
    static _Thread_local char buf[4][64];
    static _Thread_local int k;
    char *b = buf[k++ & 3];
    if (!t) snprintf(b, 64, "NULL");
    else
        snprintf(b, 64, "[%lldx%lld] %s", (long long)t->ne[0], (long long)t->ne[1],
                 pg_dtype_name(t->dtype));
    return b;
}
