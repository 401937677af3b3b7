// Device conformance probes: nn ops (attention, norms, positional, embeddings, projections,
// convolutions, pools, quantisation, spatial sampling). Odd sizes, Sq != Sk, strides, dilations,
// padding and groups > 1 throughout.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {
namespace {

const std::vector<DType> kFloats = {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16};

void AddAttentionProbes(std::vector<DeviceProbe>& p) {
  // sdpa: [..., S, D] with leading dims, Sq < Sk, Sq > Sk (rows that see no key are zeros), rank 2.
  for (const char* causal : {R"({"causal": false})", R"({"causal": true})"}) {
    p.push_back({.op = "attention.sdpa", .inputs = {{"T", {2, 3, 5, 4}}, {"T", {2, 3, 7, 4}}, {"T", {2, 3, 7, 6}}},
                 .attrs = causal});
    p.push_back({.op = "attention.sdpa", .inputs = {{"T", {2, 7, 3}}, {"T", {2, 5, 3}}, {"T", {2, 5, 5}}}, .attrs = causal});
  }
  p.push_back({.op = "attention.sdpa", .inputs = {{"T", {5, 4}}, {"T", {5, 4}}, {"T", {5, 4}}}, .attrs = R"({"causal": true})"});
  // mqa: one K/V head shared by 4 query heads.
  for (const char* causal : {"false", "true"}) {
    const std::string a = std::string(R"({"num_heads": 4, "head_dim": 6, "causal": )") + causal + "}";
    p.push_back({.op = "attention.mqa", .inputs = {{"T", {2, 4, 5, 6}}, {"T", {2, 1, 7, 6}}, {"T", {2, 1, 7, 6}}}, .attrs = a});
    p.push_back({.op = "attention.mqa", .inputs = {{"T", {1, 4, 7, 6}}, {"T", {1, 1, 5, 6}}, {"T", {1, 1, 5, 6}}}, .attrs = a});
  }
  // gqa: 4 query heads on 2 K/V heads; causal, windows (with and without a right bound), ALiBi.
  const std::vector<ProbeInput> gqa = {{"T", {2, 4, 5, 6}}, {"T", {2, 2, 7, 6}}, {"T", {2, 2, 7, 6}}};
  const std::vector<ProbeInput> gqa_long_q = {{"T", {1, 4, 7, 6}}, {"T", {1, 2, 5, 6}}, {"T", {1, 2, 5, 6}}};
  const char* base = R"("num_heads": 4, "num_kv_heads": 2, "head_dim": 6)";
  for (const char* extra : {R"("causal": false)", R"("causal": true)", R"("causal": true, "window": 3, "window_right": -1)",
                            R"("causal": false, "window": 2, "window_right": 1)", R"("causal": false, "window": 3)",
                            R"("causal": true, "alibi_slope": 0.5)", R"("causal": false, "alibi_slope": 1.5, "window": 4, "window_right": 2)"}) {
    const std::string a = std::string("{") + base + ", " + extra + "}";
    p.push_back({.op = "attention.gqa", .inputs = gqa, .attrs = a});
    p.push_back({.op = "attention.gqa", .inputs = gqa_long_q, .attrs = a});
  }
  // sliding_window: window_right 0 (causal, the default), -1 (no right bound), 2.
  for (const char* a : {R"({"window": 3})", R"({"window": 2, "window_right": -1})", R"({"window": 2, "window_right": 2})",
                        R"({"window": 1})"}) {
    p.push_back({.op = "attention.sliding_window", .inputs = {{"T", {1, 4, 6, 4}}, {"T", {1, 2, 6, 4}}, {"T", {1, 2, 6, 4}}},
                 .attrs = a});
    p.push_back({.op = "attention.sliding_window", .inputs = {{"T", {2, 2, 5, 3}}, {"T", {2, 2, 7, 3}}, {"T", {2, 2, 7, 3}}},
                 .attrs = a});
  }
}

void AddNormProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "math.rmsnorm", .inputs = {{"T", {3, 5, 7}}, {"T", {7}}}});
  p.push_back({.op = "math.rmsnorm", .inputs = {{"T", {4, 9}}, {"T", {9}}}, .attrs = R"({"eps": 0.25})"});
  p.push_back({.op = "math.layernorm", .inputs = {{"T", {3, 5, 7}}, {"T", {7}}, {"T", {7}}}});
  p.push_back({.op = "math.layernorm", .inputs = {{"T", {4, 9}}, {"T", {9}}, {"T", {9}}}, .attrs = R"({"eps": 0.125})"});
  p.push_back({.op = "math.groupnorm", .inputs = {{"T", {2, 6, 5}}, {"T", {6}}, {"T", {6}}}, .attrs = R"({"groups": 3})"});
  p.push_back({.op = "math.groupnorm", .inputs = {{"T", {2, 4, 3, 3}}, {"T", {4}}, {"T", {4}}},
               .attrs = R"({"groups": 2, "eps": 0.01})"});
  p.push_back({.op = "math.instancenorm", .inputs = {{"T", {2, 3, 5}}, {"T", {3}}, {"T", {3}}}});
  p.push_back({.op = "math.instancenorm", .inputs = {{"T", {2, 3, 2, 3}}, {"", {}}, {"", {}}}, .attrs = R"({"eps": 0.5})"});
  p.push_back({.op = "math.batchnorm",
               .inputs = {{"T", {2, 3, 4}}, {"T", {3}}, {"T", {3}}, {"T", {3}}, {"T", {3}, 0.1, 2.0}}});
  p.push_back({.op = "math.batchnorm",
               .inputs = {{"T", {2, 3, 2, 3}}, {"", {}}, {"", {}}, {"T", {3}}, {"T", {3}, 0.0, 2.0}},
               .attrs = R"({"eps": 0.01})"});
}

void AddPositionalProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "positional.rope", .inputs = {{"T", {2, 5, 3, 8}}}, .attrs = R"({"head_dim": 8})"});
  p.push_back({.op = "positional.rope", .inputs = {{"T", {7, 2, 6}}},
               .attrs = R"({"head_dim": 6, "base": 500, "position_start": 3})"});
  p.push_back({.op = "positional.rope_pairs", .inputs = {{"T", {3, 4, 6}}, {"T", {3}, -1, 1}, {"T", {3}, -1, 1}}});
  p.push_back({.op = "positional.alibi", .inputs = {{"T", {2, 4, 6}}, {"T", {1}, 0.0, 1.0}}});
  p.push_back({.op = "positional.alibi", .inputs = {{"T", {5, 3}}, {"T", {1}, 0.0, 2.0}}});
}

void AddEmbeddingProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "embedding.token", .inputs = {{"i32", {3, 5}, 0, 9}, {"T", {10, 6}}}});
  p.push_back({.op = "embedding.token", .inputs = {{"i32", {7}, 0, 4}, {"T", {5, 3}}}});
  // Offsets are drawn at random, so all zero: one bag of everything, or empty bags then everything.
  p.push_back({.op = "embedding.bag", .inputs = {{"i32", {7}, 0, 9}, {"i32", {1}, 0, 0}, {"T", {10, 4}}}});
  p.push_back({.op = "embedding.bag", .inputs = {{"i32", {9}, 0, 5}, {"i32", {3}, 0, 0}, {"T", {6, 5}}}});
}

void AddProjectionProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "projection.linear", .inputs = {{"T", {2, 3, 5}}, {"T", {4, 5}}, {"T", {4}}}});
  p.push_back({.op = "projection.linear", .inputs = {{"T", {7}}, {"T", {3, 7}}}});
  p.push_back({.op = "projection.fused_qkv", .inputs = {{"T", {3, 5}}, {"T", {12, 5}}, {"T", {12}}}, .outputs = 3});
  p.push_back({.op = "projection.fused_qkv", .inputs = {{"T", {2, 3, 4}}, {"T", {9, 4}}}, .outputs = 3});
}

void AddConvProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "convolution.conv1d", .inputs = {{"T", {2, 4, 9}}, {"T", {6, 2, 3}}, {"T", {6}}},
               .attrs = R"({"stride": 2, "padding": 1, "dilation": 2, "groups": 2})"});
  p.push_back({.op = "convolution.conv1d", .inputs = {{"T", {1, 3, 7}}, {"T", {2, 3, 3}}}});
  p.push_back({.op = "convolution.conv2d", .inputs = {{"T", {2, 4, 7, 6}}, {"T", {6, 2, 3, 2}}, {"T", {6}}},
               .attrs = R"({"stride_h": 2, "pad_h": 1, "pad_w": 2, "dil_w": 2, "groups": 2})"});
  p.push_back({.op = "convolution.conv2d", .inputs = {{"T", {1, 3, 5, 5}}, {"T", {2, 3, 3, 3}}},
               .attrs = R"({"stride_w": 3, "dil_h": 2, "pad_h": 2})"});
  p.push_back({.op = "convolution.conv3d", .inputs = {{"T", {1, 2, 5, 6, 4}}, {"T", {3, 2, 2, 3, 2}}, {"T", {3}}},
               .attrs = R"({"stride_d": 2, "pad_h": 1, "dil_w": 2})"});
  p.push_back({.op = "convolution.conv3d", .inputs = {{"T", {2, 4, 3, 4, 3}}, {"T", {2, 2, 1, 2, 2}}},
               .attrs = R"({"groups": 2, "stride_h": 2, "pad_w": 1, "pad_d": 1})"});
  p.push_back({.op = "convolution.conv_transpose2d", .inputs = {{"T", {2, 3, 4, 5}}, {"T", {3, 2, 3, 3}}, {"T", {2}}},
               .attrs = R"({"stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1, "out_pad_h": 1})"});
  // pad 3 > dil (k - 1) = 2 on w: the equivalent convolution has negative edge padding.
  p.push_back({.op = "convolution.conv_transpose2d", .inputs = {{"T", {1, 2, 5, 5}}, {"T", {2, 3, 2, 3}}},
               .attrs = R"({"stride_h": 3, "stride_w": 2, "dil_h": 2, "pad_w": 3, "out_pad_h": 2, "out_pad_w": 1})"});
}

void AddPoolProbes(std::vector<DeviceProbe>& p) {
  const char* k32 = R"({"kernel_h": 3, "kernel_w": 2, "stride_h": 2, "pad_h": 1, "pad_w": 1})";
  for (const char* op : {"pooling.max_pool2d", "pooling.avg_pool2d"}) {
    p.push_back({.op = op, .inputs = {{"T", {2, 3, 7, 6}}}, .attrs = k32});
    p.push_back({.op = op, .inputs = {{"T", {1, 2, 5, 4}}}, .attrs = R"({"kernel_h": 2, "kernel_w": 3, "stride_w": 2})"});
  }
  for (const char* op : {"pooling.adaptive_avg_pool2d", "pooling.adaptive_max_pool2d"}) {
    p.push_back({.op = op, .inputs = {{"T", {2, 3, 7, 5}}}, .attrs = R"({"out_h": 3, "out_w": 4})"});
    p.push_back({.op = op, .inputs = {{"T", {1, 2, 3, 3}}}, .attrs = R"({"out_h": 5, "out_w": 2})"});
  }
  // N-D pools: 1-3 spatial axes, dilations, uneven pads, ceil mode. Max also on every integer
  // dtype with many ties (values 0..5).
  const std::vector<std::pair<Shape, std::string>> nd = {
      {{2, 3, 9}, R"("kernel": [3], "strides": [2], "pads": [1, 2], "ceil_mode": true)"},
      {{1, 2, 7, 6}, R"("kernel": [3, 2], "dilations": [2, 1], "strides": [2, 2], "pads": [1, 0, 2, 1], "ceil_mode": true)"},
      {{2, 2, 5, 6}, R"("kernel": [2, 3], "strides": [1, 2])"},
      {{1, 2, 4, 5, 4}, R"("kernel": [2, 2, 3], "strides": [2, 1, 1], "pads": [0, 1, 1, 1, 0, 1])"},
  };
  for (const auto& [shape, a] : nd) {
    p.push_back({.op = "pooling.max_pool", .inputs = {{"T", shape}}, .attrs = "{" + a + "}", .dtypes = kFloats});
    p.push_back({.op = "pooling.max_pool", .inputs = {{"T", shape, 0, 5}}, .attrs = "{" + a + "}"});
    for (const char* idx : {R"("indices_over": "plane")", R"("indices_over": "tensor", "storage_order": 1)",
                            R"("storage_order": 1)", R"("indices_over": "tensor")"}) {
      const std::string attrs = "{" + a + ", " + idx + "}";
      p.push_back({.op = "pooling.max_pool_with_indices", .inputs = {{"T", shape}}, .attrs = attrs, .dtypes = kFloats,
                   .outputs = 2});
      p.push_back({.op = "pooling.max_pool_with_indices", .inputs = {{"T", shape, 0, 5}}, .attrs = attrs, .outputs = 2});
    }
    for (const char* inc : {"false", "true"}) {
      p.push_back({.op = "pooling.avg_pool", .inputs = {{"T", shape}},
                   .attrs = "{" + a + R"(, "count_include_pad": )" + inc + "}"});
    }
  }
}

void AddShapeProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "shape.concat", .inputs = {{"T", {2, 3, 4}}, {"T", {2, 1, 4}}, {"T", {2, 5, 4}}}, .attrs = R"({"axis": 1})"});
  p.push_back({.op = "shape.concat", .inputs = {{"T", {3, 2}}, {"T", {3, 5}}}, .attrs = R"({"axis": -1})"});
  p.push_back({.op = "shape.split", .inputs = {{"T", {2, 6, 3}}}, .attrs = R"({"axis": 1, "sizes": [1, 3, 2]})", .outputs = 3});
  p.push_back({.op = "shape.split", .inputs = {{"T", {4, 5}}}, .attrs = R"({"axis": -2, "count": 2})", .outputs = 2});
  p.push_back({.op = "shape.upsample_nearest2d", .inputs = {{"T", {2, 3, 3, 5}}}, .attrs = R"({"scale_h": 2, "scale_w": 1.5})"});
  p.push_back({.op = "shape.upsample_nearest2d", .inputs = {{"T", {1, 2, 4, 5}}}, .attrs = R"({"out_h": 7, "out_w": 3})"});
  p.push_back({.op = "shape.view_as_heads", .inputs = {{"T", {2, 5, 12}}}, .attrs = R"({"num_heads": 3})"});
  p.push_back({.op = "shape.merge_heads", .inputs = {{"T", {2, 3, 5, 4}}}});
  p.push_back({.op = "shape.last_token", .inputs = {{"T", {2, 5, 3}}}});
  p.push_back({.op = "shape.last_token", .inputs = {{"T", {3, 4}}}});
  p.push_back({.op = "shape.slice", .inputs = {{"T", {5, 7, 4}}},
               .attrs = R"({"starts": [1, -1], "ends": [4, -8], "axes": [0, 1], "steps": [2, -2]})"});
  p.push_back({.op = "shape.slice", .inputs = {{"T", {5, 7, 4}}},
               .attrs = R"({"starts": [-100, 2, -1], "ends": [100, 3, -100], "axes": [2, 0, -2], "steps": [3, 1, -3]})"});
  p.push_back({.op = "shape.slice", .inputs = {{"T", {6, 3}}}, .attrs = R"({"starts": [4], "ends": [2]})"});
}

void AddQuantProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "quant.dequant_int8", .inputs = {{"T", {5, 7}, -128, 127}}, .attrs = R"({"scale": 0.37, "zero_point": 3})"});
  p.push_back({.op = "quant.dequant_int8", .inputs = {{"T", {3, 4}, -128, 127}}});
  // The op's dtype is the int8 result; the float source runs in every float format.
  for (const char* src : {"f64", "f32", "f16", "bf16"}) {
    p.push_back({.op = "quant.quantize_int8", .inputs = {{src, {5, 7}, -60, 60}}, .attrs = R"({"scale": 0.3, "zero_point": -5})",
                 .dtypes = {DType::Int8}});
    p.push_back({.op = "quant.quantize_int8", .inputs = {{src, {4, 6}, -3, 3}}, .attrs = R"({"scale": 0.5})",
                 .dtypes = {DType::Int8}});
  }
  // ggml blocks from random bytes (f16 scales of every kind: subnormal, huge, Inf and NaN too).
  const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> formats = {
      {"f32", {1, 4}},     {"f16", {1, 2}},     {"bf16", {1, 2}},    {"q4_0", {32, 18}},  {"q4_1", {32, 20}},
      {"q5_0", {32, 22}},  {"q5_1", {32, 24}},  {"q8_0", {32, 34}},  {"q8_1", {32, 36}},  {"q2_k", {256, 84}},
      {"q3_k", {256, 110}}, {"q4_k", {256, 144}}, {"q5_k", {256, 176}}, {"q6_k", {256, 210}}, {"q8_k", {256, 292}}};
  for (const auto& [name, layout] : formats) {
    const auto [elements, bytes] = layout;
    const std::string a = R"({"format": ")" + name + R"("})";
    const int64_t per_row = elements == 1 ? 5 : 2;
    p.push_back({.op = "quant.block_dequantize", .inputs = {{"u8", {3, per_row * bytes}, 0, 255}}, .attrs = a,
                 .dtypes = {DType::Float32}});
    p.push_back({.op = "quant.block_matmul",
                 .inputs = {{"T", {2, 3, per_row * elements}}, {"u8", {5, per_row * bytes}, 0, 255}},
                 .attrs = a, .dtypes = {DType::Float32}});
  }
}

void AddFusedProbes(std::vector<DeviceProbe>& p) {
  for (const char* act : {"none", "relu", "gelu", "gelu_tanh"}) {
    const std::string a = std::string(R"({"pattern": "matmul_bias_act", "activation": ")") + act + R"("})";
    p.push_back({.op = "Fused", .inputs = {{"T", {2, 3, 5}, -3, 3}, {"T", {5, 4}, -3, 3}, {"T", {4}, -3, 3}}, .attrs = a});
    p.push_back({.op = "Fused", .inputs = {{"T", {7}, -4, 4}, {"T", {7, 3}, -4, 4}}, .attrs = a});
  }
  p.push_back({.op = "Fused", .inputs = {{"T", {3, 7}}, {"T", {3, 7}}, {"T", {7}}, {"T", {7}}},
               .attrs = R"({"pattern": "add_layernorm"})", .outputs = 2});
  p.push_back({.op = "Fused", .inputs = {{"T", {2, 2, 5}}, {"T", {2, 2, 5}}, {"T", {5}}, {"T", {5}}},
               .attrs = R"({"pattern": "add_layernorm"})"});
}

void AddSpatialProbes(std::vector<DeviceProbe>& p) {
  // Grid points in [-1.2, 1.2]: some fall outside the image (zeros, border, reflection).
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* pad : {"zeros", "border", "reflection"}) {
      for (const char* align : {"false", "true"}) {
        const std::string a = std::string(R"({"mode": ")") + mode + R"(", "padding_mode": ")" + pad +
                              R"(", "align_corners": )" + align + "}";
        p.push_back({.op = "spatial.grid_sample", .inputs = {{"T", {2, 3, 5, 4}}, {"T", {2, 3, 4, 2}, -1.2, 1.2}},
                     .attrs = a});
      }
    }
  }
  p.push_back({.op = "spatial.grid_sample", .inputs = {{"T", {1, 2, 1, 3}}, {"T", {1, 2, 2, 2}, -1.5, 1.5}},
               .attrs = R"({"padding_mode": "reflection", "mode": "bicubic"})"});
  // RoIs with corners in [-1, 7] on a 5 x 6 image (some partly outside, some reversed), two batches.
  for (const char* a : {R"({"output_height": 2, "output_width": 3, "sampling_ratio": 2})",
                        R"({"mode": "max", "output_height": 3, "output_width": 2, "sampling_ratio": 1, "spatial_scale": 0.75})",
                        R"({"output_height": 2, "output_width": 2, "sampling_ratio": 3, "half_pixel": false})",
                        R"({"mode": "max", "output_height": 1, "output_width": 2, "sampling_ratio": 2, "half_pixel": false})"}) {
    for (const char* idx : {"i64", "i32"}) {
      p.push_back({.op = "spatial.roi_align", .inputs = {{"T", {2, 3, 5, 6}}, {"T", {4, 4}, -1, 7}, {idx, {4}, 0, 1}},
                   .attrs = a});
    }
  }
}

}  // namespace

void AddNnProbes(std::vector<DeviceProbe>& p) {
  AddAttentionProbes(p);
  AddNormProbes(p);
  AddPositionalProbes(p);
  AddEmbeddingProbes(p);
  AddProjectionProbes(p);
  AddConvProbes(p);
  AddPoolProbes(p);
  AddShapeProbes(p);
  AddQuantProbes(p);
  AddFusedProbes(p);
  AddSpatialProbes(p);
}

}  // namespace backplane::conformance
