#!/usr/bin/env bash
# Installs the Debian packages the build and tests need; a no-op when all are present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(grep -v '^\s*#' "$here/debian-packages.txt" | awk 'NF {print $1}')
missing=()
native=$(dpkg --print-architecture)
for pkg in "${wanted[@]}"; do
  # The native (or architecture-independent) package: with arm64 copies installed beside it
  # (scripts/arm-conformance.sh), dpkg-query lists one line per architecture.
  status=$(dpkg-query -W -f='${Architecture} ${Status}\n' "$pkg" 2>/dev/null |
           awk -v a="$native" '$1 == a || $1 == "all" {sub(/^[^ ]+ /, ""); print; exit}' || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
