/* Threads, mutexes, condition variables and one-time initialisation on pthreads. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "platform/platform.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

struct kiln_thread {
    pthread_t id;
    void (*fn)(void *);
    void *arg;
};

struct kiln_mutex {
    pthread_mutex_t m;
};

struct kiln_cond {
    pthread_cond_t c;
};

static void *thread_main(void *p)
{
    kiln_thread *t = p;
    t->fn(t->arg);
    return NULL;
}

kiln_thread *kiln_thread_start(void (*fn)(void *), void *arg)
{
    kiln_thread *t;
    if (!fn || !(t = malloc(sizeof *t))) return NULL;
    t->fn = fn;
    t->arg = arg;
    if (pthread_create(&t->id, NULL, thread_main, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

void kiln_thread_join(kiln_thread *t)
{
    if (!t) return;
    pthread_join(t->id, NULL);
    free(t);
}

kiln_mutex *kiln_mutex_create(void)
{
    kiln_mutex *m = malloc(sizeof *m);
    if (m && pthread_mutex_init(&m->m, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void kiln_mutex_free(kiln_mutex *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->m);
    free(m);
}

void kiln_mutex_lock(kiln_mutex *m) { pthread_mutex_lock(&m->m); }
void kiln_mutex_unlock(kiln_mutex *m) { pthread_mutex_unlock(&m->m); }

kiln_cond *kiln_cond_create(void)
{
    kiln_cond *c = malloc(sizeof *c);
    if (c && pthread_cond_init(&c->c, NULL) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

void kiln_cond_free(kiln_cond *c)
{
    if (!c) return;
    pthread_cond_destroy(&c->c);
    free(c);
}

void kiln_cond_wait(kiln_cond *c, kiln_mutex *m) { pthread_cond_wait(&c->c, &m->m); }
void kiln_cond_signal(kiln_cond *c) { pthread_cond_signal(&c->c); }
void kiln_cond_broadcast(kiln_cond *c) { pthread_cond_broadcast(&c->c); }

/* kiln_once cannot hold a pthread_once_t (the struct is shared with Windows), and
 * pthread_once takes no argument, so the state machine is done by hand:
 * 0 = not started, 1 = running, 2 = done. A thread that loses the race yields until the
 * winner finishes, because callers rely on fn having completed when kiln_once_run returns. */
void kiln_once_run(kiln_once *once, void (*fn)(void))
{
    long expected = 0;
    if (__atomic_load_n(&once->state, __ATOMIC_ACQUIRE) == 2) return;
    if (__atomic_compare_exchange_n(&once->state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        fn();
        __atomic_store_n(&once->state, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&once->state, __ATOMIC_ACQUIRE) != 2) sched_yield();
}

int kiln_cpu_count(void)
{
    /* The affinity mask is what taskset, cgroups cpusets and container runtimes restrict;
     * sysconf reports every online core even when this process may use only a few. */
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void *kiln_atomic_load_ptr(void *const *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

void kiln_atomic_store_ptr(void **p, void *value) { __atomic_store_n(p, value, __ATOMIC_RELEASE); }

int kiln_atomic_load_int(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

void kiln_atomic_store_int(int *p, int value) { __atomic_store_n(p, value, __ATOMIC_RELEASE); }
