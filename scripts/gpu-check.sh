#!/usr/bin/env bash
# Everything that needs an NVIDIA GPU, in one go (an H200 host, 16 cores: under 10 minutes).
#   Part 1, the CUDA backend (src/cuda/):
#     1. Builds BUILD_GPU (default build-gpu) for sm_90 only (-DCMAKE_CUDA_ARCHITECTURES=90-real),
#        unless BUILD_GPU already holds backplane and cuda_tests (e.g. carried from a build host).
#     2. `backplane info`, the CUDA tests (tests/cuda, nothing skipped when a GPU is visible),
#        `backplane verify --device cuda --write-docs docs` (docs/verify-cuda.json and the matrices
#        rebuilt from it), `backplane bench --device cuda` and SmolLM2 generation on cpu and cuda
#        when the model is cached (docs/cuda-bench.md).
#   Part 2, the XLA device through the CUDA PJRT plugin (skipped with GPU_CHECK_XLA=0):
#     1. Installs the CUDA PJRT plugin (PyPI jax-cuda13-pjrt, version and sha256 pinned) and the
#        NVIDIA runtime wheels it loads (the list of jax-cuda13-plugin's "with-cuda" extra) with pip
#        into $BACKPLANE_CACHE/pjrt-cuda (cached: a second run installs nothing).
#     2. With BACKPLANE_PJRT_PLUGIN set to the CUDA plugin: `backplane verify --device xla` (record
#        docs/verify-xla-cuda.json) and `backplane bench --device xla` (docs/xla-cuda-bench.md).
# Without a GPU each part says so in one line and writes no records; the exit status is 0 unless
# a build or a test failed.
#   GPU_CHECK_NO_NVIDIA_WHEELS=1: use the system CUDA libraries instead of the NVIDIA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
build_gpu=${BUILD_GPU:-build-gpu}
jobs=${JOBS:-$(nproc)}
status=0

# ---- Part 1: the CUDA backend ----
if [[ ! -x "$build_gpu/backplane" || ! -x "$build_gpu/tests/cuda_tests" ]]; then
  echo "gpu-check: building $build_gpu for sm_90 with $jobs jobs"
  cmake -S . -B "$build_gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBACKPLANE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90-real -DBACKPLANE_XLA=OFF -DBACKPLANE_PYTHON=OFF > "$build_gpu.configure.log" 2>&1 ||
    { tail -30 "$build_gpu.configure.log"; exit 1; }
  cmake --build "$build_gpu" -j "$jobs" --target backplane_cli cuda_tests
fi
cuda_info=$("$build_gpu/backplane" info 2>&1 | sed -n '/^cuda gpus:/,$p')
echo "$cuda_info"
if grep -q '^cuda gpus: 0' <<<"$cuda_info"; then
  echo "gpu-check: no CUDA GPU visible (above): the CUDA tests skip, no CUDA records written."
  "$build_gpu/tests/cuda_tests" --gtest_brief=1 || status=1
else
  start=$(date +%s)
  "$build_gpu/tests/cuda_tests" || { echo "gpu-check: CUDA tests failed"; status=1; }
  "$build_gpu/backplane" verify --device cuda --write-docs docs ||
    echo "gpu-check: some CUDA cells failed (see docs/verify-cuda.json)"
  {
    echo "# CUDA: \`backplane bench --device cuda\`"
    echo
    echo '```'
    echo "$cuda_info"
    echo '```'
    echo
    "$build_gpu/backplane" bench --device cuda
    model=${BACKPLANE_CACHE:-$HOME/.cache/backplane}/models/SmolLM2-135M-Instruct.Q4_1.gguf
    echo
    echo "## SmolLM2-135M Q4_1 generation: \`backplane generate -n 128 --ignore-eos --quiet --device D\`"
    echo
    if [[ -f "$model" ]]; then
      echo '```'
      for device in cpu cuda; do
        "$build_gpu/backplane" generate -m "$model" -p "Once upon a time, there was a little" -n 128 \
          --ignore-eos --quiet --device "$device" 2>&1 | tail -1
      done
      echo '```'
    else
      echo "Not run: $model is not cached here (scripts/fetch-models.sh fetches it)."
    fi
  } > docs/cuda-bench.md || { echo "gpu-check: bench --device cuda failed"; status=1; }
  echo "gpu-check: CUDA part done in $(( $(date +%s) - start )) s: docs/verify-cuda.json, docs/cuda-bench.md"
fi
if [[ "${GPU_CHECK_XLA:-1}" == 0 ]]; then
  exit $status
fi

# ---- Part 2: XLA through the CUDA PJRT plugin ----
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
  $py -m pip download --quiet --no-deps --only-binary=:all: "jax-cuda13-pjrt==$plugin_version" -d "$dir/wheels" ||
    { echo "gpu-check: cannot download jax-cuda13-pjrt (offline?): XLA part skipped"; exit $status; }
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
    "nvidia-nvjitlink>=13.0.39" "nvidia-cuda-nvrtc>=13.0.48" "nvidia-nvshmem-cu13>=3.3.20" nvidia-nvvm ||
    { echo "gpu-check: cannot install the NVIDIA wheels (offline?): XLA part skipped"; exit $status; }
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
  echo "gpu-check: the CUDA plugin did not open a device (above); no XLA GPU records written."
  exit $status
fi
start=$(date +%s)
"$build/backplane" verify --device xla --record docs/verify-xla-cuda.json || echo "gpu-check: some cells failed (see docs/verify-xla-cuda.json)"
{
  echo "# XLA on the GPU: \`backplane bench --device xla\` with the CUDA PJRT plugin ($plugin_version)"
  echo
  "$build/backplane" bench --device xla
} > docs/xla-cuda-bench.md
echo "gpu-check: done in $(( $(date +%s) - start )) s: docs/verify-xla-cuda.json, docs/xla-cuda-bench.md"
exit $status
