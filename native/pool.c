/* A cache of freed tensor buffers (and of the core's own small structs), reused for requests of
 * the same size.
 *
 * Training loops allocate the same activation and gradient sizes every step. Large blocks come
 * from the system as fresh pages (mmap), so without reuse every step pays page faults on cold
 * memory (the R package, whose garbage collector frees late, paid ~10% of a step for it). Blocks
 * of 4 KB and more are kept per exact size, up to a total cap, and handed out again. The memory
 * counters are unchanged by this: they count bytes held by tensors, not bytes cached here
 * (pg_memory_cached tells those; pg_memory_trim returns them to the system).
 * Disabled under AddressSanitizer, so reuse never hides a use-after-free. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

#if defined(__SANITIZE_ADDRESS__)
#define POOL_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ENABLED 0
#endif
#endif
#ifndef POOL_ENABLED
#define POOL_ENABLED 1
#endif

/* Buffers of every size are kept: the R package frees a step's tensors in one burst at each
 * collection, and glibc then spent ~9% of a small model's step consolidating and splitting the
 * small chunks (measured); reuse here costs a lock and a list pop. */
#define POOL_MIN  ((size_t)64)
#define POOL_CAP  ((size_t)256 << 20)
#define POOL_BINS 1024 /* distinct sizes kept (small sizes count too); a power of two */

typedef struct block {
    struct block *next;
} block;

static struct {
    size_t size;
    block *head;
} bins[POOL_BINS];
static size_t cached;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(size_t sz)
{
    size_t s = (size_t)((sz >> 6) * 0x9E3779B97F4A7C15ull) & (POOL_BINS - 1);
    for (size_t k = 0; k < POOL_BINS; k++, s = (s + 1) & (POOL_BINS - 1))
        if (bins[s].size == sz || bins[s].size == 0) return s;
    return POOL_BINS; /* table full */
}

void *pg_pool_get(size_t sz)
{
    if (!POOL_ENABLED || sz < POOL_MIN) return NULL;
    void *p = NULL;
    pthread_mutex_lock(&mu);
    size_t s = slot_of(sz);
    if (s < POOL_BINS && bins[s].size == sz && bins[s].head) {
        block *b = bins[s].head;
        bins[s].head = b->next;
        cached -= sz;
        p = b;
    }
    pthread_mutex_unlock(&mu);
    return p;
}

int pg_pool_put(void *p, size_t sz)
{
    if (!POOL_ENABLED || sz < POOL_MIN) return 0;
    int kept = 0;
    pthread_mutex_lock(&mu);
    size_t s = cached + sz <= POOL_CAP ? slot_of(sz) : POOL_BINS;
    if (s < POOL_BINS) {
        block *b = p;
        bins[s].size = sz;
        b->next = bins[s].head;
        bins[s].head = b;
        cached += sz;
        kept = 1;
    }
    pthread_mutex_unlock(&mu);
    return kept;
}

/* zeroed struct of `sz` bytes from the cache (sizes rounded to 64) or from the system */
void *pg_obj_new(size_t sz)
{
    sz = (sz + 63) & ~(size_t)63;
    void *p = pg_pool_get(sz);
    if (p == NULL) return calloc(1, sz);
    memset(p, 0, sz);
    return p;
}

void pg_obj_free(void *p, size_t sz)
{
    if (p != NULL && !pg_pool_put(p, (sz + 63) & ~(size_t)63)) free(p);
}

int64_t pg_memory_cached(void)
{
    pthread_mutex_lock(&mu);
    size_t c = cached;
    pthread_mutex_unlock(&mu);
    return (int64_t)c;
}

/* fork.c: 0 before fork (take the lock), 1 parent (release), 2 child (a fresh lock) */
void pg_pool_fork(int phase)
{
    if (phase == 0) pthread_mutex_lock(&mu);
    else if (phase == 1) pthread_mutex_unlock(&mu);
    else pthread_mutex_init(&mu, NULL);
}

void pg_memory_trim(void)
{
    pthread_mutex_lock(&mu);
    for (size_t s = 0; s < POOL_BINS; s++)
        while (bins[s].head) {
            block *b = bins[s].head;
            bins[s].head = b->next;
            free(b);
        }
    cached = 0;
    pthread_mutex_unlock(&mu);
}
