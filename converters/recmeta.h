/* SPDX-License-Identifier: BSD-2-Clause */
/* recmeta.h - recording metadata per example (subject, session, recording),
 * shared by `convert edf` and `convert biosig`, so that grouped folds
 * (ss_selection_kfold with groups from ss_selection_field_values) can keep
 * a subject, a session or a recording inside one fold.
 *
 * `--meta header` takes them from each file's header: subject = the EDF+
 * patient code (plain EDF: the patient field; BioSig: the patient id),
 * session = the start date (YYYY-MM-DD), recording = the file name.
 * `--meta FILE.csv` reads rows with a header line naming `path` and any of
 * `subject`, `session`, `recording` (a row matches a file by its exact path,
 * else by file name); a column the CSV lacks comes from the header.
 *
 * Each becomes a fixed u32 field (`subject`, `session`, `recording`), an id
 * into the line list `<field>.names` (ids in order of first appearance, in
 * input order, after those of the store appended to). */
#ifndef SS_RECMETA_H
#define SS_RECMETA_H

#include "seqstore.h"

#include <stddef.h>
#include <stdint.h>

#define SS_RECMETA_FIELDS 3

typedef struct ss_namelist {
    char **v;
    uint32_t n, cap;
} ss_namelist;

typedef struct ss_recmeta {
    int on;          /* --meta given */
    const char *csv; /* --meta FILE.csv, or NULL for header */
    int has_col[3];  /* the CSV has subject / session / recording */
    char **rows;     /* per row: path, subject, session, recording */
    uint32_t nrows, caprows;
    ss_namelist names[3]; /* subject.names, session.names, recording.names */
    uint32_t ids[3];      /* of the file just placed */
} ss_recmeta;

/** `--meta VALUE`. @return 1 consumed, 0 not --meta. */
int ss__recmeta_option(ss_recmeta *m, const char *opt, const char *val);

/** Read the CSV (if any). @return 0, or -1 (err names FILE:LINE). */
int ss__recmeta_load_csv(ss_recmeta *m, char *err, size_t errlen);

/** Start from the names of the store appended to. @return 0, -1 out of memory. */
int ss__recmeta_load_store(ss_recmeta *m, const ss_store *st);

/** Add the three fields to `f` (after n fields); returns the new count. */
uint32_t ss__recmeta_fields(const ss_recmeta *m, ss_field *f, uint32_t n);

/** Ids of the recording at `path` into m->ids, from its CSV row or the
 *  header values given (NULL = ""). Call in input order.
 *  @return 0, or -1 (no CSV row for the file, out of memory; err says). */
int ss__recmeta_place(ss_recmeta *m, const char *path, const char *subject, const char *session,
                      char *err, size_t errlen);

struct ss_conv;
/** Store subject.names, session.names, recording.names. @return 0 or 1. */
int ss__recmeta_finish(struct ss_conv *c, const ss_recmeta *m);

void ss__recmeta_free(ss_recmeta *m);

#endif /* SS_RECMETA_H */
