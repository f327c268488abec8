/* Gradient maps (backward()'s result): lookups by key address and id, the values, copies made
 * before an in-place change, and maps built from given keys. tape.c builds them in backward. */
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "gradmap_internal.h"
#include "ptrmap.h"

void pg_gradmap_index(pg_gradmap *m)
{
    int64_t cap = 16;
    while (cap < 2 * m->n) cap *= 2;
    m->hidx = calloc((size_t)cap, sizeof *m->hidx);
    if (!m->hidx) return; /* lookups fall back to a scan */
    m->hcap = cap;
    for (int64_t i = 0; i < m->n; i++) {
        uint64_t h = pg_ptr_hash(m->keys[i]);
        int64_t s = (int64_t)(h & (uint64_t)(cap - 1));
        while (m->hidx[s]) s = (s + 1) & (cap - 1);
        m->hidx[s] = i + 1;
    }
}

/* A map value about to be changed in place (clip_grad_norm / clip_grad_value on a map): when it
 * shares its buffer with a tensor's .grad (backward() hands the first gradient to both), the
 * map gets its own copy first, so .grad stays untouched as in ggmlR. NULL if absent or OOM. */
pg_tensor *pg_gradmap_get_own(pg_gradmap *m, pg_tensor *key)
{
    return pg_gradmap_own_value(m, pg_gradmap_get(m, key));
}

/* the map's value g (NULL passes through), unshared as above */
pg_tensor *pg_gradmap_own_value(pg_gradmap *m, pg_tensor *g)
{
    if (!g || (g->refcount <= 1 && g->st->refcount <= 1)) return g;
    pg_tensor *c = pg_new(g->dtype, g->ne[0], g->ne[1], PG_MEM_CATEGORY_GRAD);
    if (!c) return NULL;
    memcpy(pg_data(c), pg_data(g), (size_t)pg_numel(g) * pg_dtype_size(g->dtype));
    for (int64_t i = 0; i < m->n; i++)
        if (m->vals[i] == g) {
            m->vals[i] = c;
            break;
        }
    pg_tensor_release(g);
    return c;
}

/* an empty map with room for n entries (n set by the caller), NULL when out of memory */
pg_gradmap *pg_gradmap_alloc(int64_t n)
{
    size_t k = (size_t)(n ? n : 1);
    pg_gradmap *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->keys = malloc(k * sizeof *m->keys);
    m->ids = malloc(k * sizeof *m->ids);
    m->leaf = malloc(k);
    m->vals = malloc(k * sizeof *m->vals);
    if (!m->keys || !m->ids || !m->leaf || !m->vals) {
        free(m->keys);
        free(m->ids);
        free(m->leaf);
        free(m->vals);
        free(m);
        return NULL;
    }
    return m;
}

int64_t pg_gradmap_size(pg_gradmap *m) { return m ? m->n : 0; }
int64_t pg_gradmap_key_id(pg_gradmap *m, int64_t i)
{
    return (m && i >= 0 && i < m->n) ? m->ids[i] : -1;
}
int pg_gradmap_key_is_leaf(pg_gradmap *m, int64_t i)
{
    return (m && i >= 0 && i < m->n) ? m->leaf[i] : -1;
}
pg_tensor *pg_gradmap_value(pg_gradmap *m, int64_t i)
{
    return (m && i >= 0 && i < m->n) ? m->vals[i] : NULL;
}

pg_tensor *pg_gradmap_get(pg_gradmap *m, pg_tensor *key)
{
    if (!m || !key) return NULL;
    if (m->hidx) {
        uint64_t h = pg_ptr_hash(key);
        int64_t s = (int64_t)(h & (uint64_t)(m->hcap - 1));
        while (m->hidx[s]) {
            int64_t e = m->hidx[s] - 1;
            if (m->keys[e] == key && m->ids[e] == key->id) return m->vals[e];
            s = (s + 1) & (m->hcap - 1);
        }
        return NULL;
    }
    for (int64_t i = 0; i < m->n; i++)
        if (m->keys[i] == key && m->ids[i] == key->id) return m->vals[i];
    return NULL;
}

pg_tensor *pg_gradmap_get_id(pg_gradmap *m, int64_t id)
{
    if (!m) return NULL;
    for (int64_t i = 0; i < m->n; i++)
        if (m->ids[i] == id) return m->vals[i];
    return NULL;
}

void pg_gradmap_free(pg_gradmap *m)
{
    if (!m) return;
    for (int64_t i = 0; i < m->n; i++) pg_tensor_release(m->vals[i]);
    PG_FREE_ALL(m->keys, m->ids, m->leaf, m->vals, m->hidx, m);
    pg_count_object(0, -1);
}

/* A gradient map over given keys / values (values retained; keys matched by address and id). */
pg_gradmap *pg_gradmap_make(pg_tensor **keys, pg_tensor **vals, int64_t n)
{
    pg_gradmap *m = pg_gradmap_alloc(n);
    if (!m) return pg_fail_null(PG_STATUS_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        m->keys[i] = keys[i];
        m->ids[i] = keys[i]->id;
        m->leaf[i] = keys[i]->node == NULL;
        m->vals[i] = vals[i];
        pg_tensor_retain(vals[i]);
    }
    m->n = n;
    pg_gradmap_index(m);
    pg_count_object(0, 1);
    return m;
}
