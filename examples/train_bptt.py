#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Truncated BPTT from Python: a PyTorch GRU fed by seqstore.WindowReader,
carrying each recording's hidden state from window to window (the C example
rnn_bptt.c's task, on EEG-like recordings written here).

The class of a recording shows only in short bursts every PERIOD samples,
further apart than one window, so the model must carry what it saw: with
the reader's hidden-state carry the loss falls well below what the same
model reaches with forget_state=True (a fresh state every window).

    PYTHONPATH=build/python /usr/bin/python3 examples/train_bptt.py DIR
"""
import os
import sys

import numpy as np
import torch

import seqstore

C, H, W, B, NSEQ, LEN, PERIOD, EPOCHS = 2, 12, 40, 16, 48, 1200, 90, 6
GAIN = [1 / 1000, 1 / 500]  # physical = digital * gain, as converted from EDF


def write_store(path):
    """Channel 0: noise plus a burst of +-0.8 (the class) every PERIOD samples."""
    rng = np.random.default_rng(12345)
    with seqstore.create(path, [("eeg", "i16", (C,)), ("label", "i32", (), False)],
                         force=True) as w:
        for i in range(NSEQ):
            label, phase = i % 2, int(rng.integers(PERIOD))
            x = np.stack([0.3 * rng.standard_normal(LEN), 0.5 * rng.standard_normal(LEN)], 1)
            burst = (np.arange(LEN) - phase) % PERIOD < 6
            x[burst, 0] += 0.8 if label else -0.8
            w.append({"eeg": np.rint(x / GAIN).astype(np.int16), "label": label})
        w.attrs["signal.gain"] = np.array(GAIN)  # where `seqstore convert edf` puts it


def train(store, forget):
    torch.manual_seed(0)
    gru, head = torch.nn.GRU(C, H, batch_first=True), torch.nn.Linear(H, 1)
    opt = torch.optim.Adam(list(gru.parameters()) + list(head.parameters()), lr=1e-2)
    reader = seqstore.WindowReader(store, "eeg", window=W, lanes=B, state_size=H,
                                   state_dtype="f32", label="label", label_per_step=True,
                                   out_dtype="f32", gain="signal.gain", shuffle=True, seed=3,
                                   forget_state=forget, torch=True)
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
            opt.step()
            reader.register(b, h.squeeze(0))  # truncated: the state goes on, the graph not
            total, n = total + loss.item(), n + 1
        last = total / n
        first = last if first is None else first
        print("%s epoch %d: mean loss %.3f" % ("forget" if forget else "carry ", epoch, last))
    return first, last


def main():
    path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "bptt-py.ss")
    write_store(path)
    with seqstore.open(path) as store:
        (c0, carry), (_, forget) = train(store, False), train(store, True)
    falls, better = carry < 0.7 * c0, carry < 0.8 * forget
    print("loss with carry %.3f -> %.3f: %s" % (c0, carry, "falls" if falls else "does NOT fall"))
    print("final loss: carry %.3f, forget %.3f: carrying states %s" %
          (carry, forget, "beats forgetting them" if better else "does NOT help"))
    sys.exit(0 if falls and better else 1)


if __name__ == "__main__":
    main()
