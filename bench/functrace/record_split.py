#!/usr/bin/env python3
"""Where the time of a `hushtrace record --functions '*'` run goes (issue 14).

    bench/functrace/record_split.py [--build-dir build] [--rounds 25] [--n 27] [--scratch DIR]
                                    [--other-build DIR] [--json FILE]

Every command runs once per round, rounds interleaved (a drift of the host spreads over all of
them), each timed from its spawn to its reaping (posix_spawn, output to /dev/null), traces on the
scratch directory (default: under the build tree, ext4 on this project's machines).

Fixed costs, with `ftbench_nop5 5` (18 calls):
  untraced_small       the program alone
  runtime_only_small   the program under the runtime as `record` starts it, without the CLI
                       (LD_PRELOAD=libhushtrace.so HUSHTRACE_FUNCTIONS='*' ..., 16M rings)
  record_small         `hushtrace record --functions '*'`: the CLI's start-up, its check of the
                       program and its libraries, fork/exec, the trace's completion after
  cli_version          `hushtrace --version`: what any hushtrace command costs to start and exit
The calls, `ftbench_nop5 N` (default 27: 1,684,198 calls), by ring size (the pages a ring touches
for the first time are paid one by one: bench/host_costs.cc prices a first touch):
  ring_16M             the default ring of a function session
  ring_16M_blocking    the same with --blocking (the writer waits: nothing can be lost)
  ring_2M_blocking     a ring 8x smaller, --blocking: what a ring that stays small while the
                       writer keeps up would touch
  ring_2M              the same without --blocking (its loss is counted from `hushtrace report`)
With --other-build, record_small_other and ring_16M_other are record_small and ring_16M run by
that build's CLI (and its runtime), in the same rounds: a before/after of the CLI's own costs and
of the default ring.
Per call = (median - median untraced) / calls, with and without the fixed part
(record_small - untraced_small).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def host_line():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    return f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; cpu: {cpu}, {os.cpu_count()} CPUs; load {load}"


def timed_ms(cmd, env):
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    t = time.monotonic_ns()
    pid = os.posix_spawn(cmd[0], cmd, env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {os.waitstatus_to_exitcode(status)}")
    return (time.monotonic_ns() - t) / 1e6


def calls_of(build, n):
    out = subprocess.run([f"{build}/bench/ftbench_plain", str(n)], capture_output=True, text=True, check=True).stdout
    return int(out.split("calls ")[1].split()[0])


def loss_warnings(cli, trace):
    out = subprocess.run([cli, "report", trace], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith("WARNING:"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--n", type=int, default=27)
    ap.add_argument("--scratch")
    ap.add_argument("--other-build")
    ap.add_argument("--json")
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    cli = f"{build}/tools/hushtrace/hushtrace"
    prog = f"{build}/bench/ftbench_nop5"
    scratch = tempfile.mkdtemp(prefix="ftsplit.", dir=args.scratch or build)
    trace = f"{scratch}/t"
    n = str(args.n)
    rec = [cli, "record", "--functions", "*", "-o", trace]
    env = dict(os.environ)
    preload = dict(env, LD_PRELOAD=f"{build}/src/libhushtrace.so", HUSHTRACE_FUNCTIONS="*",
                   HUSHTRACE_BUFFER_SIZE="16M", HUSHTRACE_OUTPUT=trace)
    commands = {
        "untraced_small": ([prog, "5"], env),
        "runtime_only_small": ([prog, "5"], preload),
        "record_small": (rec + [prog, "5"], env),
        "cli_version": ([cli, "--version"], env),
    }
    other_rec = None
    if args.other_build:
        other_cli = f"{os.path.abspath(args.other_build)}/tools/hushtrace/hushtrace"
        other_rec = [other_cli, "record", "--functions", "*", "-o", trace]
        commands["record_small_other"] = (other_rec + [prog, "5"], env)
    commands |= {
        "untraced": ([prog, n], env),
        "ring_16M": (rec + [prog, n], env),
        "ring_16M_blocking": (rec + ["--blocking", prog, n], env),
        "ring_2M_blocking": (rec + ["--buffer-size", "2M", "--blocking", prog, n], env),
        "ring_2M": (rec + ["--buffer-size", "2M", prog, n], env),
    }
    if other_rec:
        commands["ring_16M_other"] = (other_rec + [prog, n], env)
    calls = calls_of(build, args.n)
    print(f"# {host_line()}")
    fs = subprocess.run(["stat", "-f", "-c", "%T", scratch], capture_output=True, text=True).stdout.strip()
    print(f"# traces in {scratch} ({fs}); {calls} calls (N={args.n}); {args.rounds} interleaved rounds")
    times = {name: [] for name in commands}
    lossy = {name: 0 for name in commands}
    try:
        for _ in range(args.rounds):
            for name, (cmd, cmd_env) in commands.items():
                shutil.rmtree(trace, ignore_errors=True)
                times[name].append(timed_ms(cmd, cmd_env))
                if name.startswith("ring_") and loss_warnings(cli, trace) != 0:
                    lossy[name] += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"{'command':20} {'median ms':>10} {'p25 ms':>8} {'min ms':>8} {'runs with loss':>15}")
    for name, v in times.items():
        loss = f"{lossy[name]} of {len(v)}" if name.startswith("ring_") else ""
        print(f"{name:20} {med[name]:10.2f} {sorted(v)[len(v) // 4]:8.2f} {min(v):8.2f} {loss:>15}")
    fixed = med["record_small"] - med["untraced_small"]
    print(f"fixed: {fixed:.2f} ms = runtime {med['runtime_only_small'] - med['untraced_small']:.2f} "
          f"+ CLI {med['record_small'] - med['runtime_only_small']:.2f} "
          f"(--version over the program: {med['cli_version'] - med['untraced_small']:.2f})")
    per_call = {}
    for name in [k for k in commands if k.startswith("ring_")]:
        whole = (med[name] - med["untraced"]) / calls * 1e6
        net = (med[name] - med["untraced"] - fixed) / calls * 1e6
        per_call[name] = {"whole_ns": whole, "without_fixed_ns": net}
        print(f"{name:20} {whole:6.1f} ns per call, whole run; {net:6.1f} without the fixed part")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"host": host_line(), "calls": calls, "rounds": args.rounds, "times_ms": times,
                       "runs_with_loss": lossy, "per_call": per_call}, f, indent=1)


if __name__ == "__main__":
    main()
