/* Host nodes (pg_api_host.h): a tape node whose backward is a front end's callback, run on a
 * private tape and walked into the running backward (tape.c's walk, re-entrantly). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

struct pg_host {
    pg_host_bw_fn bw;
    pg_host_free_fn destroy;
    void *ctx;
    int64_t n_xin; /* inputs beyond the node's PG_MAX_IN slots (owned refs) */
    pg_tensor **xin;
    uint64_t *xver; /* their versions when recorded */
    int64_t n_par;  /* the segment's weights seen by its forward (version.c), owned refs */
    pg_tensor **par;
    uint64_t *pver;
    char label[32];
};

/* One running host rule: its incoming gradient and what the replay must undo. */
typedef struct frame {
    pg_tensor *gout;
    int walked;
    struct frame *prev;
} frame;
static _Thread_local frame *top;
static _Thread_local int depth;

void pg_host_free(struct pg_host *h)
{
    for (int64_t i = 0; i < h->n_xin; i++) pg_tensor_release(h->xin[i]);
    free(h->xin);
    free(h->xver);
    for (int64_t i = 0; i < h->n_par; i++) pg_tensor_release(h->par[i]);
    free(h->par);
    free(h->pver);
    if (h->destroy) h->destroy(h->ctx);
    free(h);
}

/* a host node's inputs: its slots, then the further arguments (not the segment's weights in
 * par: fn's closure keeps them alive anyway, and ag_tape_memory reports them as ggmlR does) */
int64_t pg_node_n_inputs(const pg_node *n) { return n->n_in + (n->host ? n->host->n_xin : 0); }

pg_tensor *pg_node_input(const pg_node *n, int64_t i)
{
    if (i < n->n_in) return n->in[i];
    return (n->host && i - n->n_in < n->host->n_xin) ? n->host->xin[i - n->n_in] : NULL;
}

int pg_host_depth(void) { return depth; }

int pg_host_check_versions(const pg_node *n)
{
    const struct pg_host *h = n->host;
    for (int64_t i = 0; i < h->n_xin; i++)
        if (pg_version_mismatch(n, h->xin[i], h->xver[i], PG_MAX_IN + i)) return -1;
    for (int64_t i = 0; i < h->n_par; i++)
        if (pg_version_mismatch(n, h->par[i], h->pver[i], -2)) return -1;
    return 0;
}

int pg_host_fail(int status, const char *msg)
{
    return pg_fail(status > 0 ? status : PG_STATUS_ERR_STATE, "%s", msg ? msg : "host node failed");
}

/* The node's backward rule: the front end replays on a private tape; whatever it leaves behind
 * (the private tape, the replay's own tensors in the walk) goes before returning. */
static int host_bw(pg_node *n, pg_tensor *gout)
{
    struct pg_host *h = n->host;
    int64_t r0 = pg_reached_count(), mark = pg_tensor_next_id();
    if (pg_tape_stash()) return -1;
    int rc = pg_tape_begin();
    frame f = {gout, 0, top};
    if (rc == 0) {
        top = &f;
        depth++;
        pg_clear_error();
        rc = h->bw(h->ctx);
        depth--;
        top = f.prev;
    }
    pg_reached_drop_since(r0, mark);
    /* message first: unstash frees the replay's nodes, which may run front-end destructors */
    if (rc == 0 && !f.walked)
        rc = pg_fail(PG_STATUS_ERR_STATE,
                     "%s: the replay in backward() did not call pg_host_replay", h->label);
    else if (rc != 0 && !pg_last_status())
        pg_fail(PG_STATUS_ERR_STATE, "%s: the segment failed when replayed in backward()",
                h->label);
    char msg[1024];
    int st = pg_last_status();
    if (rc) snprintf(msg, sizeof msg, "%s", pg_last_error());
    pg_tape_unstash();
    if (rc) {
        pg_fail(st ? st : PG_STATUS_ERR_STATE, "%s", msg);
        return -1;
    }
    return 0;
}

int pg_host_replay(pg_tensor *out)
{
    frame *f = top;
    if (!f)
        return pg_fail(PG_STATUS_ERR_STATE,
                       "pg_host_replay: only valid inside a host node's backward");
    if (f->walked)
        return pg_fail(PG_STATUS_ERR_STATE, "pg_host_replay: called twice in one replay");
    if (pg_not_live(out, "ag_checkpoint", "the replay's value")) return PG_STATUS_ERR_ARG;
    if (out->dtype != f->gout->dtype || out->ne[0] != f->gout->ne[0] ||
        out->ne[1] != f->gout->ne[1])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "ag_checkpoint: the segment returned %s when replayed in backward() but %s "
                       "in the forward pass (fn must be reproducible)",
                       pg_desc(out), pg_desc(f->gout));
    f->walked = 1;
    return pg_tape_walk_from(out, f->gout) ? -1 : 0;
}

pg_tensor *pg_host_record(pg_tensor *value, pg_tensor **in, int64_t n_in, const char *label,
                          pg_host_bw_fn bw, void *ctx, pg_host_free_fn destroy)
{
    struct pg_host *h = NULL;
    pg_tensor *out = NULL;
    const char *op = label && label[0] ? label : "host node";
    if (!bw) {
        pg_fail(PG_STATUS_ERR_ARG, "%s: NULL backward callback", op);
        goto fail;
    }
    if (pg_not_live(value, op, "fn's value")) goto fail;
    if (n_in < 0 || (n_in > 0 && !in)) {
        pg_fail(PG_STATUS_ERR_ARG, "%s: bad input list", op);
        goto fail;
    }
    for (int64_t i = 0; i < n_in; i++)
        if (pg_not_live(in[i], op, "input")) goto fail;
    if (!pg_tape_enabled()) {
        pg_fail(PG_STATUS_ERR_STATE, "%s: the tape is not recording", op);
        goto fail;
    }
    h = calloc(1, sizeof *h);
    if (!h) {
        pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", op);
        goto fail;
    }
    snprintf(h->label, sizeof h->label, "%s", op);
    h->n_xin = n_in > PG_MAX_IN ? n_in - PG_MAX_IN : 0;
    if (h->n_xin &&
        (!(h->xin = malloc((size_t)h->n_xin * sizeof *h->xin)) ||
         !(h->xver = malloc((size_t)h->n_xin * sizeof *h->xver)))) {
        pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", op);
        goto fail;
    }
    out = pg_tensor_clone(value);
    if (!out) goto fail;
    int err;
    int n_slot = n_in > PG_MAX_IN ? PG_MAX_IN : (int)n_in;
    pg_node *n = pg_record_forced(h->label, host_bw, out, n_slot, in, &err);
    if (!n) {
        if (!err) pg_fail(PG_STATUS_ERR_STATE, "%s: the tape is not recording", op);
        goto fail;
    }
    for (int64_t i = 0; i < h->n_xin; i++) {
        h->xin[i] = in[PG_MAX_IN + i];
        pg_tensor_retain(h->xin[i]);
        h->xver[i] = pg_version_observe(h->xin[i]);
    }
    n->op = h->label;
    h->n_par = pg_seg_log_take(&h->par, &h->pver); /* the forward's weights, if it was stashed */
    h->bw = bw;
    h->destroy = destroy;
    h->ctx = ctx;
    n->host = h;
    return out;
fail:
    if (h) {
        free(h->xin);
        free(h->xver);
        free(h);
    }
    pg_tensor_release(out);
    if (destroy) destroy(ctx);
    return NULL;
}

int pg_ckpt_fail(const char *shown, int replayed)
{
    if (!shown)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_checkpoint() expects a function as its first argument.");
    if (replayed)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_checkpoint(): fn must return an ag_tensor (it returned %s when replayed "
                       "in backward())",
                       shown);
    return pg_fail(PG_STATUS_ERR_ARG, "ag_checkpoint(): fn must return an ag_tensor, got %s",
                   shown);
}
