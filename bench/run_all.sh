#!/usr/bin/env bash
# Runs every hushtrace benchmark side by side with its LTTng-UST peer, writes
# bench/results/latest.json (+ raw files in bench/results/raw/) and regenerates the tables of
# docs/benchmarks.md. `make bench` calls it. Takes about 3-5 minutes on the 2-CPU machine.
#
#   bench/run_all.sh                      # build dir: $HUSH_BENCH_BUILD_DIR, default build/
#   HUSH_BENCH_BUILD_DIR=build-bench bench/run_all.sh
#
# Knobs (environment): HUSH_BENCH_ROUNDS (Google Benchmark rounds per tracer, default 3),
# HUSH_BENCH_REPETITIONS (repetitions per round, default 3), HUSH_BENCH_MIN_TIME (seconds per
# repetition, default 0.1), HUSH_BENCH_STARTUP_RUNS (default 400),
# HUSHBENCH_TMP (scratch directory for traces, default /dev/shm), HUSH_BENCH_EXPORT=0 (skip the
# reader/export benchmark, bench/export_bench.sh, which runs last and writes its own results).
#
# LTTng: a root lttng-sessiond is started if none runs (and stopped again at the end); every
# LTTng figure comes from a real session (lttng create/enable-event/start) and the script fails
# if babeltrace2 finds no event in that session's trace.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${HUSH_BENCH_BUILD_DIR:-build}
ROUNDS=${HUSH_BENCH_ROUNDS:-3}
REPETITIONS=${HUSH_BENCH_REPETITIONS:-3}
MIN_TIME=${HUSH_BENCH_MIN_TIME:-0.1}
STARTUP_RUNS=${HUSH_BENCH_STARTUP_RUNS:-400}
N1=100000
N2=1100000
RESULTS=$ROOT/bench/results
RAW=$RESULTS/raw
BIN=$ROOT/$BUILD_DIR/bench
START_TIME=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

log() { printf '\n=== [%s, load %s] %s\n' "$(date +%T)" "$(cut -d' ' -f1 /proc/loadavg)" "$*" >&2; }
die() { printf '\nrun_all.sh: FAILED: %s\n' "$*" >&2; exit 1; }

# --- scratch, cleanup ------------------------------------------------------------------------
BASE=${HUSHBENCH_TMP:-/dev/shm}
[ -w "$BASE" ] || BASE=${TMPDIR:-/tmp}
SCRATCH=$(mktemp -d "$BASE/hushbench-run.XXXXXX")
export HUSHBENCH_TMP=$SCRATCH
SESSIONS=()
STARTED_SESSIOND_PID=""
cleanup() {
  local s
  for s in "${SESSIONS[@]}"; do lttng destroy "$s" >/dev/null 2>&1 || true; done
  if [ -n "$STARTED_SESSIOND_PID" ]; then kill "$STARTED_SESSIOND_PID" 2>/dev/null || true; fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# --- build -----------------------------------------------------------------------------------
log "build ($BUILD_DIR)"
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
TARGETS=(hushtrace_bench hush_insn_driver keys_enable_bench churn_bench startup_runner startup_plain startup_emptylib startup_hush
  control_bench bench_control_target)
HAVE_LTTNG=0
if command -v lttng >/dev/null && command -v lttng-sessiond >/dev/null &&
  pkg-config --exists lttng-ust 2>/dev/null; then
  HAVE_LTTNG=1
  TARGETS+=(lttng_bench lttng_insn_driver startup_lttng)
else
  echo "run_all.sh: LTTng-UST or lttng-tools missing (scripts/setup-peers.sh): peer figures skipped" >&2
fi
cmake --build "$BUILD_DIR" -j2 --target "${TARGETS[@]}"
for t in "${TARGETS[@]}"; do [ -x "$BIN/$t" ] || die "$BIN/$t was not built"; done
command -v babeltrace2 >/dev/null || die "babeltrace2 is needed to check the traces"
command -v valgrind >/dev/null || die "valgrind is needed for instruction counts"

rm -rf "$RAW"
mkdir -p "$RAW"
cp /dev/null "$RAW/commands.txt"
# Runs a command after recording it (the exact commands end up in latest.json and the docs).
run() {
  printf '%s\n' "$*" >>"$RAW/commands.txt"
  "$@"
}

# Counts the events of a CTF trace: prints "EVENTS DISCARDED_MESSAGES".
count_events() {
  babeltrace2 "$1" -c sink.utils.counter 2>/dev/null |
    awk '/Event messages/ {e=$1} /Discarded event messages/ {d=$1} END {printf "%d %d\n", e, d}'
}

# --- LTTng session helpers -------------------------------------------------------------------
lttng_up() {
  if ! lttng list >/dev/null 2>&1; then
    log "starting lttng-sessiond (root, --no-kernel)"
    lttng-sessiond --daemonize --no-kernel
    sleep 0.3
    STARTED_SESSIOND_PID=$(cat /var/run/lttng/lttng-sessiond.pid 2>/dev/null || true)
    lttng list >/dev/null 2>&1 || die "lttng-sessiond did not come up"
  fi
}
# lttng_session NAME DIR: create a session writing to DIR with 'hushbench:*' enabled, started.
# A channel of 8 x 4 MiB sub-buffers per CPU keeps the consumer daemon from dropping events.
lttng_session() {
  SESSIONS+=("$1")
  run lttng create "$1" --output="$2" >/dev/null
  run lttng enable-channel -u -s "$1" --subbuf-size=4M --num-subbuf=8 hushbench >/dev/null
  run lttng enable-event -u -s "$1" -c hushbench 'hushbench:*' >/dev/null
  run lttng start "$1" >/dev/null
}
lttng_stop() { run lttng stop "$1" >/dev/null; }
lttng_destroy() { lttng destroy "$1" >/dev/null; }

if [ "$HAVE_LTTNG" = 1 ]; then lttng_up; fi
echo "{}" >"$RAW/lttng_checks.json"
CHECKS=()

# --- 1. Google Benchmark, rounds alternating the two tracers (ABBA) ---------------------------
GB_ARGS=(--benchmark_min_time="$MIN_TIME" --benchmark_repetitions="$REPETITIONS" --benchmark_out_format=json)
hush_round() {
  log "Google Benchmark: hushtrace, round $1"
  run "$BIN/hushtrace_bench" "${GB_ARGS[@]}" --benchmark_out="$RAW/gbench_hushtrace_$1.json"
}
lttng_round() {
  [ "$HAVE_LTTNG" = 1 ] || return 0
  log "Google Benchmark: LTTng-UST, round $1"
  local s="hushbench-$$-gb$1" dir="$SCRATCH/lttng-gb$1"
  lttng_session "$s" "$dir"
  run env HUSHBENCH_REQUIRE_LTTNG=1 "$BIN/lttng_bench" "${GB_ARGS[@]}" \
    --benchmark_out="$RAW/gbench_lttng_$1.json"
  lttng_stop "$s"
  read -r ev disc < <(count_events "$dir")
  echo "LTTng recorded $ev events in round $1 (discarded-event messages: $disc)" >&2
  [ "$ev" -gt 0 ] || die "LTTng recorded no event during lttng_bench round $1: its figures are meaningless"
  CHECKS+=("\"gbench_round_$1\": {\"events_recorded\": $ev, \"discarded_event_messages\": $disc}")
  lttng_destroy "$s"
  rm -rf "$dir"
}
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then hush_round "$r"; lttng_round "$r"; else lttng_round "$r"; hush_round "$r"; fi
done

# --- 2. Instruction counts with callgrind -----------------------------------------------------
# disabled: hushtrace's static-key site (a 5-byte NOP); disabled_flag: the same tracepoint as a
# load-and-branch site (HUSH_NO_STATIC_KEYS); LTTng-UST has no such mode.
MODES=(empty disabled enabled2int string32 span)
HUSH_MODES=(empty disabled disabled_flag enabled2int string32 span)
callgrind_run() {  # TRACER MODE N [TRACE_DIR]
  local tracer=$1 mode=$2 n=$3 exe out smc=()
  exe=$BIN/hush_insn_driver
  [ "$tracer" = lttng ] && exe=$BIN/lttng_insn_driver
  # hushtrace patches its own code when a session enables events: valgrind must re-translate code
  # that changes in a file mapping (its default only checks the stack and anonymous mappings).
  [ "$tracer" = hush ] && smc=(--smc-check=all)
  out=$SCRATCH/cg.$tracer.$mode.$n.out
  run valgrind --tool=callgrind "${smc[@]}" --toggle-collect="bench_loop_$mode" --callgrind-out-file="$out" \
    "$exe" "$mode" "$n" ${4:+"$4"} >"$SCRATCH/cg.$tracer.$mode.$n.json" 2>"$SCRATCH/cg.$tracer.$mode.$n.log" ||
    { cat "$SCRATCH/cg.$tracer.$mode.$n.log" >&2; die "callgrind run $tracer $mode $n failed"; }
  printf '%s %s %s %s\n' "$tracer" "$mode" "$n" "$(awk '/^summary:/ {print $2}' "$out")" >>"$RAW/callgrind.txt"
}
: >"$RAW/callgrind.txt"
log "callgrind: hushtrace"
for mode in "${HUSH_MODES[@]}"; do
  for n in $N1 $N2; do
    callgrind_run hush "$mode" "$n" "$SCRATCH/cgtrace.$mode.$n"
    # An enabled loop that recorded nothing ran unpatched NOPs: its count would be meaningless.
    if grep -q '"events_written":0[,}]' "$SCRATCH/cg.hush.$mode.$n.json"; then
      die "hush_insn_driver $mode recorded no event under callgrind"
    fi
  done
done
if [ "$HAVE_LTTNG" = 1 ]; then
  log "callgrind: LTTng-UST"
  s="hushbench-$$-cg"
  lttng_session "$s" "$SCRATCH/lttng-cg"
  expected=0
  for mode in "${MODES[@]}"; do
    for n in $N1 $N2; do
      callgrind_run lttng "$mode" "$n"
      e=$(sed -n 's/.*"events_expected":\([0-9]*\).*/\1/p' "$SCRATCH/cg.lttng.$mode.$n.json")
      expected=$((expected + e))
    done
  done
  lttng_stop "$s"
  read -r ev disc < <(count_events "$SCRATCH/lttng-cg")
  echo "LTTng recorded $ev of $expected events under callgrind (discarded-event messages: $disc)" >&2
  [ "$ev" -gt 0 ] || die "LTTng recorded no event during the callgrind runs"
  CHECKS+=("\"callgrind\": {\"events_recorded\": $ev, \"events_expected\": $expected, \"discarded_event_messages\": $disc}")
  lttng_destroy "$s"
fi
# Where the instructions of one enabled two-int32 event go (N2 run; divide by N2 + 10000 warm-up).
callgrind_annotate --inclusive=no "$SCRATCH/cg.hush.enabled2int.$N2.out" 2>/dev/null | head -60 \
  >"$RAW/callgrind_annotate_hush_enabled2int.txt" || true
callgrind_annotate --auto=yes --inclusive=no "$SCRATCH/cg.hush.enabled2int.$N2.out" 2>/dev/null \
  >"$SCRATCH/annotate_hush_full.txt" || true
python3 "$ROOT/bench/report.py" annotate-lines "$SCRATCH/annotate_hush_full.txt" $((N2 + 10000)) \
  >"$RAW/callgrind_lines_hush_enabled2int.txt" || true
python3 "$ROOT/bench/report.py" annotate-functions "$RAW/callgrind_annotate_hush_enabled2int.txt" \
  $((N2 + 10000)) >"$RAW/callgrind_functions_hush_enabled2int.txt" || true
if [ "$HAVE_LTTNG" = 1 ]; then
  callgrind_annotate --inclusive=no "$SCRATCH/cg.lttng.enabled2int.$N2.out" 2>/dev/null | head -60 \
    >"$RAW/callgrind_annotate_lttng_enabled2int.txt" || true
  python3 "$ROOT/bench/report.py" annotate-functions "$RAW/callgrind_annotate_lttng_enabled2int.txt" \
    $((N2 + 10000)) >"$RAW/callgrind_functions_lttng_enabled2int.txt" || true
fi
rm -f "$SCRATCH"/cg.*.out
rm -rf "$SCRATCH"/cgtrace.*

# --- 3. Bytes per event on disk (2 x int32), N1 and N2 events + warm-up -----------------------
log "bytes per event"
: >"$RAW/sizes.txt"
for n in $N1 $N2; do
  dir=$SCRATCH/size-hush.$n
  run "$BIN/hush_insn_driver" enabled2int "$n" "$dir" >"$RAW/size_hush_$n.json"
  read -r ev disc < <(count_events "$dir")
  # The trace proper: metadata + stream files. The ring files (.ring_N: live ring buffers, kept
  # for crash recovery) are reported apart.
  trace_bytes=$(find "$dir" -maxdepth 1 -type f ! -name '.ring_*' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
  # (The rings are removed after a clean stop: then both are 0; `|| true` keeps pipefail quiet.)
  ring_apparent=$( (find "$dir" -maxdepth 1 -type f -name '.ring_*' -printf '%s\n' 2>/dev/null || true) | awk '{s+=$1} END {print s+0}')
  ring_allocated=$( (find "$dir" -maxdepth 1 -type f -name '.ring_*' -printf '%b\n' 2>/dev/null || true) | awk '{s+=$1*512} END {print s+0}')
  echo "hush $n $ev $disc $trace_bytes $ring_apparent $ring_allocated" >>"$RAW/sizes.txt"
  rm -rf "$dir"
  if [ "$HAVE_LTTNG" = 1 ]; then
    s="hushbench-$$-size$n"
    dir=$SCRATCH/size-lttng.$n
    lttng_session "$s" "$dir"
    run "$BIN/lttng_insn_driver" enabled2int "$n" >"$RAW/size_lttng_$n.json"
    lttng_stop "$s"
    read -r ev disc < <(count_events "$dir")
    [ "$ev" -gt 0 ] || die "LTTng recorded no event in the size run"
    trace_bytes=$(find "$dir" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')
    stream_bytes=$(find "$dir" -type f ! -name metadata ! -path '*/index/*' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
    echo "lttng $n $ev $disc $trace_bytes $stream_bytes 0" >>"$RAW/sizes.txt"
    lttng_destroy "$s"
    rm -rf "$dir"
  fi
done

# --- 3b. Static keys: enabling / disabling an event with N patched sites -----------------------
log "static keys: enable/disable time for 1, 100 and 10,000 sites"
run "$BIN/keys_enable_bench" 30 >"$RAW/keys_enable.jsonl" || die "keys_enable_bench failed"
log "probe churn: 10,000 toggles while 2 threads emit"
# Paired with a control run whose toggling thread wakes at the same pace but toggles nothing.
for r in $(seq "$ROUNDS"); do
  run "$BIN/churn_bench" --toggles 10000 --dry 1 >>"$RAW/churn.jsonl" || die "churn_bench failed"
  run "$BIN/churn_bench" --toggles 10000 >>"$RAW/churn.jsonl" || die "churn_bench failed"
  run "$BIN/churn_bench" --toggles 10000 --wait 1 >>"$RAW/churn.jsonl" || die "churn_bench failed"
done

# --- 4. Start-up ----------------------------------------------------------------------------
log "start-up, phase A: no LTTng session exists"
VARIANTS=(
  "plain|$BIN/startup_plain"
  "emptylib|$BIN/startup_emptylib"
  "hush_nosession|$BIN/startup_hush"
  "hush_session|$BIN/startup_hush|HUSHTRACE_EVENTS=hushbench:*,HUSHTRACE_OUTPUT={OUT}"
)
[ "$HAVE_LTTNG" = 1 ] && VARIANTS+=("lttng_nosession|$BIN/startup_lttng")
run "$BIN/startup_runner" --runs "$STARTUP_RUNS" --scratch "$SCRATCH/startup-a" \
  --out "$RAW/startup_a.json" "${VARIANTS[@]}"
: >"$RAW/startup_checks.txt"
for d in $(python3 -c 'import json,sys; [print(p) for v in json.load(open(sys.argv[1]))["variants"] for p in v["kept"]]' "$RAW/startup_a.json"); do
  read -r ev disc < <(count_events "$d")
  echo "hush_session $(basename "$d") $ev" >>"$RAW/startup_checks.txt"
  [ "$ev" = 100 ] || die "hushtrace start-up trace $d has $ev events, expected 100"
done
if [ "$HAVE_LTTNG" = 1 ]; then
  log "start-up, phase B: an LTTng session with 'hushbench:*' enabled is active"
  s="hushbench-$$-startup"
  lttng_session "$s" "$SCRATCH/lttng-startup"
  run "$BIN/startup_runner" --runs "$STARTUP_RUNS" --scratch "$SCRATCH/startup-b" \
    --out "$RAW/startup_b.json" "plain|$BIN/startup_plain" "emptylib|$BIN/startup_emptylib" \
    "lttng_session|$BIN/startup_lttng"
  lttng_stop "$s"
  read -r ev disc < <(count_events "$SCRATCH/lttng-startup")
  expected=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(100*(d["runs"]+d["warmup"]))' "$RAW/startup_b.json")
  echo "lttng_session all $ev $expected" >>"$RAW/startup_checks.txt"
  echo "LTTng recorded $ev of $expected start-up events" >&2
  [ "$ev" -gt 0 ] || die "LTTng recorded no start-up event"
  lttng_destroy "$s"
fi

# --- Live control (docs/benchmarks.md, "Live control") -------------------------------------------
log "live control: start to first event, stop/snapshot round trips"
run "$BIN/control_bench" --target "$BIN/bench_control_target" --runs 30 --scratch "$SCRATCH/control" \
  --out "$RAW/control_bench.json" || die "control_bench failed"

# --- 5. Report ------------------------------------------------------------------------------
printf '{%s}\n' "$(IFS=,; echo "${CHECKS[*]}")" >"$RAW/lttng_checks.json"
END_TIME=$(date +%s)
log "report"
python3 "$ROOT/bench/report.py" build \
  --raw "$RAW" --out "$RESULTS/latest.json" --doc "$ROOT/docs/benchmarks.md" \
  --build-dir "$BUILD_DIR" --n1 $N1 --n2 $N2 --elapsed $((END_TIME - START_TIME)) \
  --min-time "$MIN_TIME" --rounds "$ROUNDS" --repetitions "$REPETITIONS" \
  --load-start "$LOAD_START" --load-end "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "run_all.sh: done in $((END_TIME - START_TIME)) s; results in bench/results/latest.json, tables in docs/benchmarks.md" >&2

# --- 6. Reading and exporting traces: bench/export_bench.sh (own results file) --------------
if [ "${HUSH_BENCH_EXPORT:-1}" = 1 ]; then
  log "reader and export throughput vs babeltrace2 (bench/export_bench.sh; HUSH_BENCH_EXPORT=0 skips)"
  HUSH_BENCH_BUILD_DIR=$BUILD_DIR "$ROOT/bench/export_bench.sh" || die "bench/export_bench.sh failed"
fi

# --- 7. SQL: SQLite export vs Perfetto, shipping to ClickHouse: bench/sql_bench.sh (own results) --
if [ "${HUSH_BENCH_SQL:-1}" = 1 ]; then
  log "SQLite export and ClickHouse shipping (bench/sql_bench.sh; HUSH_BENCH_SQL=0 skips)"
  HUSH_BENCH_BUILD_DIR=$BUILD_DIR "$ROOT/bench/sql_bench.sh" || die "bench/sql_bench.sh failed"
fi
