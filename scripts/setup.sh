#!/usr/bin/env bash
# Installs what building and testing hushtrace needs on Debian 12. Idempotent.
set -euo pipefail
exec "$(dirname "$0")/ensure-packages.sh" \
  cmake ninja-build g++ clang clang-format clang-tidy \
  libgtest-dev libgmock-dev googletest libbenchmark-dev \
  babeltrace2 libbabeltrace2-dev valgrind pkg-config libclang-rt-14-dev python3 protobuf-compiler \
  uftrace python3-bt2 libcli11-dev help2man zsh \
  libsqlite3-dev sqlite3 libcurl4-openssl-dev zlib1g-dev clickhouse-server clickhouse-client \
  g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
