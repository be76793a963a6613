#!/usr/bin/env python3
"""Where a traced hackbench run's extra CPU goes: per thread, per event, per file system (issue 19).

    bench/hackbench_split.py [--build-dir build] [--reps 11] [--scratch DIR] [--json OUT]
                             [--other-lib DIR]

Runs the hackbench analogue of `make bench-compare` (`cmp_hush hackbench 4 2 L`: 16 threads,
32 * L events) with L = 1 (one event per sender and receiver: what starting 16 traced threads
costs, their first events, ring and stream files) and L = 3000 (96,000 events), interleaved
round by round in these modes: untraced (the same binary, no session), traced with the trace
under SCRATCH (default: the build tree, ext4 here), traced with the trace in /dev/shm (tmpfs),
and a session whose event pattern matches nothing (the session alone). Each figure is the
median over rounds of (mode - untraced) in the same round, of the process CPU time the program
measures around its timed part (`cpu_seconds`: the threads' start, events and joins; not the
program's start-up or exit). Every traced run's trace is read back: it must hold every event.
--other-lib adds the disk and tmpfs modes against another build's libhushtrace.so.0.1 in DIR
(LD_LIBRARY_PATH), interleaved in the same rounds.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

GROUPS, FDS = 4, 2


def run(binary, loops, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    out = subprocess.run([binary, "hackbench", str(GROUPS), str(FDS), str(loops)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def count_events(report_bin, trace):
    out = subprocess.run([report_bin, "report", "--format", "json", trace], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"hushtrace report {trace}: {out.stderr.strip()}")
    return json.loads(out.stdout)["events"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--scratch", default=None, help="trace directory parent for the disk mode")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--other-lib", default=None, help="directory of another libhushtrace.so.0.1")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    binary = os.path.join(build, "bench/compare/cmp_hush")
    cli = os.path.join(build, "tools/hushtrace/hushtrace")
    disk = tempfile.mkdtemp(prefix="hb-split.", dir=a.scratch or build)
    mem = tempfile.mkdtemp(prefix="hb-split.", dir="/dev/shm")
    modes = {
        "untraced": lambda d: {},
        "traced, trace on disk": lambda d: {"HUSHTRACE_EVENTS": "hushbench:two_int",
                                            "HUSHTRACE_OUTPUT": os.path.join(disk, d)},
        "traced, trace on tmpfs": lambda d: {"HUSHTRACE_EVENTS": "hushbench:two_int",
                                             "HUSHTRACE_OUTPUT": os.path.join(mem, d)},
        "session, no event enabled": lambda d: {"HUSHTRACE_EVENTS": "hushbench:no_such_event",
                                                "HUSHTRACE_OUTPUT": os.path.join(disk, d)},
    }
    if a.other_lib:
        other = os.path.abspath(a.other_lib)
        for name, parent in (("disk", disk), ("tmpfs", mem)):
            modes[f"traced, {name}, other lib"] = (lambda p: lambda d: {
                "HUSHTRACE_EVENTS": "hushbench:two_int", "HUSHTRACE_OUTPUT": os.path.join(p, d),
                "LD_LIBRARY_PATH": other})(parent)
    results = {}
    try:
        for loops in (1, 3000):
            cpu = {m: [] for m in modes}
            wall = {m: [] for m in modes}
            names = list(modes)
            for r in range(a.reps):
                order = names[r % len(names):] + names[:r % len(names)]
                for m in order:
                    d = f"L{loops}-r{r}-{names.index(m)}"
                    env = modes[m](d)
                    x = run(binary, loops, env)
                    cpu[m].append(x["cpu_seconds"] * 1e3)
                    wall[m].append(x["seconds"] * 1e3)
                    if env.get("HUSHTRACE_EVENTS") == "hushbench:two_int":
                        got = count_events(cli, env["HUSHTRACE_OUTPUT"])
                        if got != x["events"]:
                            raise SystemExit(f"{m}, L={loops}: {got} events of {x['events']}")
                        shutil.rmtree(env["HUSHTRACE_OUTPUT"])
                    elif "HUSHTRACE_OUTPUT" in env:
                        shutil.rmtree(env["HUSHTRACE_OUTPUT"], ignore_errors=True)
            base_cpu, base_wall = cpu["untraced"], wall["untraced"]
            res = {}
            for m in modes:
                res[m] = {
                    "cpu_ms_median": round(statistics.median(cpu[m]), 2),
                    "wall_ms_median": round(statistics.median(wall[m]), 2),
                    "cpu_ms_paired_over_untraced": round(statistics.median(
                        [c - b for c, b in zip(cpu[m], base_cpu)]), 2),
                    "wall_ms_paired_over_untraced": round(statistics.median(
                        [c - b for c, b in zip(wall[m], base_wall)]), 2),
                }
            results[f"loops={loops}"] = {"events": 2 * GROUPS * FDS * FDS * loops, "modes": res}
            print(f"L = {loops} ({2 * GROUPS * FDS * FDS * loops} events), {a.reps} rounds; ms, "
                  "medians; 'over untraced' = paired median of the difference")
            print(f"  {'mode':30} {'CPU':>8} {'over untraced':>14} {'wall':>8} {'over untraced':>14}")
            for m, v in res.items():
                print(f"  {m:30} {v['cpu_ms_median']:8.2f} {v['cpu_ms_paired_over_untraced']:14.2f} "
                      f"{v['wall_ms_median']:8.2f} {v['wall_ms_paired_over_untraced']:14.2f}")
    finally:
        shutil.rmtree(disk, ignore_errors=True)
        shutil.rmtree(mem, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": "bench/hackbench_split.py", "reps": a.reps, "other_lib": a.other_lib,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
