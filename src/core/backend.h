/*
 * The backend interface: a small table of functions plus the backend's own state. The core
 * validates arguments, then calls into the table. Optional entries may be NULL; the core
 * then reports KILN_UNSUPPORTED naming the backend.
 */
#ifndef KILN_CORE_BACKEND_H
#define KILN_CORE_BACKEND_H

#include "kiln.h"
#include "json.h"
#include "problem.h"
#include "variant_key.h"

#define KILN_BACKEND_IFACE_VERSION 2

/* What a backend finds on this machine without starting a context. */
typedef struct kiln_backend_probe {
    int devices;       /* 0 when the driver does not load or reports none */
    char target[32];   /* device 0's target ("sm_90", "gfx1151"), "" if unknown */
    int code_shipped;  /* ahead-of-time code objects for target ship with the library */
} kiln_backend_probe;

/* What ran, as the backend tells it on every call: plain fields, no formatting. The core
 * keeps the last one per thread and kiln_last_dispatch() turns it into a kiln_dispatch. */
typedef struct kiln_dispatch_note {
    char target[32]; /* copied from the backend's own text (kiln_dispatch_note_target) */
    kiln_variant_desc variant;
    int32_t num_splits;
} kiln_dispatch_note;

/* Copies a target name into note->target without formatting (names are short). */
static inline void kiln_dispatch_note_target(kiln_dispatch_note *note, const char *target)
{
    size_t i = 0;
    for (; target[i] && i + 1 < sizeof note->target; i++) note->target[i] = target[i];
    note->target[i] = '\0';
}

typedef struct kiln_backend_iface {
    int version; /* KILN_BACKEND_IFACE_VERSION */
    kiln_backend kind;
    const char *name;
    const char *description; /* one line for kiln info: what the backend runs on */

    /* (optional) Fills *out (zeroed by the caller); may load driver libraries, never
     * starts a device context. NULL: the backend is always there (one device). */
    void (*probe)(kiln_backend_probe *out);
    /* (optional) Adds to the top-level object of kiln_info_json() what holds without a
     * device (targets known, code objects shipped). Backends sharing one function are asked
     * once. */
    void (*describe_build)(kiln_json *out);

    /* Starts the backend on device; stores its state in *state. */
    kiln_status (*init)(int device, void **state);
    void (*free)(void *state);

    /* Automatic split count for this shape on this device (>= 1). */
    int32_t (*choose_splits)(void *state, int64_t batch, int64_t max_seqlen_q,
                             int64_t max_seqlen_k, int64_t heads_q, int64_t heads_kv,
                             int64_t head_dim);

    /* Runs the problem; fills *note (variant, target, splits) on success. */
    kiln_status (*attention)(void *state, const kiln_attn_problem *p, kiln_dispatch_note *note);
    kiln_status (*act_and_mul)(void *state, const kiln_act_problem *p, kiln_dispatch_note *note);

    /* (optional) Writes the device's fields into the JSON object currently open in out. */
    void (*describe)(void *state, kiln_json *out);

    /* Memory of the backend's device, for tests and the tool (the library itself only
     * allocates workspace). The CPU backend uses malloc and memcpy. */
    void *(*mem_alloc)(void *state, size_t bytes);
    void (*mem_free)(void *state, void *ptr);
    /* to_device nonzero: host src -> device dst; zero: device src -> host dst. Synchronous. */
    kiln_status (*mem_copy)(void *state, void *dst, const void *src, size_t bytes,
                            int to_device);
    /* Waits for all work queued on stream (NULL = default stream). */
    kiln_status (*synchronize)(void *state, void *stream);
} kiln_backend_iface;

struct kiln_context {
    const kiln_backend_iface *iface;
    void *state;
    int device;
};

/* The backend tables. Each is defined by its backend's folder; which of them a build
 * holds is decided by CMake (KILN_WITH_CUDA, KILN_WITH_HIP), and src/core/registry.c lists
 * only those. */
extern const kiln_backend_iface kiln_cpu_backend;
extern const kiln_backend_iface kiln_cuda_backend;
extern const kiln_backend_iface kiln_hip_backend;

/* The backends built into this library, CPU first, in the order auto prefers among GPUs. */
const kiln_backend_iface *const *kiln_backends(size_t *count);

#endif
