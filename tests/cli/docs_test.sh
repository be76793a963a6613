#!/usr/bin/env bash
# The man page and the bash completion script the build made (tools/hushtrace/make_docs.sh):
# the page renders with `man -l` without a groff warning and shows every subcommand of
# `hushtrace --help`; the completion completes the subcommands, and for each subcommand every
# option its --help lists (and no other).
# Usage: docs_test.sh HUSHTRACE DOCS_DIR
set -euo pipefail
cli="$1" docs="$2"
fail() { echo "docs test: FAILED: $*" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hushtrace-docs.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

commands=$("$cli" --help | awk '/^commands:/ {on = 1; next} /^$/ {on = 0} on {print $1}')
[ "$(wc -w <<<"$commands")" -ge 13 ] || fail "hushtrace --help lists too few commands: $commands"

# ---- the man page
[ -s "$docs/hushtrace.1" ] || fail "no $docs/hushtrace.1"
groff -man -Tutf8 -ww -z "$docs/hushtrace.1" 2>"$tmp/groff.err" || fail "groff failed"
[ ! -s "$tmp/groff.err" ] || fail "groff warnings: $(cat "$tmp/groff.err")"
MANWIDTH=100 man -l "$docs/hushtrace.1" >"$tmp/page" 2>"$tmp/man.err" || fail "man -l: $(cat "$tmp/man.err")"
grep -q '^NAME' "$tmp/page" || fail "no NAME section"
for c in $commands; do
  grep -Eq "^ +hushtrace $c\$" "$tmp/page" || fail "the man page has no section for '$c'"
  grep -Eq "usage: hushtrace $c" "$tmp/page" || fail "the man page has no usage of '$c'"
done

# ---- the completion
# shellcheck source=/dev/null
source "$docs/hushtrace.bash"
complete -p hushtrace | grep -q -- '-F _hushtrace' || fail "complete -p: $(complete -p hushtrace)"
# complete WORD...: what bash would offer for the last word.
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _hushtrace
  if ((${#COMPREPLY[@]})); then printf '%s\n' "${COMPREPLY[@]}" | sort; fi
}
[ "$(complete_words hushtrace re | tr '\n' ' ')" = "record recover report " ] ||
  fail "'hushtrace re<TAB>' gives: $(complete_words hushtrace re)"
[ "$(complete_words hushtrace s | tr '\n' ' ')" = "ship snapshot start status stop " ] ||
  fail "'hushtrace s<TAB>' gives: $(complete_words hushtrace s)"
[ "$(complete_words hushtrace record --buf)" = "--buffer-size" ] ||
  fail "'hushtrace record --buf<TAB>' gives: $(complete_words hushtrace record --buf)"
[ "$(complete_words hushtrace record -o out --no-f)" = "--no-follow" ] ||
  fail "'hushtrace record -o out --no-f<TAB>' gives: $(complete_words hushtrace record -o out --no-f)"
# A file name where no option is being typed.
touch "$tmp/some-file"
[ "$(complete_words hushtrace dump "$tmp/some-f")" = "$tmp/some-file" ] || fail "no file name completion"

for c in $commands; do
  # The option lines of `hushtrace C --help`: "  -e,--events PATTERN ...   text".
  "$cli" "$c" --help | awk '/^options:/ {on = 1; next} /^$/ {on = 0} on && /^  -/ {print $1}' |
    tr ',' '\n' | sort -u >"$tmp/help-$c"
  [ -s "$tmp/help-$c" ] || fail "'hushtrace $c --help' lists no option"
  complete_words hushtrace "$c" - | sort -u >"$tmp/complete-$c"
  diff -u "$tmp/help-$c" "$tmp/complete-$c" >&2 || fail "completion of '$c' options differs from its --help"
done
echo "docs test: OK ($(wc -w <<<"$commands") commands)"
