#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench_convert_jsonl.sh - `convert jsonl --tokenizer spm:MODEL` against
# `spm_encode --output_format=id` alone on the same text.
#
# usage: bench/bench_convert_jsonl.sh PATH/TO/seqstore [MB (default 16)] [RUNS (default 5)] [DIR]
#
# Builds a corpus of MB megabytes from the fortune files (lines, repeated),
# trains an 8000-piece unigram model on it with spm_train, writes the lines as
# JSON lines {"text": ...} (python3's json), then times, alternating, RUNS
# rounds of: spm_encode on the plain lines (one thread: spm_encode has no
# threads), `convert jsonl` with --threads 1 and with --threads 2 (parse, encode,
# write the store, sync). Prints each median wall time and the ratios
# spm_encode time / convert time (target: >= 0.9 at 1 thread, >= 1.7 at 2),
# and the load average before and after (the machine may be shared).
set -euo pipefail
cli=${1:?usage: $0 PATH/TO/seqstore [MB] [RUNS] [DIR]}
mb=${2:-16}
runs=${3:-5}
dir=${4:-/tmp}/ss-bench-jsonl.$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
echo "load average before: $(cat /proc/loadavg)"

# SS_BENCH_QUICK (the smoke test): 0.2 MB and a model of 4 files' text,
# trained in a fraction of the time; the figures then mean nothing.
nfiles=40 vocab=8000 want=$((mb * 1000000))
if [ -n "${SS_BENCH_QUICK:-}" ] && [ "${SS_BENCH_QUICK}" != 0 ]; then nfiles=2 vocab=1000 want=200000 runs=1; fi
src=$(ls /usr/share/games/fortunes/* | grep -v '\.dat$' | grep -v '\.u8$' | head -$nfiles)
cat $src | grep -av '^%$' | grep -av '^[[:space:]]*$' > "$dir/base.txt"
: > "$dir/lines.txt"
while [ "$(stat -c %s "$dir/lines.txt")" -lt $want ]; do cat "$dir/base.txt" >> "$dir/lines.txt"; done
spm_train --input="$dir/base.txt" --model_prefix="$dir/m" --vocab_size=$vocab --minloglevel=2 \
  --hard_vocab_limit=false > /dev/null 2>&1
/usr/bin/python3 -c '
import json, sys
with open(sys.argv[1], encoding="utf-8", errors="surrogateescape") as f, open(sys.argv[2], "w") as out:
    for line in f:
        out.write(json.dumps({"text": line.rstrip("\n")}, ensure_ascii=False) + "\n")
' "$dir/lines.txt" "$dir/lines.jsonl"
bytes=$(stat -c %s "$dir/lines.txt")
echo "corpus: $bytes bytes of text, $(wc -l < "$dir/lines.txt") lines; JSONL $(stat -c %s "$dir/lines.jsonl") bytes"
cat "$dir/lines.txt" "$dir/lines.jsonl" > /dev/null # page cache

# one run: "wall cpu" (cpu = user + sys of the command and its children)
t() {
  /usr/bin/time -f '%e %U %S' -o "$dir/time" "$@" > /dev/null
  awk '{printf "%s %.3f\n", $1, $2 + $3}' "$dir/time"
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
declare -A wall cpu
for ((r = 0; r < runs; r++)); do
  for cfg in spm c1 c2; do
    case $cfg in
      spm) out=$(t sh -c "spm_encode --model='$dir/m.model' --output_format=id < '$dir/lines.txt'") ;;
      c1) out=$(t "$cli" convert jsonl "$dir/lines.jsonl" --tokenizer "spm:$dir/m.model" --threads 1 -o "$dir/s.ss" --force --quiet) ;;
      c2) out=$(t "$cli" convert jsonl "$dir/lines.jsonl" --tokenizer "spm:$dir/m.model" --threads 2 -o "$dir/s.ss" --force --quiet) ;;
    esac
    wall[$cfg]+="${out% *} "
    cpu[$cfg]+="${out#* } "
  done
done
ws=$(median ${wall[spm]}) cs=$(median ${cpu[spm]})
report() { # name cfg
  local w c
  w=$(median ${wall[$2]}) c=$(median ${cpu[$2]})
  awk -v n="$1" -v w="$w" -v c="$c" -v ws="$ws" -v cs="$cs" -v b="$bytes" -v runs="${wall[$2]}" 'BEGIN {
    printf "%-24s wall %.3f s (%.1f MB/s, %.2fx spm_encode)  cpu %.3f s (%.2fx spm_encode per CPU second)  walls: %s\n",
           n, w, b / w / 1e6, ws / w, c, cs / c, runs }'
}
report "spm_encode alone" spm
report "convert jsonl 1 thread" c1
report "convert jsonl 2 threads" c2
echo "load average after: $(cat /proc/loadavg)"
