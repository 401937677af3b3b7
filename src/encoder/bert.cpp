#include "backplane/encoder/bert.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backplane/encoder/wordpiece.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/runtime/executor.hpp"

namespace backplane::encoder {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void Fail(const std::string& file, const std::string& detail) {
  throw Error(ErrorCode::InvalidArgument, "bert", fmt::format("{}: {}", file, detail));
}

json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) Fail(path.string(), "cannot open");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    Fail(path.string(), fmt::format("not valid JSON ({})", e.what()));
  }
}

int64_t PositiveInt(const json& j, const std::string& file, const char* key) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0) {
    Fail(file, fmt::format("'{}' must be a positive integer", key));
  }
  return j[key].get<int64_t>();
}

}  // namespace

BertConfig BertConfig::FromDirectory(const std::string& model_dir) {
  const fs::path dir(model_dir);
  const std::string file = (dir / "config.json").string();
  const json j = ReadJson(file);
  BertConfig c;
  if (j.contains("model_type") && j["model_type"] != "bert") {
    Fail(file, fmt::format("model_type must be \"bert\", got {}", j["model_type"].dump()));
  }
  c.vocab = PositiveInt(j, file, "vocab_size");
  c.hidden = PositiveInt(j, file, "hidden_size");
  c.layers = PositiveInt(j, file, "num_hidden_layers");
  c.heads = PositiveInt(j, file, "num_attention_heads");
  c.intermediate = PositiveInt(j, file, "intermediate_size");
  c.max_positions = PositiveInt(j, file, "max_position_embeddings");
  c.type_vocab = j.contains("type_vocab_size") ? PositiveInt(j, file, "type_vocab_size") : 2;
  if (c.hidden % c.heads != 0) {
    Fail(file, fmt::format("hidden_size {} is not a multiple of num_attention_heads {}", c.hidden, c.heads));
  }
  if (j.contains("layer_norm_eps")) {
    if (!j["layer_norm_eps"].is_number() || !(j["layer_norm_eps"].get<double>() >= 0)) {
      Fail(file, "'layer_norm_eps' must be a number >= 0");
    }
    c.layer_norm_eps = j["layer_norm_eps"].get<double>();
  }
  if (j.contains("hidden_act")) {
    c.activation = j["hidden_act"].is_string() ? j["hidden_act"].get<std::string>() : "";
    if (c.activation != "gelu" && c.activation != "gelu_new" && c.activation != "relu") {
      Fail(file, fmt::format("hidden_act must be \"gelu\", \"gelu_new\" or \"relu\", got {}",
                             j["hidden_act"].dump()));
    }
  }
  if (j.contains("position_embedding_type") && j["position_embedding_type"] != "absolute") {
    Fail(file, fmt::format("position_embedding_type {} is not supported (only \"absolute\")",
                           j["position_embedding_type"].dump()));
  }
  c.max_seq_length = c.max_positions;
  if (const fs::path st = dir / "sentence_bert_config.json"; fs::exists(st)) {
    const json s = ReadJson(st);
    if (s.contains("max_seq_length")) {
      c.max_seq_length = std::min(PositiveInt(s, st.string(), "max_seq_length"), c.max_positions);
    }
  }
  if (const fs::path pool = dir / "1_Pooling" / "config.json"; fs::exists(pool)) {
    const json p = ReadJson(pool);
    auto on = [&](const char* key) { return p.contains(key) && p[key].is_boolean() && p[key].get<bool>(); };
    const int modes = on("pooling_mode_mean_tokens") + on("pooling_mode_cls_token") + on("pooling_mode_max_tokens") +
                      on("pooling_mode_mean_sqrt_len_tokens");
    if (modes != 1 || on("pooling_mode_mean_sqrt_len_tokens")) {
      Fail(pool.string(), "exactly one of pooling_mode_mean_tokens, pooling_mode_cls_token, "
                          "pooling_mode_max_tokens must be true");
    }
    c.pooling = on("pooling_mode_cls_token") ? Pooling::Cls : on("pooling_mode_max_tokens") ? Pooling::Max : Pooling::Mean;
  }
  if (const fs::path modules = dir / "modules.json"; fs::exists(modules)) {
    const json m = ReadJson(modules);
    if (!m.is_array()) Fail(modules.string(), "must be a list of modules");
    for (const json& module : m) {
      if (module.contains("type") && module["type"] == "sentence_transformers.models.Normalize") c.normalize = true;
    }
  }
  if (const fs::path tc = dir / "tokenizer_config.json"; fs::exists(tc)) {
    const json t = ReadJson(tc);
    if (t.contains("do_lower_case") && t["do_lower_case"].is_boolean()) c.lowercase = t["do_lower_case"].get<bool>();
  }
  return c;
}

namespace {

// Appends nodes and parameters to a graph under construction.
class GraphBuilder {
 public:
  GraphBuilder(ir::Graph& g, std::string weights_file, std::string prefix)
      : g_(g), file_(std::move(weights_file)), prefix_(std::move(prefix)) {}

  std::string Param(const std::string& hf_name, Shape shape) {
    ir::ParamSpec p;
    p.name = hf_name;
    p.dtype = DType::Float32;
    p.shape = std::move(shape);
    p.init.kind = "file";
    p.init.file = file_;
    p.init.tensor = prefix_ + hf_name;
    p.trainable = false;
    g_.params.push_back(std::move(p));
    return hf_name;
  }

  std::string Node(const std::string& op, std::vector<std::string> inputs, const std::string& out,
                   ir::AttrMap attrs = {}) {
    ir::Node n;
    n.name = out;
    n.op = op;
    n.inputs = std::move(inputs);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g_.nodes.push_back(std::move(n));
    return out;
  }

  std::string Scalar(const std::string& name, double value) {
    return Node("Input", {}, name,
                {{"values", std::vector<double>{value}}, {"shape", std::vector<int64_t>{}}, {"dtype", std::string("f32")}});
  }

 private:
  ir::Graph& g_;
  std::string file_;
  std::string prefix_;
};

}  // namespace

ir::Graph BuildBertGraph(const BertConfig& c, const std::string& base_dir, const std::string& weights_file,
                         const std::string& prefix) {
  ir::Graph g;
  g.name = "bert";
  g.base_dir = base_dir;
  const ir::Dim batch{0, "batch"}, seq{0, "seq"};
  g.inputs = {{"input_ids", DType::Int32, {batch, seq}},
              {"token_type_ids", DType::Int32, {batch, seq}},
              {"position_ids", DType::Int32, {seq}},
              {"attention_mask", DType::Float32, {batch, seq}}};
  GraphBuilder b(g, weights_file, prefix);
  const int64_t h = c.hidden, head_dim = c.hidden / c.heads;
  const ir::AttrMap ln_eps{{"eps", c.layer_norm_eps}};
  auto layer_norm = [&](const std::string& x, const std::string& name, const std::string& out) {
    return b.Node("math.layernorm", {x, b.Param(name + ".weight", {h}), b.Param(name + ".bias", {h})}, out, ln_eps);
  };
  auto linear = [&](const std::string& x, const std::string& name, int64_t in, int64_t out_features,
                    const std::string& out) {
    return b.Node("projection.linear", {x, b.Param(name + ".weight", {out_features, in}), b.Param(name + ".bias", {out_features})},
                  out);
  };

  // Embeddings: word + token type + position, then LayerNorm.
  const std::string words = b.Node("embedding.token", {"input_ids", b.Param("embeddings.word_embeddings.weight", {c.vocab, h})}, "emb.words");
  const std::string types = b.Node("embedding.token", {"token_type_ids", b.Param("embeddings.token_type_embeddings.weight", {c.type_vocab, h})}, "emb.types");
  const std::string positions = b.Node("embedding.token", {"position_ids", b.Param("embeddings.position_embeddings.weight", {c.max_positions, h})}, "emb.positions");
  const std::string sum = b.Node("math.add", {b.Node("math.add", {words, types}, "emb.words_types"), positions}, "emb.sum");
  std::string x = layer_norm(sum, "embeddings.LayerNorm", "emb.out");

  // Additive key mask [batch, 1, 1, seq]: 0 for tokens, the lowest f32 for padding (as
  // transformers does).
  const std::string one = b.Scalar("const.one", 1.0);
  const std::string lowest = b.Scalar("const.lowest", static_cast<double>(std::numeric_limits<float>::lowest()));
  const std::string key_mask = b.Node(
      "shape.reshape",
      {b.Node("math.mul", {b.Node("math.sub", {one, "attention_mask"}, "mask.inverted"), lowest}, "mask.additive")},
      "mask.keys", {{"shape", std::vector<int64_t>{0, 1, 1, -1}}});
  const std::string scale = b.Scalar("const.scale", 1.0 / std::sqrt(static_cast<double>(head_dim)));
  const ir::AttrMap heads{{"num_heads", c.heads}};

  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = fmt::format("encoder.layer.{}.", l);
    const std::string n = fmt::format("l{}.", l);
    auto split_heads = [&](const std::string& which) {
      return b.Node("shape.view_as_heads", {linear(x, p + "attention.self." + which, h, h, n + which)}, n + which + ".heads", heads);
    };
    const std::string q = split_heads("query"), k = split_heads("key"), v = split_heads("value");
    const std::string kt = b.Node("shape.transpose", {k}, n + "key.t", {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
    const std::string scores = b.Node("math.mul", {b.Node("math.matmul", {q, kt}, n + "scores.raw"), scale}, n + "scores.scaled");
    const std::string probs = b.Node("math.softmax", {b.Node("math.add", {scores, key_mask}, n + "scores")}, n + "probs",
                                     {{"axis", int64_t{-1}}});
    const std::string context = b.Node("shape.merge_heads", {b.Node("math.matmul", {probs, v}, n + "context.heads")}, n + "context");
    const std::string attn = linear(context, p + "attention.output.dense", h, h, n + "attn.out");
    const std::string h1 = layer_norm(b.Node("math.add", {attn, x}, n + "attn.residual"), p + "attention.output.LayerNorm", n + "attn.norm");
    const std::string up = linear(h1, p + "intermediate.dense", h, c.intermediate, n + "ffn.up");
    const std::string act_op = c.activation == "gelu" ? "activation.gelu" : c.activation == "gelu_new" ? "activation.gelu_tanh" : "activation.relu";
    const std::string down = linear(b.Node(act_op, {up}, n + "ffn.act"), p + "output.dense", c.intermediate, h, n + "ffn.down");
    x = layer_norm(b.Node("math.add", {down, h1}, n + "ffn.residual"), p + "output.LayerNorm", n + "out");
  }

  // Pooling over the tokens the mask keeps.
  std::string pooled;
  if (c.pooling == Pooling::Cls) {
    pooled = b.Node("shape.reshape",
                    {b.Node("shape.slice", {x}, "pool.first",
                            {{"starts", std::vector<int64_t>{0}}, {"ends", std::vector<int64_t>{1}}, {"axes", std::vector<int64_t>{1}}})},
                    "pool.out", {{"shape", std::vector<int64_t>{0, -1}}});
  } else {
    const std::string mask3 = b.Node("shape.reshape", {"attention_mask"}, "pool.mask", {{"shape", std::vector<int64_t>{0, -1, 1}}});
    if (c.pooling == Pooling::Mean) {
      const std::string summed = b.Node("reduction.sum", {b.Node("math.mul", {x, mask3}, "pool.masked")}, "pool.sum",
                                        {{"axis", std::vector<int64_t>{1}}});
      // sentence-transformers clamps the token count at 1e-9.
      const std::string count = b.Node(
          "shape.reshape",
          {b.Node("math.maximum", {b.Node("reduction.sum", {"attention_mask"}, "pool.count.raw", {{"axis", std::vector<int64_t>{1}}}),
                                   b.Scalar("const.min_count", 1e-9)},
                  "pool.count.clamped")},
          "pool.count", {{"shape", std::vector<int64_t>{-1, 1}}});
      pooled = b.Node("math.div", {summed, count}, "pool.out");
    } else {
      // Padding positions get the lowest f32 before the max (sentence-transformers uses -1e9).
      const std::string fill = b.Node("math.mul", {b.Node("math.sub", {one, mask3}, "pool.inverted"), b.Scalar("const.neg_big", -1e9)}, "pool.fill");
      pooled = b.Node("reduction.max", {b.Node("math.add", {x, fill}, "pool.filled")}, "pool.out", {{"axis", std::vector<int64_t>{1}}});
    }
  }
  std::string out = pooled;
  if (c.normalize) {
    // torch.nn.functional.normalize: x / max(||x||_2, 1e-12).
    const std::string norm = b.Node(
        "shape.reshape",
        {b.Node("math.maximum",
                {b.Node("math.sqrt", {b.Node("reduction.sum", {b.Node("math.mul", {pooled, pooled}, "norm.squares")}, "norm.sum",
                                             {{"axis", std::vector<int64_t>{1}}})},
                        "norm.length"),
                 b.Scalar("const.min_norm", 1e-12)},
                "norm.clamped")},
        "norm.divisor", {{"shape", std::vector<int64_t>{-1, 1}}});
    out = b.Node("math.div", {pooled, norm}, "normalized");
  }
  b.Node("Input", {out}, "embedding");
  g.outputs = {"embedding"};
  return g;
}

struct SentenceEncoder::Impl {
  BertConfig config;
  WordPieceTokenizer tokenizer;
  runtime::Executor executor;
  Impl(BertConfig c, WordPieceTokenizer t, ir::Graph g, Backend& backend)
      : config(std::move(c)), tokenizer(std::move(t)), executor(std::move(g), backend) {}
};

namespace {

// "" or "bert." (checkpoints saved from BertFor* models), by the word embedding's name.
std::string WeightPrefix(const std::string& weights) {
  std::ifstream in(weights, std::ios::binary);
  uint64_t header_len = 0;
  if (!in.read(reinterpret_cast<char*>(&header_len), 8)) Fail(weights, "truncated .safetensors file (no header length)");
  const uint64_t file_len = fs::file_size(weights);
  if (header_len > file_len - 8 || header_len > (uint64_t{1} << 27)) {
    Fail(weights, fmt::format("header length {} does not fit the file ({} bytes)", header_len, file_len));
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len))) Fail(weights, "truncated .safetensors header");
  json names;
  try {
    names = json::parse(header);
  } catch (const json::exception& e) {
    Fail(weights, fmt::format("header is not valid JSON ({})", e.what()));
  }
  if (!names.is_object()) Fail(weights, "header is not a JSON object");
  if (names.contains("embeddings.word_embeddings.weight")) return "";
  if (names.contains("bert.embeddings.word_embeddings.weight")) return "bert.";
  Fail(weights, "no tensor 'embeddings.word_embeddings.weight' (or 'bert.' prefixed): not a BERT checkpoint");
}

}  // namespace

SentenceEncoder::SentenceEncoder(const std::string& model_dir, Backend& backend) {
  BertConfig config = BertConfig::FromDirectory(model_dir);
  const std::string weights = (fs::path(model_dir) / "model.safetensors").string();
  if (!fs::exists(weights)) Fail(weights, "missing (the encoder reads F32 model.safetensors)");
  WordPieceOptions options;
  options.lowercase = config.lowercase;
  options.strip_accents = config.lowercase;
  WordPieceTokenizer tokenizer = WordPieceTokenizer::FromVocabFile((fs::path(model_dir) / "vocab.txt").string(), options);
  if (static_cast<int64_t>(tokenizer.vocab_size()) != config.vocab) {
    Fail((fs::path(model_dir) / "vocab.txt").string(),
         fmt::format("{} tokens, but config.json says vocab_size {}", tokenizer.vocab_size(), config.vocab));
  }
  ir::Graph graph = BuildBertGraph(config, model_dir, "model.safetensors", WeightPrefix(weights));
  impl_ = std::make_unique<Impl>(std::move(config), std::move(tokenizer), std::move(graph), backend);
}

SentenceEncoder::~SentenceEncoder() = default;

const BertConfig& SentenceEncoder::config() const { return impl_->config; }
const ir::Graph& SentenceEncoder::graph() const { return impl_->executor.graph(); }

Tensor SentenceEncoder::Embed(const std::vector<std::string>& texts) {
  if (texts.empty()) return Tensor(DType::Float32, {0, impl_->config.hidden});
  const std::vector<Encoding> batch = impl_->tokenizer.EncodeBatch(texts, static_cast<int>(impl_->config.max_seq_length));
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t s = static_cast<int64_t>(batch[0].ids.size());
  Tensor ids(DType::Int32, {n, s}), type_ids(DType::Int32, {n, s}), mask(DType::Float32, {n, s});
  for (int64_t i = 0; i < n; ++i) {
    const Encoding& e = batch[static_cast<size_t>(i)];
    for (int64_t t = 0; t < s; ++t) {
      const auto k = static_cast<size_t>(t);
      ids.data_as<int32_t>()[i * s + t] = e.ids[k];
      type_ids.data_as<int32_t>()[i * s + t] = e.type_ids[k];
      mask.data_as<float>()[i * s + t] = static_cast<float>(e.attention_mask[k]);
    }
  }
  return EmbedTokens(ids, type_ids, mask);
}

Tensor SentenceEncoder::EmbedTokens(const Tensor& ids, const Tensor& type_ids, const Tensor& mask) {
  if (ids.rank() != 2 || ids.dim(1) > impl_->config.max_positions) {
    throw Error(ErrorCode::ShapeMismatch, "bert",
                fmt::format("input_ids must be [batch, seq] with seq <= {}, got {}", impl_->config.max_positions,
                            ShapeToString(ids.shape())));
  }
  const int64_t s = ids.dim(1);
  Tensor positions(DType::Int32, {s});
  for (int64_t t = 0; t < s; ++t) positions.data_as<int32_t>()[t] = static_cast<int32_t>(t);
  auto out = impl_->executor.Run(
      {{"input_ids", ids}, {"token_type_ids", type_ids}, {"position_ids", positions}, {"attention_mask", mask}});
  return out.at("embedding");
}

}  // namespace backplane::encoder
