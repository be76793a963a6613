"""Workloads 1, 5, 6 and 7 of bench/compare/run.py: start-up (bench/startup_runner), compiled in
but off (lmbench.cc, plain vs entry NOPs, then function-traced), throughput ceiling, control
latency (bench/control_bench for hushtrace, the lttng CLI for LTTng-UST)."""

import json
import os
import re
import shutil
import subprocess
import time

from cmplib import bt_count, dir_bytes, hush_report, log, rotated, summary


def startup(ctx):
    runs = 20 if ctx.quick else 150
    log(f"workload 1: start-up, {runs} interleaved runs per variant (bench/startup_runner)")
    b = ctx.bin
    variants = [f"plain|{b}/startup_plain", f"emptylib|{b}/startup_emptylib",
                f"hush_nosession|{b}/startup_hush",
                f"hush_session|{b}/startup_hush|HUSHTRACE_EVENTS=hushbench:*,HUSHTRACE_OUTPUT={{OUT}}"]
    if ctx.lttng:
        variants.append(f"lttng_nosession|{b}/startup_lttng")
    out_a = os.path.join(ctx.scratch_mem, "startup_a.json")
    ctx.run([f"{b}/startup_runner", "--runs", runs, "--scratch", os.path.join(ctx.scratch_mem, "st-a"),
             "--out", out_a] + variants)
    res = {"what": "empty C++ main; wall time posix_spawn -> waitpid, us; the traced variants emit "
                   "100 events at the top of main", "runs": runs, "phases": {}}
    a = json.load(open(out_a))
    res["phases"]["A"] = a["variants"]
    kept = [hush_report(ctx, p)[0:2] for v in a["variants"] for p in v["kept"]]
    res["checks"] = {"hushtrace_kept_traces": [{"recorded": e, "lost": lost, "expected": 100}
                                               for e, lost in kept]}
    if ctx.lttng:
        s = f"hushcmp-{os.getpid()}-startup"
        d = os.path.join(ctx.scratch_mem, "lttng-startup")
        ctx.lttng.create(s, d)
        ctx.lttng.start(s)
        out_b = os.path.join(ctx.scratch_mem, "startup_b.json")
        ctx.run([f"{b}/startup_runner", "--runs", runs, "--scratch", os.path.join(ctx.scratch_mem, "st-b"),
                 "--out", out_b, f"plain|{b}/startup_plain", f"emptylib|{b}/startup_emptylib",
                 f"lttng_session|{b}/startup_lttng"])
        ctx.lttng.stop(s)
        bres = json.load(open(out_b))
        res["phases"]["B"] = bres["variants"]
        ev, disc = bt_count(ctx, d)
        res["checks"]["lttng"] = {"recorded": ev, "expected": 100 * (bres["runs"] + bres["warmup"]),
                                  "discarded_messages": disc}
        ctx.lttng.destroy(s)
        shutil.rmtree(d, ignore_errors=True)
    for phase in res["phases"].values():
        for v in phase:
            v.pop("kept", None)
    return res


LM_MODES = ["plain", "nop5", "split", "hush_functions", "uftrace"]
LM_METRICS = {"pipe_us": False, "call_ns": False, "create_per_s": True, "delete_per_s": True,
              "create_cpu_us": False, "delete_cpu_us": False}


def lmbench(ctx):
    pipe, calls, files, reps = (3000, 1000000, 300, 2) if ctx.quick else (20000, 5000000, 2000, 5)
    modes = [m for m in LM_MODES if m != "uftrace" or ctx.have_uftrace]
    log(f"workload 5: compiled in but off: lmbench-style loops x {reps}, modes {modes}")
    runs = {m: [] for m in modes}
    fsdir = os.path.join(ctx.scratch_disk, "lmfiles")
    os.makedirs(fsdir, exist_ok=True)
    checks = {}
    for rep in range(reps):
        for m in rotated(modes, rep):
            exe = os.path.join(ctx.cmp, "cmp_lm_" + ({"hush_functions": "nop5", "uftrace": "nop5"}.get(m, m)))
            args = [exe, pipe, calls, files, fsdir]
            trace = ctx.fresh(ctx.scratch_mem, f"lm-{m}")
            if m == "hush_functions":
                argv = [ctx.hushtrace, "record", "--functions", "lm::*", "--buffer-size", "16M", "-o", trace, "--"] + args
            elif m == "uftrace":
                argv = ["uftrace", "record", "-P", "^lm::", "--no-libcall", "--no-sched", "-d", trace] + args
            else:
                argv = args
            runs[m].append(ctx.run_json(argv))
            if m == "hush_functions":
                ev, lost, _ = hush_report(ctx, trace)
                checks.setdefault(m, []).append({"recorded": ev, "lost": lost})
            elif m == "uftrace":
                checks.setdefault(m, []).append({"bytes": dir_bytes(trace, lambda r: not r.endswith(".dat"))})
            shutil.rmtree(trace, ignore_errors=True)
    metrics = {}
    for k in LM_METRICS:
        st = {m: summary([r[k] for r in runs[m]]) for m in modes}
        for s in st.values():
            s["ratio"] = s["median"] / st["plain"]["median"]
        metrics[k] = st
    shutil.rmtree(fsdir, ignore_errors=True)
    return {"what": f"lmbench analogue: pipe round trip between 2 threads ({pipe}), small calls "
                    f"({calls} x 2), create + delete {files} empty files on disk; built plain, "
                    "-pg -mfentry -mnop-mcount (one 5-byte NOP), -fpatchable-function-entry=5; traced "
                    "runs trace every function of the program (namespace lm) in the 5-byte NOP build",
            "repetitions": reps, "metrics": metrics, "higher_is_better": LM_METRICS, "checks": checks}


def _tp_run(ctx, tracer, threads, rate, secs):
    """One throughput run into a fresh on-disk trace: emitted, recorded, lost, bytes/event."""
    exe = os.path.join(ctx.cmp, "cmp_hush" if tracer == "hushtrace" else "cmp_lttng")
    argv = [exe, "throughput", threads, f"{rate:.0f}", secs]
    trace = ctx.fresh(ctx.scratch_disk, f"tp-{tracer}")
    if tracer == "hushtrace":
        res = ctx.run_json(argv, {"HUSHTRACE_EVENTS": "hushbench:two_int", "HUSHTRACE_OUTPUT": trace,
                                  "HUSHTRACE_BUFFER_SIZE": "4M"})
        rec, lost, nbytes = hush_report(ctx, trace)
    else:
        s = f"hushcmp-{os.getpid()}-tp"
        ctx.lttng.create(s, trace)
        ctx.lttng.start(s)
        res = ctx.run_json(argv)
        ctx.lttng.stop(s)
        lost = ctx.lttng.discarded(s)
        ctx.lttng.destroy(s)
        rec = res["events"] - lost
        nbytes = dir_bytes(trace, lambda r: "index" in r or r.endswith("metadata"))
    shutil.rmtree(trace, ignore_errors=True)
    return {"rate_asked": rate, "rate_per_thread": res["events_per_s_per_thread"],
            "emitted": res["events"], "recorded": rec, "lost": lost,
            "bytes_per_event": nbytes / rec if rec else None}


def throughput(ctx):
    secs, steps = (0.4, 1) if ctx.quick else (2.0, 5)
    tracers = ["hushtrace"] + (["lttng-ust"] if ctx.lttng else [])
    log(f"workload 6: throughput ceiling to disk, {secs} s runs, {steps} bisection steps, {tracers}")
    state = {}
    for rep in range(steps + 1):
        for tracer in rotated(tracers, rep):
            for threads in (1, 2):
                st = state.setdefault((tracer, threads), {"runs": [], "lo": None, "hi": None, "next": 0})
                if st["next"] is None:
                    continue
                r = _tp_run(ctx, tracer, threads, st["next"], secs)
                st["runs"].append(r)
                if r["lost"] == 0:
                    st["lo"] = r
                    # A lossless run at full speed: the producer, not the consumer, is the limit.
                    st["next"] = None if r["rate_asked"] == 0 else (
                        (r["rate_asked"] + st["hi"]["rate_asked"]) / 2 if st["hi"]
                        else r["rate_asked"] * 1.5)
                else:
                    if r["rate_asked"] == 0:
                        r["rate_asked"] = r["rate_per_thread"]
                        sustained = r["recorded"] / secs / threads
                        st["hi"] = r
                        st["next"] = 0.8 * sustained
                        continue
                    st["hi"] = r
                    st["next"] = (r["rate_asked"] + st["lo"]["rate_asked"]) / 2 if st["lo"] else r["rate_asked"] / 2
    out = {"what": f"events/s per thread of 2 x int32, emitted in 1 ms slices for {secs} s into an "
                   "on-disk trace (hushtrace: 4 MiB ring per thread; LTTng-UST: 4 x 1 MiB "
                   "sub-buffers per CPU, discard mode); the ceiling is the highest rate tried with "
                   "no event lost", "seconds": secs, "configs": {}}
    for (tracer, threads), st in state.items():
        lo = st["lo"]
        out["configs"][f"{tracer}/{threads}"] = {
            "tracer": tracer, "threads": threads, "runs": st["runs"],
            "ceiling_per_thread": lo["rate_per_thread"] if lo else 0.0,
            "producer_bound": bool(lo and lo["rate_asked"] == 0),
            "bytes_per_event": (lo or st["runs"][-1])["bytes_per_event"],
            "lowest_lossy_rate": st["hi"]["rate_asked"] if st["hi"] else None}
    return out


def _first_event_mono_ns(ctx, trace):
    """Smallest (a, b) = (CLOCK_MONOTONIC s, ns) payload of the cmp spin events in an LTTng trace."""
    ctx.record(["babeltrace2", trace])
    p = subprocess.Popen(["babeltrace2", trace], stdout=subprocess.PIPE, text=True)
    best = None
    for i, line in enumerate(p.stdout):
        m = re.search(r"a = (\d+), b = (\d+)", line)
        if m:
            t = int(m.group(1)) * 1_000_000_000 + int(m.group(2))
            best = t if best is None else min(best, t)
        if i > 2000:  # time-ordered output: the first lines hold the first events
            break
    p.kill()
    p.wait()
    return best


def control(ctx):
    runs = 3 if ctx.quick else 15
    log(f"workload 7: control latency, {runs} runs per tracer")
    out = {"what": "enable -> first event recorded; stop -> data on disk (the stop request returns "
                   "once every event is written); an application emitting at full speed "
                   "(hushtrace) or every ~2 us (LTTng-UST)", "runs": runs, "tracers": {}}
    cb = os.path.join(ctx.scratch_mem, "control_bench.json")
    ctx.run([f"{ctx.bin}/control_bench", "--target", f"{ctx.bin}/bench_control_target", "--runs", runs,
             "--scratch", os.path.join(ctx.scratch_mem, "ctl"), "--out", cb])
    h = json.load(open(cb))
    pick = lambda s: s and {"median": s["median_us"] / 1000, "min": s["min_us"] / 1000,
                            "max": s["max_us"] / 1000, "n": s["n"]}
    out["tracers"]["hushtrace"] = {"start_to_first_event_ms": pick(h["start_to_first_event"]),
                                   "start_command_ms": pick(h["start_request"]),
                                   "stop_to_data_on_disk_ms": pick(h["stop_request"])}
    if not ctx.lttng:
        return out
    app = subprocess.Popen([os.path.join(ctx.cmp, "cmp_lttng"), "spin", str(runs * 4 + 10)],
                           stdout=subprocess.DEVNULL)
    ctx.record([os.path.join(ctx.cmp, "cmp_lttng"), "spin", runs * 4 + 10])
    time.sleep(0.5)  # registered with the session daemon
    first, start_cmd, stop_cmd = [], [], []
    try:
        for i in range(runs):
            s = f"hushcmp-{os.getpid()}-ctl{i}"
            d = os.path.join(ctx.scratch_mem, f"lttng-ctl{i}")
            ctx.lttng.create(s, d)
            t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            ctx.lttng.start(s)
            t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            time.sleep(0.05)
            t2 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            ctx.lttng.stop(s)
            t3 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            fe = _first_event_mono_ns(ctx, d)
            if fe is not None:
                first.append((fe - t0) / 1e6)
            start_cmd.append((t1 - t0) / 1e6)
            stop_cmd.append((t3 - t2) / 1e6)
            ctx.lttng.destroy(s)
            shutil.rmtree(d, ignore_errors=True)
    finally:
        app.kill()
        app.wait()
    out["tracers"]["lttng-ust"] = {"start_to_first_event_ms": summary(first),
                                   "start_command_ms": summary(start_cmd),
                                   "stop_to_data_on_disk_ms": summary(stop_cmd)}
    return out
