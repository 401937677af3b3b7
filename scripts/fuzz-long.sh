#!/usr/bin/env bash
# The long fuzz runs of docs/reliability.md: each libFuzzer target (make fuzz) from its committed
# corpus for FUZZ_LONG_RUNS executions (default 10 million) or FUZZ_LONG_SECONDS (default 1800),
# whichever comes first, with the limits of scripts/fuzz-smoke.sh. Prints one line per target:
# executions, seconds, executions per second, corpus entries, peak RSS. A crash, leak, sanitizer
# report or timeout fails the script and keeps the input under $FUZZ_ARTIFACTS.
# FUZZ_TARGETS="npy gguf" limits the run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
runs=${FUZZ_LONG_RUNS:-10000000}
seconds=${FUZZ_LONG_SECONDS:-1800}
artifacts=${FUZZ_ARTIFACTS:-$build/fuzz-artifacts}
logs=${FUZZ_LOGS:-$build/fuzz-long}
declare -A max_len=([graph_json]=8192 [npy]=4096 [safetensors]=4096 [attr_text]=256 [gguf]=8192
                    [onnx]=4096 [wordpiece_vocab]=4096)
targets=${FUZZ_TARGETS:-"attr_text npy safetensors wordpiece_vocab gguf onnx graph_json"}
mkdir -p "$artifacts" "$logs"
status=0
for t in $targets; do
  bin="$build/fuzz/fuzz_$t"
  [[ -x $bin ]] || { echo "fuzz-long: $bin missing (make fuzz)" >&2; exit 1; }
  corpus="$logs/$t-corpus"
  mkdir -p "$corpus"
  start=$(date +%s)
  if "$bin" "$corpus" "fuzz/corpus/$t" -runs="$runs" -max_total_time="$seconds" -seed=1 \
      -max_len="${max_len[$t]}" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
      -artifact_prefix="$artifacts/$t-" > "$logs/$t.log" 2>&1; then
    elapsed=$(( $(date +%s) - start ))
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$logs/$t.log" | awk '{print $2}')
    rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$logs/$t.log" | awk '{print $2}')
    echo "fuzz-long: $t ok: $execs executions, $elapsed s, $(( execs / (elapsed > 0 ? elapsed : 1) )) exec/s, $(ls "$corpus" | wc -l) new corpus entries, peak RSS $rss MB"
  else
    echo "fuzz-long: $t FAILED after $(( $(date +%s) - start )) s; log tail:" >&2
    tail -60 "$logs/$t.log" >&2
    status=1
  fi
done
exit $status
