#!/usr/bin/env bash
# The XLA device on an NVIDIA GPU (an H200 host, 16 cores: under 10 minutes in one go).
#   1. Installs the CUDA PJRT plugin (PyPI jax-cuda13-pjrt, version and sha256 pinned) and the
#      NVIDIA runtime wheels it loads (the list of jax-cuda13-plugin's "with-cuda" extra) with pip
#      into $BACKPLANE_CACHE/pjrt-cuda (cached: a second run installs nothing).
#   2. Builds Backplane (make build) unless BUILD already holds it.
#   3. With BACKPLANE_PJRT_PLUGIN set to the CUDA plugin: `backplane info`, `backplane verify
#      --device xla` (record docs/verify-xla-cuda.json) and `backplane bench --device xla`
#      (docs/xla-cuda-bench.md).
# On a machine without a GPU it goes as far as loading the plugin, which reports "No visible GPU
# devices"; the script then says so and exits 0 without writing records.
#   GPU_CHECK_NO_NVIDIA_WHEELS=1: use the system CUDA libraries instead of the NVIDIA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${BACKPLANE_CACHE:-$HOME/.cache/backplane}
build=${BUILD:-build}
dir="$cache/pjrt-cuda"
plugin_version=0.12.0.1
plugin_sha=5899bb6177eda86ea532afb9a26794f2bdd04966f6a01f9028266b16c2b6cf90
py=python3
$py -m pip --version >/dev/null 2>&1 || py=/usr/bin/python3

mkdir -p "$dir/wheels"
wheel=$(ls "$dir/wheels/jax_cuda13_pjrt-$plugin_version-"*.whl 2>/dev/null | head -1 || true)
if [[ -z "$wheel" ]] || ! echo "$plugin_sha  $wheel" | sha256sum -c --status; then
  echo "gpu-check: pip download jax-cuda13-pjrt==$plugin_version"
  $py -m pip download --quiet --no-deps --only-binary=:all: "jax-cuda13-pjrt==$plugin_version" -d "$dir/wheels"
  wheel=$(ls "$dir/wheels/jax_cuda13_pjrt-$plugin_version-"*.whl | head -1)
  echo "$plugin_sha  $wheel" | sha256sum -c --status || { echo "gpu-check: $wheel: sha256 mismatch" >&2; exit 1; }
fi
plugin="$dir/site/jax_plugins/xla_cuda13/xla_cuda_plugin.so"
if [[ ! -f "$plugin" ]]; then
  $py -m pip install --quiet --no-deps --target "$dir/site" "$wheel"
fi
if [[ -z "${GPU_CHECK_NO_NVIDIA_WHEELS:-}" && ! -f "$dir/site/.nvidia-installed" ]]; then
  echo "gpu-check: pip install the NVIDIA runtime wheels into $dir/site"
  $py -m pip install --quiet --target "$dir/site" --only-binary=:all: \
    "nvidia-cublas>=13.0.0.19" "nvidia-cuda-cupti>=13.0.48" "nvidia-cuda-nvcc>=13.0.48" \
    "nvidia-cuda-runtime>=13.0.48" "nvidia-cudnn-cu13>=9.12.0.46,<10.0" "nvidia-cufft>=12.0.0.15" \
    "nvidia-cusolver>=12.0.3.29" "nvidia-cusparse>=12.6.2.49" "nvidia-nccl-cu13>=2.27.7" \
    "nvidia-nvjitlink>=13.0.39" "nvidia-cuda-nvrtc>=13.0.48" "nvidia-nvshmem-cu13>=3.3.20" nvidia-nvvm
  touch "$dir/site/.nvidia-installed"
fi
for lib in "$dir"/site/nvidia/*/lib; do
  [[ -d "$lib" ]] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

[[ -x "$build/backplane" ]] || make build
export BACKPLANE_PJRT_PLUGIN="$plugin"
info=$("$build/backplane" info 2>&1 | sed -n '/^devices:/,$p')
echo "$info"
if ! grep -q '^xla: xla:' <<<"$info"; then
  echo "gpu-check: the CUDA plugin did not open a device (above); no GPU records written."
  exit 0
fi
start=$(date +%s)
"$build/backplane" verify --device xla --record docs/verify-xla-cuda.json || echo "gpu-check: some cells failed (see docs/verify-xla-cuda.json)"
{
  echo "# XLA on the GPU: \`backplane bench --device xla\` with the CUDA PJRT plugin ($plugin_version)"
  echo
  "$build/backplane" bench --device xla
} > docs/xla-cuda-bench.md
echo "gpu-check: done in $(( $(date +%s) - start )) s: docs/verify-xla-cuda.json, docs/xla-cuda-bench.md"
