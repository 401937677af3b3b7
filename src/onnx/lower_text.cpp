// TfIdfVectorizer (opset 9) of an import-time constant input: n-gram counts over an integer pool,
// computed on the host into a constant. A runtime input is refused (the catalog has no n-gram op);
// string pools are refused (Backplane has no string tensors).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

void TfIdfVectorizer(Context& ctx) {
  ctx.AllowAttrs({"max_gram_length", "max_skip_count", "min_gram_length", "mode", "ngram_counts", "ngram_indexes",
                  "pool_int64s", "pool_strings", "weights"});
  if (ctx.HasAttr("pool_strings")) ctx.Unsupported("attribute 'pool_strings' (string tensors are not supported)");
  const int64_t min_n = ctx.AttrInt("min_gram_length", 0), max_n = ctx.AttrInt("max_gram_length", 0);
  const int64_t max_skip = ctx.AttrInt("max_skip_count", 0);
  const std::string mode = ctx.AttrString("mode", "");
  if (min_n < 1 || max_n < min_n) {
    ctx.Invalid(fmt::format("attributes 'min_gram_length' {} and 'max_gram_length' {} must satisfy 1 <= min <= max", min_n, max_n));
  }
  if (max_skip < 0) ctx.Invalid(fmt::format("attribute 'max_skip_count' must be >= 0, got {}", max_skip));
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") ctx.Invalid(fmt::format("attribute 'mode' must be TF, IDF or TFIDF, got '{}'", mode));
  const std::vector<int64_t> counts = ctx.AttrInts("ngram_counts").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indexes = ctx.AttrInts("ngram_indexes").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> pool = ctx.AttrInts("pool_int64s").value_or(std::vector<int64_t>{});
  const std::vector<double> weights = ctx.AttrFloats("weights").value_or(std::vector<double>{});
  // Pool entry k (in order) is an n-gram whose n is its group in ngram_counts (start offsets).
  std::map<std::vector<int64_t>, int64_t> slot;  // n-gram -> output index
  size_t gram = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    const int64_t n = static_cast<int64_t>(g) + 1;
    const int64_t begin = counts[g];
    const int64_t end = g + 1 < counts.size() ? counts[g + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % n != 0) {
      ctx.Invalid(fmt::format("attribute 'ngram_counts'[{}] = {} does not split 'pool_int64s' ({} values) into {}-grams", g,
                              begin, pool.size(), n));
    }
    for (int64_t p = begin; p < end; p += n, ++gram) {
      if (gram >= indexes.size()) ctx.Invalid(fmt::format("attribute 'ngram_indexes' has {} entries, the pool more n-grams", indexes.size()));
      slot[std::vector<int64_t>(pool.begin() + p, pool.begin() + p + n)] = indexes[gram];
    }
  }
  if (gram != indexes.size()) ctx.Invalid(fmt::format("attribute 'ngram_indexes' has {} entries for {} n-grams", indexes.size(), gram));
  if (!weights.empty() && weights.size() != indexes.size()) {
    ctx.Invalid(fmt::format("attribute 'weights' has {} entries for {} n-grams", weights.size(), indexes.size()));
  }
  int64_t width = 0;
  for (int64_t i : indexes) {
    if (i < 0) ctx.Invalid(fmt::format("attribute 'ngram_indexes' holds {} (must be >= 0)", i));
    width = std::max(width, i + 1);
  }
  std::vector<double> weight_of(static_cast<size_t>(width), 1.0);
  for (size_t k = 0; k < weights.size(); ++k) weight_of[static_cast<size_t>(indexes[k])] = weights[k];

  const Value& x = ctx.In(0);
  if (!x.constant) ctx.Unsupported("a runtime input (the catalog has no n-gram counting op); only a constant folds");
  if (!IsInteger(x.dtype)) ctx.Unsupported(fmt::format("input of dtype {} (int32 and int64 are supported)", DTypeName(x.dtype)));
  if (x.rank() != 1 && x.rank() != 2) ctx.Invalid(fmt::format("input must have rank 1 or 2, got {}", x.rank()));
  const std::vector<int64_t> values = TensorInts(*x.constant);
  const Shape shape = x.constant->shape();
  const int64_t rows = x.rank() == 2 ? shape[0] : 1, cols = shape.back();
  Tensor out(DType::Float32, x.rank() == 2 ? Shape{rows, width} : Shape{width});
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> tf(static_cast<size_t>(width), 0.0);
    const int64_t* row = values.data() + r * cols;
    for (int64_t n = min_n; n <= std::min<int64_t>(max_n, static_cast<int64_t>(counts.size())); ++n) {
      // Unigrams have no gaps: counted once, not once per skip.
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip) {
        const int64_t span = (n - 1) * (skip + 1);
        for (int64_t i = 0; i + span < cols; ++i) {
          std::vector<int64_t> key(static_cast<size_t>(n));
          for (int64_t j = 0; j < n; ++j) key[static_cast<size_t>(j)] = row[i + j * (skip + 1)];
          const auto it = slot.find(key);
          if (it != slot.end()) tf[static_cast<size_t>(it->second)] += 1;
        }
      }
    }
    for (int64_t k = 0; k < width; ++k) {
      const double c = tf[static_cast<size_t>(k)], w = weight_of[static_cast<size_t>(k)];
      const double y = mode == "TF" ? c : mode == "IDF" ? (c > 0 ? w : 0.0) : c * w;
      out.SetDouble(r * width + k, y);
    }
  }
  ctx.DefineConstant(ctx.Output(0), out);
}

}  // namespace

void AddTextOps(std::vector<OpEntry>& t) { t.push_back({"TfIdfVectorizer", 9, kMaxOpset, TfIdfVectorizer}); }

}  // namespace backplane::onnx
