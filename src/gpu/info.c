/* The GPU half of kiln_info_json(): the target table and the code objects shipped. */
#include "context.h"
#include "gpu/aot_dir.h"
#include "gpu/targets.h"
#include "json.h"

void kiln_info_append_gpu(kiln_json *j)
{
    size_t n, i;
    const kiln_target *t = kiln_targets(&n);
    kiln_json_array_begin(j, "targets_known");
    for (i = 0; i < n; i++) kiln_json_string(j, NULL, t[i].name);
    kiln_json_array_end(j);
    kiln_aot_describe(j);
}
