/* kiln targets: the GPU target table, and which targets have code objects shipped. */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "gpu/aot_dir.h"
#include "gpu/targets.h"
#include "json.h"
#include "jsonv.h"

static void print_json(const kiln_target *t, size_t n) {
    kiln_json j;
    char aot[1024];
    tool_json_init(&j);
    kiln_json_object_begin(&j, NULL);
    kiln_json_string(&j, "aot_dir", kiln_aot_dir(aot, sizeof aot) == 0 ? aot : NULL);
    kiln_json_array_begin(&j, "targets");
    for (size_t i = 0; i < n; i++) {
        kiln_json_object_begin(&j, NULL);
        kiln_json_string(&j, "name", t[i].name);
        kiln_json_string(&j, "vendor", kiln_vendor_name(t[i].vendor));
        kiln_json_string(&j, "family", t[i].family);
        kiln_json_int(&j, "wave_size", t[i].wave_size);
        kiln_json_int(&j, "shared_static_bytes", t[i].shared_static_bytes);
        kiln_json_int(&j, "shared_max_bytes", t[i].shared_max_bytes);
        kiln_json_int(&j, "max_registers", t[i].max_registers);
        kiln_json_string(&j, "matrix", kiln_matrix_kind_name(t[i].matrix));
        kiln_json_int(&j, "default_cus", t[i].default_cus);
        kiln_json_string(&j, "product", t[i].product);
        kiln_json_bool(&j, "reports_wgp", t[i].reports_wgp);
        kiln_json_string(&j, "compile_arch", t[i].compile_arch);
        kiln_json_bool(&j, "shipped", kiln_gpu_aot_ships(t[i].name));
        if (t[i].vendor == KILN_VENDOR_AMD) {
            /* What occupancy is computed from (the compile matrix and `kiln build`'s
             * manifest report waves per SIMD for each code object). */
            kiln_json_int(&j, "vgprs_per_simd_lane", t[i].vgpr_file);
            kiln_json_int(&j, "vgpr_granule", t[i].vgpr_granule);
            kiln_json_int(&j, "max_waves_per_simd", t[i].max_waves_per_simd);
            kiln_json_int(&j, "lds_shared_bytes", t[i].lds_per_cu);
            kiln_json_int(&j, "simds_sharing_lds", t[i].simds_per_cu);
        }
        kiln_json_object_end(&j);
    }
    kiln_json_array_end(&j);
    kiln_json_object_end(&j);
    tool_json_print(stdout, &j, "kiln targets");
    kiln_json_free(&j);
}

static void print_table(const kiln_target *t, size_t n) {
    char aot[1024];
    printf("%-8s %-6s %-9s %4s %9s %9s %5s %-10s %5s  %-18s %s\n", "target", "vendor",
           "family", "wave", "smem KiB", "max KiB", "regs", "matrix", "CUs", "(product)",
           "shipped");
    for (size_t i = 0; i < n; i++)
        printf("%-8s %-6s %-9s %4d %9lld %9lld %5d %-10s %5d  %-18s %s\n", t[i].name,
               kiln_vendor_name(t[i].vendor), t[i].family, (int)t[i].wave_size,
               (long long)(t[i].shared_static_bytes / 1024),
               (long long)(t[i].shared_max_bytes / 1024), (int)t[i].max_registers,
               kiln_matrix_kind_name(t[i].matrix), (int)t[i].default_cus, t[i].product,
               kiln_gpu_aot_ships(t[i].name) ? "yes" : "-");
    if (kiln_aot_dir(aot, sizeof aot) == 0) printf("\nahead-of-time code objects: %s\n", aot);
    else
        printf("\nno ahead-of-time code objects (set KILN_AOT_DIR, or build them with "
               "'kiln build'); every target compiles on first use\n");
}

static int run(const tool_cmd *self, int argc, char **argv) {
    int json = 0;
    const tool_opt opts[] = {
        {"json", TOOL_OPT_FLAG, &json, 0, 0, NULL},
        {NULL, TOOL_OPT_FLAG, NULL, 0, 0, NULL},
    };
    tool_parse(self, argc, argv, opts, NULL, 0);
    size_t n = 0;
    const kiln_target *t = kiln_targets(&n);
    if (json) print_json(t, n);
    else print_table(t, n);
    return TOOL_EXIT_OK;
}

const tool_cmd tool_cmd_targets = {
    "targets",
    "list the GPU targets kiln knows, their limits, and which ship code objects",
    "usage: kiln targets [--json]\n"
    "\n"
    "Lists every GPU target in kiln's table: vendor, family, wave size, shared memory / LDS\n"
    "per workgroup (static and opt-in maximum), registers per thread, matrix instructions,\n"
    "the default compute-unit count (used when no GPU is present; CU_NUM overrides it) with\n"
    "the product it comes from, and whether ahead-of-time code objects for it are in the\n"
    "AOT directory (KILN_AOT_DIR or the installed one). These names are what GPU_ARCHS and\n"
    "'kiln build --targets' accept.\n"
    "\n"
    "options:\n"
    "  --json   print the table as JSON\n",
    run,
};
