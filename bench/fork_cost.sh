#!/usr/bin/env bash
# Cost of following fork() children (issue 17, item 5), as a user pays it: `hushtrace record` of a
# program that forks N children one after another (tests/sched/lifecycle_helper.cc, `fork-many N`:
# one event per child, each child waited for before the next), trace on ext4 (a directory under
# the build tree), against the same program run without a session. A child's cost must not grow
# with the number of children before it: the traced time per child stays flat as N doubles.
# Checks that each kept trace holds every child's event (babeltrace2). Times with hyperfine.
#
#   bench/fork_cost.sh                        # build dir: $HUSH_BENCH_BUILD_DIR, default build/
#   HUSH_BENCH_FORK_COUNTS="100 400" bench/fork_cost.sh
#
# Knobs: HUSH_BENCH_FORK_COUNTS (default "100 200 400 800"), HUSH_BENCH_FORK_RUNS (hyperfine runs
# per command, default 5), HUSH_BENCH_EXT4_DIR (scratch on a disk file system, default BUILD_DIR),
# HUSH_BENCH_OTHER_LIB (a directory holding another libhushtrace.so.0.1, e.g. an older build: adds
# its traced runs, same executables, LD_LIBRARY_PATH=DIR, to the same hyperfine run).
# Writes bench/results/fork_cost.json (hyperfine's export).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${HUSH_BENCH_BUILD_DIR:-build}
COUNTS=${HUSH_BENCH_FORK_COUNTS:-100 200 400 800}
RUNS=${HUSH_BENCH_FORK_RUNS:-5}
OUT=$ROOT/bench/results/fork_cost.json
command -v hyperfine >/dev/null || { echo "fork_cost.sh: hyperfine is not installed (apt-get install hyperfine)" >&2; exit 1; }
cmake --build "$BUILD_DIR" -j2 --target hushtrace lifecycle_helper >/dev/null
CLI=$ROOT/$BUILD_DIR/tools/hushtrace/hushtrace
HELPER=$ROOT/$BUILD_DIR/tests/sched/lifecycle_helper
SCRATCH=$(mktemp -d "${HUSH_BENCH_EXT4_DIR:-$ROOT/$BUILD_DIR}/fork-cost.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
echo "host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "scratch: $SCRATCH ($(stat -f -c %T "$SCRATCH"))"
commands=()
for n in $COUNTS; do
  commands+=(-n "untraced $n" "$HELPER fork-many $n")
  commands+=(-n "traced $n" "rm -rf $SCRATCH/t; $CLI record -e 'lc:*' -o $SCRATCH/t $HELPER fork-many $n")
  if [ -n "${HUSH_BENCH_OTHER_LIB:-}" ]; then
    commands+=(-n "other $n" "rm -rf $SCRATCH/o; LD_LIBRARY_PATH=$HUSH_BENCH_OTHER_LIB $CLI record -e 'lc:*' -o $SCRATCH/o $HELPER fork-many $n")
  fi
done
hyperfine --warmup 1 --runs "$RUNS" --export-json "$OUT" "${commands[@]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# The last traced run of each count is still in $SCRATCH/t only for the last count: check it.
last=${COUNTS##* }
events=$(babeltrace2 "$SCRATCH/t" | grep -c 'lc:hello.*gen = 1')
[ "$events" -eq "$last" ] || { echo "fork_cost.sh: $events child events in the trace, $last expected" >&2; exit 1; }
python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{'command':14} {'median s':>9} {'ms per child':>13}")
for r in d["results"]:
    n = int(r["command"].split()[-1])
    print(f"{r['command']:14} {r['median']:9.3f} {1000 * r['median'] / n:13.2f}")
PY
