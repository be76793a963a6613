#!/bin/sh
# Function-tracing benchmarks, side by side in one run (docs/benchmarks.md, "Function tracing").
#   bench/functrace/run.sh BUILD_DIR [N]
# BUILD_DIR: a build with the ftbench_* programs, the shared runtime and tests/functrace/ft_many_fentry.
# N: fib depth of the workload (default 27: ~1.7 M calls). Writes bench/results/raw/functrace.txt.
# FTBENCH_BASELINE_LIB=/path/to/libhushtrace.so (another build, e.g. of an older commit): its
# traced figures are measured in the same run, interleaved, as traced_baseline_*. Its callgrind
# count needs a runtime that finds the main program when started through ld.so (discover.cc,
# MainProgramPath; older ones trace nothing there and count as untraced).
# FTBENCH_REPS: runs per median (default 5).
set -eu
build=$(cd "$1" && pwd)
n=${2:-27}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../results/raw/functrace.txt"
lib="$build/src/libhushtrace.so"
base=${HUSHBENCH_TMP:-/dev/shm}
[ -w "$base" ] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/ftbench.XXXXXX")  # traces in memory: no file-system cost
trap 'rm -rf "$tmp"' EXIT
reps=5

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# ns_per_call of one run of "$@"
nspc() { "$@" | sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p'; }
calls() { "$@" | sed -n 's/.*calls \([0-9]*\) .*/\1/p'; }

{
echo "# bench/functrace/run.sh $build $n   ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg))"
# The figures depend on the host CPU (rdtsc alone differs by microarchitecture): say which.
echo "# cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), family $(sed -n 's/^cpu family[^:]*: //p' /proc/cpuinfo | head -1) model $(sed -n 's/^model[^:]*: \([0-9]*\)$/\1/p' /proc/cpuinfo | head -1), $(nproc) CPUs"
ncalls=$(calls "$build/bench/ftbench_plain" "$n")
echo "calls per run: $ncalls"
reps=${FTBENCH_REPS:-$reps}

# Untraced variants: name|binary|env. split_conv: gcc's five 1-byte NOPs after the runtime turned
# them into one 5-byte NOP (tracing started with the program, then stopped before the workload:
# bench/functrace/calls.cc, FTBENCH_STOP_FUNCTIONS).
variants="plain|ftbench_plain| nop5|ftbench_nop5| split|ftbench_split| split_conv|ftbench_split|conv"
[ -x "$build/bench/ftbench_clang_plain" ] &&
  variants="$variants clang_plain|ftbench_clang_plain| clang_nop5|ftbench_clang_nop5|"
run_variant() {  # name binary env args...
  v=$1 bin=$2 e=$3
  shift 3
  if [ "$e" = conv ]; then
    rm -rf "$tmp/conv"
    env FTBENCH_STOP_FUNCTIONS=1 LD_PRELOAD="$lib" HUSHTRACE_FUNCTIONS='*' HUSHTRACE_OUTPUT="$tmp/conv" \
      "$@" "$build/bench/$bin" "$n"
  else
    "$@" "$build/bench/$bin" "$n"
  fi
}
echo "## untraced: ns per call (median of $reps, interleaved)"
for x in $variants; do : > "$tmp/t.${x%%|*}"; done
i=0
while [ $i -lt $reps ]; do
  for x in $variants; do
    IFS='|' read -r v bin e <<EOF2
$x
EOF2
    run_variant "$v" "$bin" "$e" | sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/t.$v"
  done
  i=$((i + 1))
done
for x in $variants; do v=${x%%|*}; echo "untraced_$v $(median < "$tmp/t.$v")"; done

echo "## untraced: instructions per call in main() (callgrind, fib depth 20)"
# Started through ld.so so that the preloaded runtime reaches the program and not valgrind's
# launcher; --smc-check=all: valgrind re-translates code the runtime patches.
cg() {  # out-file binary env
  if [ "$3" = conv ]; then
    rm -rf "$tmp/conv"
    env FTBENCH_STOP_FUNCTIONS=1 HUSHTRACE_FUNCTIONS='*' HUSHTRACE_OUTPUT="$tmp/conv" \
      valgrind --tool=callgrind --smc-check=all --toggle-collect=main \
      --callgrind-out-file="$1" /lib64/ld-linux-x86-64.so.2 --preload "$lib" "$build/bench/$2" 20
  else
    valgrind --tool=callgrind --toggle-collect=main \
      --callgrind-out-file="$1" "$build/bench/$2" 20
  fi
}
irpc() {  # callgrind out file, program output file
  c=$(sed -n 's/.*calls \([0-9]*\) .*/\1/p' "$2")
  ir=$(callgrind_annotate "$1" 2> /dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  echo "ir=$ir calls=$c ir_per_call=$(echo "$ir $c" | awk '{printf "%.3f", $1 / $2}')"
}
for x in $variants; do
  IFS='|' read -r v bin e <<EOF2
$x
EOF2
  cg "$tmp/cg.$v" "$bin" "$e" > "$tmp/cgout.$v" 2> /dev/null
  echo "callgrind_$v $(irpc "$tmp/cg.$v" "$tmp/cgout.$v")"
done

echo "## traced: instructions per traced call (callgrind, fib depth 20, nop5 binary, stream mode)"
cg_traced() {  # name runtime-library
  rm -rf "$tmp/cgt.$1"
  env HUSHTRACE_FUNCTIONS='*' HUSHTRACE_OUTPUT="$tmp/cgt.$1" HUSHTRACE_BUFFER_SIZE=64M \
    valgrind --tool=callgrind --smc-check=all --toggle-collect=main \
    --callgrind-out-file="$tmp/cg.$1" /lib64/ld-linux-x86-64.so.2 --preload "$2" \
    "$build/bench/ftbench_nop5" 20 > "$tmp/cgout.$1" 2> /dev/null
  echo "callgrind_$1 $(irpc "$tmp/cg.$1" "$tmp/cgout.$1")"
}
cg_traced traced "$lib"
callgrind_annotate "$tmp/cg.traced" 2> /dev/null |
  grep -E '^ *[0-9,]+ +\([ 0-9.]+%\) .*(trampoline|shadow\.cc|thread_writer|calls\.cc)' | head -8
[ -n "${FTBENCH_BASELINE_LIB:-}" ] && cg_traced traced_baseline "$FTBENCH_BASELINE_LIB"

echo "## clock floor: a traced call reads the cycle counter twice (entry, exit)"
"$build/bench/ftbench_rdtsc"
"$build/bench/ftbench_rdtsc"

echo "## fully traced, nop5 binary: ns per call (median of $reps) and bytes per call"
: > "$tmp/hush"; : > "$tmp/uft"; : > "$tmp/hushmin"; : > "$tmp/uftmin"; : > "$tmp/hushfl"
: > "$tmp/base"; : > "$tmp/basefl"
i=0
while [ $i -lt $reps ]; do
  rm -rf "$tmp/h" "$tmp/u" "$tmp/hm" "$tmp/um" "$tmp/hf"
  env LD_PRELOAD="$lib" HUSHTRACE_FUNCTIONS='*' HUSHTRACE_OUTPUT="$tmp/h" HUSHTRACE_BUFFER_SIZE=64M \
    "$build/bench/ftbench_nop5" "$n" | sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/hush"
  uftrace record -P . -d "$tmp/u" "$build/bench/ftbench_nop5" "$n" 2> /dev/null |
    sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/uft"
  env LD_PRELOAD="$lib" HUSHTRACE_FUNCTIONS='*' HUSHTRACE_MIN_DURATION=1000 HUSHTRACE_OUTPUT="$tmp/hm" \
    "$build/bench/ftbench_nop5" "$n" | sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/hushmin"
  # Flight mode, 4M ring: the same work without the writer thread and without first-touch page
  # faults (the ring is reused): what a traced call costs the calling thread itself.
  env LD_PRELOAD="$lib" HUSHTRACE_FUNCTIONS='*' HUSHTRACE_MODE=flight HUSHTRACE_BUFFER_SIZE=4M \
    HUSHTRACE_OUTPUT="$tmp/hf" "$build/bench/ftbench_nop5" "$n" |
    sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/hushfl"
  uftrace record -P . -t 1us -d "$tmp/um" "$build/bench/ftbench_nop5" "$n" 2> /dev/null |
    sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/uftmin"
  if [ -n "${FTBENCH_BASELINE_LIB:-}" ]; then
    rm -rf "$tmp/b" "$tmp/bf"
    env LD_PRELOAD="$FTBENCH_BASELINE_LIB" HUSHTRACE_FUNCTIONS='*' HUSHTRACE_OUTPUT="$tmp/b" \
      HUSHTRACE_BUFFER_SIZE=64M "$build/bench/ftbench_nop5" "$n" |
      sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/base"
    env LD_PRELOAD="$FTBENCH_BASELINE_LIB" HUSHTRACE_FUNCTIONS='*' HUSHTRACE_MODE=flight \
      HUSHTRACE_BUFFER_SIZE=4M HUSHTRACE_OUTPUT="$tmp/bf" "$build/bench/ftbench_nop5" "$n" |
      sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' >> "$tmp/basefl"
  fi
  i=$((i + 1))
done
echo "traced_hushtrace $(median < "$tmp/hush")"
echo "traced_uftrace $(median < "$tmp/uft")"
echo "traced_hushtrace_flight4M $(median < "$tmp/hushfl")"
echo "traced_hushtrace_min1us $(median < "$tmp/hushmin")"
echo "traced_uftrace_t1us $(median < "$tmp/uftmin")"
# What tracing adds to a call: traced minus the untraced run of the same binary (nop5).
un=$(median < "$tmp/t.nop5")
for x in hush:hushtrace hushfl:hushtrace_flight4M hushmin:hushtrace_min1us uft:uftrace uftmin:uftrace_t1us; do
  m=$(median < "$tmp/${x%%:*}")
  [ -n "$m" ] && echo "added_${x#*:} $(echo "$m $un" | awk '{printf "%.3f", $1 - $2}')"
done
if [ -n "${FTBENCH_BASELINE_LIB:-}" ]; then
  echo "traced_baseline $(median < "$tmp/base")"
  echo "traced_baseline_flight4M $(median < "$tmp/basefl")"
fi
hb=$(cat "$tmp"/h/stream_* | wc -c)
ub=$(cat "$tmp"/u/*.dat | wc -c)
echo "bytes_hushtrace $hb per_call $(echo "$hb $ncalls" | awk '{printf "%.2f", $1 / $2}') (stream files)"
echo "bytes_uftrace $ub per_call $(echo "$ub $ncalls" | awk '{printf "%.2f", $1 / $2}') (*.dat files)"

echo "## patching all 10,000 functions of ft_many_fentry in one batch while 2 threads call them"
rm -rf "$tmp/p"
env HUSHTRACE_EVENTS='func:*' HUSHTRACE_MODE=flight HUSHTRACE_OUTPUT="$tmp/p" \
  "$build/tests/functrace/ft_many_fentry" patch 21
} | tee "$out"
