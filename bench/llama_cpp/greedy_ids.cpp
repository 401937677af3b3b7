// Greedy decoding with llama.cpp that prints the token ids (llama-simple prints only text), so
// that Backplane's generation can be compared token by token. Built by build.sh as
// llama-greedy-ids against the static libraries of the llama.cpp build.
//
//   llama-greedy-ids MODEL N_PREDICT PROMPT
//
// The prompt is tokenized as llama-simple does (add_special = true: a BOS only where the GGUF's
// tokenizer.ggml.add_bos_token asks for one). Prints prompt_ids, generated_ids and the text;
// stops early at an end-of-generation token.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

namespace {

void SetTokens(llama_batch_ext* batch, const llama_token* tokens, int32_t n, llama_pos pos0) {
  llama_batch_ext_clear(batch);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t idx = llama_batch_ext_add_token(batch, 0, tokens[i]);
    const llama_pos pos = pos0 + i;
    llama_batch_ext_set_pos(batch, idx, &pos);
  }
  llama_batch_ext_set_output_logits(batch, n - 1, true);
}

std::string Piece(const llama_vocab* vocab, llama_token id) {
  char buf[256];
  const int n = llama_token_to_piece(vocab, id, buf, sizeof buf, 0, true);
  if (n < 0) {
    std::fprintf(stderr, "llama-greedy-ids: token %d has no piece\n", id);
    std::exit(1);
  }
  return std::string(buf, static_cast<size_t>(n));
}

void PrintIds(const char* name, const std::vector<llama_token>& ids) {
  std::printf("%s:", name);
  for (llama_token id : ids) std::printf(" %d", id);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL N_PREDICT PROMPT\n", argv[0]);
    return 2;
  }
  const std::string modelPath = argv[1];
  char* end = nullptr;
  errno = 0;
  const long nPredict = std::strtol(argv[2], &end, 10);
  if (errno != 0 || end == argv[2] || *end != '\0' || nPredict < 1 || nPredict > 100000) {
    std::fprintf(stderr, "llama-greedy-ids: N_PREDICT must be an integer in [1, 100000], got '%s'\n",
                 argv[2]);
    return 2;
  }
  const std::string prompt = argv[3];

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(modelPath.c_str(), mp);
  if (model == nullptr) {
    std::fprintf(stderr, "llama-greedy-ids: cannot load model '%s'\n", modelPath.c_str());
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int nPrompt = -llama_tokenize(vocab, prompt.c_str(), static_cast<int32_t>(prompt.size()),
                                      nullptr, 0, true, true);
  std::vector<llama_token> promptIds(static_cast<size_t>(nPrompt));
  if (nPrompt <= 0 || llama_tokenize(vocab, prompt.c_str(), static_cast<int32_t>(prompt.size()),
                                     promptIds.data(), nPrompt, true, true) < 0) {
    std::fprintf(stderr, "llama-greedy-ids: cannot tokenize the prompt\n");
    return 1;
  }

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(nPrompt + nPredict);
  cp.n_batch = static_cast<uint32_t>(nPrompt);
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) {
    std::fprintf(stderr, "llama-greedy-ids: cannot create the context\n");
    return 1;
  }
  llama_sampler* sampler = llama_sampler_chain_init(llama_sampler_chain_default_params());
  llama_sampler_chain_add(sampler, llama_sampler_init_greedy());

  llama_batch_ext* batch = llama_batch_ext_init(ctx);
  SetTokens(batch, promptIds.data(), nPrompt, 0);
  int pos = 0, nTokens = nPrompt;
  std::vector<llama_token> generated;
  std::string text;
  while (static_cast<long>(generated.size()) < nPredict) {
    if (llama_process(ctx, LLAMA_PROCESS_TYPE_DECODE, batch) != 0) {
      std::fprintf(stderr, "llama-greedy-ids: decode failed at position %d\n", pos);
      return 1;
    }
    pos += nTokens;
    llama_token id = llama_sampler_sample(sampler, ctx, -1);
    if (llama_vocab_is_eog(vocab, id)) break;
    generated.push_back(id);
    text += Piece(vocab, id);
    SetTokens(batch, &id, 1, pos);
    nTokens = 1;
  }

  std::string promptText;
  for (llama_token id : promptIds) promptText += Piece(vocab, id);
  PrintIds("prompt_ids", promptIds);
  PrintIds("generated_ids", generated);
  std::printf("prompt_text: %s\n", promptText.c_str());
  std::printf("generated_text: %s\n", text.c_str());

  llama_batch_ext_free(batch);
  llama_sampler_free(sampler);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
