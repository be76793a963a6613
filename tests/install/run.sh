#!/usr/bin/env bash
# Installs a configured+built hushtrace into a temporary prefix, then builds a
# consumer against it with find_package() and with pkg-config, runs it and
# reads its trace back with babeltrace2 and with the installed hushtrace::reader.
# Usage: tests/install/run.sh [BUILD_DIR]   (default: build)
set -euo pipefail

fail() { echo "install test: FAILED: $*" >&2; exit 1; }
step() { echo "install test: $*"; }

here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
[ -f "$build/CMakeCache.txt" ] || fail "$build is not a configured build directory"
build="$(cd "$build" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hushtrace-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

step "installing $build into $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
  { cat "$tmp/install.log" >&2; fail "cmake --install"; }

if [ -x "$prefix/bin/hushtrace" ]; then
  step "checking the CLI's bash and zsh completion and man pages"
  completion="$prefix/share/bash-completion/completions/hushtrace"
  [ -f "$completion" ] || fail "no $completion installed"
  bash -c "source '$completion' && complete -p hushtrace" >/dev/null || fail "$completion does not load"
  zsh_completion="$prefix/share/zsh/vendor-completions/_hushtrace"
  [ -f "$zsh_completion" ] || fail "no $zsh_completion installed"
  if command -v zsh >/dev/null; then
    zsh -n "$zsh_completion" || fail "$zsh_completion: zsh -n"
  fi
  if command -v help2man >/dev/null; then
    man1="$prefix/share/man/man1"
    # The overview and one page per command of the installed CLI, each rendering without a warning.
    for page in hushtrace $("$prefix/bin/hushtrace" --help |
                            awk '/^commands:/ {on = 1; next} /^$/ {on = 0} on {print "hushtrace-" $1}'); do
      [ -f "$man1/$page.1" ] || fail "no share/man/man1/$page.1 installed"
      man -l "$man1/$page.1" >/dev/null 2>"$tmp/man.err" || fail "man -l $page.1: $(cat "$tmp/man.err")"
      groff -man -Tutf8 -ww -z "$man1/$page.1" 2>"$tmp/man.err" || fail "groff $page.1"
      [ ! -s "$tmp/man.err" ] || fail "$page.1: $(cat "$tmp/man.err")"
    done
  fi
fi

step "building the consumer with find_package(hushtrace)"
cmake -S "$here/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log" >&2; fail "configuring the consumer"; }
cmake --build "$tmp/consumer" ||
  fail "building the consumer against the installed package"

step "building the consumer with pkg-config"
pc="$(find "$prefix" -name hushtrace.pc -print -quit)"
[ -n "$pc" ] || fail "no hushtrace.pc installed"
PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_PATH
# shellcheck disable=SC2046  # pkg-config output is meant to be split
g++ -std=c++20 -o "$tmp/consumer_pc" "$here/consumer/main.cc" $(pkg-config --cflags --libs hushtrace) ||
  fail "building the consumer with pkg-config flags"
libdir="$(pkg-config --variable=libdir hushtrace)"

# check NAME CMD...: runs CMD with tracing on and reads its trace back.
check() {
  local name="$1" trace="$tmp/trace-$1"
  shift
  step "running $name"
  HUSHTRACE_EVENTS='consumer:*' HUSHTRACE_OUTPUT="$trace" "$@" || fail "$name exited with $?"
  [ -f "$trace/metadata" ] || fail "$name wrote no $trace/metadata"
  babeltrace2 "$trace" >"$tmp/$name.txt" 2>&1 ||
    { cat "$tmp/$name.txt" >&2; fail "babeltrace2 could not read the trace of $name"; }
  grep -q 'consumer:hello' "$tmp/$name.txt" ||
    { cat "$tmp/$name.txt" >&2; fail "no consumer:hello event in the trace of $name"; }
}

check consumer "$tmp/consumer/consumer"
step "reading the consumer's trace with hushtrace::reader"
"$tmp/consumer/read_trace" "$tmp/trace-consumer" >"$tmp/read_trace.txt" ||
  fail "read_trace exited with $?"
grep -q '^consumer:hello [1-9]' "$tmp/read_trace.txt" ||
  { cat "$tmp/read_trace.txt" >&2; fail "read_trace found no consumer:hello event"; }
[ ! -x "$tmp/consumer/consumer_static" ] || check consumer_static "$tmp/consumer/consumer_static"
check consumer_pc env LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pc"
step "OK"
