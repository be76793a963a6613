#!/usr/bin/env python3
"""Attach as a user pays it (issue 14): the `hushtrace` CLI run as a process against a live program.

    bench/attach_cli.py [--build-dir build] [--runs 30] [--scratch DIR] [--target spin|paced]
                        [--other-lib DIR] [--first-attach N] [--out FILE.json]

Starts `bench_control_target spin` (tests/control/control_target.cc: one thread emitting
`ctl:clock` in a loop, one sleeping; the ring is full when `stop` writes it out) or `paced` (an
event every 100 us: a service traced on and off) and, after one `hushtrace status PID` that opens the control
channel (ptrace bootstrap, reported on its own), runs RUNS rounds of, interleaved:

  hushtrace --version                  any hushtrace command: process start, exit, wait
  hushtrace status PID                 a command that talks to the process
  hushtrace start PID -e 'ctl:*' -o SCRATCH/run-N         (then 5 ms of recording)
  hushtrace stop PID                   returns once every committed event is written

each timed from just before its spawn to the end of its wait (CLOCK_MONOTONIC), plus "start ->
first event": the first event's own timestamp in the trace (babeltrace2 --clock-seconds, the
trace clock's realtime offset) minus CLOCK_REALTIME just before `hushtrace start` was spawned.
The issue's figure is that latency over the median time of running any hushtrace command
(`--version`); the stop's is the median over rounds of that round's stop minus its `--version`. With --other-lib, a second target runs against another build
of the library (LD_LIBRARY_PATH), its commands interleaved with the first's in every round.
With --first-attach N, N more rounds each start a fresh target and time `hushtrace start PID` as
its first command (the ptrace bootstrap, the control thread, the membarrier registration and the
session) to the first event, over that round's `--version`.
Every trace is checked to hold events. Prints medians, p90 and the host.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def timed(cmd):
    """Wall µs of one run of cmd (spawned to reaped; posix_spawn, output to /dev/null: less of the
    parent's own cost than subprocess.run with pipes) and its exit status."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    t = time.monotonic_ns()
    pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    return (time.monotonic_ns() - t) / 1000.0, os.waitstatus_to_exitcode(status)


def first_event_realtime_ns(trace):
    p = subprocess.Popen(["babeltrace2", "--clock-seconds", trace], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    p.kill()
    p.wait()
    if not line.startswith("["):
        sys.exit(f"{trace}: no event in the trace")
    secs, frac = line[1:line.index("]")].split(".")
    return int(secs) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--scratch", default=None, help="where the traces go (default: a directory under the build dir, ext4 here)")
    ap.add_argument("--target", choices=["spin", "paced"], default="spin",
                    help="spin: an event per loop, the ring full at stop; paced: one every 100 us")
    ap.add_argument("--other-lib", default=None,
                    help="a directory holding another libhushtrace.so.0.1: a second target runs against it, "
                         "interleaved round by round with the first")
    ap.add_argument("--first-attach", type=int, default=0, metavar="N",
                    help="also N first attaches: a fresh target each time, `hushtrace start PID` "
                         "its first command (ptrace bootstrap, control thread, membarrier "
                         "registration, session start), timed to its first event")
    ap.add_argument("--out", default="bench/results/attach_cli.json")
    a = ap.parse_args()
    cli = os.path.abspath(os.path.join(a.build_dir, "tools/hushtrace/hushtrace"))
    target = os.path.abspath(os.path.join(a.build_dir, "bench/bench_control_target"))
    scratch = tempfile.mkdtemp(prefix="attach-cli.", dir=a.scratch or a.build_dir)
    fs = subprocess.run(["stat", "-f", "-c", "%T", scratch], capture_output=True, text=True).stdout.strip()
    host = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"], capture_output=True, text=True).stdout.strip()
    load_before = open("/proc/loadavg").read().split()[:3]
    libs = [("this", None)] + ([("other", os.path.abspath(a.other_lib))] if a.other_lib else [])
    procs = {}
    for name, lib in libs:
        env = dict(os.environ)
        if lib:
            env["LD_LIBRARY_PATH"] = lib
        procs[name] = subprocess.Popen([target, a.target], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, env=env)
    keys = ["status", "start", "start_to_first_event", "stop"]
    rows = {"version": []}
    for name, _ in libs:
        rows.update({k if name == "this" else f"{k}_{name}": [] for k in keys})
    bootstrap = {}
    try:
        time.sleep(0.2)
        for name, _ in libs:
            pid = str(procs[name].pid)
            bootstrap[name], rc = timed([cli, "status", pid])
            if rc != 0:
                sys.exit(f"hushtrace status {pid} failed ({rc})")
        for i in range(a.runs):
            us, rc = timed([cli, "--version"])
            rows["version"].append(us)
            for name, _ in libs:
                sfx = "" if name == "this" else f"_{name}"
                pid = str(procs[name].pid)
                us, rc = timed([cli, "status", pid])
                rows["status" + sfx].append(us)
                trace = os.path.join(scratch, f"run-{name}-{i}")
                t0 = time.time_ns()
                us, rc = timed([cli, "start", pid, "-e", "ctl:*", "-o", trace])
                if rc != 0:
                    sys.exit(f"hushtrace start {pid} failed ({rc})")
                rows["start" + sfx].append(us)
                time.sleep(0.005)
                us, rc = timed([cli, "stop", pid])
                if rc != 0:
                    sys.exit(f"hushtrace stop {pid} failed ({rc})")
                rows["stop" + sfx].append(us)
                rows["start_to_first_event" + sfx].append((first_event_realtime_ns(trace) - t0) / 1000.0)
                shutil.rmtree(trace)
        # First attaches: what a user pays to trace a service that no hushtrace command has
        # touched yet. Fresh targets, one per round and library, interleaved like the rest.
        first = {name: [] for name, _ in libs}
        first_version = []
        for i in range(a.first_attach):
            for name, lib in libs:
                env = dict(os.environ)
                if lib:
                    env["LD_LIBRARY_PATH"] = lib
                p = subprocess.Popen([target, a.target], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=env)
                try:
                    time.sleep(0.2)
                    us, _ = timed([cli, "--version"])
                    first_version.append(us)
                    trace = os.path.join(scratch, f"first-{name}-{i}")
                    t0 = time.time_ns()
                    us, rc = timed([cli, "start", str(p.pid), "-e", "ctl:*", "-o", trace])
                    if rc != 0:
                        sys.exit(f"hushtrace start {p.pid} (first attach) failed ({rc})")
                    time.sleep(0.005)
                    _, rc = timed([cli, "stop", str(p.pid)])
                    if rc != 0:
                        sys.exit(f"hushtrace stop {p.pid} (first attach) failed ({rc})")
                    first[name].append((first_event_realtime_ns(trace) - t0) / 1000.0)
                    shutil.rmtree(trace)
                finally:
                    p.kill()
                    p.wait()
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    med = {k: statistics.median(v) for k, v in rows.items()}
    over = {}
    for name, _ in libs:
        sfx = "" if name == "this" else f"_{name}"
        over["start_to_first_event" + sfx] = statistics.median(
            [x - med["version"] for x in rows["start_to_first_event" + sfx]])
        # Paired: each round's stop minus the same round's --version (the host's exec cost drifts
        # by milliseconds over a run here; a difference of medians taken apart would carry it).
        over["stop" + sfx] = statistics.median(
            [s - v for s, v in zip(rows["stop" + sfx], rows["version"])])
    if a.first_attach:
        vmed = statistics.median(first_version)
        for name, _ in libs:
            sfx = "" if name == "this" else f"_{name}"
            rows["first_attach_to_first_event" + sfx] = first[name]
            over["first_attach_to_first_event" + sfx] = statistics.median(first[name]) - vmed
        rows["first_attach_version"] = first_version
        med = {k: statistics.median(v) for k, v in rows.items()}
    result = {
        "host": host, "nproc": os.cpu_count(), "filesystem": fs, "runs": a.runs, "target": a.target,
        "other_lib": a.other_lib, "load_before": load_before, "load_after": load_after,
        "bootstrap_status_us": bootstrap, "samples_us": rows,
        "median_us": med, "p90_us": {k: quantile(v, 0.9) for k, v in rows.items()},
        "over_version_median_us": over,
        # kept for readers of earlier results
        "start_to_first_event_over_version_median_us": over["start_to_first_event"],
    }
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"host: {host}, {os.cpu_count()} CPUs; traces on {fs}; target {a.target}; "
          f"load {' '.join(load_before)} -> {' '.join(load_after)}")
    for name, us in bootstrap.items():
        print(f"first request to the {name} library's target (ptrace bootstrap + membarrier registration): {us:.0f} us")
    print(f"{'command (us, ' + str(a.runs) + ' runs)':34} {'median':>9} {'min':>9} {'p90':>9}")
    for k, v in rows.items():
        print(f"{k:34} {med[k]:9.0f} {min(v):9.0f} {quantile(v, 0.9):9.0f}")
    for k, v in over.items():
        print(f"{k}, over the median `hushtrace --version`: {v:.0f} us")


if __name__ == "__main__":
    main()
