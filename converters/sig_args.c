/* SPDX-License-Identifier: BSD-2-Clause */
/* sig_args.c - the arguments the signal converters share (see sig_args.h). */
#include "sig_args.h"

#include <string.h>

int ss__sig_arg(ss_conv *c, int argc, char **argv, int *i, int own_value, ss_events *ev,
                ss_recmeta *meta, int *physical, ss__strlist *files) {
    const char *a = argv[*i];
    int has_value = own_value || !strcmp(a, "--physical") || !strcmp(a, "--list") ||
                    !strncmp(a, "--events", 8) || !strncmp(a, "--window-", 9) ||
                    !strcmp(a, "--meta") || !strcmp(a, "--trigger-mask");
    char err[256];
    if (has_value && *i + 1 >= argc) return ss__conv_usage_error(c, "%s needs a value", a);
    int e = has_value ? ss__events_option(ev, a, argv[*i + 1], err, sizeof err) : 0;
    if (e < 0) return ss__conv_usage_error(c, "%s", err);
    if (e > 0 || (has_value && ss__recmeta_option(meta, a, argv[*i + 1]))) {
        ++*i;
        return 0;
    }
    if (own_value) return SS__SIG_OWN;
    if (!strcmp(a, "--physical")) {
        if (strcmp(argv[++*i], "f32"))
            return ss__conv_usage_error(c, "--physical takes f32, not '%s'", argv[*i]);
        *physical = 1;
        return 0;
    }
    if (!strcmp(a, "--list")) return ss__conv_read_list(c, files, argv[++*i]);
    if (a[0] == '-' && a[1] != '\0') return ss__conv_usage_error(c, "unknown option '%s'", a);
    return ss__strlist_add(files, a) ? ss__conv_error(c, "out of memory") : 0;
}
