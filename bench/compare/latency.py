"""Workloads 2-4 of bench/compare/run.py: ping-pong, wake-up latency, message passing. Each runs
one program (workloads.cc) five ways, interleaved repetition by repetition:
untraced (cmp_plain), hushtrace linked but off, hushtrace on, LTTng-UST linked with no active
session, LTTng-UST with an active session."""

import array
import os
import shutil

from cmplib import bt_count, hush_report, log, rotated, summary

MODES = ["untraced", "hush_off", "hush_on", "lttng_off", "lttng_on"]


def _modes(ctx):
    modes = [m for m in MODES if ctx.lttng or not m.startswith("lttng")]
    return modes + (["hush_on_other"] if ctx.other_lib else [])


class Runner:
    """Runs one workload in every mode; checks every traced run's events."""

    def __init__(self, ctx, name):
        self.ctx = ctx
        self.name = name
        self.session = f"hushcmp-{os.getpid()}-{name}"
        self.lttng_dir = os.path.join(ctx.trace_base, f"lttng-{name}")
        self.lttng_expected = 0
        self.hush_checks = []
        if ctx.lttng:
            ctx.lttng.create(self.session, self.lttng_dir)

    def run(self, mode, args, sample_file=None):
        ctx = self.ctx
        exe = {"untraced": "cmp_plain", "hush_off": "cmp_hush", "hush_on": "cmp_hush", "hush_on_other": "cmp_hush",
               "lttng_off": "cmp_lttng", "lttng_on": "cmp_lttng"}[mode]
        argv = [os.path.join(ctx.cmp, exe)] + [str(a) for a in args]
        if sample_file:
            argv.append(sample_file)
        env = {}
        trace = None
        if mode in ("hush_on", "hush_on_other"):
            trace = ctx.fresh(ctx.trace_base, f"hush-{self.name}")
            env = {"HUSHTRACE_EVENTS": "hushbench:two_int", "HUSHTRACE_OUTPUT": trace}
            if mode == "hush_on_other":  # run.py --other-lib: the same program, another library
                env["LD_LIBRARY_PATH"] = ctx.other_lib
        if mode == "lttng_on":
            ctx.lttng.start(self.session)
        try:
            res = ctx.run_json(argv, env)
        finally:
            if mode == "lttng_on":
                ctx.lttng.stop(self.session)
        if trace:
            ev, lost, _ = hush_report(ctx, trace)
            self.hush_checks.append({"expected": res["events"], "recorded": ev, "lost": lost})
            shutil.rmtree(trace, ignore_errors=True)
        if mode == "lttng_on":
            self.lttng_expected += res["events"]
        return res

    def finish(self):
        """Event checks: every hushtrace run, and the LTTng session's whole trace."""
        checks = {"hushtrace_runs": self.hush_checks}
        ctx = self.ctx
        if ctx.lttng:
            discarded = ctx.lttng.discarded(self.session)
            ctx.lttng.destroy(self.session)
            ev, disc_msgs = bt_count(ctx, self.lttng_dir)
            checks["lttng"] = {"expected": self.lttng_expected, "recorded": ev,
                               "discarded": discarded, "discarded_messages": disc_msgs}
            shutil.rmtree(self.lttng_dir, ignore_errors=True)
        return checks


def _load_samples(path):
    a = array.array("i")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    os.unlink(path)
    return a


def _by_mode(ctx, runs, key):
    return {m: summary([r[key] for r in runs[m]]) for m in runs}


def _with_ratios(stats, base="untraced"):
    b = stats.get(base)
    for s in stats.values():
        if s and b and b["median"]:
            s["ratio"] = s["median"] / b["median"]
    return stats


def _interleaved(ctx, runner, reps, args, samples_out=None):
    """Runs args in every mode, reps times, interleaved; per-event samples go to samples_out."""
    runs = {m: [] for m in _modes(ctx)}
    for rep in range(reps):
        for m in rotated(_modes(ctx), rep):
            f = ctx.fresh(ctx.scratch_mem, "samples") if samples_out is not None else None
            runs[m].append(runner.run(m, args, f))
            if f:
                samples_out.setdefault(m, array.array("i")).extend(_load_samples(f))
    return runs


def pingpong(ctx, samples_out):
    n, reps = (20000, 3) if ctx.quick else (100000, ctx.reps or 7)
    log(f"workload 2: pipe ping-pong, {n} round trips x {reps} repetitions per mode")
    r = Runner(ctx, "pingpong")
    runs = _interleaved(ctx, r, reps, ["pingpong", n, 0], samples_out)
    return {"what": f"2 threads pinned to CPU 0, 1 byte through 2 pipes, {n} round trips, "
                    "one event per switch (2 per round trip)",
            "metric": "round_trips_per_s", "higher_is_better": True, "repetitions": reps,
            "modes": _with_ratios(_by_mode(ctx, runs, "round_trips_per_s")),
            "cpu_us": _with_ratios(_by_mode(ctx, runs, "cpu_us_per_round_trip")), "checks": r.finish()}


def wakeup(ctx, samples_out):
    n, reps = (1000, 3) if ctx.quick else (5000, ctx.reps or 5)
    log(f"workload 3: wake-up lateness, {n} x 200 us periods x {reps} repetitions per mode")
    r = Runner(ctx, "wakeup")
    runs = _interleaved(ctx, r, reps, ["wakeup", n, 200], samples_out)
    metrics = {k: _with_ratios({m: summary([x[k] / 1000 for x in runs[m]]) for m in runs})
               for k in ("min_ns", "avg_ns", "p99_ns")}
    policies = sorted({x["policy"] for m in runs for x in runs[m]})
    return {"what": f"absolute 200 us clock_nanosleep period, {n} wake-ups per run, "
                    f"{' / '.join(policies)}, one event per wake-up; lateness in us",
            "metric": "avg_us", "higher_is_better": False, "repetitions": reps,
            "modes": {m: metrics["avg_ns"][m] for m in runs},
            "min_us": metrics["min_ns"], "p99_us": metrics["p99_ns"], "checks": r.finish()}


def hackbench(ctx):
    g, f, loops, reps = (4, 2, 500, 3) if ctx.quick else (4, 2, 3000, ctx.reps or 9)
    log(f"workload 4: message passing (hackbench -g {g} -f {f} -l {loops} analogue) x {reps}")
    r = Runner(ctx, "hackbench")
    runs = _interleaved(ctx, r, reps, ["hackbench", g, f, loops])
    return {"what": f"{g} groups of {f} sender + {f} receiver threads over socketpairs, {loops} "
                    "100-byte messages per sender and receiver pair, one event per send and receive",
            "metric": "ms", "higher_is_better": False, "repetitions": reps,
            "modes": _with_ratios({m: summary([x["seconds"] * 1e3 for x in runs[m]]) for m in runs}),
            "cpu_ms": _with_ratios({m: summary([x["cpu_seconds"] * 1e3 for x in runs[m]]) for m in runs}),
            "checks": r.finish()}
