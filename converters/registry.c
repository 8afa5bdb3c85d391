/* SPDX-License-Identifier: BSD-2-Clause */
/* registry.c - the converters `seqstore convert` knows, by KIND. */
#include "conv_impl.h"

#include <stdio.h>
#include <string.h>

const ss_converter *const ss__converters[] = {&ss__converter_lines,
                                             &ss__converter_text,
                                             &ss__converter_parallel,
                                             &ss__converter_idx,
                                             &ss__converter_npy,
                                             &ss__converter_edf,
                                             &ss__converter_jsonl,
                                             &ss__converter_megatron,
                                             &ss__converter_audio,
                                             &ss__converter_biosig,
                                             NULL};

void ss__conv_print_kinds(FILE *out) {
    for (int k = 0; ss__converters[k]; k++)
        fprintf(out, "  %-9s %s\n", ss__converters[k]->kind, ss__converters[k]->summary);
}

const ss_converter *ss__conv_find(const char *kind) {
    for (int k = 0; ss__converters[k]; k++)
        if (!strcmp(ss__converters[k]->kind, kind)) return ss__converters[k];
    return NULL;
}
