#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""spec_names.py SEQSTORE SOURCE_DIR [--dump] - every field and attribute a
converter writes is in spec/FORMAT.md's tables, with the type it is written
with.

Converts one small input per converter and per option that changes what is
written (text bytes/chars/words/ids/SentencePiece, lines, jsonl, parallel
with and without --shared-vocab, megatron, npy, idx, edf, biosig, audio, and
the framework's --shard and --index-by), made here from the published
formats or with packaged tools (sox, spm_train, save2gdf is not needed), and
reads each store back with `seqstore info --json`.

A name is looked up in the tables of spec/FORMAT.md section 7: the
framework's table (7.1, every converter) and the converter's own (the
subsection of 7.4 whose heading names the converter in backticks). A name
that starts with a field's name followed by '.' is also looked up with FIELD
in its place (`tokens.tokens` as `FIELD.tokens`), `ss.lengths.F` as
`ss.lengths.FIELD`, `ss.bucket.N` as `ss.bucket.NAME`, and a field whose
name an option chose (jsonl --key, npy --field) as FIELD. The row's type
column must name the type written (`u32`, `text`, `bytes`, ...) or say
`any`. The other way round, every name in those tables must be written by
one of the conversions (of a converter its table is for), so the tables
cannot keep a name the converters dropped. The test fails listing every
name or type missing; --dump prints
what each conversion wrote. Converters not built in (audio, biosig) and
tools not installed (sox, spm_train) skip their cases, said on stdout."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

TEXT = ("the cat sat on the mat\nthe dog sat on the log\n\n"
        "a cat and a dog\nthe end of the story\n") * 4


def run(argv, cwd):
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


# ----------------------------------------------------------------- inputs

def write_idx(path, code, dims, data):
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, code, len(dims)))
        f.write(struct.pack(f">{len(dims)}I", *dims))
        f.write(bytes(data))


def edf_field(values, width):
    return "".join(str(v)[:width].ljust(width) for v in values).encode("ascii")


def write_edf(path, patient, annotations):
    """An EDF+C file written from the EDF+ specification: channels C3 and
    C4 at 100 Hz, 2 records of 1 s, and an 'EDF Annotations' signal with
    the (onset, duration, text) annotations in the first record."""
    labels = ["C3", "C4", "EDF Annotations"]
    nsamp = [100, 100, 60]
    ns, nrec = len(labels), 2
    hdr = (edf_field(["0"], 8) + edf_field([f"{patient} M 01-JAN-2000 X"], 80) +
           edf_field(["Startdate 01-JAN-2020 X X X"], 80) + edf_field(["01.01.20"], 8) +
           edf_field(["10.00.00"], 8) + edf_field([256 * (ns + 1)], 8) + edf_field(["EDF+C"], 44) +
           edf_field([nrec], 8) + edf_field(["1"], 8) + edf_field([ns], 4))
    hdr += edf_field(labels, 16) + edf_field([""] * ns, 80) + edf_field(["uV", "uV", ""], 8)
    hdr += edf_field([-3276.8, -3276.8, -1], 8) + edf_field([3276.7, 3276.7, 1], 8)
    hdr += edf_field([-32768] * ns, 8) + edf_field([32767] * ns, 8)
    hdr += edf_field([""] * ns, 80) + edf_field(nsamp, 8) + edf_field([""] * ns, 32)
    body = b""
    for r in range(nrec):
        for k in range(2):
            body += np.arange(100, dtype="<i2").tobytes()
        tal = f"+{r}\x14\x14\x00".encode()
        if r == 0:
            for onset, dur, text in annotations:
                tal += f"+{onset}\x15{dur}\x14{text}\x14\x00".encode()
        body += tal.ljust(2 * nsamp[2], b"\x00")
    with open(path, "wb") as f:
        f.write(hdr + body)


def make_inputs(d, src):
    with open(f"{d}/a.txt", "w") as f:
        f.write(TEXT)
    with open(f"{d}/b.txt", "w") as f:
        f.write(TEXT.upper())
    with open(f"{d}/ids.txt", "w") as f:
        f.write("1 2 3\n4 5\n\n7 8 9 10\n")
    with open(f"{d}/c.txt", "w") as f:
        f.write("one\ntwo\n\nfour\n")
    with open(f"{d}/latin1.txt", "wb") as f:
        f.write(b"caf\xe9 au lait\ncaf\xe9\n")
    with open(f"{d}/a.jsonl", "w") as f:
        for i, line in enumerate(TEXT.split("\n")):
            f.write(json.dumps({"text": line, "title": f"line {i}"}) + "\n")
    with open(f"{d}/ids.jsonl", "w") as f:
        f.write('{"text": [1, 2, 3]}\n{"text": [4]}\n')
    np.save(f"{d}/x1.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    np.save(f"{d}/x2.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    write_idx(f"{d}/img.idx", 0x08, [3, 4, 5], range(60))
    write_idx(f"{d}/lab.idx", 0x08, [3], [0, 1, 0])
    run(["/usr/bin/python3", f"{src}/tests/megatron/megatron_ref.py", "write", f"{d}/mg",
         "uint16", "1"], d)
    write_edf(f"{d}/r1.edf", "P01", [(0.5, 0.25, "left"), (1.2, 0.1, "right")])
    write_edf(f"{d}/r2.edf", "P02", [(0.3, 0.2, "left")])
    with open(f"{d}/labels.csv", "w") as f:
        f.write("path,label\nr1.edf,sleep\nr2.edf,wake\n")
    os.makedirs(f"{d}/bv", exist_ok=True)
    run(["/usr/bin/python3", f"{src}/tests/biosig/bv_ref.py", "make", f"{d}/bv", "1000", "250",
         "0"], d)
    have = {"sox": shutil.which("sox"), "spm_train": shutil.which("spm_train")}
    if have["sox"]:
        run(["sox", "-n", "-r", "16000", "-c", "2", "-b", "16", "s16k.wav", "synth", "0.05",
             "sine", "440"], d)
        run(["sox", "-n", "-r", "8000", "-c", "2", "-b", "16", "s8k.wav", "synth", "0.05",
             "sine", "440"], d)
    if have["spm_train"]:
        run(["spm_train", f"--input={d}/a.txt", f"--model_prefix={d}/m", "--vocab_size=30",
             "--minloglevel=2", "--model_type=unigram", "--hard_vocab_limit=false"], d)
        # a model with a pad id and an <eod> piece: FIELD.pad_id, FIELD.eod_id of its own
        run(["spm_train", f"--input={d}/a.txt", f"--model_prefix={d}/m2", "--vocab_size=30",
             "--minloglevel=2", "--hard_vocab_limit=false", "--pad_id=3",
             "--user_defined_symbols=<eod>"], d)
    return have


# What each conversion is: (converter, arguments after the kind, options that
# chose field names, tool it needs).
CASES = [
    ("text", ["a.txt"], [], None),
    ("text", ["a.txt", "--tokens", "chars", "--bos", "--eos", "--docs"], [], None),
    ("text", ["a.txt", "--tokens", "words", "--bos", "--eos"], [], None),
    ("text", ["latin1.txt", "--tokens", "words"], [], None),
    ("text", ["ids.txt", "--tokens", "ids", "--vocab-size", "100", "--bos", "--eos"], [], None),
    ("text", ["ids.txt", "--tokens", "ids"], [], None),
    ("text", ["a.txt", "--tokenizer", "spm:m.model", "--bos", "--eos"], [], "spm_train"),
    ("text", ["a.txt", "--tokenizer", "spm:m2.model"], [], "spm_train"),
    ("text", ["a.txt", "--shard", "0/2", "--index-by", "tokens", "--index-resolution", "4"], [],
     None),
    ("lines", ["a.txt", "--skip-empty"], [], None),
    ("jsonl", ["a.jsonl", "--key", "text", "--key", "title"], ["text", "title"], None),
    ("jsonl", ["a.jsonl", "--key", "text", "--key", "title", "--tokens", "words", "--bos",
               "--eos"], ["text", "title"], None),
    ("jsonl", ["ids.jsonl", "--tokens", "ids", "--vocab-size", "50", "--eos"], [], None),
    ("jsonl", ["a.jsonl", "--key", "text", "--key", "title", "--tokenizer", "spm:m.model",
               "--bos"], ["text", "title"], "spm_train"),
    ("parallel", ["a.txt", "b.txt", "--tokens", "words", "--bos"], [], None),
    ("parallel", ["a.txt", "b.txt", "--tokens", "words", "--shared-vocab"], [], None),
    ("parallel", ["c.txt", "ids.txt", "--src-tokens", "chars", "--tgt-tokens", "ids",
                  "--vocab-size", "300"], [], None),
    ("parallel", ["a.txt", "b.txt", "--tokenizer", "spm:m.model", "--eos"], [], "spm_train"),
    ("megatron", ["mg"], [], None),
    ("npy", ["x1.npy", "x2.npy"], [], None),
    ("npy", ["x1.npy", "--field", "feat"], ["feat"], None),
    ("idx", ["img.idx"], [], None),
    ("idx", ["img.idx", "--labels", "lab.idx", "--layout", "rows", "--label-names", "a,b"], [],
     None),
    ("edf", ["r1.edf", "r2.edf"], [], None),
    ("edf", ["r1.edf", "r2.edf", "--physical", "f32", "--labels", "labels.csv", "--meta",
             "header"], [], None),
    ("edf", ["r1.edf", "r2.edf", "--events-as", "samples"], [], None),
    ("edf", ["r1.edf", "r2.edf", "--events-as", "windows", "--window-start", "0",
             "--window-stop", "0.1", "--meta", "header"], [], None),
    ("biosig", ["bv/rec.vhdr"], [], None),
    ("biosig", ["bv/rec.vhdr", "--physical", "f32", "--resample", "200", "--meta", "header",
                "--events-as", "samples"], [], None),
    ("biosig", ["bv/rec.vhdr", "--events-as", "windows", "--window-start", "0",
                "--window-stop", "0.1"], [], None),
    ("audio", ["s16k.wav"], [], "sox"),
    ("audio", ["s16k.wav", "s8k.wav", "--resample", "16000", "--dtype", "f32"], [], "sox"),
]


# ------------------------------------------------------------ the spec

def spec_tables(path):
    """The rows of section 7's tables whose header is `| name | kind | type
    | ...`: (line number, names, type cell, kinds), kinds [''] for 7.1 (every
    converter) or the converters named in backticks in the heading of the
    7.4 subsection the table is in."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    rows, where, in7, ours = [], None, False, False
    for no, line in enumerate(lines, 1):
        if line.startswith("## "):
            in7, where = line.startswith("## 7."), None
            continue
        if not in7:
            continue
        if line.startswith("### 7.1 "):
            where = [""]
        elif line.startswith("### "):
            where = None
        elif line.startswith("#### "):
            where = re.findall(r"`([a-z]+)`", line)
        if where is None or not line.startswith("|"):
            ours = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:3] == ["name", "kind", "type"]:
            ours = True
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        if ours and len(cells) >= 3 and names:
            rows.append((no, names, cells[2], where))
    return rows


def candidates(name, fields, chosen):
    """The names `name` may be listed as."""
    out = [name]
    for f in fields:
        if name.startswith(f + "."):
            out.append("FIELD" + name[len(f):])
    if name in chosen:
        out.append("FIELD")
    if name.startswith("ss.lengths."):
        out.append("ss.lengths.FIELD")
    if name.startswith("ss.bucket."):
        out.append("ss.bucket.NAME")
    return out


def type_listed(typ, cell):
    words = re.findall(r"[a-z0-9]+", cell)
    return typ in words or "any" in words


def main():
    seqstore, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    dump = "--dump" in sys.argv[3:]
    table = spec_tables(f"{src}/spec/FORMAT.md")
    if not any(kinds == [""] for _, _, _, kinds in table):
        print("spec/FORMAT.md: no table in section 7.1")
        return 1
    missing, skipped, ran, used = {}, [], set(), set()
    with tempfile.TemporaryDirectory(prefix="spec_names.") as d:
        have = make_inputs(d, src)
        for n, (kind, args, chosen, tool) in enumerate(CASES):
            what = f"convert {kind} {' '.join(args)}"
            if tool and not have[tool]:
                skipped.append(f"{what} (no {tool})")
                continue
            store = f"s{n}.ss"
            p = subprocess.run([seqstore, "convert", kind, *args, "-o", store, "-q"], cwd=d,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0 and "built without" in p.stderr:
                skipped.append(f"{what} (not built in)")
                continue
            if p.returncode != 0:
                print(f"FAIL: {what}: exit {p.returncode}\n{p.stderr}")
                return 1
            info = json.loads(run([seqstore, "info", store, "--json"], d))
            fields = [f["name"] for f in info["fields"]]
            written = [(f["name"], "field", f["dtype"]) for f in info["fields"]]
            written += [(a["name"], "attribute", a["type"]) for a in info["attributes"]]
            if dump:
                print(f"== {what}")
                for f in info["fields"]:
                    print(f"  field {f['name']} {f['dtype']} seq={f['sequence']} "
                          f"shape={f['shape']}")
                for a in info["attributes"]:
                    v = a.get("value", a.get("value_base64"))
                    print(f"  attr  {a['name']} {a['type']} {a['bytes']}: {json.dumps(v)[:100]}")
            ran.add(kind)
            rows = [r for r in table if r[3] == [""] or kind in r[3]]
            for name, what_kind, typ in written:
                cand = candidates(name, fields, chosen)
                hits = [cell for no, names, cell, _ in rows for c in cand if c in names]
                used.update((no, c) for no, names, _, _ in rows for c in cand if c in names)
                alias = f" (or `{'`, `'.join(cand[1:])}`)" if cand[1:] else ""
                if not hits:
                    problem = (f"{what_kind} `{name}`{alias} is in no table of spec/FORMAT.md "
                               f"§7 for `{kind}`")
                elif not any(type_listed(typ, cell) for cell in hits):
                    problem = (f"{what_kind} `{name}`{alias} is written as {typ}, which its "
                               f"row's type column does not name")
                else:
                    continue
                missing.setdefault(f"{kind}: {problem}", what)
    # the other way round: a name in a table that no conversion wrote is a
    # name the converters no longer write (or a case this test lacks)
    for no, names, _, kinds in table:
        if kinds == [""] or ran.intersection(kinds):
            for name in names:
                if (no, name) not in used:
                    missing.setdefault(f"spec/FORMAT.md:{no}: `{name}` is written by no "
                                       f"conversion of this test (of: "
                                       f"{', '.join(kinds) or 'any converter'})", None)
    for s in skipped:
        print(f"skipped: {s}")
    for m in sorted(missing):
        print(f"MISSING: {m}" + (f" (written by: {missing[m]})" if missing[m] else ""))
    if missing:
        return 1
    print(f"ok: {len(CASES) - len(skipped)} conversions, every name in spec/FORMAT.md §7")
    return 0


if __name__ == "__main__":
    sys.exit(main())
