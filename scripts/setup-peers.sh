#!/usr/bin/env bash
# Installs the peer tracers the benchmarks compare against (LTTng-UST, uftrace)
# and hyperfine. Idempotent.
set -euo pipefail
exec "$(dirname "$0")/ensure-packages.sh" \
  liblttng-ust-dev lttng-tools liburcu-dev uftrace hyperfine
