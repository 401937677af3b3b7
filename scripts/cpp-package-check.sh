#!/usr/bin/env bash
# Installs the built tree (BUILD, default build/) into a temporary prefix, checks what was installed
# and what libbackplane.so exports, then builds and runs examples/consumer against the prefix three
# ways: CMake with backplane::backplane, CMake with backplane::backplane_static, and plain g++ with
# pkg-config. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  echo "cpp-package-check: $BUILD is not a configured build (make build first)" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/backplane-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "cpp-package-check: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

# Normally a no-op: make build has built both.
cmake --build "$BUILD" --target backplane_shared backplane_cli > "$work/build.log" || { cat "$work/build.log"; fail "build"; }
step "install into $prefix"
cmake --install "$BUILD" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "install"; }

# What is installed: headers, the two libraries, the CLI, the CMake package, backplane.pc.
for f in bin/backplane lib/libbackplane.a lib/libbackplane.so lib/libbackplane.so.0 lib/libbackplane.so.0.1.0 \
         lib/cmake/backplane/backplaneConfig.cmake lib/cmake/backplane/backplaneConfigVersion.cmake \
         lib/cmake/backplane/backplaneTargets.cmake lib/pkgconfig/backplane.pc include/backplane/tensor.hpp; do
  [[ -e $prefix/$f ]] || fail "$f not installed"
done
n_src=$(cd include && find backplane -type f | wc -l)
n_inst=$(cd "$prefix/include" && find backplane -type f | wc -l)
[[ $n_src == "$n_inst" ]] || fail "$n_inst headers installed, include/backplane has $n_src"
unexpected=$(find "$prefix" -type f -o -type l | sed "s|^$prefix/||" |
  grep -Ev '^(bin/backplane|include/backplane/.*\.hpp|lib/libbackplane\.(a|so(\.0(\.1\.0)?)?)|lib/cmake/backplane/backplane[A-Za-z-]*\.cmake|lib/pkgconfig/backplane\.pc)$' || true)
[[ -z $unexpected ]] || fail "unexpected files installed: $unexpected"
echo "installed: $(cd "$prefix" && find . -type f | wc -l) files ($n_inst headers)"
version=$("$prefix/bin/backplane" --version) || fail "bin/backplane --version exited with $?"
echo "bin/backplane --version: $version"

step "libbackplane.so: soname and exported symbols"
so=$prefix/lib/libbackplane.so.0.1.0
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname == libbackplane.so.0 ]] || fail "SONAME is '$soname', want libbackplane.so.0"
# Defined dynamic symbols as "name@@VERSION" (binutils >= 2.35 prints the version), without the
# version definition itself.
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' > "$work/exports.txt"
total=$(wc -l < "$work/exports.txt")
[[ $total -gt 1000 ]] || fail "only $total exported symbols"
unversioned=$(grep -v '@@BACKPLANE_0$' "$work/exports.txt" | head -5 || true)
[[ -z $unversioned ]] || fail "exported symbols without version BACKPLANE_0: $unversioned"
# Mangled names in namespace backplane: functions and variables (N, NK...), static locals (ZN),
# guard variables, typeinfo, vtables, VTTs, TLS wrappers, thunks.
foreign=$(sed 's/@@BACKPLANE_0$//' "$work/exports.txt" |
  grep -Ev '^_Z(N[KVRO]*|ZN|GVZ?N|T[ISVTWH]N|Th[n0-9]+_N|Tv[n0-9_]+N)9backplane' | c++filt | head -5 || true)
[[ -z $foreign ]] || fail "exported symbols outside namespace backplane: $foreign"
echo "exported: $total symbols, all in namespace backplane, all version BACKPLANE_0 (no fmt, hwy, protobuf, std)"

export CMAKE_GENERATOR=${CMAKE_GENERATOR:-$(command -v ninja > /dev/null && echo Ninja || echo "Unix Makefiles")}
run_consumer() {  # name, cmake args...
  local name=$1
  shift
  step "consumer ($name)"
  cmake -S examples/consumer -B "$work/$name" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release "$@" \
    > "$work/$name.log" || { cat "$work/$name.log"; fail "configure consumer ($name)"; }
  cmake --build "$work/$name" > "$work/$name.log" || { cat "$work/$name.log"; fail "build consumer ($name)"; }
  "$work/$name/consumer" || fail "consumer ($name) exited with $?"
}
run_consumer cmake-shared
[[ $(ldd "$work/cmake-shared/consumer") == *"libbackplane.so.0 => $prefix/lib/libbackplane.so.0 "* ]] ||
  fail "the shared consumer does not load $prefix/lib/libbackplane.so.0"
run_consumer cmake-static -DCONSUMER_STATIC=ON
[[ $(readelf -d "$work/cmake-static/consumer") != *libbackplane* ]] || fail "the static consumer needs libbackplane.so"

step "consumer (pkg-config)"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
echo "pkg-config --cflags --libs backplane: $(pkg-config --cflags --libs backplane)"
# shellcheck disable=SC2046
g++ -std=c++20 -O2 examples/consumer/main.cpp -o "$work/consumer-pc" $(pkg-config --cflags --libs backplane) \
  -Wl,-rpath,"$prefix/lib" || fail "pkg-config build"
"$work/consumer-pc" || fail "consumer (pkg-config) exited with $?"
# The static library through Libs.private (-l:libbackplane.a picks the archive over the .so).
static_libs=$(pkg-config --static --libs backplane)
echo "pkg-config --static --libs backplane: $static_libs"
# shellcheck disable=SC2046,SC2086  # word splitting of the flags is intended
g++ -std=c++20 -O2 examples/consumer/main.cpp -o "$work/consumer-pc-static" $(pkg-config --cflags backplane) \
  ${static_libs//-lbackplane/-l:libbackplane.a} || fail "pkg-config --static build"
[[ $(readelf -d "$work/consumer-pc-static") != *libbackplane* ]] || fail "the pkg-config static consumer needs libbackplane.so"
"$work/consumer-pc-static" > /dev/null || fail "consumer (pkg-config --static) exited with $?"
echo "consumer (pkg-config --static): all checks passed"
echo "cpp-package-check: OK"
