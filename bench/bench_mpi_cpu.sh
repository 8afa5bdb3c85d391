#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench_mpi_cpu.sh - CPU seconds per rank of `seqstore-mpi convert text
# --tokens words` for several rank counts (default 1 2 4 8), ROUNDS rounds
# (default 3) alternating the rank counts. Per rank is the slowest rank's
# (seqstore-mpi --times, the maximum over the ranks) work-cpu (its count,
# convert and verify) plus reduce-cpu (its share of the word-counts reduce;
# absent from drivers before it, whose merge was inside each convert). CPU
# seconds, not wall: on a machine with fewer cores than ranks the ranks take
# turns, and CPU time is what a rank would take on a core of its own. Prints
# each run, then per rank count the median and the ideal total(1)/N, so that
# a constant per rank shows as the difference.
#
# usage: bench_mpi_cpu.sh BUILD_DIR CORPUS [ROUNDS] [RANKS...]
set -eu
build=$1 corpus=$2 rounds=${3:-3}
shift 2; [ $# -gt 0 ] && shift
ranks=${*:-1 2 4 8}
work=${TMPDIR:-/tmp}/bench_mpi_cpu.$$
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="$build/seqstore-mpi"
mkdir -p "$work"
echo "corpus: $corpus ($(wc -c < "$corpus") bytes), ranks: $ranks, $rounds rounds, $(nproc) CPUs"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
r=0
while [ $r -lt "$rounds" ]; do
    for n in $ranks; do
        rm -rf "$work/ds"
        mpirun --oversubscribe -n "$n" "$mpi" convert text "$corpus" --tokens words --threads 1 \
            -o "$work/ds" --times > "$work/out" 2>&1 || { cat "$work/out"; exit 1; }
        cpu=$(sed -n 's/.*(max over ranks)://p' "$work/out" | awk '{
            for (i = 1; i < NF; i += 2) v[$i] = $(i + 1)
            printf "%.3f %.3f", v["work-cpu"], v["reduce-cpu"] + 0 }')
        echo "$n $cpu" >> "$work/runs"
        echo "round $((r + 1)): $n ranks: work-cpu + reduce-cpu per rank: $cpu (load $(cut -d' ' -f1 /proc/loadavg))"
    done
    r=$((r + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
one=""
for n in $ranks; do
    med=$(awk -v n="$n" '$1 == n { print $2 + $3 }' "$work/runs" | sort -n |
        awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    [ -z "$one" ] && one=$med
    awk -v n="$n" -v m="$med" -v one="$one" 'BEGIN {
        printf "%d ranks: %.3f s CPU per rank (median); total(1)/N = %.3f s; excess %.3f s\n",
               n, m, one / n, m - one / n }'
done
rm -rf "$work"
