/* The core's one pointer map: open addressing, key -> (count, flag), for the walks that meet a
 * tensor or storage more than once (memory.c's reports, graph.c's report). Not a cffi header. */
#ifndef PG_PTRMAP_H
#define PG_PTRMAP_H
#include <stdint.h>

/* the pointer hash (also gradmap.c's index): allocations are 16-byte aligned, so the low bits
 * carry nothing; Fibonacci hashing spreads the rest */
static inline uint64_t pg_ptr_hash(const void *k)
{
    return ((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull;
}

typedef struct {
    const void *key; /* NULL: empty slot */
    int64_t count;
    int flag;
} pg_ptrmap_ent;

typedef struct {
    pg_ptrmap_ent *e;
    int64_t cap, n; /* cap: 0 or a power of two, at least twice n */
} pg_ptrmap;

/* Entry for k (non-NULL); created zeroed when absent and create is set. NULL: absent, or out of
 * memory when creating. Entries stay valid until the next insertion. */
pg_ptrmap_ent *pg_ptrmap_get(pg_ptrmap *m, const void *k, int create);
/* 1 if k was added, 0 if already there, -1 out of memory */
int pg_ptrmap_add(pg_ptrmap *m, const void *k);
void pg_ptrmap_free(pg_ptrmap *m);

#endif
