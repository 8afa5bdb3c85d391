/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_store.c - libFuzzer target over whole store files: the input is
 * written to a file that is opened, read (every example of every field,
 * every attribute) and verified. Damaged LMDB pages, headers, indexes and
 * attributes must give errors, never a crash, a hang or a sanitizer report.
 *
 * Seeds: fuzz/corpus/store/ holds the five tiny stores of store_harness.h,
 * written by running this target with SS_FUZZ_MAKE_SEEDS=<dir>. */
#include "store_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char store_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    ss_fuzz_temp_path(store_path, sizeof store_path, "fuzz_store");
    const char *seeds = getenv("SS_FUZZ_MAKE_SEEDS");
    for (int v = 0; seeds && v < 5; v++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/tiny%d.ss", seeds, v);
        if (ss_fuzz_make_store(p, v)) abort();
        snprintf(p, sizeof p, "%s/tiny%d.ss-lock", seeds, v);
        unlink(p);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (ss_fuzz_write_file(store_path, data, size)) abort();
    ss_fuzz_read_all(store_path);
    return 0;
}
