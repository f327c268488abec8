/* The gradient map's layout, shared by tape.c (backward builds maps) and gradmap.c. Not a cffi
 * header. */
#ifndef PG_GRADMAP_INTERNAL_H
#define PG_GRADMAP_INTERNAL_H
#include "pg.h"

struct pg_gradmap {
    int64_t n;
    /* Keys are NOT owned: a map must not keep the step's activations alive after the tape is
     * cleared. A key is matched by address AND id, so a freed key whose address is reused by a
     * new tensor never matches; keys are never dereferenced. */
    const pg_tensor **keys;
    int64_t *ids;
    unsigned char
        *leaf; /* no recorded op produced the key (parameters, inputs): R binds these by name */
    pg_tensor **vals; /* owned refs */
    int64_t hcap;     /* open-addressing index over keys: slot -> entry + 1 (0 empty) */
    int64_t *hidx;
};

/* an empty map with room for n entries (n set by the caller), NULL when out of memory */
pg_gradmap *pg_gradmap_alloc(int64_t n);
/* the open-addressing index over the keys (lookups scan when it cannot be allocated) */
void pg_gradmap_index(pg_gradmap *m);

#endif
