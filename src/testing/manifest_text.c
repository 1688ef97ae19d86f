#include "manifest_text.h"

#include <stdio.h>
#include <stdlib.h>

#include "platform/platform.h"

char *tc_manifest_text(const char *dir)
{
    char path[1024], err[256];
    void *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s%cmanifest.json", dir, kiln_fs_sep());
    if (kiln_fs_read(path, &data, &len, err, sizeof err) != 0) return NULL;
    char *text = realloc(data, len + 1);
    if (!text) {
        free(data);
        return NULL;
    }
    text[len] = '\0';
    return text;
}
