/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_golden.c - golden failing inputs of the audio and biosig
 * converters and of `convert edf --events-from` (tests/data/bad, made once by make_bad.sh): each file must fail
 * its conversion with exit code 1 and the exact message of tests/data/bad/
 * MANIFEST ("seqstore convert: DIR/FILE: MESSAGE"), never a crash; and every
 * input file of that folder must have its MANIFEST line. */
#include "convtest.h"

#include <dirent.h>

#define BAD SS_SOURCE_DIR "/tests/data/bad"

int main(void) {
    size_t n;
    char *man = ss_test_read_file(BAD "/MANIFEST", &n), *save = NULL;
    const char *st = ss_test_keep_path("out.ss");
    int cases = 0;
    for (char *line = strtok_r(man, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char *kind = line, *file = strchr(kind, '\t'), *opts, *msg;
        CHECK(file && (opts = strchr(file + 1, '\t')) && (msg = strchr(opts + 1, '\t')));
        *file++ = '\0', *opts++ = '\0', *msg++ = '\0';
        if (!strcmp(kind, "biosig") && system(SS_CLI " convert biosig --help 2>&1 | grep -q "
                                                     "'without BioSig'") == 0)
            continue;
        EXPECT_RUN(1, "convert %s '" BAD "/%s' %s -o '%s' --force --quiet", kind, file, opts, st);
        char want[1024];
        snprintf(want, sizeof want, "seqstore convert: " BAD "/%s: %s\n", file, msg);
        CHECK_CONTAINS(g_err, want);
        cases++;
    }
    CHECK(cases >= 14);
    /* every input in the folder is listed */
    DIR *d = opendir(BAD);
    CHECK(d);
    for (struct dirent *e; (e = readdir(d));) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".wav") && strcmp(dot, ".flac") && strcmp(dot, ".gdf") &&
                     strcmp(dot, ".vhdr") && strcmp(dot, ".bdf") && strcmp(dot, ".edf")))
            continue;
        char *again = ss_test_read_file(BAD "/MANIFEST", &n), key[300];
        snprintf(key, sizeof key, "\t%s\t", e->d_name);
        if (!strstr(again, key)) {
            fprintf(stderr, "%s has no line in MANIFEST\n", e->d_name);
            exit(1);
        }
        free(again);
    }
    closedir(d);
    free(man);
    return 0;
}
