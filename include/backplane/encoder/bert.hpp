// BERT sentence encoders (sentence-transformers layout: a Hugging Face BertModel checkpoint,
// pooling and an optional L2 normalisation) built into a Backplane graph from the model's own
// config files, and run with the graph executor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/tensor.hpp"

namespace backplane::encoder {

enum class Pooling { Mean, Cls, Max };

struct BertConfig {
  int64_t vocab = 0;           // vocab_size
  int64_t hidden = 0;          // hidden_size
  int64_t layers = 0;          // num_hidden_layers
  int64_t heads = 0;           // num_attention_heads
  int64_t intermediate = 0;    // intermediate_size
  int64_t max_positions = 0;   // max_position_embeddings
  int64_t type_vocab = 0;      // type_vocab_size
  double layer_norm_eps = 1e-12;
  std::string activation = "gelu";  // hidden_act: gelu, gelu_new, relu
  Pooling pooling = Pooling::Mean;  // 1_Pooling/config.json (default mean)
  bool normalize = false;           // modules.json lists sentence_transformers.models.Normalize
  int64_t max_seq_length = 0;       // sentence_bert_config.json (default max_positions)
  bool lowercase = true;            // tokenizer_config.json do_lower_case

  // Reads config.json and the sentence-transformers files beside it; errors name the file and key.
  static BertConfig FromDirectory(const std::string& model_dir);
};

// The encoder graph. Inputs: input_ids, token_type_ids i32 [batch, seq], position_ids i32 [seq],
// attention_mask f32 [batch, seq] (1 for a token, 0 for padding). Output "embedding" f32
// [batch, hidden]. Parameters read `weights_file` (a .safetensors path relative to `base_dir`);
// `prefix` is prepended to the Hugging Face tensor names ("" or "bert.").
ir::Graph BuildBertGraph(const BertConfig& config, const std::string& base_dir,
                         const std::string& weights_file, const std::string& prefix = "");

class SentenceEncoder {
 public:
  // model_dir holds config.json, vocab.txt and model.safetensors (plus, optionally, the
  // sentence-transformers files). The backend must outlive the encoder.
  SentenceEncoder(const std::string& model_dir, Backend& backend);
  ~SentenceEncoder();
  SentenceEncoder(const SentenceEncoder&) = delete;
  SentenceEncoder& operator=(const SentenceEncoder&) = delete;

  const BertConfig& config() const;
  const ir::Graph& graph() const;
  // Embeddings f32 [texts.size(), hidden]; texts are truncated to max_seq_length tokens and the
  // batch is padded to its longest text.
  Tensor Embed(const std::vector<std::string>& texts);
  // The same on token ids already padded: ids, type ids i32 and mask f32, all [batch, seq].
  Tensor EmbedTokens(const Tensor& ids, const Tensor& type_ids, const Tensor& mask);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace backplane::encoder
