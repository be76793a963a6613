#!/usr/bin/python3
"""Reads a hushtrace trace with babeltrace2's Python bindings: the documented Python route.

A hushtrace trace is a CTF 1.8 directory (docs/format.md), so babeltrace2's `ctf.fs` source reads
it; on Debian the bindings are the package python3-bt2 (for Debian's /usr/bin/python3).

usage: /usr/bin/python3 examples/hushtrace_bt2.py DIR [PROVIDER:NAME]

Prints one JSON object: the number of events per name and per thread (`vtid` of the packet
context), and the times of the first and last events in ns since the epoch. With PROVIDER:NAME,
it prints instead the fields of each such event, one JSON object a line, with its time and tid.
"""
import collections
import json
import sys

import bt2


def events(trace_dir):
    """(ns since the epoch, tid, name, fields) of every event of the trace, in time order."""
    for msg in bt2.TraceCollectionMessageIterator(trace_dir):
        if type(msg) is not bt2._EventMessageConst:
            continue  # stream and packet beginnings and ends, discarded-events notices
        event = msg.event
        tid = int(event.packet.context_field["vtid"])
        payload = event.payload_field
        fields = {} if payload is None else {k: to_python(v) for k, v in payload.items()}
        yield msg.default_clock_snapshot.ns_from_origin, tid, event.name, fields


def to_python(field):
    """A bt2 field as a JSON-ready value (integers, reals, strings, enum labels, arrays)."""
    if isinstance(field, bt2._EnumerationFieldConst):
        labels = field.labels
        return labels[0] if labels else int(field)
    if isinstance(field, bt2._IntegerFieldConst):
        return int(field)
    if isinstance(field, bt2._RealFieldConst):
        return float(field)
    if isinstance(field, bt2._StringFieldConst):
        return str(field)
    if isinstance(field, bt2._BoolFieldConst):
        return bool(field)
    if isinstance(field, bt2._ArrayFieldConst):
        return [to_python(f) for f in field]
    return str(field)


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[2])
    trace_dir = argv[1]
    if len(argv) == 3:
        for ns, tid, name, fields in events(trace_dir):
            if name == argv[2]:
                print(json.dumps({"epoch_ns": ns, "tid": tid, "fields": fields}))
        return
    by_name, by_tid = collections.Counter(), collections.Counter()
    first = last = None
    for ns, tid, name, _ in events(trace_dir):
        by_name[name] += 1
        by_tid[tid] += 1
        first = ns if first is None else first
        last = ns
    print(json.dumps({"events": dict(by_name), "threads": {str(t): n for t, n in by_tid.items()},
                      "first_epoch_ns": first, "last_epoch_ns": last}, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv)
