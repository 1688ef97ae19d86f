#include "code_object.h"

#include <stdio.h> /* MinGW: defines the printf format kiln_fail is checked against */
#include <string.h>

#include "error.h"

/* ---- ELF64 little-endian ------------------------------------------------------------ */

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
    return v;
}

typedef struct elf {
    const unsigned char *data;
    size_t len;
    uint64_t shoff;
    unsigned shnum, shentsize, shstrndx;
} elf;

typedef struct elf_section {
    const char *name;
    uint32_t type, info;
    uint64_t offset, size;
} elf_section;

static int elf_open(elf *e, const void *image, size_t len)
{
    const unsigned char *d = image;
    if (!d || len < 64 || memcmp(d, "\177ELF", 4) != 0 || d[4] != 2 || d[5] != 1) return -1;
    e->data = d;
    e->len = len;
    e->shoff = rd(d + 0x28, 8);
    e->shentsize = (unsigned)rd(d + 0x3a, 2);
    e->shnum = (unsigned)rd(d + 0x3c, 2);
    e->shstrndx = (unsigned)rd(d + 0x3e, 2);
    if (e->shentsize < 64 || e->shoff > len || (uint64_t)e->shnum * e->shentsize > len - e->shoff ||
        e->shstrndx >= e->shnum)
        return -1;
    return 0;
}

static int elf_section_at(const elf *e, unsigned i, elf_section *s)
{
    const unsigned char *h = e->data + e->shoff + (uint64_t)i * e->shentsize;
    const unsigned char *sh = e->data + e->shoff + (uint64_t)e->shstrndx * e->shentsize;
    uint64_t stroff = rd(sh + 0x18, 8), strsize = rd(sh + 0x20, 8);
    uint32_t name = (uint32_t)rd(h, 4);
    s->type = (uint32_t)rd(h + 4, 4);
    s->offset = rd(h + 0x18, 8);
    s->size = rd(h + 0x20, 8);
    s->info = (uint32_t)rd(h + 0x2c, 4);
    if (stroff > e->len || strsize > e->len - stroff || name >= strsize) return -1;
    s->name = (const char *)e->data + stroff + name;
    if (!memchr(s->name, '\0', strsize - name)) return -1;
    /* NOBITS sections (8) occupy no file space; every other one must lie inside the file. */
    if (s->type != 8 && (s->offset > e->len || s->size > e->len - s->offset)) return -1;
    return 0;
}

static int elf_find(const elf *e, const char *prefix, const char *kernel, elf_section *s)
{
    size_t pl = strlen(prefix);
    for (unsigned i = 0; i < e->shnum; ++i) {
        if (elf_section_at(e, i, s) != 0) continue;
        if (strncmp(s->name, prefix, pl) == 0 &&
            (kernel ? strcmp(s->name + pl, kernel) == 0 : s->name[pl] == '\0'))
            return 0;
    }
    return -1;
}

/* ---- NVIDIA cubin ------------------------------------------------------------------- */

#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_REGCOUNT 0x2f
#define EIFMT_NVAL 1
#define EIFMT_BVAL 2
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4

static kiln_status inspect_cubin(const elf *e, const char *kernel, kiln_code_object_info *info)
{
    elf_section text, shared, nvinfo;
    uint32_t sym;
    KILN_FAIL_IF(elf_find(e, ".text.", kernel, &text) != 0, KILN_INVALID_ARGUMENT,
                 "cubin has no .text.%s section", kernel);
    info->vendor = KILN_VENDOR_NVIDIA;
    info->registers = text.info >> 24;
    info->shared_bytes =
        elf_find(e, ".nv.shared.", kernel, &shared) == 0 ? (int64_t)shared.size : 0;
    info->wave_size = 32;
    sym = text.info & 0xffffffu;
    if (elf_find(e, ".nv.info", NULL, &nvinfo) == 0) {
        const unsigned char *p = e->data + nvinfo.offset, *end = p + nvinfo.size;
        while (end - p >= 2) {
            unsigned fmt = p[0], attr = p[1];
            size_t vlen = fmt == EIFMT_NVAL ? 0 : fmt == EIFMT_BVAL ? 1 : fmt == EIFMT_HVAL ? 2 : 0;
            p += 2;
            if (fmt == EIFMT_SVAL) {
                if (end - p < 2) break;
                vlen = (size_t)rd(p, 2);
                p += 2;
            }
            if ((size_t)(end - p) < vlen) break;
            if (fmt == EIFMT_SVAL && vlen == 8 && rd(p, 4) == sym) {
                if (attr == EIATTR_FRAME_SIZE) info->stack_bytes = (int64_t)rd(p + 4, 4);
                if (attr == EIATTR_REGCOUNT) info->registers = (int64_t)rd(p + 4, 4);
            }
            p += vlen;
        }
    }
    return KILN_OK;
}

/* ---- AMD: msgpack metadata ---------------------------------------------------------- */

typedef struct mp {
    const unsigned char *p, *end;
    int err;
} mp;

enum { MP_NIL, MP_BOOL, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT };

typedef struct mp_item {
    int kind;
    int64_t i;               /* MP_INT / MP_BOOL value */
    uint64_t n;              /* length: string bytes, array items, map pairs, bin/ext bytes */
    const unsigned char *s;  /* MP_STR / MP_BIN / MP_EXT payload */
} mp_item;

static uint64_t mp_take(mp *m, int n)
{
    uint64_t v = 0;
    if (m->end - m->p < n) {
        m->err = 1;
        m->p = m->end;
        return 0;
    }
    for (int i = 0; i < n; ++i) v = v << 8 | m->p[i]; /* msgpack is big-endian */
    m->p += n;
    return v;
}

static void mp_bytes(mp *m, mp_item *it, uint64_t n)
{
    it->n = n;
    it->s = m->p;
    if ((uint64_t)(m->end - m->p) < n) {
        m->err = 1;
        m->p = m->end;
    } else {
        m->p += n;
    }
}

static mp_item mp_next(mp *m)
{
    mp_item it = {MP_NIL, 0, 0, NULL};
    unsigned c = (unsigned)mp_take(m, 1);
    if (m->err) return it;
    if (c <= 0x7f) it.kind = MP_INT, it.i = c;
    else if (c >= 0xe0) it.kind = MP_INT, it.i = (int64_t)c - 256;
    else if ((c & 0xf0) == 0x80) it.kind = MP_MAP, it.n = c & 0x0f;
    else if ((c & 0xf0) == 0x90) it.kind = MP_ARRAY, it.n = c & 0x0f;
    else if ((c & 0xe0) == 0xa0) it.kind = MP_STR, mp_bytes(m, &it, c & 0x1f);
    else switch (c) {
    case 0xc0: break;
    case 0xc2: case 0xc3: it.kind = MP_BOOL, it.i = c == 0xc3; break;
    case 0xc4: case 0xc5: case 0xc6:
        it.kind = MP_BIN, mp_bytes(m, &it, mp_take(m, 1 << (c - 0xc4))); break;
    case 0xc7: case 0xc8: case 0xc9: {
        uint64_t n = mp_take(m, 1 << (c - 0xc7));
        mp_take(m, 1);
        it.kind = MP_EXT, mp_bytes(m, &it, n);
        break;
    }
    case 0xca: it.kind = MP_FLOAT, mp_take(m, 4); break;
    case 0xcb: it.kind = MP_FLOAT, mp_take(m, 8); break;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        it.kind = MP_INT, it.i = (int64_t)mp_take(m, 1 << (c - 0xcc)); break;
    case 0xd0: it.kind = MP_INT, it.i = (int8_t)mp_take(m, 1); break;
    case 0xd1: it.kind = MP_INT, it.i = (int16_t)mp_take(m, 2); break;
    case 0xd2: it.kind = MP_INT, it.i = (int32_t)mp_take(m, 4); break;
    case 0xd3: it.kind = MP_INT, it.i = (int64_t)mp_take(m, 8); break;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        mp_take(m, 1);
        it.kind = MP_EXT, mp_bytes(m, &it, (uint64_t)1 << (c - 0xd4));
        break;
    case 0xd9: case 0xda: case 0xdb:
        it.kind = MP_STR, mp_bytes(m, &it, mp_take(m, 1 << (c - 0xd9))); break;
    case 0xdc: case 0xdd: it.kind = MP_ARRAY, it.n = mp_take(m, 2 << (c - 0xdc)); break;
    case 0xde: case 0xdf: it.kind = MP_MAP, it.n = mp_take(m, 2 << (c - 0xde)); break;
    default: m->err = 1;
    }
    return it;
}

/* Skips one value, containers included (depth-limited against hostile input). */
static void mp_skip_item(mp *m, const mp_item *it, int depth)
{
    uint64_t count = it->kind == MP_MAP ? it->n * 2 : it->kind == MP_ARRAY ? it->n : 0;
    if (depth > 32) {
        m->err = 1;
        return;
    }
    for (uint64_t i = 0; i < count && !m->err; ++i) {
        mp_item child = mp_next(m);
        mp_skip_item(m, &child, depth + 1);
    }
}

static int mp_str_is(const mp_item *it, const char *s)
{
    return it->kind == MP_STR && it->n == strlen(s) && memcmp(it->s, s, it->n) == 0;
}

/* Reads one kernel map; returns 1 if it is `kernel` (its fields then fill info). */
static int read_kernel_map(mp *m, uint64_t pairs, const char *kernel, kiln_code_object_info *k)
{
    int match = 0;
    memset(k, 0, sizeof *k);
    for (uint64_t i = 0; i < pairs && !m->err; ++i) {
        mp_item key = mp_next(m), val = mp_next(m);
        if (val.kind == MP_INT) {
            if (mp_str_is(&key, ".group_segment_fixed_size")) k->shared_bytes = val.i;
            else if (mp_str_is(&key, ".private_segment_fixed_size")) k->stack_bytes = val.i;
            else if (mp_str_is(&key, ".vgpr_count")) k->registers = val.i;
            else if (mp_str_is(&key, ".agpr_count")) k->agprs = val.i;
            else if (mp_str_is(&key, ".sgpr_count")) k->sgprs = val.i;
            else if (mp_str_is(&key, ".wavefront_size")) k->wave_size = (int32_t)val.i;
            else if (mp_str_is(&key, ".max_flat_workgroup_size")) k->max_threads = (int32_t)val.i;
        } else if (val.kind == MP_STR && mp_str_is(&key, ".name")) {
            match = val.n == strlen(kernel) && memcmp(val.s, kernel, val.n) == 0;
        } else {
            mp_skip_item(m, &val, 0);
        }
    }
    return match && !m->err;
}

static int find_in_metadata(const unsigned char *p, size_t n, const char *kernel,
                            kiln_code_object_info *info)
{
    mp m = {p, p + n, 0};
    mp_item top = mp_next(&m);
    if (top.kind != MP_MAP) return 0;
    for (uint64_t i = 0; i < top.n && !m.err; ++i) {
        mp_item key = mp_next(&m), val = mp_next(&m);
        if (mp_str_is(&key, "amdhsa.kernels") && val.kind == MP_ARRAY) {
            for (uint64_t k = 0; k < val.n && !m.err; ++k) {
                mp_item km = mp_next(&m);
                if (km.kind != MP_MAP) {
                    mp_skip_item(&m, &km, 0);
                    continue;
                }
                if (read_kernel_map(&m, km.n, kernel, info)) return 1;
            }
            return 0;
        }
        mp_skip_item(&m, &val, 0);
    }
    return 0;
}

#define SHT_NOTE 7
#define NT_AMDGPU_METADATA 32

static kiln_status inspect_hsaco(const elf *e, const char *kernel, kiln_code_object_info *info)
{
    for (unsigned i = 0; i < e->shnum; ++i) {
        elf_section s;
        if (elf_section_at(e, i, &s) != 0 || s.type != SHT_NOTE) continue;
        const unsigned char *p = e->data + s.offset, *end = p + s.size;
        while (end - p >= 12) {
            uint32_t namesz = (uint32_t)rd(p, 4), descsz = (uint32_t)rd(p + 4, 4);
            uint32_t type = (uint32_t)rd(p + 8, 4);
            size_t name_pad = ((size_t)namesz + 3) & ~(size_t)3;
            size_t desc_pad = ((size_t)descsz + 3) & ~(size_t)3;
            const unsigned char *name = p + 12, *desc = name + name_pad;
            if ((size_t)(end - name) < name_pad || (size_t)(end - desc) < descsz) break;
            if (type == NT_AMDGPU_METADATA && namesz >= 6 && memcmp(name, "AMDGPU", 6) == 0) {
                kiln_code_object_info k;
                if (find_in_metadata(desc, descsz, kernel, &k)) {
                    *info = k;
                    info->vendor = KILN_VENDOR_AMD;
                    return KILN_OK;
                }
                return kiln_fail(KILN_INVALID_ARGUMENT,
                                 "AMDGPU metadata lists no kernel named %s", kernel);
            }
            if ((size_t)(end - desc) < desc_pad) break;
            p = desc + desc_pad;
        }
    }
    return kiln_fail(KILN_INVALID_ARGUMENT, "code object has no NT_AMDGPU_METADATA note");
}

#define EM_CUDA 190
#define EM_AMDGPU 224

kiln_status kiln_code_object_inspect(const void *image, size_t len, const char *kernel,
                                     kiln_code_object_info *info)
{
    elf e;
    unsigned machine;
    memset(info, 0, sizeof *info);
    KILN_FAIL_IF(elf_open(&e, image, len) != 0, KILN_INVALID_ARGUMENT,
                 "not a 64-bit little-endian ELF code object (%zu bytes)", len);
    machine = (unsigned)rd(e.data + 0x12, 2);
    if (machine == EM_CUDA) return inspect_cubin(&e, kernel, info);
    if (machine == EM_AMDGPU) return inspect_hsaco(&e, kernel, info);
    return kiln_fail(KILN_INVALID_ARGUMENT, "ELF machine %u is neither CUDA nor AMDGPU", machine);
}

/* Registers per SM / per SIMD a block's threads may hold at once on NVIDIA. */
#define NVIDIA_REGS_PER_BLOCK 65536

kiln_status kiln_code_object_check(const kiln_target *t, const char *variant_key,
                                   int32_t block_threads, const kiln_code_object_info *info)
{
    KILN_FAIL_IF(info->vendor != t->vendor, KILN_COMPILE_ERROR,
                 "%s for %s: the code object is for %s, not %s", variant_key, t->name,
                 kiln_vendor_name(info->vendor), kiln_vendor_name(t->vendor));
    KILN_FAIL_IF(info->shared_bytes > t->shared_static_bytes, KILN_COMPILE_ERROR,
                 "%s for %s needs %lld bytes of %s; the target allows %lld per workgroup",
                 variant_key, t->name, (long long)info->shared_bytes,
                 t->vendor == KILN_VENDOR_AMD ? "LDS" : "static shared memory",
                 (long long)t->shared_static_bytes);
    KILN_FAIL_IF(info->registers + info->agprs > t->max_registers, KILN_COMPILE_ERROR,
                 "%s for %s uses %lld registers per thread; the target has %d", variant_key,
                 t->name, (long long)(info->registers + info->agprs), (int)t->max_registers);
    KILN_FAIL_IF(t->vendor == KILN_VENDOR_NVIDIA &&
                     info->registers * block_threads > NVIDIA_REGS_PER_BLOCK,
                 KILN_COMPILE_ERROR,
                 "%s for %s: %lld registers x %d threads exceed the %d registers of a block",
                 variant_key, t->name, (long long)info->registers, (int)block_threads,
                 NVIDIA_REGS_PER_BLOCK);
    KILN_FAIL_IF(info->wave_size != t->wave_size, KILN_COMPILE_ERROR,
                 "%s for %s was compiled for wave%d; the target runs wave%d", variant_key,
                 t->name, (int)info->wave_size, (int)t->wave_size);
    KILN_FAIL_IF(info->max_threads > 0 && block_threads > info->max_threads, KILN_COMPILE_ERROR,
                 "%s for %s launches %d threads per block; the code object allows %d",
                 variant_key, t->name, (int)block_threads, (int)info->max_threads);
    return KILN_OK;
}
