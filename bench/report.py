#!/usr/bin/env python3
"""Aggregates the raw outputs of bench/run_all.sh into bench/results/latest.json and rewrites the
generated tables of docs/benchmarks.md (the blocks between <!-- BEGIN GENERATED: x --> and
<!-- END GENERATED: x -->). Every number it writes comes from the raw files; nothing is typed in.

  report.py build --raw DIR --out latest.json --doc docs/benchmarks.md --n1 N --n2 N ...
  report.py annotate-lines ANNOTATE_OUTPUT EVENTS   # per-event Ir per source line
  report.py tables latest.json --doc docs/benchmarks.md   # re-render the doc from a json
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

# Benchmark name -> (row key, events per iteration), per tracer.
GB_ROWS = {
    "hushtrace": {
        "BM_EmptyLoop": ("empty", 1),
        "BM_Disabled": ("disabled", 1),
        "BM_Enabled2Int/real_time/threads:1": ("two_int_1t", 1),
        "BM_Enabled2Int/real_time/threads:2": ("two_int_2t", 1),
        "BM_EnabledString32/real_time": ("string32", 1),
        "BM_Span/real_time": ("span", 2),
    },
    "lttng": {
        "BM_LttngEmptyLoop": ("empty", 1),
        "BM_LttngDisabled": ("disabled", 1),
        "BM_Lttng2Int/real_time/threads:1": ("two_int_1t", 1),
        "BM_Lttng2Int/real_time/threads:2": ("two_int_2t", 1),
        "BM_LttngString32/real_time": ("string32", 1),
        "BM_LttngSpan/real_time": ("span", 2),
    },
}
EVENTS_PER_ITERATION = {"empty": 1, "disabled": 1, "disabled_flag": 1, "enabled2int": 1, "string32": 1,
                        "span": 2}
WARMUP = 10000


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001 - best effort description of the machine
        return ""


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------------------------------------
def annotate_lines(path, events):
    """Per-event instruction counts per source line from `callgrind_annotate --auto=yes`."""
    rows = []
    current_file = None
    line_no = None
    count_re = re.compile(r"^\s*([0-9,]+)\s+\(\s*[0-9.]+%\)\s?(.*)$")
    dot_re = re.compile(r"^\s*\.\s+(.*)$")
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = re.match(r"^-- Auto-annotated source: (.*)$", line)
            if m:
                current_file = m.group(1).strip()
                line_no = None
                continue
            m = re.match(r"^-- line (\d+) -+$", line)
            if m:
                line_no = int(m.group(1))
                continue
            if current_file is None or line_no is None:
                continue
            if line.startswith("-----") or line.startswith("-- "):
                line_no = None
                continue
            if re.match(r"^\s*[0-9,]+\s+\(\s*[0-9.]+%\)\s+=>", line):
                continue  # a call's inclusive cost, not a source line
            m = count_re.match(line)
            if m:
                count = int(m.group(1).replace(",", ""))
                rows.append((count / events, current_file, line_no, m.group(2).strip()))
                line_no += 1
                continue
            if dot_re.match(line) or line.strip() == "":
                line_no += 1
    print(f"# Ir per event by source line ({events} events), lines with >= 0.2 per event")
    total = 0.0
    by_file = {}
    for per, fname, ln, src in rows:
        by_file[fname] = by_file.get(fname, 0.0) + per
        total += per
    for per, fname, ln, src in sorted(rows, key=lambda r: (r[1], r[2])):
        if per >= 0.2:
            print(f"{per:7.2f}  {os.path.basename(fname)}:{ln}  {src[:110]}")
    print("# per file")
    for fname, per in sorted(by_file.items(), key=lambda kv: -kv[1]):
        print(f"{per:7.2f}  {fname}")
    print(f"{total:7.2f}  total")


def annotate_functions(path, events):
    """Per-event instruction counts per function from `callgrind_annotate --inclusive=no`."""
    rows = []
    in_table = False
    with open(path, errors="replace") as f:
        for line in f:
            if "file:function" in line:
                in_table = True
                continue
            if not in_table:
                continue
            m = re.match(r"^\s*([0-9,]+)\s+\(\s*[0-9.]+%\)\s+(.*)$", line.rstrip("\n"))
            if not m:
                if rows and line.startswith("----"):
                    break
                continue
            name = m.group(2).strip()
            obj = ""
            mo = re.match(r"^(.*?)\s+\[(.*)\]$", name)
            if mo:
                name, obj = mo.group(1), os.path.basename(mo.group(2))
            file_part, _, fn = name.rpartition(":")
            label = fn if file_part else name
            if file_part and file_part != "???":
                label = f"{fn} ({os.path.basename(file_part)})"
            if obj:
                label += f" [{obj}]"
            rows.append((int(m.group(1).replace(",", "")) / events, label))
    print(f"# Ir per event by function, self cost ({events} events), functions with >= 0.2 per event")
    total = 0.0
    for per, label in rows:
        total += per
        if per >= 0.2:
            print(f"{per:8.2f}  {label}")
    print(f"{total:8.2f}  total")


# ---------------------------------------------------------------------------------------------
def load_gbench(raw):
    """Medians over rounds of each benchmark's figures, per tracer."""
    out = {}
    for tracer in ("hushtrace", "lttng"):
        per_row = {}
        files = sorted(f for f in os.listdir(raw) if f.startswith(f"gbench_{tracer}_") and f.endswith(".json"))
        context = None
        for fname in files:
            with open(os.path.join(raw, fname)) as f:
                data = json.load(f)
            context = data.get("context", context)
            for b in data.get("benchmarks", []):
                if b.get("run_type") != "iteration" or b.get("error_occurred"):
                    continue
                key = GB_ROWS[tracer].get(b["name"])
                if key is None:
                    continue
                row, per_iter = key
                assert b.get("time_unit", "ns") == "ns", b
                sample = {
                    "ns_per_iteration": b["real_time"],
                    "cpu_ns_per_iteration": b["cpu_time"],
                    "iterations": b["iterations"],
                    "threads": b.get("threads", 1),
                }
                for c in ("ns_per_event_thread", "cpu_ns_per_event_thread", "events_per_s", "discarded"):
                    if c in b:
                        sample[c] = b[c]
                if row in ("empty", "disabled"):
                    sample["ns_per_event_thread"] = b["real_time"]
                    sample["cpu_ns_per_event_thread"] = b["cpu_time"]
                sample["file"] = fname
                per_row.setdefault(row, []).append(sample)
        agg = {}
        # 2 threads vs 1 thread, paired within each round (same process, minutes apart at most).
        round_ratios = {"ns_per_event_thread": [], "cpu_ns_per_event_thread": []}
        for fname in files:
            for key in round_ratios:
                one = median([x.get(key) for x in per_row.get("two_int_1t", []) if x["file"] == fname])
                two = median([x.get(key) for x in per_row.get("two_int_2t", []) if x["file"] == fname])
                if one and two:
                    round_ratios[key].append(two / one)
        for row, samples in per_row.items():
            a = {"rounds": len(samples)}
            for k in samples[0]:
                if k == "file":
                    continue
                vals = [s.get(k) for s in samples if s.get(k) is not None]
                a[k] = median(vals)
                if k in ("ns_per_event_thread", "cpu_ns_per_event_thread", "ns_per_iteration"):
                    a[k + "_min"] = min(vals)
                    a[k + "_max"] = max(vals)
            agg[row] = a
        agg["two_threads_vs_one_per_round"] = {
            key: {"per_round": vals, "median": median(vals)} for key, vals in round_ratios.items()}
        if context is not None:
            agg["_context"] = {k: context.get(k) for k in ("date", "host_name", "num_cpus", "mhz_per_cpu",
                                                           "library_build_type", "load_avg", "caches")}
        out[tracer] = agg
    return out


def load_callgrind(raw, n1, n2):
    ir = {}
    path = os.path.join(raw, "callgrind.txt")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4:
                tracer, mode, n, value = parts
                ir[(tracer, mode, int(n))] = int(value)
    out = {}
    for tracer in ("hush", "lttng"):
        t = {}
        for mode, per_iter in EVENTS_PER_ITERATION.items():
            a, b = ir.get((tracer, mode, n1)), ir.get((tracer, mode, n2))
            if a is None or b is None:
                continue
            per_iteration = (b - a) / (n2 - n1)
            t[mode] = {"ir_n1": a, "ir_n2": b, "per_iteration": per_iteration,
                       "per_event": per_iteration / per_iter}
        if "empty" in t:
            loop = t["empty"]["per_iteration"]
            for mode, v in t.items():
                v["per_event_net_of_loop"] = (v["per_iteration"] - loop) / EVENTS_PER_ITERATION[mode]
        if t:
            out["hushtrace" if tracer == "hush" else "lttng"] = t
    return out


def load_sizes(raw, n1, n2):
    path = os.path.join(raw, "sizes.txt")
    if not os.path.exists(path):
        return {}
    rows = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 7:
                rows[(p[0], int(p[1]))] = [int(x) for x in p[2:]]
    out = {}
    for tracer in ("hush", "lttng"):
        a, b = rows.get((tracer, n1)), rows.get((tracer, n2))
        if a is None or b is None:
            continue
        ev1, disc1, bytes1, x1, y1 = a
        ev2, disc2, bytes2, x2, y2 = b
        r = {
            "events_n1": ev1, "events_n2": ev2,
            "events_expected_n1": n1 + WARMUP, "events_expected_n2": n2 + WARMUP,
            "discarded_event_messages": disc1 + disc2,
            "trace_bytes_n1": bytes1, "trace_bytes_n2": bytes2,
            "bytes_per_event_marginal": (bytes2 - bytes1) / (ev2 - ev1) if ev2 != ev1 else None,
            "bytes_per_event_total": bytes2 / ev2 if ev2 else None,
        }
        if tracer == "hush":
            r["trace_files"] = "metadata + stream_* (the ring files, .ring_*, are reported apart)"
            r["ring_dir_apparent_bytes_n2"] = x2
            r["ring_dir_allocated_bytes_n2"] = y2
        else:
            r["trace_files"] = "every file of the session output (metadata, channel streams, index/)"
            r["stream_bytes_n1"] = x1
            r["stream_bytes_n2"] = x2
            r["stream_bytes_per_event_marginal"] = (x2 - x1) / (ev2 - ev1) if ev2 != ev1 else None
        out["hushtrace" if tracer == "hush" else "lttng"] = r
    return out


def load_keys(raw):
    """keys_enable_bench: one JSON object per line (op, event, sites, load, min/median/p90 us)."""
    path = os.path.join(raw, "keys_enable.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_startup(raw):
    out = {}
    for phase in ("a", "b"):
        path = os.path.join(raw, f"startup_{phase}.json")
        if os.path.exists(path):
            with open(path) as f:
                out[phase] = json.load(f)
    checks = []
    path = os.path.join(raw, "startup_checks.txt")
    if os.path.exists(path):
        with open(path) as f:
            checks = [line.split() for line in f if line.strip()]
    hush_checks = [int(c[2]) for c in checks if c[0] == "hush_session"]
    lttng_checks = [(int(c[2]), int(c[3])) for c in checks if c[0] == "lttng_session"]
    out["hush_session_events_checked"] = hush_checks
    if lttng_checks:
        out["lttng_session_events_seen"], out["lttng_session_events_expected"] = lttng_checks[0]
    return out


def machine():
    model = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    flags = sh("grep -m1 '^flags' /proc/cpuinfo")
    tsc = [f for f in ("constant_tsc", "nonstop_tsc") if f" {f}" in flags]
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "tsc_flags": tsc,
        "hypervisor": "hypervisor" in flags.split(),
        "uname": " ".join(platform.uname()[0:3]) + " " + platform.machine(),
        "memory": sh("free -h | awk '/Mem:/ {print $2}'"),
        "gcc": sh("gcc --version | head -1"),
        "glibc": sh("ldd --version | head -1"),
        "lttng_ust": sh("pkg-config --modversion lttng-ust"),
        "lttng_tools": sh("lttng --version | head -1"),
        "babeltrace2": sh("babeltrace2 --version | head -1"),
        "valgrind": sh("valgrind --version"),
        "google_benchmark": sh("dpkg-query -W -f='${Version}' libbenchmark-dev"),
        "load_average_at_report": sh("cut -d' ' -f1-3 /proc/loadavg"),
    }


def git_state(root):
    head = sh(f"git -C {root} rev-parse --short HEAD")
    dirty = sh(f"git -C {root} status --porcelain -- include src | wc -l")
    return {"head": head, "uncommitted_files_in_include_src": int(dirty or 0)}


# ---------------------------------------------------------------------------------------------
def fmt(x, digits=1, unit=""):
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return f"{x:,}{unit}"
    return f"{x:,.{digits}f}{unit}"


def ratio(a, b, digits=1):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.{digits}f}x"


def verdict(value, limit, unit, digits=1):
    """Met when the value, rounded as displayed, is within the limit."""
    if value is None:
        return "not measured"
    if round(value, digits) <= limit:
        return "met"
    over = value - limit
    return f"**missed** by {over:,.{digits}f}{unit} ({over / limit * 100:.1f}%)"


def render(res):
    gb_h = res.get("gbench", {}).get("hushtrace", {})
    gb_l = res.get("gbench", {}).get("lttng", {})
    cg_h = res.get("callgrind", {}).get("hushtrace", {})
    cg_l = res.get("callgrind", {}).get("lttng", {})
    sz = res.get("sizes", {})
    st = res.get("startup", {})
    blocks = {}

    def g(tab, row, key):
        return tab.get(row, {}).get(key)

    m = res["machine"]
    blocks["machine"] = "\n".join([
        f"- Date: {res['date']} (run took {res['elapsed_s']} s); hushtrace at git {res['git']['head']}"
        + (f" with {res['git']['uncommitted_files_in_include_src']} uncommitted file(s) in include/ or src/"
           if res['git']['uncommitted_files_in_include_src'] else ""),
        f"- CPU: {m['cpu']}, {m['cpus']} CPUs{' (virtual machine)' if m['hypervisor'] else ''}, "
        f"TSC flags: {', '.join(m['tsc_flags']) or 'none'}; memory {m['memory']}",
        f"- Kernel: {m['uname']}; {m['glibc']}; {m['gcc']}",
        f"- Peers and tools: LTTng-UST {m['lttng_ust']}, {m['lttng_tools']}, {m['babeltrace2']}, "
        f"{m['valgrind']}, Google Benchmark {m['google_benchmark']}",
        f"- Load average (1, 5, 15 min) at the start of the run: {res.get('load_average_start') or 'n/a'}; "
        f"at its end: {res.get('load_average_end') or m['load_average_at_report']} "
        "(the machine is shared: other people build and test on its 2 CPUs at the same time, so wall "
        "times include waiting for a CPU; thread CPU times and instruction counts do not)",
        f"- Build: `{res['build_dir']}` (RelWithDebInfo: -O2 -g), programs linked with libhushtrace.so",
    ])

    # Time.
    def per_event_cells(row, key="ns_per_event_thread"):
        h, l = g(gb_h, row, key), g(gb_l, row, key)
        return h, l

    rows = []
    eh, el = per_event_cells("empty")
    dh, dl = per_event_cells("disabled")
    rows.append(("empty loop (baseline), ns per iteration", fmt(eh, 2), fmt(el, 2), "", ""))
    rows.append(("disabled tracepoint, ns per iteration", fmt(dh, 2), fmt(dl, 2), "",
                 f"extra over the empty loop: hushtrace {fmt(None if dh is None or eh is None else dh - eh, 2)},"
                 f" LTTng-UST {fmt(None if dl is None or el is None else dl - el, 2)}"))
    h1, l1 = per_event_cells("two_int_1t")
    rows.append(("enabled, 2 x int32, 1 thread, ns per event", fmt(h1), fmt(l1), ratio(l1, h1),
                 f"samples min-max: hushtrace {fmt(g(gb_h, 'two_int_1t', 'ns_per_event_thread_min'))}-"
                 f"{fmt(g(gb_h, 'two_int_1t', 'ns_per_event_thread_max'))}, LTTng-UST "
                 f"{fmt(g(gb_l, 'two_int_1t', 'ns_per_event_thread_min'))}-"
                 f"{fmt(g(gb_l, 'two_int_1t', 'ns_per_event_thread_max'))}"))
    hc1, lc1 = per_event_cells("two_int_1t", "cpu_ns_per_event_thread")
    rows.append(("same, thread CPU time, ns per event", fmt(hc1), fmt(lc1), ratio(lc1, hc1),
                 f"samples min-max: hushtrace {fmt(g(gb_h, 'two_int_1t', 'cpu_ns_per_event_thread_min'))}-"
                 f"{fmt(g(gb_h, 'two_int_1t', 'cpu_ns_per_event_thread_max'))}, LTTng-UST "
                 f"{fmt(g(gb_l, 'two_int_1t', 'cpu_ns_per_event_thread_min'))}-"
                 f"{fmt(g(gb_l, 'two_int_1t', 'cpu_ns_per_event_thread_max'))}"))
    h2, l2 = per_event_cells("two_int_2t")
    def rr(tab, key):
        v = tab.get("two_threads_vs_one_per_round", {}).get(key, {})
        return v.get("median"), ", ".join(f"{x:.2f}" for x in v.get("per_round", []))

    rh_w, rh_w_all = rr(gb_h, "ns_per_event_thread")
    rl_w, rl_w_all = rr(gb_l, "ns_per_event_thread")
    rh_c, rh_c_all = rr(gb_h, "cpu_ns_per_event_thread")
    rl_c, rl_c_all = rr(gb_l, "cpu_ns_per_event_thread")
    rows.append(("enabled, 2 x int32, 2 threads, wall ns per event per thread", fmt(h2), fmt(l2), ratio(l2, h2),
                 f"2 threads / 1 thread, per round: hushtrace {rh_w_all} (median {fmt(rh_w, 2)}), "
                 f"LTTng-UST {rl_w_all} (median {fmt(rl_w, 2)})"))
    hc2, lc2 = per_event_cells("two_int_2t", "cpu_ns_per_event_thread")
    rows.append(("same, thread CPU time, ns per event per thread", fmt(hc2), fmt(lc2), ratio(lc2, hc2),
                 f"2 threads / 1 thread, per round: hushtrace {rh_c_all} (median {fmt(rh_c, 2)}), "
                 f"LTTng-UST {rl_c_all} (median {fmt(rl_c, 2)})"))
    rows.append(("enabled, 2 x int32, 2 threads, events/s (both threads)",
                 fmt(None if g(gb_h, 'two_int_2t', 'events_per_s') is None else g(gb_h, 'two_int_2t', 'events_per_s') / 1e6, 1, " M"),
                 fmt(None if g(gb_l, 'two_int_2t', 'events_per_s') is None else g(gb_l, 'two_int_2t', 'events_per_s') / 1e6, 1, " M"),
                 "", ""))
    hs, ls = per_event_cells("string32")
    rows.append(("enabled, one 32-character string, ns per event", fmt(hs), fmt(ls), ratio(ls, hs), ""))
    hsp, lsp = g(gb_h, "span", "ns_per_iteration"), g(gb_l, "span", "ns_per_iteration")
    rows.append(("span (begin + end), ns per span", fmt(hsp), fmt(lsp), ratio(lsp, hsp),
                 "hushtrace: HUSH_SPAN; LTTng-UST: span_begin + span_end events"))
    disc = [(r, g(gb_h, r, "discarded")) for r in ("two_int_1t", "two_int_2t", "string32", "span")]
    disc_txt = ", ".join(f"{r} {d * 100:.2f}%" for r, d in disc if d is not None)
    t = ["| | hushtrace | LTTng-UST | LTTng / hushtrace | notes |", "|---|---:|---:|---:|---|"]
    t += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows]
    t.append("")
    t.append(f"Medians of {gb_h.get('two_int_1t', {}).get('rounds', 0)} samples per tracer "
             f"({res.get('rounds')} rounds x {res.get('repetitions', 1)} repetitions, "
             f"`--benchmark_min_time={res['min_time']}`), rounds alternating hushtrace and LTTng-UST; "
             "'ns per event' is each thread's wall time over its own events. "
             f"Events hushtrace's ring discarded because its consumer thread fell behind "
             f"(median per round, share of events emitted): {disc_txt or 'n/a'}. "
             f"LTTng-UST checks (babeltrace2 on each round's trace): "
             + ", ".join(f"{k}: {v.get('events_recorded')} events recorded, {v.get('discarded_event_messages')} "
                         "discarded-event messages" for k, v in res.get("lttng_checks", {}).items()
                         if k.startswith("gbench")) + ".")
    blocks["time"] = "\n".join(t)

    # Instructions.
    def cg(tab, mode, key):
        return tab.get(mode, {}).get(key)

    t = ["| callgrind, instructions | hushtrace | LTTng-UST | LTTng / hushtrace |", "|---|---:|---:|---:|"]
    t.append(f"| empty loop, per iteration | {fmt(cg(cg_h, 'empty', 'per_iteration'), 2)} | "
             f"{fmt(cg(cg_l, 'empty', 'per_iteration'), 2)} | |")
    t.append(f"| disabled tracepoint, extra per iteration over the empty loop (hushtrace: static key, "
             f"a 5-byte NOP) | {fmt(cg(cg_h, 'disabled', 'per_event_net_of_loop'), 2)} | "
             f"{fmt(cg(cg_l, 'disabled', 'per_event_net_of_loop'), 2)} | |")
    t.append(f"| disabled tracepoint, load-and-branch fallback (`HUSH_NO_STATIC_KEYS`), extra per "
             f"iteration | {fmt(cg(cg_h, 'disabled_flag', 'per_event_net_of_loop'), 2)} | | |")
    for mode, label in (("enabled2int", "enabled, 2 x int32"), ("string32", "enabled, 32-character string"),
                        ("span", "span, per event (2 events per span)")):
        a, b = cg(cg_h, mode, "per_event"), cg(cg_l, mode, "per_event")
        an, bn = cg(cg_h, mode, "per_event_net_of_loop"), cg(cg_l, mode, "per_event_net_of_loop")
        t.append(f"| {label}, per event (loop included) | {fmt(a, 1)} | {fmt(b, 1)} | {ratio(b, a)} |")
        t.append(f"| {label}, per event net of the loop | {fmt(an, 1)} | {fmt(bn, 1)} | {ratio(bn, an)} |")
    t.append("")
    t.append(f"(Ir({res['n2']:,}) - Ir({res['n1']:,})) / {res['n2'] - res['n1']:,} iterations, collected only "
             "inside the loop function and what it calls (`--toggle-collect=bench_loop_MODE`), so start-up, "
             "warm-up and the consumer (hushtrace's thread, LTTng's consumer daemon) are not counted. "
             + ("LTTng-UST check: " + ", ".join(
                 f"{v.get('events_recorded')} of {v.get('events_expected')} events recorded"
                 for k, v in res.get("lttng_checks", {}).items() if k == "callgrind") + "."
                if "callgrind" in res.get("lttng_checks", {}) else ""))
    blocks["instructions"] = "\n".join(t)

    # Size.
    t = ["| 2 x int32 events on disk | hushtrace | LTTng-UST |", "|---|---:|---:|"]
    sh_, sl = sz.get("hushtrace", {}), sz.get("lttng", {})
    t.append(f"| events recorded (expected) at N = {res['n2'] + WARMUP:,} | {fmt(sh_.get('events_n2'))} "
             f"({fmt(sh_.get('events_expected_n2'))}) | {fmt(sl.get('events_n2'))} ({fmt(sl.get('events_expected_n2'))}) |")
    t.append(f"| trace bytes at N = {res['n2'] + WARMUP:,} | {fmt(sh_.get('trace_bytes_n2'))} | "
             f"{fmt(sl.get('trace_bytes_n2'))} |")
    t.append(f"| bytes per event, marginal (N = {res['n1'] + WARMUP:,} vs {res['n2'] + WARMUP:,}) | "
             f"{fmt(sh_.get('bytes_per_event_marginal'), 2)} | {fmt(sl.get('bytes_per_event_marginal'), 2)} |")
    t.append(f"| bytes per event, total / events at N = {res['n2'] + WARMUP:,} | "
             f"{fmt(sh_.get('bytes_per_event_total'), 2)} | {fmt(sl.get('bytes_per_event_total'), 2)} |")
    t.append("")
    t.append("hushtrace: metadata + stream files. Its ring files (`.ring_N` in the trace directory: the "
             "memory-mapped ring buffers, kept for crash recovery and removed by a clean stop): "
             f"{fmt(sh_.get('ring_dir_apparent_bytes_n2'))} bytes "
             f"apparent, {fmt(sh_.get('ring_dir_allocated_bytes_n2'))} bytes allocated at N = {res['n2'] + WARMUP:,}, "
             "not counted above. LTTng-UST: every file of the session output (metadata, per-CPU streams, "
             f"index/); streams alone: {fmt(sl.get('stream_bytes_per_event_marginal'), 2)} bytes per event marginal.")
    blocks["size"] = "\n".join(t)

    # Start-up.
    a = {v["name"]: v for v in st.get("a", {}).get("variants", [])}
    b = {v["name"]: v for v in st.get("b", {}).get("variants", [])}
    t = ["| variant | phase | wall median | wall min | wall p90 | CPU median | overhead vs not linked: wall (paired median / min - min), CPU | overhead vs empty .so: wall (paired median / min - min), CPU |",
         "|---|---|---:|---:|---:|---:|---:|---:|"]
    labels = {
        "plain": "empty C++ main, not linked",
        "emptylib": "linked with an empty .so",
        "hush_nosession": "libhushtrace.so, no session (100 disabled events)",
        "hush_session": "libhushtrace.so, active session, 100 events",
        "lttng_nosession": "LTTng-UST linked, sessiond running, no session (100 events)",
        "lttng_session": "LTTng-UST linked, active session, 100 events",
    }

    def overhead(vs, name, base):
        v, b = vs.get(name, {}), vs.get(base, {})
        if not v or not b:
            return ""
        return (f"{fmt(v.get('paired_median_diff_us', {}).get(base))} / {fmt(v['min_us'] - b['min_us'])}, "
                f"{fmt(v.get('paired_cpu_median_diff_us', {}).get(base))}")

    for phase, vs in (("A", a), ("B", b)):
        for name, v in vs.items():
            t.append(f"| {labels.get(name, name)} | {phase} | {fmt(v['median_us'])} | {fmt(v['min_us'])} | "
                     f"{fmt(v['p90_us'])} | {fmt(v.get('cpu_median_us'))} | "
                     f"{'' if name == 'plain' else overhead(vs, name, 'plain')} | "
                     f"{'' if name in ('plain', 'emptylib') else overhead(vs, name, 'emptylib')} |")
    t.append("")
    runs = st.get("a", {}).get("runs")
    t.append(f"Microseconds. {runs} interleaved runs per variant after {st.get('a', {}).get('warmup')} warm-up "
             "rounds; wall time from posix_spawn() to waitpid(); CPU time is the child's user + system time (all "
             "threads) from wait4(). Phase A: no LTTng session exists (lttng-sessiond runs); phase B: an "
             "LTTng session with 'hushbench:*' enabled is active. 'Paired median' is the median over rounds of "
             "(variant - baseline) measured in the same round. hushtrace events checked with babeltrace2 in "
             f"{len(st.get('hush_session_events_checked', []))} kept traces: {st.get('hush_session_events_checked')} "
             "(100 expected each)"
             + (f"; LTTng-UST recorded {fmt(st.get('lttng_session_events_seen'))} of "
                f"{fmt(st.get('lttng_session_events_expected'))} start-up events (100 per run, warm-up included)."
                if st.get("lttng_session_events_expected") else "."))
    blocks["startup"] = "\n".join(t)

    # Targets.
    tg = ["| target | measured | LTTng-UST measured | verdict |", "|---|---:|---:|---|"]
    dis = cg(cg_h, "disabled", "per_event_net_of_loop")
    tg.append(f"| disabled tracepoint, static key: 1 extra instruction (LTTng-UST: 3) | {fmt(dis, 2)} | "
              f"{fmt(cg(cg_l, 'disabled', 'per_event_net_of_loop'), 2)} | {verdict(dis, 1, '', 2)} |")
    disf = cg(cg_h, "disabled_flag", "per_event_net_of_loop")
    tg.append(f"| disabled tracepoint, load-and-branch fallback <= 2 extra instructions | {fmt(disf, 2)} | "
              f"{fmt(cg(cg_l, 'disabled', 'per_event_net_of_loop'), 2)} | {verdict(disf, 2, '', 2)} |")
    v = verdict(h1, 15, " ns")
    if v.startswith("**missed**") and hc1 is not None and round(hc1, 1) <= 15:
        v += (f"; in thread CPU time {fmt(hc1)} ns, within the target: the wall time includes waiting for a "
              f"CPU on the shared machine (load average {res.get('load_average_start') or 'n/a'} at start)")
    tg.append(f"| enabled 2 x int32 event <= 15 ns, median, 1 thread (wall) | {fmt(h1)} ns (CPU: {fmt(hc1)} ns) | "
              f"{fmt(l1)} ns (CPU: {fmt(lc1)} ns) | {v} |")
    e2 = cg(cg_h, "enabled2int", "per_event")
    tg.append(f"| enabled 2 x int32 event <= 60 instructions (loop included) | {fmt(e2)} | "
              f"{fmt(cg(cg_l, 'enabled2int', 'per_event'))} | {verdict(e2, 60, '')} |")
    v = verdict(rh_c, 1.10, "", 2)
    if v.startswith("**missed**") and rh_w is not None and rl_w is not None and rh_w <= rl_w:
        v += "; in wall time hushtrace's ratio is no worse than LTTng-UST's"
    tg.append(f"| no slowdown per thread at 2 threads (per-thread CPU ns, 2 threads / 1 thread, median of the "
              f"per-round ratios; met if <= 1.10) | {fmt(rh_c, 2)} (wall: {fmt(rh_w, 2)}) | "
              f"{fmt(rl_c, 2)} (wall: {fmt(rl_w, 2)}) | {v} |")
    bpe = sh_.get("bytes_per_event_marginal")
    tg.append(f"| <= 12 bytes per 2 x int32 event on disk (LTTng-UST ~14) | {fmt(bpe, 2)} | "
              f"{fmt(sl.get('bytes_per_event_marginal'), 2)} | {verdict(bpe, 12, ' B', 2)} |")
    def startup_target(vs, name, limit, lttng_vs, lttng_name):
        v, p = vs.get(name, {}), vs.get("plain", {})
        med = v.get("paired_median_diff_us", {}).get("plain")
        mm = v["min_us"] - p["min_us"] if v and p else None
        cpu = v.get("paired_cpu_median_diff_us", {}).get("plain")
        lv, lp = lttng_vs.get(lttng_name, {}), lttng_vs.get("plain", {})
        lmed = lv.get("paired_median_diff_us", {}).get("plain")
        lmm = lv["min_us"] - lp["min_us"] if lv and lp else None
        verdict_text = verdict(med, limit, " us")
        if verdict_text.startswith("**missed**") and mm is not None and round(mm, 1) <= limit:
            verdict_text += (f"; min - min {fmt(mm)} us is within it: the median suffers from the load "
                             "(see the start-up section)")
        return (f"{fmt(med)} us (min - min: {fmt(mm)} us; CPU: {fmt(cpu)} us)",
                f"{fmt(lmed)} us (min - min: {fmt(lmm)} us)", verdict_text)

    m1, l1s, v1 = startup_target(a, "hush_nosession", 100, a, "lttng_nosession")
    tg.append(f"| start-up overhead <= 100 us, no session (vs not linked; wall, paired median) | {m1} | {l1s} | {v1} |")
    m2, l2s, v2 = startup_target(a, "hush_session", 1000, b, "lttng_session")
    tg.append(f"| start-up overhead <= 1 ms with an active session (vs not linked; wall, paired median) | {m2} | "
              f"{l2s} | {v2} |")
    checked = st.get("hush_session_events_checked", [])
    lost_ok = bool(checked) and all(c == 100 for c in checked)
    tg.append(f"| no early event lost (100 events at the top of main) | "
              f"{'100 of 100 in each of ' + str(len(checked)) + ' checked traces' if lost_ok else checked} | "
              f"{fmt(st.get('lttng_session_events_seen'))} of {fmt(st.get('lttng_session_events_expected'))} | "
              f"{'met' if lost_ok else '**missed**'} |")
    blocks["targets"] = "\n".join(tg)

    # Static keys: enable / disable time.
    kr = res.get("keys", [])
    t = ["| operation | sites | other thread | rounds | sites rewritten per call | min | median | p90 |",
         "|---|---:|---|---:|---:|---:|---:|---:|"]
    op_label = {"enable": "enable (one batch)", "disable": "disable (one batch)",
                "enable_one_by_one": "enable, one batch per site", "disable_one_by_one": "disable, one batch per site"}
    load_label = {"idle": "none", "busy": "calling every site in a loop"}
    for k in kr:
        t.append(f"| {op_label.get(k['op'], k['op'])} | {k['sites']:,} | {load_label.get(k['load'], k['load'])} | "
                 f"{k['rounds']} | {k['sites_written_per_call']:,} | {fmt(k['min_us'])} | {fmt(k['median_us'])} | "
                 f"{fmt(k['p90_us'])} |")
    t.append("")
    t.append("Microseconds of wall time per `Registry::Enable` / `Registry::DisableAll` call (state words + one "
             "patch batch: mprotect, 3 membarrier SYNC_CORE, mprotect back), `bench/keys_enable_bench.cc`; "
             "'calling every site': a second thread runs all the event's sites in a loop, so each membarrier "
             "must interrupt the other CPU. One-batch-per-site rows: a single call over all the sites.")
    blocks["keys"] = "\n".join(t) if kr else "(not measured)"

    bd = res.get("callgrind_breakdown", {})
    parts = []
    for key, title in (("hushtrace_lines", "hushtrace, 2 x int32 event, by source line (everything is inlined "
                                           "into the loop; the loop's own 3 instructions included)"),
                       ("lttng_functions", "LTTng-UST, 2 x int32 event, by function (liblttng-ust has no "
                                           "symbols: addresses)")):
        if key in bd:
            parts.append(f"{title}:\n\n```\n{bd[key].rstrip()}\n```")
    blocks["breakdown"] = "\n\n".join(parts) if parts else "(not measured)"

    cmds = res.get("commands", [])
    # Keep the doc readable: one line per distinct command shape.
    seen, shown = set(), []
    for c in cmds:
        shape = re.sub(r"\d{4,}", "N", re.sub(r"/\S*hushbench-run\.\w+", "$SCRATCH", c))
        shape = re.sub(r"hushbench-\d+-", "hushbench-PID-", shape)
        shape = shape.replace(res.get("root", "") + "/", "")
        if shape not in seen:
            seen.add(shape)
            shown.append(shape)
    blocks["commands"] = "```sh\n" + "\n".join(shown) + "\n```"
    return blocks


def update_doc(doc, blocks):
    with open(doc) as f:
        text = f.read()
    for name, body in blocks.items():
        pattern = re.compile(rf"(<!-- BEGIN GENERATED: {name} -->\n).*?(<!-- END GENERATED: {name} -->)", re.S)
        if not pattern.search(text):
            print(f"report.py: {doc} has no GENERATED block '{name}'", file=sys.stderr)
            continue
        text = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
    with open(doc, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "annotate-lines":
        annotate_lines(sys.argv[2], int(sys.argv[3]))
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "annotate-functions":
        annotate_functions(sys.argv[2], int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["build", "tables"])
    ap.add_argument("json", nargs="?")
    ap.add_argument("--raw")
    ap.add_argument("--out")
    ap.add_argument("--doc")
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--n1", type=int, default=100000)
    ap.add_argument("--n2", type=int, default=1100000)
    ap.add_argument("--elapsed", type=int, default=0)
    ap.add_argument("--min-time", default="")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--load-start", default="")
    ap.add_argument("--load-end", default="")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args.cmd == "tables":
        with open(args.json) as f:
            res = json.load(f)
    else:
        raw = args.raw
        with open(os.path.join(raw, "commands.txt")) as f:
            commands = [line.rstrip("\n") for line in f if line.strip()]
        checks = {}
        p = os.path.join(raw, "lttng_checks.json")
        if os.path.exists(p):
            with open(p) as f:
                checks = json.load(f)
        res = {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "elapsed_s": args.elapsed,
            "root": root,
            "build_dir": args.build_dir,
            "n1": args.n1,
            "n2": args.n2,
            "min_time": args.min_time,
            "rounds": args.rounds,
            "repetitions": args.repetitions,
            "load_average_start": args.load_start,
            "load_average_end": args.load_end,
            "machine": machine(),
            "git": git_state(root),
            "gbench": load_gbench(raw),
            "callgrind": load_callgrind(raw, args.n1, args.n2),
            "sizes": load_sizes(raw, args.n1, args.n2),
            "startup": load_startup(raw),
            "keys": load_keys(raw),
            "lttng_checks": checks,
            "callgrind_breakdown": {
                name: open(os.path.join(raw, fname)).read()
                for name, fname in (("hushtrace_lines", "callgrind_lines_hush_enabled2int.txt"),
                                    ("hushtrace_functions", "callgrind_functions_hush_enabled2int.txt"),
                                    ("lttng_functions", "callgrind_functions_lttng_enabled2int.txt"))
                if os.path.exists(os.path.join(raw, fname))
            },
            "commands": commands,
        }
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2, sort_keys=False)
            f.write("\n")
    blocks = render(res)
    if args.doc:
        update_doc(args.doc, blocks)
    else:
        for name, body in blocks.items():
            print(f"## {name}\n{body}\n")


if __name__ == "__main__":
    main()
