"""Tables and plots of bench/compare/run.py: the Markdown written between the `compare`
GENERATED markers of docs/benchmarks.md (every number from the results JSON), and the PNG
latency distributions."""

import json
import os
import re
import subprocess
import sys
import tempfile

LABELS = {"untraced": "untraced", "hush_off": "hushtrace linked, off", "hush_on": "hushtrace on",
          "lttng_off": "LTTng-UST linked, no session", "lttng_on": "LTTng-UST on",
          "hush_on_other": "hushtrace on, other library (run.py --other-lib)"}
LM_LABELS = {"plain": "plain build", "nop5": "5-byte NOP build (-pg -mfentry -mnop-mcount)",
             "split": "five 1-byte NOPs (-fpatchable-function-entry=5)",
             "hush_functions": "hushtrace record --functions 'lm::*' (5-byte NOP build)",
             "uftrace": "uftrace record -P '^lm::' --no-libcall --no-sched (same binary)"}
LM_METRIC_LABELS = {"pipe_us": "pipe round trip, us", "call_ns": "small call, ns",
                    "create_per_s": "file creates/s", "delete_per_s": "file deletes/s",
                    "create_cpu_us": "process CPU per file create, us",
                    "delete_cpu_us": "process CPU per file delete, us"}


def num(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.2f}M"
    if a >= 1e4:
        return f"{v / 1e3:.1f}k"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(s):
    if not s:
        return "-"
    r = f" ({s['ratio']:.2f}x)" if "ratio" in s else ""
    return f"{num(s['median'])} [{num(s['min'])}-{num(s['max'])}]{r}"


def _startup(w):
    names = {"plain": "empty C++ main, not linked", "emptylib": "linked with an empty .so",
             "hush_nosession": "libhushtrace.so, no session", "hush_session": "libhushtrace.so, active session",
             "lttng_nosession": "LTTng-UST linked, sessiond running, no session",
             "lttng_session": "LTTng-UST linked, active session"}
    rows = ["| variant | phase | wall median | min | p90 | median / not linked | paired median overhead vs not linked: wall | CPU |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for ph, vs in w["phases"].items():
        base = next(v for v in vs if v["name"] == "plain")
        for v in vs:
            over = v["paired_median_diff_us"].get("plain")
            cpu = v["paired_cpu_median_diff_us"].get("plain")
            rows.append(f"| {names.get(v['name'], v['name'])} | {ph} | {num(v['median_us'])} | {num(v['min_us'])} | "
                        f"{num(v['p90_us'])} | {v['median_us'] / base['median_us']:.2f}x | "
                        f"{'' if v['name'] == 'plain' else '-' if over is None else f'{over:+,.0f}'} | "
                        f"{'' if v['name'] == 'plain' else '-' if cpu is None else f'{cpu:+,.0f}'} |")
    c = w["checks"]
    kept = ", ".join(f"{k['recorded']}" for k in c["hushtrace_kept_traces"])
    lt = c.get("lttng")
    rows.append("")
    rows.append(f"Microseconds, {w['runs']} interleaved runs per variant (bench/startup_runner); CPU: the "
                "child's user + system time from wait4 (its threads included, not lttng-sessiond's). Phase A: "
                "no LTTng session; phase B: an LTTng session with `hushbench:*` enabled is active. "
                f"Events read back: hushtrace kept traces hold [{kept}] of 100 each"
                + (f"; LTTng-UST recorded {lt['recorded']:,} of {lt['expected']:,}." if lt else "."))
    return rows


def _latency(ws):
    modes = ["untraced", "hush_off", "hush_on", "lttng_off", "lttng_on"]
    rows = ["| workload | metric | " + " | ".join(LABELS[m] for m in modes) + " |",
            "|---|---|" + "---:|" * len(modes)]
    spec = [("pingpong", "modes", "round trips/s (higher is better)"),
            ("pingpong", "cpu_us", "process CPU per round trip, us"),
            ("wakeup", "min_us", "lateness min, us"), ("wakeup", "modes", "lateness avg, us"),
            ("wakeup", "p99_us", "lateness p99, us"), ("hackbench", "modes", "completion, ms"),
            ("hackbench", "cpu_ms", "process CPU, ms")]
    names = {"pingpong": "2. context switches (pipe ping-pong)", "wakeup": "3. wake-up latency",
             "hackbench": "4. message passing"}
    for w, key, metric in spec:
        if w not in ws:
            continue
        st = ws[w].get(key)
        if not st:
            continue
        rows.append(f"| {names[w]} | {metric} | " + " | ".join(cell(st.get(m)) for m in modes) + " |")
    rows.append("")
    rows.append("Each cell: median [min-max] over the repetitions (ratio of medians to untraced). "
                "Events read back:")
    for w in ("pingpong", "wakeup", "hackbench"):
        if w not in ws:
            continue
        c = ws[w]["checks"]
        h = c["hushtrace_runs"]
        ok = sum(1 for x in h if x["recorded"] == x["expected"] and not x["lost"])
        line = (f"- {names[w]}: {ws[w]['what']}; {ws[w]['repetitions']} repetitions. hushtrace: {ok} of "
                f"{len(h)} runs hold every event ({sum(x['recorded'] for x in h):,} events)")
        if "lttng" in c:
            lt = c["lttng"]
            line += (f"; LTTng-UST: {lt['recorded']:,} of {lt['expected']:,} events, "
                     f"{lt['discarded']:,} discarded")
        rows.append(line + ".")
    return rows


def _lmbench(w):
    modes = [m for m in LM_LABELS if m in next(iter(w["metrics"].values()))]
    rows = ["| metric | " + " | ".join(LM_LABELS[m] for m in modes) + " |", "|---|" + "---:|" * len(modes)]
    for k, st in w["metrics"].items():
        better = "higher" if w["higher_is_better"][k] else "lower"
        rows.append(f"| {LM_METRIC_LABELS[k]} ({better} is better) | "
                    + " | ".join(cell(st.get(m)) for m in modes) + " |")
    rows.append("")
    rows.append(f"{w['what']}; {w['repetitions']} repetitions, ratios to the plain build.")
    return rows


def _throughput(w):
    rows = ["| tracer | threads | ceiling: events/s per thread, no loss | lowest rate tried that lost events | "
            "bytes per event on disk | runs (rate asked -> lost) |", "|---|---:|---:|---:|---:|---|"]
    for c in w["configs"].values():
        runs = "; ".join(f"{'max' if r['rate_asked'] == 0 else num(r['rate_asked'])} -> {num(r['lost'])}"
                         for r in c["runs"])
        ceil = num(c["ceiling_per_thread"]) + (" (producer-bound: full speed lost nothing)" if c["producer_bound"] else "")
        bpe = c["bytes_per_event"]
        rows.append(f"| {c['tracer']} | {c['threads']} | {ceil} | {num(c['lowest_lossy_rate'])} | "
                    f"{'-' if bpe is None else f'{bpe:.2f}'} | {runs} |")
    rows.append("")
    rows.append(w["what"] + ".")
    return rows


def _control(w):
    rows = ["| tracer | enable -> first event, ms | start command, ms | stop -> data on disk, ms |",
            "|---|---:|---:|---:|"]
    for t, c in w["tracers"].items():
        rows.append(f"| {t} | {cell(c['start_to_first_event_ms'])} | {cell(c['start_command_ms'])} | "
                    f"{cell(c['stop_to_data_on_disk_ms'])} |")
    rows.append("")
    rows.append(f"{w['what']}; {w['runs']} runs each, median [min-max]. hushtrace: bench/control_bench "
                "(the CLI's client code in process, ptrace-free control socket); LTTng-UST: `lttng start` / "
                "`lttng stop` (which waits for the data) on a fresh session each run.")
    return rows


def render(results, json_rel):
    m = results["machine"]
    ws = results["workloads"]
    lines = [f"Run of {results['date']}, {results['elapsed_s']} s{' (--quick)' if results['quick'] else ''}; "
             f"results: `{json_rel}`.",
             f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory_gib']} GiB, kernel {m['kernel']}; {m['gcc']}; "
             f"LTTng-UST {m['lttng_ust']}, {m['lttng']}; {m['uftrace']}; {m['babeltrace2']}; "
             f"hushtrace git {m['hushtrace_git']}; build {m['build']}.",
             f"Load average (1, 5, 15 min) at start {' '.join(results['load_start'])}, at end "
             f"{' '.join(results['load_end'])}: the 2 CPUs were shared with other people's builds.", ""]
    if "startup" in ws:
        lines += ["#### 1. Start-up", ""] + _startup(ws["startup"]) + [""]
    if any(w in ws for w in ("pingpong", "wakeup", "hackbench")):
        lines += ["#### 2-4. Context switches, wake-up latency, message passing", ""] + _latency(ws) + [""]
    if "lmbench" in ws:
        lines += ["#### 5. Compiled in but off, then function-traced", ""] + _lmbench(ws["lmbench"]) + [""]
    if "throughput" in ws:
        lines += ["#### 6. Throughput ceiling to disk", ""] + _throughput(ws["throughput"]) + [""]
    if "control" in ws:
        lines += ["#### 7. Control latency", ""] + _control(ws["control"]) + [""]
    for p in results.get("plots", []):
        lines.append(f"![{p['title']}](../{p['path']})")
    if results.get("plots"):
        lines.append("")
    lines += ["Commands run (scratch paths abbreviated; `.N` is the run number):", "", "```"]
    lines += results["commands"] + ["```"]
    return "\n".join(lines) + "\n"


def update_doc(doc, results, json_rel):
    text = open(doc).read()
    pat = re.compile(r"(<!-- BEGIN GENERATED: compare -->\n).*?(<!-- END GENERATED: compare -->)", re.S)
    if not pat.search(text):
        raise RuntimeError(f"{doc} has no `compare` GENERATED block")
    text = pat.sub(lambda mo: mo.group(1) + render(results, json_rel) + mo.group(2), text)
    open(doc, "w").write(text)


def _python_with_matplotlib():
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return py
    raise RuntimeError("matplotlib not found (Debian: python3-matplotlib for /usr/bin/python3)")


def plots(samples, outdir, root):
    """Draws the plots in a Python that has matplotlib (Debian's, when this one is another)."""
    with tempfile.TemporaryDirectory() as tmp:
        args = []
        for key, modes in samples.items():
            for mode, arr in modes.items():
                path = os.path.join(tmp, f"{key}.{mode}.i32")
                with open(path, "wb") as f:
                    arr.tofile(f)
                args.append(f"{key}:{mode}:{path}")
        out = subprocess.run([_python_with_matplotlib(), os.path.abspath(__file__), "plot", outdir, root] + args,
                             check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def _draw(files, outdir, root):
    """CDFs (log x) of the per-event samples: wake-up lateness and ping-pong round trips."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    made = []
    spec = [("wakeup", "wake-up lateness, 200 us period (us)", "compare-wakeup.png"),
            ("pingpong", "pipe ping-pong round trip (us)", "compare-pingpong.png")]
    for key, xlabel, fname in spec:
        if key not in files:
            continue
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        for mode, path in files[key].items():
            v = np.sort(np.fromfile(path, dtype=np.int32).astype(float) / 1000.0)
            v = v[v > 0]
            if not len(v):
                continue
            y = np.arange(1, len(v) + 1) / len(v)
            ax1.plot(v, y, label=LABELS[mode], lw=1.2)
            ax2.plot(v, 1 - y + 1 / len(v), label=LABELS[mode], lw=1.2)
        # The CDF shows the body (p0.5-p99.5 of all modes); the tail panel shows everything.
        allv = np.concatenate([np.fromfile(p, dtype=np.int32) for p in files[key].values()]) / 1000.0
        ax1.set_xlim(max(np.percentile(allv, 0.5) * 0.8, 0.1), np.percentile(allv, 99.5) * 1.25)
        for ax in (ax1, ax2):
            ax.set_xscale("log")
            ax.set_xlabel(xlabel)
            ax.grid(True, which="both", alpha=0.3)
        ax1.set_ylabel("fraction <= x (CDF)")
        ax2.set_yscale("log")
        ax2.set_ylabel("fraction > x (tail)")
        ax1.legend(fontsize=8)
        fig.suptitle(f"{xlabel.split(' (')[0]}: traced vs untraced (all repetitions)")
        fig.tight_layout()
        path = os.path.join(outdir, fname)
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append({"title": xlabel.split(" (")[0], "path": os.path.relpath(path, root)})
    return made


def summary_text(results):
    ws = results["workloads"]
    out = []
    for w in ("pingpong", "wakeup", "hackbench"):
        if w in ws:
            out.append(f"{w}: " + ", ".join(f"{m} {cell(s)}" for m, s in ws[w]["modes"].items()))
    if "throughput" in ws:
        out.append("throughput: " + ", ".join(f"{k} {num(c['ceiling_per_thread'])}/s" for k, c in ws["throughput"]["configs"].items()))
    if "control" in ws:
        out.append("control: " + ", ".join(f"{t} first event {cell(c['start_to_first_event_ms'])} ms"
                                           for t, c in ws["control"]["tracers"].items()))
    return "\n".join(out)


if __name__ == "__main__" and len(sys.argv) > 3 and sys.argv[1] == "plot":
    # cmpreport.py plot OUTDIR ROOT KEY:MODE:FILE...  (int32 samples in ns); prints the plot list.
    files = {}
    for spec in sys.argv[4:]:
        key, mode, path = spec.split(":", 2)
        files.setdefault(key, {})[mode] = path
    print(json.dumps(_draw(files, sys.argv[2], sys.argv[3])))
