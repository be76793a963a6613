#!/usr/bin/env bash
# Per-exec cost of hushtrace as a user pays it (issue 14): an otherwise empty program
# (bench/startup/hush_main.cc: 100 events at the top of main) without a session, and with an
# active session whose trace goes to ext4 (a directory under the build tree) and to tmpfs
# (/dev/shm), against the same program unlinked and linked with an empty shared library, all
# interleaved in one startup_runner run. Checks that each kept trace holds the 100 events
# (babeltrace2) and prints the paired medians. Writes bench/results/startup_cost.json.
#
#   bench/startup_cost.sh                 # build dir: $HUSH_BENCH_BUILD_DIR, default build/
#   HUSH_BENCH_STARTUP_RUNS=300 bench/startup_cost.sh
#
# Knobs: HUSH_BENCH_STARTUP_RUNS (default 300), HUSH_BENCH_KEEP_TRACES=1 (every run's trace kept
# until the end, as a user's are, instead of removed after its run: see startup_runner.cc), HUSH_BENCH_EXT4_DIR (scratch on a disk file
# system, default BUILD_DIR), HUSH_BENCH_TMPFS_DIR (default /dev/shm), HUSH_BENCH_OTHER_LIB (a
# directory holding another libhushtrace.so.0.1, e.g. an older build: adds its two session
# variants, same executable, LD_LIBRARY_PATH=DIR, to the same run).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${HUSH_BENCH_BUILD_DIR:-build}
RUNS=${HUSH_BENCH_STARTUP_RUNS:-300}
BIN=$ROOT/$BUILD_DIR/bench
OUT=$ROOT/bench/results/startup_cost.json
cmake --build "$BUILD_DIR" -j2 --target startup_runner startup_plain startup_emptylib startup_hush >/dev/null
EXT4=$(mktemp -d "${HUSH_BENCH_EXT4_DIR:-$ROOT/$BUILD_DIR}/startup-cost.XXXXXX")
TMPFS=$(mktemp -d "${HUSH_BENCH_TMPFS_DIR:-/dev/shm}/startup-cost.XXXXXX")
trap 'rm -rf "$EXT4" "$TMPFS"' EXIT
echo "host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ext4 scratch: $EXT4 ($(stat -f -c %T "$EXT4")); tmpfs scratch: $TMPFS ($(stat -f -c %T "$TMPFS"))"
SESSION="HUSHTRACE_EVENTS=hushbench:*,HUSHTRACE_OUTPUT"
VARIANTS=("plain|$BIN/startup_plain" "emptylib|$BIN/startup_emptylib" "hush_nosession|$BIN/startup_hush"
  "hush_ext4|$BIN/startup_hush|$SESSION={OUT}" "hush_tmpfs|$BIN/startup_hush|$SESSION={OUT2}")
if [ -n "${HUSH_BENCH_OTHER_LIB:-}" ]; then
  VARIANTS+=("other_ext4|$BIN/startup_hush|$SESSION={OUT},LD_LIBRARY_PATH=$HUSH_BENCH_OTHER_LIB"
    "other_tmpfs|$BIN/startup_hush|$SESSION={OUT2},LD_LIBRARY_PATH=$HUSH_BENCH_OTHER_LIB")
fi
set -x
KEEP=(); [ "${HUSH_BENCH_KEEP_TRACES:-0}" = 1 ] && KEEP=(--keep-traces)
"$BIN/startup_runner" --runs "$RUNS" --warmup 10 --scratch "$EXT4" --scratch2 "$TMPFS" "${KEEP[@]}" --out "$OUT" "${VARIANTS[@]}"
set +x
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT" <<'PY'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
v = {x["name"]: x for x in d["variants"]}
for name in [n for n in v if n.endswith(("_ext4", "_tmpfs"))]:
    for path in v[name]["kept"]:
        out = subprocess.run(["babeltrace2", path], capture_output=True, text=True).stdout
        n = out.count("hushbench:startup")
        if n != 100:
            sys.exit(f"{path}: {n} events, 100 expected")
print(f"{d['runs']} interleaved runs per variant; microseconds; kept traces hold 100 events each")
print(f"{'variant':16} {'wall med':>9} {'CPU med':>9} {'vs plain':>9} {'vs emptylib':>11} {'vs nosession':>12} {'CPU vs nosession':>16}")
for name, x in v.items():
    p = x["paired_median_diff_us"]; c = x["paired_cpu_median_diff_us"]
    f = lambda k, t: f"{t.get(k, 0):.1f}" if k in t else ""
    print(f"{name:16} {x['median_us']:9.1f} {x['cpu_median_us']:9.1f} {f('plain', p):>9} {f('emptylib', p):>11} {f('hush_nosession', p):>12} {f('hush_nosession', c):>16}")
PY
