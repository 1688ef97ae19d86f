/* Prints the layout of kiln.h's structures as the C compiler sees it, one "name value" per
 * line, so the Python binding's ctypes mirror can be checked against it. */
#include <stddef.h>
#include <stdio.h>

#include "kiln.h"

#define SIZE(type) printf("%s.size %zu\n", #type, sizeof(type))
#define FIELD(type, field) printf("%s.%s %zu\n", #type, #field, offsetof(type, field))

int main(void)
{
    SIZE(kiln_tensor);
    FIELD(kiln_tensor, struct_size);
    FIELD(kiln_tensor, data);
    FIELD(kiln_tensor, dtype);
    FIELD(kiln_tensor, rank);
    FIELD(kiln_tensor, shape);
    FIELD(kiln_tensor, stride);
    SIZE(kiln_attention_params);
    FIELD(kiln_attention_params, struct_size);
    FIELD(kiln_attention_params, softmax_scale);
    FIELD(kiln_attention_params, causal);
    FIELD(kiln_attention_params, window_left);
    FIELD(kiln_attention_params, window_right);
    FIELD(kiln_attention_params, softcap);
    FIELD(kiln_attention_params, alibi_slopes);
    FIELD(kiln_attention_params, num_splits);
    FIELD(kiln_attention_params, workspace);
    FIELD(kiln_attention_params, workspace_size);
    SIZE(kiln_attention_plan);
    FIELD(kiln_attention_plan, struct_size);
    FIELD(kiln_attention_plan, batch);
    FIELD(kiln_attention_plan, rows_q);
    FIELD(kiln_attention_plan, max_seqlen_q);
    FIELD(kiln_attention_plan, max_seqlen_k);
    FIELD(kiln_attention_plan, heads_q);
    FIELD(kiln_attention_plan, heads_kv);
    FIELD(kiln_attention_plan, head_dim);
    FIELD(kiln_attention_plan, num_splits);
    SIZE(kiln_dispatch);
    FIELD(kiln_dispatch, struct_size);
    FIELD(kiln_dispatch, backend);
    FIELD(kiln_dispatch, target);
    FIELD(kiln_dispatch, tier);
    FIELD(kiln_dispatch, variant);
    FIELD(kiln_dispatch, num_splits);
    FIELD(kiln_dispatch, reserved);
    printf("enum.size %zu\n", sizeof(kiln_dtype));
    return 0;
}
