#!/usr/bin/env bash
# Reader and exporter throughput, peak memory and output size, side by side with babeltrace2, on
# generated traces of 1 M and 10 M events (docs/benchmarks.md, "Reading and exporting traces").
#
#   bench/export_bench.sh                       # build dir: $HUSH_BENCH_BUILD_DIR, default build/
#   HUSH_EXPORT_BENCH_SIZES="1000000" bench/export_bench.sh
#
# For each size: bench/trace_gen writes the trace (2 threads, 8-event request groups, no loss),
# then each command runs once under /usr/bin/time with its output to /dev/null:
#   hushtrace dump DIR, hushtrace export DIR --format perfetto|chrome -o /dev/null,
#   babeltrace2 DIR
# and prints wall time, CPU time (user + sys), events per second by both, and peak RSS. The
# exports are then written to files once more for bytes per event. Results go to stdout and to
# bench/results/export/export_bench.txt. Traces live in $HUSHBENCH_TMP (default /dev/shm).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${HUSH_BENCH_BUILD_DIR:-build}
SIZES=${HUSH_EXPORT_BENCH_SIZES:-"1000000 10000000"}
BASE=${HUSHBENCH_TMP:-/dev/shm}
[ -w "$BASE" ] || BASE=${TMPDIR:-/tmp}
SCRATCH=$(mktemp -d "$BASE/hush-export-bench.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
OUT_DIR=$ROOT/bench/results/export
mkdir -p "$OUT_DIR"
RESULT=$OUT_DIR/export_bench.txt

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD_DIR" -j2 --target hushtrace trace_gen >/dev/null
HUSH=$ROOT/$BUILD_DIR/tools/hushtrace/hushtrace
GEN=$ROOT/$BUILD_DIR/bench/trace_gen
command -v babeltrace2 >/dev/null || { echo "export_bench.sh: babeltrace2 is needed" >&2; exit 1; }

{
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# build: $BUILD_DIR ($(grep CMAKE_BUILD_TYPE: "$BUILD_DIR/CMakeCache.txt" | cut -d= -f2)), $(babeltrace2 --version | head -1)"
  printf '%-10s %-18s %8s %8s %13s %13s %10s\n' events command wall_s cpu_s "M_ev/s_wall" "M_ev/s_cpu" peak_rss_kb
} | tee "$RESULT"

for n in $SIZES; do
  trace=$SCRATCH/trace_$n
  "$GEN" "$trace" "$n" 2 >/dev/null
  events=$(HUSHTRACE_NO_PROGRESS=1 "$HUSH" report "$trace" | awk '$1 == "events" && $2 ~ /^[0-9]+$/ {print $2; exit}')
  [ "$events" = "$n" ] || { echo "export_bench.sh: the trace holds $events events, expected $n" >&2; exit 1; }
  run() {  # label command...
    local label=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$SCRATCH/time" "$@" >/dev/null 2>"$SCRATCH/err" ||
      { cat "$SCRATCH/err" >&2; exit 1; }
    read -r wall user sys rss <"$SCRATCH/time"
    awk -v n="$n" -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN {
      c = u + s; if (w < 0.005) w = 0.005; if (c < 0.005) c = 0.005;
      printf "%-10d %-18s %8.2f %8.2f %13.2f %13.2f %10d\n", n, l, w, c, n / w / 1e6, n / c / 1e6, r }'
  }
  {
    run dump "$HUSH" dump "$trace"
    run export-perfetto "$HUSH" export "$trace" --format perfetto -o /dev/null
    run export-chrome "$HUSH" export "$trace" --format chrome -o /dev/null
    run babeltrace2 babeltrace2 "$trace"
  } | tee -a "$RESULT"
  trace_bytes=$(du -bc "$trace"/metadata "$trace"/stream_* | tail -1 | cut -f1)
  "$HUSH" export "$trace" --format perfetto -o "$SCRATCH/out.pftrace"
  "$HUSH" export "$trace" --format chrome -o "$SCRATCH/out.json"
  for f in "trace(CTF) $trace_bytes" "perfetto $(stat -c %s "$SCRATCH/out.pftrace")" "chrome-json $(stat -c %s "$SCRATCH/out.json")"; do
    set -- $f
    awk -v n="$n" -v l="$1" -v b="$2" 'BEGIN { printf "%-10d bytes/event %-12s %8.1f (%d bytes)\n", n, l, b / n, b }'
  done | tee -a "$RESULT"
  rm -rf "$trace" "$SCRATCH/out.pftrace" "$SCRATCH/out.json"
done
