#!/usr/bin/env bash
# make tsan: the threaded tests under ThreadSanitizer. The build (build-tsan/) uses clang-14 and
# LLVM's libomp, whose OMPT tool Archer (libarcher.so, in Debian's libomp-14-dev) tells TSan about
# OpenMP's fork, join, barriers and tasks; g++'s libgomp is not instrumented and would report its
# own barrier hand-offs as races. ignore_noninstrumented_modules=1 (Archer's advice) keeps TSan out
# of libomp, OpenBLAS and Highway's shared library, which are not instrumented. No suppressions.
# Runs: core_tests, runtime_tests (the executor, every op's lowering, concurrent executors on one
# backend: concurrency_test.cpp) and conformance_tests (every fast kernel on every target).
set -euo pipefail
build=${1:-build-tsan}
archer=/usr/lib/llvm-14/lib/libarcher.so
[[ -f $archer ]] || { echo "tsan: $archer missing (apt-get install libomp-14-dev)" >&2; exit 1; }
export OMP_TOOL_LIBRARIES=$archer
export TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export BACKPLANE_TEST_SIZE=lean BACKPLANE_NUM_THREADS=${BACKPLANE_NUM_THREADS:-4}
status=0
for t in core_tests runtime_tests conformance_tests; do
  echo "tsan: $t"
  "$build/tests/$t" --gtest_brief=1 ${TSAN_GTEST_FILTER:+--gtest_filter=$TSAN_GTEST_FILTER} || status=1
done
exit $status
