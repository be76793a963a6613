#!/usr/bin/env python3
"""The time a `start` and a `stop` request take inside the traced process (issue 14).

    bench/control_inprocess.py [--build-dir build] [--target paced|spin] [--runs 40]
                               [--lib DIR] [--scratch DIR]

Talks to `bench_control_target TARGET`'s control socket directly (no CLI process), as the CLI
does: one `status` to open the channel, then RUNS rounds of `start` (events ctl:*, default
buffer, a fresh trace under SCRATCH, ext4 by default), 5 ms of recording, `stop`, 50 ms of pause
(a `start` within 20 ms of a `stop` would first free the stopped session). Prints the
medians of the round trip of `stop` as this client sees it and of the server's own figures
(`server-wall-us`, `server-cpu-us`: HandleRequest, timed by the server and appended to every
reply). --lib runs the target against another build's libhushtrace.so.0.1 (LD_LIBRARY_PATH).
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--target", choices=["paced", "spin"], default="paced")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--lib", default=None)
    ap.add_argument("--scratch", default=None)
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    cli = os.path.join(build, "tools/hushtrace/hushtrace")
    env = dict(os.environ)
    if a.lib:
        env["LD_LIBRARY_PATH"] = os.path.abspath(a.lib)
    scratch = tempfile.mkdtemp(prefix="ctl-inprocess.", dir=a.scratch or build)
    proc = subprocess.Popen([os.path.join(build, "bench/bench_control_target"), a.target],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    rows = {"start_server_wall": [], "stop_round_trip": [], "stop_server_wall": [], "stop_server_cpu": []}
    try:
        time.sleep(0.3)
        if subprocess.run([cli, "status", str(proc.pid)], capture_output=True).returncode != 0:
            raise SystemExit("hushtrace status failed")
        path = f"/tmp/hushtrace-{os.geteuid()}/{proc.pid}.sock"

        def request(text):
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                s.connect(path)
                t = time.perf_counter_ns()
                s.send(text.encode())
                reply = s.recv(1 << 17).decode()
                us = (time.perf_counter_ns() - t) / 1e3
            if not reply.startswith("ok"):
                raise SystemExit(f"request failed: {reply}")
            return us, dict(line.split(" ", 1) for line in reply.splitlines()[1:] if " " in line)

        for i in range(a.runs):
            trace = os.path.join(scratch, f"run-{i}")
            _, r = request(f"hushtrace-control 1 start\nevent ctl:*\noutput {trace}\n")
            rows["start_server_wall"].append(float(r["server-wall-us"]))
            time.sleep(0.005)
            us, r = request("hushtrace-control 1 stop\n")
            rows["stop_round_trip"].append(us)
            rows["stop_server_wall"].append(float(r["server-wall-us"]))
            rows["stop_server_cpu"].append(float(r["server-cpu-us"]))
            shutil.rmtree(trace)
            # A user's next command comes later than this loop's would: the server frees a
            # stopped session once idle for 20 ms, and a `start` sooner than that frees it first.
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    fs = subprocess.run(["stat", "-f", "-c", "%T", a.scratch or build], capture_output=True, text=True).stdout.strip()
    print(f"target {a.target}, library {a.lib or 'of the build'}, traces on {fs}, {a.runs} runs; medians, us:")
    print("  " + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in rows.items()))


if __name__ == "__main__":
    main()
