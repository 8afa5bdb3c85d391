#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A small decoder-only Transformer trained on packed fortunes, attention
kept inside each document.

seqstore.torch.LMDataset packs whole fortunes into rows of L tokens
(layout="packed", first-fit decreasing) and gives each row's segment ids;
the attention mask is causal and block-diagonal over them (what
FlashAttention's varlen kernels do from cu_seqlens), position ids restart
at each document. Two checks: perturbing the tokens of one document of a
row changes no logit of the other documents of that row (and does with a
plain causal mask, so the check can fail), and the loss falls.

    build/seqstore convert text --doc-sep % --tokens words --eos --max-vocab 3000 \\
        /usr/share/games/fortunes/fortunes -o fortunes-words.ss
    PYTHONPATH=build/python python3 examples/train_packed_lm.py fortunes-words.ss [STEPS]
"""
import sys

import torch

import seqstore
import seqstore.torch

L, BATCH, DIM, HEADS, LAYERS = 64, 8, 64, 4, 2


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(DIM), torch.nn.LayerNorm(DIM)
        self.qkv, self.out = torch.nn.Linear(DIM, 3 * DIM), torch.nn.Linear(DIM, DIM)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(DIM, 4 * DIM), torch.nn.GELU(),
                                       torch.nn.Linear(4 * DIM, DIM))

    def forward(self, x, allowed):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, DIM // HEADS).unbind(2)
        q, k, v = (a.transpose(1, 2) for a in (q, k, v))  # [b, heads, t, d]
        att = (q @ k.transpose(-1, -2)) / (DIM // HEADS) ** 0.5
        att = att.masked_fill(~allowed[:, None], float("-inf")).softmax(-1)
        x = x + self.out((att @ v).transpose(1, 2).reshape(b, t, DIM))
        return x + self.mlp(self.ln2(x))


class Decoder(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, DIM), torch.nn.Embedding(L, DIM)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = torch.nn.Linear(DIM, vocab)

    def forward(self, tokens, position_ids, segment_ids, per_document=True):
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        allowed = causal[None] & (segment_ids[:, :, None] == segment_ids[:, None, :]
                                  if per_document else True)
        x = self.tok(tokens) + self.pos(position_ids)
        for blk in self.blocks:
            x = blk(x, allowed)
        return self.head(x)


def boundary_check(model, batch, vocab):
    """Perturb document 0 of a row with several documents: with the
    per-document mask no logit of the other documents may change."""
    ns = [int(s.max()) + 1 for s in batch["segment_ids"]]
    row = max(range(len(ns)), key=ns.__getitem__)
    tok, pos, seg = (batch[k][row:row + 1] for k in ("tokens", "position_ids", "segment_ids"))
    other = seg[0] != 0
    assert bool(other.any()), "no row with two documents"
    bad = tok.clone()
    bad[0, seg[0] == 0] = (bad[0, seg[0] == 0] + 1) % vocab
    with torch.no_grad():
        a, b = model(tok, pos, seg), model(bad, pos, seg)
        assert torch.equal(a[0, other], b[0, other]), "attention crossed a document boundary"
        assert not torch.equal(a[0, ~other], b[0, ~other])
        c, d = model(tok, pos, seg, False), model(bad, pos, seg, False)
        assert not torch.equal(c[0, other], d[0, other])  # a plain causal mask leaks
    print("boundary check: row %d holds %d segments; perturbing document 0 changes no logit of "
          "the others (it does with a plain causal mask)" % (row, ns[row]))


def main():
    path = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    torch.manual_seed(0)
    ds = seqstore.torch.LMDataset(path, L, BATCH, layout="packed", seed=1, num_epochs=64,
                                  steps=steps)
    info = ds.samples.info
    print("%d rows of %d tokens per epoch (mean): padding %.1f%%, %d documents split"
          % (info["num_samples"] // info["num_epochs"], L,
             100.0 * info["padding_tokens"] / (info["num_samples"] * L), info["split_documents"]))
    with seqstore.open(path) as s:
        vocab = int(max(int(s["tokens"][i].max()) for i in range(len(s)))) + 1
    vocab = max(vocab, info["eod"] + 1)
    model = Decoder(vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    for step, b in enumerate(dl):
        if step == 0:
            boundary_check(model, b, vocab)
        logits = model(b["tokens"], b["position_ids"], b["segment_ids"])
        ce = torch.nn.functional.cross_entropy(logits.view(-1, vocab), b["labels"].view(-1),
                                               reduction="none")
        m = b["loss_mask"].view(-1)
        loss = (ce * m).sum() / m.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
        if step % 50 == 0:
            print("step %d: loss %.3f" % (step, losses[-1]))
    boundary_check(model, b, vocab)  # the trained model too
    k = max(1, len(losses) // 10)
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    print("loss %.3f -> %.3f over %d steps" % (first, last, len(losses)))
    if not last < first - 0.5:
        sys.exit("the loss did not fall")
    print("loss falls")


if __name__ == "__main__":
    main()
