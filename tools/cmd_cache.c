/* kiln cache ls | clear | warm: the on-disk store of code objects compiled on first use. */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "context.h"
#include "gpu/cache.h"
#include "gpu/targets.h"
#include "json.h"
#include "jsonv.h"

static const char *const actions[] = {"ls", "clear", "warm", NULL};
enum { ACT_LS, ACT_CLEAR, ACT_WARM };
static const char *const backends[] = {"auto", "cuda", "hip", NULL};

typedef struct listing {
    int json;
    kiln_json j;
    uint64_t bytes;
    size_t invalid;
} listing;

static int on_entry(const kiln_cache_entry *e, void *user) {
    listing *l = user;
    l->bytes += e->bytes;
    l->invalid += !e->valid;
    if (l->json) {
        kiln_json_object_begin(&l->j, NULL);
        kiln_json_string(&l->j, "file", e->file);
        kiln_json_string(&l->j, "target", e->target);
        kiln_json_string(&l->j, "variant", e->variant);
        kiln_json_string(&l->j, "compiler", e->compiler);
        kiln_json_string(&l->j, "kiln_version", e->kiln_version);
        kiln_json_int(&l->j, "bytes", (int64_t)e->bytes);
        kiln_json_bool(&l->j, "valid", e->valid);
        kiln_json_object_end(&l->j);
    } else {
        printf("%-8s %-44s %-12s %-7s %9.1f  %s\n", e->valid ? e->target : "?",
               e->valid ? e->variant : e->file, e->compiler, e->kiln_version,
               (double)e->bytes / 1024.0, e->valid ? "" : "corrupt (rebuilt on use)");
    }
    return 0;
}

static int cache_ls(const char *dir, int json) {
    listing l = {0};
    size_t count = 0;
    l.json = json;
    if (json) {
        tool_json_init(&l.j);
        kiln_json_object_begin(&l.j, NULL);
        kiln_json_string(&l.j, "dir", dir);
        kiln_json_array_begin(&l.j, "entries");
    } else {
        printf("%-8s %-44s %-12s %-7s %9s\n", "target", "variant", "compiler", "kiln", "KiB");
    }
    kiln_status st = kiln_cache_list(on_entry, &l, &count);
    if (json) {
        kiln_json_array_end(&l.j);
        kiln_json_object_end(&l.j);
        if (st == KILN_OK) tool_json_print(stdout, &l.j, "kiln cache ls");
        kiln_json_free(&l.j);
    }
    if (st != KILN_OK) {
        fprintf(stderr, "kiln cache ls: %s: %s\n", kiln_status_string(st), kiln_last_error());
        return TOOL_EXIT_FAIL;
    }
    if (!json)
        printf("\n%lu entr%s, %.1f MiB, in %s%s\n", (unsigned long)count,
               count == 1 ? "y" : "ies", (double)l.bytes / (1024.0 * 1024.0), dir,
               l.invalid ? " (some corrupt: they are rebuilt when next used)" : "");
    return TOOL_EXIT_OK;
}

static int cache_clear(const char *dir) {
    size_t removed = 0;
    kiln_status st = kiln_cache_clear(&removed);
    if (st != KILN_OK) {
        fprintf(stderr, "kiln cache clear: %s: %s\n", kiln_status_string(st),
                kiln_last_error());
        return TOOL_EXIT_FAIL;
    }
    printf("removed %lu file%s from %s\n", (unsigned long)removed, removed == 1 ? "" : "s",
           dir);
    return TOOL_EXIT_OK;
}

typedef struct warm_tally {
    size_t built, hits, memory;
    double seconds;
} warm_tally;

static void on_progress(const char *variant, size_t index, size_t total, double seconds,
                        kiln_cache_origin origin, void *user) {
    warm_tally *t = user;
    const char *what = origin == KILN_CACHE_HIT     ? "cached"
                       : origin == KILN_CACHE_BUILT ? "built"
                                                    : "built, not stored";
    t->built += origin == KILN_CACHE_BUILT;
    t->hits += origin == KILN_CACHE_HIT;
    t->memory += origin == KILN_CACHE_MEMORY;
    t->seconds += seconds;
    printf("[%3lu/%lu] %-44s %-17s %7.3f s\n", (unsigned long)index + 1, (unsigned long)total,
           variant, what, seconds);
    fflush(stdout);
}

static int cache_warm(const tool_cmd *self, int backend_opt, const char *target,
                      int64_t device) {
    kiln_backend backend = backend_opt == 1 ? KILN_BACKEND_CUDA
                           : backend_opt == 2 ? KILN_BACKEND_HIP
                                              : KILN_BACKEND_AUTO;
    const kiln_target *t = NULL;
    if (target) {
        t = kiln_target_find(target);
        if (!t) {
            char known[1024];
            kiln_target_names(known, sizeof known);
            tool_usage_error(self, "--target: unknown target '%s' (allowed: %s)", target, known);
        }
        kiln_backend vendor_backend =
            t->vendor == KILN_VENDOR_NVIDIA ? KILN_BACKEND_CUDA : KILN_BACKEND_HIP;
        if (backend != KILN_BACKEND_AUTO && backend != vendor_backend)
            tool_usage_error(self, "--target %s is an %s target; --backend %s cannot compile it",
                             target, kiln_vendor_name(t->vendor), kiln_backend_name(backend));
        backend = vendor_backend;
    }
    if (backend == KILN_BACKEND_AUTO) {
        kiln_backend_decision d;
        kiln_status st = kiln_backend_decide(&d);
        if (st != KILN_OK || (d.backend != KILN_BACKEND_CUDA && d.backend != KILN_BACKEND_HIP)) {
            fprintf(stderr,
                    "kiln cache warm: no GPU backend to warm (auto picks %s: %s); name one "
                    "with --target (no GPU needed) or --backend cuda|hip\n",
                    st == KILN_OK ? kiln_backend_name(d.backend) : "nothing",
                    st == KILN_OK ? d.reason : kiln_last_error());
            return TOOL_EXIT_FAIL;
        }
        backend = d.backend;
    }

    warm_tally tally = {0};
    kiln_status st = kiln_cache_warm(backend, (int)device, target, on_progress, &tally);
    if (st != KILN_OK) {
        fprintf(stderr, "kiln cache warm: %s: %s\n", kiln_status_string(st), kiln_last_error());
        return TOOL_EXIT_FAIL;
    }
    printf("\n%lu variants in %.1f s: %lu compiled, %lu already cached%s\n",
           (unsigned long)(tally.built + tally.hits + tally.memory), tally.seconds,
           (unsigned long)(tally.built + tally.memory), (unsigned long)tally.hits,
           tally.memory ? " (some could not be stored: the cache is not writable)" : "");
    return TOOL_EXIT_OK;
}

static int run(const tool_cmd *self, int argc, char **argv) {
    const char *pos[1] = {NULL};
    const char *target = NULL;
    int json = 0, backend = 0;
    int64_t device = 0;
    const tool_opt opts[] = {
        {"json", TOOL_OPT_FLAG, &json, 0, 0, NULL},
        {"backend", TOOL_OPT_CHOICE, &backend, 0, 0, backends},
        {"target", TOOL_OPT_STRING, &target, 0, 0, NULL},
        {"device", TOOL_OPT_INT, &device, 0, 1024, NULL},
        {NULL, TOOL_OPT_FLAG, NULL, 0, 0, NULL},
    };
    if (tool_parse(self, argc, argv, opts, pos, 1) == 0)
        tool_usage_error(self, "needs an action: ls, clear or warm");
    int action = tool_require_choice(self, "action", pos[0], actions);
    if (action != ACT_WARM && (target || backend || device))
        tool_usage_error(self, "--target, --backend and --device apply to 'warm' only");
    if (action != ACT_LS && json) tool_usage_error(self, "--json applies to 'ls' only");

    char dir[1024];
    if (kiln_cache_dir(dir, sizeof dir) != 0) {
        fprintf(stderr, "kiln cache: cannot find the cache folder (set KILN_CACHE_DIR)\n");
        return TOOL_EXIT_FAIL;
    }
    switch (action) {
    case ACT_LS: return cache_ls(dir, json);
    case ACT_CLEAR: return cache_clear(dir);
    default: return cache_warm(self, backend, target, device);
    }
}

const tool_cmd tool_cmd_cache = {
    "cache",
    "list, clear or fill the cache of GPU code objects compiled on first use",
    "usage: kiln cache ls [--json]\n"
    "       kiln cache clear\n"
    "       kiln cache warm [--backend auto|cuda|hip] [--target T] [--device N]\n"
    "\n"
    "The cache is KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln or ~/.cache/kiln\n"
    "(%LOCALAPPDATA%\\kiln on Windows). Entries are keyed by target, variant, compiler and\n"
    "its version, kiln version, source and options; a corrupt entry is rebuilt on use.\n"
    "\n"
    "  ls      every entry: target, variant, compiler, kiln version, size\n"
    "  clear   removes every entry, leftover temporary file and stale lock (locks held by\n"
    "          running processes stay)\n"
    "  warm    compiles every variant for a target, one at a time, with a line per variant,\n"
    "          so that no later call waits for the compiler. The target is the GPU that\n"
    "          --backend (default: what auto picks) finds at --device (default 0), or\n"
    "          --target (see 'kiln targets'), which needs only the compiler, not a GPU.\n",
    run,
};
