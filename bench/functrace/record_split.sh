#!/bin/sh
# Where the time of a `hushtrace record --functions '*'` run goes (issue 14), in one hyperfine run,
# interleaved by hyperfine's order, traces on a disk file system:
#   bench/functrace/record_split.sh BUILD_DIR [N] [SCRATCH]
#
# Fixed costs, with a program that makes almost no call (ftbench_nop5 5: 20 calls):
#   untraced             the program alone
#   runtime_only         the program under the runtime as record starts it, without the CLI
#                        (env LD_PRELOAD=libhushtrace.so HUSHTRACE_FUNCTIONS='*' ...)
#   record               hushtrace record --functions '*' (CLI start-up, its check of the program
#                        and its libraries before the run, fork/exec, the trace's completion after)
#   cli_version          hushtrace --version: what any hushtrace command costs to start and exit
# The calls, with ftbench_nop5 N (default 27: ~1.7 M calls), by ring size: the footprint a ring
# touches for the first time is paid page by page (bench/host_costs.cc prices a first touch):
#   ring_16M             the default ring of a function session
#   ring_16M_blocking    the same with --blocking (no event can be lost: the writer waits)
#   ring_2M_blocking     a ring 8x smaller, --blocking (what a ring that stays small while the
#                        writer keeps up would touch)
#   ring_2M              the same without --blocking: what it loses (WARNING lines of the last run)
# Writes bench/results/functrace_record_split.json (hyperfine's export) and prints per-call
# figures: (median - median untraced) / calls.
# FTBENCH_RUNS: runs per command (default 15).
set -eu
name=ftsplit
. "$(dirname "$0")/whole_run_env.sh"
out="$here/../results/functrace_record_split.json"
runs=${FTBENCH_RUNS:-15}
lib="$build/src/libhushtrace.so"
small=$("$build/bench/ftbench_plain" 5 | sed -n 's/.*calls \([0-9]*\) .*/\1/p')
echo "# traces in $scratch ($(stat -f -c %T "$scratch")); $calls calls per run (N=$n), $small (N=5)"
rec="$cli record --functions '*' -o $scratch/t"
hyperfine -N --warmup 2 --runs "$runs" --export-json "$out" --prepare "rm -rf $scratch/t" \
  --command-name untraced_small "$prog 5" \
  --command-name runtime_only_small \
  "env LD_PRELOAD=$lib HUSHTRACE_FUNCTIONS=* HUSHTRACE_BUFFER_SIZE=16M HUSHTRACE_OUTPUT=$scratch/t $prog 5" \
  --command-name record_small "$rec $prog 5" \
  --command-name cli_version "$cli --version" \
  --command-name untraced "$prog $n" \
  --command-name ring_16M "$rec $prog $n" \
  --command-name ring_16M_blocking "$rec --blocking $prog $n" \
  --command-name ring_2M_blocking "$rec --buffer-size 2M --blocking $prog $n" \
  --command-name ring_2M "$rec --buffer-size 2M $prog $n"
echo "# last ring_2M run: $("$cli" report "$scratch/t" | grep -c '^WARNING:' || true) loss warnings"
"$cli" report "$scratch/t" | grep '^WARNING:' | head -3 || true
python3 - "$out" "$calls" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); calls = int(sys.argv[2])
m = {r["command"]: r for r in d["results"]}
ms = lambda name: m[name]["median"] * 1e3
cpu = lambda name: (m[name]["user"] + m[name]["system"]) * 1e3  # means
print(f"{'command':22} {'median ms':>10} {'min ms':>8} {'CPU ms (mean)':>14}")
for name, r in m.items():
    print(f"{name:22} {r['median']*1e3:10.2f} {r['min']*1e3:8.2f} {cpu(name):14.2f}")
print(f"fixed: runtime {ms('runtime_only_small') - ms('untraced_small'):.2f} ms, "
      f"CLI {ms('record_small') - ms('runtime_only_small'):.2f} ms over the runtime alone "
      f"(of which {ms('cli_version') - ms('untraced_small'):.2f} ms: --version over the program)")
for name in ("ring_16M", "ring_16M_blocking", "ring_2M_blocking", "ring_2M"):
    whole = (ms(name) - ms("untraced")) / calls * 1e6
    net = (ms(name) - ms("untraced") - (ms("record_small") - ms("untraced_small"))) / calls * 1e6
    print(f"{name:22} {whole:6.1f} ns per call, whole run; {net:6.1f} without the fixed part")
PY
