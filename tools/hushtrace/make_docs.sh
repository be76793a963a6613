#!/usr/bin/env bash
# Makes the man pages and the shell completion scripts of the built CLI from its own help and
# option declarations, so that none can drift from the parser (cli_app.h).
# Usage: make_docs.sh HUSHTRACE OUTDIR [HELP2MAN]
#   OUTDIR/hushtrace.bash      `hushtrace completion bash`
#   OUTDIR/_hushtrace          `hushtrace completion zsh`
#   with HELP2MAN, one page per command as git and perf have (`man hushtrace-record`):
#   OUTDIR/hushtrace.1         help2man of `hushtrace --help`: the commands with their summaries,
#                              SEE ALSO the page of each
#   OUTDIR/hushtrace-CMD.1     help2man of `hushtrace CMD --help`, for every command
# Pages of commands that no longer exist are removed, so that installing OUTDIR/*.1 installs
# exactly the commands of this build.
set -euo pipefail
cli="$1" out="$2" help2man="${3:-}"
mkdir -p "$out"
for shell in bash zsh; do
  file="$out/hushtrace.bash"
  [ "$shell" = bash ] || file="$out/_hushtrace"
  "$cli" completion "$shell" >"$file.tmp"
  mv "$file.tmp" "$file"
done
[ -n "$help2man" ] || exit 0

tmp="$(mktemp -d "${TMPDIR:-/tmp}/hushtrace-docs.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
version=$("$cli" --version)  # "hushtrace 0.1.0"
# The subcommands: the lines "  NAME  summary" under "commands:" in `hushtrace --help`.
"$cli" --help | awk '/^commands:/ {on = 1; next} /^$/ {on = 0} on' >"$tmp/commands"
[ -s "$tmp/commands" ] || { echo "make_docs.sh: '$cli --help' lists no command" >&2; exit 1; }

# page NAME SUMMARY INCLUDE [COMMAND]: help2man of `hushtrace [COMMAND] --help` as OUTDIR/NAME.1,
# named NAME. help2man escapes the help text for roff; INCLUDE is roff already (fixed text only).
# It runs a wrapper that capitalizes the help's headings: help2man makes "Usage:" the SYNOPSIS,
# "Options:" the OPTIONS section, and of other "Heading:" lines sections of their own.
page() {
  printf '#!/bin/sh\n"%s" %s "$@" | sed -e "s/^usage: /Usage: /" -e "s/^\\([a-z]*\\):\$/\\u\\1:/"\n' \
    "$cli" "${4:-}" >"$tmp/$1"
  chmod +x "$tmp/$1"
  "$help2man" --no-info --no-discard-stderr --section=1 --name="$2" \
    --version-string="$1 ${version#hushtrace }" --include="$3" --output="$out/$1.1.tmp" "$tmp/$1"
  mv "$out/$1.1.tmp" "$out/$1.1"
}

rm -f "$out"/hushtrace-*.1
see_also=""
while read -r name summary; do
  {
    echo "[SEE ALSO]"
    echo ".BR hushtrace (1);"
    echo "docs/cli.md in the hushtrace sources: every command with examples."
  } >"$tmp/$name.h2m"
  page "hushtrace-$name" "$summary" "$tmp/$name.h2m" "$name"
  see_also+="${see_also:+,
}.BR \\%hushtrace-$name (1)"
done <"$tmp/commands"

{
  echo "[SEE ALSO]"
  echo "$see_also."
  echo ".PP"
  echo "docs/cli.md in the hushtrace sources: every command with examples."
} >"$tmp/hushtrace.h2m"
page hushtrace "user-space tracer: record, read and export traces" "$tmp/hushtrace.h2m"
