#!/usr/bin/env bash
# Installs the Debian packages given as arguments that are not installed yet.
# Runs `apt-get update` + `apt-get install` only when something is missing;
# uses sudo only when not root. Prints one line per action.
set -euo pipefail

missing=()
for pkg in "$@"; do
  if dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
    continue
  fi
  missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: nothing to install (${#} packages present)"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "setup: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  SUDO=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
echo "setup: apt-get update"
"${SUDO[@]}" apt-get update -qq
echo "setup: apt-get install ${missing[*]}"
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: installed ${#missing[@]} package(s)"
