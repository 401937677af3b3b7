#!/usr/bin/env bash
# Runs every libFuzzer target (make fuzz builds them into BUILD/fuzz) over its committed corpus
# fuzz/corpus/<target>, then for a fixed number of mutations (FUZZ_SMOKE_RUNS, default 20000,
# seed 1). New inputs go to a scratch folder, never into the committed corpus. A crash, leak,
# sanitizer report, timeout (25 s) or more than 2 GiB RSS fails the script; the input that did it
# is kept under $FUZZ_ARTIFACTS (default BUILD/fuzz-artifacts) and its path printed.
# FUZZ_TARGETS="npy gguf" limits the run; FUZZ_RUNS_EXTRA passes more libFuzzer flags.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
runs=${FUZZ_SMOKE_RUNS:-20000}
artifacts=${FUZZ_ARTIFACTS:-$build/fuzz-artifacts}
# -max_len per format (also used for the long runs in docs/reliability.md).
declare -A max_len=([graph_json]=8192 [npy]=4096 [safetensors]=4096 [attr_text]=256 [gguf]=8192
                    [onnx]=4096 [wordpiece_vocab]=4096)
targets=${FUZZ_TARGETS:-"graph_json npy safetensors attr_text gguf onnx wordpiece_vocab"}
mkdir -p "$artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for t in $targets; do
  bin="$build/fuzz/fuzz_$t"
  [[ -x $bin ]] || { echo "fuzz-smoke: $bin missing (make fuzz)" >&2; exit 1; }
  mkdir -p "$scratch/$t"
  start=$(date +%s)
  if "$bin" "$scratch/$t" "fuzz/corpus/$t" -runs="$runs" -seed=1 -max_len="${max_len[$t]}" \
      -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
      ${FUZZ_RUNS_EXTRA:-} > "$scratch/$t.log" 2>&1; then
    echo "fuzz-smoke: $t ok ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$scratch/$t.log" | awk '{print $2}') runs, $(( $(date +%s) - start )) s)"
  else
    echo "fuzz-smoke: $t FAILED; log tail:" >&2
    tail -40 "$scratch/$t.log" >&2
    status=1
  fi
done
exit $status
