#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each on its corpus: fuzz/run.sh FUZZ_BUILD CORPUS SECONDS.
# The corpus directories grow with what libFuzzer finds. A crash, leak or timeout fails the run
# (its reproducer is left as CORPUS/finding-TARGET-crash-* or -leak-*/-timeout-*). Prints one
# summary line per target: executions and coverage reached.
set -euo pipefail
build=$(realpath "$1")
mkdir -p "$2"
corpus=$(realpath "$2")  # absolute: fuzz_cli runs in its scratch directory
seconds=$3
status=0
# Scratch files of the targets: tmpfs when there is one (on this VM's disk, creating and removing
# files per input made fuzz_trace ~100x slower).
if [[ -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi
for target in metadata trace recover cli filter session_filter control_message control_server; do
  exe=$build/fuzz/fuzz_$target
  mkdir -p "$corpus/$target"
  log=$(mktemp)
  # -close_fd_mask=1: the CLI target's stdout is noise. rss_limit/malloc_limit: an unbounded
  # allocation is a finding.
  if ! "$exe" "$corpus/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -malloc_limit_mb=1024 -close_fd_mask=1 -print_final_stats=1 \
       -artifact_prefix="$corpus/finding-$target-" > "$log" 2>&1; then
    status=1
    echo "fuzz_$target: FAILED"
    grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$log" | head -20 || true
  fi
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+).*/\1/')
  echo "fuzz_$target: ${seconds}s, ${execs:-?} executions, coverage ${cov:-?} edges, corpus $(ls "$corpus/$target" | wc -l) inputs"
  rm -f "$log"
done
exit $status
