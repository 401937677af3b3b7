// The Llama forward pass on Backend methods. Per layer, for n new tokens at positions p..p+n-1:
//   h = RMSNorm(x) * attn_norm;  q, k, v = h Wq^T, h Wk^T, h Wv^T
//   RoPE(q), RoPE(k) with the GGUF layout (llama.cpp's interleaved pairs) and theta
//   K/V appended to the layer's cache; o = causal GQA attention of q over cache[0, p+n)
//   x += o Wo^T;  h = RMSNorm(x) * ffn_norm;  x += (silu(h Wg^T) * (h Wu^T)) Wd^T
// then logits = RMSNorm(x) * output_norm Wout^T (Wout = token_embd when tied).
#include "backplane/llm/llama.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "backplane/block_format.hpp"
#include "backplane/error.hpp"
#include "backplane/tensor.hpp"

namespace backplane::llm {
namespace {

int64_t PositiveKey(const gguf::File& file, const std::string& key) {
  const int64_t value = file.GetInt(key);
  if (value <= 0 || value > (int64_t{1} << 31)) {
    throw Error(ErrorCode::InvalidArgument, file.path(),
                fmt::format("metadata '{}' must be in [1, 2^31], got {}", key, value));
  }
  return value;
}

double FloatKeyOr(const gguf::File& file, const std::string& key, double fallback) {
  return file.Find(key) == nullptr ? fallback : file.GetFloat(key);
}

// f32 values in a Tensor, so that they live where Tensor(dtype, shape) allocates on this thread:
// host memory, or the memory a device installs with a ScopedStorageAllocator (CUDA managed memory
// for `backplane generate --device cuda`).
class FloatBuffer {
 public:
  // n zeros; the previous contents are dropped.
  void Zeros(size_t n) { tensor_ = n == 0 ? Tensor() : Tensor(DType::Float32, {static_cast<int64_t>(n)}); }
  size_t size() const { return tensor_.defined() ? static_cast<size_t>(tensor_.numel()) : 0; }
  bool empty() const { return size() == 0; }
  float* data() { return empty() ? nullptr : tensor_.data_as<float>(); }
  const float* data() const { return empty() ? nullptr : tensor_.data_as<float>(); }
  float& operator[](size_t i) { return data()[i]; }
  const float& operator[](size_t i) const { return data()[i]; }

 private:
  Tensor tensor_;
};

// A weight matrix [out, in] (or a vector when out == 1) in the file's block format.
struct Weight {
  const uint8_t* data = nullptr;  // the file's bytes, or `copy`
  BlockFormat format = BlockFormat::F32;
  int64_t out = 0;
  int64_t in = 0;
  FloatBuffer exact;  // Exact path: the dequantised matrix, transposed to [in, out]
  Tensor copy;        // LlamaOptions::copy_weights: the file's bytes in a Tensor
};

struct Layer {
  Weight attn_norm, wq, wk, wv, wo, ffn_norm, wg, wu, wd;
};

}  // namespace

LlamaConfig LlamaConfig::FromGguf(const gguf::File& file) {
  LlamaConfig c;
  c.architecture = file.GetString("general.architecture");
  const std::string& a = c.architecture;
  if (a != "llama") {
    throw Error(ErrorCode::InvalidArgument, file.path(),
                fmt::format("metadata 'general.architecture' must be \"llama\" (the Llama "
                            "architecture), got \"{}\"",
                            a));
  }
  c.hidden = PositiveKey(file, a + ".embedding_length");
  c.layers = PositiveKey(file, a + ".block_count");
  c.heads = PositiveKey(file, a + ".attention.head_count");
  c.kv_heads = file.Find(a + ".attention.head_count_kv") ? PositiveKey(file, a + ".attention.head_count_kv")
                                                         : c.heads;
  c.ffn = PositiveKey(file, a + ".feed_forward_length");
  c.train_context = PositiveKey(file, a + ".context_length");
  c.rms_eps = file.GetFloat(a + ".attention.layer_norm_rms_epsilon");
  c.rope_theta = FloatKeyOr(file, a + ".rope.freq_base", 10000.0);
  if (c.hidden % c.heads != 0 || c.heads % c.kv_heads != 0) {
    throw Error(ErrorCode::InvalidArgument, file.path(),
                fmt::format("metadata: embedding_length {} must divide into head_count {} heads, and "
                            "head_count into head_count_kv {} groups",
                            c.hidden, c.heads, c.kv_heads));
  }
  c.head_dim = c.hidden / c.heads;
  if (c.head_dim % 2 != 0) {
    throw Error(ErrorCode::InvalidArgument, file.path(),
                fmt::format("metadata: the head dimension {} must be even for RoPE", c.head_dim));
  }
  if (file.Find(a + ".rope.dimension_count") != nullptr) {
    if (file.GetInt(a + ".rope.dimension_count") != c.head_dim) {
      throw Error(ErrorCode::InvalidArgument, file.path(),
                  fmt::format("metadata '{}.rope.dimension_count' must equal the head dimension {} "
                              "(partial rotary is not supported), got {}",
                              a, c.head_dim, file.GetInt(a + ".rope.dimension_count")));
    }
  }
  for (const char* scaling : {".rope.scaling.type", ".rope.scaling.factor"}) {
    const gguf::Value* v = file.Find(a + scaling);
    const bool none = v == nullptr || (v->type == gguf::ValueType::String && v->str == "none") ||
                      (v->type == gguf::ValueType::Float32 && v->f == 1.0);
    if (!none) {
      throw Error(ErrorCode::InvalidArgument, file.path(),
                  fmt::format("metadata '{}{}': RoPE scaling is not supported", a, scaling));
    }
  }
  if (!(c.rms_eps >= 0 && c.rms_eps < 1) || !(c.rope_theta > 0 && c.rope_theta < 1e12)) {
    throw Error(ErrorCode::InvalidArgument, file.path(),
                fmt::format("metadata: layer_norm_rms_epsilon {} must be in [0, 1) and rope.freq_base "
                            "{} in (0, 1e12)",
                            c.rms_eps, c.rope_theta));
  }
  const gguf::TensorInfo& embd = file.Tensor("token_embd.weight");
  if (embd.dims.size() != 2 || embd.dims[0] != c.hidden) {
    throw Error(ErrorCode::InvalidArgument, file.path(),
                fmt::format("tensor 'token_embd.weight' must be [{}, vocab] (ggml order)", c.hidden));
  }
  c.vocab = embd.dims[1];
  c.tied_output = file.FindTensor("output.weight") == nullptr;
  return c;
}

struct LlamaModel::Impl {
  gguf::File file;
  Backend& backend;
  LlamaOptions options;
  LlamaConfig config;
  int64_t context = 0;
  int64_t position = 0;

  Weight token_embd, output_norm, output;
  std::vector<Layer> layers;

  // KV cache: per layer [context, kv_heads * head_dim] for K and for V.
  FloatBuffer k_cache, v_cache;
  // Scratch for `batch` tokens.
  FloatBuffer x, h, q, k, v, attn, proj, gate, up, last;
  FloatBuffer exact_embd;  // Exact path: [vocab, hidden] f32 rows for the lookup

  Impl(gguf::File f, Backend& b, LlamaOptions o) : file(std::move(f)), backend(b), options(o) {
    config = LlamaConfig::FromGguf(file);
    context = options.context == 0 ? config.train_context : options.context;
    if (context < 1 || context > (int64_t{1} << 24)) {
      ThrowInvalidArgument("llm.Llama", "context", "in [1, 2^24] (0: the model's training context)",
                           std::to_string(options.context));
    }
    if (options.batch < 1 || options.batch > 8192) {
      ThrowInvalidArgument("llm.Llama", "batch", "in [1, 8192]", std::to_string(options.batch));
    }
    LoadWeights();
    const int64_t kv = config.kv_heads * config.head_dim;
    k_cache.Zeros(static_cast<size_t>(config.layers * context * kv));
    v_cache.Zeros(k_cache.size());
    const auto n = static_cast<size_t>(options.batch);
    x.Zeros(n * config.hidden);
    h.Zeros(n * config.hidden);
    q.Zeros(n * config.hidden);
    k.Zeros(n * kv);
    v.Zeros(n * kv);
    attn.Zeros(n * config.hidden);
    proj.Zeros(n * config.hidden);
    gate.Zeros(n * config.ffn);
    up.Zeros(n * config.ffn);
    last.Zeros(config.hidden);
  }

  Weight Load(const std::string& name, int64_t out, int64_t in) {
    const gguf::TensorInfo& t = file.Tensor(name);
    const bool vector = out == 1;
    const bool shape_ok = vector ? (t.dims.size() == 1 && t.dims[0] == in)
                                 : (t.dims.size() == 2 && t.dims[0] == in && t.dims[1] == out);
    if (!shape_ok) {
      std::string dims;
      for (const int64_t d : t.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      throw Error(ErrorCode::InvalidArgument, file.path(),
                  vector ? fmt::format("tensor '{}' must have dims [{}], got [{}]", name, in, dims)
                         : fmt::format("tensor '{}' must have dims [{}, {}] (ggml order: in, out), got [{}]",
                                       name, in, out, dims));
    }
    Weight w{file.Data(t), t.format, out, in, {}, {}};
    if (options.copy_weights) {
      const int64_t bytes = out * BlockBytes(t.format, in, "llm.Llama", "weight " + name);
      w.copy = Tensor(DType::Int8, {bytes});
      std::memcpy(w.copy.data(), w.data, static_cast<size_t>(bytes));
      w.data = static_cast<const uint8_t*>(w.copy.data());
    }
    if (vector && w.format != BlockFormat::F32) {
      // Norm weights are used as f32 vectors on both paths.
      w.exact.Zeros(static_cast<size_t>(in));
      backend.BlockQuant().Dequantize(w.exact.data(), w.data, in, w.format, DType::Float32);
    }
    return w;
  }

  // Exact path: W [out, in] dequantised row by row and transposed to [in, out] for Matmul.
  void MakeExact(Weight& w) {
    FloatBuffer row;
    row.Zeros(static_cast<size_t>(w.in));
    const int64_t row_bytes = BlockBytes(w.format, w.in, "llm.Llama", "weight row");
    w.exact.Zeros(static_cast<size_t>(w.in * w.out));
    for (int64_t o = 0; o < w.out; ++o) {
      backend.BlockQuant().Dequantize(row.data(), w.data + o * row_bytes, w.in, w.format, DType::Float32);
      for (int64_t i = 0; i < w.in; ++i) w.exact[static_cast<size_t>(i * w.out + o)] = row[static_cast<size_t>(i)];
    }
  }

  void LoadWeights() {
    const LlamaConfig& c = config;
    const int64_t kv = c.kv_heads * c.head_dim;
    token_embd = Load("token_embd.weight", c.vocab, c.hidden);
    output_norm = Load("output_norm.weight", 1, c.hidden);
    output = c.tied_output ? token_embd : Load("output.weight", c.vocab, c.hidden);
    layers.resize(static_cast<size_t>(c.layers));
    for (int64_t l = 0; l < c.layers; ++l) {
      const std::string p = fmt::format("blk.{}.", l);
      Layer& L = layers[static_cast<size_t>(l)];
      L.attn_norm = Load(p + "attn_norm.weight", 1, c.hidden);
      L.wq = Load(p + "attn_q.weight", c.hidden, c.hidden);
      L.wk = Load(p + "attn_k.weight", kv, c.hidden);
      L.wv = Load(p + "attn_v.weight", kv, c.hidden);
      L.wo = Load(p + "attn_output.weight", c.hidden, c.hidden);
      L.ffn_norm = Load(p + "ffn_norm.weight", 1, c.hidden);
      L.wg = Load(p + "ffn_gate.weight", c.ffn, c.hidden);
      L.wu = Load(p + "ffn_up.weight", c.ffn, c.hidden);
      L.wd = Load(p + "ffn_down.weight", c.hidden, c.ffn);
    }
    if (options.path == WeightPath::Exact) {
      for (Layer& L : layers) {
        for (Weight* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.wg, &L.wu, &L.wd}) MakeExact(*w);
      }
      MakeExact(output);
      exact_embd.Zeros(static_cast<size_t>(c.vocab * c.hidden));
      backend.BlockQuant().Dequantize(exact_embd.data(), token_embd.data, c.vocab * c.hidden, token_embd.format,
                                      DType::Float32);
    }
  }

  const float* NormWeight(const Weight& w) const {
    return w.exact.empty() ? reinterpret_cast<const float*>(w.data) : w.exact.data();
  }

  // y[n, out] = x[n, in] W^T
  void Project(float* y, const float* in, int64_t n, const Weight& w) {
    if (!w.exact.empty() && options.path == WeightPath::Exact) {
      backend.Matmul().Matmul(y, in, w.exact.data(), n, w.in, w.out, DType::Float32);
    } else {
      backend.BlockQuant().MatmulT(y, in, w.data, n, w.out, w.in, w.format, DType::Float32);
    }
  }

  void Norm(float* y, const float* in, int64_t n, const Weight& w) {
    backend.MathExt().RMSNormEps(in, NormWeight(w), y, n, config.hidden, config.rms_eps, DType::Float32);
  }

  void Embed(std::span<const int32_t> tokens) {
    const int64_t d = config.hidden;
    const int64_t row_bytes = BlockBytes(token_embd.format, d, "llm.Llama", "token_embd row");
    for (size_t t = 0; t < tokens.size(); ++t) {
      float* dst = x.data() + t * static_cast<size_t>(d);
      if (!exact_embd.empty()) {
        std::memcpy(dst, exact_embd.data() + static_cast<size_t>(tokens[t]) * d, sizeof(float) * d);
      } else {
        backend.BlockQuant().Dequantize(dst, token_embd.data + tokens[t] * row_bytes, d, token_embd.format,
                                        DType::Float32);
      }
    }
  }

  // One batch of n <= options.batch tokens at the current position.
  void Batch(std::span<const int32_t> tokens, float* logits, bool all_logits) {
    const LlamaConfig& c = config;
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t d = c.hidden, kv = c.kv_heads * c.head_dim;
    Embed(tokens);
    MultiHeadAttentionConfig mha;
    mha.NumHeads = c.heads;
    mha.HeadDim = c.head_dim;
    mha.KVHeadCount = c.kv_heads;
    mha.Causal = true;
    RoPEConfig rope;
    rope.BaseFreq = c.rope_theta;
    rope.StartPosition = position;
    for (int64_t l = 0; l < c.layers; ++l) {
      const Layer& L = layers[static_cast<size_t>(l)];
      float* kc = k_cache.data() + static_cast<size_t>(l * context * kv);
      float* vc = v_cache.data() + static_cast<size_t>(l * context * kv);
      Norm(h.data(), x.data(), n, L.attn_norm);
      Project(q.data(), h.data(), n, L.wq);
      Project(kc + position * kv, h.data(), n, L.wk);
      Project(vc + position * kv, h.data(), n, L.wv);
      backend.RoPE().RoPE(rope, q.data(), q.data(), n, c.heads, c.head_dim, DType::Float32);
      backend.RoPE().RoPE(rope, kc + position * kv, kc + position * kv, n, c.kv_heads, c.head_dim, DType::Float32);
      backend.Attention().MultiHeadAttention(mha, q.data(), kc, vc, attn.data(), n, position + n, DType::Float32);
      Project(proj.data(), attn.data(), n, L.wo);
      backend.Elementwise().Add(x.data(), x.data(), proj.data(), n * d, DType::Float32);
      Norm(h.data(), x.data(), n, L.ffn_norm);
      Project(gate.data(), h.data(), n, L.wg);
      Project(up.data(), h.data(), n, L.wu);
      backend.Activation().SwiGLUTensors(gate.data(), gate.data(), up.data(), n * c.ffn, DType::Float32);
      Project(proj.data(), gate.data(), n, L.wd);
      backend.Elementwise().Add(x.data(), x.data(), proj.data(), n * d, DType::Float32);
    }
    position += n;
    if (all_logits) {
      Norm(h.data(), x.data(), n, output_norm);
      Project(logits, h.data(), n, output);
    } else {
      Norm(last.data(), x.data() + (n - 1) * d, 1, output_norm);
      Project(logits, last.data(), 1, output);
    }
  }
};

LlamaModel::LlamaModel(gguf::File file, Backend& backend, LlamaOptions options)
    : impl_(std::make_unique<Impl>(std::move(file), backend, options)) {}

LlamaModel::~LlamaModel() = default;

const LlamaConfig& LlamaModel::config() const { return impl_->config; }
const LlamaOptions& LlamaModel::options() const { return impl_->options; }
const gguf::File& LlamaModel::file() const { return impl_->file; }
int64_t LlamaModel::context() const { return impl_->context; }
int64_t LlamaModel::position() const { return impl_->position; }
void LlamaModel::Reset() { impl_->position = 0; }

int64_t LlamaModel::allocated_bytes() const {
  const Impl& m = *impl_;
  size_t floats = m.k_cache.size() + m.v_cache.size() + m.x.size() + m.h.size() + m.q.size() + m.k.size() +
                  m.v.size() + m.attn.size() + m.proj.size() + m.gate.size() + m.up.size() + m.last.size() +
                  m.exact_embd.size() + m.output.exact.size() + m.output_norm.exact.size();
  for (const Layer& L : m.layers) {
    for (const Weight* w : {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.wg, &L.wu, &L.wd}) {
      floats += w->exact.size();
    }
  }
  return static_cast<int64_t>(floats * sizeof(float));
}

void LlamaModel::Forward(std::span<const int32_t> tokens, float* logits, bool all_logits) {
  Impl& m = *impl_;
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) ThrowInvalidArgument("llm.Llama.Forward", "tokens", "at least one token", "none");
  CheckPointer("llm.Llama.Forward", "logits", logits, 1);
  if (n > m.context - m.position) {
    ThrowInvalidArgument("llm.Llama.Forward", "tokens",
                         fmt::format("at most {} more tokens (context {}, {} in the cache)", m.context - m.position,
                                     m.context, m.position),
                         std::to_string(n));
  }
  for (const int32_t t : tokens) {
    if (t < 0 || t >= m.config.vocab) {
      ThrowInvalidArgument("llm.Llama.Forward", "tokens", fmt::format("ids in [0, {})", m.config.vocab),
                           std::to_string(t));
    }
  }
  const int64_t vocab = m.config.vocab;
  for (int64_t begin = 0; begin < n; begin += m.options.batch) {
    const int64_t count = std::min(m.options.batch, n - begin);
    if (all_logits) {
      m.Batch(tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(count)), logits + begin * vocab, true);
    } else {
      // Only the last token's logits are wanted; earlier batches write theirs to the same row.
      m.Batch(tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(count)), logits, false);
    }
  }
}

}  // namespace backplane::llm
