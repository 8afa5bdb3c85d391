/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edf_records.h - the samples of an EDF/BDF file read straight from its data
 * records, for `convert edf`.
 *
 * EDFlib reads every byte of every sample with fgetc(), which glibc locks in
 * a process with more than one thread: with --threads 2 that read was most
 * of a conversion's time. This reader takes whole blocks of data records
 * with pread() and picks the channels out of them, giving exactly what
 * edfread_digital_samples() / edfread_physical_samples() give (digital
 * values clamped to [digital minimum, maximum], as EDFlib 1.23 does). It
 * relies on EDFlib's validation of the header, and declines (so that the
 * caller reads through EDFlib, which reports the problem its own way) any
 * file whose raw header does not map onto EDFlib's view of it signal by
 * signal, or whose size is not exactly the header plus the data records.
 */
#ifndef SS_EDF_RECORDS_H
#define SS_EDF_RECORDS_H

#include <edflib.h>
#include <stddef.h>
#include <stdint.h>

/** Where each of EDFlib's (non-annotation) signals lies in a data record. */
typedef struct ss_edf_layout {
    uint64_t hdr_bytes;              /* the header: 256 * (signals + 1) */
    uint64_t rec_bytes;              /* one data record, annotation signals included */
    uint64_t nrec;                   /* data records */
    uint32_t bps;                    /* bytes per sample: 2 (EDF) or 3 (BDF) */
    uint64_t off[EDFLIB_MAXSIGNALS]; /* byte offset in a record, by EDFlib signal */
} ss_edf_layout;

/** The output of ss_edf_read(). */
typedef enum ss_edf_values {
    SS_EDF_I16, /* digital, EDF */
    SS_EDF_I32, /* digital, BDF */
    SS_EDF_F32  /* physical: gain * (edf_offset + digital), as EDFlib computes it */
} ss_edf_values;

/** Map the raw header of the file open as `fd` onto EDFlib's header `h` of
 *  the same file.
 *  @param[out] out the layout (valid when 0 is returned)
 *  @return 0; 1 when this reader is not sure of the file (the raw signals do
 *  not match EDFlib's in number, labels or samples per record, or the file
 *  is not exactly the header plus h->datarecords_in_file records); -1 on a
 *  read error (errno set). */
int ss_edf_layout_read(ss_edf_layout *out, int fd, const struct edf_hdr_struct *h);

/** Read the `nch` signals `sig` (EDFlib's numbers; all with the same samples
 *  per record) of every data record, time-major, into `out`: [T][nch] values
 *  of `kind`, T = h->signalparam[sig[0]].smp_in_file.
 *  @param gain, edf_offset per selected channel, for SS_EDF_F32 (EDFlib's
 *  bitvalue and offset); otherwise unused
 *  @param buf, cap the caller's scratch buffer for blocks of records (grown
 *  with realloc; the caller frees it)
 *  @return 0; -1 on a read error or a short file (errno set), or when the
 *  scratch buffer cannot grow (errno ENOMEM). */
int ss_edf_read(void *out, ss_edf_values kind, const ss_edf_layout *L, int fd,
                const struct edf_hdr_struct *h, const int *sig, uint32_t nch, const double *gain,
                const double *edf_offset, unsigned char **buf, size_t *cap);

#endif /* SS_EDF_RECORDS_H */
