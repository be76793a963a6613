#!/usr/bin/env bash
# The man pages and the completion scripts the build made (tools/hushtrace/make_docs.sh):
# hushtrace.1 and one hushtrace-CMD.1 per subcommand of `hushtrace --help` render with `man -l`
# without a groff warning, each page shows its command's usage and hushtrace.1 refers to every
# one; the bash completion completes the subcommands, and for each subcommand every option its
# --help lists (and no other); the zsh one parses (zsh -n, when zsh is installed: scripts/setup.sh
# installs it) and declares, for each subcommand, every option its --help lists (and no other),
# each with its help text, through _arguments specs of the form zsh reads.
# Usage: docs_test.sh HUSHTRACE DOCS_DIR
set -euo pipefail
cli="$1" docs="$2"
fail() { echo "docs test: FAILED: $*" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hushtrace-docs.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

commands=$("$cli" --help | awk '/^commands:/ {on = 1; next} /^$/ {on = 0} on {print $1}')
[ "$(wc -w <<<"$commands")" -ge 13 ] || fail "hushtrace --help lists too few commands: $commands"

# ---- the man pages
# render PAGE: checks PAGE renders without a warning; its text in $tmp/page.
render() {
  [ -s "$1" ] || fail "no $1"
  groff -man -Tutf8 -ww -z "$1" 2>"$tmp/groff.err" || fail "groff failed on $1"
  [ ! -s "$tmp/groff.err" ] || fail "groff warnings in $1: $(cat "$tmp/groff.err")"
  MANWIDTH=100 man -l "$1" >"$tmp/page" 2>"$tmp/man.err" || fail "man -l $1: $(cat "$tmp/man.err")"
  [ ! -s "$tmp/man.err" ] || fail "man -l $1: $(cat "$tmp/man.err")"
  grep -q '^NAME' "$tmp/page" || fail "no NAME section in $1"
}
render "$docs/hushtrace.1"
cp "$tmp/page" "$tmp/overview"
for c in $commands; do
  summary=$("$cli" --help | awk -v c="$c" '$1 == c {$1 = ""; sub(/^ +/, ""); print}')
  grep -Fq "$summary" "$tmp/overview" || fail "hushtrace.1 does not list '$c' ($summary)"
  grep -Eq "hushtrace-$c\(1\)" "$tmp/overview" || fail "hushtrace.1 does not refer to hushtrace-$c(1)"
  render "$docs/hushtrace-$c.1"
  grep -Eq "^ +hushtrace-$c - " "$tmp/page" || fail "hushtrace-$c.1 has no NAME line: $(head -8 "$tmp/page")"
  grep -Eq "usage: hushtrace $c|hushtrace $c " "$tmp/page" || fail "hushtrace-$c.1 shows no usage of '$c'"
  grep -q '^OPTIONS' "$tmp/page" || fail "hushtrace-$c.1 has no OPTIONS section"
  # Every option of `hushtrace C --help`, in the page.
  for o in $("$cli" "$c" --help | awk '/^options:/ {on = 1; next} /^$/ {on = 0} on && /^  -/ {print $1}' | tr ',' ' '); do
    grep -Fq -- "$o" "$tmp/page" || fail "hushtrace-$c.1 lacks the option $o"
  done
  grep -Eq "hushtrace\(1\)" "$tmp/page" || fail "hushtrace-$c.1 does not refer to hushtrace(1)"
done
pages=$(cd "$docs" && ls hushtrace*.1 | wc -l)
[ "$pages" -eq $(($(wc -w <<<"$commands") + 1)) ] || fail "$pages pages for $(wc -w <<<"$commands") commands"

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
[ "$(complete_words hushtrace record --buffer-s)" = "--buffer-size" ] ||
  fail "'hushtrace record --buffer-s<TAB>' gives: $(complete_words hushtrace record --buffer-s)"
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

# ---- the zsh completion
zsh_script="$docs/_hushtrace"
[ -s "$zsh_script" ] || fail "no $zsh_script"
[ "$(head -n1 "$zsh_script")" = "#compdef hushtrace" ] || fail "$zsh_script does not start with #compdef hushtrace"
if ! command -v zsh >/dev/null; then
  echo "docs test: OK ($(wc -w <<<"$commands") commands; zsh not installed: its completion not run)"
  exit 0
fi
zsh -n "$zsh_script" || fail "zsh -n $zsh_script"
# Runs the script as zsh's completion system would (autoloaded from fpath), with _arguments,
# _describe and compdef replaced by functions that write what they were given: the subcommand
# list to $tmp/zsh-commands, a subcommand's _arguments specs to $tmp/zsh-CMD.
cat >"$tmp/run.zsh" <<'ZSH'
out=$1 dir=$2
shift 2
compdef() { print -r -- "$*" >$out/zsh-compdef }
_describe() { print -rl -- "${(@P)4}" >$out/zsh-commands }
_arguments() {
  if (( ${@[(Ie)1:command:->command]} )); then  # the first level: word 1 is the command
    if (( CURRENT == 2 )); then state=command; else state=argument; shift words; (( CURRENT-- )); fi
    return 0
  fi
  while [[ $1 == -[sS] || $1 == -A ]]; do [[ $1 == -A ]] && shift; shift; done  # its own flags
  print -rl -- "$@" >$out/zsh-$words[1]
}
source $dir/_hushtrace  # sourced (not autoloaded): registers itself with compdef
fpath=($dir $fpath)
autoload -Uz _hushtrace
words=(hushtrace '') CURRENT=2 _hushtrace
for c in "$@"; do
  words=(hushtrace $c '') CURRENT=3 _hushtrace
done
ZSH
# shellcheck disable=SC2086  # one argument per command
zsh -f "$tmp/run.zsh" "$tmp" "$docs" $commands || fail "running $zsh_script in zsh"
[ "$(cat "$tmp/zsh-compdef")" = "_hushtrace hushtrace" ] || fail "sourced, it runs: compdef $(cat "$tmp/zsh-compdef")"
for c in $commands; do
  summary=$("$cli" --help | awk -v c="$c" '$1 == c {$1 = ""; sub(/^ +/, ""); print}')
  grep -Fxq "$c:$summary" "$tmp/zsh-commands" || fail "zsh does not offer '$c:$summary': $(cat "$tmp/zsh-commands")"
  [ -s "$tmp/zsh-$c" ] || fail "zsh completes no option of '$c'"
  # Each option spec: [*|(excluded)]-x+ or --long= (a value) or a flag, [help] (] escaped),
  # :NAME:action (: escaped).
  grep -E -- '^(\*|\([^)]*\))?-' "$tmp/zsh-$c" >"$tmp/specs-$c" || true
  bad=$(grep -Ev '^(\*|\([^)]*\))?-{1,2}[a-z][a-z0-9-]*([+=]?)\[([^]\]|\\.)+\](:([^:\]|\\.)+:.+)?$' "$tmp/specs-$c" || true)
  [ -z "$bad" ] || fail "zsh specs of '$c' not of the expected form: $bad"
  sed -E 's/^(\*|\([^)]*\))?(-{1,2}[a-z][a-z0-9-]*).*/\2/' "$tmp/specs-$c" | sort -u >"$tmp/zopts-$c"
  diff -u "$tmp/help-$c" "$tmp/zopts-$c" >&2 || fail "zsh completion of '$c' options differs from its --help"
done
grep -Fxq -- "*-e+[events to record: a glob over 'provider:name', e.g. 'net:*']:PATTERN:_files" "$tmp/zsh-record" ||
  fail "zsh: record -e: $(grep -- '-e+' "$tmp/zsh-record")"
grep -Fxq -- '*--events=[events to record: a glob over '"'"'provider:name'"'"', e.g. '"'"'net:*'"'"']:PATTERN:_files' "$tmp/zsh-record" ||
  fail "zsh: record --events: $(grep -- '--events' "$tmp/zsh-record")"
grep -Eq -- '^\(--mode\)--mode=\[.*\]:stream\|flight:\(stream flight\)$' "$tmp/zsh-record" || fail "zsh: record --mode values"
grep -Fxq -- '*::program arguments:_normal' "$tmp/zsh-record" || fail "zsh: record PROGRAM's arguments"
grep -Fxq -- ':PID:_pids' "$tmp/zsh-stop" || fail "zsh: stop PID: $(cat "$tmp/zsh-stop")"
grep -Fxq -- ':DIR:_files -/' "$tmp/zsh-dump" || fail "zsh: dump DIR: $(cat "$tmp/zsh-dump")"
echo "docs test: OK ($(wc -w <<<"$commands") commands, $pages man pages, bash and zsh completion)"
