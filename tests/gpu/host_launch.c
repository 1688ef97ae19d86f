/* Runs an emulated kernel: one OS thread per GPU thread of a block, every thread walking
 * the grid's blocks in the same order and meeting at a barrier after each block (shared
 * memory is static, so a block must finish before the next one starts). */
#include <stdlib.h>
#include <string.h>

#include "emulated_kernels.h"
#include "platform/platform.h"

_Thread_local int kiln_host_thread;
_Thread_local long long kiln_host_block[3];
_Thread_local long long kiln_host_grid[3];

static struct {
    kiln_mutex *m;
    kiln_cond *c;
    unsigned threads, waiting;
    unsigned long generation;
} g_bar;

void kiln_host_sync(void)
{
    kiln_mutex_lock(g_bar.m);
    unsigned long gen = g_bar.generation;
    if (++g_bar.waiting == g_bar.threads) {
        g_bar.waiting = 0;
        ++g_bar.generation;
        kiln_cond_broadcast(g_bar.c);
    } else {
        while (gen == g_bar.generation) kiln_cond_wait(g_bar.c, g_bar.m);
    }
    kiln_mutex_unlock(g_bar.m);
}

/* One barrier per wave, and two deposit areas used in turn: a lane can write the next
 * exchange's area only after the barrier of that exchange, which every lane reaches only
 * after it has read the previous one. */
#define MAX_WARPS 32
#define MAX_WAVE 64
static struct {
    kiln_mutex *m;
    kiln_cond *c;
    unsigned waiting;
    unsigned long generation;
    unsigned char slot[2][MAX_WAVE][64];
} g_warp[MAX_WARPS];
static _Thread_local unsigned g_warp_turn;

void kiln_host_wave_exchange(const void *mine, void *all, size_t bytes, int wave)
{
    const int w = kiln_host_thread / wave, lane = kiln_host_thread % wave;
    const unsigned turn = g_warp_turn++ & 1u;
    memcpy(g_warp[w].slot[turn][lane], mine, bytes);
    kiln_mutex_lock(g_warp[w].m);
    unsigned long gen = g_warp[w].generation;
    if (++g_warp[w].waiting == (unsigned)wave) {
        g_warp[w].waiting = 0;
        ++g_warp[w].generation;
        kiln_cond_broadcast(g_warp[w].c);
    } else {
        while (gen == g_warp[w].generation) kiln_cond_wait(g_warp[w].c, g_warp[w].m);
    }
    kiln_mutex_unlock(g_warp[w].m);
    for (int i = 0; i < wave; ++i)
        memcpy((unsigned char *)all + (size_t)i * bytes, g_warp[w].slot[turn][i], bytes);
}

void kiln_host_warp_exchange(const void *mine, void *all, size_t bytes)
{
    kiln_host_wave_exchange(mine, all, bytes, 32);
}

typedef struct worker {
    const kiln_emulated_kernel *k;
    const void *args;
    unsigned grid[3];
    int tid;
} worker;

static void run(void *arg)
{
    const worker *w = arg;
    kiln_host_thread = w->tid;
    for (int i = 0; i < 3; ++i) kiln_host_grid[i] = w->grid[i];
    for (unsigned z = 0; z < w->grid[2]; ++z)
        for (unsigned y = 0; y < w->grid[1]; ++y)
            for (unsigned x = 0; x < w->grid[0]; ++x) {
                kiln_host_block[0] = x;
                kiln_host_block[1] = y;
                kiln_host_block[2] = z;
                if (w->k->attn)
                    w->k->attn(*(const kiln_attn_args *)w->args);
                else
                    w->k->act_fn(*(const kiln_act_args *)w->args);
                kiln_host_sync();
            }
}

const kiln_emulated_kernel *kiln_emulated_find(const kiln_gpu_variant *v)
{
    for (int i = 0; i < kiln_emulated_kernel_count; ++i) {
        const kiln_emulated_kernel *k = &kiln_emulated_kernels[i];
        if (k->kind != v->kind || k->dtype != (int)v->dtype || k->tier != v->tier ||
            k->family != v->family || k->wide != v->wide)
            continue;
        if (v->kind == KILN_KERNEL_ACT ? k->act == (int)v->act
                                       : k->head_dim == v->head_dim &&
                                             (v->kind == KILN_KERNEL_COMBINE ||
                                              (k->mask == v->mask && k->mode == (int)v->mode)))
            return k;
    }
    return NULL;
}

int kiln_emulated_launch(const kiln_emulated_kernel *k, const void *args,
                         const unsigned grid[3], const unsigned block[3])
{
    unsigned n = block[0];
    worker *w = calloc(n, sizeof *w);
    kiln_thread **t = calloc(n, sizeof *t);
    int rc = 0;
    if (!w || !t) rc = -1;
    if (!g_bar.m) {
        g_bar.m = kiln_mutex_create();
        g_bar.c = kiln_cond_create();
        for (int i = 0; i < MAX_WARPS; ++i) {
            g_warp[i].m = kiln_mutex_create();
            g_warp[i].c = kiln_cond_create();
        }
    }
    if (n % 32 != 0 || n / 32 > MAX_WARPS) n = 0, rc = -1; /* warps must be whole */
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) n = 0;
    g_bar.threads = n;
    g_bar.waiting = 0;
    for (unsigned i = 0; i < MAX_WARPS; ++i) g_warp[i].waiting = 0;
    for (unsigned i = 0; rc == 0 && i < n; ++i) {
        w[i].k = k;
        w[i].args = args;
        memcpy(w[i].grid, grid, sizeof w[i].grid);
        w[i].tid = (int)i;
        t[i] = kiln_thread_start(run, &w[i]);
        if (!t[i]) rc = -1; /* the threads already started would wait forever: give up */
    }
    for (unsigned i = 0; rc == 0 && i < n; ++i) kiln_thread_join(t[i]);
    free(w);
    free(t);
    return rc;
}
