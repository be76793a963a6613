"""Helpers of bench/compare/run.py: running and recording commands, statistics, the LTTng
session daemon and sessions, reading back traces of both tracers."""

import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time


def log(msg):
    load = open("/proc/loadavg").read().split()[0]
    print(f"=== [{time.strftime('%H:%M:%S')}, load {load}] {msg}", file=sys.stderr, flush=True)


class Ctx:
    """What every workload needs: binaries, scratch directories, options, recorded commands."""

    def __init__(self, root, build, quick, scratch_mem, scratch_disk):
        self.root = root
        self.build = build
        self.quick = quick
        self.bin = os.path.join(build, "bench")
        self.cmp = os.path.join(build, "bench", "compare")
        self.hushtrace = os.path.join(build, "tools", "hushtrace", "hushtrace")
        self.scratch_mem = scratch_mem  # /dev/shm: traces of the latency workloads
        self.scratch_disk = scratch_disk  # on disk: throughput traces, file create/delete
        self.trace_base = scratch_mem  # latency workloads' traces (run.py --traces-on-disk)
        self.reps = None  # run.py --reps: repetitions of the latency workloads
        self.other_lib = None  # run.py --other-lib: mode hush_on_other of the latency workloads
        self.commands = []
        self.lttng = None
        self.have_uftrace = False
        self._seq = 0

    def fresh(self, base, name):
        self._seq += 1
        return os.path.join(base, f"{name}.{self._seq}")

    def record(self, argv, env=None):
        words = [f"{k}={v}" for k, v in (env or {}).items()] + [str(a) for a in argv]
        line = " ".join(shlex.quote(w) for w in words)
        for path, name in ((self.scratch_mem, "$SCRATCH_MEM"), (self.scratch_disk, "$SCRATCH_DISK"),
                           (self.build, "$BUILD"), (self.root + "/", "")):
            line = line.replace(path, name)
        line = re.sub(r"\.\d+\b", ".N", line) if "$SCRATCH" in line else line
        if line not in self.commands:
            self.commands.append(line)

    def run(self, argv, env=None, check=True, timeout=600):
        """Runs argv (env added to the environment); returns stdout."""
        self.record(argv, env)
        full = dict(os.environ)
        full.update(env or {})
        p = subprocess.run([str(a) for a in argv], env=full, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, argv))} exited {p.returncode}: {p.stderr[-2000:]}")
        return p.stdout

    def run_json(self, argv, env=None, timeout=600):
        """Runs a workload program; returns its last stdout line that is a JSON object."""
        out = self.run(argv, env, timeout=timeout)
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"{argv[0]} printed no JSON: {out[-500:]}")


def summary(values):
    """median/min/max/n of a list of numbers (None when empty)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def rotated(modes, r):
    """Interleaving: repetition r runs the modes starting with the r-th."""
    k = r % len(modes)
    return modes[k:] + modes[:k]


def dir_bytes(path, skip=lambda rel: False):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), path)
            if not skip(rel):
                total += os.path.getsize(os.path.join(d, f))
    return total


def hush_report(ctx, trace):
    """(events, lost events, stream bytes) of a hushtrace trace, from `hushtrace report`."""
    out = ctx.run([ctx.hushtrace, "report", trace])
    ev = re.search(r"^\s+events\s+(\d+)", out, re.M)
    lost = re.search(r"^\s+lost\s+(none|(\d+) events?)", out, re.M)
    if not ev or not lost:
        raise RuntimeError(f"unexpected `hushtrace report` output: {out[:500]}")
    nbytes = dir_bytes(trace, skip=lambda rel: rel.startswith(".ring") or rel == "metadata")
    return int(ev.group(1)), int(lost.group(2) or 0), nbytes


def bt_count(ctx, trace):
    """(events, discarded-event messages) read back by babeltrace2."""
    out = ctx.run(["babeltrace2", trace, "-c", "sink.utils.counter"], timeout=900)
    # The counter prints running totals every 10,000 messages: the last block is the total.
    ev = re.findall(r"(\d+)\s+Event messages", out)
    disc = re.findall(r"(\d+)\s+Discarded event messages", out)
    return int(ev[-1]) if ev else 0, int(disc[-1]) if disc else 0


class Lttng:
    """lttng-sessiond (started here unless one runs; stopped again by close()) and sessions."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.started_pid = None
        self.sessions = []

    def up(self):
        if subprocess.run(["lttng", "list"], capture_output=True).returncode == 0:
            return
        log("starting lttng-sessiond --daemonize --no-kernel")
        subprocess.run(["lttng-sessiond", "--daemonize", "--no-kernel"], check=True,
                       capture_output=True)
        try:
            self.started_pid = int(open("/var/run/lttng/lttng-sessiond.pid").read())
        except (OSError, ValueError):
            self.started_pid = None
        for _ in range(50):
            if subprocess.run(["lttng", "list"], capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError("lttng-sessiond did not come up")

    def create(self, name, output, subbuf="1M", nsub=4):
        self.sessions.append(name)
        self.ctx.run(["lttng", "create", name, f"--output={output}"])
        self.ctx.run(["lttng", "enable-channel", "-u", "-s", name, f"--subbuf-size={subbuf}",
                      f"--num-subbuf={nsub}", "cmp"])
        self.ctx.run(["lttng", "enable-event", "-u", "-s", name, "-c", "cmp", "hushbench:*"])

    def start(self, name):
        self.ctx.run(["lttng", "start", name])

    def stop(self, name):
        self.ctx.run(["lttng", "stop", name])

    def discarded(self, name):
        out = self.ctx.run(["lttng", "list", name])
        return sum(int(x) for x in re.findall(r"Discarded events:\s+(\d+)", out))

    def destroy(self, name):
        self.ctx.run(["lttng", "destroy", name], check=False)
        if name in self.sessions:
            self.sessions.remove(name)

    def close(self):
        for s in list(self.sessions):
            self.destroy(s)
        if self.started_pid:
            try:
                os.kill(self.started_pid, signal.SIGTERM)
                for _ in range(50):
                    os.kill(self.started_pid, 0)
                    time.sleep(0.1)
                os.kill(self.started_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.started_pid = None
