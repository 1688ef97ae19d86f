#include "describe.h"

#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"

char *tool_info_json(void) {
    /* Probing every backend is not free, so ask once with room to spare and retry only if
     * the library says the description is longer. */
    size_t cap = 1 << 16, needed = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        char *buf = malloc(cap);
        if (!buf) {
            fprintf(stderr, "kiln: out of memory for the library's description\n");
            return NULL;
        }
        kiln_status st = kiln_info_json(NULL, buf, cap, &needed);
        if (st == KILN_OK) return buf;
        free(buf);
        if (st != KILN_BUFFER_TOO_SMALL || needed <= cap) {
            fprintf(stderr, "kiln: kiln_info_json failed: %s: %s\n", kiln_status_string(st),
                    kiln_last_error());
            return NULL;
        }
        cap = needed;
    }
    fprintf(stderr, "kiln: kiln_info_json kept growing past its announced length\n");
    return NULL;
}
