#!/bin/sh
# What `hushtrace record` does after the program ends (completing the trace, counting losses,
# exiting), as the user waits for it: from the CLI's wait4() that reaps the program to its
# exit_group(), timestamped by strace tracing only those two system calls (--seccomp-bpf: the
# others run untraced). Interleaves CLIs round by round (another build's CLI: compare the two).
#   bench/record_post_phase.sh BUILD_DIR N ROUNDS CLI [CLI...]
# N: ftbench_nop5's depth (5: 20 calls, a 681-byte trace; 27: 1.7 M calls, 40 MB). Traces under
# BUILD_DIR (ext4 on this project's machines). Prints each CLI's sorted times (ms) and median.
set -eu
build=$(cd "$1" && pwd); n=$2; rounds=$3; shift 3
scratch=$(mktemp -d "$build/postphase.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); N=$n, $rounds rounds"
k=0
for cli in "$@"; do k=$((k + 1)); : > "$scratch/times.$k"; done
for r in $(seq "$rounds"); do
  k=0
  for cli in "$@"; do
    k=$((k + 1))
    rm -rf "$scratch/t"
    strace -qq --seccomp-bpf -ttt -e trace=wait4,exit_group -o "$scratch/strace" \
      "$cli" record --functions '*' -o "$scratch/t" "$build/bench/ftbench_nop5" "$n" >/dev/null 2>&1
    awk '/wait4\(/ {w = $1} /exit_group/ {e = $1} END {printf "%.3f\n", (e - w) * 1000}' \
      "$scratch/strace" >> "$scratch/times.$k"
  done
done
k=0
for cli in "$@"; do
  k=$((k + 1))
  sort -n "$scratch/times.$k" > "$scratch/sorted"
  median=$(awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}' "$scratch/sorted")
  echo "$cli: median $median ms; $(tr '\n' ' ' < "$scratch/sorted")"
done
