#!/usr/bin/env python3
"""Independent check of a `hushtrace export --format chrome` file (used by export_test.cc).

Parses the file with Python's json module (strict: the bytes must be UTF-8, NaN/Infinity
literals are refused), checks that B/E events nest per (pid, tid) with non-decreasing
timestamps, and prints a normalized summary, one item per line, for the C++ test to compare:

  phase <ph> <count>
  process <pid> <name>
  thread <pid> <tid> <name>                  (every thread_name metadata event, in order)
  slices <pid> <tid> <name>,<name>,...       (B events in order)
  end_args <pid> <tid> <json>                (args of E events that have some)
  begin_args <pid> <tid> <json>
  instant <pid> <tid> <name> <json args>   (ASCII: other characters as \\uXXXX)
  string <pid> <tid> <name> <arg> <hex>    (each string argument of an instant, as UTF-8 hex)
  counter <pid> <name> <v>,<v>,...
Exit status 1 with a message on a format or nesting error.
"""
import json
import sys


def fail(msg):
    print("check_chrome_json: " + msg, file=sys.stderr)
    sys.exit(1)


def reject_constant(name):
    fail("non-JSON constant " + name)


def main():
    raw = open(sys.argv[1], "rb").read()
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        fail("not UTF-8: " + str(e))
    doc = json.loads(text, parse_constant=reject_constant)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents array")
    phases = {}
    stacks = {}
    last_ts = {}
    slices = {}
    counters = {}
    out = []
    for ev in doc["traceEvents"]:
        ph = ev.get("ph")
        phases[ph] = phases.get(ph, 0) + 1
        pid, tid = ev.get("pid"), ev.get("tid")
        if not isinstance(pid, int):
            fail("event without an integer pid: %r" % ev)
        if ph == "M":
            if ev["name"] == "process_name":
                out.append("process %d %s" % (pid, ev["args"]["name"]))
            elif ev["name"] == "thread_name":
                out.append("thread %d %d %s" % (pid, tid, ev["args"]["name"]))
            continue
        ts = ev.get("ts")
        if not isinstance(ts, (int, float)):
            fail("event without a numeric ts: %r" % ev)
        if ph == "C":
            counters.setdefault((pid, ev["name"]), []).append(ev["args"]["value"])
            continue
        if not isinstance(tid, int):
            fail("event without an integer tid: %r" % ev)
        key = (pid, tid)
        if ts < last_ts.get(key, 0):
            fail("time goes backwards on %r: %r" % (key, ev))
        last_ts[key] = ts
        if ph == "B":
            stacks.setdefault(key, []).append(ev["name"])
            slices.setdefault(key, []).append(ev["name"])
            if "args" in ev:
                out.append("begin_args %d %d %s" % (pid, tid, json.dumps(ev["args"], sort_keys=True)))
        elif ph == "E":
            if not stacks.get(key):
                fail("E without B on %r at ts %r" % (key, ts))
            stacks[key].pop()
            if "args" in ev:
                out.append("end_args %d %d %s" % (pid, tid, json.dumps(ev["args"], sort_keys=True)))
        elif ph == "i":
            if ev.get("s") != "t":
                fail("instant without thread scope: %r" % ev)
            args = ev.get("args", {})
            out.append("instant %d %d %s %s" % (pid, tid, ev["name"], json.dumps(args, sort_keys=True)))
            for arg, value in sorted(args.items()):
                if isinstance(value, str):
                    out.append("string %d %d %s %s %s" % (pid, tid, ev["name"], arg,
                                                          value.encode("utf-8").hex()))
        else:
            fail("unexpected phase %r" % ph)
    for key, stack in stacks.items():
        if stack:
            fail("unclosed slices on %r: %r" % (key, stack))
    for ph in sorted(phases):
        out.append("phase %s %d" % (ph, phases[ph]))
    for (pid, tid), names in sorted(slices.items()):
        out.append("slices %d %d %s" % (pid, tid, ",".join(names)))
    for (pid, name), values in sorted(counters.items()):
        out.append("counter %d %s %s" % (pid, name, ",".join(repr(v) for v in values)))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
