#!/usr/bin/env bash
# Arm conformance: cross-build backplane for aarch64 and run the conformance matrix under qemu-aarch64,
# once per emulated CPU (default: `max` = SVE/SVE2 + NEON, `cortex-a72` = NEON only). Exits non-zero
# when a package cannot be installed, the build fails, a run fails, a cell fails, or the selected
# target (or any target verify ran) has no verified cell. See docs/arm.md.
#
# Environment (all optional):
#   ARM_BUILD=build-arm         build folder (relative to the repository root)
#   ARM_CPUS="max cortex-a72"   qemu -cpu models, e.g. also "max,sve-default-vector-length=16"
#   JOBS=$(nproc)  NICE=15      build parallelism and niceness
#   ARM_SKIP_INSTALL=1          do not touch packages (fail at configure if something is missing)
#   ARM_TIMEOUT=3600            seconds allowed per qemu run
#   ARM_RECORD=1                on success, copy the first CPU's verification record to
#                               docs/verify-arm.json (the Arm columns of the generated matrices)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${ARM_BUILD:-build-arm}
cpus=${ARM_CPUS:-max cortex-a72}
jobs=${JOBS:-$(nproc)}
nice_level=${NICE:-15}
run_timeout=${ARM_TIMEOUT:-3600}
triple=aarch64-linux-gnu
python=$(command -v /usr/bin/python3 || command -v python3 || true)

log() { printf 'arm-conformance: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# --- 1. packages ---------------------------------------------------------------------------------
install_packages() {
  local wanted=(g++-$triple qemu-user
                libhwy-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 libbenchmark-dev:arm64
                libfmt-dev:arm64
                # the loader, libc, libstdc++ and libgomp the binaries run with under qemu
                libc6:arm64 libstdc++6:arm64 libgomp1:arm64
                # architecture-independent headers, found through /usr/share/cmake
                nlohmann-json3-dev libcli11-dev
                cmake ninja-build)
  # The main CMakeLists.txt requires the OpenMP build of OpenBLAS (found by its own config dir).
  if grep -q 'find_package(OpenBLAS' CMakeLists.txt; then wanted+=(libopenblas-openmp-dev:arm64); fi
  # The ONNX importer links Debian's onnx_proto and protobuf.
  if grep -q 'find_package(ONNX' CMakeLists.txt; then wanted+=(libprotobuf-dev:arm64 libonnx-dev:arm64 libonnxifi:arm64); fi

  local sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  local add_arch=0
  dpkg --print-foreign-architectures | grep -qx arm64 || add_arch=1
  local missing=() pkg status
  for pkg in "${wanted[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
  done
  if ((add_arch == 0 && ${#missing[@]} == 0)); then
    log "packages: all present"
    return 0
  fi
  if ((add_arch)); then
    log "dpkg --add-architecture arm64"
    "${sudo_cmd[@]}" dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
  fi
  log "installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq || die "apt-get update failed"
  # libonnxifi:arm64 (a dependency of libonnx-dev:arm64) ships /usr/lib/libonnxifi.so like the amd64
  # package, so it is unpacked with --force-overwrite first (Backplane links neither copy, only onnx_proto).
  if [[ " ${missing[*]} " == *" libonnxifi:arm64 "* ]]; then
    # Its one dependency goes first: on a machine without arm64 libraries dpkg -i would leave it
    # unconfigured (libc6:arm64 missing) and fail.
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends libc6:arm64 \
        || die "apt-get install libc6:arm64 failed"
    local deb_dir
    deb_dir=$(mktemp -d)
    (cd "$deb_dir" && apt-get download libonnxifi:arm64) || die "apt-get download libonnxifi:arm64 failed"
    "${sudo_cmd[@]}" dpkg -i --force-overwrite "$deb_dir"/libonnxifi_*_arm64.deb || die "dpkg -i libonnxifi:arm64 failed"
    rm -rf "$deb_dir"
  fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" || die "apt-get install failed"
}
if [[ "${ARM_SKIP_INSTALL:-0}" != 1 ]]; then install_packages; fi
command -v $triple-g++ >/dev/null || die "$triple-g++ not found"
command -v qemu-aarch64 >/dev/null || die "qemu-aarch64 not found"
[[ -n "$python" ]] || die "python3 not found (used to read the verify JSON)"

# --- 2. configure + build ------------------------------------------------------------------------
# As in the Makefile: ccache keys on paths relative to the checkout, so other clones hit the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [[ -f "$build/CMakeCache.txt" ]] && ! grep -q "^CMAKE_TOOLCHAIN_FILE.*$triple.cmake" "$build/CMakeCache.txt"; then
  die "$build exists but is not a cross build with cmake/toolchains/$triple.cmake; remove it"
fi
if [[ -f "$build/CMakeCache.txt" ]]; then generator=(); fi  # keep the generator it was made with
log "configuring $build (RelWithDebInfo, cmake/toolchains/$triple.cmake)"
mkdir -p "$build"
cmake -S . -B "$build" "${generator[@]}" \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/$triple.cmake" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBACKPLANE_XLA=OFF -DBACKPLANE_CUDA=OFF >"$build/configure.log" 2>&1 \
    || { cat "$build/configure.log" >&2; die "configure failed (log: $build/configure.log)"; }
grep -E 'OpenBLAS' "$build/configure.log" >&2 || true
log "building backplane_cli conformance_tests (-j $jobs, nice $nice_level; ccache: $(command -v ccache || echo none))"
build_start=$(date +%s)
nice -n "$nice_level" cmake --build "$build" -j "$jobs" --target backplane_cli conformance_tests \
    || die "build failed"
build_seconds=$(( $(date +%s) - build_start ))
log "build took ${build_seconds} s"

# --- 3. run under qemu, per CPU ------------------------------------------------------------------
failures=0
summary=()
# No -L: loader and libraries come from the multiarch :arm64 packages, which match each other. The
# cross libc in /usr/aarch64-linux-gnu is an older build than libc6:arm64, and mixing the two
# (qemu -L /usr/aarch64-linux-gnu) hangs in pthread_create, i.e. in every OpenMP region.
[[ -e /lib/ld-linux-aarch64.so.1 ]] || die "/lib/ld-linux-aarch64.so.1 missing: install libc6:arm64"
unset QEMU_LD_PREFIX
qemu() { local cpu=$1; shift; timeout "$run_timeout" qemu-aarch64 -cpu "$cpu" "$@"; }

for cpu in $cpus; do
  tag=${cpu//[^A-Za-z0-9_.-]/_}
  cpu_fail=0
  log "=== qemu-aarch64 -cpu $cpu ==="
  info="$build/info-$tag.txt"
  if qemu "$cpu" "$build/backplane" info >"$info" 2>&1; then
    cat "$info"
  else
    cat "$info"; log "backplane info failed on -cpu $cpu"; cpu_fail=1
  fi
  compiled=$(sed -n 's/^simd targets compiled: //p' "$info")
  supported=$(sed -n 's/^simd targets supported here: //p' "$info")
  selected=$(sed -n 's/^simd target selected: //p' "$info")

  t0=$(date +%s)
  if ! qemu "$cpu" "$build/tests/conformance_tests" --gtest_brief=1 \
         --gtest_output="xml:$build/conformance-$tag.xml" >"$build/conformance-$tag.log" 2>&1; then
    cat "$build/conformance-$tag.log"; log "conformance_tests failed on -cpu $cpu"; cpu_fail=1
  fi
  tests_line=$(grep -E '^\[  (PASSED|FAILED)  \]' "$build/conformance-$tag.log" | tr '\n' ' ')
  t1=$(date +%s)

  json="$build/verify-$tag.json"
  machine="qemu-aarch64 $(qemu-aarch64 --version | head -1 | sed -n 's/.*version \([0-9.]*\).*/\1/p') -cpu $cpu (emulated on $(uname -m))"
  if ! qemu "$cpu" "$build/backplane" verify --quick --record "$json" --machine "$machine" \
         >/dev/null 2>"$build/verify-$tag.err"; then
    cat "$build/verify-$tag.err"; log "backplane verify failed on -cpu $cpu"; cpu_fail=1
  fi
  t2=$(date +%s)

  # Per-target counts. The selected target and every target verify ran must have verified cells
  # and none failed; a supported target verify cannot force (not a BACKPLANE_CPU_TARGET name, e.g.
  # sve_256, sve2_128) is listed as not run, not counted as verified.
  counts=$("$python" - "$json" "$supported" "$selected" <<'EOF'
import collections, json, sys
path, supported, selected = sys.argv[1], sys.argv[2].split(), sys.argv[3]
try:
    cells = json.load(open(path))["cells"]
except Exception as e:
    print(f"unreadable verify JSON: {e}"); sys.exit(2)
per = collections.defaultdict(collections.Counter)
total = collections.Counter()
for c in cells:
    per[c["target"]][c["status"]] += 1
    total[c["status"]] += 1
parts = [f"{t} {per[t]['verified']}/{per[t]['failed']}" for t in sorted(per, key=lambda t: (t == "scalar", t))]
ran = [t for t in per if per[t]["verified"] + per[t]["failed"] > 0]
missing = sorted({t for t in ran + [selected] if per[t]["verified"] == 0})
unforceable = [t for t in supported if t not in per]
print(f"cells verified {total['verified']}, failed {total['failed']}, not_run {total['not_run']}"
      f" | per target verified/failed: {', '.join(parts)}"
      + (f" | NO VERIFIED CELLS for: {' '.join(missing)}" if missing else "")
      + (f" | supported but not run by verify: {' '.join(unforceable)}" if unforceable else ""))
sys.exit(1 if total["failed"] > 0 or missing else 0)
EOF
  ) || cpu_fail=1
  ((cpu_fail)) && failures=$((failures + 1))
  summary+=("-cpu $cpu: $([[ $cpu_fail == 0 ]] && echo OK || echo FAILED)
    targets compiled: $compiled
    supported: $supported; selected: $selected
    conformance_tests: ${tests_line:-no result} ($((t1 - t0)) s)
    verify --quick: $counts ($((t2 - t1)) s) -> $json")
done

echo
echo "Arm conformance summary ($(date -u +%Y-%m-%d), $($triple-g++ -dumpfullversion) cross, $(qemu-aarch64 --version | head -1), build ${build_seconds} s):"
for s in "${summary[@]}"; do echo "  $s"; done
if ((failures)); then
  echo "FAILED on $failures of $(wc -w <<<"$cpus") qemu CPUs"
  exit 1
fi
echo "OK: all $(wc -w <<<"$cpus") qemu CPUs verified"
if [[ "${ARM_RECORD:-0}" == 1 ]]; then
  first=$(awk '{print $1}' <<<"$cpus")
  cp "$build/verify-${first//[^A-Za-z0-9_.-]/_}.json" docs/verify-arm.json
  echo "wrote docs/verify-arm.json (from -cpu $first); run \`build/backplane verify --write-docs docs --from-records\` (or \`make docs\`) to regenerate the matrices"
fi
