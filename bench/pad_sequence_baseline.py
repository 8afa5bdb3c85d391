#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""PyTorch's pad_sequence on the same batches as bench_collate, and the ratio.

    bench_collate DIR --json out.json
    python3 bench/pad_sequence_baseline.py out.json
    python3 bench/pad_sequence_baseline.py --round REPS out.json   (run by bench_collate)

Uses Debian's python3-torch when it is installed; prints a note and exits 0
when it is not. For each case it times, at 1 and 2 torch threads, the best of
two ways of doing in PyTorch what ss_collator_collate() does in one call:
  a) pad_sequence(batch_first=True) of the stored dtype, then convert;
  b) convert every sequence, then pad_sequence.
Tokens are held as int16 (torch 1.13 has no uint16; same bytes), converted to
int64. EEG windows are int16 [2000][21], converted to float32 times gain plus
offset. The ratio is PyTorch's time per batch over seqstore's (> 1: seqstore
is faster).

With --round REPS (how bench_collate runs it once per round, alternating
with its own rounds) it times 1 torch thread only, best of REPS, and prints
two lines for bench_collate to read: "tokens_us T" and "eeg_us T" (µs per
batch); it exits 1 when torch is missing.
"""
import json
import os
import sys
import time

DEBIAN_PYTHON = "/usr/bin/python3"


def best_time(fn, reps=5):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    args = sys.argv[1:]
    round_reps = None
    if len(args) == 3 and args[0] == "--round":
        round_reps = int(args[1])
        args = args[2:]
    if len(args) != 1:
        print(__doc__)
        return 2
    try:
        import torch
        from torch.nn.utils.rnn import pad_sequence
    except ImportError:
        # Debian's python3-torch lives with /usr/bin/python3; another python3
        # (pyenv, a venv) may come first on PATH.
        if os.path.exists(DEBIAN_PYTHON) and os.path.realpath(sys.executable) != \
                os.path.realpath(DEBIAN_PYTHON) and not os.environ.get("SS_BASELINE_REEXEC"):
            os.environ["SS_BASELINE_REEXEC"] = "1"
            os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
        print("pad_sequence_baseline: skipped (python3-torch is not installed)")
        return 1 if round_reps else 0
    with open(args[0]) as f:
        res = json.load(f)
    g = torch.Generator().manual_seed(1)

    tok = res["tokens"]
    tok_batches = [[torch.randint(-32768, 32767, (n,), dtype=torch.int16, generator=g)
                    for n in lengths] for lengths in tok["batches"]]

    def tok_a():
        for seqs in tok_batches:
            pad_sequence(seqs, batch_first=True, padding_value=0).to(torch.int64)

    def tok_b():
        for seqs in tok_batches:
            pad_sequence([s.to(torch.int64) for s in seqs], batch_first=True, padding_value=0)

    eeg = res["eeg"]
    B, T, C, NB = eeg["batch"], eeg["steps"], eeg["channels"], eeg["nbatch"]
    gain = torch.tensor([0.0305 + 0.001 * c for c in range(C)], dtype=torch.float32)
    off = torch.tensor([-0.5 * c for c in range(C)], dtype=torch.float32)
    eeg_batches = [[torch.randint(-2000, 2000, (T, C), dtype=torch.int16, generator=g)
                    for _ in range(B)] for _ in range(NB)]

    def eeg_a():
        for seqs in eeg_batches:
            pad_sequence(seqs, batch_first=True).to(torch.float32) * gain + off

    def eeg_b():
        for seqs in eeg_batches:
            pad_sequence([s.to(torch.float32) * gain + off for s in seqs], batch_first=True)

    if round_reps:
        torch.set_num_threads(1)
        for name, fa, fb, nb in (("tokens_us", tok_a, tok_b, len(tok_batches)),
                                 ("eeg_us", eeg_a, eeg_b, NB)):
            fa()  # warm up
            fb()
            t = min(best_time(fa, round_reps), best_time(fb, round_reps)) / nb * 1e6
            print(f"{name} {t:.3f}")
        return 0
    print(f"PyTorch {torch.__version__} pad_sequence on the same batches as bench_collate")
    for name, case, fa, fb, nb in (("tokens B=64 u16->i64", tok, tok_a, tok_b, len(tok_batches)),
                                   ("EEG B=32x2000x21 i16->f32*gain", eeg, eeg_a, eeg_b, NB)):
        for k, threads in enumerate((1, 2)):
            torch.set_num_threads(threads)
            fa()  # warm up
            fb()
            t = min(best_time(fa), best_time(fb)) / nb * 1e6
            ours = case["us_per_batch"][k]
            print(f"  {name}, {threads} thread(s): pad_sequence {t:9.1f} us/batch, "
                  f"seqstore {ours:8.1f} us/batch: seqstore is {t / ours:5.1f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
