#!/usr/bin/env python3
"""`make bench-compare`: the seed experiments (/work/shared/seeds: start-up, context switches,
wake-up latency, message passing, compiled-in-but-off, throughput, control) run side by side:
untraced, hushtrace linked but off, hushtrace on, and the peer (LTTng-UST with a user-space
session of lttng-tools, uftrace for function tracing), interleaved, several repetitions.

  bench/compare/run.py [--quick] [--build-dir build] [--out FILE.json] [--doc docs/benchmarks.md]
                       [--plots DIR] [--only W1,W2...]

Writes a JSON results file, regenerates the block between the `compare` GENERATED markers of
--doc, and draws PNG latency distributions into --plots. Exits non-zero if a workload produced no
numbers. A lttng-sessiond started here is stopped at the end (also on errors and signals).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cmpreport  # noqa: E402
import latency  # noqa: E402
import suite  # noqa: E402
from cmplib import Ctx, Lttng, log  # noqa: E402

TARGETS = ["hushtrace", "cmp_plain", "cmp_hush", "cmp_lm_plain", "cmp_lm_nop5", "cmp_lm_split",
           "startup_plain", "startup_emptylib", "startup_hush", "startup_runner", "control_bench",
           "bench_control_target"]
LTTNG_TARGETS = ["cmp_lttng", "startup_lttng"]
WORKLOADS = ["startup", "pingpong", "wakeup", "hackbench", "lmbench", "throughput", "control"]


def have(*tools):
    return all(shutil.which(t) for t in tools)


def ensure_peers():
    """LTTng-UST + lttng-tools + uftrace, installed by scripts/setup-peers.sh when missing."""
    lttng_ok = lambda: have("lttng", "lttng-sessiond", "babeltrace2") and subprocess.run(
        ["pkg-config", "--exists", "lttng-ust"]).returncode == 0
    if not (lttng_ok() and have("uftrace")):
        log("peers missing: scripts/setup-peers.sh")
        if subprocess.run([os.path.join(ROOT, "scripts", "setup-peers.sh")]).returncode != 0:
            log("scripts/setup-peers.sh failed: the missing peers' columns stay empty")
    return lttng_ok(), have("uftrace")


def build(build_dir, with_lttng):
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True, stdout=subprocess.DEVNULL)
    targets = TARGETS + (LTTNG_TARGETS if with_lttng else [])
    if with_lttng and not os.path.exists(os.path.join(build_dir, "bench", "compare", "cmp_lttng")):
        # Configured before LTTng-UST was installed: configure again so that it is found.
        subprocess.run(["cmake", build_dir], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "-j2", "--target"] + targets, check=True,
                   stdout=subprocess.DEVNULL)


def check(results):
    """Every workload produced numbers for every mode it ran; returns the list of problems."""
    bad = []
    w = results["workloads"]
    for name in ("pingpong", "wakeup", "hackbench"):
        if name in w:
            for m, s in w[name]["modes"].items():
                if not s or not s["median"] > 0:
                    bad.append(f"{name}/{m}: no number")
            for c in w[name]["checks"]["hushtrace_runs"]:
                if c["recorded"] != c["expected"] or c["lost"]:
                    bad.append(f"{name}: hushtrace recorded {c['recorded']} of {c['expected']} events")
            lt = w[name]["checks"].get("lttng")
            if lt and lt["recorded"] == 0:
                bad.append(f"{name}: LTTng recorded no event")
    if "startup" in w:
        for ph in w["startup"]["phases"].values():
            for v in ph:
                if not v["samples"]:
                    bad.append(f"startup/{v['name']}: no sample")
        for c in w["startup"]["checks"]["hushtrace_kept_traces"]:
            if c["recorded"] != 100:
                bad.append(f"startup: a hushtrace trace holds {c['recorded']} of 100 events")
    if "lmbench" in w:
        for k, st in w["lmbench"]["metrics"].items():
            for m, s in st.items():
                if not s or not s["median"] > 0:
                    bad.append(f"lmbench/{k}/{m}: no number")
    if "throughput" in w:
        for k, c in w["throughput"]["configs"].items():
            if not c["runs"] or not c["runs"][0]["recorded"]:
                bad.append(f"throughput/{k}: nothing recorded")
    if "control" in w:
        for t, c in w["control"]["tracers"].items():
            for k, s in c.items():
                if not s:
                    bad.append(f"control/{t}/{k}: no number")
    return bad


def machine(build_dir):
    def out(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "absent"
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    git = out(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "include"],
                           capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": " ".join(os.uname()[2:5:2]),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "gcc": out(["gcc", "--version"]), "lttng": out(["lttng", "--version"]),
            "lttng_ust": out(["pkg-config", "--modversion", "lttng-ust"]),
            "uftrace": out(["uftrace", "--version"]), "babeltrace2": out(["babeltrace2", "--version"]),
            "hushtrace_git": git + (" (src/ or include/ modified)" if dirty else ""),
            "build": f"{os.path.relpath(build_dir, ROOT)} (RelWithDebInfo: -O2 -g)"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run (<= 2 min): fewer, shorter runs")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", help="results JSON (default bench/results/compare-DATE.json; "
                                  "--quick: BUILD/compare-quick.json)")
    ap.add_argument("--doc", help="markdown file whose `compare` GENERATED block is rewritten "
                                  "(default docs/benchmarks.md for a full run, none for --quick)")
    ap.add_argument("--plots", help="directory for the PNG plots (default bench/results for a "
                                    "full run, none for --quick)")
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(WORKLOADS))
    ap.add_argument("--traces-on-disk", action="store_true",
                    help="traces of the latency workloads (pingpong, wakeup, hackbench) under the "
                         "build directory instead of /dev/shm, for both tracers")
    ap.add_argument("--other-lib", help="directory holding another libhushtrace.so.0.1 (an older "
                                         "build): adds its traced runs (mode hush_on_other) to "
                                         "the latency workloads, interleaved with the others")
    ap.add_argument("--reps", type=int, help="repetitions per mode of the latency workloads "
                                             "(default: each workload's own)")
    a = ap.parse_args()
    build_dir = os.path.abspath(a.build_dir)
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
    out = a.out or (os.path.join(build_dir, "compare-quick.json") if a.quick
                    else os.path.join(ROOT, "bench", "results", f"compare-{stamp}.json"))
    doc = a.doc or (None if a.quick else os.path.join(ROOT, "docs", "benchmarks.md"))
    plots = a.plots or (None if a.quick else os.path.join(ROOT, "bench", "results"))
    only = a.only.split(",") if a.only else WORKLOADS

    t_start = time.time()
    load_start = open("/proc/loadavg").read().split()[:3]
    with_lttng, with_uftrace = ensure_peers()
    if plots:
        os.makedirs(plots, exist_ok=True)
        subprocess.run([os.path.join(ROOT, "scripts", "ensure-packages.sh"), "python3-matplotlib"],
                       check=True, stdout=subprocess.DEVNULL)
    log(f"build {build_dir}")
    build(build_dir, with_lttng)

    base_mem = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    scratch_mem = tempfile.mkdtemp(prefix="hushcmp.", dir=base_mem)
    scratch_disk = tempfile.mkdtemp(prefix="hushcmp-disk.", dir=build_dir)
    ctx = Ctx(ROOT, build_dir, a.quick, scratch_mem, scratch_disk)
    ctx.have_uftrace = with_uftrace
    ctx.trace_base = scratch_disk if a.traces_on_disk else scratch_mem
    ctx.reps = a.reps
    ctx.other_lib = os.path.abspath(a.other_lib) if a.other_lib else None
    lt = Lttng(ctx) if with_lttng else None

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    results = {"suite": "bench-compare", "quick": a.quick,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": machine(build_dir), "load_start": load_start, "workloads": {}}
    samples = {"pingpong": {}, "wakeup": {}}
    try:
        if lt:
            lt.up()
            ctx.lttng = lt
        runners = {"startup": lambda: suite.startup(ctx),
                   "pingpong": lambda: latency.pingpong(ctx, samples["pingpong"]),
                   "wakeup": lambda: latency.wakeup(ctx, samples["wakeup"]),
                   "hackbench": lambda: latency.hackbench(ctx),
                   "lmbench": lambda: suite.lmbench(ctx),
                   "throughput": lambda: suite.throughput(ctx),
                   "control": lambda: suite.control(ctx)}
        for name in WORKLOADS:
            if name in only:
                t = time.time()
                results["workloads"][name] = runners[name]()
                results["workloads"][name]["elapsed_s"] = round(time.time() - t, 1)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if lt:
            lt.close()
        shutil.rmtree(scratch_mem, ignore_errors=True)
        shutil.rmtree(scratch_disk, ignore_errors=True)
    results["elapsed_s"] = round(time.time() - t_start)
    results["load_end"] = open("/proc/loadavg").read().split()[:3]
    results["peers"] = {"lttng": with_lttng, "uftrace": with_uftrace}
    results["commands"] = ctx.commands
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    if plots:
        results["plots"] = cmpreport.plots(samples, plots, ROOT)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    if doc:
        cmpreport.update_doc(doc, results, os.path.relpath(out, ROOT))
    bad = check(results)
    for b in bad:
        print(f"bench-compare: CHECK FAILED: {b}", file=sys.stderr)
    print(cmpreport.summary_text(results))
    print(f"bench-compare: {len(results['workloads'])} workloads in {results['elapsed_s']} s; "
          f"results in {out}" + (f", table in {doc}" if doc else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
