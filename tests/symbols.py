#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""symbols.py NM SOURCE_DIR LIB.a... - every global symbol a static library
defines is either public or marked internal.

A program that links libseqstore.a or libseqstore_converters.a shares one
namespace with them: a global named `tx_run` or `mg_doc` can clash with the
program's own. So every global a library defines must be `ss_...` and
declared SS_API in include/ (the API), or `ss__...` (internal). Only strong
definitions count: the weak ones C++ templates and inline functions leave
behind (nm types W, V, u) are the compiler's, named by the C++ mangling.
Prints each offending symbol with its object file; exit 1 if any.
"""
import glob
import os
import re
import subprocess
import sys


def public_names(root):
    names = set()
    inc = os.path.join(root, "include")
    for h in [os.path.join(inc, "seqstore.h")] + glob.glob(os.path.join(inc, "seqstore", "*.h")):
        text = open(h, encoding="utf-8").read()
        names |= set(re.findall(r"\bSS_API\b[^;(]*?\b(ss_\w+)\s*[(;\[]", text))
    return names


def main(nm, root, libs):
    public, bad, count = public_names(root), [], 0
    for lib in libs:
        out = subprocess.run([nm, "-g", "--defined-only", lib], capture_output=True, text=True,
                             check=True).stdout
        obj = "?"
        for line in out.splitlines():
            if line.endswith(":"):
                obj = line[:-1]
                continue
            parts = line.split()
            if len(parts) != 3 or parts[1] in ("W", "V", "w", "v", "u"):
                continue
            count += 1
            sym = parts[2]
            # a sanitizer build adds its own per-global markers (__odr_asan.NAME):
            # the name after the prefix is the one that counts
            for prefix in ("__odr_asan.", "__odr_asan_gen_"):
                if sym.startswith(prefix):
                    sym = sym[len(prefix):]
            if sym.startswith("ss__") or (sym.startswith("ss_") and sym in public):
                continue
            why = "ss_ but not declared SS_API in include/" if sym.startswith("ss_") else \
                "neither ss_ (public) nor ss__ (internal)"
            bad.append(f"{os.path.basename(lib)}({obj}): {sym}: {why}")
    for b in bad:
        print(b)
    if bad:
        return 1
    print(f"ok: {count} global symbols in {len(libs)} libraries, each public or ss__")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: symbols.py NM SOURCE_DIR LIB.a...")
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
