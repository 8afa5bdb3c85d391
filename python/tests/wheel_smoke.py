# SPDX-License-Identifier: BSD-2-Clause
"""Smoke test of an installed seqstore wheel (python/check-wheel.sh runs it
in a minimal Debian without the -dev packages): import, write and reopen a
store, a Loader epoch, a seqstore.torch Dataset in a DataLoader; and the C
libraries are the ones inside the wheel (seqstore.libs)."""
import os
import tempfile

import numpy as np

import seqstore

d = tempfile.mkdtemp()
path = os.path.join(d, "smoke.ss")
with seqstore.create(path, [seqstore.Field("tokens", "u16"),
                            seqstore.Field("label", "i64", sequence=False)]) as w:
    for i in range(100):
        w.append({"tokens": np.arange(i % 17 + 1, dtype=np.uint16), "label": i})
with seqstore.open(path, verify=True) as s:
    assert len(s) == 100 and s["tokens"][16].tolist() == list(range(17))
    ld = seqstore.Loader(s, batch_size=8, shuffle=True, seed=1,
                         fields={"tokens": {"dtype": "i64", "pad": 0}, "label": None})
    seen = sorted(i for b in ld for i in b["label"].tolist())
    assert seen == list(range(100)), seen

import torch  # noqa: E402
import seqstore.torch as sst  # noqa: E402

ds = sst.Dataset(path, fields=["label"])
dl = torch.utils.data.DataLoader(ds, batch_size=10, num_workers=2, collate_fn=sst.pad_collate)
assert sorted(int(i) for b in dl for i in b["label"]) == list(range(100))

with open("/proc/self/maps") as f:
    maps = f.read()
for lib in ("liblmdb", "libxxhash", "libgomp"):
    paths = {line.split()[-1] for line in maps.splitlines() if lib in line}
    assert paths and all("seqstore.libs" in p or "torch" in p for p in paths), (lib, paths)
print("wheel smoke: ok (seqstore %s, numpy %s, torch %s)"
      % (seqstore.__version__, np.__version__, torch.__version__))
