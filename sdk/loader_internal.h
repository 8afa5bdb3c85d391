/* SPDX-License-Identifier: BSD-2-Clause */
/* loader_internal.h - the loader's tuning that tests reach (not installed). */
#ifndef SS_LOADER_INTERNAL_H
#define SS_LOADER_INTERNAL_H

#include <stdint.h>

/* Examples of the global order a token-budget plan reads per step (65536;
 * a batch longer than that doubles it for the step). Tests set it small so
 * that chunk boundaries fall inside batches; read at each plan. */
extern uint64_t ss__loader_plan_chunk;

#endif
