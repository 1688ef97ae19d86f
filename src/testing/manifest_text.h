/*
 * The text of an ahead-of-time build's manifest, for the tests that read it back
 * (tests/gpu/compile_matrix.c, tests/test_amd_tensor.c). Part of the testing library.
 */
#ifndef KILN_TESTING_MANIFEST_TEXT_H
#define KILN_TESTING_MANIFEST_TEXT_H

/* DIR/manifest.json as a NUL-terminated string the caller frees, or NULL when it cannot be
 * read. */
char *tc_manifest_text(const char *dir);

#endif
