// Checks the catalog against the seed document's numbers
// (../shared/seed/backend-inventory.md and ../shared/spec/ir-operations.md §2.1).
#include "backplane/catalog/catalog.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace backplane::catalog {
namespace {

bool InSeedSurface(const MethodInfo& m) {
  for (const SurfaceInfo& s : Surfaces()) {
    if (s.name == m.surface) return s.in_seed;
  }
  return false;
}

TEST(Catalog, SeedSurfacesAndMethodCounts) {
  // The seed's "Embedded surfaces" table.
  const std::map<std::string, int> seed = {
      {"Activation", 55}, {"Physics", 9},      {"Causal", 10},         {"Elementwise", 11},
      {"PosPop", 5},      {"VSA", 5},          {"Losses", 6},          {"Hawkes", 5},
      {"Pool", 4},        {"Convolution", 4},  {"ActiveInference", 4}, {"PredictiveCoding", 4},
      {"Masking", 3},     {"Attention", 3},    {"Sampling", 3},        {"Normalization", 3},
      {"Reduction", 5},   {"LayerNorm", 2},    {"RoPE", 2},            {"Embedding", 2},
      {"Dequant", 2},     {"Dot", 1},          {"Matmul", 1},          {"Dropout", 1},
      {"Quant", 1}};
  std::map<std::string, int> seed_surfaces;
  int seed_methods = 0;
  for (const SurfaceInfo& s : Surfaces()) {
    if (!s.in_seed) continue;
    seed_surfaces[std::string(s.name)] = s.method_count;
    seed_methods += s.method_count;
  }
  EXPECT_EQ(seed_surfaces, seed);
  EXPECT_EQ(seed_methods, 151);

  // The per-surface count derived from the method rows agrees with the surface rows.
  std::map<std::string, int> from_methods;
  for (const MethodInfo& m : Methods()) ++from_methods[std::string(m.surface)];
  for (const SurfaceInfo& s : Surfaces()) EXPECT_EQ(from_methods[std::string(s.name)], s.method_count);
}

TEST(Catalog, MethodsAreUniqueAndFindable) {
  std::set<std::string> names;
  for (const MethodInfo& m : Methods()) {
    EXPECT_TRUE(names.insert(m.QualifiedName()).second) << m.QualifiedName();
    const MethodInfo* found = FindMethod(m.QualifiedName());
    ASSERT_NE(found, nullptr) << m.QualifiedName();
    EXPECT_EQ(found->id, m.id);
    EXPECT_EQ(&Method(m.id), &m);
    EXPECT_FALSE(m.parameters.empty());
  }
  EXPECT_EQ(names.size(), Methods().size());
  EXPECT_EQ(FindMethod("Activation.NoSuchMethod"), nullptr);
  EXPECT_EQ(FindMethod("NoDot"), nullptr);
}

TEST(Catalog, RequiredOpsAreUniqueAndOrdered) {
  std::set<std::string> ids;
  int required = 0;
  for (const OpInfo& op : Ops()) {
    EXPECT_TRUE(ids.insert(op.id).second) << op.id;
    if (!op.required) continue;
    EXPECT_EQ(op.required_index, required) << op.id;
    ++required;
  }
  EXPECT_EQ(required, 119);
  // The list opens with the 13 legacy op types (ir-operations.md §2.3).
  const char* legacy[] = {"Input",   "Add",     "Mul",    "Matmul", "ReLU",  "LeakyReLU", "GELU",
                          "Tanh",    "Sigmoid", "SwiGLU", "Swish",  "SELU",  "Fused"};
  for (int i = 0; i < 13; ++i) EXPECT_EQ(Ops()[i].id, legacy[i]);
  for (int i = 13; i < required; ++i) {
    EXPECT_NE(Ops()[i].id.find('.'), std::string::npos) << "namespaced ID expected: " << Ops()[i].id;
  }
}

TEST(Catalog, ReferenceLinkKindCounts) {
  std::map<LinkKind, int> counts;
  for (const OpInfo& op : Ops()) {
    if (op.required) ++counts[op.reference_link];
  }
  EXPECT_EQ(counts[LinkKind::Direct], 74);
  EXPECT_EQ(counts[LinkKind::Composite], 3);
  EXPECT_EQ(counts[LinkKind::KernelRegistry], 32);
  EXPECT_EQ(counts[LinkKind::GraphOnly], 10);
}

TEST(Catalog, LinksNameExistingMethods) {
  for (const OpInfo& op : Ops()) {
    switch (op.required ? op.reference_link : LinkKind::Direct) {
      case LinkKind::Direct:
        if (op.required) {
          EXPECT_EQ(op.reference_methods.size(), 1u) << op.id;
        }
        break;
      case LinkKind::Composite:
        EXPECT_GE(op.reference_methods.size(), 2u) << op.id;
        break;
      default:
        EXPECT_TRUE(op.reference_methods.empty()) << op.id;
        EXPECT_FALSE(op.reference_note.empty()) << op.id << ": registry/graph links carry a note";
    }
    if (op.link == LinkKind::Direct || op.link == LinkKind::Composite) {
      EXPECT_FALSE(op.methods.empty()) << op.id;
    }
    for (MethodId id : op.methods) {
      EXPECT_NE(FindMethod(Method(id).QualifiedName()), nullptr) << op.id;
    }
    EXPECT_FALSE(op.dtypes.Empty()) << op.id;
  }
  // The composite links of the seed.
  for (const char* id : {"attention.mqa", "attention.gqa", "projection.fused_qkv"}) {
    ASSERT_NE(FindOp(id), nullptr) << id;
    EXPECT_EQ(FindOp(id)->reference_link, LinkKind::Composite) << id;
  }
}

TEST(Catalog, SeedBackendOnlyMethods) {
  std::set<MethodId> linked;
  for (const OpInfo& op : Ops()) {
    if (!op.required) continue;
    for (MethodId id : op.reference_methods) linked.insert(id);
  }
  std::set<std::string> backend_only;
  for (const MethodInfo& m : Methods()) {
    if (InSeedSurface(m) && !linked.contains(m.id)) backend_only.insert(m.QualifiedName());
  }
  EXPECT_EQ(backend_only.size(), 88u);
  EXPECT_EQ(linked.size(), 63u);

  // ir-operations.md §2.1 names the 88 by rule: whole surfaces, and the exceptions below.
  const std::set<std::string> whole = {"PosPop", "Reduction", "Dot",     "Sampling",
                                       "Physics", "Dequant",  "Quant"};
  const std::set<std::string> linked_activations = {"Exp",     "Log",     "Softmax", "ReLU",
                                                    "LeakyReLU", "Gelu",  "Tanh",    "Sigmoid",
                                                    "SwiGLU",  "Swish",   "SELU"};
  const std::set<std::string> singles = {
      "Losses.MAE",        "Losses.Huber",  "Losses.BinaryCrossEntropy", "Losses.KLDivergence",
      "Normalization.InstanceNorm", "Normalization.BatchNormEval", "Embedding.Bag",
      "RoPE.RoPEPairs",    "Causal.Cholesky"};
  for (const MethodInfo& m : Methods()) {
    if (!InSeedSurface(m)) continue;
    const std::string name = m.QualifiedName();
    bool expected;
    if (whole.contains(std::string(m.surface))) {
      expected = true;
    } else if (m.surface == "Activation") {
      expected = !linked_activations.contains(std::string(m.method));
    } else if (m.surface == "Elementwise") {
      expected = m.method != "Add" && m.method != "Mul";
    } else {
      expected = singles.contains(name);
    }
    EXPECT_EQ(backend_only.contains(name), expected) << name;
  }
}

TEST(Catalog, AliasesResolveToCanonicalOps) {
  const std::map<std::string, std::string> aliases = {
      {"ReLU", "activation.relu"},
      {"Add", "math.add"},
      {"Mul", "math.mul"},
      {"Matmul", "math.matmul"},
      {"LeakyReLU", "activation.leaky_relu"},
      {"GELU", "activation.gelu"},
      {"Tanh", "activation.tanh"},
      {"Sigmoid", "activation.sigmoid"},
      {"SwiGLU", "activation.swiglu"},
      {"Swish", "activation.swish"},
      {"SELU", "activation.selu"},
      {"train.grad.mse", "train.loss.mse_grad"},
      {"train.grad.cross_entropy", "train.loss.cross_entropy_grad"},
      {"bench.accuracy", "bench.metric.accuracy"},
      {"bench.perplexity", "bench.metric.perplexity"},
      {"bench.f1", "bench.metric.f1"}};
  for (const auto& [alias, canonical] : aliases) {
    const OpInfo* resolved = ResolveOp(alias);
    ASSERT_NE(resolved, nullptr) << alias;
    EXPECT_EQ(resolved->id, canonical) << alias;
  }
  for (const OpInfo& op : Ops()) {
    if (op.alias_of.empty()) continue;
    const OpInfo* target = FindOp(op.alias_of);
    ASSERT_NE(target, nullptr) << op.id << " -> " << op.alias_of;
    EXPECT_TRUE(target->alias_of.empty()) << "alias chains are not allowed: " << op.id;
    EXPECT_EQ(target->reference_link, op.reference_link) << op.id;
    EXPECT_EQ(target->methods, op.methods) << op.id;
  }
  EXPECT_EQ(ResolveOp("no.such.op"), nullptr);
}

TEST(Catalog, AttributesParse) {
  const OpInfo* op = FindOp("activation.leaky_relu");
  ASSERT_NE(op, nullptr);
  ASSERT_EQ(op->attrs.size(), 1u);
  EXPECT_EQ(op->attrs[0].name, "alpha");
  EXPECT_EQ(op->attrs[0].type, AttrType::Float);
  EXPECT_FALSE(op->attrs[0].required);
  EXPECT_EQ(op->attrs[0].default_value, "0.01");
  const OpInfo* reshape = FindOp("shape.reshape");
  ASSERT_NE(reshape, nullptr);
  ASSERT_EQ(reshape->attrs.size(), 1u);
  EXPECT_EQ(reshape->attrs[0].type, AttrType::IntList);
  EXPECT_TRUE(reshape->attrs[0].required);
  for (const OpInfo& o : Ops()) {
    std::set<std::string> names;
    for (const AttrSpec& a : o.attrs) EXPECT_TRUE(names.insert(a.name).second) << o.id << "." << a.name;
  }
}

}  // namespace
}  // namespace backplane::catalog

namespace backplane::catalog {
namespace {

// Backplane closes the seed's "Gaps for R1": every required compute op reaches a Backend method,
// and every Backend method has an operation ID.
TEST(Catalog, EveryRequiredComputeOpReachesTheBackend) {
  for (const OpInfo& op : Ops()) {
    if (op.reference_link == LinkKind::GraphOnly && op.required) {
      EXPECT_EQ(op.link, LinkKind::GraphOnly) << op.id;
      continue;
    }
    EXPECT_TRUE(op.link == LinkKind::Direct || op.link == LinkKind::Composite)
        << op.id << " has Backplane link " << LinkKindName(op.link);
  }
}

TEST(Catalog, EveryMethodHasAnOperationId) {
  std::set<MethodId> linked;
  for (const OpInfo& op : Ops()) linked.insert(op.methods.begin(), op.methods.end());
  for (const MethodInfo& m : Methods()) {
    EXPECT_TRUE(linked.contains(m.id)) << m.QualifiedName() << " has no operation ID";
  }
}

TEST(Catalog, ExtendedOpsCoverTheSeedBackendOnlyMethods) {
  int seed_method_ops = 0;
  std::set<MethodId> extended_targets;
  for (const OpInfo& op : Ops()) {
    if (op.required) continue;
    EXPECT_EQ(op.required_index, -1) << op.id;
    EXPECT_NE(op.id.find('.'), std::string::npos) << op.id;
    ASSERT_FALSE(op.methods.empty()) << op.id;
    // One op per seed backend-only method; an op may also link an extension method first (the
    // caller-eps norms: math.instancenorm -> MathExt.InstanceNormEps, Normalization.InstanceNorm).
    bool seed = false;
    for (MethodId m : op.methods) seed = seed || InSeedSurface(Method(m));
    seed_method_ops += seed;
    extended_targets.insert(op.methods.begin(), op.methods.end());
  }
  // 88 seed backend-only methods, plus physics.fft / physics.ifft: the batched (last-axis) forms
  // of physics.fft1d / physics.ifft1d over the same FFT1D / IFFT1D methods.
  EXPECT_EQ(seed_method_ops, 88 + 2);
  std::set<MethodId> seed_linked;
  for (const OpInfo& op : Ops()) {
    if (op.required) seed_linked.insert(op.reference_methods.begin(), op.reference_methods.end());
  }
  for (const MethodInfo& m : Methods()) {
    if (InSeedSurface(m) && !seed_linked.contains(m.id)) {
      EXPECT_TRUE(extended_targets.contains(m.id)) << m.QualifiedName();
    }
  }
}

TEST(Catalog, ExtensionSurfaces) {
  const std::map<std::string, int> expected = {
      {"Shape", 9},   {"Optimizer", 12},     {"Gradients", 6},
      {"MathExt", 14}, {"PointProcess", 1},   {"BlockQuant", 2},  // MathExt: the eps norms, MatmulTransB, SoftmaxRows
      {"TensorOps", 17}, {"PoolNd", 2}, {"Spatial", 2}};  // BlockQuant (LLMs); TensorOps, PoolNd, Spatial (ONNX graphs)
  std::map<std::string, int> got;
  for (const SurfaceInfo& s : Surfaces()) {
    if (!s.in_seed) got[std::string(s.name)] = s.method_count;
  }
  EXPECT_EQ(got, expected);
  // Both spellings of the gradient ops reach the same method.
  EXPECT_EQ(ResolveOp("train.grad.mse")->methods, FindOp("train.loss.mse_grad")->methods);
  EXPECT_EQ(FindOp("train.grad.cross_entropy")->methods,
            FindOp("train.loss.cross_entropy_grad")->methods);
}

}  // namespace
}  // namespace backplane::catalog
