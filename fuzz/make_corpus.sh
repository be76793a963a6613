#!/usr/bin/env bash
# Seed corpora for the fuzz targets, made from real traces recorded by the test programs of a
# normal build: fuzz/make_corpus.sh BUILD_DIR OUT_DIR. Writes one directory per target in OUT_DIR.
set -euo pipefail
build=$(realpath "$1")
out=$2
sep=$'\n--8<--\n'
child=$build/tests/runtime/hush_child
victim=$build/tests/recover/recover_victim
hush=$build/tools/hushtrace/hushtrace
for f in "$child" "$victim" "$hush"; do
  [[ -x $f ]] || { echo "make_corpus: $f missing: build $build first" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"/{metadata,trace,recover,cli,filter,session_filter,control_message,control_server}

# Clean traces: stream and flight mode, one and two threads, plus the demo's spans and counters.
record() {  # NAME ENV... -- ARGS...
  local name=$1; shift
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" HUSHTRACE_OUTPUT="$work/$name" "$@" > /dev/null
}
record stream HUSHTRACE_EVENTS='child:*' -- "$child" emit 40
record flight HUSHTRACE_EVENTS='child:*' HUSHTRACE_MODE=flight HUSHTRACE_BUFFER_SIZE=16k -- \
  "$child" emit 3000
record threads HUSHTRACE_EVENTS='child:*' -- "$child" threads 2 20
if [[ -x $build/examples/demo_server ]]; then
  "$hush" record -o "$work/demo" -e 'demo:*' -- "$build/examples/demo_server" > /dev/null 2>&1 || true
fi
for t in "$work"/*/; do
  name=$(basename "$t")
  [[ -f $t/metadata ]] || continue
  cp "$t/metadata" "$out/metadata/$name"
  {
    cat "$t/metadata"
    for s in "$t"/stream_0 "$t"/stream_1; do
      [[ -f $s ]] || continue
      printf '%s' "$sep"
      head -c 65536 "$s"  # keep seeds small: a truncated stream is a fine seed too
    done
  } > "$out/trace/$name"
done

# Crashed writers: ring files left behind by SIGKILL and by a SIGSEGV inside an event.
crash() {  # NAME MODE CRASH
  local dir=$work/crash-$1
  (HUSHTRACE_EVENTS='recover:*' HUSHTRACE_OUTPUT=$dir HUSHTRACE_MODE=$2 HUSHTRACE_BUFFER_SIZE=16k \
    "$victim" 1 500 "$3") > /dev/null 2>&1 || true
  [[ -f $dir/.ring_0 ]] || { echo "make_corpus: no ring file in $dir" >&2; return; }
  { cat "$dir/metadata"; printf '%s' "$sep"; cat "$dir/.ring_0"; printf '%s' "$sep"
    [[ -f $dir/stream_0 ]] && cat "$dir/stream_0"; } > "$out/recover/$1"
}
{
  crash stream-kill stream sigkill
  crash flight-kill flight sigkill
  crash stream-segv stream segv-in-event
} 2> /dev/null  # the shell's "Killed" notices

# CLI arguments: first byte picks dump/report/list/recover/export/hist (fuzz_cli.cc), then
# NUL-separated args.
printf '\x00t\x00-e\x00child:*\x00--since\x001ms' > "$out/cli/dump"
printf '\x00t\x00--filter\x00seq > 3' > "$out/cli/dump-filter"
printf '\x01t\x00--top\x005' > "$out/cli/report"
printf '\x02--help' > "$out/cli/list"
printf '\x03t\x00--dry-run\x00--keep-rings' > "$out/cli/recover"
printf '\x04t\x00--format\x00chrome\x00-o\x00out.json' > "$out/cli/export"
printf '\x05t\x00--event\x00child:seq\x00--field\x00seq' > "$out/cli/hist"
# Filter expressions (dump --filter): the grammar's constructs.
printf '%s' 'seq > 3 && thread != 0' > "$out/filter/compare"
printf '%s' '!(x == 1) || ($name ~ "child:*" && $tid >= 0x10)' > "$out/filter/nested"
printf '%s' 'f <= -2.5e3 || s == "a\"b" || level == kHigh || b == true' > "$out/filter/literals"
# Session filters (--filter): expression, then a payload of the fuzz target's fixed layout
# (i8 a, u16 b, i32 c, u64 d, f32 e, f64 f, str s, u8 x, bytes y, i64 z).
printf '%s' "a > 3 && (b != 7 || c <= -2) && !(z == 0x10)${sep}" > "$out/session_filter/ints"
printf 'e >= 1.5 || f < -2e10 || x == 1\n--8<--\n\x01\x02\x00\x03\x00\x00\x00' > "$out/session_filter/floats"
# Control requests (src/control/protocol.h).
printf 'start\nevents app:*\nmode flight\nbuffer-size 1M\noutput /tmp/t\n' > "$out/control_message/start"
printf 'status\n' > "$out/control_message/status"
ls "$out"/* | wc -l | xargs echo "make_corpus: seeds:"
# Control server requests (fuzz_control_server.cc: requests separated by the framing line; absolute
# outputs are moved into the target's scratch directory).
m='hushtrace-control 1'
printf '%s' "$m start
event fuzz:*
output /t
mode stream
buffer-size 64k
${sep}$m status
${sep}$m stop
" > "$out/control_server/stream"
printf '%s' "$m start
event fuzz:ping
output /t
mode flight
buffer-size 32k
snapshot-on fuzz:ping
snapshot-interval-ms 5
${sep}$m snapshot
${sep}$m status
${sep}$m stop
" > "$out/control_server/flight"
printf '%s' "$m start
event fuzz:*
output /t
filter n > 1 && text == \"fuzz\"
" > "$out/control_server/filter"
printf '%s' "$m start
event fuzz:*
output relative
${sep}$m start
event x:*
output /t
buffer-size 1x
${sep}$m bogus
" > "$out/control_server/refused"
