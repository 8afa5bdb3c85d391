# SPDX-License-Identifier: BSD-2-Clause
"""A small user script with full type annotations: `mypy --strict` must pass
on it with the installed package (test_typing.py runs it when mypy is
installed, as in .venv). It is also run, as a script, by that test."""
import sys
import tempfile
from typing import Dict, List

import numpy as np
import numpy.typing as npt

import seqstore


def write(path: str) -> int:
    schema: List[seqstore.Field] = [seqstore.Field("tokens", "u16"),
                                    seqstore.Field("label", "i64", sequence=False)]
    with seqstore.create(path, schema, force=True) as w:
        for i in range(10):
            w.append({"tokens": np.arange(i + 1, dtype=np.uint16), "label": i})
        w.attrs["source"] = "typed_usage"
        return w.count


def read(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    with seqstore.open(path, verify=True) as store:
        store.verify()
        tokens: seqstore.FieldAccessor = store["tokens"]
        first: npt.NDArray[np.uint16] = tokens[0]
        out["first"] = int(first[0])
        out["examples"] = len(store)
        out["total"] = sum(len(a) for a in tokens)
        lengths = store.lengths("tokens")
        out["longest"] = int(lengths.max())
        loader = seqstore.Loader(store, batch_size=4, shuffle=True, seed=1,
                                 fields={"tokens": {"dtype": "i64", "mask": "u8"}})
        batches = 0
        for batch in loader:
            batches += 1
            assert batch["tokens"].shape[0] == len(batch["index"])
        out["batches"] = batches
        state = loader.state_dict()
        loader.load_state_dict(state)
        loader.close()
        c = seqstore.Collator(store, fields={"tokens": {"layout": "channels_first"}})
        out["collated"] = int(c.collate([0, 1])["tokens"].shape[1])
        flat = store.flat("tokens")
        out["flat"] = len(flat)
    return out


def main() -> int:
    try:
        seqstore.open("/nonexistent/x.ss")
    except FileNotFoundError as e:
        assert isinstance(e, seqstore.NotFoundError)
    with tempfile.TemporaryDirectory() as d:
        n = write(d + "/t.ss")
        got = read(d + "/t.ss")
    print(n, sorted(got.items()))
    return 0 if got == {"first": 0, "examples": 10, "total": 55, "longest": 10, "batches": 3,
                        "collated": 2, "flat": 55} else 1


if __name__ == "__main__":
    sys.exit(main())
