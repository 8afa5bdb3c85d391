#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/peers/run.sh [--smoke] [--rounds R] [--repeat K] [--convert-rounds R]
#                    [--convert-repeat K] [--data DIR] [--out FILE] [--readme FILE]
# seqstore side by side with MosaicML streaming, LitData, WebDataset, Hugging
# Face datasets, Megatron-Core, torchdata, braindecode and lhotse on the same
# data, each converted by its own writer; regenerates docs/peers.md.
#   --smoke   tiny data, one repetition: each workload's measured part takes
#             well under a second, but its ~80 processes each import torch and
#             a peer (5-7 min in all at load 3-8 on 2 CPUs; ctest
#             bench_peers_smoke 4.9 min); writes $DATA/peers-smoke.md and README's section into
#             $DATA/README-smoke.md, never docs/peers.md or README.md, and
#             fails when any workload fails
#   --rounds  rounds of one process per system, peers alternated with
#             seqstore (default 1), --repeat: the measurements each process
#             repeats (default 3); --convert-rounds and --convert-repeat the
#             same for the conversions (default: --rounds; 3)
#   --data    where inputs and converted copies go (default: a fresh
#             directory under $TMPDIR, removed at the end; given, it is kept
#             and its raw inputs are reused)
# Needs the CLI built in build/ (SEQSTORE=path overrides) and makes
# bench/peers/.venv with make-venv.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
smoke= rounds=1 repeat=3 crounds=0 crepeat=3 data= out= readme=
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=--smoke ;;
    --rounds) rounds=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --convert-repeat) crepeat=$2; shift ;;
    --convert-rounds) crounds=$2; shift ;;
    --readme) readme=$2; shift ;;
    --data) data=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--smoke] [--rounds R] [--repeat K] [--convert-rounds R] [--convert-repeat K] [--data DIR] [--out FILE] [--readme FILE]" >&2
       exit 2 ;;
  esac
  shift
done
export SEQSTORE=${SEQSTORE:-$root/build/seqstore}
[ -x "$SEQSTORE" ] || { echo "run.sh: no CLI at $SEQSTORE (build it first)" >&2; exit 1; }
export SS_LIB=${SS_LIB:-$(dirname "$SEQSTORE")/libseqstore.so}
"$here/make-venv.sh" >&2
py=$here/.venv/bin/python
if [ -z "$data" ]; then
  data=$(mktemp -d "${TMPDIR:-/tmp}/seqstore-peers.XXXXXX")
  trap 'rm -rf "$data"' EXIT
fi
[ -n "$out" ] || { if [ -n "$smoke" ]; then out=$data/peers-smoke.md; else out=$root/docs/peers.md; fi; }
# README's section "Against other data loaders" (a summary of $out) is
# rewritten by full runs only; --readme FILE writes it into another file
[ -n "$readme" ] || { if [ -n "$smoke" ]; then readme=$data/README-smoke.md; else readme=$root/README.md; fi; }
mkdir -p "$data/raw" "$data/conv" "$(dirname "$out")" "$(dirname "$readme")"
if [ -n "$smoke" ] && [ ! -f "$readme" ]; then cp "$root/README.md" "$readme"; fi
if [ ! -f "$data/raw/sizes.json" ]; then
  "$py" "$here/make_data.py" "$data/raw" $smoke
fi
"$py" "$here/driver.py" "$data" "$out" $smoke --rounds "$rounds" --repeat "$repeat" --convert-repeat "$crepeat" \
  --convert-rounds "$crounds" --readme "$readme"
echo "run.sh: wrote $out" >&2
