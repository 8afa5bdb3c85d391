#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A PyTorch LSTM language model on Debian's fortunes (words), fed by the C
loader: bucket batches under a token budget, ids widened to int64 and padded
by the C collator, and a mid-epoch resume from state_dict() that must give
exactly the batches an uninterrupted run gives.

    build/seqstore convert text --doc-sep % --tokens words --eos --max-vocab 3000 \\
        /usr/share/games/fortunes/fortunes -o fortunes-words.ss
    build/seqstore index fortunes-words.ss --by tokens --resolution 8 --name len
    PYTHONPATH=build/python /usr/bin/python3 examples/train_lstm.py fortunes-words.ss
"""
import sys

import torch

import seqstore

EPOCHS, MAX_TOKENS = 6, 1024


def loader(store):
    return seqstore.Loader(store, max_tokens=MAX_TOKENS, bucket="len", shuffle=True, seed=1,
                           fields={"tokens": {"dtype": "i64", "pad": 0}}, torch=True)


class LM(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, 64, padding_idx=0)
        self.lstm = torch.nn.LSTM(64, 128, batch_first=True)
        self.out = torch.nn.Linear(128, vocab)

    def forward(self, x):
        return self.out(self.lstm(self.emb(x))[0])


def step(model, opt, batch):
    x = batch["tokens"]  # [B, T] int64, padded with 0 (<pad>) by the C collator
    logits = model(x[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             x[:, 1:].reshape(-1), ignore_index=0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    store = seqstore.open(sys.argv[1])
    vocab = len(store.attrs["vocab"].splitlines())
    model = LM(vocab)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = loader(store)
    epoch_loss = []
    for epoch in range(EPOCHS):
        losses = [step(model, opt, b) for b in data]
        epoch_loss.append(sum(losses) / len(losses))
        print("epoch %d: %d batches, mean loss %.3f" % (epoch, len(losses), epoch_loss[-1]))
        if epoch == 0:
            # Resume check: save after 3 batches of epoch 1, read on, then a
            # fresh loader restored from the state must give the same batches.
            it = iter(data)
            head = [next(it)["index"].tolist() for _ in range(3)]
            state = data.state_dict()
            rest = [b["index"].tolist() for b in it]
            again = loader(store)
            again.load_state_dict(state)
            same = [b["index"].tolist() for b in again] == rest
            print("resume after %d batches of epoch 1: %s" % (len(head), "identical batches" if same else "DIFFERENT"))
            if not same:
                sys.exit(1)
            data.set_epoch(1)
    falls = epoch_loss[-1] < 0.8 * epoch_loss[0]
    print("loss %.3f -> %.3f: %s" % (epoch_loss[0], epoch_loss[-1], "falls" if falls else "does not fall"))
    sys.exit(0 if falls else 1)


if __name__ == "__main__":
    main()
