/*
 * The binding's optional fast path: builds kiln_tensor and kiln_attention_params records
 * from torch tensors and numpy arrays and calls the library's entry point directly, in one
 * call from Python. It never decides anything the ctypes path would decide differently:
 * whenever an argument is not the plain case (a torch subclass, another device, an unknown
 * dtype, a read-only output, a rank kiln does not take, a context not created yet) it
 * returns None before calling the library, and the ctypes path in __init__.py runs the call
 * instead, with its checks and its messages. So behaviour and errors are those of the
 * ctypes path, which stays complete where this module is not built.
 *
 * It does not link libkiln: the entry points come as addresses from the library the
 * binding loaded. Built against the limited API (3.11), so one build serves later Pythons.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "kiln.h"

typedef kiln_status (*attention_fn)(kiln_context *, const kiln_tensor *, const kiln_tensor *,
                                    const kiln_tensor *, kiln_tensor *, kiln_tensor *,
                                    const kiln_attention_params *, void *);
typedef kiln_status (*act_fn)(kiln_context *, kiln_activation, const kiln_tensor *,
                              kiln_tensor *, void *);

/* What setup() was given: torch.Tensor and numpy.ndarray (either may be None), torch's
 * {dtype: code} map, the context table {device index (-1 = CPU): address}, and torch's
 * current-stream accessor (None where torch has no CUDA). */
static PyObject *torch_tensor, *numpy_array, *torch_codes, *contexts, *current_stream;
static PyObject *s_dtype, *s_shape, *s_stride, *s_data_ptr, *s_device, *s_type, *s_index,
    *s_cuda, *s_cpu;
/* The torch.device of the last call's first argument and where it is (a CUDA device index or
 * TORCH_CPU): one comparison of the first argument's device with it replaces reading its
 * type and index. Read and written by place() alone, under the GIL. */
static PyObject *last_device;
static long last_where;

enum { HANDLED = 1, NOT_HANDLED = 0, FAILED = -1 };

/* What a call holds until it returns: numpy buffers, and the first torch argument's device,
 * which every other argument's device is compared with (the call's own reference: a
 * collection run by an allocation may let another thread's call change last_device). */
typedef struct held {
    Py_buffer buf[8];
    int n;
    PyObject *device;
} held;

static void release(held *h)
{
    for (int i = 0; i < h->n; i++) PyBuffer_Release(&h->buf[i]);
    h->n = 0;
    Py_CLEAR(h->device);
}

/* x.name() as a long long; -2 with the exception set when the call fails. */
static long long call_ll(PyObject *x, PyObject *name)
{
    PyObject *v = PyObject_CallMethodObjArgs(x, name, NULL);
    long long r;
    if (!v) return -2;
    r = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return r;
}

static int fill_dims(kiln_tensor *t, PyObject *shape, PyObject *stride)
{
    Py_ssize_t rank = PyTuple_Size(shape);
    if (rank < 1 || rank > KILN_MAX_RANK || PyTuple_Size(stride) != rank) return NOT_HANDLED;
    t->rank = (int32_t)rank;
    for (Py_ssize_t i = 0; i < rank; i++) {
        t->shape[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
        t->stride[i] = PyLong_AsLongLong(PyTuple_GetItem(stride, i));
    }
    return PyErr_Occurred() ? FAILED : HANDLED;
}

/* A torch tensor on the device of the call's first argument (held by place() in h->device);
 * placed: x is that argument. */
static int torch_view(PyObject *x, int placed, kiln_tensor *t, const held *h)
{
    PyObject *dtype, *code, *shape = NULL, *stride = NULL;
    int ok;
    long long v;
    dtype = PyObject_GetAttr(x, s_dtype);
    if (!dtype) return FAILED;
    code = PyDict_GetItemWithError(torch_codes, dtype);
    Py_DECREF(dtype);
    if (!code) return PyErr_Occurred() ? FAILED : NOT_HANDLED;
    if (!placed) {
        PyObject *dev = PyObject_GetAttr(x, s_device);
        if (!dev) return FAILED;
        ok = h->device ? PyObject_RichCompareBool(dev, h->device, Py_EQ) : 0;
        Py_DECREF(dev);
        if (ok != 1) return ok < 0 ? FAILED : NOT_HANDLED;
    }
    t->dtype = (kiln_dtype)PyLong_AsLong(code);
    v = call_ll(x, s_data_ptr);
    if (PyErr_Occurred()) return FAILED;
    t->data = (void *)(uintptr_t)v;
    shape = PyObject_GetAttr(x, s_shape);
    if (shape) stride = PyObject_CallMethodObjArgs(x, s_stride, NULL);
    ok = shape && stride ? fill_dims(t, shape, stride) : FAILED;
    Py_XDECREF(shape);
    Py_XDECREF(stride);
    return ok;
}

/* A numpy array through the buffer protocol (which also refuses a read-only output). */
static int numpy_view(PyObject *x, int writable, kiln_tensor *t, held *h)
{
    Py_buffer *b = &h->buf[h->n];
    const char *f;
    if (PyObject_GetBuffer(x, b, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        return NOT_HANDLED;
    }
    h->n++;
    f = b->format ? b->format : "B";
    if (f[0] == '=' || f[0] == '@') f++;
    if (f[1] != '\0') return NOT_HANDLED;
    if (f[0] == 'f' && b->itemsize == 4) t->dtype = KILN_F32;
    else if (f[0] == 'e' && b->itemsize == 2) t->dtype = KILN_F16;
    else if (f[0] == 'H' && b->itemsize == 2) t->dtype = KILN_BF16;
    else if ((f[0] == 'i' || f[0] == 'l') && b->itemsize == 4) t->dtype = KILN_I32;
    else return NOT_HANDLED;
    if (b->ndim < 1 || b->ndim > KILN_MAX_RANK) return NOT_HANDLED;
    t->data = b->buf;
    t->rank = b->ndim;
    for (int i = 0; i < b->ndim; i++) {
        if (b->strides[i] % b->itemsize) return NOT_HANDLED;
        t->shape[i] = b->shape[i];
        t->stride[i] = b->strides[i] / b->itemsize;
    }
    return HANDLED;
}

/* device: where the call's first argument lives (place()): NUMPY, TORCH_CPU or a CUDA
 * device index; every other argument must be of the same framework and device. */
enum { NUMPY = -2, TORCH_CPU = -1 };

static int view_placed(PyObject *x, long device, int writable, int placed, kiln_tensor *t,
                       held *h)
{
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    if (device == NUMPY)
        return Py_TYPE(x) == (PyTypeObject *)numpy_array ? numpy_view(x, writable, t, h)
                                                        : NOT_HANDLED;
    if (Py_TYPE(x) == (PyTypeObject *)torch_tensor) return torch_view(x, placed, t, h);
    return NOT_HANDLED;
}

static int view(PyObject *x, long device, int writable, kiln_tensor *t, held *h)
{
    return view_placed(x, device, writable, 0, t, h);
}

/* Where a torch.device is: a CUDA device index or TORCH_CPU; NOT_HANDLED for another device
 * type (meta, ...), which the ctypes path refuses by name. */
static int where_of(PyObject *dev, long *where)
{
    PyObject *type = PyObject_GetAttr(dev, s_type), *index;
    int cuda, cpu;
    if (!type) return FAILED;
    cuda = PyObject_RichCompareBool(type, s_cuda, Py_EQ);
    cpu = cuda == 0 ? PyObject_RichCompareBool(type, s_cpu, Py_EQ) : 0;
    Py_DECREF(type);
    if (cuda < 0 || cpu < 0) return FAILED;
    if (cpu) {
        *where = TORCH_CPU;
        return HANDLED;
    }
    if (!cuda) return NOT_HANDLED; /* meta, another device type */
    index = PyObject_GetAttr(dev, s_index);
    if (!index) return FAILED;
    *where = index == Py_None ? -1 : PyLong_AsLong(index);
    Py_DECREF(index);
    if (PyErr_Occurred()) return FAILED;
    return *where >= 0 ? HANDLED : NOT_HANDLED;
}

/* Where the call's first argument lives (see view()), its context and stream; a context not
 * made yet is left to the ctypes path. The first argument's device is checked here, and not
 * again by its view. The library makes its context current for the call and restores the
 * caller's, so a tensor on another device than torch's current one needs no switch here. */
static int place(PyObject *first, long *device, void **ctx, void **stream, held *h)
{
    PyObject *key, *c;
    *device = TORCH_CPU;
    *stream = NULL;
    if (torch_tensor != Py_None && Py_TYPE(first) == (PyTypeObject *)torch_tensor) {
        PyObject *dev = PyObject_GetAttr(first, s_device);
        long where = 0;
        int same;
        if (!dev) return FAILED;
        same = last_device ? PyObject_RichCompareBool(dev, last_device, Py_EQ) : 0;
        if (same == 1) where = last_where;
        if (same == 0) {
            int r = where_of(dev, &where);
            if (r != HANDLED) {
                Py_DECREF(dev);
                return r;
            }
            Py_INCREF(dev);
            Py_XDECREF(last_device);
            last_device = dev;
            last_where = where;
        }
        h->device = dev; /* the call's reference, released with h */
        if (same < 0) return FAILED;
        *device = where;
        if (*device >= 0) {
            PyObject *r, *idx_obj;
            if (current_stream == Py_None) return NOT_HANDLED;
            idx_obj = PyLong_FromLong(*device);
            if (!idx_obj) return FAILED;
            r = PyObject_CallFunctionObjArgs(current_stream, idx_obj, NULL);
            Py_DECREF(idx_obj);
            if (!r) return FAILED;
            *stream = PyLong_AsVoidPtr(r);
            Py_DECREF(r);
            if (PyErr_Occurred()) return FAILED;
        }
    } else if (numpy_array != Py_None && Py_TYPE(first) == (PyTypeObject *)numpy_array) {
        *device = NUMPY;
    } else {
        return NOT_HANDLED;
    }
    key = PyLong_FromLong(*device < 0 ? -1 : *device);
    if (!key) return FAILED;
    c = PyDict_GetItemWithError(contexts, key);
    Py_DECREF(key);
    if (!c) return PyErr_Occurred() ? FAILED : NOT_HANDLED;
    *ctx = PyLong_AsVoidPtr(c);
    return PyErr_Occurred() ? FAILED : HANDLED;
}

/* causal, window, softcap, scale, num_splits as attention() takes them -> *p; *use 0 when
 * all are defaults (the call then passes NULL, as the ctypes path does). */
static int params(PyObject *const *a, kiln_attention_params *p, int *use)
{
    PyObject *window = a[1];
    int causal = PyObject_IsTrue(a[0]);
    if (causal < 0) return FAILED;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->alibi_slopes.struct_size = sizeof p->alibi_slopes;
    p->causal = causal;
    p->window_left = p->window_right = -1;
    if (window != Py_None) {
        if (!PyTuple_Check(window) || PyTuple_Size(window) != 2) return NOT_HANDLED;
        p->window_left = (int32_t)PyLong_AsLong(PyTuple_GetItem(window, 0));
        p->window_right = (int32_t)PyLong_AsLong(PyTuple_GetItem(window, 1));
    }
    p->softcap = (float)PyFloat_AsDouble(a[2]);
    p->softmax_scale = a[3] == Py_None ? 0.0f : (float)PyFloat_AsDouble(a[3]);
    p->num_splits = (int32_t)PyLong_AsLong(a[4]);
    if (PyErr_Occurred()) {
        PyErr_Clear(); /* the ctypes path reports it */
        return NOT_HANDLED;
    }
    *use = p->causal || p->window_left != -1 || p->window_right != -1 || p->softcap != 0 ||
           a[3] != Py_None || p->num_splits != 0;
    return HANDLED;
}

static int index_view(PyObject *x, long device, kiln_tensor *t, held *h)
{
    int r = view(x, device, 0, t, h);
    return r == HANDLED && t->dtype != KILN_I32 ? NOT_HANDLED : r;
}

#define TRY(expr)                                                                            \
    do {                                                                                     \
        int r_ = (expr);                                                                     \
        if (r_ != HANDLED) {                                                                 \
            release(&h);                                                                     \
            if (r_ == FAILED) return NULL;                                                   \
            Py_RETURN_NONE;                                                                  \
        }                                                                                    \
    } while (0)

static PyObject *finish(kiln_status st, held *h)
{
    release(h);
    return PyLong_FromLong((long)st);
}

static void *address(PyObject *x) { return PyLong_AsVoidPtr(x); }

/* attention(fn, q, k, v, out, causal, window, softcap, scale, num_splits) -> status|None */
static PyObject *attention(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    kiln_tensor t[4];
    kiln_attention_params p;
    held h = {.n = 0, .device = NULL};
    long device;
    void *ctx, *stream, *fn;
    int use = 0;
    kiln_status st;
    (void)self;
    if (n != 10) return PyErr_Format(PyExc_TypeError, "attention takes 10 arguments");
    fn = address(a[0]);
    if (!fn) return NULL;
    TRY(place(a[1], &device, &ctx, &stream, &h));
    TRY(view_placed(a[1], device, 0, 1, &t[0], &h));
    TRY(view(a[2], device, 0, &t[1], &h));
    TRY(view(a[3], device, 0, &t[2], &h));
    TRY(view(a[4], device, 1, &t[3], &h));
    TRY(params(a + 5, &p, &use));
    Py_BEGIN_ALLOW_THREADS
    st = ((attention_fn)fn)(ctx, &t[0], &t[1], &t[2], &t[3], NULL, use ? &p : NULL, stream);
    Py_END_ALLOW_THREADS
    return finish(st, &h);
}

typedef kiln_status (*varlen_fn)(kiln_context *, const kiln_tensor *, const kiln_tensor *,
                                 const kiln_tensor *, const kiln_tensor *, const kiln_tensor *,
                                 int64_t, int64_t, kiln_tensor *, kiln_tensor *,
                                 const kiln_attention_params *, void *);
typedef kiln_status (*paged_fn)(kiln_context *, const kiln_tensor *, const kiln_tensor *,
                                const kiln_tensor *, const kiln_tensor *, const kiln_tensor *,
                                const kiln_tensor *, int64_t, kiln_tensor *, kiln_tensor *,
                                const kiln_attention_params *, void *);

/* What varlen and paged calls begin with: the place of a[0], q, k, v (a[0..2]) and two
 * int32 index arrays (a[3], a[4]) viewed into t[0..4]. */
static int indexed_views(PyObject *const *a, long *device, void **ctx, void **stream,
                         kiln_tensor *t, held *h)
{
    int r = place(a[0], device, ctx, stream, h);
    for (int i = 0; i < 5 && r == HANDLED; i++)
        r = i < 3 ? view_placed(a[i], *device, 0, i == 0, &t[i], h)
                  : index_view(a[i], *device, &t[i], h);
    return r;
}

/* attention_varlen(fn, q, k, v, cu_q, cu_k, max_q, max_k, out, causal, window, softcap,
 * scale, num_splits) -> status|None */
static PyObject *attention_varlen(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    kiln_tensor t[6];
    kiln_attention_params p;
    held h = {.n = 0, .device = NULL};
    long device;
    void *ctx, *stream, *fn;
    int use = 0;
    long long mq, mk;
    kiln_status st;
    (void)self;
    if (n != 14) return PyErr_Format(PyExc_TypeError, "attention_varlen takes 14 arguments");
    fn = address(a[0]);
    if (!fn) return NULL;
    mq = PyLong_AsLongLong(a[6]);
    mk = PyLong_AsLongLong(a[7]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    TRY(indexed_views(a + 1, &device, &ctx, &stream, t, &h));
    TRY(view(a[8], device, 1, &t[5], &h));
    TRY(params(a + 9, &p, &use));
    Py_BEGIN_ALLOW_THREADS
    st = ((varlen_fn)fn)(ctx, &t[0], &t[1], &t[2], &t[3], &t[4], mq, mk, &t[5], NULL,
                         use ? &p : NULL, stream);
    Py_END_ALLOW_THREADS
    return finish(st, &h);
}

/* attention_paged(fn, q, k_cache, v_cache, block_table, seqlens_k, cu_q|None, max_q, out,
 * causal, window, softcap, scale, num_splits) -> status|None */
static PyObject *attention_paged(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    kiln_tensor t[7];
    kiln_attention_params p;
    held h = {.n = 0, .device = NULL};
    long device;
    void *ctx, *stream, *fn;
    int use = 0;
    long long mq;
    kiln_status st;
    (void)self;
    if (n != 14) return PyErr_Format(PyExc_TypeError, "attention_paged takes 14 arguments");
    fn = address(a[0]);
    if (!fn) return NULL;
    mq = PyLong_AsLongLong(a[7]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    TRY(indexed_views(a + 1, &device, &ctx, &stream, t, &h));
    if (a[6] != Py_None) TRY(index_view(a[6], device, &t[5], &h));
    TRY(view(a[8], device, 1, &t[6], &h));
    TRY(params(a + 9, &p, &use));
    Py_BEGIN_ALLOW_THREADS
    st = ((paged_fn)fn)(ctx, &t[0], &t[1], &t[2], &t[3], &t[4], a[6] != Py_None ? &t[5] : NULL,
                        mq, &t[6], NULL, use ? &p : NULL, stream);
    Py_END_ALLOW_THREADS
    return finish(st, &h);
}

/* act_and_mul(fn, act, x, out) -> status|None */
static PyObject *act_and_mul(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    kiln_tensor t[2];
    held h = {.n = 0, .device = NULL};
    long device, act;
    void *ctx, *stream, *fn;
    kiln_status st;
    (void)self;
    if (n != 4) return PyErr_Format(PyExc_TypeError, "act_and_mul takes 4 arguments");
    fn = address(a[0]);
    act = PyLong_AsLong(a[1]);
    if (!fn || PyErr_Occurred()) return NULL;
    TRY(place(a[2], &device, &ctx, &stream, &h));
    TRY(view_placed(a[2], device, 0, 1, &t[0], &h));
    TRY(view(a[3], device, 1, &t[1], &h));
    Py_BEGIN_ALLOW_THREADS
    st = ((act_fn)fn)(ctx, (kiln_activation)act, &t[0], &t[1], stream);
    Py_END_ALLOW_THREADS
    return finish(st, &h);
}

/* setup(torch_tensor|None, numpy_ndarray|None, torch_codes, contexts, current_stream|None) */
static PyObject *setup(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    PyObject **slots[5] = {&torch_tensor, &numpy_array, &torch_codes, &contexts,
                           &current_stream};
    (void)self;
    if (n != 5) return PyErr_Format(PyExc_TypeError, "setup takes 5 arguments");
    if (!PyDict_Check(a[2]) || !PyDict_Check(a[3]))
        return PyErr_Format(PyExc_TypeError, "setup: codes and contexts must be dicts");
    for (int i = 0; i < 5; i++) {
        PyObject *old = *slots[i];
        Py_INCREF(a[i]);
        *slots[i] = a[i];
        Py_XDECREF(old);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL, NULL},
    {"attention", (PyCFunction)(void (*)(void))attention, METH_FASTCALL, NULL},
    {"attention_varlen", (PyCFunction)(void (*)(void))attention_varlen, METH_FASTCALL, NULL},
    {"attention_paged", (PyCFunction)(void (*)(void))attention_paged, METH_FASTCALL, NULL},
    {"act_and_mul", (PyCFunction)(void (*)(void))act_and_mul, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ext(void)
{
    static const char *names[] = {"dtype", "shape", "stride", "data_ptr", "device", "type",
                                  "index", "cuda", "cpu"};
    PyObject **interned[] = {&s_dtype, &s_shape, &s_stride, &s_data_ptr, &s_device, &s_type,
                             &s_index, &s_cuda, &s_cpu};
    for (int i = 0; i < 9; i++) {
        *interned[i] = PyUnicode_InternFromString(names[i]);
        if (!*interned[i]) return NULL;
    }
    return PyModule_Create(&module);
}
