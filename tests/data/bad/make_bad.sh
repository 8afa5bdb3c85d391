#!/bin/sh
# make_bad.sh - how the golden failing inputs in this folder were made (run
# once; the files are committed, so the tests never depend on this script's
# tools). Each file's expected error is in MANIFEST.
set -e
cd "$(dirname "$0")"
rm -f ./*.wav ./*.flac ./*.gdf ./*.vhdr ./*.vmrk ./*.eeg ./*.bdf ./*.edf
tmp=$(mktemp -d)
# audio (sox, then cut or patched)
sox -n -r 16000 -c 1 -b 16 "$tmp/good.wav" synth 0.05 sine 440
sox -n -r 16000 -c 1 "$tmp/good.flac" synth 0.5 sine 440
: > empty.wav
head -c 1000 "$tmp/good.wav" > truncated.wav                 # header promises 1600 bytes of data
cp "$tmp/good.wav" zero_channels.wav
printf '\000\000' | dd of=zero_channels.wav bs=1 seek=22 conv=notrunc 2>/dev/null
cp "$tmp/good.wav" zero_rate.wav
printf '\000\000\000\000' | dd of=zero_rate.wav bs=1 seek=24 conv=notrunc 2>/dev/null
sox -n -r 16000 -c 1 -b 16 no_frames.wav trim 0 0           # a valid header, no samples
head -c 3000 "$tmp/good.flac" > truncated.flac
# STREAMINFO's 36-bit total samples (the low nibble of byte 21, bytes 22-25)
# set to 2^36 - 1: the header claims 68719476735 frames, the file holds 8000
cp "$tmp/good.flac" lying_total.flac
b21=$(od -An -tu1 -j21 -N1 lying_total.flac)
printf "\\$(printf %o $((b21 | 15)))\\377\\377\\377\\377" |
    dd of=lying_total.flac bs=1 seek=21 conv=notrunc 2>/dev/null
# biosig: BrainVision from tests/biosig/bv_ref.py (20 samples), GDF from save2gdf
/usr/bin/python3 ../../biosig/bv_ref.py make "$tmp" 20 250 0
save2gdf "$tmp/rec.vhdr" "$tmp/rec.gdf" > /dev/null
: > empty.gdf
head -c 100 "$tmp/rec.gdf" > short.gdf
head -c 600 "$tmp/rec.gdf" > cut_header.gdf
# the last 100 bytes cut: 2 of the header's 20 data records and the event table
# missing; BioSig 2.5 only warns and returns the 18 records it found
head -c $(($(wc -c < "$tmp/rec.gdf") - 100)) "$tmp/rec.gdf" > truncated.gdf
# GDF header fields BioSig 2.5 trusts: patch(FILE OFFSET HEX-BYTES) on a copy
patch() { cp "$tmp/rec.gdf" "$1"; printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }
patch zero_headlen.gdf 184 '\000\000'          # header length 0: SIGSEGV in gdfbin2struct
patch ns_65535.gdf 252 '\377\377'              # NS = 65535: SIGSEGV in sclose
patch lying_nrec.gdf 236 '\000\000\000\000\000\001\000\000' # NRec 2^40: "out of memory"
patch bad_gdftyp.gdf $((256 + 3 * 220)) '\377\377' # channel 1's data type 65535
patch no_records.gdf 252 '\000\000'            # NS = 0 ...
printf '\377\377\377\377\377\377\377\377' | dd of=no_records.gdf bs=1 seek=236 conv=notrunc 2>/dev/null
                                                # ... and NRec -1: SIGFPE (records of 0 bytes)
patch tag1_unterminated.gdf 1024 '\001\010\000\000\000SSSSSSS' # header 3: strings run past tag 1
# a BrainVision triple NAME.vhdr/.vmrk/.eeg, then a sed script on the header
bv() {
    sed "s/rec\.eeg/$1.eeg/; s/rec\.vmrk/$1.vmrk/; $2" "$tmp/rec.vhdr" > "$1.vhdr"
    sed "s/rec\.eeg/$1.eeg/" "$tmp/rec.vmrk" > "$1.vmrk"
    cp "$tmp/rec.eeg" "$1.eeg"
}
bv binary_format 's/BinaryFormat=INT_16/BinaryFormat=INT_12/'
bv no_channels 's/NumberOfChannels=3/NumberOfChannels=0/'
bv other_datafile 's/DataFile=other_datafile.eeg/DataFile=elsewhere.eeg/'
bv missing_datafile ''
rm missing_datafile.eeg
bv zero_interval 's/SamplingInterval=.*/SamplingInterval=0\r/'       # BioSig: rate inf
bv negative_interval 's/SamplingInterval=.*/SamplingInterval=-4000\r/' # BioSig: rate -250
bv missing_markers ''                                                  # BioSig: no events
rm missing_markers.vmrk
bv no_channel_infos '/\[Channel Infos\]/d'  # ASan: heap overflow in sopen_extended
bv marker_magic ''                            # BioSig reads no markers of it
sed -i 's/Marker File, Version 1.0/Marker File Version 1.0/' marker_magic.vmrk
bv channel_zero 's/^Ch2=/Ch0=/'               # BioSig then closes the data file twice
bv channel_infos_twice 's/^BinaryFormat=INT_16\r$/BinaryFormat=INT_16\r[Channel Infos\r/' # double free
bv lying_points 's/^SamplingInterval=\(.*\)$/SamplingInterval=\1\nDataPoints=1000000000000\r/' # "out of memory"
bv alpha_marker ''                            # markers BioSig takes for an alpha trace file
sed -i 's/^Mk2=Stimulus/Mk2=StimulusALPHA-TRACE-MEDICAL/' alpha_marker.vmrk
# a 'New Segment' marker whose date is shorter than the YYYYMMDDhhmmss that
# BioSig 2.5 cuts out of it in place (writing into the next marker line)
/usr/bin/python3 ../../biosig/bv_ref.py make "$tmp" 20 250 1
bv short_date ''
sed -i 's/^Mk1=New Segment,,1,1,0/&,2024/' short_date.vmrk
# edf --events-from: EDFlib-written files whose event channel does not fit
cat > "$tmp/ev.c" <<'EOF'
#include <edflib.h>
#include <stdlib.h>
#include <string.h>
/* ev FILE edf|bdf LABEL:RATE...: one second of zeros per channel */
int main(int argc, char **argv) {
    int n = argc - 3, bdf = !strcmp(argv[2], "bdf"), buf[1000] = {0};
    int h = edfopen_file_writeonly(argv[1], bdf ? EDFLIB_FILETYPE_BDFPLUS : EDFLIB_FILETYPE_EDFPLUS, n);
    if (h < 0) return 1;
    for (int k = 0; k < n; k++) {
        char *c = strchr(argv[3 + k], ':');
        *c = '\0';
        edf_set_label(h, k, argv[3 + k]);
        edf_set_samplefrequency(h, k, atoi(c + 1));
        edf_set_physical_maximum(h, k, 1000), edf_set_physical_minimum(h, k, -1000);
        edf_set_digital_maximum(h, k, bdf ? 8388607 : 32767);
        edf_set_digital_minimum(h, k, bdf ? -8388608 : -32768);
    }
    for (int k = 0; k < n; k++) edfwrite_digital_samples(h, buf);
    return edfclose_file(h) != 0;
}
EOF
cc -o "$tmp/ev" "$tmp/ev.c" -ledf
"$tmp/ev" status_rate.bdf bdf C3:100 Status:200   # Status at another rate than the signal
"$tmp/ev" no_status.bdf bdf C3:100 C4:100         # no Status channel
"$tmp/ev" status_only.bdf bdf Status:100          # nothing but the Status channel
"$tmp/ev" status.edf edf C3:100 Status:100        # a 'Status' channel in a 16-bit EDF
rm -rf "$tmp"
