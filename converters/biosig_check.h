/* SPDX-License-Identifier: BSD-2-Clause */
/* biosig_check.h - the header fields BioSig 2.5 trusts, checked before
 * `convert biosig` hands it a file.
 *
 * BioSig 2.5 reads some header fields without checking them and then
 * crashes (a GDF header length of 0, NS = 65535, a BrainVision header
 * without [Channel Infos]), stores a lie as data (SamplingInterval=0 as
 * the rate inf) or mis-reads the markers that follow a 'New Segment'
 * marker without a date. These functions check exactly those fields on the
 * bytes of the file, without BioSig, so that a bad file is an error naming
 * the field; everything else is left to BioSig. They never read past
 * `n` bytes, need no terminating NUL, and allocate nothing (fuzz/
 * fuzz_biosig_check.c runs them on arbitrary bytes). Each returns 0 when
 * BioSig can be given the file, else 1 with the reason in err[cap]. */
#ifndef SS_BIOSIG_CHECK_H
#define SS_BIOSIG_CHECK_H

#include <stddef.h>
#include <stdint.h>

/** The bytes a GDF check needs: the 256-byte fixed header, from which
 *  ss__bs_gdf_header_len() tells how many more. */
#define SS_BS_GDF_FIXED 256

/** The header length (bytes) a GDF's fixed header `head` (n >= 256)
 *  declares: bytes 184-185 in 256-byte blocks (GDF 2 and 3) or bytes
 *  184-191 (GDF 1); 0 if `head` is no GDF or too short. */
uint64_t ss__bs_gdf_header_len(const uint8_t *head, size_t n);

/** Check a GDF file of `size` bytes whose first n bytes are `head`; the
 *  caller passes at least min(size, ss__bs_gdf_header_len()) bytes. Checks:
 *  the header length is at least 256 * (NS + 1) and within the file; each
 *  channel's data type is one BioSig knows; the data records the header
 *  announces (NRec, unless -1: unknown) fit in the file after the header;
 *  the tagged fields of header 3 lie inside the header. A file shorter
 *  than 256 bytes, or with no GDF version, is left to BioSig (which says
 *  so without crashing). */
int ss__bs_check_gdf(const uint8_t *head, size_t n, uint64_t size, char *err, size_t cap);

/** What ss__bs_check_vhdr() found in a BrainVision header. */
typedef struct ss_bs_vhdr {
    char datafile[256];   /* DataFile= */
    char markerfile[256]; /* MarkerFile=, "" when the header names none */
    long nch;             /* NumberOfChannels= */
    double interval;      /* SamplingInterval=, microseconds */
    long long points;     /* DataPoints=, -1 when absent (BioSig counts the data file) */
    int sample_bytes;     /* of BinaryFormat= (2 or 4), 0 for ASCII or another format */
} ss_bs_vhdr;

/** Check a BrainVision header's text (the .vhdr, n bytes): exactly one
 *  [Common Infos], one [Binary Infos] or [ASCII Infos] and one [Channel
 *  Infos], the first two before the last (BioSig sizes the channels when
 *  it meets [Channel Infos]); in [Common Infos] DataFile, NumberOfChannels
 *  (1 to 65535) and SamplingInterval (a positive finite number of
 *  microseconds), each once, MarkerFile and DataPoints (>= 0) at most
 *  once. [out] *out the values, for the checks on disk that the caller
 *  makes (DataPoints against the data file's size: BioSig trusts it). */
int ss__bs_check_vhdr(ss_bs_vhdr *out, const char *text, size_t n, char *err, size_t cap);

/** Check a BrainVision marker file's text (the .vmrk, n bytes): its first
 *  line is the one BioSig recognises ("Brain Vision Data Exchange Marker
 *  File, Version"), no NUL byte, and every marker line "MkN=..." of
 *  [Marker Infos] has the five fields type, description, position, size,
 *  channel (BioSig 2.5 reads the next line for a missing one); a 'New
 *  Segment' marker's date, when it has one, is YYYYMMDDhhmmss at least.
 *  [out] *count the marker lines, which BioSig's event table must then
 *  hold. [out] *undated the 'New Segment' markers without a date (the
 *  field is optional): BioSig 2.5 writes into the next line for each and
 *  mis-reads the markers after it, so it must be given the text of
 *  ss__bs_vmrk_dated() instead. */
int ss__bs_check_vmrk(size_t *count, size_t *undated, const char *text, size_t n, char *err,
                      size_t cap);

/** Bytes ss__bs_vmrk_dated() adds per undated marker. */
#define SS_BS_VMRK_DATE_LEN 21

/** A marker file's text (accepted by ss__bs_check_vmrk()) with the date
 *  ",00000000000000000000" (unknown) added to each 'New Segment' marker of
 *  [Marker Infos] that has none, into out[cap]; nothing else changes.
 *  @return its length, or 0 when cap < n + SS_BS_VMRK_DATE_LEN * undated. */
size_t ss__bs_vmrk_dated(char *out, size_t cap, const char *text, size_t n);

/** The bits per sample of GDF data type `gdftyp` as BioSig 2.5's table
 *  GDFTYP_BITS gives them; 0 for a type it does not know. */
unsigned ss__bs_gdftyp_bits(uint32_t gdftyp);

#endif
