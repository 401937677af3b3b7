// Einsum over one or two operands: diagonals of repeated labels (a strided slice of the merged
// axes), sums of labels used by one operand only, then a transpose + reshape + batched matmul for
// two operands and a final transpose to the output order.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

std::vector<ir::Dim> Dims(const std::vector<int64_t>& sizes) {
  std::vector<ir::Dim> d;
  for (int64_t s : sizes) d.push_back({s, ""});
  return d;
}

struct Operand {
  std::string value;
  std::string labels;          // one char per axis (ellipsis axes as upper-case letters from 'A')
  std::vector<int64_t> sizes;  // static
};

// Expands "..." into its labels (upper case), right-aligned against the widest ellipsis.
std::string ExpandEllipsis(Context& ctx, const std::string& term, int64_t rank, int64_t* ellipsis_rank) {
  const size_t pos = term.find("...");
  if (pos == std::string::npos) return term;
  if (term.find("...", pos + 1) != std::string::npos) ctx.Invalid(fmt::format("equation term '{}' has two ellipses", term));
  const int64_t named = static_cast<int64_t>(term.size()) - 3;
  const int64_t count = rank < 0 ? *ellipsis_rank : rank - named;
  if (count < 0) ctx.Invalid(fmt::format("equation term '{}' has more labels than its operand's rank {}", term, rank));
  std::string ell;
  for (int64_t i = 0; i < count; ++i) ell.push_back(static_cast<char>('A' + (*ellipsis_rank - count) + i));
  return term.substr(0, pos) + ell + term.substr(pos + 3);
}

std::vector<int64_t> Perm(const std::string& from, const std::string& to) {
  std::vector<int64_t> p;
  for (char c : to) p.push_back(static_cast<int64_t>(from.find(c)));
  return p;
}

bool Identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

void Transpose(Context& ctx, Operand& o, const std::string& to) {
  const std::vector<int64_t> p = Perm(o.labels, to);
  if (!Identity(p)) o.value = ctx.Op("shape.transpose", {o.value}, {{"perm", p}});
  std::vector<int64_t> sizes;
  for (int64_t i : p) sizes.push_back(o.sizes[static_cast<size_t>(i)]);
  o.sizes = sizes;
  o.labels = to;
}

// Takes the diagonal of every label repeated within the operand.
void Diagonals(Context& ctx, Operand& o) {
  for (;;) {
    size_t first = std::string::npos, second = std::string::npos;
    for (size_t i = 0; i < o.labels.size() && first == std::string::npos; ++i) {
      const size_t j = o.labels.find(o.labels[i], i + 1);
      if (j != std::string::npos) first = i, second = j;
    }
    if (first == std::string::npos) return;
    const int64_t n = o.sizes[first];
    if (o.sizes[second] != n) ctx.Invalid(fmt::format("label '{}' has sizes {} and {}", o.labels[first], n, o.sizes[second]));
    std::string rest;
    for (size_t i = 0; i < o.labels.size(); ++i) {
      if (i != first && i != second) rest.push_back(o.labels[i]);
    }
    // Moves the pair last (rest + first + second), merges it, keeps every (n + 1)-th element.
    std::vector<int64_t> perm;
    for (size_t i = 0; i < o.labels.size(); ++i) {
      if (i != first && i != second) perm.push_back(static_cast<int64_t>(i));
    }
    perm.push_back(static_cast<int64_t>(first));
    perm.push_back(static_cast<int64_t>(second));
    std::string v = Identity(perm) ? o.value : ctx.Op("shape.transpose", {o.value}, {{"perm", perm}});
    std::vector<int64_t> sizes;
    for (size_t k = 0; k + 2 < perm.size(); ++k) sizes.push_back(o.sizes[static_cast<size_t>(perm[k])]);
    std::vector<int64_t> merged = sizes;
    merged.push_back(n * n);
    v = ReshapeTo(ctx, v, Dims(merged));
    const int64_t axis = static_cast<int64_t>(sizes.size());
    v = ctx.Op("shape.slice", {v}, {{"starts", std::vector<int64_t>{0}}, {"ends", std::vector<int64_t>{n * n}},
                                    {"axes", std::vector<int64_t>{axis}}, {"steps", std::vector<int64_t>{n + 1}}});
    sizes.push_back(n);
    o.value = v;
    o.sizes = sizes;
    o.labels = rest + o.labels[first];
  }
}

// Sums the axes whose labels are not in `keep`.
void SumOut(Context& ctx, Operand& o, const std::string& keep) {
  std::vector<int64_t> axes;
  std::string labels;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < o.labels.size(); ++i) {
    if (keep.find(o.labels[i]) == std::string::npos) {
      axes.push_back(static_cast<int64_t>(i));
    } else {
      labels.push_back(o.labels[i]);
      sizes.push_back(o.sizes[i]);
    }
  }
  if (axes.empty()) return;
  o.value = ReshapeTo(ctx, ctx.Op("reduction.sum", {o.value}, {{"axis", axes}}), Dims(sizes));
  o.labels = labels;
  o.sizes = sizes;
}

int64_t Product(const std::vector<int64_t>& sizes, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= sizes[i];
  return p;
}

void Einsum(Context& ctx) {
  ctx.AllowAttrs({"equation"});
  if (!ctx.HasAttr("equation")) ctx.Invalid("attribute 'equation' is required");
  std::string eq;
  for (char c : ctx.AttrString("equation", "")) {
    if (c != ' ') eq.push_back(c);
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(terms.size()) != ctx.NumInputs()) {
    ctx.Invalid(fmt::format("equation '{}' has {} operands, the node {} inputs", eq, terms.size(), ctx.NumInputs()));
  }
  if (terms.size() > 2) ctx.Unsupported(fmt::format("equation '{}': at most two operands are supported", eq));
  int64_t ellipsis_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (terms[k].find("...") != std::string::npos) {
      ellipsis_rank = std::max(ellipsis_rank, ctx.In(static_cast<int>(k)).rank() - static_cast<int64_t>(terms[k].size()) + 3);
    }
  }
  std::vector<Operand> ops;
  for (size_t k = 0; k < terms.size(); ++k) {
    const Value& v = ctx.In(static_cast<int>(k));
    if (!v.is_static()) ctx.Unsupported(fmt::format("input {} needs a static shape", k));
    for (char c : terms[k]) {
      if (c != '.' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z')) {
        ctx.Invalid(fmt::format("equation term '{}' has the character '{}'", terms[k], c));
      }
      if (c >= 'A' && c <= 'Z') ctx.Unsupported(fmt::format("equation term '{}': upper-case labels are not supported", terms[k]));
    }
    Operand o{ctx.Input(static_cast<int>(k)), ExpandEllipsis(ctx, terms[k], v.rank(), &ellipsis_rank), v.shape()};
    if (static_cast<int64_t>(o.labels.size()) != v.rank()) {
      ctx.Invalid(fmt::format("equation term '{}' does not match input {}'s rank {}", terms[k], k, v.rank()));
    }
    ops.push_back(o);
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = ExpandEllipsis(ctx, eq.substr(arrow + 2), -1, &ellipsis_rank);
    for (char c : out) {
      if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z')) ctx.Invalid(fmt::format("output term has the character '{}'", c));
    }
  } else {
    // Implicit output: the ellipsis labels, then the labels used exactly once, in order.
    std::map<char, int> count;
    for (const Operand& o : ops) {
      for (char c : o.labels) ++count[c];
    }
    for (const auto& [c, n] : count) {
      if (c >= 'A' && c <= 'Z') out.push_back(c);
    }
    for (const auto& [c, n] : count) {
      if (c >= 'a' && c <= 'z' && n == 1) out.push_back(c);
    }
  }
  std::map<char, int64_t> size_of;
  for (const Operand& o : ops) {
    for (size_t i = 0; i < o.labels.size(); ++i) {
      const auto [it, fresh] = size_of.emplace(o.labels[i], o.sizes[i]);
      if (!fresh && it->second != o.sizes[i]) {
        ctx.Unsupported(fmt::format("label '{}' has sizes {} and {} (broadcasting is not supported)", o.labels[i], it->second,
                                    o.sizes[i]));
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!size_of.contains(out[i])) ctx.Invalid(fmt::format("output label '{}' is not in any operand", out[i]));
    if (out.find(out[i], i + 1) != std::string::npos) ctx.Invalid(fmt::format("output label '{}' repeats", out[i]));
  }
  for (Operand& o : ops) Diagonals(ctx, o);

  Operand result;
  if (ops.size() == 1) {
    SumOut(ctx, ops[0], out);
    result = ops[0];
  } else {
    Operand& a = ops[0];
    Operand& b = ops[1];
    SumOut(ctx, a, out + b.labels);
    SumOut(ctx, b, out + a.labels);
    std::string batch, a_only, b_only, contract;
    for (char c : a.labels) {
      const bool in_b = b.labels.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
      if (in_b && in_out) batch.push_back(c);
      else if (in_b) contract.push_back(c);
      else a_only.push_back(c);
    }
    for (char c : b.labels) {
      if (a.labels.find(c) == std::string::npos) b_only.push_back(c);
    }
    Transpose(ctx, a, batch + a_only + contract);
    Transpose(ctx, b, batch + contract + b_only);
    const size_t nb = batch.size(), na = a_only.size(), nc = contract.size();
    const int64_t bt = Product(a.sizes, 0, nb), m = Product(a.sizes, nb, nb + na), k = Product(a.sizes, nb + na, a.sizes.size());
    const int64_t n = Product(b.sizes, nb + nc, b.sizes.size());
    const std::string a3 = ReshapeTo(ctx, a.value, Dims({bt, m, k}));
    const std::string b3 = ReshapeTo(ctx, b.value, Dims({bt, k, n}));
    std::vector<int64_t> sizes(a.sizes.begin(), a.sizes.begin() + static_cast<std::ptrdiff_t>(nb + na));
    sizes.insert(sizes.end(), b.sizes.begin() + static_cast<std::ptrdiff_t>(nb + nc), b.sizes.end());
    result.value = ReshapeTo(ctx, ctx.Op("math.matmul", {a3, b3}), Dims(sizes));
    result.labels = batch + a_only + b_only;
    result.sizes = sizes;
  }
  const std::vector<int64_t> p = Perm(result.labels, out);
  if (Identity(p)) {
    ctx.Alias(result.value, ctx.Output(0));
  } else {
    ctx.Op("shape.transpose", {result.value}, {{"perm", p}}, ctx.Output(0));
  }
}

}  // namespace

void AddEinsumOps(std::vector<OpEntry>& t) { t.push_back({"Einsum", 12, kMaxOpset, Einsum}); }

}  // namespace backplane::onnx
