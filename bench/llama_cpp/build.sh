#!/usr/bin/env bash
# Builds llama.cpp (the benchmark peer) from the llama.cpp vendored in PyPI's llama-cpp-python
# source distribution. CPU only, Release, -march=native; only llama-bench, llama-perplexity and
# llama-simple are built, plus llama-greedy-ids (greedy_ids.cpp beside this script) linked against
# the static libraries. Idempotent: does nothing but print the paths when the binaries exist.
#
#   bench/llama_cpp/build.sh            # BACKPLANE_CACHE (default ~/.cache/backplane) holds it all
#   JOBS=4 bench/llama_cpp/build.sh     # parallel jobs (default 2)
set -euo pipefail

readonly VERSION=0.3.36
readonly SDIST=llama_cpp_python-${VERSION}.tar.gz
readonly SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
# The vendored llama.cpp commit, as recorded in the sdist (.git/modules/vendor/llama.cpp/HEAD).
readonly LLAMA_COMMIT=0c1e57098bba43ac29e6e3b677cdceebdd22334f
readonly TARGETS=(llama-bench llama-perplexity llama-simple)
readonly ALL_BINARIES=("${TARGETS[@]}" llama-greedy-ids)

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${BACKPLANE_CACHE:-$HOME/.cache/backplane}
pip_dir=$cache/pip
root=$cache/llama.cpp-$VERSION
src=$root/src
build=$root/build
bin=$build/bin
jobs=${JOBS:-2}

die() { echo "bench/llama_cpp/build.sh: $*" >&2; exit 1; }

print_paths() {
  for t in "${ALL_BINARIES[@]}"; do echo "$t: $bin/$t"; done
}

all_built() {
  for t in "${ALL_BINARIES[@]}"; do [[ -x $bin/$t ]] || return 1; done
}

if all_built; then
  echo "llama.cpp $LLAMA_COMMIT (llama-cpp-python $VERSION) already built"
  print_paths
  exit 0
fi

command -v cmake >/dev/null || die "cmake not found (apt-get install cmake)"
command -v ninja >/dev/null || die "ninja not found (apt-get install ninja-build)"
cmake_version=$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
# The vendored llama.cpp asks for cmake_minimum_required(VERSION 3.14...3.28).
[[ $(printf '%s\n' 3.14 "$cmake_version" | sort -V | head -n1) == 3.14 ]] ||
  die "cmake $cmake_version is older than 3.14"

start=$(date +%s)
mkdir -p "$pip_dir"
tarball=$pip_dir/$SDIST
sha_ok() { [[ -f $tarball ]] && echo "$SDIST_SHA256  $tarball" | sha256sum --check --status; }
if ! sha_ok; then
  rm -f "$tarball"
  # --no-binary for the package itself forces the sdist; its build dependencies (needed only for
  # pip's metadata step) may come as wheels, which takes ~40 s instead of ~5 min for :all:.
  "${PYTHON:-python3}" -m pip download --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$VERSION" -d "$pip_dir" >&2 || die "pip download of llama-cpp-python==$VERSION failed"
  [[ -f $tarball ]] || die "pip did not save $tarball"
  if ! sha_ok; then
    got=$(sha256sum "$tarball" | cut -d' ' -f1)
    rm -f "$tarball"
    die "$tarball: sha256 expected $SDIST_SHA256, got $got (file removed)"
  fi
fi
echo "sdist: $tarball (sha256 $SDIST_SHA256)"

if [[ ! -f $src/CMakeLists.txt ]]; then
  tmp=$(mktemp -d "$root.extract.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  top=llama_cpp_python-$VERSION
  # vendor/llama.cpp/.git is a gitlink into the sdist's .git; leave it out so that the build-info
  # step cannot pick up some other repository's commit.
  tar -xzf "$tarball" -C "$tmp" --exclude="$top/vendor/llama.cpp/.git" \
    "$top/vendor/llama.cpp" "$top/.git/modules/vendor/llama.cpp/HEAD" ||
    die "$tarball: no vendor/llama.cpp or no recorded vendor commit in the sdist"
  got_commit=$(cat "$tmp/$top/.git/modules/vendor/llama.cpp/HEAD")
  [[ $got_commit == "$LLAMA_COMMIT" ]] ||
    die "$tarball: vendored llama.cpp commit expected $LLAMA_COMMIT, got $got_commit"
  for f in CMakeLists.txt tools/llama-bench/llama-bench.cpp tools/perplexity/perplexity.cpp \
           examples/simple/simple.cpp; do
    [[ -f $tmp/$top/vendor/llama.cpp/$f ]] || die "$tarball: vendor/llama.cpp/$f missing"
  done
  mkdir -p "$root"
  rm -rf "$src"
  mv "$tmp/$top/vendor/llama.cpp" "$src"
  rm -rf "$tmp"
  trap - EXIT
fi
echo "source: $src"

cmake -S "$src" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=ON \
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_HIP=OFF -DGGML_SYCL=OFF \
  -DGGML_OPENCL=OFF -DGGML_BLAS=OFF -DGGML_RPC=OFF \
  -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=ON \
  -DLLAMA_BUILD_NUMBER=0 -DLLAMA_BUILD_COMMIT="${LLAMA_COMMIT:0:7}" >"$root/cmake-configure.log" 2>&1 ||
  { tail -n 30 "$root/cmake-configure.log" >&2; die "cmake configure failed (log: $root/cmake-configure.log)"; }

nice -n 10 cmake --build "$build" -j "$jobs" --target "${TARGETS[@]}"

libs=()
for lib in libllama.a libggml.a libggml-cpu.a libggml-base.a; do
  path=$(find "$build" -name "$lib" -print -quit)
  [[ -n $path ]] || die "$lib not found under $build"
  libs+=("$path")
done
nice -n 10 g++ -std=c++17 -O2 -Wall -Wextra -Werror -I"$src/include" -I"$src/ggml/include" \
  "$script_dir/greedy_ids.cpp" "${libs[@]}" -fopenmp -lpthread -ldl -lm -o "$bin/llama-greedy-ids"
all_built || die "build finished but a binary is missing in $bin"

echo "built llama.cpp $LLAMA_COMMIT (llama-cpp-python $VERSION) in $(( $(date +%s) - start )) s"
print_paths
