/* Threads (_beginthreadex), SRW locks, condition variables, one-time initialisation. */
#include "platform/platform.h"
#include "platform/win/wide.h"

#include <process.h>
#include <stdlib.h>

struct kiln_thread {
    HANDLE handle;
    void (*fn)(void *);
    void *arg;
};

struct kiln_mutex {
    SRWLOCK lock;
};

struct kiln_cond {
    CONDITION_VARIABLE cv;
};

/* _beginthreadex rather than CreateThread: it sets up the C runtime's per-thread state,
 * which CreateThread skips on older runtimes. */
static unsigned __stdcall thread_main(void *p)
{
    kiln_thread *t = p;
    t->fn(t->arg);
    return 0;
}

kiln_thread *kiln_thread_start(void (*fn)(void *), void *arg)
{
    kiln_thread *t = fn ? malloc(sizeof *t) : NULL;
    if (!t) return NULL;
    t->fn = fn;
    t->arg = arg;
    t->handle = (HANDLE)_beginthreadex(NULL, 0, thread_main, t, 0, NULL);
    if (!t->handle) {
        free(t);
        return NULL;
    }
    return t;
}

void kiln_thread_join(kiln_thread *t)
{
    if (!t) return;
    WaitForSingleObject(t->handle, INFINITE);
    CloseHandle(t->handle);
    free(t);
}

kiln_mutex *kiln_mutex_create(void)
{
    kiln_mutex *m = malloc(sizeof *m);
    if (m) InitializeSRWLock(&m->lock);
    return m;
}

void kiln_mutex_free(kiln_mutex *m) { free(m); }
void kiln_mutex_lock(kiln_mutex *m) { AcquireSRWLockExclusive(&m->lock); }
void kiln_mutex_unlock(kiln_mutex *m) { ReleaseSRWLockExclusive(&m->lock); }

kiln_cond *kiln_cond_create(void)
{
    kiln_cond *c = malloc(sizeof *c);
    if (c) InitializeConditionVariable(&c->cv);
    return c;
}

void kiln_cond_free(kiln_cond *c) { free(c); }

void kiln_cond_wait(kiln_cond *c, kiln_mutex *m)
{
    SleepConditionVariableSRW(&c->cv, &m->lock, INFINITE, 0);
}

void kiln_cond_signal(kiln_cond *c) { WakeConditionVariable(&c->cv); }
void kiln_cond_broadcast(kiln_cond *c) { WakeAllConditionVariable(&c->cv); }

/* 0 = not started, 1 = running, 2 = done. InitOnceExecuteOnce would need an INIT_ONCE in
 * the struct, which the portable kiln_once cannot hold. The loser of the race yields until
 * the winner has finished, so fn has always completed when this returns. */
void kiln_once_run(kiln_once *once, void (*fn)(void))
{
    if (InterlockedCompareExchange(&once->state, 2, 2) == 2) return;
    if (InterlockedCompareExchange(&once->state, 1, 0) == 0) {
        fn();
        InterlockedExchange(&once->state, 2);
        return;
    }
    while (InterlockedCompareExchange(&once->state, 2, 2) != 2) SwitchToThread();
}

int kiln_cpu_count(void)
{
    DWORD_PTR process_mask = 0, system_mask = 0;
    USHORT groups[4];
    USHORT group_count = 4;
    /* A process confined to one processor group (the default before Windows 11) can use
     * only the cores in its affinity mask; one that spans several groups (Windows 11 on
     * more than 64 cores) can use all active cores. */
    BOOL one_call = GetProcessGroupAffinity(GetCurrentProcess(), &group_count, groups);
    if ((one_call && group_count > 1) ||
        (!one_call && GetLastError() == ERROR_INSUFFICIENT_BUFFER)) {
        DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
        return n > 0 ? (int)n : 1;
    }
    if (GetProcessAffinityMask(GetCurrentProcess(), &process_mask, &system_mask) &&
        process_mask) {
        int n = 0;
        for (; process_mask; process_mask &= process_mask - 1) n++;
        return n;
    }
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 ? (int)n : 1;
}

/* Interlocked operations are full barriers, stronger than acquire / release. */
void *kiln_atomic_load_ptr(void *const *p)
{
    return InterlockedCompareExchangePointer((PVOID volatile *)p, NULL, NULL);
}

void kiln_atomic_store_ptr(void **p, void *value)
{
    InterlockedExchangePointer((PVOID volatile *)p, value);
}

int kiln_atomic_load_int(const int *p)
{
    return (int)InterlockedCompareExchange((LONG volatile *)p, 0, 0);
}

void kiln_atomic_store_int(int *p, int value) { InterlockedExchange((LONG volatile *)p, value); }
