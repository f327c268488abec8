/* The pointer map (ptrmap.h). */
#include <stdlib.h>
#include "ptrmap.h"

static int grow(pg_ptrmap *m)
{
    int64_t cap = m->cap ? m->cap * 2 : 256;
    pg_ptrmap_ent *e = calloc((size_t)cap, sizeof *e);
    if (!e) return -1;
    for (int64_t i = 0; i < m->cap; i++) {
        if (!m->e[i].key) continue;
        int64_t s = (int64_t)(pg_ptr_hash(m->e[i].key) & (uint64_t)(cap - 1));
        while (e[s].key) s = (s + 1) & (cap - 1);
        e[s] = m->e[i];
    }
    free(m->e);
    m->e = e;
    m->cap = cap;
    return 0;
}

pg_ptrmap_ent *pg_ptrmap_get(pg_ptrmap *m, const void *k, int create)
{
    if (m->cap) {
        int64_t s = (int64_t)(pg_ptr_hash(k) & (uint64_t)(m->cap - 1));
        while (m->e[s].key) {
            if (m->e[s].key == k) return &m->e[s];
            s = (s + 1) & (m->cap - 1);
        }
    }
    if (!create) return NULL;
    if (2 * (m->n + 1) > m->cap && grow(m)) return NULL;
    int64_t s = (int64_t)(pg_ptr_hash(k) & (uint64_t)(m->cap - 1));
    while (m->e[s].key) s = (s + 1) & (m->cap - 1);
    m->e[s].key = k;
    m->n++;
    return &m->e[s];
}

int pg_ptrmap_add(pg_ptrmap *m, const void *k)
{
    int64_t n = m->n;
    if (!pg_ptrmap_get(m, k, 1)) return -1;
    return m->n > n;
}

void pg_ptrmap_free(pg_ptrmap *m)
{
    free(m->e);
    m->e = NULL;
    m->cap = m->n = 0;
}
