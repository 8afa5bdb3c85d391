#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench_convert_npy_parallel.sh - `seqstore convert npy` on a set of .npy
# recordings and `seqstore convert parallel --tokens words` on a synthetic
# parallel corpus, each against reading the same files (cat > /dev/null).
#
# usage: bench/bench_convert_npy_parallel.sh PATH/TO/seqstore [SCALE (default 1)] [RUNS (default 5)] [DIR]
#
# SCALE 1: 200 .npy files of 5,000-15,000 x 21 f32 (about 168 MB) and 2 x
# 300,000 lines of 1-40 words from a 20,000-word Zipf-like vocabulary (about
# 80 MB); SCALE s divides both by s (the smoke test passes 100). Inputs are
# written with /usr/bin/python3 (NumPy for the .npy files), read once into
# the page cache, then RUNS rounds alternate: read, convert npy, read,
# convert parallel. Prints medians (and ranges) of wall time and MB/s of
# input, the ratio to reading the files, and the load average before and
# after (the machine may be shared). Conversions use the default threads and
# include creating and syncing the store.
set -euo pipefail
cli=${1:?usage: $0 PATH/TO/seqstore [SCALE] [RUNS] [DIR]}
scale=${2:-1}
runs=${3:-5}
# SS_BENCH_QUICK (the smoke tests): a hundredth of the data, one round
if [ -n "${SS_BENCH_QUICK:-}" ] && [ "$SS_BENCH_QUICK" != 0 ]; then scale=100 runs=1; fi
dir=$(mktemp -d "${4:-${TMPDIR:-/tmp}}/ss-bench-npy-par.XXXXXX")
trap 'rm -rf "$dir"' EXIT
py=/usr/bin/python3
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

"$py" - "$dir" "$scale" <<'EOF'
import sys, numpy as np
d, s = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(7)
for i in range(max(2, 200 // s)):
    T = int(rng.integers(5000 // s + 1, 15000 // s + 2))
    np.save(f"{d}/x{i:04d}.npy", rng.standard_normal((T, 21), dtype=np.float32))
ranks = np.arange(1, 20001)
p = 1.0 / ranks
p /= p.sum()
words = np.array([f"w{k}" for k in range(20000)])
for side in ("src", "tgt"):
    n = max(100, 300000 // s)
    lens = rng.integers(1, 41, n)
    ids = rng.choice(20000, size=int(lens.sum()), p=p)
    out, pos = [], 0
    for L in lens:
        out.append(" ".join(words[ids[pos:pos + L]]))
        pos += L
    with open(f"{d}/{side}.txt", "w") as f:
        f.write("\n".join(out) + "\n")
EOF

now() { date +%s.%N; }
npy=("$dir"/x*.npy)
npy_bytes=$(cat "${npy[@]}" | wc -c)
par_bytes=$(cat "$dir/src.txt" "$dir/tgt.txt" | wc -c)
t_rn=() t_cn=() t_rp=() t_cp=()
for ((r = 0; r < runs; r++)); do
    a=$(now); cat "${npy[@]}" >/dev/null; b=$(now); t_rn+=("$(echo "$b - $a" | bc -l)")
    rm -f "$dir/n.ss" "$dir/n.ss-lock"
    a=$(now); "$cli" convert npy "${npy[@]}" -o "$dir/n.ss" --quiet; b=$(now)
    t_cn+=("$(echo "$b - $a" | bc -l)")
    a=$(now); cat "$dir/src.txt" "$dir/tgt.txt" >/dev/null; b=$(now); t_rp+=("$(echo "$b - $a" | bc -l)")
    rm -f "$dir/p.ss" "$dir/p.ss-lock"
    a=$(now); "$cli" convert parallel "$dir/src.txt" "$dir/tgt.txt" --tokens words -o "$dir/p.ss" --quiet
    b=$(now); t_cp+=("$(echo "$b - $a" | bc -l)")
done

# stats BYTES TIMES...: "median s (min-max)" and MB/s of the median
stats() {
    local bytes=$1
    shift
    printf '%s\n' "$@" | sort -g | awk -v b="$bytes" '{ v[NR] = $1 }
        END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
              printf "%.3f s (%.3f-%.3f), %.1f MB/s", m, v[1], v[NR], b / m / 1e6 }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { echo "$(median "${@:2}") $1" | awk '{ printf "%.3f", $1 / $2 }'; }
printf 'convert npy, %d files, %.1f MB: %s; read %s = %sx the read speed\n' \
    "${#npy[@]}" "$(echo "$npy_bytes / 1000000" | bc -l)" "$(stats "$npy_bytes" "${t_cn[@]}")" \
    "$(stats "$npy_bytes" "${t_rn[@]}")" "$(ratio "$(median "${t_cn[@]}")" "${t_rn[@]}")"
printf 'convert parallel --tokens words, 2 x %d lines, %.1f MB: %s; read %s = %sx the read speed\n' \
    "$(wc -l <"$dir/src.txt")" "$(echo "$par_bytes / 1000000" | bc -l)" \
    "$(stats "$par_bytes" "${t_cp[@]}")" "$(stats "$par_bytes" "${t_rp[@]}")" \
    "$(ratio "$(median "${t_cp[@]}")" "${t_rp[@]}")"
echo "medians (ranges) of $runs alternating rounds; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
