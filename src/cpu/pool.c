/* A fixed pool of worker threads on the platform layer's primitives. Items are coarse (a
 * block of query rows against a key range, or a slab of activation rows), so handing them
 * out under a mutex costs nothing measurable and keeps the code free of atomics. */
#include <stdlib.h>

#include "cpu.h"
#include "platform/platform.h"

typedef struct worker_arg {
    kiln_cpu_pool *pool;
    int slot;
} worker_arg;

struct kiln_cpu_pool {
    int n;
    kiln_thread **threads;
    worker_arg *args;
    kiln_mutex *run_lock; /* one parallel region at a time */
    kiln_mutex *m;
    kiln_cond *wake, *done;
    uint64_t gen;
    int stop;
    int busy; /* workers still inside the current generation */
    void (*fn)(void *, int64_t, int);
    void *ctx;
    int64_t n_items, next;
};

/* Takes items until none are left; called and returns with pool->m held. */
static void drain(kiln_cpu_pool *p, int slot) {
    while (p->next < p->n_items) {
        int64_t item = p->next++;
        kiln_mutex_unlock(p->m);
        p->fn(p->ctx, item, slot);
        kiln_mutex_lock(p->m);
    }
}

static void worker_main(void *arg) {
    worker_arg *a = arg;
    kiln_cpu_pool *p = a->pool;
    uint64_t seen = 0;
    kiln_mutex_lock(p->m);
    for (;;) {
        while (!p->stop && p->gen == seen) kiln_cond_wait(p->wake, p->m);
        if (p->stop) break;
        seen = p->gen;
        drain(p, a->slot);
        if (--p->busy == 0) kiln_cond_signal(p->done);
    }
    kiln_mutex_unlock(p->m);
}

kiln_cpu_pool *kiln_cpu_pool_create(int n) {
    if (n < 1) n = 1;
    kiln_cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n;
    p->threads = calloc((size_t)n, sizeof *p->threads);
    p->args = calloc((size_t)n, sizeof *p->args);
    p->run_lock = kiln_mutex_create();
    p->m = kiln_mutex_create();
    p->wake = kiln_cond_create();
    p->done = kiln_cond_create();
    if (!p->threads || !p->args || !p->run_lock || !p->m || !p->wake || !p->done) {
        kiln_cpu_pool_free(p);
        return NULL;
    }
    for (int i = 1; i < n; i++) {
        p->args[i].pool = p;
        p->args[i].slot = i;
        p->threads[i] = kiln_thread_start(worker_main, &p->args[i]);
        if (!p->threads[i]) {
            kiln_cpu_pool_free(p);
            return NULL;
        }
    }
    return p;
}

void kiln_cpu_pool_free(kiln_cpu_pool *p) {
    if (!p) return;
    if (p->m) {
        kiln_mutex_lock(p->m);
        p->stop = 1;
        if (p->wake) kiln_cond_broadcast(p->wake);
        kiln_mutex_unlock(p->m);
    }
    if (p->threads)
        for (int i = 1; i < p->n; i++)
            if (p->threads[i]) kiln_thread_join(p->threads[i]);
    if (p->done) kiln_cond_free(p->done);
    if (p->wake) kiln_cond_free(p->wake);
    if (p->m) kiln_mutex_free(p->m);
    if (p->run_lock) kiln_mutex_free(p->run_lock);
    free(p->args);
    free(p->threads);
    free(p);
}

int kiln_cpu_pool_size(const kiln_cpu_pool *p) { return p ? p->n : 1; }

void kiln_cpu_pool_run(kiln_cpu_pool *p, int64_t n_items, void (*fn)(void *, int64_t, int),
                       void *ctx) {
    if (n_items <= 0) return;
    if (!p || p->n == 1 || n_items == 1) {
        /* Slot 0 belongs to the caller of run; serialise so it is never shared. */
        if (p) kiln_mutex_lock(p->run_lock);
        for (int64_t i = 0; i < n_items; i++) fn(ctx, i, 0);
        if (p) kiln_mutex_unlock(p->run_lock);
        return;
    }
    kiln_mutex_lock(p->run_lock);
    kiln_mutex_lock(p->m);
    p->fn = fn;
    p->ctx = ctx;
    p->n_items = n_items;
    p->next = 0;
    p->busy = p->n - 1;
    p->gen++;
    kiln_cond_broadcast(p->wake);
    drain(p, 0);
    while (p->busy > 0) kiln_cond_wait(p->done, p->m);
    kiln_mutex_unlock(p->m);
    kiln_mutex_unlock(p->run_lock);
}
