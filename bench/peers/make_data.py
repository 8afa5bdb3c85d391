#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""make_data.py DIR [--smoke]: the raw inputs every system converts, made once.

  DIR/fortunes.jsonl  {"tokens": [ids...]} per document: real text, Debian's
                      fortunes (/usr/share/games/fortunes), its lines shuffled
                      and grouped 1-4 per document, words mapped to ids by
                      frequency (ids < 65536, rarer words share id 1)
  DIR/web.jsonl       the same words laid into documents whose lengths follow
                      a web corpus's shape (log-normal, median 300 tokens,
                      sigma 1.0, cut to 8..2048), each ending with eod = 0
  DIR/*.npy           the same corpora as flat token arrays + offsets (for
                      checks only)
  DIR/eeg/sub-XX.edf  EDF recordings (MNE's export through edfio): 22 EEG
                      channels at 250 Hz, a 4 s trial of one of 4 classes
                      every 6 s, as EDF+ annotations
  DIR/wav/NNNN.wav    speech-like audio made with sox (16 kHz mono, 16-bit,
                      1-12 s of band-passed pink noise with a tremolo)
Sizes (full / --smoke): fortunes 1,000,000 / 20,000 documents (the
conversion and the random reads; its 256-shard copies for the open); web
10,000 / 2,000 (the padded epochs, LM samples and resume); EEG 6 subjects x
300 s / 2 x 60 s; audio 200 / 24 files."""
import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np

SIZES = {False: dict(fortunes=1_000_000, web=10_000, subjects=6, seconds=300, wavs=200),
         True: dict(fortunes=20_000, web=2_000, subjects=2, seconds=60, wavs=24)}
EEG_CH, EEG_RATE, TRIAL_S, EVERY_S = 22, 250, 4.0, 6.0
CLASSES = ["left_hand", "right_hand", "feet", "tongue"]


def fortune_lines():
    lines = []
    for path in sorted(glob.glob("/usr/share/games/fortunes/*")):
        if path.endswith((".dat", ".u8")) or os.path.isdir(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines += [l.strip() for l in f if l.strip() and l.strip() != "%"]
    return lines


def vocab_ids(lines):
    """Each line as an id array: words by frequency, 0 = eod, 1 = rare."""
    counts = {}
    split = [l.lower().split() for l in lines]
    for ws in split:
        for w in ws:
            counts[w] = counts.get(w, 0) + 1
    order = sorted(counts, key=lambda w: (-counts[w], w))
    ids = {w: (i + 2 if i + 2 < 65536 else 1) for i, w in enumerate(order)}
    return [np.array([ids[w] for w in ws], dtype=np.uint16) for ws in split if ws]


def write_corpus(d, name, docs):
    with open(os.path.join(d, name + ".jsonl"), "w") as f:
        for t in docs:
            f.write('{"tokens":[%s]}\n' % ",".join(map(str, t.tolist())))
    lens = np.array([len(t) for t in docs], dtype=np.int64)
    np.save(os.path.join(d, name + ".offsets.npy"), np.concatenate([[0], np.cumsum(lens)]))
    np.save(os.path.join(d, name + ".tokens.npy"), np.concatenate(docs))


def corpora(d, n_fortunes, n_web, rng):
    lines = vocab_ids(fortune_lines())
    pick = rng.integers(0, len(lines), size=n_fortunes * 3)
    per = rng.integers(1, 5, size=n_fortunes)
    docs, k = [], 0
    for n in per:  # 1-4 lines of shuffled fortunes per document
        docs.append(np.concatenate([lines[j] for j in pick[k:k + n]]) if n else lines[0])
        k += n
        if k + 4 >= len(pick):
            k = 0
    write_corpus(d, "fortunes", docs)
    flat = np.concatenate(lines)
    lens = np.clip(rng.lognormal(np.log(300), 1.0, size=n_web), 8, 2048).astype(np.int64)
    starts = rng.integers(0, len(flat) - 2048, size=n_web)
    web = [np.concatenate([flat[s:s + L - 1], [0]]).astype(np.uint16) for s, L in zip(starts, lens)]
    write_corpus(d, "web", web)


def eeg(d, subjects, seconds, rng):
    import mne
    mne.set_log_level("ERROR")
    os.makedirs(os.path.join(d, "eeg"), exist_ok=True)
    names = ["EEG %02d" % k for k in range(EEG_CH)]
    for s in range(subjects):
        n = int(seconds * EEG_RATE)
        t = np.arange(n) / EEG_RATE
        x = (20e-6 * np.sin(2 * np.pi * (8 + np.arange(EEG_CH))[:, None] * t[None, :] / 4)
             + 5e-6 * rng.standard_normal((EEG_CH, n)))
        raw = mne.io.RawArray(x, mne.create_info(names, EEG_RATE, "eeg"))
        onsets = np.arange(1.0, seconds - TRIAL_S - 1, EVERY_S)
        raw.set_annotations(mne.Annotations(onsets, TRIAL_S,
                                            [CLASSES[i % 4] for i in range(len(onsets))]))
        mne.export.export_raw(os.path.join(d, "eeg", "sub-%02d.edf" % s), raw, fmt="edf",
                              physical_range=(-200e-6, 200e-6), overwrite=True)


def audio(d, wavs, rng):
    os.makedirs(os.path.join(d, "wav"), exist_ok=True)
    for i in range(wavs):
        dur = float(rng.uniform(1, 12))
        subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16",
                        os.path.join(d, "wav", "%04d.wav" % i), "synth", "%.3f" % dur,
                        "pinknoise", "band", "-n", "%d" % rng.integers(300, 1200), "400",
                        "tremolo", "%.1f" % rng.uniform(3, 7), "60", "gain", "-n", "-6"],
                       check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    z = SIZES[a.smoke]
    os.makedirs(a.dir, exist_ok=True)
    rng = np.random.default_rng(20261201)
    corpora(a.dir, z["fortunes"], z["web"], rng)
    eeg(a.dir, z["subjects"], z["seconds"], rng)
    audio(a.dir, z["wavs"], rng)
    with open(os.path.join(a.dir, "sizes.json"), "w") as f:
        json.dump(z, f)
    print("make_data: %s in %s" % (z, a.dir), file=sys.stderr)


if __name__ == "__main__":
    main()
