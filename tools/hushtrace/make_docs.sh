#!/usr/bin/env bash
# Makes the man page and the bash completion script of the built CLI from its own help and option
# declarations, so that neither can drift from the parser (cli_app.h).
# Usage: make_docs.sh HUSHTRACE OUTDIR [HELP2MAN]
#   OUTDIR/hushtrace.bash  `hushtrace completion bash`
#   OUTDIR/hushtrace.1     with HELP2MAN: help2man of `hushtrace --help`, with a COMMANDS section
#                          holding every subcommand's `--help` (one page for all commands)
set -euo pipefail
cli="$1" out="$2" help2man="${3:-}"
mkdir -p "$out"
"$cli" completion bash >"$out/hushtrace.bash.tmp"
mv "$out/hushtrace.bash.tmp" "$out/hushtrace.bash"
[ -n "$help2man" ] || exit 0

# The subcommands: the lines "  NAME  summary" under "commands:" in `hushtrace --help`.
commands=$("$cli" --help | awk '/^commands:/ {on = 1; next} /^$/ {on = 0} on {print $1}')
include="$out/hushtrace.h2m"
{
  echo "[COMMANDS]"
  for c in $commands; do
    echo ".SS \"hushtrace $c\""
    echo ".nf"
    # roff: a backslash is \e; a line starting with . or ' would be a request.
    "$cli" "$c" --help | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo "docs/cli.md in the hushtrace sources: every command with examples."
} >"$include"
"$help2man" --no-info --no-discard-stderr --section=1 --name="user-space tracer: record, read and export traces" \
  --include="$include" --output="$out/hushtrace.1.tmp" "$cli"
mv "$out/hushtrace.1.tmp" "$out/hushtrace.1"
