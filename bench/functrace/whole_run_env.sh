# Sourced by whole_run.sh and record_split.sh (after `set -eu`): the arguments both take,
#   BUILD_DIR [N] [SCRATCH]
# and what they share. Sets build, n, here, scratch (removed on exit), cli, prog and calls (the
# calls of `ftbench_plain N`), then prints the host line. The caller sets `name` (the scratch
# directory's prefix) before sourcing.
build=$(cd "$1" && pwd)
n=${2:-27}
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d "${3:-$build}/$name.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cli="$build/tools/hushtrace/hushtrace"
prog="$build/bench/ftbench_nop5"
calls=$("$build/bench/ftbench_plain" "$n" | sed -n 's/.*calls \([0-9]*\) .*/\1/p')
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
