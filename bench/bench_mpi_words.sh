#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench_mpi_words.sh - `convert text --tokens words` spread over MPI ranks
# (target: >= 1.7x with 2 ranks): seqstore-mpi with 1 and 2 ranks (one
# thread each) on the same corpus, alternating round by round, ROUNDS rounds
# (default 5). Prints every run's wall time, the medians and ranges, the
# speed-up, the load average before, during and after, and splits the wall
# time (seqstore-mpi --times, slowest rank) into
#   work   - count + convert + verify: what N ranks divide N ways (also in
#            CPU seconds, work-cpu, which other load does not stretch)
#   fixed  - mpirun's start-up, MPI_Init and MPI_Finalize (measured alone as
#            `mpirun -n N seqstore-mpi --help`), the counts reduce, waiting
#            for the slowest rank, the manifest and the rest
# so that a projection to a large job rests on both: a job of B bytes on N
# ranks takes about fixed + B / (N x per-rank rate). Use a corpus large
# enough that the fixed seconds are small against the work (the script says
# which share of the 2-rank time they are). On a machine shared with other
# work a 2-rank speed-up is not reliable: read it with the load printed.
#
# usage: bench_mpi_words.sh BUILD_DIR CORPUS [ROUNDS] [WORKDIR]
set -eu
build=$1 corpus=$2 rounds=${3:-5} work=${4:-${TMPDIR:-/tmp}/bench_mpi_words}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="$build/seqstore-mpi"
[ -x "$mpi" ] || mpi="$build/mpi/seqstore-mpi"
mkdir -p "$work"
bytes=$(wc -c < "$corpus")
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "corpus: $corpus ($bytes bytes), $rounds rounds alternating 1 and 2 ranks, $(nproc) CPUs"
echo "load average before: $(load)"
now() { date +%s.%N; }
# run RANKS: one conversion; appends "wall count reduce convert verify wait
# manifest total" to $work/tRANKS
run() {
    rm -rf "$work/ds$1"
    t0=$(now)
    mpirun --oversubscribe -n "$1" "$mpi" convert text "$corpus" --tokens words --threads 1 \
        -o "$work/ds$1" --times > "$work/out$1.txt" 2>&1 || { cat "$work/out$1.txt"; exit 1; }
    t1=$(now)
    # "seqstore-mpi: N ranks, seconds (max over ranks): count C reduce R ..."
    phases=$(sed -n 's/.*(max over ranks)://p' "$work/out$1.txt" |
        awk '{for (i = 1; i < NF; i += 2) printf "%s ", $(i + 1)}')
    echo "$(echo "$t1 - $t0" | bc -l) $phases" >> "$work/t$1"
}
# trivial RANKS: mpirun's start-up and tear-down with MPI_Init and
# MPI_Finalize (seqstore-mpi --help does nothing else), appended to $work/sRANKS
trivial() {
    t0=$(now)
    mpirun --oversubscribe -n "$1" "$mpi" --help > /dev/null
    t1=$(now)
    echo "$t1 - $t0" | bc -l >> "$work/s$1"
}
: > "$work/t1" && : > "$work/t2" && : > "$work/s1" && : > "$work/s2"
r=0
loads=""
while [ $r -lt "$rounds" ]; do
    run 1 && trivial 1 && run 2 && trivial 2
    loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
    printf 'round %d: 1 rank %.2f s, 2 ranks %.2f s (load %s)\n' $((r + 1)) \
        "$(tail -n 1 "$work/t1" | cut -d' ' -f1)" "$(tail -n 1 "$work/t2" | cut -d' ' -f1)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
    r=$((r + 1))
done
# col FILE N: the median, min and max of column N
col() {
    cut -d' ' -f"$2" "$1" | sort -g |
        awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                               printf "%.3f %.3f %.3f\n", m, v[1], v[NR]}'
}
med() { col "$1" "$2" | cut -d' ' -f1; }
echo "phases, seconds, medians (slowest rank; seqstore-mpi --times):"
echo "  ranks  wall   mpirun* count  reduce convert verify wait   manifest  in seqstore-mpi  work-cpu"
for n in 1 2; do
    printf '  %-5s %6.2f %6.2f  %6.2f %6.3f %6.2f  %6.3f %6.3f %6.3f    %6.2f          %6.2f\n' \
        "$n" "$(med "$work/t$n" 1)" "$(med "$work/s$n" 1)" "$(med "$work/t$n" 2)" \
        "$(med "$work/t$n" 3)" "$(med "$work/t$n" 4)" "$(med "$work/t$n" 5)" \
        "$(med "$work/t$n" 6)" "$(med "$work/t$n" 7)" "$(med "$work/t$n" 8)" "$(med "$work/t$n" 9)"
done
echo "  (* mpirun -n N seqstore-mpi --help: start-up, MPI_Init, MPI_Finalize; a separate run)"
set -- $(col "$work/t1" 1) && m1=$1 lo1=$2 hi1=$3
set -- $(col "$work/t2" 1) && m2=$1 lo2=$2 hi2=$3
printf 'wall: 1 rank %.2f s (range %.2f-%.2f, %.0f MB/s), 2 ranks %.2f s (range %.2f-%.2f, %.0f MB/s): %.2fx (range %.2f-%.2fx)\n' \
    "$m1" "$lo1" "$hi1" "$(echo "$bytes / 1000000 / $m1" | bc -l)" "$m2" "$lo2" "$hi2" \
    "$(echo "$bytes / 1000000 / $m2" | bc -l)" "$(echo "$m1 / $m2" | bc -l)" \
    "$(echo "$lo1 / $hi2" | bc -l)" "$(echo "$hi1 / $lo2" | bc -l)"
# per-rank work: count + convert + verify of the 1-rank run (all the input);
# 2 ranks: the slowest rank's, on half of it
w1=$(awk '{print $2 + $4 + $5}' "$work/t1" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
w2=$(awk '{print $2 + $4 + $5}' "$work/t2" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
f1=$(echo "$m1 - $w1" | bc -l) f2=$(echo "$m2 - $w2" | bc -l)
printf 'per-rank work (count+convert+verify): 1 rank %.2f s = %.0f MB/s per rank; 2 ranks %.2f s each (1 rank / 2 ranks: %.2fx)\n' \
    "$w1" "$(echo "$bytes / 1000000 / $w1" | bc -l)" "$w2" "$(echo "$w1 / $w2" | bc -l)"
c1=$(med "$work/t1" 9) c2=$(med "$work/t2" 9)
printf 'per-rank work in CPU seconds (work-cpu; what the load does not stretch): 1 rank %.2f s = %.0f MB/s per CPU second; 2 ranks %.2f s each (1 rank / 2 ranks: %.2fx)\n' \
    "$c1" "$(echo "$bytes / 1000000 / $c1" | bc -l)" "$c2" "$(echo "$c1 / $c2" | bc -l)"
printf 'fixed (wall - work: mpirun*, reduce, wait, manifest): 1 rank %.2f s, 2 ranks %.2f s = %.0f%% of the 2-rank wall\n' \
    "$f1" "$f2" "$(echo "100 * $f2 / $m2" | bc -l)"
printf 'projection: B bytes on N ranks ~ %.1f s + B / (N x %.0f MB/s); 1 TB on 64 ranks ~ %.0f s\n' \
    "$f2" "$(echo "$bytes / 1000000 / $w1" | bc -l)" \
    "$(echo "$f2 + 1000000 / (64 * $bytes / 1000000 / $w1)" | bc -l)"
printf '  (with a rank per idle CPU, by CPU seconds: %.1f s + B / (N x %.0f MB/s); 1 TB on 64 ranks ~ %.0f s)\n' \
    "$f2" "$(echo "$bytes / 1000000 / $c1" | bc -l)" \
    "$(echo "$f2 + 1000000 / (64 * $bytes / 1000000 / $c1)" | bc -l)"
printf "(fixed costs as measured with 2 ranks; the counts reduce and their merge grow with\n ranks x distinct words per shard, the manifest with the number of shards)\n"
echo "load average during the rounds:$loads; after: $(load)"
echo "(a 2-rank speed-up measured while other processes use the CPUs is not reliable)"
rm -rf "$work"
