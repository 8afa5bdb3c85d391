#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# run_all_check.sh - the ctest bench_run_all_smoke: runs bench/run_all.sh
# with SS_BENCH_QUICK=1 (tiny sizes, 2 rounds) and checks that the document
# has every README table, header and last row, and that run_all.sh left no
# temporary directory behind. Values are not checked: at these sizes they
# mean nothing.
#
#   bench/run_all_check.sh BUILD_DIR
set -u
BUILD=${1:?usage: run_all_check.sh BUILD_DIR}
HERE=$(dirname "$0")
T=$(mktemp -d "${TMPDIR:-/tmp}/ss_run_all_check.XXXXXX")
trap 'rm -rf "$T"' EXIT
OUT=$T/out.md
TMPDIR=$T SS_BENCH_QUICK=1 "$HERE/run_all.sh" "$BUILD" "$T/copy.md" >"$OUT" 2>"$T/err" || {
    echo "run_all.sh failed:"; cat "$T/err"; exit 1; }
fail=0
need() { # need COUNT TEXT: TEXT occurs on COUNT lines or more
    got=$(grep -cF -- "$2" "$OUT")
    if [ "$got" -lt "$1" ]; then
        echo "missing ($got of $1): $2"
        fail=1
    fi
}
need 3 "| measure | figure | target |"
need 2 "| sequential scan, \`ss_read_examples\`"
need 1 "| workers, idle caller, no step | examples/s | 2 workers vs 1 |"
need 1 "| **\`ss_get\`** |"
need 1 "| numpy \`memmap\`"
need 1 "| open, 20000 examples"
need 1 "| examples | data | write speed | peak RSS |"
need 1 "| 200000 |"
if [ -d /usr/share/games/fortunes ]; then
    need 1 "| batching | buckets | fixed batch of 32 | token budget 4096 |"
    need 1 "| estimated boundaries, 16 buckets | 16 |"
fi
need 1 "| run | allocations per batch | \`next()\` median | p99 |"
need 1 "| random crop + token masking, 2 ms step |"
if /usr/bin/python3 -c 'import numpy, h5py, torch' 2>/dev/null; then
    need 1 "seqstore field[i]"
    need 1 "seqstore.Loader "
fi
need 1 "| window reader, 1 thread |"
need 2 "| bookkeeping per window"
need 1 "| order | epoch time | examples/s | r(epochs) | r(index) | batch span | neighbours |"
need 1 "| full shuffle |"
need 1 "| case | memcpy | collate 1 thread | 2 threads |"
need 1 "| EEG: B=32 windows"
need 1 "| tokens per batch (output) | 1 thread | 2 threads, team forced |"
need 1 "| 128 rows ("
need 1 "### Converters"
need 1 "EDFlib read only"
need 1 "convert text bytes, 1 thread"
need 1 "| SS_WRITE_NOSYNC: ss_writer_finish, wall |"
need 1 "| convert text --tokens bytes (default threads) |"
if [ -x "$BUILD/bench/bench_convert_signal" ]; then need 1 "GDF (BioSig)"; fi
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then need 1 "convert parallel --tokens words"; fi
need 1 "### Datasets of shards"
need 1 " 256 shards: open"
if /usr/bin/python3 -c 'import numpy, torch' 2>/dev/null; then
    need 1 "seqstore WindowReader"
    need 1 "Loader out=reused tensor"
fi
need 7 "load average"
need 1 "Load average at the end"
cmp -s "$OUT" "$T/copy.md" || { echo "OUT.md differs from standard output"; fail=1; }
if ls "$T" | grep -q ss_run_all; then
    echo "run_all.sh left its temporary directory behind"
    fail=1
fi
[ $fail = 0 ] || { echo "--- the document:"; cat "$OUT"; }
exit $fail
