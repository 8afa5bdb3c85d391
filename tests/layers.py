#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""layers.py SOURCE_DIR - the source tree keeps its layers and has no include cycle.

The layers, lowest first: include/ (the public headers), remote/ (objects
under a URL: HTTP, S3, credentials, the shard cache), format/ (the store),
sdk/ (reading for training loops), converters/ (source formats and the
conversion framework), cli/ (the seqstore command). A file may include from
its own layer and the layers below, never from one above: format/ knows
nothing of the SDK, the converters know nothing of the command line. Every
quoted #include of the project's own files (include/, remote/, format/, sdk/,
converters/, cli/, mpi/, python/src/) is resolved as the build resolves it
(the including file's folder first, then the include folders), and the graph
of those includes must have no cycle. Every file is its own node, the public
headers too: seqstore.h is the umbrella that includes the parts, each part
(include/seqstore/*.h) includes seqstore/core.h and the parts whose types it
uses, never seqstore.h, so a part can still be included alone. Prints each
violation; exit 1 if any.
"""
import os
import re
import sys

LAYERS = ["include", "remote", "format", "sdk", "converters", "cli"]
FOLDERS = LAYERS + ["mpi", "python/src"]
# where a bare "name.h" is looked for after the including file's own folder
SEARCH = ["include", "include/seqstore", "remote", "format", "sdk", "converters", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer(path):
    top = path.split("/")[0]
    return LAYERS.index(top) if top in LAYERS else None


def resolve(root, src, name):
    for d in [os.path.dirname(src)] + SEARCH:
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def sources(root):
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if f.endswith((".c", ".h", ".cc")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def cycles(graph):
    """Strongly connected components of more than one file (or a self-include)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    graph, bad = {}, []
    for src in sources(root):
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            dst = resolve(root, src, name)
            if dst is None or not dst.startswith(tuple(f + "/" for f in FOLDERS)):
                continue  # a system header, or a file of tests/ or fuzz/
            graph.setdefault(src, set()).add(dst)
            ls, ld = layer(src), layer(dst)
            if ls is not None and ld is not None and ld > ls:
                bad.append(f"{src} includes {dst}: {LAYERS[ls]}/ may not reach up into {LAYERS[ld]}/")
    for comp in cycles(graph):
        bad.append("include cycle: " + " -> ".join(comp))
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f"ok: {len(graph)} files, {sum(len(v) for v in graph.values())} includes, no cycle, layers kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
