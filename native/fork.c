/* fork() while other threads run the core: the child gets one thread and a copy of every lock
 * in whatever state the others left it, so a lock held mid-backward or mid-allocation would
 * stay locked in the child forever (a deadlock at its first op). pthread_atfork: before the
 * fork the forking thread takes every core lock (in the one order the core nests them: gradient
 * lock, random streams, GEMM pool, buffer cache), so no other thread is inside one; after it the
 * parent releases them and the child re-initialises them (a recursive mutex cannot be unlocked
 * there: its owner's thread id changed). The fork waits for a running backward pass to end. */
#include "pg.h"

#if !defined(_WIN32)
#include <pthread.h>

void pg_grad_fork(int phase); /* memory.c */
void pg_rng_fork(int phase);  /* rng.c */
void pg_gemm_fork(int phase); /* gemm_pool.c */
void pg_pool_fork(int phase); /* pool.c */

static void prepare(void)
{
    pg_grad_fork(0);
    pg_rng_fork(0);
    pg_gemm_fork(0);
    pg_pool_fork(0);
}

static void parent(void)
{
    pg_pool_fork(1);
    pg_gemm_fork(1);
    pg_rng_fork(1);
    pg_grad_fork(1);
}

static void child(void)
{
    pg_pool_fork(2);
    pg_gemm_fork(2);
    pg_rng_fork(2);
    pg_grad_fork(2);
}

/* once, when the library loads (before any thread of the core exists) */
__attribute__((constructor)) static void fork_init(void) { pthread_atfork(prepare, parent, child); }
#endif
