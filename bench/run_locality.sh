#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# run_locality.sh - run bench_shuffle_locality on a store several times larger
# than the memory the reading process may use.
#
#   bench/run_locality.sh BENCH_BINARY [STORE_MB] [LIMIT] [SECONDS] [RUN_OPTION ...]
#
# RUN_OPTIONs (e.g. --rounds 5 --markdown) are passed to `run`; SECONDS
# defaults to 10 (the most each order's epoch may take; longer ones are
# extrapolated).
# Creates a STORE_MB MiB store (default 1536) in $TMPDIR (default /var/tmp),
# then runs `bench_shuffle_locality run` inside a child memory cgroup limited to
# LIMIT (default 256M) and deletes the store. The child cgroup is created under
# the cgroup this script already runs in (cgroup v2: memory.max; v1 memory
# controller: memory.limit_in_bytes), so page cache and anonymous memory of the
# reader count against LIMIT. Needs root (or a delegated cgroup). Falls back to
# `systemd-run --scope -p MemoryMax=` if no writable cgroup is found.
set -eu
BENCH=${1:?usage: run_locality.sh BENCH_BINARY [STORE_MB] [LIMIT] [SECONDS]}
MB=${2:-1536}
LIMIT=${3:-256M}
SECS=${4:-10}
if [ $# -gt 4 ]; then shift 4; else shift $#; fi
# SS_BENCH_QUICK (the smoke tests): one round over a store of 8 MiB, whatever
# the arguments (cold reads of a larger one take a minute on a busy disk)
if [ -n "${SS_BENCH_QUICK:-}" ] && [ "$SS_BENCH_QUICK" != 0 ]; then
    MB=8 LIMIT=8M SECS=0.1
    set -- "$@" --rounds 1
fi
DIR=${TMPDIR:-/var/tmp}
STORE="$DIR/ss_locality_$$.ss"
trap 'rm -f "$STORE" "$STORE-lock"; [ -n "${CG:-}" ] && rmdir "$CG" 2>/dev/null; true' EXIT
trap 'exit 130' INT TERM HUP

"$BENCH" create "$STORE" "$MB" >&2

CG=""
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    # cgroup v2
    BASE="/sys/fs/cgroup$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)"
    CG="$BASE/ssbench_$$"
    mkdir "$CG" && echo "$LIMIT" > "$CG/memory.max" || CG=""
elif [ -d /sys/fs/cgroup/memory ]; then
    # cgroup v1 memory controller
    BASE="/sys/fs/cgroup/memory$(awk -F: '$2=="memory"{print $3}' /proc/self/cgroup)"
    CG="$BASE/ssbench_$$"
    if mkdir "$CG"; then
        echo "$LIMIT" > "$CG/memory.limit_in_bytes" || CG=""
    else
        CG=""
    fi
fi

if [ -n "$CG" ]; then
    echo "memory cgroup $CG limited to $LIMIT" >&2
    # The subshell moves itself into the cgroup, then execs the reader.
    # This script waits for it, then removes the cgroup (EXIT trap).
    sh -c 'cg=$1 bench=$2 store=$3 secs=$4; shift 4; echo $$ > "$cg/cgroup.procs" && exec "$bench" run "$store" "$secs" "$@"' sh "$CG" "$BENCH" "$STORE" "$SECS" "$@"
elif command -v systemd-run >/dev/null && systemd-run --scope -q -p MemoryMax="$LIMIT" true 2>/dev/null; then
    echo "systemd-run scope with MemoryMax=$LIMIT" >&2
    systemd-run --scope -q -p MemoryMax="$LIMIT" "$BENCH" run "$STORE" "$SECS" "$@"
else
    echo "warning: no memory cgroup available; running unlimited (page cache dropped before each order only)" >&2
    "$BENCH" run "$STORE" "$SECS" "$@"
fi
