#!/usr/bin/env bash
# SQL figures (docs/benchmarks.md, "SQL: SQLite export and shipping to ClickHouse"), on a
# generated trace of 1 M events (bench/trace_gen: 2 threads, 8-event request groups):
#   * `export --format sqlite` side by side with `export --format perfetto` (same trace, same run):
#     wall and CPU time (user + sys), events per second by both, peak RSS, file size;
#   * `ship` into a local clickhouse-server started here (temporary config, data dir, free ports):
#     events per second, bytes on the wire per event (gzip-compressed RowBinary bodies, as the
#     shipper counts them), the shipper's CPU per million events;
#   * the agent (`ship --watch DIR --once`) over the same trace: its CPU per million events.
#
#   bench/sql_bench.sh                       # build dir: $HUSH_BENCH_BUILD_DIR, default build/
#   HUSH_SQL_BENCH_EVENTS=2000000 HUSH_SQL_BENCH_RUNS=5 bench/sql_bench.sh
#
# Each command runs HUSH_SQL_BENCH_RUNS times (default 3); every run is printed, then the median.
# Results go to stdout and to bench/results/sql/sql_bench.txt. Traces live in $HUSHBENCH_TMP
# (default /dev/shm).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${HUSH_BENCH_BUILD_DIR:-build}
N=${HUSH_SQL_BENCH_EVENTS:-1000000}
RUNS=${HUSH_SQL_BENCH_RUNS:-3}
BASE=${HUSHBENCH_TMP:-/dev/shm}
[ -w "$BASE" ] || BASE=${TMPDIR:-/tmp}
SCRATCH=$(mktemp -d "$BASE/hush-sql-bench.XXXXXX")
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill -9 "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
OUT_DIR=$ROOT/bench/results/sql
mkdir -p "$OUT_DIR"
RESULT=$OUT_DIR/sql_bench.txt

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD_DIR" -j2 --target hushtrace trace_gen >/dev/null
HUSH=$ROOT/$BUILD_DIR/tools/hushtrace/hushtrace
GEN=$ROOT/$BUILD_DIR/bench/trace_gen
[ -x /usr/sbin/clickhouse-server ] || { echo "sql_bench.sh: clickhouse-server is needed (scripts/setup.sh)" >&2; exit 1; }
export HUSHTRACE_NO_PROGRESS=1

trace=$SCRATCH/watch/trace
mkdir -p "$SCRATCH/watch"
"$GEN" "$trace" "$N" 2 >/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP_PORT=$(free_port)
TCP_PORT=$(free_port)
CH=$SCRATCH/clickhouse
mkdir -p "$CH/data" "$CH/tmp"
cat >"$CH/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
 <logger><level>warning</level><log>$CH/server.log</log><errorlog>$CH/error.log</errorlog><console>0</console></logger>
 <http_port>$HTTP_PORT</http_port><tcp_port>$TCP_PORT</tcp_port><listen_host>127.0.0.1</listen_host>
 <path>$CH/data/</path><tmp_path>$CH/tmp/</tmp_path><users_config>users.xml</users_config>
 <default_profile>default</default_profile><default_database>default</default_database>
 <mark_cache_size>5368709120</mark_cache_size>
</yandex>
EOF
cat >"$CH/users.xml" <<EOF
<?xml version="1.0"?>
<yandex><profiles><default></default></profiles>
 <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
 <quotas><default></default></quotas></yandex>
EOF
/usr/sbin/clickhouse-server --config-file="$CH/config.xml" >"$CH/stdout" 2>&1 &
SERVER_PID=$!
URL=http://127.0.0.1:$HTTP_PORT/
for _ in $(seq 1 600); do
  [ "$(curl -s "${URL}?query=SELECT%201" || true)" = 1 ] && break
  sleep 0.1
done
[ "$(curl -s "${URL}?query=SELECT%201" || true)" = 1 ] || { echo "sql_bench.sh: clickhouse-server did not start" >&2; cat "$CH/stdout" "$CH/error.log" >&2; exit 1; }

{
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# build: $BUILD_DIR ($(grep CMAKE_BUILD_TYPE: "$BUILD_DIR/CMakeCache.txt" | cut -d= -f2)); $N events; clickhouse-server $(curl -s "${URL}?query=SELECT%20version()"); $RUNS runs each"
  printf '%-16s %4s %8s %8s %12s %12s %11s %12s\n' command run wall_s cpu_s "M_ev/s_wall" "M_ev/s_cpu" peak_rss_kb extra
} | tee "$RESULT"

# run LABEL RUN EXTRA_CMD -- COMMAND...: one timed run; EXTRA_CMD prints the last column.
run() {
  local label=$1 i=$2 extra=$3
  shift 4
  /usr/bin/time -f '%e %U %S %M' -o "$SCRATCH/time" "$@" >/dev/null 2>"$SCRATCH/err" ||
    { cat "$SCRATCH/err" >&2; exit 1; }
  read -r wall user sys rss <"$SCRATCH/time"
  awk -v n="$N" -v l="$label" -v i="$i" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v x="$(eval "$extra")" 'BEGIN {
    c = u + s; if (w < 0.005) w = 0.005; if (c < 0.005) c = 0.005;
    printf "%-16s %4d %8.2f %8.2f %12.3f %12.3f %11d %12s\n", l, i, w, c, n / w / 1e6, n / c / 1e6, r, x }'
}
# The shipper's own count of request-body bytes, per event.
wire() { sed -n 's/.* \([0-9]*\) bytes sent$/\1/p' "$SCRATCH/err" | awk -v n="$N" '{ printf "%.2fB/ev", $1 / n }'; }
size_of() { stat -c %s "$1" | awk -v n="$N" '{ printf "%.1fB/ev", $1 / n }'; }

# The exports first, side by side (perfetto, sqlite, perfetto, ...), then the shipping: the
# server merges the parts of each insert in the background after it, which would take CPU from
# exports run in between.
for i in $(seq 1 "$RUNS"); do
  run export-perfetto "$i" "size_of $SCRATCH/out.pftrace" -- "$HUSH" export "$trace" --format perfetto -o "$SCRATCH/out.pftrace"
  run export-sqlite "$i" "size_of $SCRATCH/out.db" -- "$HUSH" export "$trace" --format sqlite -o "$SCRATCH/out.db"
done | tee -a "$RESULT.runs"
for i in $(seq 1 "$RUNS"); do
  # A fresh database each run: every chunk is sent.
  run ship "$i" wire -- "$HUSH" ship "$trace" --to "${URL}bench_ship_$i"
  rm -f "$SCRATCH/watch/.hushtrace-ship-state"
  run agent-once "$i" wire -- "$HUSH" ship --watch "$SCRATCH/watch" --once --to "${URL}bench_agent_$i"
done | tee -a "$RESULT.runs"
cat "$RESULT.runs" >>"$RESULT"
rm -f "$RESULT.runs"
# Medians of each command: wall, CPU, rates; and the CPU per million events.
awk -v n="$N" '
  $1 !~ /^#/ && $1 != "command" { w[$1] = w[$1] " " $3; c[$1] = c[$1] " " $4; x[$1] = $8 }
  function median(s,   a, k, i, j, t) {
    k = split(s, a, " ");
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((k + 1) / 2)]
  }
  END {
    for (l in w) {
      mw = median(w[l]); mc = median(c[l]);
      printf "median %-16s wall %.2f s, cpu %.2f s: %.3f M events/s wall, %.3f M events/s cpu, %.2f cpu-s per M events, %s\n", l, mw, mc, n / mw / 1e6, n / mc / 1e6, mc / (n / 1e6), x[l]
    }
  }' "$RESULT" | sort | tee -a "$RESULT"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULT"
