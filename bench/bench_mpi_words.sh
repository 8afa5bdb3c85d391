#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench_mpi_words.sh - `convert text --tokens words` spread over MPI ranks
# (issue 12: >= 1.7x with 2 ranks): seqstore-mpi with 1 and 2 ranks (one
# thread each) on the same corpus, alternating, ROUNDS rounds (default 5);
# prints the wall time of each run, their medians, the speed-up and the load
# average before and after. The counting pass and the reduce are included.
#
# usage: bench_mpi_words.sh BUILD_DIR CORPUS [ROUNDS] [WORKDIR]
set -eu
build=$1 corpus=$2 rounds=${3:-5} work=${4:-${TMPDIR:-/tmp}/bench_mpi_words}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="$build/seqstore-mpi"
[ -x "$mpi" ] || mpi="$build/mpi/seqstore-mpi"
mkdir -p "$work"
bytes=$(wc -c < "$corpus")
echo "corpus: $corpus ($bytes bytes); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # ranks -> seconds
    rm -rf "$work/ds$1"
    t0=$(date +%s.%N)
    mpirun --oversubscribe -n "$1" "$mpi" convert text "$corpus" --tokens words --threads 1 \
        -o "$work/ds$1" > "$work/out$1.txt" 2>&1 || { cat "$work/out$1.txt"; exit 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
: > "$work/t1" && : > "$work/t2"
r=0
while [ $r -lt "$rounds" ]; do
    a=$(run 1) && b=$(run 2)
    echo "$a" >> "$work/t1" && echo "$b" >> "$work/t2"
    printf 'round %d: 1 rank %.2f s, 2 ranks %.2f s\n' $((r + 1)) "$a" "$b"
    r=$((r + 1))
done
med() { sort -g "$1" | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
m1=$(med "$work/t1") m2=$(med "$work/t2")
printf 'median: 1 rank %.2f s (%.0f MB/s), 2 ranks %.2f s (%.0f MB/s): %.2fx\n' "$m1" \
    "$(echo "$bytes / 1000000 / $m1" | bc -l)" "$m2" "$(echo "$bytes / 1000000 / $m2" | bc -l)" \
    "$(echo "$m1 / $m2" | bc -l)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
rm -rf "$work"
