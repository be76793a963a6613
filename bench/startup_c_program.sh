#!/usr/bin/env bash
# What the runtime costs a C program per exec (issue 14): a program that does not link libstdc++
# (bench/functrace/calls.cc, built as ftbench_nop5: a C-style program with patchable entries, run
# with FTBENCH_N=5, 18 traced calls) with the shared runtime preloaded, as `hushtrace record
# --functions` runs every program, without a session and with the function-tracing session of
# `record --functions '*'` (the same HUSHTRACE_* variables record passes), against the program
# alone; all variants interleaved in one startup_runner run (paired medians over the same rounds).
# Checks each kept trace with `hushtrace report` (an exit for every entry, nothing lost). Writes
# bench/results/startup_c_program.json.
#
#   bench/startup_c_program.sh                 # build dir: $HUSH_BENCH_BUILD_DIR, default build/
#
# Knobs: HUSH_BENCH_STARTUP_RUNS (default 400), HUSH_BENCH_OTHER_LIB (another build's
# libhushtrace.so, a file: adds its variants, preloaded the same way, to the same run),
# HUSH_BENCH_TMPFS_DIR (where traces go, default /dev/shm).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${HUSH_BENCH_BUILD_DIR:-build}
RUNS=${HUSH_BENCH_STARTUP_RUNS:-400}
BIN=$ROOT/$BUILD_DIR/bench
LIB=$ROOT/$BUILD_DIR/src/libhushtrace.so
OUT=$ROOT/bench/results/startup_c_program.json
cmake --build "$BUILD_DIR" -j2 --target startup_runner ftbench_nop5 hushtrace_shared hushtrace >/dev/null
SCRATCH=$(mktemp -d "${HUSH_BENCH_TMPFS_DIR:-/dev/shm}/startup-c.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
echo "host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runtime: $LIB (needs: $(readelf -d "$LIB" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' '))"
RECORD="HUSHTRACE_EVENTS=func:*,HUSHTRACE_FUNCTIONS=*,HUSHTRACE_MODE=stream,HUSHTRACE_BUFFER_SIZE=16M,HUSHTRACE_FOLLOW=1,HUSHTRACE_OUTPUT={OUT}"
VARIANTS=("plain|$BIN/ftbench_nop5|FTBENCH_N=5"
  "runtime|$BIN/ftbench_nop5|FTBENCH_N=5,LD_PRELOAD=$LIB"
  "functions|$BIN/ftbench_nop5|FTBENCH_N=5,LD_PRELOAD=$LIB,$RECORD")
if [ -n "${HUSH_BENCH_OTHER_LIB:-}" ]; then
  VARIANTS+=("other_runtime|$BIN/ftbench_nop5|FTBENCH_N=5,LD_PRELOAD=$HUSH_BENCH_OTHER_LIB"
    "other_functions|$BIN/ftbench_nop5|FTBENCH_N=5,LD_PRELOAD=$HUSH_BENCH_OTHER_LIB,$RECORD")
fi
set -x
"$BIN/startup_runner" --runs "$RUNS" --warmup 10 --scratch "$SCRATCH" --out "$OUT" "${VARIANTS[@]}"
set +x
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT" "$ROOT/$BUILD_DIR/tools/hushtrace/hushtrace" <<'PY'
import json, re, subprocess, sys
d = json.load(open(sys.argv[1]))
v = {x["name"]: x for x in d["variants"]}
for name in [n for n in v if n.endswith("functions")]:
    for path in v[name]["kept"]:
        out = subprocess.run([sys.argv[2], "report", path], capture_output=True, text=True).stdout
        entries = re.search(r"func:entry\s+(\d+)", out)
        exits = re.search(r"func:exit\s+(\d+)", out)
        if not entries or not exits or entries.group(1) != exits.group(1) or "lost       none" not in out:
            sys.exit(f"{path}: not every call's entry and exit without loss:\n{out}")
print(f"{d['runs']} interleaved runs per variant; microseconds; kept traces hold every call's entry and exit")
print(f"{'variant':16} {'wall med':>9} {'CPU med':>9} {'vs plain':>9} {'CPU vs plain':>12}")
for name, x in v.items():
    p = x["paired_median_diff_us"]; c = x["paired_cpu_median_diff_us"]
    f = lambda t: f"{t['plain']:.1f}" if "plain" in t else ""
    print(f"{name:16} {x['median_us']:9.1f} {x['cpu_median_us']:9.1f} {f(p):>9} {f(c):>12}")
for a, b in (("runtime", "other_runtime"), ("functions", "other_functions")):
    if b in v:
        print(f"{a} - {b}: {v[a]['paired_median_diff_us'][b]:.1f} us paired (CPU {v[a]['paired_cpu_median_diff_us'][b]:.1f})")
PY
