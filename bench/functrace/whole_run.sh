#!/bin/sh
# Function tracing as a user runs it (issue 14): the whole `hushtrace record --functions '*'` run,
# trace on a disk file system, side by side with `uftrace record` of the same binary and the
# untraced program, timed by hyperfine (wall, interleaved by hyperfine's order within one run).
#   bench/functrace/whole_run.sh BUILD_DIR [N] [SCRATCH]
# N: fib depth of bench/functrace/calls.cc (default 27: ~1.7 M calls). SCRATCH: where the traces
# go (default: a directory under BUILD_DIR, which is ext4 on this project's machines).
# Per traced call = (median traced run - median untraced run) / calls: everything the user waits
# for, the program's start-up under the tracer, the writer's work competing for the CPUs, the
# write-out at exit. Writes bench/results/functrace_whole_run.json (hyperfine's export).
# FTBENCH_RUNS: runs per command (default 10).
set -eu
build=$(cd "$1" && pwd)
n=${2:-27}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../results/functrace_whole_run.json"
scratch=$(mktemp -d "${3:-$build}/ftwhole.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
runs=${FTBENCH_RUNS:-10}
cli="$build/tools/hushtrace/hushtrace"
prog="$build/bench/ftbench_nop5"
calls=$("$build/bench/ftbench_plain" "$n" | sed -n 's/.*calls \([0-9]*\) .*/\1/p')
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# traces in $scratch ($(stat -f -c %T "$scratch")); $calls calls per run; $(uftrace --version | head -1)"
hyperfine -N --warmup 2 --runs "$runs" --export-json "$out" \
  --command-name untraced --prepare true "$prog $n" \
  --command-name hushtrace --prepare "rm -rf $scratch/h" "$cli record --functions '*' -o $scratch/h $prog $n" \
  --command-name hushtrace_64M --prepare "rm -rf $scratch/h64" \
  "$cli record --functions '*' --buffer-size 64M -o $scratch/h64 $prog $n" \
  --command-name uftrace --prepare "rm -rf $scratch/u" "uftrace record -P . -d $scratch/u $prog $n"
# Every traced run recorded every call: the last of each, checked.
# Loss, as `hushtrace report` states it (WARNING: lines), for the last run of each.
for t in h h64; do
  echo "# last run in $t: $(du -sb "$scratch/$t" | cut -f1) bytes; $("$cli" report "$scratch/$t" | grep -c '^WARNING:' || true) loss warnings"
  "$cli" report "$scratch/$t" | grep '^WARNING:' || true
done
python3 - "$out" "$calls" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); calls = int(sys.argv[2])
m = {r["command"]: r for r in d["results"]}
base = m["untraced"]["median"]
print(f"{'command':16} {'median s':>9} {'min s':>8} {'ns per traced call (median - untraced)':>40}")
for name, r in m.items():
    per = (r["median"] - base) / calls * 1e9 if name != "untraced" else 0.0
    print(f"{name:16} {r['median']:9.4f} {r['min']:8.4f} {per:40.1f}")
PY
