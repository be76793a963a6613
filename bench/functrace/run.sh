#!/bin/sh
# Function-tracing benchmarks, side by side in one run (docs/benchmarks.md, "Function tracing").
#   bench/functrace/run.sh BUILD_DIR [N]
# BUILD_DIR: a build with the ftbench_* programs, the shared runtime and tests/functrace/ft_many_fentry.
# N: fib depth of the workload (default 27: ~1.7 M calls). Writes bench/results/raw/functrace.txt.
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
ncalls=$(calls "$build/bench/ftbench_plain" "$n")
echo "calls per run: $ncalls"

echo "## untraced: ns per call (median of $reps, interleaved)"
for v in plain nop5 split; do : > "$tmp/$v"; done
i=0
while [ $i -lt $reps ]; do
  for v in plain nop5 split; do nspc "$build/bench/ftbench_$v" "$n" >> "$tmp/$v"; done
  i=$((i + 1))
done
for v in plain nop5 split; do echo "untraced_$v $(median < "$tmp/$v")"; done

echo "## untraced: instructions in main() per call (callgrind, fib depth 20)"
for v in plain nop5 split; do
  valgrind --tool=callgrind --toggle-collect=main --callgrind-out-file="$tmp/cg.$v" \
    "$build/bench/ftbench_$v" 20 > "$tmp/cgout.$v" 2> /dev/null
  c=$(sed -n 's/.*calls \([0-9]*\) .*/\1/p' "$tmp/cgout.$v")
  ir=$(callgrind_annotate "$tmp/cg.$v" 2> /dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  echo "callgrind_$v ir=$ir calls=$c ir_per_call=$(echo "$ir $c" | awk '{printf "%.3f", $1 / $2}')"
done

echo "## clock floor: a traced call reads the cycle counter twice (entry, exit)"
"$build/bench/ftbench_rdtsc"
"$build/bench/ftbench_rdtsc"

echo "## fully traced, nop5 binary: ns per call (median of $reps) and bytes per call"
: > "$tmp/hush"; : > "$tmp/uft"; : > "$tmp/hushmin"; : > "$tmp/uftmin"; : > "$tmp/hushfl"
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
  i=$((i + 1))
done
echo "traced_hushtrace $(median < "$tmp/hush")"
echo "traced_uftrace $(median < "$tmp/uft")"
echo "traced_hushtrace_flight4M $(median < "$tmp/hushfl")"
echo "traced_hushtrace_min1us $(median < "$tmp/hushmin")"
echo "traced_uftrace_t1us $(median < "$tmp/uftmin")"
hb=$(cat "$tmp"/h/stream_* | wc -c)
ub=$(cat "$tmp"/u/*.dat | wc -c)
echo "bytes_hushtrace $hb per_call $(echo "$hb $ncalls" | awk '{printf "%.2f", $1 / $2}') (stream files)"
echo "bytes_uftrace $ub per_call $(echo "$ub $ncalls" | awk '{printf "%.2f", $1 / $2}') (*.dat files)"

echo "## patching all 10,000 functions of ft_many_fentry in one batch while 2 threads call them"
rm -rf "$tmp/p"
env HUSHTRACE_EVENTS='func:*' HUSHTRACE_MODE=flight HUSHTRACE_OUTPUT="$tmp/p" \
  "$build/tests/functrace/ft_many_fentry" patch 21
} | tee "$out"
