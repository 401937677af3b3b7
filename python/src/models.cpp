// Real models from Python: GGUF language models (streaming generation) and sentence encoders.
#include <fmt/format.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/encoder/bert.hpp"
#include "backplane/error.hpp"
#include "backplane/gguf.hpp"
#include "backplane/llm/llama.hpp"
#include "backplane/llm/sampler.hpp"
#include "backplane/llm/tokenizer.hpp"
#include "bindings.hpp"

namespace backplane::python {
namespace {

struct LanguageModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<llm::Tokenizer> tokenizer;
  std::unique_ptr<llm::LlamaModel> model;
};

// Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence.
size_t CompleteUtf8(const std::string& bytes) {
  size_t end = bytes.size();
  for (size_t back = 1; back <= 4 && back <= bytes.size(); ++back) {
    const auto c = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > back) end = bytes.size() - back;
    break;
  }
  return end;
}

// One generation: the prompt is evaluated on the first step, then a token per step.
struct Generation {
  LanguageModel* lm = nullptr;
  nb::object owner;  // keeps the model alive
  std::vector<int32_t> prompt;
  std::vector<int32_t> generated;
  std::unique_ptr<llm::Sampler> sampler;
  std::vector<float> logits;
  int64_t budget = 0;
  bool stop_at_eos = true;
  bool started = false, done = false;
  std::string pending;  // bytes of an unfinished UTF-8 character

  // The next piece of text; nullopt when generation ended.
  std::optional<std::string> Next() {
    while (!done) {
      llm::LlamaModel& model = *lm->model;
      const int64_t vocab = model.config().vocab;
      if (!started) {
        model.Reset();
        model.Forward(prompt, logits.data());
        started = true;
      }
      if (static_cast<int64_t>(generated.size()) >= budget) {
        done = true;
        break;
      }
      const int32_t token = sampler->Sample(logits.data(), vocab);
      generated.push_back(token);
      if (stop_at_eos && lm->tokenizer->IsEndOfGeneration(token)) {
        done = true;
        break;
      }
      if (static_cast<int64_t>(generated.size()) < budget) model.Forward(std::span<const int32_t>(&token, 1), logits.data());
      pending += lm->tokenizer->Decode(std::span<const int32_t>(&token, 1), /*skip_special=*/false);
      const size_t n = CompleteUtf8(pending);
      if (n == 0) continue;
      std::string piece = pending.substr(0, n);
      pending.erase(0, n);
      return piece;
    }
    if (!pending.empty()) {
      std::string rest;
      rest.swap(pending);
      return rest;
    }
    return std::nullopt;
  }
};

nb::str Utf8(const std::string& s) { return nb::steal<nb::str>(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace")); }

struct Encoder {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<encoder::SentenceEncoder> model;
};

}  // namespace

void BindModels(nb::module_& m) {
  nb::class_<Generation>(m, "Generation", "An iterator over generated text pieces.")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", [](Generation& g) {
        std::optional<std::string> piece;
        {
          nb::gil_scoped_release release;
          piece = g.Next();
        }
        if (!piece) throw nb::stop_iteration();
        return Utf8(*piece);
      })
      .def_prop_ro("prompt_tokens", [](const Generation& g) { return g.prompt; })
      .def_prop_ro("tokens", [](const Generation& g) { return g.generated; }, "Token ids generated so far.");

  nb::class_<LanguageModel>(m, "LanguageModel", "A Llama-architecture GGUF language model.")
      .def("__init__",
           [](LanguageModel* self, const std::string& path, int64_t context, bool exact) {
             new (self) LanguageModel();
             nb::gil_scoped_release release;
             self->backend = cpu::CreateBackend();
             gguf::File file = gguf::File::Open(path);
             self->tokenizer = std::make_unique<llm::Tokenizer>(llm::Tokenizer::FromGguf(file));
             const int64_t train = llm::LlamaConfig::FromGguf(file).train_context;
             if (context > train) {
               ThrowInvalidArgument("backplane.LanguageModel", "context", fmt::format("<= the model's training context {}", train),
                                    std::to_string(context));
             }
             llm::LlamaOptions options;
             options.context = context;
             options.path = exact ? llm::WeightPath::Exact : llm::WeightPath::Quantized;
             self->model = std::make_unique<llm::LlamaModel>(std::move(file), *self->backend, options);
           },
           nb::arg("path"), nb::arg("context") = 2048, nb::arg("exact") = false)
      .def("tokenize", [](const LanguageModel& lm, const std::string& text, bool add_special, bool parse_special) {
        return lm.tokenizer->Encode(text, add_special, parse_special);
      }, nb::arg("text"), nb::arg("add_special") = true, nb::arg("parse_special") = false)
      .def("detokenize", [](const LanguageModel& lm, const std::vector<int32_t>& ids, bool skip_special) {
        return Utf8(lm.tokenizer->Decode(ids, skip_special));
      }, nb::arg("ids"), nb::arg("skip_special") = false)
      .def("apply_chat_template", [](const LanguageModel& lm, const std::vector<std::pair<std::string, std::string>>& messages) {
        std::vector<llm::ChatMessage> msgs;
        for (const auto& [role, content] : messages) msgs.push_back({role, content});
        return lm.tokenizer->ApplyChatTemplate(msgs, true);
      }, nb::arg("messages"), "Renders (role, content) pairs with the model's chat template.")
      .def("logits", [](LanguageModel& lm, const std::vector<int32_t>& ids) {
        Tensor out(DType::Float32, {static_cast<int64_t>(ids.size()), lm.model->config().vocab});
        {
          nb::gil_scoped_release release;
          lm.model->Reset();
          lm.model->Forward(ids, out.data_as<float>(), /*all_logits=*/true);
        }
        return out;
      }, nb::arg("ids"), "Logits f32 [len(ids), vocab] of every position (the cache is reset first).")
      .def("generate",
           [](nb::handle self, const std::vector<int32_t>& prompt, int64_t max_tokens, double temperature, int64_t top_k,
              double top_p, double repeat_penalty, uint64_t seed, bool stop_at_eos) {
             LanguageModel& lm = nb::cast<LanguageModel&>(self);
             if (prompt.empty()) ThrowInvalidArgument("backplane.LanguageModel.generate", "prompt", "at least one token", "none");
             if (static_cast<int64_t>(prompt.size()) >= lm.model->context()) {
               ThrowInvalidArgument("backplane.LanguageModel.generate", "prompt", fmt::format("fewer than context {} tokens", lm.model->context()),
                                    fmt::format("{} tokens", prompt.size()));
             }
             CheckNonNegative("backplane.LanguageModel.generate", "max_tokens", max_tokens);
             llm::SamplerOptions so;
             so.temperature = static_cast<float>(temperature);
             so.top_k = top_k;
             so.top_p = static_cast<float>(top_p);
             so.repeat_penalty = static_cast<float>(repeat_penalty);
             so.seed = seed;
             auto g = std::make_unique<Generation>();
             g->lm = &lm;
             g->owner = nb::borrow(self);
             g->prompt = prompt;
             g->sampler = std::make_unique<llm::Sampler>(*lm.backend, so);
             g->sampler->Remember(prompt);
             g->logits.resize(static_cast<size_t>(lm.model->config().vocab));
             g->budget = std::min<int64_t>(max_tokens, lm.model->context() - static_cast<int64_t>(prompt.size()));
             g->stop_at_eos = stop_at_eos;
             return g.release();
           },
           nb::arg("prompt"), nb::arg("max_tokens") = 64, nb::arg("temperature") = 0.0, nb::arg("top_k") = 0,
           nb::arg("top_p") = 1.0, nb::arg("repeat_penalty") = 1.0, nb::arg("seed") = 0, nb::arg("stop_at_eos") = true,
           nb::rv_policy::take_ownership, "Streams text pieces for prompt token ids (see backplane.models).")
      .def_prop_ro("config", [](const LanguageModel& lm) {
        const llm::LlamaConfig& c = lm.model->config();
        nb::dict d;
        d["architecture"] = c.architecture;
        d["vocab"] = c.vocab;
        d["hidden"] = c.hidden;
        d["layers"] = c.layers;
        d["heads"] = c.heads;
        d["kv_heads"] = c.kv_heads;
        d["ffn"] = c.ffn;
        d["train_context"] = c.train_context;
        d["context"] = lm.model->context();
        return d;
      })
      .def_prop_ro("eos", [](const LanguageModel& lm) { return lm.tokenizer->eos(); })
      .def_prop_ro("bos", [](const LanguageModel& lm) { return lm.tokenizer->bos(); });

  nb::class_<Encoder>(m, "SentenceEncoder", "A BERT sentence encoder (sentence-transformers folder).")
      .def("__init__",
           [](Encoder* self, const std::string& dir) {
             new (self) Encoder();
             nb::gil_scoped_release release;
             self->backend = cpu::CreateBackend();
             self->model = std::make_unique<encoder::SentenceEncoder>(dir, *self->backend);
           },
           nb::arg("model_dir"))
      .def("embed", [](Encoder& e, const std::vector<std::string>& texts) {
        nb::gil_scoped_release release;
        return e.model->Embed(texts);
      }, nb::arg("texts"), "Embeddings f32 [len(texts), hidden].")
      .def_prop_ro("config", [](const Encoder& e) {
        const encoder::BertConfig& c = e.model->config();
        nb::dict d;
        d["vocab"] = c.vocab;
        d["hidden"] = c.hidden;
        d["layers"] = c.layers;
        d["heads"] = c.heads;
        d["max_seq_length"] = c.max_seq_length;
        d["normalize"] = c.normalize;
        return d;
      });
}

}  // namespace backplane::python
