#!/usr/bin/env bash
# Prepares the onnxruntime peer of `backplane bench --embed-model`: a venv with pinned PyPI
# packages in $BACKPLANE_CACHE/peers/minilm-venv and the exported model
# $BACKPLANE_CACHE/peers/all-MiniLM-L6-v2.onnx (bench/minilm/export_onnx.py). About 6 GB and a few
# minutes once; not part of make test. A no-op when both exist.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${BACKPLANE_CACHE:-$HOME/.cache/backplane}
venv="$cache/peers/minilm-venv"
onnx="$cache/peers/all-MiniLM-L6-v2.onnx"
model="$cache/models/all-MiniLM-L6-v2"
[[ -f "$model/model.safetensors" ]] || "$here/../../scripts/fetch-models.sh"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet onnxruntime==1.32.0 onnx==1.23.2 torch==2.15.0 transformers==5.24.0 numpy==2.4.6
fi
if [[ ! -f "$onnx" ]]; then
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$here/export_onnx.py" "$model" "$onnx.tmp" && mv "$onnx.tmp" "$onnx"
fi
echo "peer ready: $venv/bin/python $onnx"
