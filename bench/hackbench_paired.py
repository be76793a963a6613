#!/usr/bin/env python3
"""The hackbench analogue of bench/compare (cmp_* hackbench 4 2 3000), traced with its trace in
several directories and with two libraries, interleaved round by round, as paired differences
over the untraced run of the same round: what a change to where the runtime keeps its files
costs or saves, with less noise than the medians of bench/compare/run.py.

  python3 bench/hackbench_paired.py --reps 101 --other-lib /tmp/base18e \\
      --dir ext4=build/hbt --dir ext4j=/mnt/ext4j/hbt

Modes: untraced; for each --dir NAME=PATH, traced with the trace under PATH (this build's
library), and, with --other-lib DIR, the same with LD_LIBRARY_PATH=DIR. Every traced run's trace
is checked whole with `hushtrace report` (events and no loss) and removed. Prints, per mode, the
median completion and process CPU (the program's own figures), their ratio to the untraced
median, and the paired medians (traced - untraced of the same round)."""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--dir", action="append", default=[], metavar="NAME=PATH",
                    help="a place for the traces (default: ext4=BUILD/hackbench-paired)")
    ap.add_argument("--other-lib", help="a directory with another libhushtrace.so.0.1")
    ap.add_argument("--json", help="write the raw runs here")
    a = ap.parse_args()
    cmp = os.path.join(a.build, "bench", "compare")
    cli = os.path.join(a.build, "tools", "hushtrace", "hushtrace")
    dirs = [d.split("=", 1) for d in a.dir] or [["ext4", os.path.join(a.build, "hackbench-paired")]]
    modes = {"untraced": (None, None)}
    for name, path in dirs:
        modes[name] = (path, None)
        if a.other_lib:
            modes[name + "_other"] = (path, a.other_lib)
    wall = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    load = open("/proc/loadavg").read().split()[:3]
    for r in range(a.reps):
        names = list(modes)
        for m in names[r % len(names):] + names[:r % len(names)]:
            out, lib = modes[m]
            env = dict(os.environ)
            exe = os.path.join(cmp, "cmp_plain")
            trace = None
            if out:
                os.makedirs(out, exist_ok=True)
                trace = os.path.join(out, f"t{r}")
                exe = os.path.join(cmp, "cmp_hush")
                env.update(HUSHTRACE_EVENTS="hushbench:two_int", HUSHTRACE_OUTPUT=trace)
                if lib:
                    env["LD_LIBRARY_PATH"] = lib
            res = json.loads(subprocess.run([exe, "hackbench", "4", "2", "3000"], env=env, check=True,
                                            capture_output=True, text=True).stdout)
            wall[m].append(res["seconds"] * 1e3)
            cpu[m].append(res["cpu_seconds"] * 1e3)
            if trace:
                rep = subprocess.run([cli, "report", trace], capture_output=True, text=True).stdout
                got = re.search(r"events\s+(\d+)", rep)
                if not got or int(got.group(1)) != res["events"] or not re.search(r"lost\s+none", rep):
                    sys.exit(f"{m} round {r}: the trace does not hold all {res['events']} events:\n{rep}")
                shutil.rmtree(trace)
    print(f"host: {open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}, "
          f"{os.cpu_count()} CPUs; load before {' '.join(load)}, after "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}; {a.reps} rounds; every trace whole")
    base_w, base_c = statistics.median(wall["untraced"]), statistics.median(cpu["untraced"])
    for m in modes:
        w, c = statistics.median(wall[m]), statistics.median(cpu[m])
        pw = statistics.median([x - y for x, y in zip(wall[m], wall["untraced"])])
        pc = statistics.median([x - y for x, y in zip(cpu[m], cpu["untraced"])])
        print(f"{m:14} completion {w:6.1f} ms ({100 * (w / base_w - 1):+5.1f}%, paired {pw:+5.2f} ms)   "
              f"CPU {c:6.1f} ms ({100 * (c / base_c - 1):+5.1f}%, paired {pc:+5.2f} ms)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"reps": a.reps, "modes": {m: {"dir": modes[m][0], "lib": modes[m][1]} for m in modes},
                       "wall_ms": wall, "cpu_ms": cpu}, f, indent=1)


if __name__ == "__main__":
    main()
