#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Truncated BPTT from Python: a PyTorch GRU fed by seqstore.WindowReader,
carrying each recording's hidden state from window to window (the C example
rnn_bptt.c's task), on EEG recordings in EDF files: written with EDFlib by
`make_recordings --bptt` and converted by `seqstore convert edf`.

The class of a recording shows only in short bursts every PERIOD samples,
further apart than one window, so the model must carry what it saw: with
the reader's hidden-state carry the loss falls well below what the same
model reaches with forget_state=True (a fresh state every window).

    PYTHONPATH=build/python /usr/bin/python3 examples/train_bptt.py DIR \
        build/examples/make_recordings build/seqstore
"""
import glob
import os
import subprocess
import sys

import numpy as np
import torch

import seqstore

C, H, W, B, NSEQ, EPOCHS = 2, 12, 40, 16, 48, 6  # 12 s at 100 Hz, bursts every 90 samples


def write_store(path, make_recordings, cli):
    """NSEQ EDF+ recordings (EDFlib, make_recordings.c: Fp1 noise plus a burst
    of +-0.8 uV, the class, every 90 samples; Fp2 noise) -> `seqstore convert
    edf` with their labels: field `signal` [T][2] i16 (digital) with
    signal.gain / signal.offset, field `label` (pos / neg)."""
    edf = os.path.join(os.path.dirname(path), "bptt-edf")
    labels = os.path.join(edf, "labels.csv")
    os.makedirs(edf, exist_ok=True)
    subprocess.run([make_recordings, "--bptt", edf, str(NSEQ), labels], check=True)
    files = sorted(glob.glob(os.path.join(edf, "rec*.edf")))
    subprocess.run([cli, "convert", "edf", *files, "-o", path, "--labels", labels, "--force",
                    "--quiet"], check=True)


def train(store, forget):
    torch.manual_seed(0)
    gru, head = torch.nn.GRU(C, H, batch_first=True), torch.nn.Linear(H, 1)
    params = list(gru.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    reader = seqstore.WindowReader(store, "signal", window=W, lanes=B, state_size=H,
                                   state_dtype="f32", label="label", label_per_step=True,
                                   out_dtype="f32", gain="signal.gain", offset="signal.offset",
                                   shuffle=True, seed=3, forget_state=forget, torch=True)
    first = last = None
    for epoch in range(EPOCHS):
        total, n = 0.0, 0
        for b in reader:
            out, h = gru(b.data, b.state.unsqueeze(0))  # start where each recording left off
            logits = head(out).squeeze(-1)
            keep = b.step_mask & b.mask.unsqueeze(1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits[keep], b.label[keep].float())
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)  # as usual for RNNs
            opt.step()
            reader.register(b, h.squeeze(0))  # truncated: the state goes on, the graph not
            total, n = total + loss.item(), n + 1
        last = total / n
        first = last if first is None else first
        print("%s epoch %d: mean loss %.3f" % ("forget" if forget else "carry ", epoch, last))
    return first, last


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: train_bptt.py DIR MAKE_RECORDINGS SEQSTORE_CLI")
    os.makedirs(sys.argv[1], exist_ok=True)
    path = os.path.join(sys.argv[1], "bptt-edf.ss")
    write_store(path, sys.argv[2], sys.argv[3])
    with seqstore.open(path) as store:
        assert len(store) == NSEQ
        (c0, carry), (_, forget) = train(store, False), train(store, True)
    falls, better = carry < 0.7 * c0, carry < 0.8 * forget
    print("loss with carry %.3f -> %.3f: %s" % (c0, carry, "falls" if falls else "does NOT fall"))
    print("final loss: carry %.3f, forget %.3f: carrying states %s" %
          (carry, forget, "beats forgetting them" if better else "does NOT help"))
    sys.exit(0 if falls and better else 1)


if __name__ == "__main__":
    main()
