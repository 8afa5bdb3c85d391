/* SPDX-License-Identifier: BSD-2-Clause */
/* registry.c - the converters `seqstore convert` knows, by KIND. */
#include "conv_impl.h"

#include <stdio.h>
#include <string.h>

const ss_converter *const ss_converters[] = {&ss_converter_lines,
                                             &ss_converter_text,
                                             &ss_converter_parallel,
                                             &ss_converter_idx,
                                             &ss_converter_npy,
                                             &ss_converter_edf,
                                             &ss_converter_jsonl,
                                             &ss_converter_megatron,
                                             &ss_converter_audio,
                                             &ss_converter_biosig,
                                             NULL};

void ss__conv_print_kinds(FILE *out) {
    for (int k = 0; ss_converters[k]; k++)
        fprintf(out, "  %-9s %s\n", ss_converters[k]->kind, ss_converters[k]->summary);
}

const ss_converter *ss__conv_find(const char *kind) {
    for (int k = 0; ss_converters[k]; k++)
        if (!strcmp(ss_converters[k]->kind, kind)) return ss_converters[k];
    return NULL;
}
