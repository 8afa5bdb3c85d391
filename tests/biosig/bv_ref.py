#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Reference files and an independent reader for test_convert_biosig.

  bv_ref.py make DIR [T] [RATE] [SEG]   write DIR/rec.vhdr/.vmrk/.eeg (BrainVision
                         Core Data Format 1.0, written here from the published
                         spec, not by BioSig) and DIR/rec.int16 (the digital
                         samples, int16 [T][C]) and DIR/rec.events (the
                         markers as "POSITION\tDESCRIPTION", 0-based positions);
                         SEG 0 leaves out the 'New Segment' marker, 1 writes it
                         without its (optional) date, after which BioSig 2.5
                         mis-reads the markers, 2 with the date 2024-01-01 12:00
  bv_ref.py mne FILE OUT  read FILE with MNE-Python; write OUT (float64 [T][C]
                         in the file's units: uV) and OUT.events (annotations
                         as "SAMPLE\tDESCRIPTION", onset * sfreq rounded)
"""
import math
import sys

import numpy as np

CHANNELS = [("Fz", 0.1), ("Cz", 0.5), ("Pz", 1.0)]  # name, resolution in uV
MARKERS = [("Stimulus", "S  1", 100), ("Stimulus", "S  2", 350),
           ("Response", "R  1", 600), ("Stimulus", "S  1", 900)]


def make(d, T=1000, rate=250, seg=1):
    C = len(CHANNELS)
    t = np.arange(T)
    data = np.empty((T, C), dtype=np.int16)
    for k in range(C):
        data[:, k] = (np.round(3000 * np.sin(2 * math.pi * (k + 1) * 3 * t / rate))
                      + (t * 7 + 13 * k) % 101 - 50).astype(np.int16)
    data.tofile(f"{d}/rec.eeg")   # MULTIPLEXED: [T][C], little endian INT_16
    data.tofile(f"{d}/rec.int16")
    with open(f"{d}/rec.vhdr", "w", newline="\r\n") as f:
        f.write("Brain Vision Data Exchange Header File Version 1.0\n"
                "; written by seqstore's tests/biosig/bv_ref.py\n\n"
                "[Common Infos]\nCodepage=UTF-8\nDataFile=rec.eeg\nMarkerFile=rec.vmrk\n"
                "DataFormat=BINARY\nDataOrientation=MULTIPLEXED\n"
                f"NumberOfChannels={C}\nSamplingInterval={1e6 / rate:g}\n\n"
                "[Binary Infos]\nBinaryFormat=INT_16\n\n[Channel Infos]\n")
        for k, (name, res) in enumerate(CHANNELS):
            f.write(f"Ch{k + 1}={name},,{res},\u00b5V\n")
    with open(f"{d}/rec.vmrk", "w", newline="\r\n") as f:
        f.write("Brain Vision Data Exchange Marker File, Version 1.0\n\n"
                "[Common Infos]\nCodepage=UTF-8\nDataFile=rec.eeg\n\n[Marker Infos]\n")
        if seg:
            date = ",20240101120000000000" if seg == 2 else ""
            f.write(f"Mk1=New Segment,,1,1,0{date}\n")
        for i, (typ, desc, pos) in enumerate(MARKERS):
            f.write(f"Mk{i + 1 + (seg > 0)}={typ},{desc},{pos + 1},1,0\n")  # 1-based positions
    with open(f"{d}/rec.events", "w") as f:
        for typ, desc, pos in MARKERS:
            f.write(f"{pos}\t{typ}/{desc}\n")


def read_mne(path, out):
    import mne
    mne.set_log_level("ERROR")
    raw = mne.io.read_raw(path, preload=True)
    x = raw.get_data().T * 1e6  # volts -> uV
    np.ascontiguousarray(x, dtype=np.float64).tofile(out)
    with open(out + ".events", "w") as f:
        for a in raw.annotations:
            f.write(f"{round(a['onset'] * raw.info['sfreq'])}\t{a['description']}\n")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], *(int(a) for a in sys.argv[3:6]))
    elif sys.argv[1] == "mne":
        read_mne(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
