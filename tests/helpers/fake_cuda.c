/*
 * A stand-in for libcuda.so.1, loaded through KILN_CUDA_DRIVER_PATH, so the CUDA
 * backend's host path runs on a machine with no GPU: one sm_90 device, device memory in
 * host memory, modules that accept any image, and launches that only count. Real NVRTC
 * still compiles the variants, so everything up to the launch is the real code.
 *
 * What it checks on the way: a launch or module load without the device's context current
 * fails as the real driver does (CUDA_ERROR_INVALID_CONTEXT), so a test sees whether kiln
 * makes its context current; fake_cuda_launches() and the current-context entry points let
 * a test see whether kiln put the caller's context back. Launches come through
 * cuLaunchKernelEx with the programmatic-dependency attribute (the device is sm_90) or,
 * with KILN_GPU_PDL=0, through cuLaunchKernel; fake_cuda_pdl_launches() counts the first.
 * fake_cuda_marked_loads(m) counts the module images that begin with "KILNTEST-<m>" (a test's
 * stand-ins for shipped code objects), so a test sees which file kiln loaded.
 * fake_cuda_refuse_pdl(1) makes cuLaunchKernelEx refuse the programmatic attribute
 * (CUDA_ERROR_NOT_SUPPORTED), as a driver that has the entry point but not the feature.
 * Built with FAKE_TENSOR_MAPS (the kiln_fake_cuda_tmap library), it also has
 * cuTensorMapEncodeTiled, so kiln's auto tier there is the hopper tier: the encoder writes
 * its arguments into the map, and fake_cuda_encodes(base) counts the maps encoded for a
 * base address (NULL: all).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define FAKE_API __attribute__((visibility("default")))
#else
#define FAKE_API
#endif

typedef int CUresult;
enum { OK = 0, INVALID_VALUE = 1, INVALID_CONTEXT = 201, NOT_FOUND = 500 };

static int primary_ctx; /* its address is the device's primary context */
static _Thread_local void *current;
static long launches, pdl_launches;
static long marked_fresh, marked_stale;
static int refuse_pdl;
#ifdef FAKE_TENSOR_MAPS
#define FAKE_ENCODE_LOG 256
static const void *encoded[FAKE_ENCODE_LOG]; /* the bases of the last encodes */
static long encodes;
#endif

FAKE_API long fake_cuda_launches(void) { return __atomic_load_n(&launches, __ATOMIC_RELAXED); }
FAKE_API long fake_cuda_pdl_launches(void)
{
    return __atomic_load_n(&pdl_launches, __ATOMIC_RELAXED);
}

FAKE_API long fake_cuda_marked_loads(const char *mark)
{
    return __atomic_load_n(strcmp(mark, "fresh") == 0 ? &marked_fresh : &marked_stale,
                           __ATOMIC_RELAXED);
}

FAKE_API void fake_cuda_refuse_pdl(int on) { __atomic_store_n(&refuse_pdl, on, __ATOMIC_RELAXED); }

#ifdef FAKE_TENSOR_MAPS
FAKE_API long fake_cuda_encodes(const void *base)
{
    long n = 0, total = __atomic_load_n(&encodes, __ATOMIC_ACQUIRE);
    if (!base) return total;
    for (long i = total > FAKE_ENCODE_LOG ? total - FAKE_ENCODE_LOG : 0; i < total; i++)
        n += encoded[i % FAKE_ENCODE_LOG] == base;
    return n;
}
FAKE_API CUresult cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *base,
                                         const unsigned long long *dims,
                                         const unsigned long long *strides,
                                         const unsigned *box, const unsigned *elem_strides,
                                         int interleave, int swizzle, int l2, int fill)
{
    uint64_t *m = map;
    (void)elem_strides;
    if (!map || rank < 1 || rank > 5 || ((uintptr_t)base & 15)) return INVALID_VALUE;
    memset(m, 0, 128);
    m[0] = (uint64_t)(uintptr_t)base;
    m[1] = (uint64_t)type | (uint64_t)rank << 8 | (uint64_t)interleave << 16 |
           (uint64_t)swizzle << 24 | (uint64_t)l2 << 32 | (uint64_t)fill << 40;
    for (unsigned i = 0; i < rank; i++) {
        m[2 + i] = dims[i];
        m[7 + i] = box[i];
        if (i) m[11 + i] = strides[i - 1];
    }
    long at = __atomic_fetch_add(&encodes, 0, __ATOMIC_RELAXED);
    encoded[at % FAKE_ENCODE_LOG] = base;
    __atomic_store_n(&encodes, at + 1, __ATOMIC_RELEASE);
    return OK;
}
#endif

FAKE_API CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }
FAKE_API CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
FAKE_API CUresult cuGetErrorString(CUresult r, const char **text)
{
    *text = r == INVALID_CONTEXT ? "invalid device context" : "fake driver error";
    return OK;
}
FAKE_API CUresult cuGetErrorName(CUresult r, const char **name)
{
    *name = r == INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT" : "CUDA_ERROR_FAKE";
    return OK;
}
FAKE_API CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
FAKE_API CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal ? INVALID_VALUE : OK; }
FAKE_API CUresult cuDeviceGetName(char *name, int len, int dev)
{
    (void)dev;
    strncpy(name, "kiln fake sm_90", (size_t)len);
    return OK;
}
FAKE_API CUresult cuDeviceGetAttribute(int *v, int attribute, int dev)
{
    (void)dev;
    switch (attribute) {
    case 1: *v = 1024; break;     /* max threads per block */
    case 8: *v = 49152; break;    /* shared memory per block */
    case 10: *v = 32; break;      /* warp */
    case 16: *v = 132; break;     /* SMs */
    case 38: *v = 50331648; break; /* L2 */
    case 75: *v = 9; break;
    case 76: *v = 0; break;
    case 81: *v = 233472; break;
    case 97: *v = 232448; break;
    default: *v = 0;
    }
    return OK;
}
FAKE_API CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) { (void)dev; *bytes = (size_t)1 << 34; return OK; }
FAKE_API CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = &primary_ctx; return OK; }
FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return OK; }
FAKE_API CUresult cuCtxGetCurrent(void **ctx) { *ctx = current; return OK; }
FAKE_API CUresult cuCtxSetCurrent(void *ctx) { current = ctx; return OK; }
FAKE_API CUresult cuFuncSetAttribute(void *fn, int attribute, int value)
{
    (void)fn;
    return attribute == 8 && value <= 232448 ? OK : INVALID_VALUE;
}

FAKE_API CUresult cuModuleLoadData(void **module, const void *image)
{
    if (current != &primary_ctx) return INVALID_CONTEXT;
    if (image && !memcmp(image, "KILNTEST-fresh", 14))
        __atomic_fetch_add(&marked_fresh, 1, __ATOMIC_RELAXED);
    if (image && !memcmp(image, "KILNTEST-stale", 14))
        __atomic_fetch_add(&marked_stale, 1, __ATOMIC_RELAXED);
    *module = malloc(1);
    return image && *module ? OK : INVALID_VALUE;
}
FAKE_API CUresult cuModuleUnload(void *module) { free(module); return OK; }
FAKE_API CUresult cuModuleGetFunction(void **fn, void *module, const char *name)
{
    *fn = module;
    return name && name[0] ? OK : NOT_FOUND;
}
FAKE_API CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned smem, void *stream,
                                 void **params, void **extra)
{
    (void)stream;
    (void)extra;
    if (current != &primary_ctx) return INVALID_CONTEXT;
    if (!fn || !params || !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 ||
        smem > 232448)
        return INVALID_VALUE;
    __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
    return OK;
}
/* cuda.h's CUlaunchConfig and CUlaunchAttribute, as far as a launch reads them. */
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int value;
    } v;
} fake_launch_attr;
typedef struct {
    unsigned gx, gy, gz, bx, by, bz, smem;
    void *stream;
    fake_launch_attr *attrs;
    unsigned num_attrs;
} fake_launch_config;
FAKE_API CUresult cuLaunchKernelEx(const fake_launch_config *c, void *fn, void **params,
                                   void **extra)
{
    if (!c || (c->num_attrs && !c->attrs)) return INVALID_VALUE;
    /* The one attribute kiln sets: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION. */
    int pdl = 0;
    for (unsigned i = 0; i < c->num_attrs; i++) {
        if (c->attrs[i].id != 6 || (c->attrs[i].v.value != 0 && c->attrs[i].v.value != 1))
            return INVALID_VALUE;
        pdl |= c->attrs[i].v.value;
    }
    if (pdl && __atomic_load_n(&refuse_pdl, __ATOMIC_RELAXED)) return 801; /* NOT_SUPPORTED */
    CUresult r = cuLaunchKernel(fn, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem,
                                c->stream, params, extra);
    if (r == OK && pdl) __atomic_add_fetch(&pdl_launches, 1, __ATOMIC_RELAXED);
    return r;
}
FAKE_API CUresult cuMemAlloc_v2(void **ptr, size_t bytes)
{
    if (current != &primary_ctx) return INVALID_CONTEXT;
    *ptr = malloc(bytes);
    return *ptr ? OK : 2;
}
FAKE_API CUresult cuMemFree_v2(void *ptr) { free(ptr); return OK; }
FAKE_API CUresult cuMemcpyHtoD_v2(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return OK; }
FAKE_API CUresult cuMemcpyDtoH_v2(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return OK; }
FAKE_API CUresult cuStreamSynchronize(void *stream) { (void)stream; return current == &primary_ctx ? OK : INVALID_CONTEXT; }
FAKE_API CUresult cuCtxSynchronize(void) { return current == &primary_ctx ? OK : INVALID_CONTEXT; }
