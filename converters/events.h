/* SPDX-License-Identifier: BSD-2-Clause */
/* events.h - events as labels, shared by `convert edf` and `convert biosig`.
 *
 * Both converters read a recording's annotations / event table as text lines
 * "ONSET\tDURATION\tTEXT\n" (seconds, DURATION may be empty). With
 * `--events-as samples` or `--events-as windows` those events become labels:
 *
 *   samples  a sequence field `label` u32 [T] beside `signal`: sample t holds
 *            the class of the last event (in table order) covering it,
 *            [round(ONSET*rate), + max(1, round(DURATION*rate))), else 0.
 *            Class 0 is the background "none" (an event named "none" is
 *            class 0 too). The collator pads it like any sequence field;
 *            the window reader serves it beside each window through
 *            ss_window_reader_targets().
 *   windows  one example per event (braindecode's windows from events, for
 *            trial-wise decoding): `signal` rows [o + round(START*rate),
 *            + round((STOP-START)*rate)) with o = round(ONSET*rate), a fixed
 *            u32 `label` (the event's class, from 0) and a fixed i64 `onset`
 *            (o, in samples from the recording's start). Windows that do not
 *            lie inside the recording are left out and counted. The window
 *            reader (window W, label_field `label`) serves each once.
 *
 * Classes are the event texts, numbered in order of first appearance over
 * the inputs in input order (after those of the store appended to), or
 * exactly the texts of `--events A,B,...` in that order (other events are
 * ignored). They are stored one per line in the attribute `label.names`.
 *
 * Events come from the annotations / event table (--events-from annotations,
 * the default) or from an event channel: --events-from channel:NAME in both
 * converters (`convert biosig` reads the channel through BioSig, e.g. a GDF's
 * trigger channel), and in `convert edf` through EDFlib also --events-from
 * status (a BDF file's "Status" channel; BioSemi keeps
 * the trigger code in the low 16 bits of the 24-bit status word, so the
 * default --trigger-mask is 0xFFFF) or --events-from channel:NAME (any
 * channel's digital values; default mask: every bit). An event is a change
 * of the masked value to a nonzero code; its onset is that sample, its length
 * the samples until the masked value changes again, its text the code in
 * decimal ("65"; a negative value of an unmasked channel as "-3"), its number
 * its place among the recording's trigger events (1-based). These are
 * mne.find_events(raw, consecutive=True, initial_event=True, mask=M,
 * mask_type='and', shortest_event=1) with the channel's values. */
#ifndef SS_EVENTS_H
#define SS_EVENTS_H

#include "seqstore.h"

#include <stddef.h>
#include <stdint.h>

typedef enum ss_ev_mode { SS_EV_NONE = 0, SS_EV_SAMPLES = 1, SS_EV_WINDOWS = 2 } ss_ev_mode;

/** Where the events come from (--events-from). */
typedef enum ss_ev_from {
    SS_EV_FROM_ANNOTATIONS = 0, /* annotations / the event table */
    SS_EV_FROM_STATUS = 1,      /* a BDF "Status" channel */
    SS_EV_FROM_CHANNEL = 2      /* the channel named in from_channel */
} ss_ev_from;

/** One event of the recording being converted. */
typedef struct ss_event {
    int64_t onset;   /**< sample index (may lie outside the recording) */
    uint64_t length; /**< samples covered, >= 1 */
    uint32_t cls;    /**< class id */
    uint64_t number; /**< 1-based line in the event table (trigger: event number) */
} ss_event;

typedef struct ss_events {
    ss_ev_mode mode;
    double start, stop; /* windows: seconds from the onset */
    int have_start, have_stop;
    int fixed; /* --events given: only those classes */
    ss_ev_from from;
    char *from_channel; /* channel:NAME; "Status" for status */
    uint32_t mask;      /* --trigger-mask, or the default of `from` */
    int have_mask;
    char **names;
    uint32_t nnames, capnames;
    uint64_t outside; /* windows left out: not inside their recording */
    /* the current recording, reused */
    ss_event *ev;
    size_t nev, capev;
    uint32_t *lab;
    size_t caplab;
} ss_events;

/** Handle option `opt` with value `val` if it is one of --events-as,
 *  --events, --window-start, --window-stop, --events-from, --trigger-mask.
 *  @return 1 consumed; 0 not an events option; -1 bad value (err says why). */
int ss__events_option(ss_events *e, const char *opt, const char *val, char *err, size_t errlen);

/** After the options: windows need --window-start < --window-stop; the
 *  window options need --events-as windows; --events-from needs --events-as
 *  and --trigger-mask an event channel. @return 0, or -1 (err). */
int ss__events_check(ss_events *e, char *err, size_t errlen);

/** Start from the classes of the store appended to (its label.names, a
 *  separated line list: zero bytes are one empty name, or no class in a
 *  store without examples), when it has them. @return 0, or -1 (out of
 *  memory). */
int ss__events_load(ss_events *e, const ss_store *st);

/** Classify the annotation lines of one recording of T samples into e->ev
 *  (samples at `rate` Hz). New texts get new classes unless --events fixed
 *  them. @return 0, or -1 (a line that is not ONSET\tDURATION\tTEXT, or
 *  an onset outside [0, T]; err names the event). */
int ss__events_read(ss_events *e, const char *text, size_t len, double rate, uint64_t T, char *err,
                    size_t errlen);

/** Classify the trigger events of an event channel's T digital values
 *  `codes` (see above) into e->ev, as ss__events_read() does for lines.
 *  @return 0, or -1 (out of memory; err says so). */
int ss__events_codes(ss_events *e, const int32_t *codes, uint64_t T, char *err, size_t errlen);

/** Per-sample labels of the events read last, for a recording of T samples
 *  (borrowed until the next call). NULL when out of memory. */
const uint32_t *ss__events_samples(ss_events *e, uint64_t T);

/** Window length in samples at `rate` (>= 1). */
uint64_t ss__events_window(const ss_events *e, double rate);

/** First sample of event k's window (may be out of the recording). */
int64_t ss__events_window_start(const ss_events *e, size_t k, double rate);

/** The classes as '\n'-joined text (malloc'd, *len bytes); NULL when out of memory. */
char *ss__events_names(const ss_events *e, size_t *len);

/** After the last input: store label.names and say (unless --quiet) how many
 *  windows were left out. @return 0, or 1 (error printed). */
struct ss_conv;
int ss__events_finish(struct ss_conv *c, const ss_events *e);

void ss__events_free(ss_events *e);

#endif /* SS_EVENTS_H */
