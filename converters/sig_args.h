/* SPDX-License-Identifier: BSD-2-Clause */
/* sig_args.h - the arguments `convert edf` and `convert biosig` share: the
 * events and recording-metadata options, --physical, --list and the inputs. */
#ifndef SS_SIG_ARGS_H
#define SS_SIG_ARGS_H

#include "convert.h"
#include "events.h"
#include "recmeta.h"
#include "strlist.h"

/* ss__sig_arg(): argv[*i] is an option of the converter's own. */
#define SS__SIG_OWN (-1)

/* Take argv[*i] if it is a shared argument: an events option (ss__events_option),
 * --meta and the other ss__recmeta_option()s, `--physical f32` (*physical = 1),
 * `--list FILE` (its lines added to files), an input (added to files);
 * *i is advanced past a value taken. `own_value`: argv[*i] is an option of
 * the converter's own that takes a value (it needs one all the same).
 * @return 0 taken, SS__SIG_OWN for the converter's own option, or the exit
 * code of the error printed (an unknown option is a usage error). */
int ss__sig_arg(ss_conv *c, int argc, char **argv, int *i, int own_value, ss_events *ev,
                ss_recmeta *meta, int *physical, ss__strlist *files);

#endif
