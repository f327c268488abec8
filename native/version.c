/* Tensor versions (pg_api_version.h): the counter every write bumps, the hash that stands in
 * for it on exposed buffers, and backward's check of a node before its rule runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

static uint64_t data_hash(const pg_storage *s)
{
    const unsigned char *p = s->data;
    size_t n = s->nbytes, i = 0;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001B3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

uint64_t pg_version_observe(pg_tensor *t)
{
    pg_storage *s = t->st;
    if (s->exposed) { /* a view's writes since the last look count as one write */
        uint64_t h = data_hash(s);
        if (s->hash_ok && h != s->hash) __atomic_add_fetch(&s->version, 1, __ATOMIC_RELAXED);
        s->hash = h;
        s->hash_ok = 1;
    }
    return __atomic_load_n(&s->version, __ATOMIC_RELAXED);
}

int64_t pg_tensor_version(pg_tensor *t)
{
    return pg_not_live(t, "version", "t") ? -1 : (int64_t)pg_version_observe(t);
}

int pg_tensor_expose(pg_tensor *t)
{
    if (pg_not_live(t, "expose", "t")) return PG_STATUS_ERR_ARG;
    pg_storage *s = t->st;
    if (s->exposed++ == 0) { /* hash the values the first view starts from */
        s->hash = data_hash(s);
        s->hash_ok = 1;
    }
    return 0;
}

int pg_tensor_unexpose(pg_tensor *t)
{
    if (pg_not_live(t, "unexpose", "t")) return PG_STATUS_ERR_ARG;
    pg_storage *s = t->st;
    if (s->exposed <= 0) return 0;
    pg_version_observe(t); /* the last view's writes count before hashing stops */
    if (--s->exposed == 0) s->hash_ok = 0;
    return 0;
}

/* 0 when tensor `t` (input `slot` of node n, -1 its output, -2 a checkpoint segment's parameter) is still at the version recorded, else the error. */
int pg_version_mismatch(const pg_node *n, pg_tensor *t, uint64_t want, int64_t slot)
{
    uint64_t now = pg_version_observe(t);
    if (now == want) return 0;
    char where[48];
    if (slot == -2) snprintf(where, sizeof where, "a parameter");
    else if (slot < 0) snprintf(where, sizeof where, "output");
    else snprintf(where, sizeof where, "input %lld", (long long)slot + 1);
    return pg_fail(PG_STATUS_ERR_MODIFIED,
                   "backward(): one of the variables needed for gradient computation has been "
                   "modified by an inplace operation: "
                   "tensor %s (%s of %s) is at version %llu; expected version %llu. Write new "
                   "values after backward(), or record the forward pass again",
                   pg_desc(t), where, n->op && n->op[0] ? n->op : "a node", (unsigned long long)now,
                   (unsigned long long)want);
}

int pg_node_check_versions(const pg_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] && !(n->ver_skip & (1u << i)) &&
            pg_version_mismatch(n, n->in[i], n->ver[i], i))
            return -1;
    if (n->host && pg_host_check_versions(n)) return -1;
    return pg_version_mismatch(n, n->out, n->ver[PG_MAX_IN], -1);
}

/* ---- checkpoint segments: the parameters a segment's closure uses ----
 * A checkpoint forward runs on a stashed tape that records nothing, so its node would know only
 * its tensor arguments. While that tape is current, every op logs its leaf inputs that require
 * grad (the segment's weights, with their versions then); the host node recorded right after
 * the unstash takes the log and backward checks them like its inputs. One log per thread: the
 * stash that began it ends it; an unclaimed log goes at the next stash, clear or thread exit. */
static _Thread_local struct {
    pg_tensor **t;
    uint64_t *ver;
    int64_t n, cap;
    int depth;    /* stash depth whose tape is logged; 0: not logging */
    int ready;    /* closed by its unstash, waiting for pg_host_record */
    int64_t mark; /* first tensor id made by the segment: its own results are not weights */
} seg;

void pg_seg_log_drop(void)
{
    for (int64_t i = 0; i < seg.n; i++) pg_tensor_release(seg.t[i]);
    free(seg.t);
    free(seg.ver);
    memset(&seg, 0, sizeof seg);
}

void pg_seg_log_unclaimed_drop(void)
{
    if (seg.ready) pg_seg_log_drop();
}

void pg_seg_log_begin(int depth)
{
    pg_seg_log_drop();
    seg.depth = depth;
    seg.mark = pg_tensor_next_id();
}

void pg_seg_log_end(int depth)
{
    if (seg.depth == depth && depth > 0) {
        seg.depth = 0;
        seg.ready = 1;
    }
}

void pg_seg_touch(pg_tensor **in, int n_in, int depth)
{
    if (seg.depth != depth || depth == 0) return;
    for (int i = 0; i < n_in; i++) {
        pg_tensor *t = in[i];
        if (!t || t->node || !t->requires_grad || t->id >= seg.mark) continue;
        int64_t k = 0;
        while (k < seg.n && seg.t[k] != t) k++;
        if (k < seg.n) continue;
        if (seg.n == seg.cap) { /* out of memory: the log stays short (fewer checks, no error) */
            int64_t cap = seg.cap ? seg.cap * 2 : 16;
            pg_tensor **nt = realloc(seg.t, (size_t)cap * sizeof *nt);
            if (!nt) return;
            seg.t = nt;
            uint64_t *nv = realloc(seg.ver, (size_t)cap * sizeof *nv);
            if (!nv) return;
            seg.ver = nv;
            seg.cap = cap;
        }
        pg_tensor_retain(t);
        seg.t[seg.n] = t;
        seg.ver[seg.n++] = pg_version_observe(t);
    }
}

int64_t pg_seg_log_take(pg_tensor ***t, uint64_t **ver)
{
    if (!seg.ready) {
        *t = NULL;
        *ver = NULL;
        return 0;
    }
    int64_t n = seg.n;
    *t = seg.t;
    *ver = seg.ver;
    memset(&seg, 0, sizeof seg);
    return n;
}
