#!/usr/bin/env bash
# A/B benchmark on one machine in one run: the launch-overhead and compile-time benchmarks of a
# baseline tree (e.g. `git archive <rev> src bench | tar -x -C .ab-baseline`) and of this tree,
# each run with its own sources (PYTHONPATH) and its own compile cache, alternating base/head so
# drift of the machine shows as a difference between rounds, not between sides.
#   scripts/gpu-ab.sh BASELINE_DIR [rounds]      logs and JSON under $OUT/ab (default ./out/ab)
set -uo pipefail
base=${1:?usage: scripts/gpu-ab.sh BASELINE_DIR [rounds]}
rounds=${2:-1}
OUT=${OUT:-out}; mkdir -p "$OUT/ab"
export PYTHONUNBUFFERED=1
for round in $(seq "$rounds"); do
  for side in base head; do
    tree=$([ "$side" = base ] && echo "$base" || echo .)
    export PYTHONPATH="$tree/src" NOVA_CACHE_DIR="/tmp/nova-ab-cache-$side"
    timeout 300 python3 "$tree/bench/launch_overhead.py" --device cuda \
      --json "$OUT/ab/launch_overhead-$side-$round.json" > "$OUT/ab/launch_overhead-$side-$round.log" 2>&1
    echo "=== launch_overhead $side round $round (rc=$?)"
    grep -v -i warning "$OUT/ab/launch_overhead-$side-$round.log" | tail -25
    timeout 300 python3 "$tree/bench/compile_time.py" --runs 3 \
      --json "$OUT/ab/compile_time-$side-$round.json" > "$OUT/ab/compile_time-$side-$round.log" 2>&1
    echo "=== compile_time $side round $round (rc=$?)"
    tail -25 "$OUT/ab/compile_time-$side-$round.log"
  done
done
unset PYTHONPATH NOVA_CACHE_DIR
